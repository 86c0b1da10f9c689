//! The figures RELIABILITY.md gives for hung and faulty sinks, checked on a small scale:
//! every policy but `Block` keeps the caller from waiting on a hung sink (beyond
//! `BlockFor`'s own bound), and every fault is accounted for.

use loglag::Overflow;
use loglag_lab::torture;
use std::time::Duration;

#[test]
fn a_hung_sink_never_holds_the_caller_beyond_its_policy() {
    for policy in [
        Overflow::DropNewest,
        Overflow::DropOldest,
        Overflow::ShedByLevel,
        Overflow::BlockFor(Duration::from_millis(1)),
    ] {
        let r = torture::hung_sink(policy, 2_000);
        assert!(r.accounted, "{policy:?}: {r:?}");
        assert!(
            r.dropped > 0,
            "{policy:?}: a hung sink must cost records: {r:?}"
        );
        // The bound is a promise to the caller: a wait of a second means the policy
        // waited on the sink, whatever the machine's noise.
        assert!(r.max_wait_us < 1_000_000.0, "{policy:?} waited: {r:?}");
        if let Overflow::BlockFor(d) = policy {
            assert!(
                r.max_wait_us >= d.as_micros() as f64,
                "BlockFor waits its bound before giving up: {r:?}"
            );
        }
    }
}

#[test]
fn every_sink_fault_is_accounted_for() {
    let rows = torture::sink_faults(50_000).unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r.fault.starts_with(name))
            .unwrap_or_else(|| panic!("no {name:?} row in {rows:?}"))
    };
    for r in &rows {
        assert!(r.accounted, "{r:?}");
        assert!(
            r.max_wait_us < 1_000_000.0,
            "the caller waited on a faulty sink: {r:?}"
        );
    }
    let full = row("ENOSPC (/dev/full), no fallback");
    assert_eq!((full.written, full.dropped), (0, 50_000), "{full:?}");
    assert!(full.io_errors > 0);
    let fallback = row("ENOSPC (/dev/full) → fallback");
    // The default policy never waits, so on a busy machine the queue may shed some;
    // what the fallback is handed, it writes: one failure (the primary's), no more.
    assert_eq!(fallback.written + fallback.dropped, 50_000, "{fallback:?}");
    assert!(
        fallback.written > 0 && fallback.io_errors <= 2,
        "{fallback:?}"
    );
    let epipe = row("EPIPE");
    assert_eq!(epipe.written + epipe.dropped, 50_000, "{epipe:?}");
    assert!(epipe.dropped > 0 && epipe.io_errors > 0, "{epipe:?}");
    let panics = row("sink panics");
    assert!(panics.dropped > 0 && panics.written > 0, "{panics:?}");
    let logs = row("sink logs");
    assert!(
        logs.written >= 50_000,
        "every producer record, plus what the sink logged: {logs:?}"
    );
}
