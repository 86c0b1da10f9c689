//! How the lab's servers end: at SIGTERM or SIGINT, as a deployment stops a service.

use std::future::Future;
use std::io;

/// Runs `serve` until it fails or SIGTERM/SIGINT arrives. Returns whether a signal
/// ended it (the caller then writes what it holds before exiting).
#[cfg(unix)]
pub async fn serve_until_stopped(serve: impl Future<Output = io::Result<()>>) -> io::Result<bool> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        r = serve => r.map(|()| false),
        _ = term.recv() => Ok(true),
        _ = int.recv() => Ok(true),
    }
}

/// Runs `serve` until it fails or Ctrl-C (Ctrl+Break, a console's close) arrives:
/// Windows has no SIGTERM.
#[cfg(not(unix))]
pub async fn serve_until_stopped(serve: impl Future<Output = io::Result<()>>) -> io::Result<bool> {
    tokio::select! {
        r = serve => r.map(|()| false),
        r = tokio::signal::ctrl_c() => r.map(|()| true),
    }
}
