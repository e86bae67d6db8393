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
//! In the child's mount namespace (the sandbox's, unshared with its user namespace; see
//! [`super::launch`]), before anything of the program runs, each match is opened again beneath
//! the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, checked to be the file the
//! host found (device and inode; else the launch fails with `ESTALE`), and a read-only copy of
//! it is mounted over it (`open_tree`, `mount_setattr(MOUNT_ATTR_RDONLY)`, `move_mount`).
//! Writes beneath it then fail with `EROFS`; renaming or removing it fails with `EBUSY`. The
//! mounts exist only in the child's namespace: the host and the person see nothing.
//!
//! The top-level `.git` is protected even when it does not exist yet: the host makes an empty
//! directory `<root>/.git` (a stand-in git ignores when it looks for a repository), mounted
//! read-only like the others, so no process can create a `.git` there; it is removed again
//! when no process of this host uses it (and only while it is still empty).
//!
//! Where the child gets no mount namespace, [`super::prepare`] refuses the run
//! (`SANDBOX_UNAVAILABLE`) unless the host set `protect: []` for the process tools.

use std::collections::HashMap;
use std::ffi::CString;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
    /// False when the walk stopped at its bounds (matches deeper or later were not found).
    pub complete: bool,
    /// How many entries the walk looked at.
    pub visited: usize,
    stand_in: Option<StandIn>,
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
        for t in &self.targets {
            let fd = match sys::open_beneath(root, &t.rel) {
                Ok(fd) => fd,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let r = match sys::identity(fd) {
                Ok(id) if id == t.id => sys::bind_read_only(fd),
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
}

fn identity_at(dir: &DirHandle, name: &std::ffi::OsStr) -> Option<Id> {
    let st = rustix::fs::statat(dir.fd(), name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW).ok()?;
    Some((st.st_dev as u64, st.st_ino as u64))
}

/// Walks the workspace for the matches of `guard` (see the module documentation); `writable`
/// are the files the call's write grants opened (left writable).
pub fn plan(ws: &Workspace, guard: &Guard, writable: &[Id]) -> std::io::Result<Protect> {
    let started = Instant::now();
    let Ok(Start::Dir(top)) = walk::open_start(ws, None) else {
        return Err(std::io::Error::other("the workspace root cannot be listed"));
    };
    let st = rustix::fs::fstat(top.fd())?;
    let root_id = (st.st_dev as u64, st.st_ino as u64);
    let root_path = CString::new(ws.canonical().as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    let mut targets = Vec::new();
    let mut visited = 0usize;
    let mut complete = true;
    let mut stand_in = None;
    // The top-level `.git`, made when missing (a stand-in, see the module documentation).
    if guard.matched(".git").is_some() {
        stand_in = StandIn::make_or_share(&top)?;
    }
    let mut stack: Vec<(DirHandle, PathBuf)> = vec![(top, PathBuf::new())];
    'walk: while let Some((dir, rel)) = stack.pop() {
        let Ok((entries, cut)) = dir.entries() else { continue };
        if cut {
            complete = false;
        }
        for e in entries {
            visited += 1;
            if visited > MAX_ENTRIES || (visited % 256 == 0 && started.elapsed() > MAX_WALK) {
                complete = false;
                break 'walk;
            }
            if e.kind == Kind::Symlink {
                continue;
            }
            let path = walk::join(&rel, &e.name);
            let Some(shown) = path.to_str() else { continue };
            if guard.matched(shown).is_some() {
                let Some(id) = identity_at(&dir, &e.name) else { continue };
                if !writable.contains(&id) {
                    let rel = CString::new(path.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
                    targets.push(Target { rel, id });
                }
                continue;
            }
            if e.kind == Kind::Dir {
                if let Ok(child) = dir.open_dir(&e.name) {
                    stack.push((child, path));
                }
            }
        }
    }
    Ok(Protect { root_path, root_id, targets, complete, visited, stand_in })
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
        // A match the call's grant opened stays writable.
        let st = std::fs::metadata(root.join(".git")).unwrap();
        let id = (std::os::unix::fs::MetadataExt::dev(&st), std::os::unix::fs::MetadataExt::ino(&st));
        assert!(!plan(&ws, &Guard::default_guard(), &[id]).unwrap().paths().contains(&".git".to_string()));
        // No protection: nothing.
        assert!(plan(&ws, &Guard::new::<&str>(&[], false).unwrap(), &[]).unwrap().is_empty());
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
