//! The Windows calls loglag makes where unix has its own and std has none, through
//! `windows-sys`: a file's identity (volume serial number and file index, Windows'
//! device and inode) and whether it still has a name, a lock that readers of the file
//! do not feel, a rename that never replaces, the local zone's UTC offset, the
//! console's control events, and a few facts about the machine. A leaf: it knows
//! nothing of the rest of the crate.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::fs::OpenOptionsExt;
use std::os::windows::io::AsRawHandle;
use std::path::Path;

use super::Identity;

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, ERROR_ACCESS_DENIED, ERROR_LOCK_VIOLATION, FILETIME, HANDLE,
    STILL_ACTIVE, SYSTEMTIME,
};
use windows_sys::Win32::Storage::FileSystem::{
    FileStandardInfo, GetFileInformationByHandle, GetFileInformationByHandleEx, LockFileEx,
    MoveFileExW, BY_HANDLE_FILE_INFORMATION, FILE_FLAG_BACKUP_SEMANTICS,
    FILE_FLAG_OPEN_REPARSE_POINT, FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
    FILE_STANDARD_INFO, LOCKFILE_EXCLUSIVE_LOCK, LOCKFILE_FAIL_IMMEDIATELY,
};
use windows_sys::Win32::System::Threading::{
    GetExitCodeProcess, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
};
use windows_sys::Win32::System::IO::OVERLAPPED;

/// Opens a name itself, not what it points to: a symbolic link (a reparse point)
/// opens as the link, which the caller then refuses, as `O_NOFOLLOW` makes unix
/// refuse it.
pub(crate) const NO_FOLLOW: u32 = FILE_FLAG_OPEN_REPARSE_POINT;

/// The volume serial number of each file index seen, for a handle whose volume Windows
/// cannot tell. Wine answers 0 for a handle whose file was renamed since it was opened
/// (it looks the volume up by the name the handle was opened with); Windows itself
/// always knows. The file's index is the same, and every file loglag renames was
/// asked about before, under its first name. Bounded: forgotten past 4096 files.
static VOLUMES: std::sync::Mutex<Vec<(u64, u64)>> = std::sync::Mutex::new(Vec::new());

/// `volume` for `index`, remembered; or, when it is 0, the one remembered.
fn volume_of(index: u64, volume: u64) -> u64 {
    let mut seen = VOLUMES.lock().unwrap_or_else(|e| e.into_inner());
    let at = seen.iter().position(|(i, _)| *i == index);
    match (volume, at) {
        (0, Some(at)) => seen[at].1,
        (0, None) => 0,
        (v, Some(at)) => {
            seen[at].1 = v;
            v
        }
        (v, None) => {
            if seen.len() >= 4096 {
                seen.clear();
            }
            seen.push((index, v));
            v
        }
    }
}

/// The identity and link count of an open file.
pub(crate) fn file_info(file: &File) -> io::Result<Identity> {
    let handle = file.as_raw_handle() as HANDLE;
    // SAFETY: plain-old-data out-structures for a handle `file` keeps open.
    unsafe {
        let mut info: BY_HANDLE_FILE_INFORMATION = std::mem::zeroed();
        if GetFileInformationByHandle(handle, &mut info) == 0 {
            return Err(io::Error::last_os_error());
        }
        let mut standard: FILE_STANDARD_INFO = std::mem::zeroed();
        let pending = GetFileInformationByHandleEx(
            handle,
            FileStandardInfo,
            (&mut standard as *mut FILE_STANDARD_INFO).cast(),
            std::mem::size_of::<FILE_STANDARD_INFO>() as u32,
        ) != 0
            && standard.DeletePending;
        let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
        Ok(Identity {
            id: (
                volume_of(index, u64::from(info.dwVolumeSerialNumber)),
                index,
            ),
            links: if pending {
                0
            } else {
                u64::from(info.nNumberOfLinks)
            },
        })
    }
}

/// The identity of what `path` names, without following a link (as `lstat`). Opens
/// it with no access to its data, sharing everything: no writer or reader of it
/// notices.
pub(crate) fn path_info(path: &Path) -> io::Result<Identity> {
    let file = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS | FILE_FLAG_OPEN_REPARSE_POINT)
        .open(path)?;
    file_info(&file)
}

/// Where the lock byte sits: far past any end a file can have (NTFS stops at 256 TiB),
/// so that the lock covers no data. A Windows byte-range lock is mandatory: one over
/// the data (std's `File::try_lock` and fs4 lock the whole range) would make every
/// read of the log by another process (`type`, `Get-Content -Wait`, a shipper) fail
/// with ERROR_LOCK_VIOLATION for as long as the writer holds it. Over this byte it is
/// what `flock` is on unix: advisory, between those who ask for it.
const LOCK_BYTE: u64 = 1 << 62;

/// Takes the lock byte without waiting, exclusively or shared. `Ok(false)`: another
/// handle (in this process or another) holds it. It goes with the handle, and with the
/// process however it ends. The handle needs read or write access to the data (an
/// append-only handle cannot lock).
pub(crate) fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    let flags = LOCKFILE_FAIL_IMMEDIATELY
        | if exclusive {
            LOCKFILE_EXCLUSIVE_LOCK
        } else {
            0
        };
    // SAFETY: a zeroed OVERLAPPED carrying the offset; the handle is open and
    // synchronous, so the call completes before it returns.
    let ok = unsafe {
        let mut overlapped: OVERLAPPED = std::mem::zeroed();
        overlapped.Anonymous.Anonymous.Offset = LOCK_BYTE as u32;
        overlapped.Anonymous.Anonymous.OffsetHigh = (LOCK_BYTE >> 32) as u32;
        LockFileEx(
            file.as_raw_handle() as HANDLE,
            flags,
            0,
            1,
            0,
            &mut overlapped,
        )
    };
    if ok != 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32) {
        Ok(false)
    } else {
        Err(e)
    }
}

fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str()
        .encode_wide()
        .chain(std::iter::once(0))
        .collect()
}

/// Renames `from` to `to`, failing with `AlreadyExists` rather than replacing `to`
/// (`MoveFileExW` without `MOVEFILE_REPLACE_EXISTING`). An open file can be renamed
/// when every handle to it shares deletion, as std's do.
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (wide(from), wide(to));
    // SAFETY: two NUL-terminated UTF-16 paths that outlive the call.
    if unsafe { MoveFileExW(f.as_ptr(), t.as_ptr(), 0) } != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Opens `path` with `options` without following a symbolic link: Windows opens the
/// link itself (`FILE_FLAG_OPEN_REPARSE_POINT`), which is then refused with an error
/// [`is_link_refusal`] recognises, as `O_NOFOLLOW` makes unix refuse it.
pub(crate) fn open_no_follow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options.custom_flags(NO_FOLLOW).open(path)?;
    if file.metadata()?.file_type().is_symlink() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, LinkRefused));
    }
    Ok(file)
}

/// The refusal of a symbolic link by [`open_no_follow`].
#[derive(Debug)]
struct LinkRefused;

impl std::fmt::Display for LinkRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("it is a symbolic link")
    }
}

impl std::error::Error for LinkRefused {}

/// Whether [`open_no_follow`] failed because the name is a symbolic link.
pub(crate) fn is_link_refusal(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<LinkRefused>())
}

/// Windows has no file modes (a new file takes its directory's ACL): nothing to set.
pub(crate) fn create_mode(options: &mut OpenOptions, _mode: u32) -> &mut OpenOptions {
    options
}

/// What the read-only attribute says, as permission bits; nothing applies them.
pub(crate) fn mode_bits(meta: &std::fs::Metadata) -> u32 {
    if meta.permissions().readonly() {
        0o444
    } else {
        0o666
    }
}

/// A file's modification time (the epoch where Windows cannot say).
pub(crate) fn modified(meta: &std::fs::Metadata) -> std::time::SystemTime {
    meta.modified().unwrap_or(std::time::UNIX_EPOCH)
}

/// An open file's metadata and identity: std's metadata carries no identity or link
/// count on Windows, the handle does.
pub(crate) fn stat_file(file: &File) -> io::Result<(std::fs::Metadata, Identity)> {
    Ok((file.metadata()?, file_info(file)?))
}

/// What `path` names, not following a link: std's metadata, and the identity of the
/// name itself (not what it points to).
pub(crate) fn stat_path(path: &Path) -> io::Result<(std::fs::Metadata, Identity)> {
    Ok((std::fs::symlink_metadata(path)?, path_info(path)?))
}

/// Windows' lock is this crate's own byte-range lock, which every file system takes.
pub(crate) fn locks_unsupported(_e: &io::Error) -> bool {
    false
}

/// Windows has no rename that swaps two names.
pub(crate) fn rename_exchange(_a: &Path, _b: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "no atomic exchange of two names on Windows",
    ))
}

/// Whether [`rename_exchange`] failed because Windows cannot.
pub(crate) fn no_exchange(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Unsupported
}

/// Reads exactly `buf.len()` bytes at `offset` (`pread`; this moves the handle's
/// position, which a caller that maps the file does not use).
pub(crate) fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buf.is_empty() {
        match file.seek_read(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The local zone's UTC offset at `utc_s`, DST included, with the zone's rules for
/// that year (`GetTimeZoneInformationForYear`, then `SystemTimeToTzSpecificLocalTime`:
/// what `SystemTimeToTzSpecificLocalTimeEx` does, which Wine 8 lacks). 0 where Windows
/// cannot say (before 1601).
pub(crate) fn local_offset_s(utc_s: i64) -> i64 {
    use windows_sys::Win32::System::Time::{
        FileTimeToSystemTime, GetTimeZoneInformationForYear, SystemTimeToFileTime,
        SystemTimeToTzSpecificLocalTime, TIME_ZONE_INFORMATION,
    };
    // FILETIME counts 100 ns since 1601-01-01.
    const FROM_1601_S: i64 = 11_644_473_600;
    let Some(ticks) = utc_s
        .checked_add(FROM_1601_S)
        .filter(|s| *s >= 0)
        .and_then(|s| s.checked_mul(10_000_000))
    else {
        return 0;
    };
    let utc_ft = FILETIME {
        dwLowDateTime: ticks as u32,
        dwHighDateTime: (ticks >> 32) as u32,
    };
    // SAFETY: plain-old-data in and out; a null dynamic zone is the current one.
    unsafe {
        let mut utc: SYSTEMTIME = std::mem::zeroed();
        if FileTimeToSystemTime(&utc_ft, &mut utc) == 0 {
            return 0;
        }
        let local_in = |year: u16| -> Option<SYSTEMTIME> {
            let mut zone: TIME_ZONE_INFORMATION = std::mem::zeroed();
            let mut local: SYSTEMTIME = std::mem::zeroed();
            (GetTimeZoneInformationForYear(year, std::ptr::null(), &mut zone) != 0
                && SystemTimeToTzSpecificLocalTime(&zone, &utc, &mut local) != 0)
                .then_some(local)
        };
        let Some(mut local) = local_in(utc.wYear) else {
            return 0;
        };
        // New Year's Eve or Day: the rules of the year the local time is in.
        if local.wYear != utc.wYear {
            match local_in(local.wYear) {
                Some(l) => local = l,
                None => return 0,
            }
        }
        let mut local_ft: FILETIME = std::mem::zeroed();
        if SystemTimeToFileTime(&local, &mut local_ft) == 0 {
            return 0;
        }
        let local_ticks =
            (i64::from(local_ft.dwHighDateTime) << 32) | i64::from(local_ft.dwLowDateTime);
        (local_ticks - ticks).div_euclid(10_000_000)
    }
}

/// The machine's physical memory in bytes.
pub(crate) fn physical_memory() -> Option<u64> {
    use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
    // SAFETY: a zeroed MEMORYSTATUSEX with its length set, as the call requires.
    unsafe {
        let mut status: MEMORYSTATUSEX = std::mem::zeroed();
        status.dwLength = std::mem::size_of::<MEMORYSTATUSEX>() as u32;
        (GlobalMemoryStatusEx(&mut status) != 0).then_some(status.ullTotalPhys)
    }
}

/// The machine's DNS host name (what `hostname` prints), or empty.
pub(crate) fn host_name() -> String {
    use windows_sys::Win32::System::SystemInformation::{
        ComputerNameDnsHostname, GetComputerNameExW,
    };
    let mut buf = [0u16; 256];
    let mut len = buf.len() as u32;
    // SAFETY: the buffer and its length in characters; on success `len` is the
    // length written, without the NUL.
    let ok = unsafe { GetComputerNameExW(ComputerNameDnsHostname, buf.as_mut_ptr(), &mut len) };
    if ok == 0 {
        return String::new();
    }
    String::from_utf16_lossy(&buf[..(len as usize).min(buf.len())])
}

/// Whether process `pid` exists (`kill(pid, 0)`): one that runs, or one this user may
/// not look at.
pub(crate) fn process_alive(pid: u32) -> bool {
    // SAFETY: OpenProcess returns null or a handle we close; GetExitCodeProcess writes
    // one u32.
    unsafe {
        let process = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
        if process.is_null() {
            return GetLastError() == ERROR_ACCESS_DENIED;
        }
        let mut code = 0u32;
        let known = GetExitCodeProcess(process, &mut code) != 0;
        CloseHandle(process);
        !known || code == STILL_ACTIVE as u32
    }
}

/// Waits up to `timeout` for `socket` to have something to read, its end, or an error
/// (`WSAPoll`). Returns whether it has.
pub(crate) fn wait_readable(
    socket: &impl std::os::windows::io::AsRawSocket,
    timeout: std::time::Duration,
) -> io::Result<bool> {
    use windows_sys::Win32::Networking::WinSock::{WSAPoll, POLLRDNORM, SOCKET, WSAPOLLFD};
    let mut fd = WSAPOLLFD {
        fd: socket.as_raw_socket() as SOCKET,
        events: POLLRDNORM,
        revents: 0,
    };
    let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid WSAPOLLFD for the duration of the call.
    let n = unsafe { WSAPoll(&mut fd, 1, ms) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n > 0)
}

/// SO_SNDBUF on a connected socket.
pub(crate) fn set_send_buffer(
    socket: &impl std::os::windows::io::AsRawSocket,
    bytes: usize,
) -> io::Result<()> {
    use windows_sys::Win32::Networking::WinSock::{setsockopt, SOCKET, SOL_SOCKET, SO_SNDBUF};
    let value = i32::try_from(bytes).unwrap_or(i32::MAX);
    // SAFETY: a valid socket and a pointer to an int of the size given.
    let rc = unsafe {
        setsockopt(
            socket.as_raw_socket() as SOCKET,
            SOL_SOCKET,
            SO_SNDBUF,
            (&value as *const i32).cast(),
            std::mem::size_of::<i32>() as i32,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether this test runs under Wine rather than Windows (see `tests/support`).
#[cfg(test)]
pub(crate) fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: NUL-terminated names; ntdll is loaded in every process.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locked_file_can_still_be_read_renamed_and_identified() {
        use std::io::{Read, Write};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.log");
        let mut writer = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .unwrap();
        writer.write_all(b"one\n").unwrap();
        assert!(try_lock(&writer, true).unwrap());
        let other = File::open(&path).unwrap();
        assert!(
            !try_lock(&other, true).unwrap(),
            "a second handle is refused"
        );
        assert!(!try_lock(&other, false).unwrap(), "shared too");
        let mut text = String::new();
        (&other).read_to_string(&mut text).unwrap();
        assert_eq!(text, "one\n", "the lock covers no data");
        let id = file_info(&writer).unwrap();
        assert_eq!(path_info(&path).unwrap().id, id.id);
        assert_eq!(id.links, 1);
        let moved = dir.path().join("a.log.1");
        rename_noreplace(&path, &moved).unwrap();
        assert_eq!(path_info(&moved).unwrap().id, id.id);
        std::fs::write(&path, b"x").unwrap();
        let e = rename_noreplace(&moved, &path).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        drop(writer);
        assert!(try_lock(&other, true).unwrap(), "let go with the handle");
    }

    #[test]
    fn machine_facts() {
        assert!(physical_memory().is_some_and(|m| m > 0));
        assert!(process_alive(std::process::id()));
        let offset = local_offset_s(1_796_095_054);
        assert!(offset.abs() <= 14 * 3600, "{offset}");
    }
}
