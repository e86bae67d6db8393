//! `move_file`, `delete_file`, `make_directory`: the file operations agents otherwise run
//! through a shell, with the writing tools' rules.
//!
//! Each resolves its names beneath the root without following the final component (a symlink
//! is moved or deleted as a link, never through), checks the write guard on every name (as
//! named, and where it really lands), takes the per-target locks `write_file` uses (all of a
//! call's at once, in one global order) and does one system call under them:
//!
//! - `move_file`: `renameat2` with `RENAME_NOREPLACE` unless `overwrite` (`FILE_EXISTS`
//!   otherwise); never a copy, so moving across file systems fails (`EXDEV`) instead of
//!   copying. Missing parents of the destination are created. A directory may be moved when
//!   the guard protects nothing inside it, before or after the move (checked over at most
//!   [`MAX_GUARD_WALK`] entries; a larger tree is refused when a guard is set). Replacing an
//!   existing file (`overwrite`) replaces its content, so a destination the caller could not
//!   open for writing is refused as `write_file` refuses it; the source moves whatever its
//!   mode (POSIX `rename`: the directories' permissions govern names).
//! - `delete_file`: a file or a symlink (`unlinkat`), or an empty directory
//!   (`AT_REMOVEDIR`); a directory with entries is refused with a hint. A read-only file may
//!   be deleted where its directory is writable (POSIX `unlink`, as `rm -f` and other agents'
//!   delete operations do).
//! - `make_directory`: creates the directory and its missing parents; an existing directory
//!   is `created: false`, anything else at the name is `FILE_EXISTS`.

use std::ffi::OsString;
use std::sync::Arc;

use rustix::fs::{AtFlags, Mode, RenameFlags};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::guard::Guard;
use crate::path::RelPath;
use crate::root::{Identity, Workspace};
use crate::target_lock::{self, Ticket};
use crate::write::{self, io_err, lstat_at, Existing, Resolved};

/// Most entries looked at when a guarded workspace moves a directory.
pub const MAX_GUARD_WALK: usize = 10_000;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MoveFileOutput")]
pub struct MoveOutput {
    pub from: String,
    pub to: String,
    /// Whether something at `to` was replaced (only with `overwrite`).
    pub replaced: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "DeleteFileOutput")]
pub struct DeleteOutput {
    pub path: String,
    /// `"file"`, `"symlink"` or `"directory"`.
    #[schemars(extend("enum" = ["file", "symlink", "directory"]))]
    pub kind: &'static str,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "MakeDirectoryOutput")]
pub struct MkdirOutput {
    pub path: String,
    /// Whether the directory did not exist before.
    pub created: bool,
}

fn name_path(raw: &str) -> Result<RelPath> {
    crate::path::parse(raw)
}

/// Expected approval strings of a file operation's names (an approved change: see
/// [`crate::approval`]), compared under the names' locks.
#[derive(Debug, Default)]
pub(crate) struct Expected(Vec<(String, String)>);

impl Expected {
    fn new(pairs: Vec<(String, String)>, names: &[String]) -> Result<Self> {
        let mut out = Vec::with_capacity(pairs.len());
        for (raw, hash) in pairs {
            let path = name_path(&raw)?;
            if !names.iter().any(|n| n == path.as_str()) {
                return Err(Error::invalid(
                    Reason::InvalidArgumentsShape,
                    format!("an expected hash names {}, which this call does not touch", path.as_str()),
                ));
            }
            out.push((path.as_str().to_string(), hash));
        }
        Ok(Expected(out))
    }

    /// Compares the name's state now with the expected string, if one was given for `shown`.
    fn check(&self, r: &Resolved, shown: &str, cancel: &Cancel) -> Result<()> {
        if let Some((_, expected)) = self.0.iter().find(|(p, _)| p == shown) {
            let now = crate::write::name_state(&r.dir, &r.name, shown, cancel)?;
            if &now != expected {
                return Err(write::hash_mismatch(shown, expected, &now));
            }
        }
        Ok(())
    }
}

/// `with_guard` and `with_expected` of a request (its `guard`, `expected` and `names()`).
macro_rules! conditions {
    ($ty:ident) => {
        impl $ty {
            pub fn with_guard(mut self, guard: Option<Arc<Guard>>) -> Self {
                self.guard = guard;
                self
            }
            /// Acts only while each named path still has the given approval string (else
            /// `TARGET_CHANGED`, nothing done); a key must be one of the call's paths.
            pub fn with_expected(mut self, expected: Vec<(String, String)>) -> Result<Self> {
                let names = self.names();
                self.expected = Expected::new(expected, &names)?;
                Ok(self)
            }
        }
    };
}

#[derive(Debug)]
pub struct MoveRequest {
    pub(crate) from: RelPath,
    pub(crate) to: RelPath,
    pub(crate) overwrite: bool,
    pub(crate) guard: Option<Arc<Guard>>,
    /// Approval strings ([`crate::write::name_state`]) each name must still have, by path.
    pub(crate) expected: Expected,
}

impl MoveRequest {
    pub fn new(from: &str, to: &str, overwrite: bool) -> Result<Self> {
        let (from, to) = (name_path(from)?, name_path(to)?);
        if from.as_str() == to.as_str() {
            return Err(Error::invalid(Reason::InvalidArgumentsShape, "from and to name the same path; give the new path as to"));
        }
        Ok(MoveRequest { from, to, overwrite, guard: None, expected: Expected::default() })
    }
    pub fn from(&self) -> &RelPath {
        &self.from
    }
    fn names(&self) -> Vec<String> {
        vec![self.from.as_str().to_string(), self.to.as_str().to_string()]
    }
    pub fn to(&self) -> &RelPath {
        &self.to
    }
}

/// The request of a tool that names one path (delete_file, make_directory).
#[derive(Debug)]
pub struct NameRequest {
    pub(crate) path: RelPath,
    pub(crate) guard: Option<Arc<Guard>>,
    pub(crate) expected: Expected,
}

impl NameRequest {
    pub fn new(path: &str) -> Result<Self> {
        Ok(NameRequest { path: name_path(path)?, guard: None, expected: Expected::default() })
    }
    pub fn path(&self) -> &RelPath {
        &self.path
    }
    fn names(&self) -> Vec<String> {
        vec![self.path.as_str().to_string()]
    }
}

conditions!(MoveRequest);
conditions!(NameRequest);

pub type DeleteRequest = NameRequest;
pub type MkdirRequest = NameRequest;

/// The tickets of a move (two names), taken when the call is made.
pub fn move_tickets() -> Vec<Ticket> {
    target_lock::tickets(2)
}

/// The ticket of a delete or make_directory, taken when the call is made.
pub fn one_ticket() -> Vec<Ticket> {
    target_lock::tickets(1)
}

pub(crate) fn guarded_name(ws: &Workspace, path: &RelPath, guard: Option<&Guard>) -> Result<Resolved> {
    if let Some(g) = guard {
        g.check_before(ws, path)?;
    }
    let r = crate::patch::plan::resolve_name(ws, path)?;
    if let Some(g) = guard {
        g.check_landing(ws, path, &r.dir, &r.name)?;
    }
    Ok(r)
}

/// A name whose missing parents are created (each checked by the guard).
fn guarded_new_name(ws: &Workspace, path: &RelPath, guard: Option<&Guard>, cancel: &Cancel) -> Result<Resolved> {
    if let Some(g) = guard {
        g.check_before(ws, path)?;
    }
    let shown = path.as_str();
    let (dir, spelling) = write::ensure_parent(ws, path, cancel, guard)?;
    let dir_id = write::dir_identity(&dir, shown)?;
    let r = Resolved { dir, dir_id, dir_spelling: spelling, name: OsString::from(path.file_name()) };
    if let Some(g) = guard {
        g.check_landing(ws, path, &r.dir, &r.name)?;
    }
    Ok(r)
}

/// The path of an open directory's entry relative to the root, as the guard sees it.
fn real_of(ws: &Workspace, r: &Resolved, shown: &str) -> Result<String> {
    use std::os::fd::AsRawFd as _;
    let abs = std::fs::read_link(format!("/proc/self/fd/{}", r.dir.as_raw_fd())).map_err(|e| Error::from_io(&e, shown))?;
    let rel = abs.strip_prefix(ws.canonical()).map_err(|_| Error::escape(shown))?;
    let rel = rel.join(&r.name);
    Ok(rel.to_string_lossy().into_owned())
}

/// Refuses moving a directory when the guard protects anything inside it, where it is or
/// where it would be.
fn check_tree(ws: &Workspace, guard: &Guard, req: &MoveRequest, src: &Resolved, dst: &Resolved, cancel: &Cancel) -> Result<()> {
    let shown = req.from.as_str();
    let (from_real, to_real) = (real_of(ws, src, shown)?, real_of(ws, dst, req.to.as_str())?);
    let root = src.dir.open_dir(&src.name).map_err(|e| Error::from_io(&e, shown))?;
    let mut stack: Vec<(cap_std::fs::Dir, String)> = vec![(root, String::new())];
    let mut seen = 0usize;
    while let Some((dir, rel)) = stack.pop() {
        cancel.check()?;
        for entry in dir.entries().map_err(|e| Error::from_io(&e, shown))? {
            let entry = entry.map_err(|e| Error::from_io(&e, shown))?;
            seen += 1;
            if seen > MAX_GUARD_WALK {
                return Err(Error::new(Code::PathProtected, format!("{shown} holds more than {MAX_GUARD_WALK} entries"))
                    .with_hint("the host protects some paths from writes, and a directory this large cannot be checked; move smaller directories or single files"));
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let sub = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            for base in [&from_real, &to_real] {
                let full = format!("{base}/{sub}");
                if let Some(pattern) = guard.matched(&full) {
                    return Err(Error::new(Code::PathProtected, format!("{shown} contains {sub}, which is protected from writes"))
                        .with_hint(format!("the host protects paths matching {pattern}; moving this directory would move or create such a path: move other files, or ask the user"))
                        .with_details(serde_json::json!({ "pattern": pattern, "entry": full })));
                }
            }
            let ft = entry.file_type().map_err(|e| Error::from_io(&e, shown))?;
            if ft.is_dir() {
                let child = entry.open_dir().map_err(|e| Error::from_io(&e, shown))?;
                stack.push((child, sub));
            }
        }
    }
    Ok(())
}

fn same_dir(a: &Resolved, b: &Resolved) -> bool {
    a.dir_id == b.dir_id
}

fn recheck_dir(ws: &Workspace, r: &Resolved, shown: &str) -> Result<()> {
    match ws.dir().metadata(&r.dir_spelling) {
        Ok(meta) if meta.is_dir() && Identity::of_cap(&meta) == r.dir_id => Ok(()),
        _ => Err(write::changed(shown, "parent directory")),
    }
}

fn exists(shown: &str, hint: &str) -> Error {
    Error::new(Code::FileExists, format!("{shown} already exists")).with_hint(hint.to_string()).with_details(serde_json::json!({ "path": shown }))
}

/// Moves (renames) `from` to `to`.
pub async fn move_file(ws: Arc<Workspace>, req: MoveRequest, tickets: Vec<Ticket>, cancel: Cancel) -> Result<MoveOutput> {
    cancel.check()?;
    let req = Arc::new(req);
    let (src, dst) = {
        let (ws, req, cancel) = (ws.clone(), req.clone(), cancel.clone());
        write::blocking(&cancel.clone(), move || {
            ws.check()?;
            let guard = req.guard.as_deref();
            let src = guarded_name(&ws, &req.from, guard)?;
            let shown = req.from.as_str();
            let kind = lstat_at(&src.dir, &src.name).map_err(|e| Error::from_io(&e, shown))?;
            if kind == Existing::Absent {
                return Err(Error::not_found(shown));
            }
            let dst = guarded_new_name(&ws, &req.to, guard, &cancel)?;
            if src.key() == dst.key() {
                return Err(Error::invalid(Reason::InvalidArgumentsShape, format!("{} and {} are the same name", shown, req.to.as_str())));
            }
            if let (Some(g), Existing::Other("directory")) = (guard, kind) {
                check_tree(&ws, g, &req, &src, &dst, &cancel)?;
            }
            Ok((src, dst))
        })
        .await?
    };
    let keys = vec![src.key(), dst.key()];
    let guards = target_lock::acquire_all(tickets, keys, &cancel).await?;
    let out = {
        let cancel2 = cancel.clone();
        write::blocking(&cancel, move || {
            let (shown, to) = (req.from.as_str(), req.to.as_str());
            cancel2.check()?;
            ws.check()?;
            recheck_dir(&ws, &src, shown)?;
            recheck_dir(&ws, &dst, to)?;
            req.expected.check(&src, shown, &cancel2)?;
            req.expected.check(&dst, to, &cancel2)?;
            if lstat_at(&src.dir, &src.name).map_err(|e| Error::from_io(&e, shown))? == Existing::Absent {
                return Err(Error::not_found(shown));
            }
            let before = lstat_at(&dst.dir, &dst.name).map_err(|e| Error::from_io(&e, to))?;
            if before != Existing::Absent && !req.overwrite {
                return Err(exists(to, "move_file does not replace an existing file unless overwrite is true; pick another name, or pass overwrite: true"));
            }
            // Replacing a file replaces its content: like write_file, not a file the caller
            // could not open for writing. (The source itself moves whatever its mode: a rename
            // changes names, which the directories' permissions govern.)
            if let Existing::Regular { .. } = before {
                write::check_writable(&dst.dir, &dst.name, to)?;
            }
            let flags = if req.overwrite { RenameFlags::empty() } else { RenameFlags::NOREPLACE };
            match rustix::fs::renameat_with(&src.dir, &src.name, &dst.dir, &dst.name, flags) {
                Ok(()) => {}
                Err(rustix::io::Errno::EXIST) if !req.overwrite => {
                    return Err(exists(to, "something took this name; pick another name, or pass overwrite: true"))
                }
                Err(rustix::io::Errno::EXIST | rustix::io::Errno::NOTEMPTY) => {
                    return Err(Error::from_io(&io_err(rustix::io::Errno::NOTEMPTY), to)
                        .with_hint("the destination is a directory with entries; move_file replaces only files and empty directories"))
                }
                Err(rustix::io::Errno::INVAL) => {
                    return Err(Error::invalid(Reason::InvalidArgumentsShape, format!("{shown} cannot be moved into itself ({to})")))
                }
                Err(rustix::io::Errno::XDEV) => {
                    return Err(Error::from_io(&io_err(rustix::io::Errno::XDEV), to)
                        .with_hint("from and to are on different file systems; move_file never copies: write the file anew with write_file and delete the old one"))
                }
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
            let _ = write::fsync_dir(&dst.dir);
            if !same_dir(&src, &dst) {
                let _ = write::fsync_dir(&src.dir);
            }
            Ok(MoveOutput { from: shown.to_string(), to: to.to_string(), replaced: before != Existing::Absent })
        })
        .await
    };
    drop(guards);
    out
}

/// Deletes a file, a symlink (never followed) or an empty directory.
pub async fn delete_file(ws: Arc<Workspace>, req: DeleteRequest, tickets: Vec<Ticket>, cancel: Cancel) -> Result<DeleteOutput> {
    cancel.check()?;
    let req = Arc::new(req);
    let target = {
        let (ws, req) = (ws.clone(), req.clone());
        write::blocking(&cancel.clone(), move || {
            ws.check()?;
            guarded_name(&ws, &req.path, req.guard.as_deref())
        })
        .await?
    };
    let guards = target_lock::acquire_all(tickets, vec![target.key()], &cancel).await?;
    let out = {
        let cancel2 = cancel.clone();
        write::blocking(&cancel, move || {
            let shown = req.path.as_str();
            cancel2.check()?;
            ws.check()?;
            recheck_dir(&ws, &target, shown)?;
            req.expected.check(&target, shown, &cancel2)?;
            let kind = match lstat_at(&target.dir, &target.name).map_err(|e| Error::from_io(&e, shown))? {
                Existing::Absent => return Err(Error::not_found(shown)),
                Existing::Regular { .. } => "file",
                Existing::Symlink => "symlink",
                Existing::Other("directory") => "directory",
                Existing::Other(kind) => {
                    return Err(Error::not_regular(shown, kind).with_hint("delete_file removes files, symlinks and empty directories"))
                }
            };
            let flags = if kind == "directory" { AtFlags::REMOVEDIR } else { AtFlags::empty() };
            match rustix::fs::unlinkat(&target.dir, &target.name, flags) {
                Ok(()) => {}
                Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST) => {
                    return Err(Error::from_io(&io_err(rustix::io::Errno::NOTEMPTY), shown).with_hint(
                        "delete_file removes only empty directories; delete the files inside first (list_files shows them), one call each",
                    ))
                }
                // Replaced between the look and the removal (a directory for a file or back).
                Err(rustix::io::Errno::ISDIR | rustix::io::Errno::NOTDIR) => return Err(write::changed(shown, "target")),
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
            let _ = write::fsync_dir(&target.dir);
            Ok(DeleteOutput { path: shown.to_string(), kind })
        })
        .await
    };
    drop(guards);
    out
}

/// Creates a directory and its missing parents.
pub async fn make_directory(ws: Arc<Workspace>, req: MkdirRequest, tickets: Vec<Ticket>, cancel: Cancel) -> Result<MkdirOutput> {
    cancel.check()?;
    let req = Arc::new(req);
    let target = {
        let (ws, req, cancel) = (ws.clone(), req.clone(), cancel.clone());
        write::blocking(&cancel.clone(), move || {
            ws.check()?;
            // The guard sees where the directory would really appear (check_landing).
            guarded_new_name(&ws, &req.path, req.guard.as_deref(), &cancel)
        })
        .await?
    };
    let guards = target_lock::acquire_all(tickets, vec![target.key()], &cancel).await?;
    let out = {
        let cancel2 = cancel.clone();
        write::blocking(&cancel, move || {
            let shown = req.path.as_str();
            cancel2.check()?;
            ws.check()?;
            recheck_dir(&ws, &target, shown)?;
            req.expected.check(&target, shown, &cancel2)?;
            let created = match rustix::fs::mkdirat(&target.dir, &target.name, Mode::from_raw_mode(0o777)) {
                Ok(()) => true,
                Err(rustix::io::Errno::EXIST) => match lstat_at(&target.dir, &target.name).map_err(|e| Error::from_io(&e, shown))? {
                    Existing::Other("directory") => false,
                    Existing::Absent => return Err(write::changed(shown, "target")),
                    _ => {
                        return Err(exists(shown, "something that is not a directory has this name; pick another name, or delete it first with delete_file"))
                    }
                },
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            };
            if created {
                let _ = write::fsync_dir(&target.dir);
            }
            Ok(MkdirOutput { path: shown.to_string(), created })
        })
        .await
    };
    drop(guards);
    out
}

/// Runs `fut` on the runtime from a host thread; `done` gets the outcome exactly once.
pub fn spawn<T: Send + 'static>(
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    done: impl FnOnce(Result<T>) + Send + 'static,
) {
    let settle = crate::patch::Once::new(done);
    tokio::spawn(async move { settle.done(fut.await) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::path::PathBuf;

    fn setup() -> (tempfile::TempDir, PathBuf, Arc<Workspace>) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let ws = Arc::new(Workspace::open(&root).unwrap());
        (tmp, root, ws)
    }

    fn guard() -> Option<Arc<Guard>> {
        Some(Arc::new(Guard::default_guard()))
    }

    async fn mv(ws: &Arc<Workspace>, from: &str, to: &str, overwrite: bool, g: Option<Arc<Guard>>) -> Result<MoveOutput> {
        move_file(ws.clone(), MoveRequest::new(from, to, overwrite)?.with_guard(g), move_tickets(), Cancel::new()).await
    }
    async fn rm(ws: &Arc<Workspace>, path: &str, g: Option<Arc<Guard>>) -> Result<DeleteOutput> {
        delete_file(ws.clone(), DeleteRequest::new(path)?.with_guard(g), one_ticket(), Cancel::new()).await
    }
    async fn mkdir(ws: &Arc<Workspace>, path: &str, g: Option<Arc<Guard>>) -> Result<MkdirOutput> {
        make_directory(ws.clone(), MkdirRequest::new(path)?.with_guard(g), one_ticket(), Cancel::new()).await
    }

    #[tokio::test]
    async fn move_renames_without_replacing_unless_overwrite() {
        let (_t, root, ws) = setup();
        fs::write(root.join("a.txt"), "A").unwrap();
        fs::write(root.join("b.txt"), "B").unwrap();
        let err = mv(&ws, "a.txt", "b.txt", false, None).await.unwrap_err();
        assert_eq!(err.code, Code::FileExists);
        assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "B");
        assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "A");
        let out = mv(&ws, "a.txt", "b.txt", true, None).await.unwrap();
        assert_eq!(out, MoveOutput { from: "a.txt".into(), to: "b.txt".into(), replaced: true });
        assert_eq!(fs::read_to_string(root.join("b.txt")).unwrap(), "A");
        assert!(!root.join("a.txt").exists());
        // Missing parents are created; an inode is moved, never copied.
        let ino = std::os::unix::fs::MetadataExt::ino(&fs::metadata(root.join("b.txt")).unwrap());
        let out = mv(&ws, "b.txt", "deep/er/c.txt", false, None).await.unwrap();
        assert!(!out.replaced);
        assert_eq!(std::os::unix::fs::MetadataExt::ino(&fs::metadata(root.join("deep/er/c.txt")).unwrap()), ino);
        assert_eq!(mv(&ws, "nope", "x", false, None).await.unwrap_err().code, Code::FileNotFound);
        assert_eq!(mv(&ws, "../x", "y", false, None).await.unwrap_err().reason(), Some("INVALID_RELATIVE_PATH"));
        // A directory moves as a whole; into itself is refused.
        fs::create_dir_all(root.join("d/sub")).unwrap();
        fs::write(root.join("d/sub/f"), "f").unwrap();
        mv(&ws, "d", "e", false, guard()).await.unwrap();
        assert_eq!(fs::read_to_string(root.join("e/sub/f")).unwrap(), "f");
        assert_eq!(mv(&ws, "e", "e/sub/x", false, None).await.unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    }

    #[tokio::test]
    async fn move_is_guarded_on_both_names_and_never_follows_a_link() {
        let (t, root, ws) = setup();
        fs::write(root.join("evil"), "[core]\n\thooksPath = /tmp\n").unwrap();
        for (from, to) in [("evil", ".git/config"), (".git/config", "stolen"), ("evil", ".git/hooks/pre-commit"), (".git", "git2")] {
            let err = mv(&ws, from, to, true, guard()).await.unwrap_err();
            assert_eq!(err.code, Code::PathProtected, "{from} -> {to}");
        }
        assert_eq!(fs::read_to_string(root.join(".git/config")).unwrap(), "[core]\n");
        // A directory holding a protected path cannot be moved (nested: via a custom glob).
        let g = Some(Arc::new(Guard::new(&["keep/secret/**"], false).unwrap()));
        fs::create_dir_all(root.join("keep/secret")).unwrap();
        fs::write(root.join("keep/secret/k"), "k").unwrap();
        assert_eq!(mv(&ws, "keep", "moved", false, g.clone()).await.unwrap_err().code, Code::PathProtected);
        fs::create_dir_all(root.join("plain/secret")).unwrap();
        assert_eq!(mv(&ws, "plain", "keep2", false, g.clone()).await.map(|o| o.replaced).unwrap(), false);
        // The attack with the guard off goes through (so the refusals above are the guard's).
        mv(&ws, "evil", ".git/config", true, None).await.unwrap();
        assert!(fs::read_to_string(root.join(".git/config")).unwrap().contains("hooksPath"));
        // A symlink is moved as a link: its target stays.
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "outside").unwrap();
        symlink(&outside, root.join("link")).unwrap();
        mv(&ws, "link", "link2", false, None).await.unwrap();
        assert!(fs::symlink_metadata(root.join("link2")).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
        // A destination through an outside symlinked directory is an escape.
        symlink(t.path(), root.join("out")).unwrap();
        assert_eq!(mv(&ws, "link2", "out/x", false, None).await.unwrap_err().code, Code::PathEscapesWorkspace);
    }

    #[tokio::test]
    async fn delete_files_links_and_empty_directories_only() {
        let (t, root, ws) = setup();
        fs::write(root.join("f"), "x").unwrap();
        assert_eq!(rm(&ws, "f", guard()).await.unwrap(), DeleteOutput { path: "f".into(), kind: "file" });
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "keep me").unwrap();
        symlink(&outside, root.join("l")).unwrap();
        assert_eq!(rm(&ws, "l", None).await.unwrap().kind, "symlink");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep me", "the link was followed");
        fs::create_dir_all(root.join("d/e")).unwrap();
        let err = rm(&ws, "d", None).await.unwrap_err();
        assert!(err.message.starts_with("ENOTEMPTY"), "{err:?}");
        assert!(err.hint.unwrap().contains("only empty directories"));
        assert_eq!(rm(&ws, "d/e", None).await.unwrap().kind, "directory");
        assert_eq!(rm(&ws, "d/", None).await.unwrap().kind, "directory");
        assert_eq!(rm(&ws, "d", None).await.unwrap_err().code, Code::FileNotFound);
        assert_eq!(rm(&ws, ".git/config", guard()).await.unwrap_err().code, Code::PathProtected);
        symlink(".git/config", root.join("cfg")).unwrap();
        // Deleting a link to a protected file removes only the link... which the guard allows.
        assert_eq!(rm(&ws, "cfg", guard()).await.unwrap().kind, "symlink");
        assert!(root.join(".git/config").exists());
        // Through a symlinked directory into .git: refused.
        symlink(".git", root.join("g")).unwrap();
        assert_eq!(rm(&ws, "g/config", guard()).await.unwrap_err().code, Code::PathProtected);
        assert!(root.join(".git/config").exists());
        rm(&ws, "g/config", None).await.unwrap();
        assert!(!root.join(".git/config").exists(), "without the guard the same delete goes through");
    }

    #[tokio::test]
    async fn make_directory_creates_parents_and_reports_existing() {
        let (_t, root, ws) = setup();
        assert_eq!(mkdir(&ws, "a/b/c", guard()).await.unwrap(), MkdirOutput { path: "a/b/c".into(), created: true });
        assert!(root.join("a/b/c").is_dir());
        assert!(!mkdir(&ws, "a/b/c/", guard()).await.unwrap().created);
        fs::write(root.join("file"), "x").unwrap();
        assert_eq!(mkdir(&ws, "file", None).await.unwrap_err().code, Code::FileExists);
        assert_eq!(mkdir(&ws, ".git/hooks", guard()).await.unwrap_err().code, Code::PathProtected);
        assert!(!root.join(".git/hooks").exists());
        std::os::unix::fs::symlink(".git", root.join("g")).unwrap();
        assert_eq!(mkdir(&ws, "g/hooks", guard()).await.unwrap_err().code, Code::PathProtected);
        assert!(!root.join(".git/hooks").exists());
    }
}
