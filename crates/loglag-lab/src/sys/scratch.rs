//! The lab's scratch directories (FIFOs, span files, child stderr): named after the
//! lab's pid, so that one left by a lab killed with SIGKILL (which cannot clean up) is
//! recognised and removed by the next lab.

use std::io;
use std::path::Path;

/// A scratch directory: removed when it drops, or by a second Ctrl-C's teardown
/// (`teardown::now`) should the lab not get that far.
#[derive(Debug)]
pub struct Scratch {
    // Declared first, so dropped first: let go of before the directory is removed.
    _held: super::teardown::Held,
    dir: tempfile::TempDir,
}

impl Scratch {
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Creates `$TMPDIR/loglag-<kind>-<pid>-XXXXXX`, removed when the returned guard drops,
/// after removing stale `loglag-<kind>-<pid>-*` directories whose lab is gone. Returns
/// the directory and, if any were removed, a warning that says so.
pub fn create(kind: &str) -> io::Result<(Scratch, Option<String>)> {
    let tmp = std::env::temp_dir();
    let removed = remove_stale(&tmp, kind);
    let warning = (removed > 0).then(|| {
        format!(
            "removed {removed} scratch directory(ies) left in the temporary directory by an earlier lab that was killed"
        )
    });
    let dir = tempfile::Builder::new()
        .prefix(&format!("loglag-{kind}-{}-", std::process::id()))
        .tempdir_in(&tmp)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create a scratch directory in {}: {e}",
                    tmp.display()
                ),
            )
        })?;
    let dir = Scratch {
        _held: super::teardown::hold_dir(dir.path()),
        dir,
    };
    Ok((dir, warning))
}

/// The pid in a name `loglag-<kind>-<pid>-<random>`.
fn owner_pid(name: &str, kind: &str) -> Option<u32> {
    name.strip_prefix("loglag-")?
        .strip_prefix(kind)?
        .strip_prefix('-')?
        .split('-')
        .next()?
        .parse()
        .ok()
}

/// Whether this user owns the file: a shared /tmp holds other users' labs too.
#[cfg(unix)]
fn owned_by_me(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions.
    meta.uid() == unsafe { libc::geteuid() }
}

/// Windows' temporary directory is the user's own.
#[cfg(not(unix))]
fn owned_by_me(_meta: &std::fs::Metadata) -> bool {
    true
}

fn remove_stale(tmp: &Path, kind: &str) -> usize {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| owner_pid(n, kind)) else {
            continue;
        };
        // Only our own directories: a shared /tmp holds other users' labs too.
        let mine = entry
            .metadata()
            .is_ok_and(|m| m.is_dir() && owned_by_me(&m));
        if mine && !super::procfs::is_running(pid) && std::fs::remove_dir_all(entry.path()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_owner_and_stale_ones_are_removed() {
        assert_eq!(owner_pid("loglag-lab-123-abc", "lab"), Some(123));
        assert_eq!(owner_pid("loglag-hops-123-abc", "lab"), None);
        assert_eq!(owner_pid("loglag-lab-x-abc", "lab"), None);
        assert_eq!(owner_pid("loglag-lab", "lab"), None);

        let tmp = tempfile::tempdir().unwrap();
        // A pid that cannot be alive (above the kernel's pid_max limit of 2^22).
        let stale = tmp.path().join("loglag-lab-4194305-x1");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join("api.fifo"), b"").unwrap();
        let alive = tmp
            .path()
            .join(format!("loglag-lab-{}-x2", std::process::id()));
        std::fs::create_dir(&alive).unwrap();
        let other_kind = tmp.path().join("loglag-hops-4194305-x3");
        std::fs::create_dir(&other_kind).unwrap();
        assert_eq!(remove_stale(tmp.path(), "lab"), 1);
        assert!(!stale.exists());
        assert!(alive.exists(), "a running lab's directory is left alone");
        assert!(other_kind.exists());
    }
}
