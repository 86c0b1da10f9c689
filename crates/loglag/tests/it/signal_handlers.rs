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

use crate::support;

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
        install(libc::SIGUSR1, log_from_the_handler);
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
                    stop_taking(libc::SIGUSR1);
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

/// Installs `handler` for `signal` in this test binary (each test here uses a signal of
/// its own, so tests running side by side do not share a handler).
fn install(signal: libc::c_int, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: each signal is used by one test of this binary only; the handlers only
    // log and count.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = handler as usize;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(libc::sigaction(signal, &action, std::ptr::null_mut()), 0);
    }
}

/// Blocks `signal` on the calling thread before it says it is done. The sender may
/// still send one after its last look at `done`; delivered while the thread exits (its
/// thread-locals' destructors free memory), a handler that logs would find `malloc`'s
/// lock held by the code it interrupted, which is glibc's deadlock, not the pipeline's
/// (RELIABILITY: "not safe", a thread's teardown). Blocked, it stays pending and dies
/// with the thread.
fn stop_taking(signal: libc::c_int) {
    // SAFETY: a sigset_t on the stack, filled by sigemptyset/sigaddset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, signal);
        assert_eq!(
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()),
            0
        );
    }
}

/// Sends `signal` to a logging thread until it says it is done.
fn interrupt_until_done(thread: libc::pthread_t, signal: libc::c_int, done: &AtomicBool) {
    while !done.load(Ordering::Acquire) {
        // SAFETY: the thread is alive until `done` is set (the caller joins it after).
        unsafe { libc::pthread_kill(thread, signal) };
        std::thread::yield_now();
    }
}

static READER_WRITER: OnceLock<NonBlocking> = OnceLock::new();
static READER_HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn log_from_the_readers_handler(_signal: libc::c_int) {
    if let Some(writer) = READER_WRITER.get() {
        writer.submit(Level::Warn, b"from the reader's handler\n");
        READER_HANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Under `Overflow::Block`, a thread that reads `metrics()` (a health check), renders
/// them for Prometheus, or flushes, interrupted by a handler that logs: the handler
/// landing while `metrics()` held a ring's consumer lock waited for room that only the
/// writer, waiting for that lock, could make, and every producer then blocked (6 of 6
/// runs). Now every entry point marks its thread, and such a record is dropped as
/// `reentrant` at once.
#[test]
fn a_handler_that_logs_while_its_thread_reads_metrics_or_flushes_under_block_never_hangs() {
    within(Duration::from_secs(300), "metrics under a handler", || {
        let (sink, out) = TestSink::new(Behaviour::Slow);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .capacity_bytes(16 << 10)
            .build(sink)
            .unwrap();
        assert!(READER_WRITER.set(writer.clone()).is_ok(), "set once");
        install(libc::SIGUSR2, log_from_the_readers_handler);
        const PRODUCERS: usize = 2;
        const RECORDS: usize = 20_000;
        const READS: usize = 3_000;
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|_| {
                let writer = writer.clone();
                std::thread::spawn(move || {
                    // Keeps the small ring full, so a handler's record has to wait.
                    for _ in 0..RECORDS {
                        writer.submit(Level::Info, b"from a producer\n");
                    }
                })
            })
            .collect();
        let (id_tx, id_rx) = mpsc::channel();
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let reader = {
            let (writer, done) = (writer.clone(), done.clone());
            std::thread::spawn(move || {
                // SAFETY: pthread_self has no preconditions.
                id_tx.send(unsafe { libc::pthread_self() }).unwrap();
                // A thread's first record registers its thread-local state, which
                // allocates: a handler's record must not be the first (RELIABILITY).
                writer.submit(Level::Info, b"from a producer\n");
                let mut rendered = 0usize;
                for i in 0..READS {
                    let m = writer.metrics();
                    match i % 3 {
                        0 => rendered += loglag::prometheus::text("app", &[(None, &m)]).len(),
                        1 => {
                            let _ = writer.flush(Duration::from_millis(1));
                        }
                        _ => {}
                    }
                }
                stop_taking(libc::SIGUSR2);
                done.store(true, Ordering::Release);
                rendered
            })
        };
        interrupt_until_done(id_rx.recv().unwrap(), libc::SIGUSR2, &done);
        assert!(reader.join().unwrap() > 0, "the exposition was rendered");
        for producer in producers {
            producer.join().unwrap();
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        let handled = READER_HANDLED.load(Ordering::Relaxed);
        let lines = record_lines(&out.lock().unwrap());
        let count = |text: &str| lines.iter().filter(|l| *l == text).count() as u64;
        let produced = (PRODUCERS * RECORDS) as u64 + 1;
        assert_eq!(count("from a producer"), produced, "Block loses none");
        assert_eq!(
            count("from the reader's handler") + m.dropped_for(DropReason::Reentrant),
            handled,
            "each handler's record written or dropped as reentrant: {m:#?}"
        );
        assert_eq!(m.accepted, produced + handled, "{m:#?}");
        assert!(handled > 0, "the handler ran");
        eprintln!(
            "{handled} records from handlers on the reading thread: {} reentrant",
            m.dropped_for(DropReason::Reentrant)
        );
    })
}

/// A value whose `Display` formats a number without allocating, as a handler's would.
struct Shown(u64);

impl std::fmt::Display for Shown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "shown-{}", self.0)
    }
}

static MACRO_HANDLED: AtomicU64 = AtomicU64::new(0);
static MACRO_DISPLAY: AtomicBool = AtomicBool::new(false);

extern "C" fn log_with_the_macros_from_a_handler(_signal: libc::c_int) {
    let n = MACRO_HANDLED.fetch_add(1, Ordering::Relaxed);
    if MACRO_DISPLAY.load(Ordering::Relaxed) {
        loglag::warn!(v = %Shown(n), "from a handler");
    } else {
        loglag::warn!(v = n, "from a handler");
    }
}

/// 4 threads log with loglag's macros, a `%Display` value or a plain one, while each is
/// interrupted by a handler that logs the same kind: the handler re-entered the
/// thread-local capture buffer half-way through its `Cell::take` and freed `0x1`
/// (SIGSEGV, 5 of 5 runs async; 2 of 5 in `sync` mode with plain values). Now the buffer
/// says it is lent before it is moved, and the logging call marks its thread before it
/// touches it. Every handler's record is written or dropped as `reentrant`.
#[test]
fn a_handler_that_logs_with_the_macros_while_its_thread_does_never_crashes_async_or_sync() {
    let _lock = support::macros_lock();
    install(libc::SIGVTALRM, log_with_the_macros_from_a_handler);
    for mode in [Mode::Async, Mode::Sync] {
        for display in [true, false] {
            within(
                Duration::from_secs(300),
                "macros under a handler",
                move || {
                    let (sink, out) = TestSink::new(Behaviour::Fast);
                    let (writer, guard) = NonBlockingBuilder::default()
                        .mode(mode)
                        .build(sink)
                        .unwrap();
                    MACRO_HANDLED.store(0, Ordering::Relaxed);
                    MACRO_DISPLAY.store(display, Ordering::Relaxed);
                    loglag::set_global(&writer, loglag::Format::Json, Level::Info);
                    const THREADS: usize = 4;
                    // Interrupts are sent until this many handlers have run: the threads
                    // log until then, however the machine schedules them.
                    const HANDLERS: u64 = 2_000;
                    let stop = std::sync::Arc::new(AtomicBool::new(false));
                    let ready = std::sync::Arc::new(std::sync::Barrier::new(THREADS + 1));
                    let mut threads = Vec::new();
                    for _ in 0..THREADS {
                        let (id_tx, id_rx) = mpsc::channel();
                        let thread = {
                            let (stop, ready) = (stop.clone(), ready.clone());
                            std::thread::spawn(move || {
                                // SAFETY: pthread_self has no preconditions.
                                id_tx.send(unsafe { libc::pthread_self() }).unwrap();
                                // The first record registers the thread's state (see above),
                                // and grows the capture buffer to the longest value this
                                // thread formats: a `Display` that grew it later would be in
                                // `malloc` while its mark is lifted, where a handler that
                                // allocates deadlocks in glibc (RELIABILITY).
                                if display {
                                    loglag::info!(v = %Shown(u64::MAX), "from the thread");
                                } else {
                                    loglag::info!(v = 0u64, "from the thread");
                                }
                                ready.wait();
                                let mut logged = 1u64;
                                while !stop.load(Ordering::Acquire) {
                                    if display {
                                        loglag::info!(v = %Shown(logged), "from the thread");
                                    } else {
                                        loglag::info!(v = logged, "from the thread");
                                    }
                                    logged += 1;
                                }
                                stop_taking(libc::SIGVTALRM);
                                logged
                            })
                        };
                        threads.push((id_rx.recv().unwrap(), thread));
                    }
                    ready.wait();
                    // Round-robin over the threads, all logging until `stop`.
                    while MACRO_HANDLED.load(Ordering::Relaxed) < HANDLERS {
                        for (id, _) in &threads {
                            // SAFETY: each thread is alive until `stop` is set and joined.
                            unsafe { libc::pthread_kill(*id, libc::SIGVTALRM) };
                        }
                        std::thread::yield_now();
                    }
                    stop.store(true, Ordering::Release);
                    let logged: u64 = threads.into_iter().map(|(_, t)| t.join().unwrap()).sum();
                    // Later calls must not find this pipeline (the next case sets its own).
                    loglag::set_max_level(None);
                    let m = guard.shutdown();
                    assert_accounted(&m);
                    let handled = MACRO_HANDLED.load(Ordering::Relaxed);
                    let out = out.lock().unwrap();
                    let messages: Vec<String> = record_lines(&out)
                        .iter()
                        .map(|l| {
                            let v: serde_json::Value = serde_json::from_str(l).expect("JSON");
                            v["fields"]["message"].as_str().unwrap().to_owned()
                        })
                        .collect();
                    let count = |m: &str| messages.iter().filter(|x| *x == m).count() as u64;
                    // The default policy drops the newest record when the queue is full:
                    // the threads log at INFO and the handlers at WARN, so each side's drops
                    // are told apart by level.
                    assert_eq!(m.accepted, logged + handled, "{mode:?}: {m:#?}");
                    assert_eq!(
                        count("from the thread") + m.dropped_at(Level::Info),
                        logged,
                        "{mode:?}: every thread's record written or dropped: {m:#?}"
                    );
                    assert_eq!(
                    count("from a handler") + m.dropped_at(Level::Warn),
                    handled,
                    "{mode:?} display={display}: each handler's record written or dropped: {m:#?}"
                );
                    assert_eq!(
                        m.dropped_of(DropReason::Reentrant, Level::Info),
                        0,
                        "only handlers re-enter"
                    );
                    assert!(handled >= HANDLERS, "the handlers ran");
                    eprintln!(
                        "{mode:?} display={display}: {handled} handler records, {} reentrant",
                        m.dropped_for(DropReason::Reentrant)
                    );
                },
            );
        }
    }
}

static SHUTDOWN_WRITER: OnceLock<NonBlocking> = OnceLock::new();
static SHUTDOWN_HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn log_during_shutdown(_signal: libc::c_int) {
    if let Some(writer) = SHUTDOWN_WRITER.get() {
        writer.submit(Level::Warn, b"from a handler during shutdown\n");
        SHUTDOWN_HANDLED.fetch_add(1, Ordering::Relaxed);
    }
}

/// A `sync`-mode sink whose `flush` raises the signal on its own thread: the handler
/// runs there and then, while `shutdown` holds the sink's lock.
struct RaisesOnFlush(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl loglag::sink::Sink for RaisesOnFlush {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        // SAFETY: raise(3) delivers the signal to this thread before it returns.
        unsafe { libc::raise(libc::SIGPROF) };
        Ok(())
    }
}

/// In `sync` mode `shutdown` (and a `WorkerGuard`'s drop, and a SIGTERM as the
/// application exits) flushes the sink under its lock. A handler that logged then
/// waited for that lock, which its own thread held: the process hung (found by the
/// second review, after 2,000-7,000 rounds of a signal storm). Shutdown now marks its
/// thread, so the record is refused as `reentrant`.
#[test]
fn a_handler_that_logs_while_sync_shutdown_flushes_is_refused_not_deadlocked() {
    within(
        Duration::from_secs(120),
        "sync shutdown under a handler",
        || {
            let out = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Sync)
                .build(RaisesOnFlush(out.clone()))
                .unwrap();
            assert!(SHUTDOWN_WRITER.set(writer.clone()).is_ok(), "set once");
            install(libc::SIGPROF, log_during_shutdown);
            writer.submit(Level::Info, b"before\n");
            let m = guard.shutdown();
            assert_eq!(
                SHUTDOWN_HANDLED.load(Ordering::Relaxed),
                1,
                "the handler ran"
            );
            assert_accounted(&m);
            assert_eq!(m.accepted, 2, "{m:#?}");
            assert_eq!(m.written_records, 1, "{m:#?}");
            assert_eq!(
                m.dropped_of(DropReason::Reentrant, Level::Warn),
                1,
                "{m:#?}"
            );
            assert_eq!(out.lock().unwrap().as_slice(), b"before\n");
        },
    )
}
