//! What the operating system is asked directly: whether this process is a forked
//! child, the atomics and locks the lock-free core uses (std's, or loom's under
//! `--cfg loglag_loom`), and the Windows calls std does not make.

pub(crate) mod fork;
pub(crate) mod sync;
#[cfg(windows)]
pub(crate) mod windows;
