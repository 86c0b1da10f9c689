//! Flushing on the ways a process ends that drop no guard: panics and signals.

use std::sync::{Arc, Weak};

use crate::core::Core;

/// Chains a panic hook that flushes within the shutdown timeout after the previous hook
/// has printed the panic. The hook holds a weak reference, so it does not keep a
/// finished pipeline alive.
pub(crate) fn flush_on_panic(core: &Arc<Core>) {
    let weak: Weak<Core> = Arc::downgrade(core);
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        // The writer cannot wait for itself, and a thread inside a sink (or holding
        // the sync sink's lock) must not wait for that lock: both are checked inside.
        if let Some(core) = weak.upgrade() {
            core.flush_from_panic_hook();
        }
    }));
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
                    core.shutdown(core.config.shutdown_timeout);
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
