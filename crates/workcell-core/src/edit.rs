//! `edit_file`: exact-text replacements in one file, as one atomic write.
//!
//! The arguments are checked first, without effects: the path grammar (as `write_file`), 1 to
//! [`MAX_EDITS`] edits, no empty `oldText`, and all `oldText`s together and all `newText`s
//! together at most the content limit (65,536 UTF-8 bytes by default: no edit that fits could
//! need more).
//!
//! Then the edit runs through `write_file`'s machinery ([`crate::write::Job`]): the write guard,
//! the same resolution, the same per-target lock and, while holding that lock, the whole
//! read-modify-write: the current file is read (a regular file, at most the content limit,
//! UTF-8), `expectedHash` is compared with its SHA-256, every `oldText` is located in the
//! *original* content, the replacements are applied and the result goes through
//! [`crate::write::install`] (temp file, fsync, rechecks, rename).
//!
//! Matching:
//! - each `oldText` must occur exactly once in the original (occurrences may overlap each other
//!   and are all counted): none is `EDIT_NOT_FOUND` (the hint quotes the most similar line of
//!   the file, with its number), several is `EDIT_NOT_UNIQUE` (details carry the count);
//! - two edits whose matches overlap are refused as `TOOL_ARGUMENTS_INVALID`
//!   (`INVALID_ARGUMENTS_SHAPE`, details name both edits); edits that touch end to start are
//!   fine;
//! - line endings: CRLF in the file and in the texts are compared as LF, so an `oldText`
//!   written with `\n` matches a CRLF file. The `newText` gets the file's dominant line ending
//!   (CRLF when the file has more CRLF than lone LF line ends). Untouched lines keep their
//!   bytes exactly;
//! - a leading BOM stays, and is never part of a match.
//!
//! The result is `{ path, edits, bytes, diff }`: a unified diff (LF, without the BOM, three
//! lines of context) cut at [`MAX_DIFF_BYTES`] with a note saying how much was left out. The
//! diff's work is bounded ([`crate::diff`]): a change too large to diff within the budget says
//! `diff omitted` instead. It is computed before the install, with cancellation checked during
//! it and again right before the rename: an abort during the diff leaves the file unchanged.

use std::io::Read as _;
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::guard::Guard;
use crate::hash::sha256_hex;
use crate::path::RelPath;
use crate::root::Workspace;
use crate::target_lock::Ticket;
use crate::write::{self, install, open_at, AtTarget, Job, Resolved};

/// Most edits in one call.
pub const MAX_EDITS: usize = 50;
pub use crate::diff::{DIFF_CONTEXT, MAX_DIFF_BYTES};

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "EditFileOutput")]
pub struct EditOutput {
    /// The normalized path, as given.
    pub path: String,
    /// Number of edits applied.
    pub edits: usize,
    /// UTF-8 byte length of the file after the edit.
    pub bytes: usize,
    /// Unified diff of the change (bounded).
    pub diff: String,
}

#[derive(Clone, Debug)]
pub struct Edit {
    pub old_text: String,
    pub new_text: String,
}

/// The arguments of one edit_file call, checked without touching the filesystem.
#[derive(Debug)]
pub struct EditRequest {
    pub(crate) path: RelPath,
    pub(crate) edits: Vec<Edit>,
    pub(crate) max_bytes: usize,
    pub(crate) expected_hash: Option<String>,
    pub(crate) guard: Option<Arc<Guard>>,
}

fn shape(hint: impl Into<String>, details: serde_json::Value) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint).with_details(details)
}

impl EditRequest {
    /// Applies every effect-free check. `max_bytes` bounds the file edited and its result.
    pub fn new(path: &str, edits: Vec<Edit>, max_bytes: usize) -> Result<Self> {
        let path = write::check_path(path)?;
        if edits.is_empty() || edits.len() > MAX_EDITS {
            return Err(shape(
                format!("edits must hold 1 to {MAX_EDITS} items; split a larger change into several calls"),
                serde_json::json!({ "edits": edits.len(), "limit": MAX_EDITS }),
            ));
        }
        if let Some(i) = edits.iter().position(|e| e.old_text.is_empty()) {
            return Err(shape(
                "oldText may not be empty: copy the exact text to replace from the file (to create a file use write_file)",
                serde_json::json!({ "edit": i }),
            ));
        }
        for (what, total) in [
            ("oldText", edits.iter().map(|e| e.old_text.len()).sum::<usize>()),
            ("newText", edits.iter().map(|e| e.new_text.len()).sum::<usize>()),
        ] {
            if total > max_bytes {
                return Err(Error::invalid(
                    Reason::ContentTooLarge,
                    format!("the edits' {what} add up to {total} UTF-8 bytes; a file edited here holds at most {max_bytes}: use smaller edits"),
                )
                .with_details(serde_json::json!({ "field": what, "bytes": total, "limit": max_bytes })));
            }
        }
        Ok(EditRequest { path, edits, max_bytes, expected_hash: None, guard: None })
    }

    /// Edits only if the file still has this approval hash (else `TARGET_CHANGED`).
    pub fn with_expected_hash(mut self, hash: Option<String>) -> Self {
        self.expected_hash = hash;
        self
    }

    /// Applies a write guard.
    pub fn with_guard(mut self, guard: Option<Arc<Guard>>) -> Self {
        self.guard = guard;
        self
    }

    pub fn path(&self) -> &RelPath {
        &self.path
    }
}

impl Job for EditRequest {
    type Output = EditOutput;
    fn path(&self) -> &RelPath {
        &self.path
    }
    fn guard(&self) -> Option<&Guard> {
        self.guard.as_deref()
    }
    fn run(self, ws: &Workspace, target: &Resolved, cancel: &Cancel) -> Result<EditOutput> {
        let (_hash, applied) = self.compute(target, false, cancel)?;
        let out = install(ws, &self.path, target, applied.content.as_bytes(), cancel)?;
        Ok(EditOutput { path: out.path, edits: self.edits.len(), bytes: out.bytes, diff: applied.diff })
    }
}

impl EditRequest {
    /// Reads the target (a regular UTF-8 file within the limit), compares `expectedHash`,
    /// applies the edits and diffs: everything but the install. Returns the hash of the bytes
    /// read (the approval hash of what the edit replaces) with the result. Run under the
    /// target's lock by the edit, and without it by a preview (`complete`: the diff shows
    /// every changed line, never cut, as an approval must).
    pub(crate) fn compute(&self, target: &Resolved, complete: bool, cancel: &Cancel) -> Result<(String, Applied)> {
        let shown = self.path.as_str();
        cancel.check()?;
        let file = match open_at(&target.dir, &target.name, shown)? {
            AtTarget::Absent => return Err(missing(shown)),
            AtTarget::Other(kind) => return Err(Error::not_regular(shown, kind)),
            AtTarget::File(f) => f,
        };
        let mut bytes = Vec::new();
        (&file).take(self.max_bytes as u64 + 1).read_to_end(&mut bytes).map_err(|e| Error::from_io(&e, shown))?;
        drop(file);
        if bytes.len() > self.max_bytes {
            return Err(Error::new(Code::FileTooLarge, format!("{shown} is larger than {} bytes", self.max_bytes))
                .with_hint(format!(
                    "edit_file edits files of at most {} bytes; split the file, or replace it whole with write_file if the new content fits",
                    self.max_bytes
                ))
                .with_details(serde_json::json!({ "limit": self.max_bytes })));
        }
        let now = sha256_hex(&bytes);
        if let Some(expected) = &self.expected_hash {
            if &now != expected {
                return Err(write::hash_mismatch(shown, expected, &now));
            }
        }
        let text = crate::read::decode_text(shown, bytes, "edit_file edits text files only")?;
        cancel.check()?;
        let applied = apply_cancellable(shown, &text, &self.edits, complete, cancel)?;
        if applied.content.len() > self.max_bytes {
            return Err(Error::invalid(
                Reason::ContentTooLarge,
                format!(
                    "after these edits {shown} would be {} UTF-8 bytes; files written here hold at most {}: make the new text shorter",
                    applied.content.len(),
                    self.max_bytes
                ),
            )
            .with_details(serde_json::json!({ "bytes": applied.content.len(), "limit": self.max_bytes })));
        }
        Ok((now, applied))
    }
}

/// edit_file on a name with nothing at it.
pub(crate) fn missing(shown: &str) -> Error {
    Error::new(Code::FileNotFound, format!("{shown} does not exist"))
        .with_hint("edit_file changes an existing file; create a new file with write_file, or list the directory to find the right path")
}

/// Edits one file (resolution, lock, read-modify-write). `ticket` must have been taken when
/// the call was made.
pub async fn edit_file(ws: Arc<Workspace>, request: EditRequest, ticket: Ticket, cancel: Cancel) -> Result<EditOutput> {
    write::run_job(ws, request, ticket, cancel).await
}

/// Starts an edit from a host thread; `done` gets the outcome exactly once.
pub fn spawn_edit(
    ws: Arc<Workspace>,
    request: EditRequest,
    ticket: Ticket,
    cancel: Cancel,
    done: impl FnOnce(Result<EditOutput>) + Send + 'static,
) {
    write::spawn_job(ws, request, ticket, cancel, done)
}

/// Convenience for Rust callers: checks, takes a ticket now and edits.
pub async fn edit(ws: Arc<Workspace>, path: &str, edits: &[(&str, &str)], cancel: Cancel) -> Result<EditOutput> {
    let edits = edits.iter().map(|(o, n)| Edit { old_text: o.to_string(), new_text: n.to_string() }).collect();
    let request = EditRequest::new(path, edits, write::MAX_WRITE_BYTES)?;
    edit_file(ws, request, write::ticket(), cancel).await
}

// ---------------------------------------------------------------------------------------------
// Matching and applying (pure)

#[derive(Debug)]
pub(crate) struct Applied {
    pub content: String,
    pub diff: String,
}

/// The text with every CRLF as LF, and for each of its byte offsets (plus the end) the offset
/// in the original.
fn normalize(text: &str) -> (String, Vec<usize>) {
    let bytes = text.as_bytes();
    let mut norm = String::with_capacity(text.len());
    let mut map = Vec::with_capacity(text.len() + 1);
    let mut i = 0;
    let mut run_start = 0;
    while i < bytes.len() {
        if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
            norm.push_str(&text[run_start..i]);
            map.extend(run_start..i);
            norm.push('\n');
            // The LF stands for the whole CRLF: it maps to the CR.
            map.push(i);
            i += 2;
            run_start = i;
        } else {
            i += 1;
        }
    }
    norm.push_str(&text[run_start..]);
    map.extend(run_start..bytes.len());
    map.push(bytes.len());
    (norm, map)
}

/// Every start of `needle` in `hay`, overlapping ones included.
fn occurrences(hay: &str, needle: &str) -> Vec<usize> {
    let mut out = Vec::new();
    let finder = memchr::memmem::Finder::new(needle.as_bytes());
    let mut from = 0;
    while let Some(i) = finder.find(&hay.as_bytes()[from..]) {
        let at = from + i;
        out.push(at);
        // Next character boundary after `at`.
        let step = hay[at..].chars().next().map_or(1, char::len_utf8);
        from = at + step;
        if from > hay.len() {
            break;
        }
    }
    out
}

fn line_of(text: &str, offset: usize) -> usize {
    memchr::memchr_iter(b'\n', &text.as_bytes()[..offset]).count() + 1
}

#[cfg(test)]
pub(crate) fn apply(shown: &str, original: &str, edits: &[Edit]) -> Result<Applied> {
    apply_cancellable(shown, original, edits, false, &Cancel::new())
}

/// Locates and applies every edit, then diffs (bounded, or `complete` for an approval;
/// cancellable).
pub(crate) fn apply_cancellable(shown: &str, original: &str, edits: &[Edit], complete: bool, cancel: &Cancel) -> Result<Applied> {
    let (bom, body) = match original.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", original),
    };
    let (norm, map) = normalize(body);
    let crlf = {
        let pairs = body.matches("\r\n").count();
        let lf = memchr::memchr_iter(b'\n', body.as_bytes()).count();
        pairs > lf - pairs
    };
    // Locate every edit in the normalized original.
    let mut spans: Vec<(usize, usize, usize)> = Vec::with_capacity(edits.len());
    for (i, e) in edits.iter().enumerate() {
        let old = e.old_text.replace("\r\n", "\n");
        let found = occurrences(&norm, &old);
        match found.len() {
            0 => return Err(not_found(shown, &norm, &old, i)),
            1 => spans.push((found[0], found[0] + old.len(), i)),
            n => {
                let lines: Vec<usize> = found.iter().take(10).map(|&at| line_of(&norm, at)).collect();
                return Err(Error::new(Code::EditNotUnique, format!("oldText of edit {} occurs {n} times in {shown}", i + 1))
                    .with_hint(format!(
                        "oldText must occur exactly once; include more of the surrounding lines (it occurs at lines {}) so that it names one place",
                        lines.iter().map(|l| l.to_string()).collect::<Vec<_>>().join(", ")
                    ))
                    .with_details(serde_json::json!({ "edit": i, "count": n, "lines": lines })));
            }
        }
    }
    spans.sort();
    for w in spans.windows(2) {
        if w[1].0 < w[0].1 {
            let (a, b) = (w[0].2.min(w[1].2), w[0].2.max(w[1].2));
            return Err(shape(
                format!("edits {} and {} change overlapping text; merge them into one edit", a + 1, b + 1),
                serde_json::json!({ "edits": [a, b] }),
            ));
        }
    }
    // Build the result in the original's bytes and, for the diff, in normalized form.
    let mut content = String::with_capacity(original.len());
    let mut new_norm = String::with_capacity(norm.len());
    content.push_str(bom);
    let (mut at_orig, mut at_norm) = (0usize, 0usize);
    for &(s, e, i) in &spans {
        let new_lf = edits[i].new_text.replace("\r\n", "\n");
        content.push_str(&body[at_orig..map[s]]);
        if crlf {
            content.push_str(&new_lf.replace('\n', "\r\n"));
        } else {
            content.push_str(&new_lf);
        }
        new_norm.push_str(&norm[at_norm..s]);
        new_norm.push_str(&new_lf);
        at_orig = map[e];
        at_norm = e;
    }
    content.push_str(&body[at_orig..]);
    new_norm.push_str(&norm[at_norm..]);
    let diff = if complete {
        crate::diff::unified_complete(shown, &norm, &new_norm, cancel)?
    } else {
        crate::diff::unified(shown, &norm, &new_norm, cancel)?
    };
    Ok(Applied { content, diff })
}

/// Similarity of two strings from their character bigrams (Dice's coefficient, 0 to 1).
pub(crate) fn similarity(a: &str, b: &str) -> f64 {
    const CAP: usize = 400;
    let grams = |s: &str| {
        let chars: Vec<char> = s.chars().take(CAP).collect();
        let mut v: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
        v.sort_unstable();
        v
    };
    let (x, y) = (grams(a), grams(b));
    if x.is_empty() || y.is_empty() {
        return if a.trim() == b.trim() && !a.trim().is_empty() { 1.0 } else { 0.0 };
    }
    let (mut i, mut j, mut common) = (0, 0, 0usize);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
        }
    }
    2.0 * common as f64 / (x.len() + y.len()) as f64
}

pub(crate) fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn not_found(shown: &str, norm: &str, old: &str, i: usize) -> Error {
    let first = old.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut best: Option<(f64, usize, &str)> = None;
    if !first.is_empty() {
        for (n, line) in norm.lines().enumerate() {
            let score = similarity(first, line.trim());
            if score > 0.0 && best.is_none_or(|(b, _, _)| score > b) {
                best = Some((score, n + 1, line));
            }
        }
    }
    let err = Error::new(Code::EditNotFound, format!("oldText of edit {} was not found in {shown}", i + 1));
    match best {
        Some((score, line, text)) => {
            let quoted = cut_chars(text, 200);
            err.with_hint(format!(
                "oldText must match the file exactly, whitespace and line breaks included; the closest line is {line}: {quoted:?}. Read the file again and copy the text from it"
            ))
            .with_details(serde_json::json!({ "edit": i, "closestLine": line, "closestText": quoted, "similarity": (score * 100.0).round() / 100.0 }))
        }
        None => err
            .with_hint("oldText must match the file exactly, whitespace and line breaks included; nothing similar is in the file: read it again and copy the text from it")
            .with_details(serde_json::json!({ "edit": i })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::PathBuf;

    fn e(o: &str, n: &str) -> Edit {
        Edit { old_text: o.into(), new_text: n.into() }
    }

    fn setup() -> (tempfile::TempDir, PathBuf, Arc<Workspace>) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
        fs::create_dir(&root).unwrap();
        let ws = Arc::new(Workspace::open(&root).unwrap());
        (tmp, root, ws)
    }

    fn no_temps(root: &std::path::Path) {
        for entry in fs::read_dir(root).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            assert!(!name.starts_with(write::TEMP_PREFIX), "left behind: {name}");
        }
    }

    #[test]
    fn an_overlap_refusal_gives_the_edits_not_the_rule_again() {
        let err = apply("f", "abcdef", &[e("abcd", "x"), e("cdef", "y")]).map(|_| ()).unwrap_err();
        assert!(err.hint.as_deref().unwrap().contains("overlapping"));
        assert_eq!(err.details, Some(serde_json::json!({ "edits": [0, 1] })));
    }

    #[test]
    fn crlf_is_matched_as_lf_and_written_as_crlf() {
        let a = apply("f", "one\r\ntwo\r\nthree\r\n", &[e("one\ntwo\n", "1\n2\n2b\n")]).unwrap();
        assert_eq!(a.content, "1\r\n2\r\n2b\r\nthree\r\n");
        // CRLF in oldText works too; untouched LF lines of a mixed file keep their bytes.
        let a = apply("f", "a\r\nb\r\nc\nd\r\n", &[e("b\r\n", "B\n")]).unwrap();
        assert_eq!(a.content, "a\r\nB\r\nc\nd\r\n");
        // An LF file stays LF.
        let a = apply("f", "a\nb\n", &[e("a\n", "x\r\ny\n")]).unwrap();
        assert_eq!(a.content, "x\ny\nb\n");
        // A match that ends right before a CRLF keeps it.
        let a = apply("f", "ab\r\ncd\r\n", &[e("b", "B")]).unwrap();
        assert_eq!(a.content, "aB\r\ncd\r\n");
    }

    #[test]
    fn a_bom_is_kept_and_never_matched() {
        let a = apply("f", "\u{feff}first\nsecond\n", &[e("first", "1st")]).unwrap();
        assert_eq!(a.content, "\u{feff}1st\nsecond\n");
        assert!(!a.diff.contains('\u{feff}'));
        let err = apply("f", "\u{feff}x", &[e("\u{feff}x", "y")]).unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
    }

    #[test]
    fn missing_text_names_the_closest_line() {
        let text = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n";
        let err = apply("src/main.rs", text, &[e("let totl = compute(1, 3);", "x")]).unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
        let d = err.details.unwrap();
        assert_eq!(d["closestLine"], 2);
        assert!(err.hint.unwrap().contains("closest line is 2"));
    }

    #[test]
    fn repeated_text_is_not_unique_with_the_count() {
        let err = apply("f", "x = 1\ny = 1\nx = 1\nx = 1\n", &[e("x = 1", "x = 2")]).unwrap_err();
        assert_eq!(err.code, Code::EditNotUnique);
        assert_eq!(err.details.as_ref().unwrap()["count"], 3);
        assert_eq!(err.details.unwrap()["lines"], serde_json::json!([1, 3, 4]));
        // Overlapping occurrences count: "aa" occurs twice in "aaa".
        let err = apply("f", "aaa", &[e("aa", "b")]).unwrap_err();
        assert_eq!(err.details.unwrap()["count"], 2);
    }

    #[test]
    fn overlapping_edits_are_refused_adjacent_ones_applied() {
        let err = apply("f", "abcdef", &[e("abcd", "X"), e("cdef", "Y")]).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert_eq!(err.details.unwrap()["edits"], serde_json::json!([0, 1]));
        let a = apply("f", "abcdef", &[e("def", "Y"), e("abc", "X")]).unwrap();
        assert_eq!(a.content, "XY");
    }

    #[test]
    fn argument_limits_before_any_effect() {
        assert_eq!(EditRequest::new("f", vec![], 100).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        let many: Vec<Edit> = (0..=MAX_EDITS).map(|i| e(&format!("t{i}"), "")).collect();
        assert_eq!(EditRequest::new("f", many, 100_000).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        let fifty: Vec<Edit> = (0..MAX_EDITS).map(|i| e(&format!("t{i}"), "")).collect();
        assert!(EditRequest::new("f", fifty, 100_000).is_ok());
        assert_eq!(EditRequest::new("f", vec![e("", "x")], 100).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert_eq!(EditRequest::new("f", vec![e("a", &"x".repeat(101))], 100).unwrap_err().reason(), Some("CONTENT_TOO_LARGE"));
        assert_eq!(EditRequest::new("../f", vec![e("a", "b")], 100).unwrap_err().reason(), Some("INVALID_RELATIVE_PATH"));
    }

    #[test]
    fn the_diff_is_bounded_with_a_note() {
        let old: String = (0..3000).map(|i| format!("line {i}\nsame {i}\n")).collect();
        let a = apply("f", &old, &[e(&old, &old.replace("line", "LINE"))]).unwrap();
        assert!(a.diff.len() <= MAX_DIFF_BYTES + 200, "{}", a.diff.len());
        assert!(a.diff.contains("diff cut at 8192 bytes"));
        let small = apply("f", "a\nb\nc\n", &[e("b", "B")]).unwrap();
        assert_eq!(small.diff, "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n");
    }

    #[test]
    fn edit_replacing_every_line_of_a_64k_file_says_diff_omitted() {
        // The finding's input: all 32,768 lines of a 64 KiB file replaced in one edit.
        let (_t, root, ws) = setup();
        let old: String = (0..32_768).map(|i| if i % 2 == 0 { "a\n" } else { "b\n" }).collect();
        fs::write(root.join("big.txt"), &old).unwrap();
        let new = old.replace('a', "c").replace('b', "d");
        let rel = write::check_path("big.txt").unwrap();
        let cancel = Cancel::new();
        let target = write::resolve(&ws, &rel, &cancel).unwrap();
        let req = EditRequest::new("big.txt", vec![e(&old, &new)], write::MAX_WRITE_BYTES).unwrap();
        let out = req.run(&ws, &target, &cancel).unwrap();
        assert!(out.diff.contains("diff omitted: the change spans 32768 old and 32768 new lines"), "{}", out.diff);
        assert_eq!(fs::read_to_string(root.join("big.txt")).unwrap(), new);
        no_temps(&root);
    }

    #[test]
    fn abort_during_the_diff_leaves_the_file_unchanged() {
        let (_t, root, ws) = setup();
        let old: String = (0..3000).map(|i| format!("keep {i}\nold {i}\n")).collect();
        let new: String = (0..3000).map(|i| format!("keep {i}\nnew {i}\n")).collect();
        fs::write(root.join("f.txt"), &old).unwrap();
        let rel = write::check_path("f.txt").unwrap();
        let cancel = Cancel::new();
        let target = write::resolve(&ws, &rel, &cancel).unwrap();
        let c2 = cancel.clone();
        let mut gaps = 0;
        crate::diff::hooks::ON_GAP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                gaps += 1;
                if gaps == 100 {
                    c2.cancel();
                }
            }))
        });
        let req = EditRequest::new("f.txt", vec![e(&old, &new)], write::MAX_WRITE_BYTES).unwrap();
        let err = req.run(&ws, &target, &cancel).unwrap_err();
        crate::diff::hooks::ON_GAP.with(|h| *h.borrow_mut() = None);
        assert!(err.is_cancelled(), "{err:?}");
        assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), old, "the edit was applied after the abort");
        no_temps(&root);
    }

    #[tokio::test]
    async fn edits_on_disk_with_limits_and_expected_hash() {
        let (_t, root, ws) = setup();
        fs::write(root.join("f.txt"), "alpha\r\nbeta\r\n").unwrap();
        let out = edit(ws.clone(), "./f.txt", &[("beta\n", "gamma\n")], Cancel::new()).await.unwrap();
        assert_eq!(out.path, "f.txt");
        assert_eq!(out.edits, 1);
        assert_eq!(fs::read(root.join("f.txt")).unwrap(), b"alpha\r\ngamma\r\n");
        assert_eq!(out.bytes, 14);
        // Missing file, too large a file, a result over the limit.
        assert_eq!(edit(ws.clone(), "nope", &[("a", "b")], Cancel::new()).await.unwrap_err().code, Code::FileNotFound);
        fs::write(root.join("big"), "x".repeat(write::MAX_WRITE_BYTES + 1)).unwrap();
        assert_eq!(edit(ws.clone(), "big", &[("x", "y")], Cancel::new()).await.unwrap_err().code, Code::FileTooLarge);
        fs::write(root.join("full"), format!("a{}", "x".repeat(write::MAX_WRITE_BYTES - 1))).unwrap();
        let err = edit(ws.clone(), "full", &[("a", "bb")], Cancel::new()).await.unwrap_err();
        assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
        fs::write(root.join("bin"), b"a\xffb").unwrap();
        assert_eq!(edit(ws.clone(), "bin", &[("a", "b")], Cancel::new()).await.unwrap_err().code, Code::InvalidUtf8);
        // expectedHash: refused after a change, applied otherwise.
        fs::write(root.join("h"), "one\n").unwrap();
        let h = sha256_hex(b"one\n");
        fs::write(root.join("h"), "one!\n").unwrap();
        let req = EditRequest::new("h", vec![e("one", "two")], write::MAX_WRITE_BYTES).unwrap().with_expected_hash(Some(h));
        let err = edit_file(ws.clone(), req, write::ticket(), Cancel::new()).await.unwrap_err();
        assert_eq!(err.code, Code::TargetChanged);
        assert_eq!(fs::read_to_string(root.join("h")).unwrap(), "one!\n");
        let req = EditRequest::new("h", vec![e("one", "two")], write::MAX_WRITE_BYTES)
            .unwrap()
            .with_expected_hash(Some(sha256_hex(b"one!\n")));
        edit_file(ws.clone(), req, write::ticket(), Cancel::new()).await.unwrap();
        assert_eq!(fs::read_to_string(root.join("h")).unwrap(), "two!\n");
        no_temps(&root);
    }

    #[tokio::test]
    async fn write_expected_hash_absent_and_changed() {
        let (_t, root, ws) = setup();
        let w = |content: &str, hash: &str| {
            write::WriteRequest::new("n.txt", content.into(), write::MAX_WRITE_BYTES).unwrap().with_expected_hash(Some(hash.into()))
        };
        write::write_file(ws.clone(), w("first", "absent"), write::ticket(), Cancel::new()).await.unwrap();
        let err = write::write_file(ws.clone(), w("second", "absent"), write::ticket(), Cancel::new()).await.unwrap_err();
        assert_eq!(err.code, Code::TargetChanged);
        assert!(err.hint.unwrap().contains("read it again"));
        write::write_file(ws.clone(), w("second", &sha256_hex(b"first")), write::ticket(), Cancel::new()).await.unwrap();
        assert_eq!(fs::read_to_string(root.join("n.txt")).unwrap(), "second");
        no_temps(&root);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn fifty_concurrent_edits_all_land() {
        let (_t, root, ws) = setup();
        fs::write(root.join("log.txt"), "start\nEND\n").unwrap();
        let mut tasks = Vec::new();
        for i in 0..50 {
            let ws = ws.clone();
            let req = EditRequest::new("log.txt", vec![e("END\n", &format!("line {i}\nEND\n"))], write::MAX_WRITE_BYTES).unwrap();
            let ticket = write::ticket();
            tasks.push(tokio::spawn(edit_file(ws, req, ticket, Cancel::new())));
        }
        for t in tasks {
            t.await.unwrap().unwrap();
        }
        let text = fs::read_to_string(root.join("log.txt")).unwrap();
        for i in 0..50 {
            assert!(text.contains(&format!("line {i}\n")), "line {i} lost");
        }
        assert_eq!(text.lines().count(), 52);
        no_temps(&root);
    }

    #[tokio::test]
    async fn a_symlink_inside_is_edited_through_and_guarded() {
        let (_t, root, ws) = setup();
        fs::create_dir(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::os::unix::fs::symlink(".git/config", root.join("cfg")).unwrap();
        let guard = Arc::new(Guard::default_guard());
        let req = EditRequest::new("cfg", vec![e("[core]", "[pwned]")], write::MAX_WRITE_BYTES).unwrap().with_guard(Some(guard));
        let err = edit_file(ws.clone(), req, write::ticket(), Cancel::new()).await.unwrap_err();
        assert_eq!(err.code, Code::PathProtected);
        assert_eq!(fs::read_to_string(root.join(".git/config")).unwrap(), "[core]\n");
        // Unguarded, the link is written through (the link stays).
        edit(ws.clone(), "cfg", &[("[core]", "[x]")], Cancel::new()).await.unwrap();
        assert_eq!(fs::read_to_string(root.join(".git/config")).unwrap(), "[x]\n");
        assert!(fs::symlink_metadata(root.join("cfg")).unwrap().file_type().is_symlink());
    }
}
