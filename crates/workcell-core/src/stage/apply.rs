//! Applying a staged change set to the workspace, all or nothing (contract §20).
//!
//! Refused before anything changes: a listed path the write guard protects
//! (`PATH_PROTECTED`), an entry that is not a regular file, directory or symlink
//! (`NOT_A_REGULAR_FILE`), a target the workspace changed during the run (`TARGET_CHANGED`).
//! Then, as a checkpoint's rewind does:
//! 1. removals, deepest path first: each listed path the workspace has (deleted, modified,
//!    mode, type) is rechecked against what the run's end saw (device, inode, size, mtime,
//!    ctime, type; a directory by identity, and only while it holds nothing but what this apply
//!    moved) and renamed away, beneath its directory, onto a `.workcell-tmp-*` name;
//! 2. installs, shallowest first: missing parent directories are made (with the staged
//!    directory's permission bits); a file's staged content is copied from the upper layer into
//!    an unnamed temp beside the target (checked against the hash shown, the staged permission
//!    bits, fsynced), a symlink made with its staged text (never followed), an empty directory
//!    made; each is renamed onto the free name (`RENAME_NOREPLACE`: a name that appeared
//!    meanwhile is `TARGET_CHANGED`);
//! 3. the names renamed away are removed and the directories fsynced.
//!
//! Every step is one rename or `mkdir` beneath a directory opened from the root handle
//! component by component with `O_NOFOLLOW`. If a step fails (or the call is cancelled), the
//! steps done are undone in reverse.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::rc::Rc;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, Mode, OFlags};

use crate::cancel::Cancel;
use crate::checkpoint::journal::{changed, copy_hashed, empty_but, io, open_child, Journal};
use crate::checkpoint::scan::{self, Stat};
use crate::error::{Code, Error, Result};
use crate::root::Workspace;
use crate::walk::Kind;
use crate::write::Temp;

use super::collect::{Change, Node};

struct Tx<'a> {
    ws: &'a Workspace,
    upper: &'a OwnedFd,
    dirs: HashMap<Vec<u8>, Rc<Dir>>,
    journal: Journal,
}

/// The permission bits of the staged directory at `rel` (0755 when it cannot be read).
fn staged_dir_mode(upper: &OwnedFd, rel: &[u8]) -> u32 {
    let Ok(up) = rustix::fs::openat(upper, "upper", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else { return 0o755 };
    let path = std::ffi::CString::new(rel).unwrap_or_default();
    match rustix::fs::statat(&up, path.as_c_str(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st.st_mode & 0o7777,
        Err(_) => 0o755,
    }
}

impl Tx<'_> {
    fn dir(&mut self, rel: &[u8], create: bool) -> Result<Rc<Dir>> {
        if let Some(d) = self.dirs.get(rel) {
            return Ok(d.clone());
        }
        let shown = scan::shown(rel);
        let d = if rel.is_empty() {
            Rc::new(self.ws.dir().try_clone().map_err(io("."))?)
        } else {
            let (parent, name) = scan::split(rel);
            let p = self.dir(parent, create)?;
            match open_child(&p, name) {
                Ok(d) => Rc::new(d),
                Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                    self.make_dir(&p, name, rel, &shown)?;
                    Rc::new(open_child(&p, name).map_err(|_| changed(&shown))?)
                }
                Err(_) => return Err(changed(&shown)),
            }
        };
        self.dirs.insert(rel.to_vec(), d.clone());
        Ok(d)
    }

    fn make_dir(&mut self, p: &Rc<Dir>, name: &OsStr, rel: &[u8], shown: &str) -> Result<()> {
        rustix::fs::mkdirat(&**p, name, Mode::from_raw_mode(0o700)).map_err(|e| {
            if e == rustix::io::Errno::EXIST {
                changed(shown)
            } else {
                io(shown)(e.into())
            }
        })?;
        let st = scan::lstat(&**p, name).map_err(io(shown))?.ok_or_else(|| changed(shown))?;
        self.journal.installed(p, name, st.id(), true, shown);
        rustix::fs::chmodat(&**p, name, Mode::from_raw_mode(staged_dir_mode(self.upper, rel)), AtFlags::empty()).map_err(|e| io(shown)(e.into()))?;
        Ok(())
    }

    fn remove(&mut self, c: &Change, before: &Stat, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        let shown = c.shown();
        let (parent, name) = scan::split(&c.path);
        let dir = self.dir(parent, false)?;
        let now = scan::lstat(&*dir, name).map_err(io(&shown))?.ok_or_else(|| changed(&shown))?;
        let is_dir = before.kind() == Kind::Dir;
        if is_dir {
            if now.id() != before.id() || now.kind() != Kind::Dir {
                return Err(changed(&shown));
            }
            let inner = self.dir(&c.path, false)?;
            let ours = self.journal.kept(Some(&inner));
            if !empty_but(&inner, &ours).map_err(io(&shown))? {
                return Err(changed(&shown));
            }
        } else if now != *before {
            return Err(changed(&shown));
        }
        self.journal.away(&dir, name, before.id(), is_dir, &shown)
    }

    fn install(&mut self, c: &Change, after: &Node, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        let shown = c.shown();
        let (parent, name) = scan::split(&c.path);
        let dir = self.dir(parent, true)?;
        if scan::lstat(&*dir, name).map_err(io(&shown))?.is_some() {
            return Err(changed(&shown));
        }
        match after {
            Node::File { mode, hash, .. } => self.install_file(&dir, name, &c.path, &shown, *mode, hash, cancel),
            Node::Link { target } => self.journal.install_link(&dir, name, &shown, target),
            Node::Dir { .. } => self.make_dir(&dir, name, &c.path, &shown),
            Node::Other { kind } => Err(not_regular(&shown, kind)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn install_file(&mut self, dir: &Rc<Dir>, name: &OsStr, path: &[u8], shown: &str, mode: u32, hash: &str, cancel: &Cancel) -> Result<()> {
        let upper = rustix::fs::openat(self.upper, "upper", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(|e| io(shown)(e.into()))?;
        let mut src = super::render::open_beneath(&upper, path).ok_or_else(|| staged_lost(shown))?;
        let mut temp = Temp::create(dir, shown)?;
        let written = copy_hashed(&mut src, &mut temp, shown, cancel)?;
        if written != hash {
            return Err(staged_lost(shown));
        }
        rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode & 0o7777)).map_err(|e| io(shown)(e.into()))?;
        self.journal.install_temp(dir, name, shown, temp)
    }

    fn run(&mut self, changes: &[Change], cancel: &Cancel) -> Result<()> {
        for c in changes.iter().rev() {
            if let Some((_, stat)) = &c.before {
                self.remove(c, stat, cancel)?;
            }
        }
        for c in changes {
            if let Some(after) = &c.after {
                self.install(c, after, cancel)?;
            }
        }
        Ok(())
    }
}

pub(crate) fn not_regular(shown: &str, kind: &str) -> Error {
    Error::new(Code::NotARegularFile, format!("the staged run made {shown} a {kind}, which is never applied"))
        .with_hint("only regular files, directories and symlinks are applied: discard this staged change (discard_staged) and run the command again without making that entry")
        .with_details(serde_json::json!({ "path": shown, "kind": kind }))
}

fn staged_lost(shown: &str) -> Error {
    Error::new(Code::IoError, format!("the staged content of {shown} could not be read back"))
        .with_hint("discard this staged change and run the command again")
}

/// Checks, then applies `changes` (read from the tmpfs `upper`).
pub(crate) fn apply(ws: &Workspace, upper: &OwnedFd, changes: &[Change], guard: &crate::guard::Guard, cancel: &Cancel) -> Result<()> {
    cancel.check()?;
    for c in changes {
        let shown = c.shown();
        let plain = scan::shown(&c.path);
        if let Some(pattern) = guard.matched(&plain).or_else(|| guard.matched(&shown)) {
            return Err(crate::guard::protected(&plain, pattern, &plain));
        }
        if let Some(Node::Other { kind }) = &c.after {
            return Err(not_regular(&shown, kind));
        }
    }
    ws.check()?;
    let mut tx = Tx { ws, upper, dirs: HashMap::new(), journal: Journal::default() };
    match tx.run(changes, cancel) {
        Ok(()) => {
            tx.journal.commit();
            Ok(())
        }
        Err(err) => Err(tx.journal.failed(err, "nothing was applied")),
    }
}
