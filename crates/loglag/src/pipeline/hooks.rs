//! Flushing on the ways a process ends that drop no guard: panics and signals (on
//! Windows, the console's control events).

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

/// Stops the signal thread when the guard goes away (on Windows: takes the pipeline
/// off the console handler's list).
#[derive(Debug)]
pub(crate) struct SignalGuard {
    #[cfg(all(feature = "signals", unix))]
    handle: signal_hook::iterator::Handle,
    #[cfg(all(feature = "signals", windows))]
    core: Weak<Core>,
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        #[cfg(all(feature = "signals", unix))]
        self.handle.close();
        #[cfg(all(feature = "signals", windows))]
        console::forget(&self.core);
    }
}

/// On SIGTERM or SIGINT: stop accepting, write what is queued within the shutdown
/// timeout, then take the signal's default action (the process ends as it would have).
#[cfg(all(feature = "signals", unix))]
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

/// On the console's Ctrl+C, Ctrl+Break, close, logoff or shutdown event (Windows'
/// SIGINT and SIGTERM): stop accepting, write what is queued within the shutdown
/// timeout, then let the next handler act (by default the process ends, as it would
/// have).
#[cfg(all(feature = "signals", windows))]
pub(crate) fn flush_on_signals(core: &Arc<Core>) -> std::io::Result<SignalGuard> {
    let core = Arc::downgrade(core);
    console::watch(core.clone())?;
    Ok(SignalGuard { core })
}

/// The one console control handler of the process and the pipelines it flushes.
#[cfg(all(feature = "signals", windows))]
mod console {
    use std::sync::{Arc, Mutex, Weak};

    use windows_sys::core::BOOL;
    use windows_sys::Win32::System::Console::{
        SetConsoleCtrlHandler, CTRL_BREAK_EVENT, CTRL_CLOSE_EVENT, CTRL_C_EVENT, CTRL_LOGOFF_EVENT,
        CTRL_SHUTDOWN_EVENT,
    };

    use crate::core::Core;

    static FLUSHED: Mutex<Vec<Weak<Core>>> = Mutex::new(Vec::new());
    static INSTALLED: Mutex<bool> = Mutex::new(false);

    fn flushed() -> std::sync::MutexGuard<'static, Vec<Weak<Core>>> {
        FLUSHED.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds `core` to the list, installing the handler the first time.
    pub(super) fn watch(core: Weak<Core>) -> std::io::Result<()> {
        let mut installed = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
        if !*installed {
            // SAFETY: registers a function that lives as long as the process.
            if unsafe { SetConsoleCtrlHandler(Some(on_event), 1) } == 0 {
                return Err(std::io::Error::last_os_error());
            }
            *installed = true;
        }
        let mut list = flushed();
        list.retain(|w| w.strong_count() > 0);
        list.push(core);
        Ok(())
    }

    /// Takes `core` off the list (its guard went away).
    pub(super) fn forget(core: &Weak<Core>) {
        flushed().retain(|w| w.strong_count() > 0 && !w.ptr_eq(core));
    }

    /// Runs on a thread Windows starts for the event. Returning makes Windows call the
    /// next handler, by default `ExitProcess`; for a close, logoff or shutdown the
    /// process ends when this returns anyway (Windows allows about 5 s), so the flush
    /// happens here, before returning, each pipeline in parallel within its shutdown
    /// timeout.
    pub(super) extern "system" fn on_event(event: u32) -> BOOL {
        if !matches!(
            event,
            CTRL_C_EVENT
                | CTRL_BREAK_EVENT
                | CTRL_CLOSE_EVENT
                | CTRL_LOGOFF_EVENT
                | CTRL_SHUTDOWN_EVENT
        ) {
            return 0;
        }
        let live: Vec<Arc<Core>> = flushed().iter().filter_map(Weak::upgrade).collect();
        std::thread::scope(|s| {
            for core in &live {
                s.spawn(move || core.shutdown(core.settings().shutdown_timeout));
            }
        });
        // Not handled: the default action follows, as after a signal on unix.
        0
    }
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

    /// The console handler flushes what is queued, says it did not handle the event
    /// (so that the process ends as it would have) and forgets an ended pipeline.
    #[cfg(all(feature = "signals", windows))]
    #[test]
    fn the_console_handler_flushes_and_lets_the_default_act() {
        use std::io::Write;
        use std::sync::Mutex;
        #[derive(Clone, Default)]
        struct Shared(Arc<Mutex<Vec<u8>>>);
        impl Write for Shared {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Shared::default();
        let (mut writer, guard) = crate::pipeline::builder::NonBlockingBuilder::default()
            .flush_interval(std::time::Duration::from_secs(3600))
            .flush_on_signals(true)
            .finish(out.clone());
        writer.write_all(b"queued before the event\n").unwrap();
        let handled = console::on_event(windows_sys::Win32::System::Console::CTRL_CLOSE_EVENT);
        assert_eq!(handled, 0, "the default action follows");
        assert_eq!(&*out.0.lock().unwrap(), b"queued before the event\n");
        let metrics = guard.shutdown();
        assert_eq!(metrics.written_records, 1);
    }

    #[test]
    fn ended_pipelines_leave_the_panic_hooks_list() {
        for _ in 0..500 {
            let (writer, guard) =
                crate::pipeline::builder::NonBlockingBuilder::default().finish(std::io::sink());
            drop(writer);
            drop(guard);
        }
        // Other tests in this binary build pipelines at the same time: a few may be
        // alive, never hundreds.
        let entries = panic_flushed().len();
        assert!(entries < 100, "{entries} entries after 500 ended pipelines");
    }
}
