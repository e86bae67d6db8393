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
use std::ffi::{OsStr, OsString};
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::rc::Rc;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};

use crate::cancel::Cancel;
use crate::checkpoint::scan::{self, Stat};
use crate::error::{Code, Error, Result};
use crate::hash::Hasher;
use crate::root::{Identity, Workspace};
use crate::walk::Kind;
use crate::write::{self, Temp};

use super::collect::{Change, Node};

enum Step {
    Away { dir: Rc<Dir>, name: OsString, kept: OsString, id: Identity, is_dir: bool, shown: String },
    Installed { dir: Rc<Dir>, name: OsString, id: Identity, is_dir: bool, shown: String },
}

struct Tx<'a> {
    ws: &'a Workspace,
    upper: &'a OwnedFd,
    dirs: HashMap<Vec<u8>, Rc<Dir>>,
    log: Vec<Step>,
}

fn changed(shown: &str) -> Error {
    write::changed(shown, "target")
}

fn io(shown: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(&e, shown)
}

fn open_child(parent: &Dir, name: &OsStr) -> std::io::Result<Dir> {
    let fd = rustix::fs::openat(parent, name, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

fn rename_noreplace(dir: &Dir, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
    rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE).map_err(Into::into)
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

/// Whether `dir` holds nothing but `ours`.
fn empty_but(dir: &Dir, ours: &[&OsStr]) -> std::io::Result<bool> {
    let fd = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
    let mut entries = rustix::fs::Dir::new(fd)?;
    while let Some(e) = entries.read() {
        let e = e?;
        let n = e.file_name().to_bytes();
        if n != b"." && n != b".." && !ours.iter().any(|o| o.as_encoded_bytes() == n) {
            return Ok(false);
        }
    }
    Ok(true)
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
        self.log.push(Step::Installed { dir: p.clone(), name: name.to_os_string(), id: st.id(), is_dir: true, shown: shown.to_string() });
        rustix::fs::chmodat(&**p, name, Mode::from_raw_mode(staged_dir_mode(self.upper, rel)), AtFlags::empty()).map_err(|e| io(shown)(e.into()))?;
        Ok(())
    }

    fn away(&mut self, dir: &Rc<Dir>, name: &OsStr, id: Identity, is_dir: bool, shown: &str) -> Result<()> {
        for _ in 0..16 {
            let kept = OsString::from(write::temp_name());
            match rename_noreplace(dir, name, &kept) {
                Ok(()) => {
                    let now = scan::lstat(&**dir, &kept).ok().flatten().map(|s| s.id());
                    if now != Some(id) {
                        let _ = rename_noreplace(dir, &kept, name);
                        return Err(changed(shown));
                    }
                    self.log.push(Step::Away { dir: dir.clone(), name: name.to_os_string(), kept, id, is_dir, shown: shown.to_string() });
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Err(changed(shown)),
                Err(e) => return Err(Error::from_io(&e, shown)),
            }
        }
        Err(Error::from_io(&std::io::Error::from_raw_os_error(libc::EEXIST), shown))
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
            let ours: Vec<&OsStr> = self
                .log
                .iter()
                .filter_map(|s| match s {
                    Step::Away { dir, kept, .. } if Rc::ptr_eq(dir, &inner) => Some(kept.as_os_str()),
                    _ => None,
                })
                .collect();
            if !empty_but(&inner, &ours).map_err(io(&shown))? {
                return Err(changed(&shown));
            }
        } else if now != *before {
            return Err(changed(&shown));
        }
        self.away(&dir, name, before.id(), is_dir, &shown)
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
            Node::Link { target } => self.install_link(&dir, name, &shown, target),
            Node::Dir { .. } => self.make_dir(&dir, name, &c.path, &shown),
            Node::Other { kind } => Err(not_regular(&shown, kind)),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn install_file(&mut self, dir: &Rc<Dir>, name: &OsStr, path: &[u8], shown: &str, mode: u32, hash: &str, cancel: &Cancel) -> Result<()> {
        let upper = rustix::fs::openat(self.upper, "upper", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(|e| io(shown)(e.into()))?;
        let mut src = super::render::open_beneath(&upper, path).ok_or_else(|| staged_lost(shown))?;
        let mut temp = Temp::create(dir, shown)?;
        let mut hasher = Hasher::new();
        let mut buf = vec![0u8; 128 * 1024];
        loop {
            cancel.check()?;
            let n = match src.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::from_io(&e, shown)),
            };
            hasher.update(&buf[..n]);
            temp.file.write_all(&buf[..n]).map_err(io(shown))?;
        }
        if hasher.finish() != hash {
            return Err(staged_lost(shown));
        }
        rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode & 0o7777)).map_err(|e| io(shown)(e.into()))?;
        temp.file.sync_all().map_err(io(shown))?;
        let tmp = temp.link().map_err(io(shown))?.to_os_string();
        rename_noreplace(dir, &tmp, name).map_err(|e| if e.raw_os_error() == Some(libc::EEXIST) { changed(shown) } else { Error::from_io(&e, shown) })?;
        temp.installed = true;
        self.log.push(Step::Installed { dir: dir.clone(), name: name.to_os_string(), id: temp.id, is_dir: false, shown: shown.to_string() });
        Ok(())
    }

    fn install_link(&mut self, dir: &Rc<Dir>, name: &OsStr, shown: &str, target: &[u8]) -> Result<()> {
        use std::os::unix::ffi::OsStrExt as _;
        let target = OsStr::from_bytes(target);
        for _ in 0..16 {
            let tmp = OsString::from(write::temp_name());
            match rustix::fs::symlinkat(target, &**dir, &tmp) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) => continue,
                Err(e) => return Err(io(shown)(e.into())),
            }
            let id = match scan::lstat(&**dir, &tmp) {
                Ok(Some(st)) if st.kind() == Kind::Symlink => st.id(),
                _ => return Err(changed(shown)),
            };
            if let Err(e) = rename_noreplace(dir, &tmp, name) {
                if matches!(scan::lstat(&**dir, &tmp), Ok(Some(st)) if st.id() == id) {
                    let _ = rustix::fs::unlinkat(&**dir, &tmp, AtFlags::empty());
                }
                return Err(if e.raw_os_error() == Some(libc::EEXIST) { changed(shown) } else { Error::from_io(&e, shown) });
            }
            self.log.push(Step::Installed { dir: dir.clone(), name: name.to_os_string(), id, is_dir: false, shown: shown.to_string() });
            return Ok(());
        }
        Err(Error::from_io(&std::io::Error::from_raw_os_error(libc::EEXIST), shown))
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

    fn commit(&mut self) {
        let mut synced: Vec<*const Dir> = Vec::new();
        for step in std::mem::take(&mut self.log) {
            let dir = match &step {
                Step::Away { dir, kept, id, is_dir, .. } => {
                    if matches!(scan::lstat(&**dir, kept), Ok(Some(st)) if st.id() == *id) {
                        let flags = if *is_dir { AtFlags::REMOVEDIR } else { AtFlags::empty() };
                        let _ = rustix::fs::unlinkat(&**dir, kept, flags);
                    }
                    dir.clone()
                }
                Step::Installed { dir, .. } => dir.clone(),
            };
            let p = Rc::as_ptr(&dir);
            if !synced.contains(&p) {
                let _ = write::fsync_dir(&*dir);
                synced.push(p);
            }
        }
    }

    fn undo(&mut self) -> Vec<String> {
        let mut failures = Vec::new();
        for step in std::mem::take(&mut self.log).into_iter().rev() {
            match step {
                Step::Installed { dir, name, id, is_dir, shown } => {
                    let flags = if is_dir { AtFlags::REMOVEDIR } else { AtFlags::empty() };
                    let ok = matches!(scan::lstat(&*dir, &name), Ok(Some(st)) if st.id() == id) && rustix::fs::unlinkat(&*dir, &name, flags).is_ok();
                    if !ok {
                        failures.push(shown);
                    }
                }
                Step::Away { dir, name, kept, shown, .. } => {
                    if rename_noreplace(&dir, &kept, &name).is_err() {
                        failures.push(format!("{shown} (it is kept as {})", kept.to_string_lossy()));
                    }
                }
            }
        }
        failures
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
    let mut tx = Tx { ws, upper, dirs: HashMap::new(), log: Vec::new() };
    match tx.run(changes, cancel) {
        Ok(()) => {
            tx.commit();
            Ok(())
        }
        Err(err) => {
            let failures = tx.undo();
            if err.is_cancelled() && failures.is_empty() {
                return Err(err);
            }
            let hint = err.hint.clone().unwrap_or_default();
            let hint = if failures.is_empty() {
                format!("{hint} (nothing was applied: every path already changed was put back)")
            } else {
                format!("{hint} (putting back {} failed: check those paths)", failures.join(", "))
            };
            let mut details = err.details.clone().unwrap_or_else(|| serde_json::json!({}));
            if let Some(o) = details.as_object_mut() {
                o.insert("restored".into(), serde_json::json!(failures.is_empty()));
                o.insert("notRestored".into(), serde_json::json!(failures));
            }
            Err(err.with_hint(hint).with_details(details))
        }
    }
}
