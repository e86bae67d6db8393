//! The all-or-nothing transaction behind `apply_patch`.
//!
//! **Resolve** (a worker thread, [`resolve`]): every path the patch names is checked by the
//! write guard as named, then resolved beneath the root: a file the patch writes (Add, an
//! Update in place, a Move destination) like `write_file` (missing parents created, a final
//! symlink inside followed), a name the patch removes (Delete, a Move source) without
//! following it. The guard then checks where each really lands. Two paths that land on one
//! file are refused. Parent directories created here are removed again if the patch fails.
//!
//! **Lock**: the targets' locks, in one global order (see [`crate::patch`]).
//!
//! **Run** (a worker thread holding every lock, [`run`]):
//! 1. compute: read each updated file (regular, UTF-8, within the limit), locate its hunks and
//!    compute its new content; an Add or a Move destination must not exist (`FILE_EXISTS`), a
//!    Delete must name a file or symlink; `expectedHashes` are compared; the diff is computed
//!    (bounded, cancellable). Nothing has changed yet.
//! 2. stage: each directory staged in is swept of the names a killed host left
//!    ([`write::sweep`]); each new content is written to an unnamed file beside its target
//!    (`O_TMPFILE`, or a `.workcell-tmp-*` sibling where there is none; the old file's
//!    permission bits, fsynced); each file to be replaced gets a hard link under a
//!    `.workcell-tmp-*` name: its old content, kept staged until the end.
//! 3. recheck: cancellation, the root, every parent directory and every target are what they
//!    were when computed. This is the last point where cancellation stops the patch.
//! 4. install, in patch order, each step one rename: a new content (named just before) over its
//!    target (or onto a free name with `RENAME_NOREPLACE`), a removed name onto a staged name. Each reader sees
//!    the whole old or the whole new file. If a step fails, the steps already done are undone
//!    in reverse (the old content renamed back, a created file removed, a removed name renamed
//!    back) and the failure is reported.
//! 5. fsync the directories, remove the staged old contents.
//!
//! No `.workcell-tmp-*` survives a call that ended. A host killed in the middle of steps 2 to
//! 5 leaves every file whole (each step is one rename) but the patch possibly half applied, and
//! some staged names behind; they record the host's process, and the next call staging in
//! their directory removes them once that process has provably exited ([`write::sweep`]).

use std::ffi::{OsStr, OsString};
use std::io::{Read as _, Write as _};
use std::sync::Arc;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, Mode, RenameFlags};

use crate::cancel::Cancel;
use crate::diff;
use crate::error::{Code, Error, Reason, Result};
use crate::hash::sha256_hex;
use crate::patch::locate::{self, Pass, ScanBudget};
use crate::patch::parse::FileOp;
use crate::patch::{FileResult, PatchOutput, PatchRequest};
use crate::path::RelPath;
use crate::root::{Identity, Workspace};
use crate::target_lock::TargetKey;
use crate::write::{self, changed, io_err, lstat_at, open_at, AtTarget, Existing, Resolved, Temp};

/// Directories this call created, removed again (deepest first, only if still empty) unless
/// the patch was installed.
pub(crate) struct CreatedDirs {
    ws: Arc<Workspace>,
    dirs: Vec<String>,
    keep: bool,
}

impl CreatedDirs {
    pub(crate) fn new(ws: &Arc<Workspace>) -> Self {
        CreatedDirs { ws: ws.clone(), dirs: Vec::new(), keep: false }
    }

    /// Records the parents of `path` missing now (call before creating them).
    pub(crate) fn note_missing(&mut self, path: &RelPath) {
        let Some(parent) = path.parent() else { return };
        let mut prefix = String::new();
        for seg in parent.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(seg);
            if self.dirs.contains(&prefix) {
                continue;
            }
            if let Err(e) = self.ws.dir().symlink_metadata(&prefix) {
                if e.kind() == std::io::ErrorKind::NotFound {
                    self.dirs.push(prefix.clone());
                }
            }
        }
    }

    pub(crate) fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        let mut dirs = std::mem::take(&mut self.dirs);
        dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
        for d in dirs {
            let _ = self.ws.dir().remove_dir(&d);
        }
    }
}

/// One section of the patch, resolved.
pub(crate) struct Entry {
    op: usize,
    /// Add: the write target; Delete: the name; Update: the file (followed); Update with Move
    /// to: the source name (not followed).
    src: Resolved,
    /// Update with Move to: the destination (a write target).
    dest: Option<Resolved>,
}

/// Everything resolved, before the locks.
pub struct Resolution {
    entries: Vec<Entry>,
    created: CreatedDirs,
}

impl Resolution {
    pub(crate) fn keys(&self) -> Vec<TargetKey> {
        self.entries.iter().flat_map(|e| std::iter::once(e.src.key()).chain(e.dest.as_ref().map(|d| d.key()))).collect()
    }
}

/// A name resolved without following its final component: its directory beneath the root.
pub(crate) fn resolve_name(ws: &Workspace, path: &RelPath) -> Result<Resolved> {
    let shown = path.as_str();
    let spelling = path.parent().unwrap_or(".");
    let dir = ws.dir().open_dir(spelling).map_err(|e| Error::from_io(&e, shown))?;
    let dir_id = write::dir_identity(&dir, shown)?;
    Ok(Resolved { dir, dir_id, dir_spelling: spelling.into(), name: OsString::from(path.file_name()) })
}

fn guarded_write_target(ws: &Arc<Workspace>, path: &RelPath, created: &mut CreatedDirs, req: &PatchRequest, cancel: &Cancel) -> Result<Resolved> {
    created.note_missing(path);
    let r = write::resolve_guarded(ws, path, cancel, req.guard.as_deref())?;
    if let Some(g) = &req.guard {
        g.check_landing(ws, path, &r.dir, &r.name)?;
    }
    Ok(r)
}

fn guarded_name(ws: &Workspace, path: &RelPath, req: &PatchRequest) -> Result<Resolved> {
    let r = resolve_name(ws, path)?;
    if let Some(g) = &req.guard {
        g.check_landing(ws, path, &r.dir, &r.name)?;
    }
    Ok(r)
}

/// Resolves every target (see the module docs). Nothing but missing parent directories is
/// created, and those are removed again when the patch does not go through.
pub fn resolve(ws: &Arc<Workspace>, req: &PatchRequest, cancel: &Cancel) -> Result<Resolution> {
    cancel.check()?;
    ws.check()?;
    // The guard sees every path before anything happens: one protected path refuses the
    // whole patch.
    if let Some(g) = &req.guard {
        for path in req.targets() {
            g.check_before(ws, path)?;
        }
    }
    let mut created = CreatedDirs::new(ws);
    let mut entries = Vec::with_capacity(req.patch.ops.len());
    for (i, op) in req.patch.ops.iter().enumerate() {
        cancel.check()?;
        let entry = match op {
            FileOp::Add { path, .. } => Entry { op: i, src: guarded_write_target(ws, path, &mut created, req, cancel)?, dest: None },
            FileOp::Delete { path, .. } => Entry { op: i, src: guarded_name(ws, path, req)?, dest: None },
            FileOp::Update { path, move_to: None, .. } => {
                Entry { op: i, src: guarded_write_target(ws, path, &mut created, req, cancel)?, dest: None }
            }
            FileOp::Update { path, move_to: Some(to), .. } => {
                let src = guarded_name(ws, path, req)?;
                let dest = guarded_write_target(ws, to, &mut created, req, cancel)?;
                Entry { op: i, src, dest: Some(dest) }
            }
        };
        entries.push(entry);
    }
    // Two paths landing on one file (a link and its target, a file updated and moved onto).
    let mut keys: Vec<(TargetKey, &str)> = Vec::new();
    for e in &entries {
        let op = &req.patch.ops[e.op];
        let mut named = vec![(e.src.key(), op.path().as_str())];
        if let (Some(d), FileOp::Update { move_to: Some(to), .. }) = (&e.dest, op) {
            named.push((d.key(), to.as_str()));
        }
        for (k, shown) in named {
            if let Some((_, other)) = keys.iter().find(|(x, _)| *x == k) {
                return Err(Error::invalid(
                    Reason::PatchInvalid,
                    format!("{other} and {shown} are the same file; give each file one section"),
                )
                .with_details(serde_json::json!({ "paths": [other, shown] })));
            }
            keys.push((k, shown));
        }
    }
    Ok(Resolution { entries, created })
}

/// What the compute step found for one entry.
struct Computed {
    /// The state of the source name when computed (its identity is rechecked).
    src_before: Existing,
    /// The destination's state (Move to).
    dest_before: Option<Existing>,
    /// New content (Add, Update).
    content: Option<String>,
    /// Old text (Update), for the diff.
    old: Option<String>,
    loosest: Pass,
    mode: u32,
}

#[cfg(test)]
pub(crate) mod hooks {
    use std::cell::RefCell;
    thread_local! {
        /// Fail the install step with this index with this errno.
        pub static FAIL_STEP: RefCell<Option<(usize, i32)>> = const { RefCell::new(None) };
        /// Make the hard link of an old file fail with this errno (the staged-copy fallback).
        pub static LINK_ERRNO: RefCell<Option<i32>> = const { RefCell::new(None) };
        /// Called after staging, before the recheck.
        pub static STAGED: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }
}

fn injected(step: usize) -> Option<i32> {
    #[cfg(test)]
    if let Some((at, errno)) = hooks::FAIL_STEP.with(|h| *h.borrow()) {
        if at == step {
            return Some(errno);
        }
    }
    let _ = step;
    None
}

fn staged_hook() {
    #[cfg(test)]
    hooks::STAGED.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f()
        }
    });
}

pub(crate) fn exists_error(shown: &str, what: &str) -> Error {
    Error::new(Code::FileExists, format!("{shown} already exists"))
        .with_hint(format!(
            "{what}; read the existing file and change it with *** Update File, or delete it first (*** Delete File) in the same patch is not allowed: pick another path"
        ))
        .with_details(serde_json::json!({ "path": shown }))
}

pub(crate) fn read_text(file: std::fs::File, shown: &str, max: usize) -> Result<(Vec<u8>, String)> {
    let mut bytes = Vec::new();
    (&file).take(max as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(&e, shown))?;
    if bytes.len() > max {
        return Err(Error::new(Code::FileTooLarge, format!("{shown} is larger than {max} bytes"))
            .with_hint(format!("apply_patch updates files of at most {max} bytes; replace it whole with write_file if the new content fits"))
            .with_details(serde_json::json!({ "limit": max })));
    }
    let text = crate::read::decode_text(shown, bytes.clone(), "apply_patch changes text files only")?;
    Ok((bytes, text))
}

fn mode_of(e: Existing) -> u32 {
    match e {
        Existing::Regular { mode, .. } => mode,
        _ => write::NEW_FILE_MODE,
    }
}

fn lstat(r: &Resolved, shown: &str) -> Result<Existing> {
    lstat_at(&r.dir, &r.name).map_err(|e| Error::from_io(&e, shown))
}

fn compute(req: &PatchRequest, e: &Entry, cancel: &Cancel, scan: &mut ScanBudget) -> Result<Computed> {
    let op = &req.patch.ops[e.op];
    let shown = op.path().as_str();
    let max = req.max_bytes;
    let expected = |path: &str| req.expected.get(path).map(String::as_str);
    match op {
        FileOp::Add { content, .. } => {
            let before = lstat(&e.src, shown)?;
            match before {
                Existing::Absent => {}
                Existing::Other("directory") => return Err(exists_error(shown, "a directory has this name")),
                _ => return Err(exists_error(shown, "*** Add File creates a new file only")),
            }
            if let Some(h) = expected(shown) {
                if h != crate::hash::ABSENT {
                    return Err(write::hash_mismatch(shown, h, crate::hash::ABSENT));
                }
            }
            Ok(Computed { src_before: before, dest_before: None, content: Some(content.clone()), old: None, loosest: Pass::Exact, mode: write::NEW_FILE_MODE })
        }
        FileOp::Delete { .. } => {
            let before = lstat(&e.src, shown)?;
            match before {
                Existing::Absent => return Err(Error::not_found(shown)),
                Existing::Other("directory") => {
                    return Err(Error::not_regular(shown, "directory")
                        .with_hint("*** Delete File removes a file or symlink; remove an empty directory with delete_file"))
                }
                Existing::Other(kind) => return Err(Error::not_regular(shown, kind)),
                Existing::Regular { .. } | Existing::Symlink => {}
            }
            if let Some(h) = expected(shown) {
                let now = crate::write::name_state(&e.src.dir, &e.src.name, shown, cancel)?;
                if now != h {
                    return Err(write::hash_mismatch(shown, h, &now));
                }
            }
            Ok(Computed { src_before: before, dest_before: None, content: None, old: None, loosest: Pass::Exact, mode: 0 })
        }
        FileOp::Update { hunks, move_to, .. } => {
            let before = lstat(&e.src, shown)?;
            if move_to.is_some() && before == Existing::Symlink {
                return Err(Error::not_regular(shown, "symlink")
                    .with_hint("*** Move to moves regular files; move a symlink itself with move_file"));
            }
            // An update changes the file's content, moved or not: a file the caller could not
            // open for writing is refused here, before any file of the patch changes.
            if let Existing::Regular { .. } = before {
                write::check_writable(&e.src.dir, &e.src.name, shown)?;
            }
            let file = match open_at(&e.src.dir, &e.src.name, shown)? {
                AtTarget::Absent => {
                    return Err(Error::new(Code::FileNotFound, format!("{shown} does not exist"))
                        .with_hint("*** Update File changes an existing file; create a new one with *** Add File, or list the directory to find the right path"))
                }
                AtTarget::Other(kind) => return Err(Error::not_regular(shown, kind)),
                AtTarget::File(f) => f,
            };
            let (bytes, text) = read_text(file, shown, max)?;
            if let Some(h) = expected(shown) {
                let now = sha256_hex(&bytes);
                if now != h {
                    return Err(write::hash_mismatch(shown, h, &now));
                }
            }
            cancel.check()?;
            let updated = locate::apply_hunks(shown, &text, hunks, cancel, scan)?;
            if updated.content.len() > max {
                return Err(Error::invalid(
                    Reason::ContentTooLarge,
                    format!("after this patch {shown} would be {} UTF-8 bytes; files written here hold at most {max}: make the change smaller", updated.content.len()),
                )
                .with_details(serde_json::json!({ "path": shown, "bytes": updated.content.len(), "limit": max })));
            }
            let mut dest_before = None;
            if let (Some(d), Some(to)) = (&e.dest, move_to) {
                let dshown = to.as_str();
                let db = lstat(d, dshown)?;
                if db != Existing::Absent {
                    return Err(exists_error(dshown, "*** Move to needs a free name"));
                }
                if let Some(h) = expected(dshown) {
                    if h != crate::hash::ABSENT {
                        return Err(write::hash_mismatch(dshown, h, crate::hash::ABSENT));
                    }
                }
                dest_before = Some(db);
            }
            Ok(Computed {
                src_before: before,
                dest_before,
                content: Some(updated.content),
                old: Some(text),
                loosest: updated.loosest,
                mode: mode_of(before),
            })
        }
    }
}

/// LF text without a BOM, for the diff.
pub(crate) fn for_diff(s: &str) -> String {
    s.strip_prefix('\u{feff}').unwrap_or(s).replace("\r\n", "\n")
}

/// A name under which this call keeps an old file until the end (a hard link or a renamed
/// name); removed at the end unless it was renamed back.
struct Kept<'a> {
    dir: &'a Dir,
    name: OsString,
    id: Identity,
    live: bool,
}

impl Drop for Kept<'_> {
    fn drop(&mut self) {
        if self.live && matches!(write::identity_at(self.dir, &self.name), Ok(Some(id)) if id == self.id) {
            let _ = rustix::fs::unlinkat(self.dir, &self.name, AtFlags::empty());
        }
    }
}

/// Links the file at `r` (identity `id`) under a fresh staged name.
fn keep_link<'a>(r: &'a Resolved, id: Identity, shown: &str) -> Result<Kept<'a>> {
    #[cfg(test)]
    if let Some(errno) = hooks::LINK_ERRNO.with(|h| *h.borrow()) {
        return Err(Error::from_io(&std::io::Error::from_raw_os_error(errno), shown));
    }
    for _ in 0..16 {
        let name = OsString::from(write::temp_name());
        match rustix::fs::linkat(&r.dir, &r.name, &r.dir, &name, AtFlags::empty()) {
            Ok(()) => {
                let mut kept = Kept { dir: &r.dir, name, id, live: true };
                match write::identity_at(&r.dir, &kept.name) {
                    Ok(Some(now)) if now == id => return Ok(kept),
                    Ok(Some(now)) => {
                        // Linked something else (the target was swapped): not ours to keep.
                        kept.id = now;
                        return Err(changed(shown, "target"));
                    }
                    _ => {
                        kept.live = false;
                        return Err(changed(shown, "target"));
                    }
                }
            }
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(Error::from_io(&io_err(e), shown)),
        }
    }
    Err(Error::from_io(&io_err(rustix::io::Errno::EXIST), shown))
}

/// Keeps the old file at `r`: a hard link where the file system allows one (the same inode
/// comes back on a rollback), else a staged copy of its bytes (`old`, as read under the lock).
fn keep_old<'a>(r: &'a Resolved, id: Identity, shown: &str, old: &[u8], mode: u32, before: Existing) -> Result<Kept<'a>> {
    match keep_link(r, id, shown) {
        Ok(k) => Ok(k),
        Err(e) if e.code == Code::IoError => {
            let mut copy = stage(r, shown, old, mode, before)?;
            copy.link().map_err(|e| Error::from_io(&e, shown))?;
            // From now on the Kept owns the name.
            let name = copy.take_name().expect("linked above");
            Ok(Kept { dir: &r.dir, name, id: copy.id, live: true })
        }
        Err(e) => Err(e),
    }
}

fn rename(from_dir: &Dir, from: &OsStr, to_dir: &Dir, to: &OsStr, noreplace: bool) -> std::io::Result<()> {
    let flags = if noreplace { RenameFlags::NOREPLACE } else { RenameFlags::empty() };
    rustix::fs::renameat_with(from_dir, from, to_dir, to, flags).map_err(io_err)
}

/// One install step, and how to undo it.
enum Step<'a> {
    /// A staged content renamed over (or onto) a target.
    Write { at: &'a Resolved, shown: &'a str, temp: usize, old: Option<usize>, noreplace: bool },
    /// A name renamed away onto a staged name (a Delete, a Move's source).
    Remove { at: &'a Resolved, shown: &'a str, expect: Existing },
}

/// Runs the transaction under every lock (see the module docs).
pub fn run(ws: &Arc<Workspace>, req: &PatchRequest, resolution: Resolution, cancel: &Cancel) -> Result<PatchOutput> {
    // Declared first, dropped last: created directories are removed after the temps in them.
    let Resolution { entries, mut created } = resolution;
    let entries = &entries;
    cancel.check()?;
    ws.check()?;
    // 1. Compute.
    let mut scan = ScanBudget::default();
    let mut computed = Vec::with_capacity(entries.len());
    for e in entries {
        cancel.check()?;
        computed.push(compute(req, e, cancel, &mut scan)?);
    }
    let mut budget = diff::Budget::default();
    let mut diff_text = String::new();
    let mut notes = Vec::new();
    let mut files = Vec::with_capacity(entries.len());
    for (e, c) in entries.iter().zip(&computed) {
        let op = &req.patch.ops[e.op];
        let shown = op.path().as_str();
        match op {
            FileOp::Add { content, .. } => {
                diff::file_diff(&mut diff_text, "/dev/null", &format!("b/{shown}"), "", &for_diff(content), &mut budget, cancel)?;
                files.push(FileResult { path: shown.into(), action: "add", moved_to: None, bytes: Some(content.len()) });
            }
            FileOp::Delete { .. } => {
                diff_text.push_str(&format!("--- a/{shown}\n+++ /dev/null\n"));
                files.push(FileResult { path: shown.into(), action: "delete", moved_to: None, bytes: None });
            }
            FileOp::Update { move_to, .. } => {
                let new = c.content.as_deref().unwrap_or("");
                let to = move_to.as_ref().map_or(shown, |t| t.as_str());
                diff::file_diff(&mut diff_text, &format!("a/{shown}"), &format!("b/{to}"), &for_diff(c.old.as_deref().unwrap_or("")), &for_diff(new), &mut budget, cancel)?;
                if c.loosest != Pass::Exact {
                    notes.push(format!("{shown}: hunks matched {}", c.loosest.describe()));
                }
                files.push(FileResult {
                    path: shown.into(),
                    action: "update",
                    moved_to: move_to.as_ref().map(|t| t.as_str().to_string()),
                    bytes: Some(new.len()),
                });
            }
        }
    }
    let diff_text = diff::bound(diff_text);

    // 2. Stage, in directories rid of what a killed host left there.
    cancel.check()?;
    let mut swept: Vec<Identity> = Vec::new();
    for e in entries {
        for r in std::iter::once(&e.src).chain(e.dest.as_ref()) {
            if !swept.contains(&r.dir_id) {
                write::sweep(&r.dir);
                swept.push(r.dir_id);
            }
        }
    }
    let mut temps: Vec<Temp> = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    let mut steps: Vec<Step> = Vec::new();
    let total = entries.len() as u64;
    for (i, (e, c)) in entries.iter().zip(&computed).enumerate() {
        let op = &req.patch.ops[e.op];
        let shown = op.path().as_str();
        cancel.progress().count(i as u64, Some(total), || format!("{i} of {total} files staged"));
        match op {
            FileOp::Add { .. } | FileOp::Update { move_to: None, .. } => {
                let temp = stage(&e.src, shown, c.content.as_deref().unwrap_or("").as_bytes(), c.mode, c.src_before)?;
                temps.push(temp);
                let old = match c.src_before {
                    Existing::Regular { id, .. } => {
                        kept.push(keep_old(&e.src, id, shown, c.old.as_deref().unwrap_or("").as_bytes(), c.mode, c.src_before)?);
                        Some(kept.len() - 1)
                    }
                    _ => None,
                };
                steps.push(Step::Write { at: &e.src, shown, temp: temps.len() - 1, old, noreplace: old.is_none() });
            }
            FileOp::Delete { .. } => steps.push(Step::Remove { at: &e.src, shown, expect: c.src_before }),
            FileOp::Update { move_to: Some(to), .. } => {
                let dest = e.dest.as_ref().expect("a move has a destination");
                let temp = stage(dest, to.as_str(), c.content.as_deref().unwrap_or("").as_bytes(), c.mode, c.src_before)?;
                temps.push(temp);
                steps.push(Step::Write { at: dest, shown: to.as_str(), temp: temps.len() - 1, old: None, noreplace: true });
                steps.push(Step::Remove { at: &e.src, shown, expect: c.src_before });
            }
        }
    }
    cancel.progress().count(total, Some(total), || format!("{total} of {total} files staged"));
    staged_hook();

    // 3. Recheck: the last point where the patch can stop without a change.
    for t in &temps {
        if !t.still_named() {
            return Err(changed("apply_patch", "temporary file"));
        }
    }
    cancel.check()?;
    ws.check()?;
    for (e, c) in entries.iter().zip(&computed) {
        let op = &req.patch.ops[e.op];
        recheck(ws, &e.src, op.path().as_str(), c.src_before)?;
        if let (Some(d), Some(db), FileOp::Update { move_to: Some(to), .. }) = (&e.dest, c.dest_before, op) {
            recheck(ws, d, to.as_str(), db)?;
        }
    }

    // 4. Install.
    let mut done: Vec<(usize, Option<Kept>)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let result = match step {
            Step::Write { at, temp, noreplace, .. } => match injected(i) {
                Some(errno) => Err(std::io::Error::from_raw_os_error(errno)),
                // The staged content gets its name only now, for the instant of the rename.
                None => temps[*temp]
                    .link()
                    .map(|n| n.to_os_string())
                    .and_then(|n| rename(&at.dir, &n, &at.dir, &at.name, *noreplace))
                    .map(|()| None),
            },
            Step::Remove { at, shown, expect } => match injected(i) {
                Some(errno) => Err(std::io::Error::from_raw_os_error(errno)),
                None => remove_to_kept(at, shown, *expect),
            },
        };
        match result {
            Ok(k) => {
                if let Step::Write { temp, .. } = step {
                    temps[*temp].installed = true;
                }
                done.push((i, k));
            }
            Err(err) => {
                let shown = match step {
                    Step::Write { shown, .. } | Step::Remove { shown, .. } => *shown,
                };
                let mut failures = Vec::new();
                for (j, k) in done.into_iter().rev() {
                    if let Err(f) = undo(&steps[j], &temps, &mut kept, k) {
                        failures.push(f);
                    }
                }
                let base = if err.raw_os_error() == Some(libc::EEXIST) {
                    exists_error(shown, "something took this name while the patch ran")
                } else {
                    Error::from_io(&err, shown)
                };
                let hint = base.hint.clone().unwrap_or_default();
                return Err(base
                    .with_hint(if failures.is_empty() {
                        format!("{hint} (no file was changed: the files already installed were put back)")
                    } else {
                        format!("{hint} (putting back {} failed: check those files)", failures.join(", "))
                    })
                    .with_details(serde_json::json!({ "path": shown, "restored": failures.is_empty(), "notRestored": failures })));
            }
        }
    }
    // 5. Durability and cleanup (the kept old contents are removed on drop).
    let mut synced: Vec<Identity> = Vec::new();
    for e in entries {
        for r in std::iter::once(&e.src).chain(e.dest.as_ref()) {
            if !synced.contains(&r.dir_id) {
                // Shared with the writes flushing the same directory at the same time.
                let _ = write::flush::flush_dir(&r.dir, r.dir_id, "");
                synced.push(r.dir_id);
            }
        }
    }
    created.keep();
    drop(done);
    drop(kept);
    Ok(PatchOutput { files, diff: diff_text, note: (!notes.is_empty()).then(|| notes.join("; ")) })
}

fn stage<'a>(at: &'a Resolved, shown: &str, content: &[u8], mode: u32, before: Existing) -> Result<Temp<'a>> {
    let mut temp = Temp::create(&at.dir, shown)?;
    let io = |e: std::io::Error| Error::from_io(&e, shown);
    temp.file.write_all(content).map_err(io)?;
    rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode)).map_err(|e| io(io_err(e)))?;
    if let Existing::Regular { uid, gid, .. } = before {
        write::keep_owner(&temp.file, uid, gid, mode).map_err(io)?;
    }
    temp.file.sync_all().map_err(io)?;
    Ok(temp)
}

fn same(a: Existing, b: Existing) -> bool {
    match (a, b) {
        (Existing::Regular { id: x, .. }, Existing::Regular { id: y, .. }) => x == y,
        (x, y) => x == y,
    }
}

fn recheck(ws: &Workspace, r: &Resolved, shown: &str, before: Existing) -> Result<()> {
    match ws.dir().metadata(&r.dir_spelling) {
        Ok(meta) if meta.is_dir() && Identity::of_cap(&meta) == r.dir_id => {}
        _ => return Err(changed(shown, "parent directory")),
    }
    let now = lstat(r, shown)?;
    if !same(before, now) {
        return Err(changed(shown, "target"));
    }
    Ok(())
}

/// Renames the name at `at` away onto a staged name; the old file stays there until the end.
fn remove_to_kept<'a>(at: &'a Resolved, shown: &str, expect: Existing) -> std::io::Result<Option<Kept<'a>>> {
    let _ = shown;
    for _ in 0..16 {
        let name = OsString::from(write::temp_name());
        match rename(&at.dir, &at.name, &at.dir, &name, true) {
            Ok(()) => {
                let id = match write::identity_at(&at.dir, &name) {
                    Ok(Some(id)) => id,
                    _ => Identity { dev: 0, ino: 0 },
                };
                if let Existing::Regular { id: want, .. } = expect {
                    if id != want {
                        // Someone swapped the file in between: put theirs back, report it.
                        let _ = rename(&at.dir, &name, &at.dir, &at.name, true);
                        return Err(std::io::Error::from_raw_os_error(libc::ESTALE));
                    }
                }
                return Ok(Some(Kept { dir: &at.dir, name, id, live: true }));
            }
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::from_raw_os_error(libc::EEXIST))
}

/// A staged name left on purpose (the only copy of an old content a failed undo could not put
/// back) is renamed to a plain random `.workcell-tmp-*` name, which no sweep removes; the name
/// it is under in the end.
fn preserve(at: &Resolved, name: &OsStr) -> OsString {
    for _ in 0..16 {
        let plain = OsString::from(crate::temp_name::random_name(write::TEMP_PREFIX, 12));
        match rename(&at.dir, name, &at.dir, &plain, true) {
            Ok(()) => return plain,
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
            Err(_) => break,
        }
    }
    name.to_os_string()
}

/// Undoes one install step. On failure, what could not be put back (and where its old
/// content was left: a staged name is never removed when it is the only copy).
fn undo(step: &Step, temps: &[Temp], kept: &mut [Kept], removed: Option<Kept>) -> std::result::Result<(), String> {
    match step {
        Step::Write { at, shown, old: Some(k), .. } => {
            let keep = &mut kept[*k];
            // Either way the staged name must not be removed now: renamed back, it is the file.
            keep.live = false;
            rename(&at.dir, &keep.name, &at.dir, &at.name, false)
                .map_err(|_| format!("{shown} (its old content is kept as {})", preserve(at, &keep.name).to_string_lossy()))
        }
        Step::Write { at, shown, temp, old: None, .. } => {
            let id = temps[*temp].id;
            match write::identity_at(&at.dir, &at.name) {
                Ok(Some(now)) if now == id => {
                    rustix::fs::unlinkat(&at.dir, &at.name, AtFlags::empty()).map_err(|_| shown.to_string())
                }
                _ => Err(shown.to_string()),
            }
        }
        Step::Remove { at, shown, .. } => {
            let Some(mut k) = removed else { return Err(shown.to_string()) };
            k.live = false;
            rename(&at.dir, &k.name, &at.dir, &at.name, true)
                .map_err(|_| format!("{shown} (it is kept as {})", preserve(at, &k.name).to_string_lossy()))
        }
    }
}
