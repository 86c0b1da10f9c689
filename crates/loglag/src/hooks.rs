//! Flushing on the ways a process ends that drop no guard: panics and signals.

use std::sync::{Arc, Mutex, Once, Weak};

use crate::core::Core;

/// The pipelines the one panic hook flushes. Weak: the hook keeps no pipeline alive,
/// and a pipeline that ended leaves only a dead entry, which the next registration or
/// `forget_on_panic` removes.
static PANIC_FLUSHED: Mutex<Vec<Weak<Core>>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

fn panic_flushed() -> std::sync::MutexGuard<'static, Vec<Weak<Core>>> {
    PANIC_FLUSHED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Has the process's one panic hook flush `core` within its shutdown timeout, after
/// the previous hook has printed the panic. The hook is installed once per process,
/// however many pipelines are built: chaining one per pipeline made every panic walk
/// a chain as deep as the number of pipelines ever built (3,000 overflowed the stack
/// and aborted) and kept each of them allocated.
pub(crate) fn flush_on_panic(core: &Arc<Core>) {
    {
        let mut flushed = panic_flushed();
        flushed.retain(|w| w.strong_count() > 0);
        flushed.push(Arc::downgrade(core));
    }
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            // Upgraded and the lock let go before flushing: a flush may log, and a
            // sink may panic in turn.
            let live: Vec<Arc<Core>> = panic_flushed().iter().filter_map(Weak::upgrade).collect();
            for core in live {
                // The writer cannot wait for itself, and a thread inside a sink (or
                // holding the sync sink's lock) must not wait for that lock: both are
                // checked inside.
                core.flush_from_panic_hook();
            }
        }));
    });
}

/// Removes `core` from the panic hook's list (its pipeline has ended).
pub(crate) fn forget_on_panic(core: &Core) {
    panic_flushed().retain(|w| w.strong_count() > 0 && !std::ptr::eq(w.as_ptr(), core));
}

/// Stops the signal thread when the guard goes away.
#[derive(Debug)]
pub(crate) struct SignalGuard {
    #[cfg(feature = "signals")]
    handle: signal_hook::iterator::Handle,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        #[cfg(feature = "signals")]
        self.handle.close();
    }
}

/// On SIGTERM or SIGINT: stop accepting, write what is queued within the shutdown
/// timeout, then take the signal's default action (the process ends as it would have).
#[cfg(feature = "signals")]
pub(crate) fn flush_on_signals(core: &Arc<Core>) -> std::io::Result<SignalGuard> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;

    let mut signals = Signals::new([SIGTERM, SIGINT])?;
    let handle = signals.handle();
    let weak = Arc::downgrade(core);
    std::thread::Builder::new()
        .name("loglag-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                if let Some(core) = weak.upgrade() {
                    core.shutdown(core.settings().shutdown_timeout);
                }
                let _ = signal_hook::low_level::emulate_default_handler(signal);
            }
        })?;
    Ok(SignalGuard { handle })
}

#[cfg(not(feature = "signals"))]
pub(crate) fn flush_on_signals(_core: &Arc<Core>) -> std::io::Result<SignalGuard> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "flush_on_signals needs loglag's `signals` feature",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ended_pipelines_leave_the_panic_hooks_list() {
        for _ in 0..500 {
            let (writer, guard) = crate::NonBlockingBuilder::default().finish(std::io::sink());
            drop(writer);
            drop(guard);
        }
        // Other tests in this binary build pipelines at the same time: a few may be
        // alive, never hundreds.
        let entries = panic_flushed().len();
        assert!(entries < 100, "{entries} entries after 500 ended pipelines");
    }
}
