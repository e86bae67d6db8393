//! What commands may touch inside the workspace (contract §21): the write guard's protected
//! globs (`protect`, default `**/.git/**`) are read-only for every process a tool starts.
//!
//! When a confined child is prepared, the host walks the workspace ([`plan`]: the walker's
//! directory handles, no symlink followed, bounded by [`MAX_ENTRIES`] entries and
//! [`MAX_WALK`]) and records every entry the globs match (a pattern `P/**` matches `P` itself,
//! so `**/.git/**` matches each `.git` directory or file at any depth, nested repositories
//! included), without descending into it. Symlinks are never matched or followed. A match the
//! call's write grants name (the same file, by device and inode) is left writable.
//!
//! The walk is cheap when nothing changed. When every pattern is `**/NAME/**` or `**/NAME`
//! (a literal ASCII name) an entry matches when its own name is one of the names (ASCII case
//! ignored; a name with other bytes goes through the globs); else each path goes through the
//! globs. For each workspace (its root and the patterns) a process-wide cache (at most
//! [`MAX_ENTRIES`] directories in all) keeps every directory the last walk read: its device,
//! inode, mtime and ctime, its entry count, its matches and its subdirectories. A directory
//! whose stamp is unchanged is not read again (each of its matches is still looked up by name,
//! and each subdirectory is still opened and checked the same way); any difference or error
//! means reading it afresh. Every change of a directory's entries moves its ctime, which no
//! process can set back (`utimes` only sets the mtime), and a directory whose mtime or ctime is
//! less than 50 ms (3 s when the file system keeps whole seconds) before the read started is
//! never reused, so a change made in the same clock tick as the read cannot be missed. The
//! result is exactly a fresh walk's (`a_cached_walk_finds_what_a_fresh_walk_finds_after_random_changes`).
//! A stale cache could only miss a match: what it finds is still checked in the child.
//!
//! In the child's mount namespace (the sandbox's, unshared with its user namespace; see
//! [`super::launch`]), before anything of the program runs, each match is opened again beneath
//! the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, checked to be the file the
//! host found (device and inode; else the launch fails with `ESTALE`), and a read-only copy of
//! it is mounted over it (`open_tree`, `mount_setattr(MOUNT_ATTR_RDONLY)`, `move_mount`).
//! Writes beneath it then fail with `EROFS`; renaming or removing it fails with `EBUSY`. Each
//! directory between the root and a match is first mounted over itself (writable), so it
//! cannot be renamed or removed either (`EBUSY`): a nested repository cannot be moved away and
//! replaced by a copy with a planted hook ([`holds`]). A rename across one of these mounts is
//! `EXDEV` (`mv` copies instead). The mounts exist only in the child's namespace: the host and
//! the person see nothing.
//!
//! The top-level `.git` is protected even when it does not exist yet: the host makes an empty
//! directory `<root>/.git` (a stand-in git ignores when it looks for a repository), mounted
//! read-only like the others, so no process can create a `.git` there; it is removed again
//! when no process of this host uses it (and only while it is still empty).
//!
//! Where the child gets no mount namespace, [`super::prepare`] refuses the run
//! (`SANDBOX_UNAVAILABLE`) unless the host set `protect: []` for the process tools.

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::guard::Guard;
use crate::root::Workspace;
use crate::walk::{self, DirHandle, Kind, Start};


/// Most entries one walk looks at.
pub const MAX_ENTRIES: usize = 200_000;
/// Longest one walk may take.
pub const MAX_WALK: Duration = Duration::from_secs(2);

type Id = (u64, u64);

/// One match: its path relative to the root and the file the host found there.
#[derive(Debug)]
struct Target {
    rel: CString,
    id: Id,
}

/// The read-only mounts of one child, prepared by the host.
#[derive(Debug)]
pub struct Protect {
    /// The workspace root's canonical path and identity: the child opens it again in its mount
    /// namespace (no symlink followed) and checks it is the same directory.
    root_path: CString,
    root_id: Id,
    targets: Vec<Target>,
    /// The directories between the root and the matches (each match's ancestors below the
    /// root), parents first: mounted over themselves (writable) before the matches are made
    /// read-only, so that none of them can be renamed or removed (see [`holds`]).
    holds: Vec<Target>,
    /// False when the walk stopped at its bounds (matches deeper or later were not found).
    pub complete: bool,
    /// How many entries the walk looked at (read, or counted from its cache).
    pub visited: usize,
    /// How many directories the walk took from its cache instead of reading them.
    pub reused: usize,
    stand_in: Option<StandIn>,
    /// A staged run's read-only copies of the targets, made from the real workspace before
    /// the overlay covers it ([`Protect::clone_trees`]); written in C (shared memory).
    trees: Box<[std::sync::atomic::AtomicI32]>,
}

impl Protect {
    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// The relative paths protected (tests, diagnostics).
    pub fn paths(&self) -> Vec<String> {
        self.targets.iter().map(|t| t.rel.to_string_lossy().into_owned()).collect()
    }

    /// What must live as long as the child's tree: the stand-in `.git`, if any.
    pub fn take_stand_in(&mut self) -> Option<Box<dyn std::any::Any + Send>> {
        self.stand_in.take().map(|s| Box::new(s) as Box<dyn std::any::Any + Send>)
    }

    /// In the child, in its own mount namespace: mounts every match read-only over itself.
    ///
    /// # Safety
    /// Raw system calls only (`sandbox::sys`), between clone and exec.
    pub unsafe fn apply(&self) -> Result<(), i32> {
        use super::sys;
        let root = sys::open_absolute_no_links(&self.root_path)?;
        match sys::identity(root) {
            Ok(id) if id == self.root_id => {}
            Ok(_) => {
                sys::close(root);
                return Err(libc::ESTALE);
            }
            Err(e) => {
                sys::close(root);
                return Err(e);
            }
        }
        let mut result = Ok(());
        let all = self.holds.iter().map(|t| (t, false)).chain(self.targets.iter().map(|t| (t, true)));
        for (t, read_only) in all {
            let fd = match sys::open_beneath(root, &t.rel) {
                Ok(fd) => fd,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let r = match sys::identity(fd) {
                Ok(id) if id == t.id => sys::bind_over_itself(fd, read_only),
                Ok(_) => Err(libc::ESTALE),
                Err(e) => Err(e),
            };
            sys::close(fd);
            if r.is_err() {
                result = r;
                break;
            }
        }
        sys::close(root);
        result
    }

    /// The relative paths of the directories held in place (tests, diagnostics).
    pub fn held(&self) -> Vec<String> {
        self.holds.iter().map(|t| t.rel.to_string_lossy().into_owned()).collect()
    }
}

impl Protect {
    /// For a staged run (see [`super::overlay`]), in the child, before the overlay covers
    /// the root open as `root` (already checked to be the workspace): a detached read-only copy
    /// of each match, checked as [`Protect::apply`] checks it.
    ///
    /// # Safety
    /// Raw system calls only (`sandbox::sys`), between clone and exec.
    pub unsafe fn clone_trees(&self, root: libc::c_int) -> Result<(), i32> {
        use super::sys;
        use std::sync::atomic::Ordering;
        for (t, slot) in self.targets.iter().zip(self.trees.iter()) {
            let fd = sys::open_beneath(root, &t.rel)?;
            let r = match sys::identity(fd) {
                Ok(id) if id == t.id => sys::clone_read_only(fd),
                Ok(_) => Err(libc::ESTALE),
                Err(e) => Err(e),
            };
            sys::close(fd);
            slot.store(r?, Ordering::SeqCst);
        }
        Ok(())
    }

    /// Then, with the overlay mounted and open as `root`: each copy attached over its path in
    /// the overlay (no symlink followed), so the protected paths stay read-only.
    ///
    /// # Safety
    /// Raw system calls only (`sandbox::sys`), between clone and exec.
    pub unsafe fn attach_trees(&self, root: libc::c_int) -> Result<(), i32> {
        use super::sys;
        use std::sync::atomic::Ordering;
        let mut result = Ok(());
        for (t, slot) in self.targets.iter().zip(self.trees.iter()) {
            let tree = slot.swap(-1, Ordering::SeqCst);
            if tree < 0 {
                continue;
            }
            if result.is_ok() {
                result = match sys::open_beneath(root, &t.rel) {
                    Ok(fd) => {
                        let r = sys::move_onto(tree, fd);
                        sys::close(fd);
                        r
                    }
                    Err(e) => Err(e),
                };
            }
            sys::close(tree);
        }
        result
    }
}

fn identity_at(dir: &DirHandle, name: &std::ffi::OsStr) -> Option<Id> {
    let st = rustix::fs::statat(dir.fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some((st.st_dev as u64, st.st_ino as u64))
}

/// Walks the workspace for the matches of `guard` (see the module documentation); `writable`
/// are the files the call's write grants opened (left writable).
pub fn plan(ws: &Workspace, guard: &Guard, writable: &[Id]) -> std::io::Result<Protect> {
    plan_with(ws, guard, writable, true)
}

/// [`plan`], with or without the workspace's cache (a walk without it reads every directory).
fn plan_with(ws: &Workspace, guard: &Guard, writable: &[Id], cached: bool) -> std::io::Result<Protect> {
    let Ok(Start::Dir(top)) = walk::open_start(ws, None) else {
        return Err(std::io::Error::other("the workspace root cannot be listed"));
    };
    let st = rustix::fs::fstat(top.fd())?;
    let root_id = (st.st_dev as u64, st.st_ino as u64);
    let root_path = CString::new(ws.canonical().as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let mut stand_in = None;
    // The top-level `.git`, made when missing (a stand-in, see the module documentation).
    if guard.matched(".git").is_some() {
        stand_in = StandIn::make_or_share(&top)?;
    }
    let key = CacheKey { root_id, root_path: root_path.as_bytes().to_vec(), patterns: guard.patterns().to_vec() };
    let old = if cached { cache::take(&key) } else { HashMap::new() };
    let mut w = Walker {
        guard,
        names: guard.literal_names(),
        started: Instant::now(),
        visited: 0,
        complete: true,
        reused: 0,
        old,
        seen: HashMap::new(),
        found: Vec::new(),
    };
    // Pending directories: the open parent, the name, the relative path (a directory is opened
    // only when its turn comes, so at most one descriptor per level is open).
    let mut stack: Vec<(Rc<DirHandle>, OsString, PathBuf)> = Vec::new();
    let mut next = Some((top, PathBuf::new()));
    loop {
        let (dir, rel) = match next.take() {
            Some(d) => d,
            None => match stack.pop() {
                None => break,
                Some((parent, name, rel)) => match parent.open_dir(&name) {
                    Ok(dir) => (dir, rel),
                    Err(_) => continue,
                },
            },
        };
        let Some(subdirs) = w.visit(&dir, &rel) else { break };
        let dir = Rc::new(dir);
        for name in subdirs {
            let path = walk::join(&rel, &name);
            stack.push((dir.clone(), name, path));
        }
    }
    let mut targets = Vec::with_capacity(w.found.len());
    for (path, id) in w.found {
        if !writable.contains(&id) {
            let rel = CString::new(path.into_os_string().into_vec()).map_err(std::io::Error::other)?;
            targets.push(Target { rel, id });
        }
    }
    if cached {
        cache::put(key, w.seen);
    }
    let holds = holds(ws, &targets)?;
    let trees = targets.iter().map(|_| std::sync::atomic::AtomicI32::new(-1)).collect();
    Ok(Protect { root_path, root_id, targets, holds, complete: w.complete, visited: w.visited, reused: w.reused, stand_in, trees })
}

/// The directories between the root and the matches, each with its identity, parents first.
///
/// A read-only mount keeps a protected path itself from being written, renamed or removed, but
/// not the directories above it: a process could rename `vendor/lib` (a nested repository)
/// away and put a copy of it with a planted hook at its old path, where the person's next
/// `git commit` there runs it. Each of those directories is therefore mounted over itself in
/// the child's namespace (writable as before), which makes renaming or removing it `EBUSY`.
/// The top-level `.git` has none, so the usual workspace costs nothing here. Opened one
/// component at a time from the root without following a symlink; the child checks each
/// identity again before mounting.
fn holds(ws: &Workspace, targets: &[Target]) -> std::io::Result<Vec<Target>> {
    let mut dirs: Vec<&[u8]> = Vec::new();
    for t in targets {
        let rel = t.rel.as_bytes();
        for (i, b) in rel.iter().enumerate() {
            if *b == b'/' {
                dirs.push(&rel[..i]);
            }
        }
    }
    if dirs.is_empty() {
        return Ok(Vec::new());
    }
    // Parents sort before their children ("a" < "a/b"), so they are mounted first.
    dirs.sort_unstable();
    dirs.dedup();
    let Ok(Start::Dir(top)) = walk::open_start(ws, None) else {
        return Err(std::io::Error::other("the workspace root cannot be listed"));
    };
    let mut out = Vec::with_capacity(dirs.len());
    for rel in dirs {
        let mut dir: Option<DirHandle> = None;
        for name in rel.split(|b| *b == b'/') {
            let next = dir.as_ref().unwrap_or(&top).open_dir(OsStr::from_bytes(name))?;
            dir = Some(next);
        }
        let Some(dir) = dir else { continue };
        let st = rustix::fs::fstat(dir.fd())?;
        out.push(Target { rel: CString::new(rel).map_err(std::io::Error::other)?, id: (st.st_dev as u64, st.st_ino as u64) });
    }
    Ok(out)
}

/// What identifies one state of a directory: its device and inode, its mtime and its ctime
/// (seconds, nanoseconds). Any change of its entries moves both times; a process can set the
/// mtime back (`utimes`) but not the ctime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    id: Id,
    mtime: (i64, u32),
    ctime: (i64, u32),
}

impl Stamp {
    fn of(dir: &DirHandle) -> Option<Stamp> {
        let st = rustix::fs::fstat(dir.fd()).ok()?;
        Some(Stamp {
            id: (st.st_dev as u64, st.st_ino as u64),
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as u32),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as u32),
        })
    }

    /// Whether a directory with this stamp, taken after `before`, may be reused later: both of
    /// its times are older than `before` by more than the clock's tick and the file system's
    /// timestamp granularity, so any change after the stamp was taken gives it a later ctime.
    /// (File times come from the kernel's coarse clock, up to a tick behind the real-time clock
    /// `before` was read from; a file system that keeps whole seconds gets three seconds.)
    fn trusted(&self, before: SystemTime) -> bool {
        let coarse = self.mtime.1 == 0 || self.ctime.1 == 0;
        let margin = if coarse { COARSE_MARGIN } else { TICK_MARGIN };
        let Ok(since) = before.duration_since(UNIX_EPOCH) else { return false };
        let limit = since.as_nanos() as i128 - margin.as_nanos() as i128;
        let nanos = |(s, n): (i64, u32)| s as i128 * 1_000_000_000 + n as i128;
        nanos(self.mtime) < limit && nanos(self.ctime) < limit
    }
}

/// How far before a read a directory's times must be for the read to be reused (fine-grained
/// file systems: a few clock ticks).
const TICK_MARGIN: Duration = Duration::from_millis(50);
/// The same for file systems that keep whole seconds (or two).
const COARSE_MARGIN: Duration = Duration::from_secs(3);

/// One directory as the walk last read it: enough to skip reading it again while its
/// [`Stamp`] is unchanged.
#[derive(Debug)]
struct Seen {
    stamp: Stamp,
    /// How many entries it had, and whether some were left out ([`DirHandle::entries`]).
    entries: usize,
    cut: bool,
    /// The entries the patterns matched (name, identity), in name order.
    matches: Vec<(OsString, Id)>,
    /// The subdirectories walked into, in name order.
    subdirs: Vec<OsString>,
}

struct Walker<'a> {
    guard: &'a Guard,
    names: Option<&'a [String]>,
    started: Instant,
    visited: usize,
    complete: bool,
    reused: usize,
    /// The previous walk's directories (by relative path), and this walk's.
    old: HashMap<PathBuf, Seen>,
    seen: HashMap<PathBuf, Seen>,
    found: Vec<(PathBuf, Id)>,
}

impl Walker<'_> {
    /// Whether the entry `name` of the directory `rel` matches.
    fn matches(&self, rel: &Path, name: &OsStr) -> bool {
        let bytes = name.as_bytes();
        match self.names {
            // The literal names: compare the entry's own name (a name with non-ASCII bytes
            // goes through the globs, which ignore case beyond ASCII).
            Some(names) if bytes.is_ascii() => names.iter().any(|n| n.as_bytes().eq_ignore_ascii_case(bytes)),
            _ => self.guard.matches_path(&walk::join(rel, name)),
        }
    }

    /// Records the matches of one directory and returns the subdirectories to walk into;
    /// `None` when the walk reached its bounds.
    fn visit(&mut self, dir: &DirHandle, rel: &Path) -> Option<Vec<OsString>> {
        let before = SystemTime::now();
        let stamp = Stamp::of(dir);
        if let Some(seen) = self.old.remove(rel) {
            if let Some(subdirs) = self.reuse(dir, rel, stamp, seen) {
                return Some(subdirs);
            }
        }
        let Ok((entries, cut)) = dir.entries() else { return Some(Vec::new()) };
        if cut {
            self.complete = false;
        }
        let (mut matches, mut subdirs) = (Vec::new(), Vec::new());
        let total = entries.len();
        for e in entries {
            self.visited += 1;
            if self.visited > MAX_ENTRIES || (self.visited % 256 == 0 && self.started.elapsed() > MAX_WALK) {
                self.complete = false;
                return None;
            }
            if e.kind == Kind::Symlink {
                continue;
            }
            if self.matches(rel, &e.name) {
                if let Some(id) = identity_at(dir, &e.name) {
                    self.found.push((walk::join(rel, &e.name), id));
                    matches.push((e.name, id));
                }
                continue;
            }
            if e.kind == Kind::Dir {
                subdirs.push(e.name);
            }
        }
        if let Some(stamp) = stamp.filter(|s| s.trusted(before)) {
            let seen = Seen { stamp, entries: total, cut, matches, subdirs: subdirs.clone() };
            self.seen.insert(rel.to_path_buf(), seen);
        }
        Some(subdirs)
    }

    /// The previous read of `dir`, when it still holds: same stamp, every match still the same
    /// file, and within the walk's bounds (else the directory is read again).
    fn reuse(&mut self, dir: &DirHandle, rel: &Path, stamp: Option<Stamp>, seen: Seen) -> Option<Vec<OsString>> {
        if stamp != Some(seen.stamp)
            || self.visited + seen.entries > MAX_ENTRIES
            || self.started.elapsed() > MAX_WALK
            || seen.matches.iter().any(|(name, id)| identity_at(dir, name) != Some(*id))
        {
            return None;
        }
        self.visited += seen.entries;
        self.reused += 1;
        if seen.cut {
            self.complete = false;
        }
        for (name, id) in &seen.matches {
            self.found.push((walk::join(rel, name), *id));
        }
        let subdirs = seen.subdirs.clone();
        self.seen.insert(rel.to_path_buf(), seen);
        Some(subdirs)
    }
}

/// Which walk a cache belongs to: the root (identity and path) and the patterns.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct CacheKey {
    root_id: Id,
    root_path: Vec<u8>,
    patterns: Vec<String>,
}

/// The directories of the last walk of each workspace, process-wide, at most [`MAX_ENTRIES`]
/// directories in all (the workspaces walked least recently are dropped first). A walk takes
/// its workspace's cache out while it runs (a walk running at the same time reads afresh).
mod cache {
    use super::*;

    struct Held {
        dirs: HashMap<PathBuf, Seen>,
        used: u64,
    }

    static CACHE: Mutex<Option<(u64, HashMap<CacheKey, Held>)>> = Mutex::new(None);

    pub(super) fn take(key: &CacheKey) -> HashMap<PathBuf, Seen> {
        let mut g = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        g.get_or_insert_with(|| (0, HashMap::new())).1.remove(key).map(|h| h.dirs).unwrap_or_default()
    }

    pub(super) fn put(key: CacheKey, dirs: HashMap<PathBuf, Seen>) {
        if dirs.is_empty() || dirs.len() > MAX_ENTRIES {
            return;
        }
        let mut g = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let (clock, map) = g.get_or_insert_with(|| (0, HashMap::new()));
        *clock += 1;
        let mut total: usize = dirs.len() + map.values().map(|h| h.dirs.len()).sum::<usize>();
        while total > MAX_ENTRIES {
            let Some(oldest) = map.iter().min_by_key(|(_, h)| h.used).map(|(k, _)| k.clone()) else { break };
            total -= map.remove(&oldest).map_or(0, |h| h.dirs.len());
        }
        map.insert(key, Held { dirs, used: *clock });
    }
}

/// The stand-in `<root>/.git` of one workspace, shared by the children that run while it is
/// needed (counted per root).
#[derive(Debug)]
struct StandIn {
    root: OwnedFd,
    key: (Id, Id),
}

static STAND_INS: Mutex<Option<HashMap<(Id, Id), usize>>> = Mutex::new(None);

impl StandIn {
    /// Makes `<root>/.git` (empty, 0755) when there is none, or shares the stand-in another
    /// child uses; `None` when `.git` is the workspace's own.
    fn make_or_share(top: &DirHandle) -> std::io::Result<Option<StandIn>> {
        let st = rustix::fs::fstat(top.fd())?;
        let root_id = (st.st_dev as u64, st.st_ino as u64);
        let mut guard = STAND_INS.lock().unwrap_or_else(|e| e.into_inner());
        let map = guard.get_or_insert_with(HashMap::new);
        let made = match rustix::fs::mkdirat(top.fd(), ".git", rustix::fs::Mode::from_raw_mode(0o755)) {
            Ok(()) => true,
            Err(rustix::io::Errno::EXIST) => false,
            // The host cannot create it there, so neither can its processes (same user).
            Err(rustix::io::Errno::ACCESS | rustix::io::Errno::ROFS | rustix::io::Errno::PERM) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Some(id) = identity_at(top, ".git".as_ref()) else { return Ok(None) };
        if !made && !map.contains_key(&(root_id, id)) {
            return Ok(None);
        }
        *map.entry((root_id, id)).or_insert(0) += 1;
        Ok(Some(StandIn { root: rustix::io::dup(top.fd())?, key: (root_id, id) }))
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let mut map = STAND_INS.lock().unwrap_or_else(|e| e.into_inner());
        let Some(m) = map.as_mut() else { return };
        let Some(n) = m.get_mut(&self.key) else { return };
        *n -= 1;
        if *n > 0 {
            return;
        }
        m.remove(&self.key);
        // Only the stand-in itself, still empty (a repository made in it since stays).
        let same = rustix::fs::statat(self.root.as_fd(), ".git", rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .is_ok_and(|st| (st.st_dev as u64, st.st_ino as u64) == self.key.1);
        if same {
            let _ = rustix::fs::unlinkat(self.root.as_fd(), ".git", rustix::fs::AtFlags::REMOVEDIR);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_every_git_directory_and_file_at_any_depth_and_follows_no_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [".git/hooks", "a/b/.git/hooks", "node_modules/x/.git", "src"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("sub.git"), "").unwrap();
        std::fs::create_dir_all(root.join("w")).unwrap();
        std::fs::write(root.join("w/.git"), "gitdir: ../.git/worktrees/w\n").unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join(".git")).unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        let ws = Workspace::open(root).unwrap();
        let p = plan(&ws, &Guard::default_guard(), &[]).unwrap();
        let mut got = p.paths();
        got.sort();
        assert_eq!(got, [".git", "a/b/.git", "node_modules/x/.git", "w/.git"]);
        assert!(p.complete && p.stand_in.is_none());
        // The directories above the nested matches are held in place, parents first, each once.
        assert_eq!(p.held(), ["a", "a/b", "node_modules", "node_modules/x", "w"]);
        // A match the call's grant opened stays writable.
        let st = std::fs::metadata(root.join(".git")).unwrap();
        let id = (std::os::unix::fs::MetadataExt::dev(&st), std::os::unix::fs::MetadataExt::ino(&st));
        assert!(!plan(&ws, &Guard::default_guard(), &[id]).unwrap().paths().contains(&".git".to_string()));
        // No protection: nothing.
        assert!(plan(&ws, &Guard::new::<&str>(&[], false).unwrap(), &[]).unwrap().is_empty());
    }

    /// Waits until the clock is past what the cache trusts for anything changed so far.
    fn settle() {
        let until = SystemTime::now() + TICK_MARGIN + Duration::from_millis(30);
        while SystemTime::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn sorted(p: &Protect) -> Vec<String> {
        let mut v = p.paths();
        v.sort();
        v
    }

    /// Every directory under `dir` that is not a link or inside a `.git` (relative paths).
    fn dirs_of(root: &Path) -> Vec<PathBuf> {
        let mut out = vec![PathBuf::new()];
        let mut i = 0;
        while i < out.len() {
            let rel = out[i].clone();
            i += 1;
            let Ok(rd) = std::fs::read_dir(root.join(&rel)) else { continue };
            let mut names: Vec<_> = rd.flatten().collect();
            names.sort_by_key(|e| e.file_name());
            for e in names {
                let name = e.file_name();
                if name.as_bytes().eq_ignore_ascii_case(b".git") {
                    continue;
                }
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(rel.join(name));
                }
            }
        }
        out
    }

    fn set_mtime(path: &Path, to: std::fs::Metadata) {
        use std::os::unix::fs::MetadataExt as _;
        let t = rustix::fs::Timespec { tv_sec: to.mtime(), tv_nsec: to.mtime_nsec() as _ };
        let times = rustix::fs::Timestamps { last_access: t, last_modification: t };
        rustix::fs::utimensat(rustix::fs::CWD, path, &times, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).unwrap();
    }

    #[test]
    fn a_cached_walk_finds_what_a_fresh_walk_finds_after_random_changes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join(".git")).unwrap();
        for i in 0..12 {
            for j in 0..4 {
                std::fs::create_dir_all(root.join(format!("d{i}/e{j}/f"))).unwrap();
                std::fs::write(root.join(format!("d{i}/e{j}/file")), "x").unwrap();
            }
        }
        std::fs::create_dir_all(root.join("d3/e1/.git/hooks")).unwrap();
        let ws = Workspace::open(root).unwrap();
        let guards = [Guard::default_guard(), Guard::new(&["**/.git/**", "**/*.pem", "d1/**/secret"], false).unwrap()];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rand = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        settle();
        let mut reused = 0;
        for round in 0..160 {
            let dirs = dirs_of(root);
            let d = root.join(&dirs[rand(dirs.len())]);
            let what = rand(9);
            match what {
                0 => drop(std::fs::create_dir_all(d.join(".git/objects"))),
                1 => drop(std::fs::write(d.join(if rand(2) == 0 { ".git" } else { ".GIT" }), "gitdir: x\n")),
                2 => {
                    let _ = std::fs::remove_dir_all(d.join(".git"));
                    let _ = std::fs::remove_file(d.join(".git"));
                    let _ = std::fs::remove_file(d.join(".GIT"));
                }
                3 if d != root => {
                    // Rename a directory somewhere else (not into itself).
                    let to = root.join(&dirs[rand(dirs.len())]);
                    if !to.starts_with(&d) {
                        let _ = std::fs::rename(&d, to.join(format!("moved{round}")));
                    }
                }
                4 if d != root => {
                    // Replace a directory with a link to one holding a `.git`.
                    let _ = std::fs::remove_dir_all(&d);
                    let _ = std::os::unix::fs::symlink(root.join("d3/e1"), &d);
                }
                5 => {
                    // Add a `.git` and set the directory's mtime back.
                    let before = std::fs::metadata(&d).unwrap();
                    let _ = std::fs::create_dir(d.join(".git"));
                    set_mtime(&d, before);
                }
                6 => drop(std::fs::create_dir_all(d.join(format!("n{round}/m/.git")))),
                7 => drop(std::fs::write(d.join(format!("k{round}.pem")), "")),
                _ => {
                    let _ = std::fs::create_dir_all(d.join(format!("é{round}")));
                    let _ = std::fs::create_dir(d.join(format!("é{round}/.Git")));
                }
            }
            for guard in &guards {
                let cached = plan(&ws, guard, &[]).unwrap();
                let fresh = plan_with(&ws, guard, &[], false).unwrap();
                assert_eq!(sorted(&cached), sorted(&fresh), "round {round}, change {what} at {d:?}");
                assert_eq!((cached.visited, cached.complete), (fresh.visited, fresh.complete));
                assert_eq!(fresh.reused, 0);
                reused += cached.reused;
            }
            if round % 40 == 39 {
                settle();
            }
        }
        assert!(reused > 1000, "the cache was used ({reused} directories)");
    }

    #[test]
    fn a_git_made_right_after_a_walk_is_found_even_with_the_directory_mtime_set_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in [".git", "a/b/c", "x/y"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        let ws = Workspace::open(root).unwrap();
        let guard = Guard::default_guard();
        settle();
        for (i, d) in ["a/b", "a/b/c", "x", ""].iter().enumerate() {
            let first = plan(&ws, &guard, &[]).unwrap();
            assert!(first.reused > 0 || i == 0);
            let before = std::fs::metadata(root.join(d)).unwrap();
            std::fs::create_dir(root.join(d).join(format!("n{i}"))).unwrap();
            std::fs::create_dir(root.join(d).join(format!("n{i}/.git"))).unwrap();
            std::fs::remove_dir(root.join(d).join(format!("n{i}/.git"))).unwrap();
            std::fs::rename(root.join(d).join(format!("n{i}")), root.join(d).join(".git_")).unwrap();
            std::fs::rename(root.join(d).join(".git_"), root.join(d).join(if d.is_empty() { "top" } else { ".git" })).unwrap();
            set_mtime(&root.join(d), before);
            let expect = if d.is_empty() { ".git".to_string() } else { format!("{d}/.git") };
            let got = plan(&ws, &guard, &[]).unwrap().paths();
            if !d.is_empty() {
                assert!(got.contains(&expect), "{expect} missing from {got:?}");
            }
            assert_eq!(sorted(&plan(&ws, &guard, &[]).unwrap()), sorted(&plan_with(&ws, &guard, &[], false).unwrap()));
        }
    }

    #[test]
    fn literal_patterns_match_by_name_exactly_as_the_globs_do() {
        let g = Guard::new(&["**/.git/**", "**/node_modules", "**/.env"], false).unwrap();
        assert_eq!(g.literal_names().unwrap(), [".git", "node_modules", ".env"]);
        for p in ["*.pem", "**/*.key", "a/.git/**", "**/a/b", "**/[.]git", "**/x\\y", "**/"] {
            assert!(Guard::new(&["**/.git/**", p], false).unwrap().literal_names().is_none(), "{p}");
        }
        let w = Walker {
            guard: &g,
            names: g.literal_names(),
            started: Instant::now(),
            visited: 0,
            complete: true,
            reused: 0,
            old: HashMap::new(),
            seen: HashMap::new(),
            found: Vec::new(),
        };
        for name in [".git", ".GIT", ".Git", "git", ".gitx", "x.git", ".env", ".ENV", "node_modules", "Node_Modules", "é", ".gİt", ".gıt", "\u{212a}"] {
            for rel in ["", "a", "a/b"] {
                let rel = Path::new(rel);
                let by_glob = g.matches_path(&walk::join(rel, OsStr::new(name)));
                assert_eq!(w.matches(rel, OsStr::new(name)), by_glob, "{rel:?} {name}");
            }
        }
    }

    #[test]
    fn a_missing_top_level_git_gets_a_stand_in_removed_when_the_last_user_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let mut a = plan(&ws, &Guard::default_guard(), &[]).unwrap();
        assert_eq!(a.paths(), [".git"]);
        let mut b = plan(&ws, &Guard::default_guard(), &[]).unwrap();
        assert!(dir.path().join(".git").is_dir());
        drop(a.take_stand_in());
        assert!(dir.path().join(".git").is_dir(), "another child still uses it");
        drop(b.take_stand_in());
        assert!(!dir.path().join(".git").exists());
    }
}
