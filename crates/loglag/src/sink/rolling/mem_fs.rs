//! A file system in memory behind the `Fs` seam, for tests: one flat directory, locks
//! another writer holds, a log of every name changed, and a crash at the n-th change,
//! after which every call fails as a dead process's would.

use std::collections::BTreeMap;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::fs::{Entry, Fs, Handle, Kind, Meta};

/// Who holds a file's lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holder {
    /// An open handle of the code under test.
    Handle(u64),
    /// Another writer, outside the code under test.
    Other,
    /// Another process, for this many more attempts to take the lock (a child between
    /// `fork` and `exec`, which holds its parent's locks until it execs).
    Briefly(u32),
}

#[derive(Debug, Clone)]
pub(super) struct Node {
    pub(super) kind: Kind,
    pub(super) data: Vec<u8>,
    pub(super) modified: SystemTime,
    mode: u32,
    nlink: u64,
    lock: Option<Holder>,
}

/// A name changed: what the test checks "never touched" against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Change {
    Created(PathBuf),
    Renamed(PathBuf, PathBuf),
    Removed(PathBuf),
}

#[derive(Debug, Default)]
struct State {
    names: BTreeMap<PathBuf, u64>,
    nodes: BTreeMap<u64, Node>,
    next_id: u64,
    /// Each new file is a second newer than the last.
    clock_s: u64,
    /// Changes so far (created, written, renamed, removed, synced, timed).
    changes: u64,
    crash_at: Option<u64>,
    crashed: bool,
    log: Vec<Change>,
}

impl State {
    /// Every call asks first: a dead process does nothing more.
    fn alive(&self) -> io::Result<()> {
        if self.crashed {
            Err(io::Error::other("crashed"))
        } else {
            Ok(())
        }
    }

    /// Every change asks first; the `crash_at`-th one (from 0) is where the process dies.
    fn change(&mut self) -> io::Result<()> {
        self.alive()?;
        if self.crash_at == Some(self.changes) {
            self.crashed = true;
            return Err(io::Error::other("crashed"));
        }
        self.changes += 1;
        Ok(())
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn node(&self, path: &Path) -> io::Result<(u64, &Node)> {
        let id = *self.names.get(path).ok_or(io::ErrorKind::NotFound)?;
        Ok((id, &self.nodes[&id]))
    }

    fn meta(&self, id: u64) -> Meta {
        let n = &self.nodes[&id];
        Meta {
            kind: n.kind,
            id: (0, id),
            len: n.data.len() as u64,
            modified: n.modified,
            mode: n.mode,
            nlink: n.nlink,
        }
    }
}

/// The file system. Clones share it.
#[derive(Debug, Clone, Default)]
pub(super) struct MemFs(Arc<Mutex<State>>);

impl MemFs {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Puts a file (or a link) at `path`, modified at `modified_s`; its inode.
    pub(super) fn put(&self, path: &Path, kind: Kind, data: &[u8], modified_s: u64) -> u64 {
        let mut st = self.state();
        let id = st.id();
        st.nodes.insert(
            id,
            Node {
                kind,
                data: data.to_vec(),
                modified: UNIX_EPOCH + Duration::from_secs(modified_s),
                mode: 0o640,
                nlink: 1,
                lock: None,
            },
        );
        assert!(st.names.insert(path.to_owned(), id).is_none(), "{path:?}");
        id
    }

    /// Another writer takes (or lets go of) the file's lock.
    pub(super) fn hold(&self, path: &Path, held: bool) {
        let mut st = self.state();
        let id = st.names[path];
        let node = st.nodes.get_mut(&id).expect("a node");
        node.lock = held.then_some(Holder::Other);
    }

    /// Another process holds the file's lock for the next `tries` attempts to take it.
    pub(super) fn hold_briefly(&self, path: &Path, tries: u32) {
        let mut st = self.state();
        let id = st.names[path];
        let node = st.nodes.get_mut(&id).expect("a node");
        node.lock = (tries > 0).then_some(Holder::Briefly(tries));
    }

    /// The process dies at its `n`-th change from now (`None`: it does not).
    pub(super) fn crash_at(&self, n: Option<u64>) {
        let mut st = self.state();
        st.crash_at = n.map(|n| st.changes + n);
    }

    /// Whether it died; and it is started again (the locks of its handles went with it).
    pub(super) fn restart(&self) -> bool {
        let mut st = self.state();
        st.crash_at = None;
        std::mem::take(&mut st.crashed)
    }

    /// Every name and its inode and file.
    pub(super) fn snapshot(&self) -> BTreeMap<PathBuf, (u64, Node)> {
        let st = self.state();
        st.names
            .iter()
            .map(|(p, id)| (p.clone(), (*id, st.nodes[id].clone())))
            .collect()
    }

    /// The names changed since the last call.
    pub(super) fn take_log(&self) -> Vec<Change> {
        std::mem::take(&mut self.state().log)
    }
}

impl Fs for MemFs {
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        let st = self.state();
        st.alive()?;
        Ok(st
            .names
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, id)| Entry {
                name: p.file_name().expect("a name").to_owned(),
                path: p.clone(),
                meta: st.meta(*id),
            })
            .collect())
    }

    fn stat(&self, path: &Path) -> io::Result<Meta> {
        let st = self.state();
        st.alive()?;
        let (id, _) = st.node(path)?;
        Ok(st.meta(id))
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Handle>> {
        let mut st = self.state();
        st.alive()?;
        let (id, node) = st.node(path)?;
        if node.kind == Kind::Symlink {
            #[cfg(unix)]
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
            #[cfg(not(unix))]
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a symbolic link is not followed",
            ));
        }
        let handle = st.id();
        Ok(Box::new(MemHandle {
            fs: self.clone(),
            id,
            handle,
            at: 0,
        }))
    }

    fn create_new(&self, path: &Path, mode: u32) -> io::Result<Box<dyn Handle>> {
        let mut st = self.state();
        st.change()?;
        if st.names.contains_key(path) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        st.clock_s += 1;
        let (id, handle) = (st.id(), st.id());
        let modified = UNIX_EPOCH + Duration::from_secs(4_000_000_000 + st.clock_s);
        st.nodes.insert(
            id,
            Node {
                kind: Kind::File,
                data: Vec::new(),
                modified,
                mode,
                nlink: 1,
                lock: None,
            },
        );
        st.names.insert(path.to_owned(), id);
        st.log.push(Change::Created(path.to_owned()));
        Ok(Box::new(MemHandle {
            fs: self.clone(),
            id,
            handle,
            at: 0,
        }))
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.change()?;
        let (id, _) = st.node(from)?;
        if st.names.contains_key(to) {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        st.names.remove(from);
        st.names.insert(to.to_owned(), id);
        st.log.push(Change::Renamed(from.to_owned(), to.to_owned()));
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut st = self.state();
        st.change()?;
        let (id, _) = st.node(path)?;
        st.names.remove(path);
        st.nodes.get_mut(&id).expect("a node").nlink = 0;
        st.log.push(Change::Removed(path.to_owned()));
        Ok(())
    }
}

/// An open file: reads from where it is, writes append.
struct MemHandle {
    fs: MemFs,
    id: u64,
    handle: u64,
    at: usize,
}

impl Read for MemHandle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let st = self.fs.state();
        st.alive()?;
        let data = &st.nodes[&self.id].data;
        let n = buf.len().min(data.len().saturating_sub(self.at));
        buf[..n].copy_from_slice(&data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl Write for MemHandle {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut st = self.fs.state();
        st.change()?;
        let node = st.nodes.get_mut(&self.id).expect("a node");
        node.data.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Handle for MemHandle {
    fn try_lock_exclusive(&self) -> io::Result<bool> {
        let mut st = self.fs.state();
        st.alive()?;
        let node = st.nodes.get_mut(&self.id).expect("a node");
        match node.lock {
            Some(Holder::Briefly(tries)) => {
                node.lock = (tries > 1).then_some(Holder::Briefly(tries - 1));
                Ok(false)
            }
            Some(h) if h != Holder::Handle(self.handle) => Ok(false),
            _ => {
                node.lock = Some(Holder::Handle(self.handle));
                Ok(true)
            }
        }
    }

    fn meta(&self) -> io::Result<Meta> {
        let st = self.fs.state();
        st.alive()?;
        Ok(st.meta(self.id))
    }

    fn set_modified(&self, t: SystemTime) -> io::Result<()> {
        let mut st = self.fs.state();
        st.change()?;
        st.nodes.get_mut(&self.id).expect("a node").modified = t;
        Ok(())
    }

    fn sync(&self) -> io::Result<()> {
        self.fs.state().change()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let st = self.fs.state();
        st.alive()?;
        let data = &st.nodes[&self.id].data;
        let at = usize::try_from(offset).map_err(io::Error::other)?;
        let src = data
            .get(at..at + buf.len())
            .ok_or(io::ErrorKind::UnexpectedEof)?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl Drop for MemHandle {
    /// A lock goes with the last descriptor, as `flock`'s does.
    fn drop(&mut self) {
        let mut st = self.fs.state();
        if let Some(node) = st.nodes.get_mut(&self.id) {
            if node.lock == Some(Holder::Handle(self.handle)) {
                node.lock = None;
            }
        }
    }
}
