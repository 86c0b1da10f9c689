//! The synchronisation types of the lock-free core (`queue/`, `lanes.rs`,
//! `handshake.rs`): std's, or loom's when built with `RUSTFLAGS="--cfg loglag_loom"`
//! for the model checks in `loom_models.rs` (`scripts/loom`). In every other build
//! these are plain re-exports of std, so the core compiles to what it did before.

#[cfg(loglag_loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicU64, AtomicUsize},
    Arc, Condvar, Mutex, MutexGuard,
};
#[cfg(not(loglag_loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicU64, AtomicUsize},
    Arc, Condvar, Mutex, MutexGuard,
};

pub(crate) use std::sync::atomic::Ordering;

/// A pause in a spin loop: the CPU hint, or under loom a yield (loom explores a spin
/// that does not yield without end).
#[inline]
pub(crate) fn spin_loop() {
    #[cfg(loglag_loom)]
    loom::thread::yield_now();
    #[cfg(not(loglag_loom))]
    std::hint::spin_loop();
}

/// Lets another thread run (loom's scheduler under loom).
#[inline]
pub(crate) fn yield_now() {
    #[cfg(loglag_loom)]
    loom::thread::yield_now();
    #[cfg(not(loglag_loom))]
    std::thread::yield_now();
}
