//! Locating a file's hunks and computing its new content (pure).
//!
//! The file is split into lines (LF or CRLF; a leading BOM is kept and never matched). Each
//! hunk is looked for after the previous one: first its `@@` anchors, one after the other, then
//! its old lines (context and removed), as a sequence of whole lines. Each lookup runs in four
//! passes, the first that finds a match wins:
//!
//! 1. exact;
//! 2. trailing whitespace ignored;
//! 3. leading and trailing whitespace ignored;
//! 4. like 3, with Unicode punctuation and spaces normalized (dashes to `-`, curly quotes to
//!    straight ones, `…` to `...`, no-break and other Unicode spaces to a space, zero-width
//!    characters dropped).
//!
//! A hunk marked `*** End of File` is tried at the end of the file first. A hunk with no old
//! lines inserts after its last anchor, or at the end of the file without one. Each lookup is
//! a linear scan (Knuth–Morris–Pratt over line hashes), and the scans of one call are held to a
//! budget, so the work is bounded whatever the patch.
//!
//! The new content keeps the file's own bytes for every context line (whatever pass matched
//! it); added lines get the file's dominant line ending (CRLF when it has more CRLF than lone
//! LF line ends).

use std::borrow::Cow;
use std::hash::{Hash, Hasher};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::patch::parse::{Hunk, HunkLine};

/// The lookup passes, from strictest to loosest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Pass {
    Exact = 0,
    TrailingWhitespace = 1,
    Whitespace = 2,
    Punctuation = 3,
}

impl Pass {
    const ALL: [Pass; 4] = [Pass::Exact, Pass::TrailingWhitespace, Pass::Whitespace, Pass::Punctuation];

    pub fn describe(self) -> &'static str {
        match self {
            Pass::Exact => "exactly",
            Pass::TrailingWhitespace => "ignoring trailing whitespace",
            Pass::Whitespace => "ignoring leading and trailing whitespace",
            Pass::Punctuation => "ignoring whitespace and with Unicode punctuation and spaces normalized",
        }
    }
}

/// Line comparisons one call's lookups may make (all files together).
pub const SCAN_BUDGET: u64 = 64_000_000;

/// Scans left for one call.
#[derive(Debug)]
pub struct ScanBudget(pub u64);

impl Default for ScanBudget {
    fn default() -> Self {
        ScanBudget(SCAN_BUDGET)
    }
}

/// Unicode punctuation and spaces as ASCII (pass 4).
fn normalize_char(c: char, out: &mut String) {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE58}' | '\u{FE63}' | '\u{FF0D}' => out.push('-'),
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => out.push('\''),
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{00AB}' | '\u{00BB}' | '\u{FF02}' => out.push('"'),
        '\u{2026}' => out.push_str("..."),
        '\u{00A0}' | '\u{1680}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => out.push(' '),
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => {}
        c => out.push(c),
    }
}

fn is_space(c: char) -> bool {
    c.is_whitespace() || matches!(c, '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}')
}

/// A line as compared in `pass`.
pub(crate) fn key(pass: Pass, s: &str) -> Cow<'_, str> {
    match pass {
        Pass::Exact => Cow::Borrowed(s),
        Pass::TrailingWhitespace => Cow::Borrowed(s.trim_end()),
        Pass::Whitespace => Cow::Borrowed(s.trim()),
        Pass::Punctuation => {
            let t = s.trim_matches(is_space);
            if t.is_ascii() {
                return Cow::Borrowed(t);
            }
            let mut out = String::with_capacity(t.len());
            t.chars().for_each(|c| normalize_char(c, &mut out));
            Cow::Owned(out.trim().to_string())
        }
    }
}

fn hash_of(s: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// One line of the file: its text (without the line end) and its line end.
struct Line<'a> {
    text: &'a str,
    eol: &'a str,
}

fn split_lines(body: &str) -> Vec<Line<'_>> {
    let mut out = Vec::new();
    let mut rest = body;
    while !rest.is_empty() {
        match rest.find('\n') {
            Some(i) => {
                let (text, eol) = if i > 0 && rest.as_bytes()[i - 1] == b'\r' { (&rest[..i - 1], "\r\n") } else { (&rest[..i], "\n") };
                out.push(Line { text, eol });
                rest = &rest[i + 1..];
            }
            None => {
                out.push(Line { text: rest, eol: "" });
                rest = "";
            }
        }
    }
    out
}

/// The file's lines as keys of each pass, computed when first needed.
struct Keys<'a> {
    lines: &'a [Line<'a>],
    by_pass: [Option<(Vec<String>, Vec<u64>)>; 4],
}

impl<'a> Keys<'a> {
    fn get(&mut self, pass: Pass) -> &(Vec<String>, Vec<u64>) {
        let lines = self.lines;
        self.by_pass[pass as usize].get_or_insert_with(|| {
            let keys: Vec<String> = lines.iter().map(|l| key(pass, l.text).into_owned()).collect();
            let hashes = keys.iter().map(|k| hash_of(k)).collect();
            (keys, hashes)
        })
    }
}

/// The first `from..` position where `pattern` (already keyed) occurs in the keyed file, by
/// KMP over hashes, confirmed on the strings.
fn find_from(file: &(Vec<String>, Vec<u64>), pattern: &[String], from: usize, budget: &mut ScanBudget) -> Result<Option<usize>> {
    let (keys, hashes) = file;
    let m = pattern.len();
    if m == 0 || keys.len() < m || from > keys.len() - m {
        return Ok(None);
    }
    let ph: Vec<u64> = pattern.iter().map(|p| hash_of(p)).collect();
    // Failure function.
    let mut fail = vec![0usize; m];
    let mut k = 0;
    for i in 1..m {
        while k > 0 && ph[i] != ph[k] {
            k = fail[k - 1];
        }
        if ph[i] == ph[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let cost = (keys.len() - from + m) as u64 * 2;
    if cost > budget.0 {
        return Err(Error::invalid(
            crate::error::Reason::PatchInvalid,
            "locating this patch's hunks takes more work than one call may do; split it into several smaller patches",
        ));
    }
    budget.0 -= cost;
    let mut q = 0;
    for i in from..keys.len() {
        while q > 0 && hashes[i] != ph[q] {
            q = fail[q - 1];
        }
        if hashes[i] == ph[q] {
            q += 1;
        }
        if q == m {
            let start = i + 1 - m;
            if keys[start..=i].iter().zip(pattern).all(|(a, b)| a == b) {
                return Ok(Some(start));
            }
            q = fail[q - 1];
        }
    }
    Ok(None)
}

/// Looks `pattern` up from `from` in the four passes; with `at_end`, the end of the file is
/// tried first in each pass.
fn seek(keys: &mut Keys, pattern: &[&str], from: usize, at_end: bool, budget: &mut ScanBudget) -> Result<Option<(usize, Pass)>> {
    let n = keys.lines.len();
    for pass in Pass::ALL {
        let pat: Vec<String> = pattern.iter().map(|p| key(pass, p).into_owned()).collect();
        let file = keys.get(pass);
        if at_end && n >= pat.len() && n - pat.len() >= from {
            let start = n - pat.len();
            if file.0[start..].iter().zip(&pat).all(|(a, b)| a == b) {
                return Ok(Some((start, pass)));
            }
        }
        if let Some(at) = find_from(file, &pat, from, budget)? {
            return Ok(Some((at, pass)));
        }
    }
    Ok(None)
}

/// The new content of a file and the loosest pass any of its lookups needed.
#[derive(Debug, PartialEq, Eq)]
pub struct Updated {
    pub content: String,
    pub loosest: Pass,
}

/// Applies `hunks` to `original` (the file's text). `shown` names the file in errors.
pub fn apply_hunks(shown: &str, original: &str, hunks: &[Hunk], cancel: &Cancel, budget: &mut ScanBudget) -> Result<Updated> {
    let (bom, body) = match original.strip_prefix('\u{feff}') {
        Some(rest) => ("\u{feff}", rest),
        None => ("", original),
    };
    let lines = split_lines(body);
    let crlf = lines.iter().filter(|l| l.eol == "\r\n").count();
    let lf = lines.iter().filter(|l| l.eol == "\n").count();
    let eol = if crlf > lf { "\r\n" } else { "\n" };
    let mut keys = Keys { lines: &lines, by_pass: [None, None, None, None] };
    let mut loosest = Pass::Exact;
    // (start, old length, hunk index, trailing blank lines dropped)
    let mut places: Vec<(usize, usize, usize, usize)> = Vec::with_capacity(hunks.len());
    let mut cursor = 0usize;
    for (h, hunk) in hunks.iter().enumerate() {
        cancel.check()?;
        for anchor in &hunk.anchors {
            match seek(&mut keys, &[anchor.as_str()], cursor, false, budget)? {
                Some((at, pass)) => {
                    loosest = loosest.max(pass);
                    cursor = at + 1;
                }
                None => return Err(not_found(shown, &mut keys, &[anchor.as_str()], cursor, hunk, h, true, budget)),
            }
        }
        let old: Vec<&str> = hunk.old_lines().collect();
        // Blank lines at the end of the hunk count as context when the file has them there;
        // otherwise they are dropped, one at a time (as Codex drops one).
        let mut found = None;
        for drop in 0..=hunk.trailing_blanks() {
            let want = &old[..old.len() - drop];
            if want.is_empty() {
                let at = if hunk.anchors.is_empty() { lines.len() } else { cursor };
                found = Some((at, Pass::Exact, drop));
                break;
            }
            if let Some((at, pass)) = seek(&mut keys, want, cursor, hunk.end_of_file, budget)? {
                found = Some((at, pass, drop));
                break;
            }
        }
        match found {
            Some((at, pass, drop)) => {
                loosest = loosest.max(pass);
                let len = old.len() - drop;
                places.push((at, len, h, drop));
                cursor = at + len;
            }
            None => return Err(not_found(shown, &mut keys, &old, cursor, hunk, h, false, budget)),
        }
    }
    // Build the result.
    let mut out: Vec<(Cow<str>, &str)> = Vec::with_capacity(lines.len() + 16);
    let mut at = 0usize;
    for &(start, len, h, drop) in &places {
        out.extend(lines[at..start].iter().map(|l| (Cow::Borrowed(l.text), l.eol)));
        let mut i = start;
        let hunk_lines = &hunks[h].lines;
        for hl in &hunk_lines[..hunk_lines.len() - drop] {
            match hl {
                HunkLine::Context(_) => {
                    out.push((Cow::Borrowed(lines[i].text), lines[i].eol));
                    i += 1;
                }
                HunkLine::Remove(_) => i += 1,
                HunkLine::Add(t) => out.push((Cow::Borrowed(t.as_str()), eol)),
            }
        }
        debug_assert_eq!(i, start + len);
        at = start + len;
    }
    out.extend(lines[at..].iter().map(|l| (Cow::Borrowed(l.text), l.eol)));
    let mut content = String::with_capacity(original.len() + 64);
    content.push_str(bom);
    let last = out.len().saturating_sub(1);
    for (k, (text, end)) in out.iter().enumerate() {
        content.push_str(text);
        // A line that lost its place at the end gets a line end.
        content.push_str(if end.is_empty() && k != last { eol } else { end });
    }
    Ok(Updated { content, loosest })
}

/// Most occurrences of a hunk's first line examined for the hint of a hunk not found, and most
/// line comparisons spent on them.
const HINT_STARTS: usize = 1_000;
const HINT_STEPS: usize = 1_000_000;

/// `EDIT_NOT_FOUND` for hunk `h`, whose `wanted` lines (an anchor, or its context and removed
/// lines) are not in the file from line `cursor` on. The hint says why, in this order:
/// - the lines are in the file, but before `cursor` (hunks are located in file order);
/// - the hunk's first lines are in the file but a later one differs: where the longest such
///   run starts, and the file's line where the hunk's next line was expected (or that the file
///   ends there);
/// - else the file's line most similar to the hunk's first non-blank line, among the lines that
///   differ from it; or that nothing is similar.
///
/// Lines are compared as the loosest pass does (whitespace and Unicode punctuation tolerated),
/// so a line named as differing really differs.
#[allow(clippy::too_many_arguments)]
fn not_found(shown: &str, keys: &mut Keys, wanted: &[&str], cursor: usize, hunk: &Hunk, h: usize, anchor: bool, budget: &mut ScanBudget) -> Error {
    let what = if anchor { format!("the @@ line {:?}", crate::edit::cut_chars(wanted[0], 120)) } else { "its lines".to_string() };
    let err = Error::new(Code::EditNotFound, format!("hunk {} of {shown} (patch line {}): {what} not found", h + 1, hunk.line));
    let base = serde_json::json!({ "hunk": h, "patchLine": hunk.line });
    let with = |extra: serde_json::Value| {
        let mut d = base.clone();
        if let (Some(m), serde_json::Value::Object(e)) = (d.as_object_mut(), extra) {
            m.extend(e);
        }
        d
    };
    let reread = "Read the file again and write the hunk's context and - lines from it";
    let pass = Pass::Punctuation;
    let pat: Vec<String> = wanted.iter().map(|w| key(pass, w).into_owned()).collect();
    let lines = keys.lines;
    // 1. Before the cursor.
    if cursor > 0 {
        if let Ok(Some(at)) = find_from(keys.get(pass), &pat, 0, budget) {
            if at < cursor {
                return err
                    .with_hint(format!(
                        "these lines are at line {} of the file, before where this hunk is looked for (hunks are located in file order, each after the previous hunk, which ended at line {cursor}); put the hunks in the order of the file",
                        at + 1
                    ))
                    .with_details(with(serde_json::json!({ "foundAt": at + 1, "searchedFrom": cursor + 1 })));
            }
        }
    }
    let file = &keys.get(pass).0;
    // 2. The longest run of the hunk's first lines, from the cursor on.
    if pat.len() > 1 {
        let mut best: Option<(usize, usize)> = None; // (start, matched)
        let mut steps = 0usize;
        for s in (cursor..file.len()).filter(|&s| file[s] == pat[0]).take(HINT_STARTS) {
            let k = file[s..].iter().zip(&pat).take_while(|(a, b)| a == b).count();
            steps += k;
            if best.is_none_or(|(_, b)| k > b) {
                best = Some((s, k));
            }
            if steps > HINT_STEPS {
                break;
            }
        }
        if let Some((s, k)) = best {
            let expected = crate::edit::cut_chars(wanted[k], 200);
            if s + k >= lines.len() {
                return err
                    .with_hint(format!(
                        "the hunk's first {k} line(s) match lines {}-{} of the file, which ends there; the hunk's next line {expected:?} is not in it. {reread}",
                        s + 1,
                        s + k
                    ))
                    .with_details(with(serde_json::json!({ "matchedFrom": s + 1, "matchedLines": k, "expected": expected })));
            }
            let text = crate::edit::cut_chars(lines[s + k].text, 200);
            let score = crate::edit::similarity(wanted[k].trim(), lines[s + k].text.trim());
            return err
                .with_hint(format!(
                    "the hunk's first {k} line(s) match from line {} of the file, then the hunk has {expected:?} where line {} reads {text:?}. {reread}",
                    s + 1,
                    s + k + 1
                ))
                .with_details(with(serde_json::json!({
                    "matchedFrom": s + 1,
                    "matchedLines": k,
                    "expected": expected,
                    "closestLine": s + k + 1,
                    "closestText": text,
                    "similarity": (score * 100.0).round() / 100.0,
                })));
        }
    }
    // 3. The most similar line that differs from the hunk's first non-blank line.
    let target = wanted.iter().copied().find(|l| !l.trim().is_empty()).unwrap_or(wanted[0]);
    let target_key = key(pass, target);
    let mut best: Option<(f64, usize)> = None;
    if !target.trim().is_empty() {
        for (n, line) in lines.iter().enumerate().take(100_000) {
            if file[n] == *target_key {
                continue;
            }
            let score = crate::edit::similarity(target.trim(), line.text.trim());
            if score > 0.0 && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, n));
            }
        }
    }
    match best {
        Some((score, n)) => {
            let quoted = crate::edit::cut_chars(lines[n].text, 200);
            err.with_hint(format!(
                "hunks are located after the previous hunk, whitespace and Unicode punctuation tolerated; the line closest to {:?} is line {}: {quoted:?}. {reread}",
                crate::edit::cut_chars(target.trim(), 120),
                n + 1
            ))
            .with_details(with(serde_json::json!({ "closestLine": n + 1, "closestText": quoted, "similarity": (score * 100.0).round() / 100.0 })))
        }
        None => err
            .with_hint(format!("no line of the file is similar to {:?}: read it again and write the hunk's context and - lines from it", crate::edit::cut_chars(target.trim(), 120)))
            .with_details(base),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::patch::parse::parse;

    fn update(file: &str, patch_body: &str) -> Result<Updated> {
        let text = format!("*** Begin Patch\n*** Update File: f\n{patch_body}*** End Patch\n");
        let patch = parse(&text, 65_536).unwrap();
        let crate::patch::parse::FileOp::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        apply_hunks("f", file, hunks, &Cancel::new(), &mut ScanBudget::default())
    }

    #[test]
    fn update_with_context_anchor() {
        let file = "def a():\n    return 1\n\ndef b():\n    return 1\n";
        let out = update(file, "@@ def b():\n-    return 1\n+    return 2\n").unwrap();
        assert_eq!(out.content, "def a():\n    return 1\n\ndef b():\n    return 2\n");
        assert_eq!(out.loosest, Pass::Exact);
    }

    #[test]
    fn update_without_anchor_takes_the_first_match_after_the_previous_hunk() {
        let file = "x = 1\ny = 2\nx = 1\n";
        let out = update(file, "@@\n-x = 1\n+x = 10\n@@\n-x = 1\n+x = 30\n").unwrap();
        assert_eq!(out.content, "x = 10\ny = 2\nx = 30\n");
        // The first hunk may come without @@.
        let out = update(file, " y = 2\n-x = 1\n+x = 3\n").unwrap();
        assert_eq!(out.content, "x = 1\ny = 2\nx = 3\n");
    }

    #[test]
    fn nested_anchors_pick_the_right_method() {
        let file = "class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        pass\n";
        let out = update(file, "@@ class B:\n@@     def run(self):\n-        pass\n+        return 2\n").unwrap();
        assert_eq!(out.content, "class A:\n    def run(self):\n        pass\nclass B:\n    def run(self):\n        return 2\n");
    }

    #[test]
    fn end_of_file_anchors_at_the_end() {
        let file = "end\nmiddle\nend\n";
        let out = update(file, "@@\n-end\n+END\n*** End of File\n").unwrap();
        assert_eq!(out.content, "end\nmiddle\nEND\n");
        // Pure addition at the end, and after an anchor.
        let out = update("a\nb\n", "@@\n+c\n").unwrap();
        assert_eq!(out.content, "a\nb\nc\n");
        let out = update("a\nb\n", "@@ a\n+a2\n").unwrap();
        assert_eq!(out.content, "a\na2\nb\n");
        // A file without a final newline: the old last line gets one when lines follow it.
        let out = update("a\nb", "@@\n b\n+c\n").unwrap();
        assert_eq!(out.content, "a\nb\nc\n");
        let out = update("a\nb", "@@\n-a\n+A\n").unwrap();
        assert_eq!(out.content, "A\nb");
    }

    #[test]
    fn whitespace_tolerant_passes_say_which_was_needed() {
        let file = "fn main() {   \n\tlet x = 1;\n}\n";
        let out = update(file, "@@\n fn main() {\n-\tlet x = 1;\n+\tlet x = 2;\n").unwrap();
        assert_eq!(out.loosest, Pass::TrailingWhitespace);
        // The context line keeps the file's own bytes (its trailing spaces).
        assert_eq!(out.content, "fn main() {   \n\tlet x = 2;\n}\n");
        let out = update(file, "@@\n-    let x = 1;\n+    let x = 3;\n").unwrap();
        assert_eq!(out.loosest, Pass::Whitespace);
        assert_eq!(out.content, "fn main() {   \n    let x = 3;\n}\n");
    }

    #[test]
    fn punctuation_tolerant_pass_matches_what_models_retype() {
        // The file has curly quotes, an en dash, a no-break space and an ellipsis; the model
        // wrote ASCII.
        let file = "msg = \u{201c}it\u{2019}s done\u{201d}\nrange = 1\u{2013}5\nwait\u{00a0}for it\u{2026}\n";
        let out = update(file, "@@\n-msg = \"it's done\"\n+msg = \"finished\"\n range = 1-5\n wait for it...\n").unwrap();
        assert_eq!(out.loosest, Pass::Punctuation);
        assert_eq!(out.content, "msg = \"finished\"\nrange = 1\u{2013}5\nwait\u{00a0}for it\u{2026}\n");
        // And the other way round: ASCII file, model wrote typographic characters.
        let out = update("a - b\n", "@@\n-a \u{2014} b\n+a + b\n").unwrap();
        assert_eq!(out.content, "a + b\n");
    }

    #[test]
    fn crlf_files_stay_crlf_and_a_bom_is_kept() {
        let out = update("\u{feff}one\r\ntwo\r\nthree\r\n", "@@\n one\n-two\n+2\n+2b\n").unwrap();
        assert_eq!(out.content, "\u{feff}one\r\n2\r\n2b\r\nthree\r\n");
        assert_eq!(out.loosest, Pass::Exact);
    }

    #[test]
    fn not_found_quotes_the_closest_line() {
        let file = "import os\n\ndef compute(a, b):\n    return a + b\n";
        let err = update(file, "@@\n-def compute(a, c):\n+def compute(a, b, c):\n").unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
        assert!(err.message.contains("hunk 1 of f (patch line 3)"), "{}", err.message);
        let d = err.details.unwrap();
        assert_eq!(d["closestLine"], 3);
        assert!(err.hint.unwrap().contains("line 3: \"def compute(a, b):\""));
        let err = update(file, "@@ class Missing\n-x\n").unwrap_err();
        assert!(err.message.contains("@@ line"), "{}", err.message);
        // Hunks are looked for after the previous one: out of order is not found.
        let err = update("a\nb\n", "@@\n-b\n+B\n@@\n-a\n+A\n").unwrap_err();
        assert!(err.message.contains("hunk 2"));
    }

    #[test]
    fn a_blank_line_at_the_end_of_a_hunk_is_dropped_when_the_file_has_none_there() {
        let file = "def a():\n    return 1\ndef b():\n    return 2\n";
        // Before the next @@, before *** End Patch, and two of them.
        let out = update(file, "@@ def a():\n-    return 1\n+    return 10\n\n@@ def b():\n-    return 2\n+    return 20\n\n\n").unwrap();
        assert_eq!(out.content, "def a():\n    return 10\ndef b():\n    return 20\n");
        assert_eq!(out.loosest, Pass::Exact);
        // Before *** End of File.
        let out = update("end\nmid\nend\n", "@@\n-end\n+END\n\n*** End of File\n").unwrap();
        assert_eq!(out.content, "end\nmid\nEND\n");
        // A hunk of blank lines only, not in the file: nothing to change.
        let out = update("a\nb\n", "@@ a\n\n").unwrap();
        assert_eq!(out.content, "a\nb\n");
    }

    #[test]
    fn a_trailing_blank_line_counts_first_where_the_file_has_it() {
        // With its blank line the hunk matches the second foo only.
        let out = update("foo\nbar\nfoo\n\nbaz\n", "@@\n-foo\n+FOO\n\n").unwrap();
        assert_eq!(out.content, "foo\nbar\nFOO\n\nbaz\n");
        // In the middle of a hunk, a blank line is an empty context line: it must be there.
        let err = update("a\nb\nc\n", "@@\n a\n\n-c\n+C\n").unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
        let out = update("a\n\nc\n", "@@\n a\n\n-c\n+C\n").unwrap();
        assert_eq!(out.content, "a\n\nC\n");
    }

    #[test]
    fn the_not_found_hint_names_the_line_that_differs_not_the_hunks_first_line() {
        // The hunk's first line is in the file; its second differs.
        let file = "import os\n\ndef compute(a, b):\n    total = a + b\n    return total\n";
        let err = update(file, "@@\n def compute(a, b):\n-    total = a * b\n+    total = a - b\n     return total\n").unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
        let d = err.details.clone().unwrap();
        assert_eq!(d["closestLine"], 4, "{err:?}");
        assert_eq!(d["closestText"], "    total = a + b");
        assert_eq!(d["expected"], "    total = a * b");
        assert_eq!((d["matchedFrom"].as_u64(), d["matchedLines"].as_u64()), (Some(3), Some(1)));
        assert!(d["similarity"].as_f64().unwrap() < 1.0);
        let hint = err.hint.unwrap();
        assert!(hint.contains("where line 4 reads \"    total = a + b\""), "{hint}");
        // The hunk runs past the end of the file.
        let err = update("a\nb\n", "@@\n a\n b\n-c\n").unwrap_err();
        assert!(err.hint.as_ref().unwrap().contains("match lines 1-2 of the file, which ends there"), "{err:?}");
        assert!(err.details.unwrap().get("closestLine").is_none());
        // The first line is nowhere: the closest line differs from it.
        let err = update("def compute(a, b):\n", "@@\n-def compute(a, c):\n+x\n").unwrap_err();
        let d = err.details.unwrap();
        assert_eq!(d["closestLine"], 1);
        assert!(d["similarity"].as_f64().unwrap() < 1.0);
        // Nothing similar at all: said so, no line named.
        let err = update("zzz\n", "@@\n-qqq\n").unwrap_err();
        assert!(err.hint.as_ref().unwrap().starts_with("no line of the file is similar"), "{err:?}");
        assert!(err.details.unwrap().get("closestLine").is_none());
        // An anchor that is in the file only before the previous hunk: the order is named.
        let err = update("class A\nx\nclass B\ny\n", "@@ class B\n-y\n+Y\n@@ class A\n-x\n+X\n").unwrap_err();
        assert!(err.hint.as_ref().unwrap().contains("is looked for"), "{err:?}");
        assert_eq!(err.details.unwrap()["foundAt"], 1);
    }

    #[test]
    fn pathological_repetition_is_linear() {
        // 60,000 identical lines and a hunk of 2,000 of them plus one that is missing: a naive
        // search would compare 10^8 lines per pass.
        let file = "a\n".repeat(30_000);
        let body = format!("@@\n{}-b\n+c\n", "-a\n".repeat(2_000));
        let mut budget = ScanBudget::default();
        let text = format!("*** Begin Patch\n*** Update File: f\n{body}*** End Patch\n");
        let patch = parse(&text, 65_536).unwrap();
        let crate::patch::parse::FileOp::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        let err = apply_hunks("f", &file, hunks, &Cancel::new(), &mut budget).unwrap_err();
        assert_eq!(err.code, Code::EditNotFound);
        assert!(SCAN_BUDGET - budget.0 < 1_000_000, "{} comparisons", SCAN_BUDGET - budget.0);
    }
}
