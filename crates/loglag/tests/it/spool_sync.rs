//! `SpoolSync`: `EveryFlush` syncs after each batch, `Never` never does.
//! Every wait is bounded by `support::within`.
#![allow(unused_imports)] // one import list for the promise files

use crate::support;

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
fn spool_sync_every_flush_syncs_after_each_batch_and_never_does_not() {
    for (sync, expect_all) in [
        (loglag::spool::SpoolSync::EveryFlush, true),
        (loglag::spool::SpoolSync::Never, false),
        (
            loglag::spool::SpoolSync::Every(Duration::from_secs(3600)),
            false,
        ),
    ] {
        within(LIMIT, "SpoolSync", move || {
            let dir = tempfile::tempdir().unwrap();
            let recorder = Recorder::default();
            let (writer, guard) = NonBlockingBuilder::default()
                .spool(dir.path().join("app.spool"))
                .spool_sync(sync)
                .mode(Mode::Async)
                .build(recorder.clone())
                .unwrap();
            // Opening a spool runs recovery, which syncs the sink once whatever the
            // setting: what it delivered must be durable before the spool forgets it.
            let at_open = recorder.syncs.load(Ordering::Relaxed);
            for i in 0..5 {
                writer.submit(Level::Error, format!("batch {i}\n").as_bytes());
                guard.flush(Duration::from_secs(30)).unwrap();
            }
            let batches = recorder.writes.lock().unwrap().len() as u64;
            let syncs = recorder.syncs.load(Ordering::Relaxed) - at_open;
            assert!(batches >= 5);
            if expect_all {
                assert_eq!(syncs, batches, "{sync:?}: one sync per batch");
            } else {
                assert_eq!(syncs, 0, "{sync:?}");
            }
        });
    }
}
