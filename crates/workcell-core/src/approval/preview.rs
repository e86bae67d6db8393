//! Previews: the change of a writing call, computed without effects.
//!
//! Each preview resolves its targets beneath the root without creating anything (a missing
//! parent means a free name), checks the write guard on the paths as named, reads what the
//! change replaces and computes the change exactly as the call would (the same edit and hunk
//! code), then returns it without installing. `files` holds, for every path the call touches
//! (both names of a move), the string the later check compares: [`crate::hash::hash_file`]'s
//! for a file written through (`"absent"` for a free name, which must then still be free), and
//! [`crate::write::name_state`]'s for a name acted on itself (a move's or a delete's: a symlink
//! is described by its text). No lock is held: the approval that follows may take as long as a
//! person needs without blocking any other call.
//!
//! What a person approves is every byte of the change: the diffs here are never cut and never
//! omitted (a region too costly to diff line by line is shown removed and added whole), and
//! each file's part is given on its own (`diffs`), so a view that can show only part of a
//! change can still name every file and say what it leaves out. Their size is bounded by the
//! call's own limits (a patch's 256 KiB, a written file's `maxBytes`).

use std::io::{Read as _, Seek as _};
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::diff;
use crate::edit::EditRequest;
use crate::error::{Code, Error, Result};
use crate::fileops::{DeleteRequest, MkdirRequest, MoveRequest};
use crate::guard::Guard;
use crate::hash::{digest, sha256_hex, ABSENT};
use crate::write::name_state;
use crate::patch::parse::FileOp;
use crate::patch::plan::{exists_error, for_diff, read_text};
use crate::patch::PatchRequest;
use crate::path::RelPath;
use crate::root::Workspace;
use crate::write::{self, hash_mismatch, open_at, resolve_existing, AtTarget, Resolved, WriteRequest};

/// What a person is shown before a writing call runs. Serializes as `{ summary, diff?,
/// diffs?: [{ path, diff, added, removed }], files: [{ path, hash }] }`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "ApprovalPreview")]
pub struct Preview {
    /// One line: `edit_file src/a.ts: +3 -1`.
    pub summary: String,
    /// The unified diff of the whole change, every changed line of every file (never cut);
    /// `None` where there is no content change to show (move_file, make_directory).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// Each file's part of `diff`, in call order (`diff` is their concatenation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diffs: Vec<FileDiff>,
    /// `(path, approval string)` of every path the call touches, in call order.
    #[serde(serialize_with = "path_hashes")]
    #[schemars(with = "Vec<PathHash>")]
    pub files: Vec<(String, String)>,
}

/// The form of each of a preview's `files` (see `path_hashes`).
#[derive(schemars::JsonSchema)]
#[schemars(inline)]
#[allow(dead_code)]
struct PathHash {
    path: String,
    hash: String,
}

/// One file's part of a preview's diff.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct FileDiff {
    /// The path the call names (a move's source; its destination is in the diff's `+++` line).
    pub path: String,
    /// The file's whole unified diff: its `---`/`+++` header lines, then every hunk.
    pub diff: String,
    /// Lines added and removed.
    pub added: usize,
    pub removed: usize,
}

impl FileDiff {
    pub(crate) fn new(path: &str, diff: String) -> FileDiff {
        let (mut added, mut removed) = (0usize, 0usize);
        // The two header lines and any note before the first hunk are not changed lines
        // (counting by prefix would take a removed line "-- x", shown "--- x", for a header).
        let mut in_hunk = false;
        for line in diff.lines() {
            if line.starts_with("@@") {
                in_hunk = true;
            } else if in_hunk && line.starts_with('+') {
                added += 1;
            } else if in_hunk && line.starts_with('-') {
                removed += 1;
            }
        }
        FileDiff { path: path.to_string(), diff, added, removed }
    }
}

/// The whole diff and the summary's counts of a preview's per-file diffs.
fn joined(diffs: &[FileDiff]) -> (String, String) {
    let text: String = diffs.iter().map(|d| d.diff.as_str()).collect();
    let (a, r) = diffs.iter().fold((0, 0), |(a, r), d| (a + d.added, r + d.removed));
    (text, format!("+{a} -{r}"))
}

fn path_hashes<S: serde::Serializer>(files: &[(String, String)], s: S) -> std::result::Result<S::Ok, S::Error> {
    #[derive(serde::Serialize)]
    struct PathHash<'a> {
        path: &'a str,
        hash: &'a str,
    }
    s.collect_seq(files.iter().map(|(path, hash)| PathHash { path, hash }))
}

/// Longest summary line, in bytes.
pub const MAX_SUMMARY_BYTES: usize = 300;

fn before(ws: &Workspace, guard: Option<&Guard>, paths: &[&RelPath], cancel: &Cancel) -> Result<()> {
    cancel.check()?;
    ws.check()?;
    if let Some(g) = guard {
        for p in paths {
            g.check_before(ws, p)?;
        }
    }
    Ok(())
}

fn bounded(mut s: String) -> String {
    if s.len() > MAX_SUMMARY_BYTES {
        let mut cut = MAX_SUMMARY_BYTES - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

/// What a write to `path` would replace: its approval string and, when it is a small UTF-8
/// file, its text (for the diff).
enum Old {
    Absent,
    Text(String),
    /// Too large or not UTF-8: hashed, not shown.
    Unshown(String),
}

fn current(ws: &Workspace, path: &RelPath, max: usize, cancel: &Cancel) -> Result<(String, Old, Option<Resolved>)> {
    let shown = path.as_str();
    let Some(target) = resolve_existing(ws, path, cancel)? else {
        return Ok((ABSENT.to_string(), Old::Absent, None));
    };
    let mut file = match open_at(&target.dir, &target.name, shown)? {
        AtTarget::Absent => return Ok((ABSENT.to_string(), Old::Absent, Some(target))),
        AtTarget::Other(kind) => return Err(Error::not_regular(shown, kind)),
        AtTarget::File(f) => f,
    };
    let mut bytes = Vec::new();
    (&file).take(max as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(&e, shown))?;
    if bytes.len() > max {
        file.rewind().map_err(|e| Error::from_io(&e, shown))?;
        let hash = digest(&file, shown, cancel)?;
        return Ok((hash, Old::Unshown(format!("the old content is larger than {max} bytes")), Some(target)));
    }
    let hash = sha256_hex(&bytes);
    match String::from_utf8(bytes) {
        Ok(text) => Ok((hash, Old::Text(text), Some(target))),
        Err(_) => Ok((hash, Old::Unshown("the old content is not UTF-8 text".into()), Some(target))),
    }
}

fn expect(shown: &str, expected: Option<&str>, now: &str) -> Result<()> {
    match expected {
        Some(h) if h != now => Err(hash_mismatch(shown, h, now)),
        _ => Ok(()),
    }
}

/// write_file's preview.
pub fn preview_write(ws: &Workspace, req: &WriteRequest, cancel: &Cancel) -> Result<Preview> {
    let shown = req.path.as_str();
    before(ws, req.guard.as_deref(), &[&req.path], cancel)?;
    let (hash, old, _) = current(ws, &req.path, req.content.len().max(write::MAX_WRITE_BYTES), cancel)?;
    expect(shown, req.expected_hash.as_deref(), &hash)?;
    let mut budget = diff::Budget::complete();
    let mut text = String::new();
    let new = for_diff(&req.content);
    let what = match &old {
        Old::Absent => {
            diff::file_diff(&mut text, "/dev/null", &format!("b/{shown}"), "", &new, &mut budget, cancel)?;
            None
        }
        Old::Text(t) => {
            diff::file_diff(&mut text, &format!("a/{shown}"), &format!("b/{shown}"), &for_diff(t), &new, &mut budget, cancel)?;
            None
        }
        Old::Unshown(why) => {
            // The old content is not shown, but all of it goes: the new content is shown whole.
            let mut added = String::new();
            diff::file_diff(&mut added, "/dev/null", &format!("b/{shown}"), "", &new, &mut budget, cancel)?;
            let hunks = added.split_once("\n+++ ").and_then(|(_, rest)| rest.split_once('\n')).map_or("", |(_, h)| h);
            text.push_str(&format!("--- a/{shown}\n+++ b/{shown}\n... {why}: it is not shown and is replaced whole by the lines below\n{hunks}"));
            Some(format!("replaces the whole file ({why})"))
        }
    };
    let file = FileDiff::new(shown, text);
    let (text, counted) = joined(std::slice::from_ref(&file));
    let what = match (&old, what) {
        (_, Some(w)) => format!("{w}, {counted}"),
        (Old::Absent, None) => format!("new file, {counted}"),
        (_, None) => counted,
    };
    Ok(Preview {
        summary: bounded(format!("write_file {shown}: {what}")),
        diff: Some(text),
        diffs: vec![file],
        files: vec![(shown.to_string(), hash)],
    })
}

/// edit_file's preview: the edit's own computation, without the install.
pub fn preview_edit(ws: &Workspace, req: &EditRequest, cancel: &Cancel) -> Result<Preview> {
    let shown = req.path.as_str();
    before(ws, req.guard.as_deref(), &[&req.path], cancel)?;
    let Some(target) = resolve_existing(ws, &req.path, cancel)? else {
        return Err(crate::edit::missing(shown));
    };
    let (hash, applied) = req.compute(&target, true, cancel)?;
    let file = FileDiff::new(shown, applied.diff);
    let (text, counted) = joined(std::slice::from_ref(&file));
    Ok(Preview {
        summary: bounded(format!("edit_file {shown}: {counted}")),
        diff: Some(text),
        diffs: vec![file],
        files: vec![(shown.to_string(), hash)],
    })
}

/// The parent of a name acted on itself (not followed), or `None` when it is missing.
fn name_existing(ws: &Workspace, path: &RelPath) -> Result<Option<Resolved>> {
    match crate::patch::plan::resolve_name(ws, path) {
        Ok(r) => Ok(Some(r)),
        Err(e) if e.code == Code::FileNotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn state_of_name(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<(String, Option<Resolved>)> {
    match name_existing(ws, path)? {
        None => Ok((ABSENT.to_string(), None)),
        Some(r) => Ok((name_state(&r.dir, &r.name, path.as_str(), cancel)?, Some(r))),
    }
}

/// apply_patch's preview: every section computed as the patch would (the same hunk code),
/// nothing staged.
pub fn preview_patch(ws: &Arc<Workspace>, req: &PatchRequest, cancel: &Cancel) -> Result<Preview> {
    before(ws, req.guard.as_deref(), &req.targets(), cancel)?;
    let max = req.max_bytes;
    let expected = |path: &str| req.expected.get(path).map(String::as_str);
    let mut scan = crate::patch::locate::ScanBudget::default();
    let mut budget = diff::Budget::complete();
    let mut diffs = Vec::new();
    let mut files = Vec::new();
    let mut names = Vec::new();
    for op in &req.patch.ops {
        cancel.check()?;
        let shown = op.path().as_str();
        match op {
            FileOp::Add { content, .. } => {
                let (hash, _, _) = current(ws, op.path(), max, cancel)?;
                if hash != ABSENT {
                    return Err(exists_error(shown, "*** Add File creates a new file only"));
                }
                expect(shown, expected(shown), &hash)?;
                let mut text = String::new();
                diff::file_diff(&mut text, "/dev/null", &format!("b/{shown}"), "", &for_diff(content), &mut budget, cancel)?;
                diffs.push(FileDiff::new(shown, text));
                files.push((shown.to_string(), hash));
                names.push(format!("+{shown}"));
            }
            FileOp::Delete { .. } => {
                let (state, _) = state_of_name(ws, op.path(), cancel)?;
                if state == ABSENT {
                    return Err(Error::not_found(shown));
                }
                expect(shown, expected(shown), &state)?;
                diffs.push(FileDiff::new(shown, format!("--- a/{shown}\n+++ /dev/null\n")));
                files.push((shown.to_string(), state));
                names.push(format!("-{shown}"));
            }
            FileOp::Update { hunks, move_to, .. } => {
                // In place the file is written through a final symlink; moved, the name itself.
                let target = match move_to {
                    None => resolve_existing(ws, op.path(), cancel)?,
                    Some(_) => name_existing(ws, op.path())?,
                };
                let missing = || {
                    Error::new(Code::FileNotFound, format!("{shown} does not exist"))
                        .with_hint("*** Update File changes an existing file; create a new one with *** Add File, or list the directory to find the right path")
                };
                let Some(target) = target else { return Err(missing()) };
                let file = match open_at(&target.dir, &target.name, shown)? {
                    AtTarget::Absent => return Err(missing()),
                    AtTarget::Other(kind) => return Err(Error::not_regular(shown, kind)),
                    AtTarget::File(f) => f,
                };
                let (bytes, old) = read_text(file, shown, max)?;
                let hash = sha256_hex(&bytes);
                expect(shown, expected(shown), &hash)?;
                let updated = crate::patch::locate::apply_hunks(shown, &old, hunks, cancel, &mut scan)?;
                if updated.content.len() > max {
                    return Err(Error::invalid(
                        crate::error::Reason::ContentTooLarge,
                        format!("after this patch {shown} would be {} UTF-8 bytes; files written here hold at most {max}: make the change smaller", updated.content.len()),
                    ));
                }
                files.push((shown.to_string(), hash));
                let to = move_to.as_ref().map_or(shown, |t| t.as_str());
                if let Some(dest) = move_to {
                    let (dh, _, _) = current(ws, dest, max, cancel)?;
                    if dh != ABSENT {
                        return Err(exists_error(dest.as_str(), "*** Move to needs a free name"));
                    }
                    expect(dest.as_str(), expected(dest.as_str()), &dh)?;
                    files.push((dest.as_str().to_string(), dh));
                    names.push(format!("{shown} -> {to}"));
                } else {
                    names.push(shown.to_string());
                }
                let mut text = String::new();
                diff::file_diff(&mut text, &format!("a/{shown}"), &format!("b/{to}"), &for_diff(&old), &for_diff(&updated.content), &mut budget, cancel)?;
                diffs.push(FileDiff::new(shown, text));
            }
        }
    }
    let (text, counted) = joined(&diffs);
    let n = req.patch.ops.len();
    let summary = format!("apply_patch {n} file{}: {counted} ({})", if n == 1 { "" } else { "s" }, names.join(", "));
    Ok(Preview { summary: bounded(summary), diff: Some(text), diffs, files })
}

/// move_file's preview.
pub fn preview_move(ws: &Workspace, req: &MoveRequest, cancel: &Cancel) -> Result<Preview> {
    let (from, to) = (req.from.as_str(), req.to.as_str());
    before(ws, req.guard.as_deref(), &[&req.from, &req.to], cancel)?;
    let (src, _) = state_of_name(ws, &req.from, cancel)?;
    if src == ABSENT {
        return Err(Error::not_found(from));
    }
    let (dst, _) = state_of_name(ws, &req.to, cancel)?;
    let replaces = dst != ABSENT;
    if replaces && !req.overwrite {
        return Err(Error::new(Code::FileExists, format!("{to} already exists"))
            .with_hint("move_file does not replace an existing file unless overwrite is true; pick another name, or pass overwrite: true"));
    }
    let summary = format!("move_file {from} -> {to}{}", if replaces { " (replaces it)" } else { "" });
    Ok(Preview { summary: bounded(summary), diff: None, diffs: Vec::new(), files: vec![(from.into(), src), (to.into(), dst)] })
}

/// delete_file's preview: the removed file's content as a diff when it is small text.
pub fn preview_delete(ws: &Workspace, req: &DeleteRequest, cancel: &Cancel) -> Result<Preview> {
    let shown = req.path.as_str();
    before(ws, req.guard.as_deref(), &[&req.path], cancel)?;
    let (state, r) = state_of_name(ws, &req.path, cancel)?;
    if state == ABSENT {
        return Err(Error::not_found(shown));
    }
    let mut text = String::new();
    let mut what = state.clone();
    if let (Some(r), false) = (&r, state.starts_with("symlink: ") || state.starts_with("not a regular file")) {
        if let AtTarget::File(f) = open_at(&r.dir, &r.name, shown)? {
            let mut bytes = Vec::new();
            (&f).take(write::MAX_WRITE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(&e, shown))?;
            what = format!("file, {} bytes", bytes.len());
            match String::from_utf8(bytes) {
                Ok(old) if old.len() <= write::MAX_WRITE_BYTES => {
                    let mut budget = diff::Budget::complete();
                    diff::file_diff(&mut text, &format!("a/{shown}"), "/dev/null", &for_diff(&old), "", &mut budget, cancel)?;
                }
                _ => text.push_str(&format!("--- a/{shown}\n+++ /dev/null\n")),
            }
        }
    } else {
        text.push_str(&format!("--- a/{shown}\n+++ /dev/null\n"));
    }
    let file = FileDiff::new(shown, text);
    Ok(Preview {
        summary: bounded(format!("delete_file {shown}: {what}")),
        diff: Some(file.diff.clone()),
        diffs: vec![file],
        files: vec![(shown.into(), state)],
    })
}

/// make_directory's preview.
pub fn preview_mkdir(ws: &Workspace, req: &MkdirRequest, cancel: &Cancel) -> Result<Preview> {
    let shown = req.path.as_str();
    before(ws, req.guard.as_deref(), &[&req.path], cancel)?;
    let (state, _) = state_of_name(ws, &req.path, cancel)?;
    let what = if state == ABSENT { "new directory".to_string() } else { format!("exists ({state})") };
    Ok(Preview { summary: bounded(format!("make_directory {shown}: {what}")), diff: None, diffs: Vec::new(), files: vec![(shown.into(), state)] })
}

/// Runs a preview on the blocking pool from a host thread; `done` gets the outcome once.
pub fn spawn(
    cancel: Cancel,
    f: impl FnOnce(&Cancel) -> Result<Preview> + Send + 'static,
    done: impl FnOnce(Result<Preview>) + Send + 'static,
) {
    crate::fileops::spawn(
        async move {
            let c = cancel.clone();
            write::blocking(&cancel, move || f(&c)).await
        },
        done,
    )
}

#[cfg(test)]
mod tests;
