//! One clock for every process of a run: `CLOCK_MONOTONIC` is shared by all processes
//! on the machine, so times taken by the API, the reader and the runner compare directly.

/// Nanoseconds on `CLOCK_MONOTONIC`.
#[cfg(unix)]
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Nanoseconds since this process first asked. Only the runs that stay in one process
/// (`loglag load`, `emit`, `serve`) exist where unix does not: their times never meet
/// another process's.
#[cfg(not(unix))]
pub fn mono_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    // From 1 s, not 0: callers take 0 for "not yet".
    1_000_000_000
        + START
            .get_or_init(std::time::Instant::now)
            .elapsed()
            .as_nanos() as u64
}
