// Unix only: real signal handlers (SIGUSR1 sent with pthread_kill); Windows has none.
#![cfg(unix)]
//! Logging from a real signal handler (SIGUSR1, sent with `pthread_kill` to threads
//! that are logging). A handler that interrupts the pipeline's own producer path on its
//! thread (a ring being claimed under its lock, the counter table borrowed) must not
//! wait for what its own thread holds, nor borrow it twice: its record is counted
//! accepted and dropped as `reentrant`. Everywhere else it is logged. Either way it is
//! accounted for, and nothing deadlocks or aborts.
//!
//! The logging threads write fixed byte strings, so that the code a signal interrupts
//! is the pipeline's, not an allocation of the test's own (glibc's `malloc` is not
//! re-entrant, whatever a logger does).

mod support;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, OnceLock};
use std::time::Duration;

use loglag::{DropReason, Level, Mode, NonBlocking, NonBlockingBuilder, Overflow};
use support::{assert_accounted, record_lines, within, Behaviour, TestSink};

static WRITER: OnceLock<NonBlocking> = OnceLock::new();
static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn log_from_the_handler(_signal: libc::c_int) {
    if let Some(writer) = WRITER.get() {
        writer.submit(Level::Warn, b"from a signal handler\n");
        HANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn a_signal_handler_that_logs_never_deadlocks_or_aborts_and_is_accounted_for() {
    within(Duration::from_secs(300), "signal handlers", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .build(sink)
            .unwrap();
        assert!(WRITER.set(writer.clone()).is_ok(), "set once");
        // SAFETY: installs a handler for SIGUSR1 in this test binary, which uses the
        // signal for nothing else; the handler only logs and counts.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = log_from_the_handler as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            assert_eq!(
                libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
                0
            );
        }
        const THREADS: usize = 200;
        const RECORDS: usize = 300;
        let mut logged = 0u64;
        for _ in 0..THREADS {
            // Each thread is new: its first record claims a ring and a counter slot,
            // the moments a handler used to deadlock or abort in.
            let (id_tx, id_rx) = mpsc::channel();
            let done = std::sync::Arc::new(AtomicBool::new(false));
            let logger = {
                let (writer, done) = (writer.clone(), done.clone());
                std::thread::spawn(move || {
                    // SAFETY: pthread_self has no preconditions.
                    id_tx.send(unsafe { libc::pthread_self() }).unwrap();
                    for _ in 0..RECORDS {
                        writer.submit(Level::Info, b"from the thread\n");
                    }
                    done.store(true, Ordering::Release);
                })
            };
            let thread = id_rx.recv().unwrap();
            while !done.load(Ordering::Acquire) {
                // SAFETY: the thread is alive until `done` is set (it has not returned
                // from its closure; join below), so its pthread_t is valid.
                unsafe { libc::pthread_kill(thread, libc::SIGUSR1) };
                std::thread::yield_now();
            }
            logger.join().unwrap();
            logged += RECORDS as u64;
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        let handled = HANDLED.load(Ordering::Relaxed);
        assert_eq!(m.accepted, logged + handled, "{m:#?}");
        let lines = record_lines(&out.lock().unwrap());
        let from_threads = lines.iter().filter(|l| *l == "from the thread").count() as u64;
        let from_handlers = lines
            .iter()
            .filter(|l| *l == "from a signal handler")
            .count() as u64;
        assert_eq!(from_threads, logged, "the threads' records are all written");
        assert_eq!(
            from_handlers + m.dropped_for(DropReason::Reentrant),
            handled,
            "each handler's record written or dropped as reentrant: {m:#?}"
        );
        assert!(handled > 0, "the handler ran");
        eprintln!(
            "{handled} records from signal handlers: {from_handlers} written, {} reentrant",
            m.dropped_for(DropReason::Reentrant)
        );
    })
}
