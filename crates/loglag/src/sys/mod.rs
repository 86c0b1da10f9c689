//! What the operating system is asked directly: whether this process is a forked
//! child, the atomics and locks the lock-free core uses (std's, or loom's under
//! `--cfg loglag_loom`), and the file calls whose steps differ by platform, with one
//! API: `unix.rs` and `windows.rs` each give every one of them under the same name,
//! and this module publishes whichever is built (`windows.rs` also holds the other
//! Windows calls std does not make).

pub(crate) mod fork;
pub(crate) mod sync;
// Without `rolling`, the renames, the lock's fallback and the metadata helpers have
// no caller.
#[cfg(unix)]
#[cfg_attr(not(feature = "rolling"), allow(dead_code))]
mod unix;
#[cfg(windows)]
#[cfg_attr(not(feature = "rolling"), allow(dead_code))]
pub(crate) mod windows;

#[cfg(unix)]
use unix as os;
#[cfg(windows)]
use windows as os;

#[cfg_attr(not(feature = "rolling"), allow(unused_imports))]
pub(crate) use os::{
    create_mode, is_link_refusal, locks_unsupported, mode_bits, modified, no_exchange,
    open_no_follow, read_exact_at, rename_exchange, rename_noreplace, stat_file, stat_path,
    try_lock,
};

/// What a file is, beyond std's metadata: (device, inode) on unix, (volume serial
/// number, file index) on Windows; and how many names it has (0 once it has none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Identity {
    /// (device, inode), or Windows' (volume, index). (On ReFS a file's full identity
    /// is 128 bits; the 64-bit index is what NTFS has.)
    pub(crate) id: (u64, u64),
    /// Its names; 0 once it is deleted (on Windows: pending deletion, the last handle
    /// to close removes it).
    pub(crate) links: u64,
}

/// The identity of an open file.
pub(crate) fn file_id(file: &std::fs::File) -> std::io::Result<(u64, u64)> {
    stat_file(file).map(|(_, identity)| identity.id)
}

/// The identity of what `path` names, not following a link.
pub(crate) fn path_id(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    stat_path(path).map(|(_, identity)| identity.id)
}
