//! `LOGLAG_MODE`: every name, and `format-only` builds records while `off` does not.
//! Every wait is bounded by `support::within`.
#![allow(unused_imports)] // one import list for the promise files

mod support;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loglag::sink::Sink;
use loglag::{DropReason, Level, Mode, NonBlockingBuilder, Overflow};
use support::promises::*;
use support::*;

#[test]
fn loglag_mode_parses_every_name_and_refuses_others() {
    for (name, mode) in [
        ("off", Mode::Off),
        ("format-only", Mode::FormatOnly),
        ("sync", Mode::Sync),
        ("async", Mode::Async),
    ] {
        assert_eq!(name.parse::<Mode>().unwrap(), mode);
        assert_eq!(mode.as_str(), name);
    }
    let err = "fast".parse::<Mode>().unwrap_err().to_string();
    assert!(
        err.contains("LOGLAG_MODE") && err.contains("\"fast\""),
        "{err}"
    );
    assert!(err.contains("off, format-only, sync or async"), "{err}");
}

#[test]
fn format_only_builds_the_record_and_off_does_not_and_neither_writes() {
    use tracing_subscriber::layer::SubscriberExt;
    for (mode, formats) in [(Mode::Off, false), (Mode::FormatOnly, true)] {
        let recorder = Recorder::default();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(mode)
            .build(recorder.clone())
            .unwrap();
        let subscriber =
            tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer.clone()));
        let formatted = Arc::new(AtomicU64::new(0));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..10 {
                tracing::info!(field = ?Counted(formatted.clone()), "hello");
            }
        });
        drop(guard);
        assert_eq!(
            formatted.load(Ordering::Relaxed) > 0,
            formats,
            "{mode:?}: formatted {} times",
            formatted.load(Ordering::Relaxed)
        );
        assert!(
            recorder.out.lock().unwrap().is_empty(),
            "{mode:?} writes nothing"
        );
        assert_eq!(writer.metrics().accepted, 0, "{mode:?} counts nothing");
    }
}
