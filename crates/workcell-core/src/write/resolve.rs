//! Resolution: the directory handle and final name a write lands on, beneath the root.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use rustix::fs::Mode;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::guard::Guard;
use crate::path::RelPath;
use crate::root::{Identity, Workspace};
use crate::target_lock::TargetKey;

use super::at::{fsync_dir, id_of, io_err, lstat_at, Existing};

/// Most symlinks followed for the final component (the kernel's limit too).
pub const MAX_SYMLINK_HOPS: usize = 40;


/// The target of a write: a directory handle beneath the root and a name in it.
#[derive(Debug)]
pub struct Resolved {
    /// The target's directory (an `O_PATH` handle is enough for the `*at` calls).
    pub(crate) dir: Dir,
    pub(crate) dir_id: Identity,
    /// How to find `dir` again from the root (may contain `..` from a symlink's text).
    pub(crate) dir_spelling: PathBuf,
    pub(crate) name: OsString,
}

impl Resolved {
    pub(crate) fn key(&self) -> TargetKey {
        TargetKey { dir: self.dir_id, name: self.name.clone() }
    }
}

pub(crate) fn dir_identity(dir: &Dir, shown: &str) -> Result<Identity> {
    let st = rustix::fs::fstat(dir).map_err(|e| Error::from_io(&io_err(e), shown))?;
    Ok(id_of(&st))
}

fn open_beneath(ws: &Workspace, spelling: &Path, shown: &str) -> Result<Dir> {
    ws.dir().open_dir(spelling).map_err(|e| Error::from_io(&e, shown))
}

/// Opens the parent directory of `path` beneath the root, creating missing directories one
/// component at a time. Each step is looked up again from the root, so a directory swapped for
/// a symlink mid-way can never lead outside.
pub(crate) fn ensure_parent(ws: &Workspace, path: &RelPath, cancel: &Cancel, guard: Option<&Guard>) -> Result<(Dir, PathBuf)> {
    let shown = path.as_str();
    let Some(parent) = path.parent() else {
        return Ok((open_beneath(ws, Path::new("."), shown)?, PathBuf::from(".")));
    };
    match ws.dir().open_dir(parent) {
        Ok(dir) => return Ok((dir, PathBuf::from(parent))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::from_io(&e, shown)),
    }
    let mut prefix = String::new();
    for segment in parent.split('/') {
        let base_spelling = if prefix.is_empty() { ".".to_string() } else { prefix.clone() };
        let next = if prefix.is_empty() { segment.to_string() } else { format!("{prefix}/{segment}") };
        match ws.dir().open_dir(&next) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                cancel.check()?;
                let base = open_beneath(ws, Path::new(&base_spelling), shown)?;
                if let Some(guard) = guard {
                    // Where the new directory would really appear (a link may have been swapped
                    // in since the guard's first look).
                    guard.check_mkdir(ws, path, &base, &next)?;
                }
                match rustix::fs::mkdirat(&base, segment, Mode::from_raw_mode(0o777)) {
                    Ok(()) => fsync_dir(&base).map_err(|e| Error::from_io(&e, shown))?,
                    Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(Error::from_io(&io_err(e), shown)),
                }
                match ws.dir().open_dir(&next) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        // The name exists but does not lead to a directory: a dangling symlink.
                        return Err(Error::new(Code::FileNotFound, format!("{next} is a symlink to a missing directory"))
                            .with_hint("write_file creates missing directories but does not follow a dangling symlink; write to the real directory instead")
                            .with_details(serde_json::json!({ "component": next })));
                    }
                    Err(e) => return Err(Error::from_io(&e, shown)),
                }
            }
            Err(e) => return Err(Error::from_io(&e, shown)),
        }
        prefix = next;
    }
    Ok((open_beneath(ws, Path::new(parent), shown)?, PathBuf::from(parent)))
}

/// Whether a symlink's text names a directory: it ends in `/`, or its last component is `.` or
/// `..`.
fn names_directory(text: &[u8]) -> bool {
    let last = text.rsplit(|&b| b == b'/').next().unwrap_or(text);
    last.is_empty() || last == b"." || last == b".."
}

/// Resolution without a guard (tests).
#[cfg(test)]
pub(crate) fn resolve(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<Resolved> {
    resolve_guarded(ws, path, cancel, None)
}

/// Resolves the write target of `path`: creates missing parents (consulting `guard` before
/// each), follows a final-component symlink while it stays inside, and refuses anything but a
/// regular file or a free name.
pub(crate) fn resolve_guarded(ws: &Workspace, path: &RelPath, cancel: &Cancel, guard: Option<&Guard>) -> Result<Resolved> {
    cancel.check()?;
    ws.check()?;
    let (dir, spelling) = ensure_parent(ws, path, cancel, guard)?;
    follow_final(ws, path, dir, spelling, cancel)
}

/// [`resolve_guarded`] without any effect, for a preview: nothing is created. `None` when a
/// parent directory is missing (the write would create it, so the target is a free name).
pub(crate) fn resolve_existing(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<Option<Resolved>> {
    cancel.check()?;
    ws.check()?;
    let shown = path.as_str();
    let spelling = path.parent().unwrap_or(".");
    let dir = match ws.dir().open_dir(spelling) {
        Ok(dir) => dir,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::from_io(&e, shown)),
    };
    follow_final(ws, path, dir, PathBuf::from(spelling), cancel).map(Some)
}

/// Follows a final-component symlink beneath the root (at most [`MAX_SYMLINK_HOPS`] hops)
/// from the opened parent `dir`; refuses anything but a regular file or a free name.
fn follow_final(ws: &Workspace, path: &RelPath, dir: Dir, spelling: PathBuf, cancel: &Cancel) -> Result<Resolved> {
    let shown = path.as_str();
    let (mut dir, mut spelling) = (dir, spelling);
    let mut name = OsString::from(path.file_name());
    for _hop in 0..=MAX_SYMLINK_HOPS {
        cancel.check()?;
        match lstat_at(&dir, &name).map_err(|e| Error::from_io(&e, shown))? {
            Existing::Absent | Existing::Regular { .. } => {
                let dir_id = dir_identity(&dir, shown)?;
                return Ok(Resolved { dir, dir_id, dir_spelling: spelling, name });
            }
            Existing::Other(kind) => return Err(Error::not_regular(shown, kind)),
            Existing::Symlink => {
                let text = match rustix::fs::readlinkat(&dir, &name, Vec::new()) {
                    Ok(text) => text.into_bytes(),
                    // Replaced or removed since the lstat: look at the name again.
                    Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOENT) => continue,
                    Err(e) => return Err(Error::from_io(&io_err(e), shown)),
                };
                if text.first() == Some(&b'/') {
                    // Absolute symlinks are refused even when they point inside.
                    return Err(Error::escape(shown));
                }
                if names_directory(&text) {
                    // Classify through the resolver: an escape is reported as one.
                    let whole = spelling.join(OsStr::from_bytes(&text));
                    return Err(match ws.dir().metadata(&whole) {
                        Err(e) if matches!(Error::from_io(&e, shown).code, Code::PathEscapesWorkspace | Code::SymlinkLoop) => {
                            Error::from_io(&e, shown)
                        }
                        _ => Error::not_regular(shown, "directory"),
                    });
                }
                let (dir_part, base) = match text.iter().rposition(|&b| b == b'/') {
                    Some(i) => (Some(&text[..i]), &text[i + 1..]),
                    None => (None, &text[..]),
                };
                if let Some(dir_part) = dir_part {
                    spelling = spelling.join(OsStr::from_bytes(dir_part));
                    dir = ws.dir().open_dir(&spelling).map_err(|e| {
                        let err = Error::from_io(&e, shown);
                        if err.code == Code::FileNotFound {
                            Error::new(Code::FileNotFound, format!("{shown} is a symlink into a missing directory"))
                                .with_hint("the symlink's target directory does not exist; create it first or write to another path")
                        } else {
                            err
                        }
                    })?;
                }
                name = OsString::from(OsStr::from_bytes(base));
            }
        }
    }
    Err(Error::from_io(&std::io::Error::from_raw_os_error(libc::ELOOP), shown))
}

