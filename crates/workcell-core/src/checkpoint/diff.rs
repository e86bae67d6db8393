//! `diff`: what changed since a checkpoint, whoever changed it.
//!
//! The workspace is walked as `create` walks it ([`super::scan`]) and compared with the
//! checkpoint's manifest, path by path: a path only in the checkpoint is `deleted`, only in the
//! workspace `added`; a file whose content differs is `modified` (a symlink whose text
//! differs too), one whose permission bits alone differ `mode`, a file that became a symlink
//! or the reverse `type`. A rename is a deletion and an addition. Files the checkpoint did not
//! keep (over `maxFileBytes`) are left out. A file's content is compared by SHA-256; the stat
//! cache spares reading files that did not change.
//!
//! The file list is complete. The unified diff is at most [`super::MAX_DIFF_BYTES`] (then
//! `truncated` and `[N more bytes]`); binary files (a NUL byte, or not UTF-8) are named, not
//! diffed, and so is a file over [`MAX_DIFF_FILE_BYTES`]. `hash` is the SHA-256 of the
//! change set: the checkpoint's id and, for each listed path, its state at the checkpoint and
//! now. The same workspace state gives the same hash, and a rewind proceeds only while it is
//! unchanged.

use std::io::Read as _;

use crate::cancel::Cancel;
use crate::diff as textdiff;
use crate::error::{Error, Result};
use crate::hash::Hasher;
use crate::walk::Kind;

use super::scan::{self, Record, Stat, State};
use super::survey;
use super::store::{escape, hex, Manifest};
use super::{Checkpoints, MAX_DIFF_BYTES, MAX_RECORDS};

/// Largest file (either side) whose lines are diffed.
pub const MAX_DIFF_FILE_BYTES: u64 = 1 << 20;

/// The hash recorded for a file now over `maxFileBytes` (never equal to a kept file's).
const UNREAD: [u8; 32] = [0xff; 32];

/// What happened to a path since the checkpoint (`mode`: only its permission bits; `type`: a
/// file became a symlink or the reverse).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "CheckpointAction")]
pub enum Action {
    Added,
    Modified,
    Deleted,
    Mode,
    Type,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Added => "added",
            Action::Modified => "modified",
            Action::Deleted => "deleted",
            Action::Mode => "mode",
            Action::Type => "type",
        }
    }

    fn reversed(self) -> Action {
        match self {
            Action::Added => Action::Deleted,
            Action::Deleted => Action::Added,
            other => other,
        }
    }
}

/// A changed path and what happened to it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct Changed {
    pub path: String,
    pub action: Action,
}

/// What changed since a checkpoint: the complete file list, a bounded unified diff, and the
/// hash `rewind` needs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "CheckpointDiff")]
pub struct DiffOutput {
    /// One line for a person.
    pub summary: String,
    /// Unified diff, at most 1 MiB (then `truncated` and `[N more bytes]`); binary files named.
    pub diff: String,
    /// Every changed path.
    pub files: Vec<Changed>,
    /// Identifies this change set: pass it to `rewind` as `expectedHash`.
    pub hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

/// One listed path: its state at the checkpoint and now (with what `lstat` said now).
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub path: Vec<u8>,
    pub action: Action,
    pub old: Option<State>,
    pub now: Option<(State, Stat)>,
}

/// The workspace now: every path the walk records, sorted by path bytes.
fn scan_now(cp: &Checkpoints, cancel: &Cancel) -> Result<Vec<(Vec<u8>, State, Stat)>> {
    let cache = cp.stat_cache(false);
    let mut out: Vec<(Vec<u8>, State, Stat)> = Vec::new();
    let mut buf = vec![0u8; 128 * 1024];
    survey::survey(&cp.ws, &cp.rules, cancel, "compared", &cache, cp.max_file_bytes, &mut |found| {
        if out.len() >= MAX_RECORDS {
            return Err(Error::new(crate::error::Code::FileTooLarge, format!("the workspace has more than {MAX_RECORDS} files and symlinks"))
                .with_hint("exclude generated or vendored trees (the exclude option, or .gitignore)"));
        }
        match found.kind {
            Kind::Symlink => {
                let Some(stat) = found.stat.filter(|s| s.kind() == Kind::Symlink) else { return Ok(()) };
                if let Ok(t) = found.dir.read_link(found.name()) {
                    out.push((found.path, State::Link { target: t.into_encoded_bytes() }, stat));
                }
            }
            Kind::File => {
                if let (Some(hash), Some(st)) = (found.cached, found.stat) {
                    out.push((found.path, State::File { mode: st.mode & 0o777, size: st.size, hash }, st));
                    return Ok(());
                }
                let shown = || scan::shown(&found.path);
                let (mut file, _) = match found.dir.open_regular(found.name()) {
                    Ok(Ok(f)) => f,
                    Ok(Err(_)) => return Ok(()),
                    Err(e) if crate::walk::is_swapped(&e) => return Ok(()),
                    Err(e) => return Err(Error::from_io(&e, &shown())),
                };
                let stat = Stat::of(&rustix::fs::fstat(&file).map_err(|e| Error::from_io(&e.into(), &shown()))?);
                let mode = stat.mode & 0o777;
                let hash = if stat.size > cp.max_file_bytes {
                    UNREAD
                } else if let Some(h) = cache.lookup(&found.path, &stat) {
                    h
                } else {
                    let mut hasher = Hasher::new();
                    loop {
                        cancel.check()?;
                        match file.read(&mut buf) {
                            Ok(0) => break,
                            Ok(n) => hasher.update(&buf[..n]),
                            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                            Err(e) => return Err(Error::from_io(&e, &shown())),
                        }
                    }
                    super::store::unhex(&hasher.finish()).expect("64 hex digits")
                };
                out.push((found.path, State::File { mode, size: stat.size, hash }, stat));
            }
            _ => {}
        }
        Ok(())
    })?;
    out.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    cp.keep_stat_cache(cache);
    Ok(out)
}

fn action(old: &State, now: &State) -> Option<Action> {
    match (old, now) {
        (State::File { mode: m0, size: s0, hash: h0 }, State::File { mode: m1, size: s1, hash: h1 }) => {
            if h0 != h1 || s0 != s1 {
                Some(Action::Modified)
            } else if m0 != m1 {
                Some(Action::Mode)
            } else {
                None
            }
        }
        (State::Link { target: a }, State::Link { target: b }) => (a != b).then_some(Action::Modified),
        _ => Some(Action::Type),
    }
}

/// Compares the checkpoint with the workspace now (the caller holds the store's lock).
pub(crate) fn changes(cp: &Checkpoints, manifest: &Manifest, cancel: &Cancel) -> Result<Vec<Change>> {
    let now = scan_now(cp, cancel)?;
    let skipped = |p: &[u8]| manifest.not_kept.binary_search_by(|(q, _)| q.as_slice().cmp(p)).is_ok();
    let mut out = Vec::new();
    let (mut i, mut j) = (0, 0);
    let old: &[Record] = &manifest.records;
    while i < old.len() || j < now.len() {
        let ord = match (old.get(i), now.get(j)) {
            (Some(a), Some(b)) => a.path.cmp(&b.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ord {
            std::cmp::Ordering::Less => {
                let r = &old[i];
                out.push(Change { path: r.path.clone(), action: Action::Deleted, old: Some(r.state.clone()), now: None });
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                let (p, s, st) = &now[j];
                if !skipped(p) {
                    out.push(Change { path: p.clone(), action: Action::Added, old: None, now: Some((s.clone(), *st)) });
                }
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let (r, (p, s, st)) = (&old[i], &now[j]);
                if let Some(a) = action(&r.state, s) {
                    out.push(Change { path: p.clone(), action: a, old: Some(r.state.clone()), now: Some((s.clone(), *st)) });
                }
                i += 1;
                j += 1;
            }
        }
    }
    Ok(out)
}

fn state_text(s: Option<&State>) -> String {
    match s {
        None => "-".into(),
        Some(State::File { mode, size, hash }) => format!("f {mode:o} {size} {}", hex(hash)),
        Some(State::Link { target }) => format!("l {}", escape(target)),
    }
}

/// The change set's hash.
pub(crate) fn change_hash(id: &str, changes: &[Change]) -> String {
    let mut h = Hasher::new();
    h.update(format!("workcell-checkpoint-diff 1\n{id}\n").as_bytes());
    for c in changes {
        let line = format!(
            "{} {} {} {}\n",
            c.action.as_str(),
            escape(&c.path),
            state_text(c.old.as_ref()),
            state_text(c.now.as_ref().map(|(s, _)| s))
        );
        h.update(line.as_bytes());
    }
    h.finish()
}

/// A side of a file's diff: the checkpoint's object or the workspace's file now.
enum Side<'a> {
    Stored(&'a [u8; 32]),
    Now(&'a [u8]),
}

/// Reads at most [`MAX_DIFF_FILE_BYTES`] + 1 bytes of a side; `None` when it cannot be read.
fn read_side(cp: &Checkpoints, side: Side<'_>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    match side {
        Side::Stored(h) => {
            cp.store.open_object(h).ok()?.take(MAX_DIFF_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
        }
        Side::Now(path) => {
            let (parent, name) = scan::split(path);
            let dir = scan::open_parent(&cp.ws, parent).ok()?;
            let (file, _) = dir.open_regular(name).ok()?.ok()?;
            file.take(MAX_DIFF_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
        }
    }
    Some(out)
}

fn is_text(b: &[u8]) -> bool {
    !b.contains(&0) && std::str::from_utf8(b).is_ok()
}

/// Appends the diff of one side-to-side change.
#[allow(clippy::too_many_arguments)]
fn file_piece(
    out: &mut String,
    cp: &Checkpoints,
    path: &[u8],
    shown: &str,
    from: Option<(&State, bool)>,
    to: Option<(&State, bool)>,
    whole: bool,
    cancel: &Cancel,
) -> Result<()> {
    let from_label = if from.is_some() { format!("a/{shown}") } else { "/dev/null".into() };
    let to_label = if to.is_some() { format!("b/{shown}") } else { "/dev/null".into() };
    // A link's text, or a file's content (read from the store or the workspace).
    let content = |s: Option<(&State, bool)>| -> Option<Vec<u8>> {
        match s {
            None => Some(Vec::new()),
            Some((State::Link { target }, _)) => {
                let mut t = b"symlink -> ".to_vec();
                t.extend_from_slice(target);
                t.push(b'\n');
                Some(t)
            }
            Some((State::File { hash, .. }, stored)) => {
                if *hash == UNREAD {
                    return None;
                }
                let bytes = read_side(cp, if stored { Side::Stored(hash) } else { Side::Now(path) })?;
                // What a person approves is the content the change set's hash names: a file
                // rewritten since the walk is not shown under that hash.
                let whole_read = (bytes.len() as u64) <= MAX_DIFF_FILE_BYTES;
                if whole && whole_read && crate::hash::sha256_hex(&bytes) != hex(hash) {
                    return None;
                }
                Some(bytes)
            }
        }
    };
    let (a, b) = (content(from), content(to));
    if whole {
        for (side, read) in [(from, &a), (to, &b)] {
            if let (Some((State::File { hash, size, .. }, _)), None) = (side, read) {
                if *hash != UNREAD && *size <= MAX_DIFF_FILE_BYTES {
                    return Err(crate::write::changed(shown, "target"));
                }
            }
        }
    }
    let size = |s: Option<(&State, bool)>| match s {
        Some((State::File { size, .. }, _)) => *size,
        _ => 0,
    };
    match (a, b) {
        (Some(a), Some(b)) if (a.len() as u64) <= MAX_DIFF_FILE_BYTES && (b.len() as u64) <= MAX_DIFF_FILE_BYTES => {
            if is_text(&a) && is_text(&b) {
                let (a, b) = (std::str::from_utf8(&a).unwrap_or(""), std::str::from_utf8(&b).unwrap_or(""));
                let mut budget = if whole { textdiff::Budget::complete() } else { textdiff::Budget::default() };
                textdiff::file_diff(out, &from_label, &to_label, a, b, &mut budget, cancel)?;
            } else if whole {
                named(out, &from_label, &to_label, from, to, "binary");
            } else {
                out.push_str(&format!("Binary files {from_label} and {to_label} differ\n"));
            }
        }
        _ if whole => named(out, &from_label, &to_label, from, to, &format!("not read, or over {MAX_DIFF_FILE_BYTES} bytes")),
        _ => {
            out.push_str(&format!(
                "--- {from_label}\n+++ {to_label}\n... not diffed: {} bytes before, {} after (files over {MAX_DIFF_FILE_BYTES} bytes are named, not diffed)\n",
                size(from),
                size(to)
            ));
        }
    }
    Ok(())
}

/// A content not shown as lines (binary, or too large to diff), named by what identifies it:
/// each side's SHA-256 and size (`absent` for a side that does not exist; a file over
/// `maxFileBytes`, never read, by its size alone).
fn named(out: &mut String, from_label: &str, to_label: &str, from: Option<(&State, bool)>, to: Option<(&State, bool)>, why: &str) {
    let side = |s: Option<(&State, bool)>| match s {
        None => "absent".to_string(),
        Some((State::File { hash, size, .. }, _)) if *hash == UNREAD => format!("{size} bytes, not read (over maxFileBytes)"),
        Some((State::File { hash, size, .. }, _)) => format!("sha256 {} ({size} bytes)", hex(hash)),
        Some((State::Link { target }, _)) => format!("symlink -> {}", escape(target)),
    };
    out.push_str(&format!("--- {from_label}\n+++ {to_label}\ncontent not shown as lines ({why}): {} becomes {}\n", side(from), side(to)));
}

/// The diff of one listed path: from the checkpoint to now, or (`reverse`) from now to the
/// checkpoint (what a rewind does). `whole`: every changed line (an approval's diff, as the
/// writing tools' previews), a content not shown as lines named by its hash and size.
fn piece(cp: &Checkpoints, c: &Change, reverse: bool, whole: bool, cancel: &Cancel) -> Result<String> {
    let shown = scan::shown(&c.path);
    let mut out = String::new();
    let old = c.old.as_ref().map(|s| (s, true));
    let now = c.now.as_ref().map(|(s, _)| (s, false));
    let (from, to) = if reverse { (now, old) } else { (old, now) };
    match c.action {
        Action::Type => {
            file_piece(&mut out, cp, &c.path, &shown, from, None, whole, cancel)?;
            file_piece(&mut out, cp, &c.path, &shown, None, to, whole, cancel)?;
        }
        Action::Mode => {
            if let (Some((State::File { mode: a, .. }, _)), Some((State::File { mode: b, .. }, _))) = (from, to) {
                out.push_str(&format!("--- a/{shown}\n+++ b/{shown}\nold mode {a:o}\nnew mode {b:o}\n"));
            }
        }
        _ => {
            file_piece(&mut out, cp, &c.path, &shown, from, to, whole, cancel)?;
            if let (Some((State::File { mode: a, .. }, _)), Some((State::File { mode: b, .. }, _))) = (from, to) {
                if a != b {
                    out.push_str(&format!("old mode {a:o}\nnew mode {b:o}\n"));
                }
            }
        }
    }
    Ok(out)
}

/// The whole bounded diff text, and whether it was cut.
pub(crate) fn render(cp: &Checkpoints, changes: &[Change], reverse: bool, cancel: &Cancel) -> Result<(String, bool)> {
    let mut text = String::new();
    let mut more: u64 = 0;
    for c in changes {
        cancel.check()?;
        let p = piece(cp, c, reverse, false, cancel)?;
        if more == 0 && text.len() + p.len() <= MAX_DIFF_BYTES {
            text.push_str(&p);
            continue;
        }
        if more == 0 {
            // Whole lines of this piece while they fit.
            let room = MAX_DIFF_BYTES - text.len();
            let mut cut = 0;
            for line in p.split_inclusive('\n') {
                if cut + line.len() > room {
                    break;
                }
                cut += line.len();
            }
            text.push_str(&p[..cut]);
            more += (p.len() - cut) as u64;
            if more == 0 {
                more = 1;
            }
        } else {
            more += p.len() as u64;
        }
    }
    if more > 0 {
        text.push_str(&format!("[{more} more bytes]\n"));
    }
    Ok((text, more > 0))
}

pub(crate) fn summary(id: &str, label: Option<&str>, changes: &[Change], reverse: bool) -> String {
    let name = match label {
        Some(l) => format!("checkpoint {id} ({l})"),
        None => format!("checkpoint {id}"),
    };
    if changes.is_empty() {
        return format!("nothing changed since {name}");
    }
    let mut counts = Vec::new();
    for a in [Action::Added, Action::Modified, Action::Deleted, Action::Mode, Action::Type] {
        let n = changes.iter().filter(|c| c.action == a).count();
        if n > 0 {
            let a = if reverse { a.reversed() } else { a };
            counts.push(format!("{n} {}", a.as_str()));
        }
    }
    let files = if changes.len() == 1 { "1 file".to_string() } else { format!("{} files", changes.len()) };
    if reverse {
        format!("rewinding to {name} changes {files}: {}", counts.join(", "))
    } else {
        format!("{files} changed since {name}: {}", counts.join(", "))
    }
}

/// The file list of a change set (`reverse`: as the rewind changes them).
pub(crate) fn listed(changes: &[Change], reverse: bool) -> Vec<Changed> {
    changes
        .iter()
        .map(|c| Changed { path: scan::shown(&c.path), action: if reverse { c.action.reversed() } else { c.action } })
        .collect()
}

/// Most bytes of a rewind's approval diff: every changed line of every file is in it (never
/// cut), so a change larger than this cannot be shown to a person and is not asked about.
pub const MAX_APPROVAL_DIFF_BYTES: usize = 16 << 20;

/// What a person approves before a rewind: the change it makes (from the workspace now back
/// to the checkpoint), whole, as the writing tools' previews are: every changed line of every
/// file, each file's part on its own, a content not shown as lines (binary, or over
/// [`MAX_DIFF_FILE_BYTES`]) named by its SHA-256 and size on both sides. `files` gives every
/// listed path with the change set's hash: the rewind runs only while the workspace still
/// gives that hash, so what was approved is what is applied.
pub(crate) fn rewind_approval(cp: &Checkpoints, id: &str, cancel: &Cancel) -> Result<crate::approval::Preview> {
    let Compared { manifest, changes, hash, _lock } = compare(cp, id, cancel)?;
    let mut diffs = Vec::with_capacity(changes.len());
    let mut total = 0usize;
    for c in &changes {
        cancel.check()?;
        let p = piece(cp, c, true, true, cancel)?;
        total += p.len();
        if total > MAX_APPROVAL_DIFF_BYTES {
            return Err(Error::new(
                crate::error::Code::FileTooLarge,
                format!("the rewind changes more than {MAX_APPROVAL_DIFF_BYTES} bytes of diff, too much to show whole for approval; nothing was rewound"),
            )
            .with_hint("ask the user to review the change (workcell checkpoints diff) and rewind it themselves (workcell checkpoints rewind)")
            .with_details(serde_json::json!({ "limit": MAX_APPROVAL_DIFF_BYTES, "files": changes.len() })));
        }
        diffs.push(crate::approval::preview::FileDiff::new(&scan::shown(&c.path), p));
    }
    let diff: String = diffs.iter().map(|d| d.diff.as_str()).collect();
    Ok(crate::approval::Preview {
        summary: summary(id, manifest.summary.label.as_deref(), &changes, true),
        diff: Some(diff),
        files: diffs.iter().map(|d| (d.path.clone(), hash.clone())).collect(),
        diffs,
    })
}

/// A checkpoint compared with the workspace now, under the store's shared lock (held while
/// this lives: no object it names is collected meanwhile).
pub(crate) struct Compared {
    pub _lock: super::store::Lock,
    pub manifest: Manifest,
    pub changes: Vec<Change>,
    /// The change set's hash.
    pub hash: String,
}

/// What `diff`, the rewind's approval and `rewind` start with: checkpoint `id` read and
/// compared with the workspace.
pub(crate) fn compare(cp: &Checkpoints, id: &str, cancel: &Cancel) -> Result<Compared> {
    cancel.check()?;
    super::store::check_id(id)?;
    let lock = cp.store.lock(false, cancel)?;
    let manifest = cp.store.read_manifest(id, true)?;
    let changes = changes(cp, &manifest, cancel)?;
    let hash = change_hash(id, &changes);
    Ok(Compared { _lock: lock, manifest, changes, hash })
}

pub(crate) fn diff(cp: &Checkpoints, id: &str, reverse: bool, cancel: &Cancel) -> Result<DiffOutput> {
    let Compared { manifest, changes, hash, _lock } = compare(cp, id, cancel)?;
    let (text, truncated) = render(cp, &changes, reverse, cancel)?;
    Ok(DiffOutput {
        summary: summary(id, manifest.summary.label.as_deref(), &changes, reverse),
        diff: text,
        files: listed(&changes, reverse),
        hash,
        truncated: truncated.then_some(true),
    })
}
