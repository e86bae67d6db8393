//! Reading a staged run's upper layer into a change set, once the run has ended.
//!
//! The upper layer is read through the tmpfs descriptor C sent ([`super::mount`]), never
//! following a symlink, and compared with the workspace (the lower layer) beneath the root
//! handle:
//!
//! - a whiteout (a character device 0/0) is a deletion of what the workspace has there (a
//!   directory with everything beneath it, each listed);
//! - a directory the workspace lacks is created (listed as `path/` only when it stays empty:
//!   the files beneath it say the rest); an opaque one (`user.overlay.opaque`, or
//!   `trusted.overlay.opaque`) replaced the workspace's directory: what is not in it is deleted;
//! - a regular file or symlink is `added`, `modified`, `mode` (the permission bits alone) or
//!   `type` (a file became a link or the reverse), or nothing when it equals the workspace's
//!   (a file copied up but not changed);
//! - anything else (FIFOs, sockets, devices) is listed as `added` and makes the apply refuse
//!   (`NOT_A_REGULAR_FILE`).
//!
//! Renames are deletions and additions (directories renamed inside the overlay give the
//! process `EXDEV`, so tools copy them). Bounded: at most [`super::MAX_ENTRIES`] entries of the
//! upper layer are looked at, and a file's content is hashed in pieces (memory bounded).
//!
//! What each target had when the run started: the workspace's file is read at the end of the
//! run, and a target whose ctime (which no process can set back) is at or past the run's start
//! stamp ([`super::Run::start`]: the first tick of the workspace's own clock after the stamping
//! began) changed during the run; the change set is then refused at apply (`TARGET_CHANGED`).
//! Together with the apply's recheck of each target against what the run's end saw, the change
//! applies only while every target still has the content it had when the run started.

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::cancel::Cancel;
use crate::checkpoint::diff::Action;
use crate::checkpoint::scan::{self, Stat};
use crate::error::{Code, Error, Result};
use crate::hash::Hasher;
use crate::root::Workspace;

/// What a path holds, on either side.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Node {
    File { mode: u32, size: u64, hash: String },
    Link { target: Vec<u8> },
    Dir { mode: u32 },
    /// A FIFO, socket or device: never applied.
    Other { kind: &'static str },
}

impl Node {
    pub(crate) fn text(node: Option<&Node>) -> String {
        match node {
            None => "-".into(),
            Some(Node::File { mode, size, hash }) => format!("f {mode:o} {size} {hash}"),
            Some(Node::Link { target }) => format!("l {}", crate::checkpoint::store::escape(target)),
            Some(Node::Dir { mode }) => format!("d {mode:o}"),
            Some(Node::Other { kind }) => format!("o {kind}"),
        }
    }

    pub(crate) fn is_dir(&self) -> bool {
        matches!(self, Node::Dir { .. })
    }
}

/// One listed path: the workspace's state at the end of the run (with its `lstat`), and the
/// staged one.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub path: Vec<u8>,
    pub action: Action,
    pub before: Option<(Node, Stat)>,
    pub after: Option<Node>,
}

impl Change {
    /// The path as listed: a directory's ends in `/`.
    pub(crate) fn shown(&self) -> String {
        let s = scan::shown(&self.path);
        let dir = self.after.as_ref().map_or(false, Node::is_dir) || (self.after.is_none() && self.before.as_ref().is_some_and(|(n, _)| n.is_dir()));
        if dir {
            format!("{s}/")
        } else {
            s
        }
    }
}

pub(crate) struct Collected {
    pub changes: Vec<Change>,
    /// Paths the workspace changed during the run (their ctime is not older than its start).
    pub changed_during_run: Vec<String>,
}

struct Cx<'a> {
    ws: &'a Workspace,
    started: i64,
    seen: usize,
    out: Vec<Change>,
    stale: Vec<String>,
    cancel: &'a Cancel,
}

fn too_many() -> Error {
    Error::new(Code::FileTooLarge, format!("the staged run changed more than {} entries", super::MAX_ENTRIES))
        .with_hint("stage a smaller part of the work (a narrower command, or generated files written outside the workspace); the staged change was discarded")
}

fn io(path: &[u8]) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(&e, &scan::shown(path))
}

fn join(rel: &[u8], name: &OsStr) -> Vec<u8> {
    let mut p = rel.to_vec();
    if !p.is_empty() {
        p.push(b'/');
    }
    p.extend_from_slice(name.as_bytes());
    p
}

fn open_dir(dir: impl AsFd, name: &OsStr) -> std::io::Result<OwnedFd> {
    Ok(rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())?)
}

/// The names in a directory, sorted bytewise.
fn names(dir: impl AsFd) -> std::io::Result<Vec<OsString>> {
    let fd = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let mut d = rustix::fs::Dir::new(fd)?;
    let mut out = Vec::new();
    while let Some(e) = d.read() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." {
            out.push(OsStr::from_bytes(n).to_os_string());
        }
    }
    out.sort();
    Ok(out)
}

fn is_opaque(dir: impl AsFd) -> bool {
    let mut buf = [0u8; 4];
    for name in [c"user.overlay.opaque", c"trusted.overlay.opaque"] {
        if let Ok(n) = rustix::fs::fgetxattr(&dir, name, &mut buf) {
            if buf[..n] == *b"y" {
                return true;
            }
        }
    }
    false
}

/// Hash, size of a file open for reading.
pub(crate) fn hash_open(file: &mut std::fs::File, cancel: &Cancel, shown: &str) -> Result<(String, u64)> {
    let mut h = Hasher::new();
    let mut buf = vec![0u8; 128 * 1024];
    let mut size = 0u64;
    loop {
        cancel.check()?;
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                size += n as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::from_io(&e, shown)),
        }
    }
    Ok((h.finish(), size))
}

fn open_file(dir: impl AsFd, name: &OsStr) -> std::io::Result<std::fs::File> {
    let fd = rustix::fs::openat(dir, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC, Mode::empty())?;
    Ok(std::fs::File::from(fd))
}

/// The node at `name` in `dir` (not followed), hashing a file.
fn node_at(dir: impl AsFd, name: &OsStr, st: &Stat, path: &[u8], cancel: &Cancel) -> Result<Node> {
    let ft = FileType::from_raw_mode(st.mode as _);
    Ok(match ft {
        FileType::RegularFile => {
            let mut f = open_file(&dir, name).map_err(io(path))?;
            let now = Stat::of(&rustix::fs::fstat(&f).map_err(|e| io(path)(e.into()))?);
            if now.id() != st.id() {
                return Err(crate::write::changed(&scan::shown(path), "target"));
            }
            let (hash, size) = hash_open(&mut f, cancel, &scan::shown(path))?;
            Node::File { mode: st.mode & 0o7777, size, hash }
        }
        FileType::Symlink => Node::Link { target: rustix::fs::readlinkat(&dir, name, Vec::new()).map_err(|e| io(path)(e.into()))?.into_bytes() },
        FileType::Directory => Node::Dir { mode: st.mode & 0o7777 },
        FileType::Fifo => Node::Other { kind: "FIFO" },
        FileType::Socket => Node::Other { kind: "socket" },
        FileType::CharacterDevice => Node::Other { kind: "character device" },
        FileType::BlockDevice => Node::Other { kind: "block device" },
        _ => Node::Other { kind: "unknown file type" },
    })
}

fn stat_at(dir: impl AsFd, name: &OsStr) -> std::io::Result<Option<(Stat, u64)>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some((Stat::of(&st), st.st_rdev as u64))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl Cx<'_> {
    fn count(&mut self) -> Result<()> {
        self.seen += 1;
        if self.seen > super::MAX_ENTRIES {
            return Err(too_many());
        }
        self.cancel.check()
    }

    fn before(&mut self, lower: &OwnedFd, name: &OsStr, st: Stat, path: &[u8]) -> Result<(Node, Stat)> {
        if st.ctime >= self.started {
            self.stale.push(scan::shown(path));
        }
        Ok((node_at(lower, name, &st, path, self.cancel)?, st))
    }

    /// Everything the workspace has at `name` in `lower` (a directory: deepest first, then
    /// itself) is deleted.
    fn delete_lower(&mut self, lower: &OwnedFd, name: &OsStr, st: Stat, path: &[u8]) -> Result<()> {
        self.count()?;
        if st.kind() == crate::walk::Kind::Dir {
            let d = open_dir(lower, name).map_err(io(path))?;
            for child in names(&d).map_err(io(path))? {
                let cpath = join(path, &child);
                if let Some((cst, _)) = stat_at(&d, &child).map_err(io(&cpath))? {
                    self.delete_lower(&d, &child, cst, &cpath)?;
                }
            }
        }
        let before = self.before(lower, name, st, path)?;
        self.out.push(Change { path: path.to_vec(), action: Action::Deleted, before: Some(before), after: None });
        Ok(())
    }

    /// One directory of the upper layer, with the workspace's directory at the same path.
    fn walk(&mut self, up: &OwnedFd, rel: &[u8], lower: Option<&OwnedFd>, opaque: bool) -> Result<usize> {
        let upper_names = names(up).map_err(io(rel))?;
        if let (true, Some(l)) = (opaque, lower) {
            for name in names(l).map_err(io(rel))? {
                if upper_names.binary_search(&name).is_err() {
                    let path = join(rel, &name);
                    if let Some((st, _)) = stat_at(l, &name).map_err(io(&path))? {
                        self.delete_lower(l, &name, st, &path)?;
                    }
                }
            }
        }
        for name in &upper_names {
            self.count()?;
            let path = join(rel, name);
            let Some((ust, rdev)) = stat_at(up, name).map_err(io(&path))? else { continue };
            let lst = match lower {
                Some(l) => stat_at(l, name).map_err(io(&path))?.map(|(s, _)| s),
                None => None,
            };
            let ft = FileType::from_raw_mode(ust.mode as _);
            if ft == FileType::CharacterDevice && rdev == 0 {
                // A whiteout.
                if let (Some(l), Some(st)) = (lower, lst) {
                    self.delete_lower(l, name, st, &path)?;
                }
                continue;
            }
            let lower_is_dir = lst.is_some_and(|s| s.kind() == crate::walk::Kind::Dir);
            if ft == FileType::Directory {
                let ud = open_dir(up, name).map_err(io(&path))?;
                let opq = is_opaque(&ud);
                if lower_is_dir {
                    let ld = open_dir(lower.expect("a lower entry"), name).map_err(io(&path))?;
                    self.walk(&ud, &path, Some(&ld), opq)?;
                    continue;
                }
                if let (Some(l), Some(st)) = (lower, lst) {
                    self.delete_lower(l, name, st, &path)?;
                }
                let mark = self.out.len();
                let n = self.walk(&ud, &path, None, false)?;
                if n == 0 {
                    let after = node_at(up, name, &ust, &path, self.cancel)?;
                    self.out.insert(mark, Change { path: path.clone(), action: Action::Added, before: None, after: Some(after) });
                }
                continue;
            }
            let after = node_at(up, name, &ust, &path, self.cancel)?;
            match (lower, lst) {
                (Some(l), Some(st)) if lower_is_dir => {
                    self.delete_lower(l, name, st, &path)?;
                    self.out.push(Change { path, action: Action::Added, before: None, after: Some(after) });
                }
                (Some(l), Some(st)) => {
                    let before = self.before(l, name, st, &path)?;
                    let action = match (&before.0, &after) {
                        (a, b) if a == b => None,
                        (Node::File { hash: h1, .. }, Node::File { hash: h2, .. }) if h1 == h2 => Some(Action::Mode),
                        (Node::File { .. }, Node::File { .. }) | (Node::Link { .. }, Node::Link { .. }) => Some(Action::Modified),
                        _ => Some(Action::Type),
                    };
                    match action {
                        Some(action) => self.out.push(Change { path, action, before: Some(before), after: Some(after) }),
                        // Copied up, unchanged: not listed (and no longer stale).
                        None => {
                            let shown = scan::shown(&path);
                            self.stale.retain(|s| *s != shown);
                        }
                    }
                }
                _ => self.out.push(Change { path, action: Action::Added, before: None, after: Some(after) }),
            }
        }
        Ok(upper_names.len())
    }
}

/// Reads the change of a staged run whose tmpfs is `tmpfs` and which started at `started`
/// (the workspace's clock, nanoseconds).
pub(crate) fn collect(ws: &Workspace, tmpfs: &OwnedFd, started: i64, cancel: &Cancel) -> Result<Collected> {
    ws.check()?;
    let upper = open_dir(tmpfs, OsStr::new("upper")).map_err(io(b"upper"))?;
    let root = rustix::io::dup(ws.dir()).map_err(|e| io(b".")(e.into()))?;
    let root = open_dir(&root, OsStr::new(".")).map_err(io(b"."))?;
    let mut cx = Cx { ws, started, seen: 0, out: Vec::new(), stale: Vec::new(), cancel };
    cx.walk(&upper, b"", Some(&root), is_opaque(&upper))?;
    let _ = cx.ws;
    Ok(Collected { changes: cx.out, changed_during_run: cx.stale })
}
