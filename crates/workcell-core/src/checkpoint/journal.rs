//! The undo journal of a change applied to the workspace all or nothing: a checkpoint's rewind
//! ([`super::rewind`]) and a staged run's apply (`crate::stage::apply`) both use it.
//!
//! Every step is one rename (or `mkdir`, or `symlinkat`) beneath a directory opened from the
//! root handle component by component with `O_NOFOLLOW`, and is logged: a name renamed away
//! onto a `.workcell-tmp-*` name, or a name installed. [`Journal::commit`] removes what was
//! renamed away and fsyncs each directory changed once; [`Journal::undo`] undoes the steps in
//! reverse (installed names removed, names renamed away renamed back) and says which paths
//! could not be put back. Nothing is removed or renamed back unless it still has the identity
//! the step recorded.

use std::ffi::{OsStr, OsString};
use std::rc::Rc;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, Mode, OFlags, RenameFlags};

use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::hash::Hasher;
use crate::root::Identity;
use crate::walk::Kind;
use crate::write::{self, Temp};

use super::scan;

enum Step {
    /// A name renamed away onto `kept` (removed at the commit, renamed back on undo).
    Away { dir: Rc<Dir>, name: OsString, kept: OsString, id: Identity, is_dir: bool, shown: String },
    /// A file, link or directory this change put at `name`.
    Installed { dir: Rc<Dir>, name: OsString, id: Identity, is_dir: bool, shown: String },
}

/// The steps done so far, in order.
#[derive(Default)]
pub(crate) struct Journal {
    log: Vec<Step>,
}

/// The error for a path that is not what the change was computed against.
pub(crate) fn changed(shown: &str) -> Error {
    write::changed(shown, "target")
}

pub(crate) fn io(shown: &str) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::from_io(&e, shown)
}

/// The directory `name` in `parent`, opened without following a symlink.
pub(crate) fn open_child(parent: &Dir, name: &OsStr) -> std::io::Result<Dir> {
    let fd = rustix::fs::openat(parent, name, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty())?;
    Ok(Dir::from_std_file(std::fs::File::from(fd)))
}

pub(crate) fn rename_noreplace(dir: &Dir, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
    rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE).map_err(Into::into)
}

/// Whether `dir` holds no entry but `ours` (names this change moved there).
pub(crate) fn empty_but(dir: &Dir, ours: &[&OsStr]) -> std::io::Result<bool> {
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

/// Copies `src` into `temp` in pieces (cancellable between them); the content's SHA-256, in hex.
pub(crate) fn copy_hashed(src: &mut impl std::io::Read, temp: &mut Temp, shown: &str, cancel: &Cancel) -> Result<String> {
    use std::io::Write as _;
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
    Ok(hasher.finish())
}

impl Journal {
    /// The names renamed away so far, into `dir` only when one is given.
    pub(crate) fn kept(&self, dir: Option<&Rc<Dir>>) -> Vec<&OsStr> {
        self.log
            .iter()
            .filter_map(|s| match s {
                Step::Away { dir: d, kept, .. } if dir.is_none_or(|want| Rc::ptr_eq(d, want)) => Some(kept.as_os_str()),
                _ => None,
            })
            .collect()
    }

    /// Logs a directory (or anything else) this change made at `name`.
    pub(crate) fn installed(&mut self, dir: &Rc<Dir>, name: &OsStr, id: Identity, is_dir: bool, shown: &str) {
        self.log.push(Step::Installed { dir: dir.clone(), name: name.to_os_string(), id, is_dir, shown: shown.to_string() });
    }

    /// Renames `name` in `dir` away onto a fresh staged name; its identity must be `id`.
    pub(crate) fn away(&mut self, dir: &Rc<Dir>, name: &OsStr, id: Identity, is_dir: bool, shown: &str) -> Result<()> {
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

    /// Gives `temp` (its content written, its mode set) the free name `name`: fsynced, linked,
    /// renamed with `RENAME_NOREPLACE` (a name that appeared meanwhile is `TARGET_CHANGED`).
    pub(crate) fn install_temp(&mut self, dir: &Rc<Dir>, name: &OsStr, shown: &str, mut temp: Temp) -> Result<()> {
        temp.file.sync_all().map_err(io(shown))?;
        let tmp = temp.link().map_err(io(shown))?.to_os_string();
        rename_noreplace(dir, &tmp, name).map_err(|e| if e.raw_os_error() == Some(libc::EEXIST) { changed(shown) } else { Error::from_io(&e, shown) })?;
        temp.installed = true;
        self.installed(dir, name, temp.id, false, shown);
        Ok(())
    }

    /// Makes a symlink with the text `target` at the free name `name` (made under a temporary
    /// name, then renamed with `RENAME_NOREPLACE`); the link is never followed.
    pub(crate) fn install_link(&mut self, dir: &Rc<Dir>, name: &OsStr, shown: &str, target: &[u8]) -> Result<()> {
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
            self.installed(dir, name, id, false, shown);
            return Ok(());
        }
        Err(Error::from_io(&std::io::Error::from_raw_os_error(libc::EEXIST), shown))
    }

    /// Removes what was renamed away; fsyncs each directory changed once.
    pub(crate) fn commit(&mut self) {
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

    /// Undoes the steps done, in reverse; the paths that could not be put back.
    pub(crate) fn undo(&mut self) -> Vec<String> {
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

    /// The error of a change that failed after its steps were undone: the hint says whether
    /// everything was put back (`done` names what did not happen: "nothing was rewound"), and
    /// the details list what could not be. A cancelled call that undid everything is left as is.
    pub(crate) fn failed(&mut self, err: Error, done: &str) -> Error {
        let failures = self.undo();
        if err.is_cancelled() && failures.is_empty() {
            return err;
        }
        let hint = err.hint.clone().unwrap_or_default();
        let hint = if failures.is_empty() {
            format!("{hint} ({done}: every path already changed was put back)")
        } else {
            format!("{hint} (putting back {} failed: check those paths)", failures.join(", "))
        };
        let mut details = err.details.clone().unwrap_or_else(|| serde_json::json!({}));
        if let Some(o) = details.as_object_mut() {
            o.insert("restored".into(), serde_json::json!(failures.is_empty()));
            o.insert("notRestored".into(), serde_json::json!(failures));
        }
        err.with_hint(hint).with_details(details)
    }
}
