//! The patch format's parser: effect-free, every error names its line.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: PATH          then lines starting with "+" (the new file's lines)
//! *** Delete File: PATH
//! *** Update File: PATH
//! *** Move to: PATH           (optional, right after Update File)
//! @@ [context line]           a hunk; consecutive @@ lines are anchors located in turn
//!  context / -removed / +added
//! *** End of File             (optional, ends a hunk: it applies at the end of the file)
//! *** End Patch
//! ```
//!
//! Tolerated, as models write it (docs/apply_patch.md lists each form):
//! - the patch wrapped as sent to a shell: `apply_patch <<'EOF'` (or `<<EOF`, `<<"EOF"`, any
//!   delimiter word, with or without the command) ... the delimiter line, or an `apply_patch`
//!   line before `*** Begin Patch`; what is inside must be the whole patch. Text only: nothing
//!   is run;
//! - blank lines before `*** Begin Patch`, after `*** End Patch` and between sections (after an
//!   Add File's last `+` line, after a Delete File, after `*** End of File`), whitespace around
//!   the `***` markers, CRLF line ends;
//! - the first hunk of an Update without a `@@` line;
//! - a blank (empty or whitespace-only) line inside a hunk: an empty context line. Blank lines
//!   at the end of a hunk are kept here and dropped by the locator when the hunk is not found
//!   with them ([`Hunk::trailing_blanks`]);
//! - with the workspace's canonical root, an absolute path beneath it (made relative).
//!
//! Everything else that does not follow the format is `TOOL_ARGUMENTS_INVALID` /
//! `PATCH_INVALID` with the line number (of the text as sent, wrapper included) in the hint and
//! in `details.line`.

use crate::error::{Error, Reason, Result};
use crate::path::RelPath;

/// Largest patch accepted, in UTF-8 bytes.
pub const MAX_PATCH_BYTES: usize = 262_144;
/// Most files one patch may touch (each Add, Delete or Update counts one).
pub const MAX_PATCH_FILES: usize = 100;
/// Most hunks in one patch (all files together).
pub const MAX_PATCH_HUNKS: usize = 1_000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HunkLine {
    Context(String),
    Remove(String),
    Add(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk {
    /// 1-based line of the patch where the hunk starts.
    pub line: usize,
    /// The texts of its `@@ ...` lines, located one after the other before the hunk's lines.
    pub anchors: Vec<String>,
    pub lines: Vec<HunkLine>,
    /// `*** End of File` followed it: it applies at the end of the file.
    pub end_of_file: bool,
}

impl Hunk {
    /// The lines the hunk expects in the file (context and removed).
    pub fn old_lines(&self) -> impl Iterator<Item = &str> {
        self.lines.iter().filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Remove(t) => Some(t.as_str()),
            HunkLine::Add(_) => None,
        })
    }

    /// How many of the hunk's last lines are blank context lines (empty or whitespace only, after
    /// its last added, removed or non-blank context line): the blank lines models leave at the
    /// end of a hunk, before the next `@@`, section or `*** End Patch`. Located with them first,
    /// then without them, one fewer at a time (see [`crate::patch::locate`]).
    pub fn trailing_blanks(&self) -> usize {
        self.lines.iter().rev().take_while(|l| matches!(l, HunkLine::Context(t) if t.trim().is_empty())).count()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileOp {
    Add { path: RelPath, line: usize, content: String },
    Delete { path: RelPath, line: usize },
    Update { path: RelPath, line: usize, move_to: Option<RelPath>, hunks: Vec<Hunk> },
}

impl FileOp {
    pub fn path(&self) -> &RelPath {
        match self {
            FileOp::Add { path, .. } | FileOp::Delete { path, .. } | FileOp::Update { path, .. } => path,
        }
    }
    pub fn line(&self) -> usize {
        match self {
            FileOp::Add { line, .. } | FileOp::Delete { line, .. } | FileOp::Update { line, .. } => *line,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Patch {
    pub ops: Vec<FileOp>,
}

impl Patch {
    /// Every path the patch touches, in order (an Update's Move to right after its source).
    pub fn targets(&self) -> Vec<&RelPath> {
        let mut out = Vec::new();
        for op in &self.ops {
            out.push(op.path());
            if let FileOp::Update { move_to: Some(to), .. } = op {
                out.push(to);
            }
        }
        out
    }
}

pub(crate) fn invalid(line: usize, what: impl std::fmt::Display) -> Error {
    Error::invalid(Reason::PatchInvalid, format!("line {line}: {what}"))
        .with_details(serde_json::json!({ "line": line }))
}

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE: &str = "*** Move to:";
const EOF: &str = "*** End of File";

/// The path of a section header: an absolute path beneath `root` (the workspace's canonical path)
/// followed by `/` counts as the relative path after it ([`crate::path::beneath_root`]); then the
/// path grammar.
fn header_path(rest: &str, line: usize, root: Option<&str>) -> Result<RelPath> {
    let raw = rest.trim();
    if raw.is_empty() {
        return Err(invalid(line, "the header names no path; write it as *** Update File: src/app.py"));
    }
    let raw = root.and_then(|r| crate::path::beneath_root(raw, r)).unwrap_or(raw);
    crate::write::check_path(raw).map_err(|e| {
        let mut hint = format!("line {line}: {}", e.hint.clone().unwrap_or_default());
        if let (true, Some(r)) = (raw.starts_with('/'), root) {
            hint.push_str(&format!(" (an absolute path is accepted only beneath the workspace, {r}/)"));
        }
        let mut details = e.details.clone().unwrap_or_else(|| serde_json::json!({}));
        if let Some(map) = details.as_object_mut() {
            map.insert("line".into(), line.into());
        }
        e.with_hint(hint).with_details(details)
    })
}

/// The commands a wrapper may name: the tool's name, as models write it in a shell.
const COMMANDS: [&str; 2] = ["apply_patch", "applypatch"];

/// A here-document opener, `<<EOF`, `<<'EOF'` or `<<"EOF"` (any delimiter word), after an
/// optional `apply_patch`: the delimiter. `None` for anything else on the line.
fn heredoc_opener(line: &str) -> Option<&str> {
    let mut rest = line.trim();
    for c in COMMANDS {
        if let Some(r) = rest.strip_prefix(c) {
            if r.starts_with([' ', '\t']) || r.starts_with("<<") {
                rest = r.trim_start();
                break;
            }
        }
    }
    let spec = rest.strip_prefix("<<")?.trim_start();
    let word = match spec.chars().next()? {
        q @ ('\'' | '"') => spec.strip_prefix(q)?.strip_suffix(q)?,
        _ => spec,
    };
    let is_word = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    is_word.then_some(word)
}

/// Where the patch is in `lines` (a range) when it comes wrapped as models send it to a shell:
/// a here-document (`apply_patch <<'EOF'` ... `EOF`, `<<EOF`, `<<"EOF"`) or an `apply_patch`
/// line before it. The wrapper is text, never run: what it encloses must be a whole patch and
/// nothing else. Without a wrapper, all of `lines`.
fn unwrap_shell(lines: &[&str]) -> Result<std::ops::Range<usize>> {
    let Some(first) = lines.iter().position(|l| !l.trim().is_empty()) else { return Ok(0..lines.len()) };
    let opener = lines[first].trim();
    if COMMANDS.contains(&opener) {
        return Ok(first + 1..lines.len());
    }
    let Some(word) = heredoc_opener(opener) else { return Ok(0..lines.len()) };
    let last = lines.iter().rposition(|l| !l.trim().is_empty()).unwrap_or(first);
    if last == first || lines[last].trim() != word {
        return Err(invalid(
            last + 1,
            format!("the here-document opened at line {} ends with a line {word}; send the patch alone, from {BEGIN:?} to {END:?}", first + 1),
        ));
    }
    Ok(first + 1..last)
}

/// Parses `text` (no absolute path accepted). `max_file_bytes` bounds an added file's content
/// (write_file's limit).
pub fn parse(text: &str, max_file_bytes: usize) -> Result<Patch> {
    parse_in(text, max_file_bytes, None)
}

/// Parses `text`; `root`, the workspace's canonical path, lets a header name a file by an
/// absolute path beneath it (made relative).
pub fn parse_in(text: &str, max_file_bytes: usize, root: Option<&str>) -> Result<Patch> {
    if text.len() > MAX_PATCH_BYTES {
        return Err(Error::invalid(
            Reason::ContentTooLarge,
            format!(
                "the patch is {} UTF-8 bytes; apply_patch accepts at most {MAX_PATCH_BYTES}: split it into several patches",
                text.len()
            ),
        )
        .with_details(serde_json::json!({ "bytes": text.len(), "limit": MAX_PATCH_BYTES })));
    }
    let all: Vec<&str> = text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let range = unwrap_shell(&all)?;
    // `base` lines come before `lines[0]`: line numbers are the text's own, wrapper included.
    let base = range.start;
    let lines = &all[range];
    // 1-based numbering; blank lines around the markers are skipped.
    let mut i = 0;
    while i < lines.len() && lines[i].trim().is_empty() {
        i += 1;
    }
    if i == lines.len() || lines[i].trim() != BEGIN {
        let at = base + (i + 1).min(lines.len().max(1));
        return Err(invalid(at, format!("a patch starts with the line {BEGIN:?}")));
    }
    let mut end = lines.len();
    while end > i + 1 && lines[end - 1].trim().is_empty() {
        end -= 1;
    }
    if end <= i + 1 || lines[end - 1].trim() != END {
        return Err(invalid(base + end, format!("a patch ends with the line {END:?}")));
    }
    let body = &lines[i + 1..end - 1];
    let first = base + i + 2; // line number of body[0]
    let blank_until_section = |from: usize| body[from..].iter().take_while(|l| !l.starts_with("***")).all(|l| l.trim().is_empty());
    let mut ops = Vec::new();
    let mut hunk_count = 0usize;
    let mut k = 0;
    while k < body.len() {
        let n = first + k;
        let l = body[k].trim();
        if l.is_empty() {
            // Blank lines between sections.
            k += 1;
            continue;
        }
        if let Some(rest) = l.strip_prefix(ADD) {
            let path = header_path(rest, n, root)?;
            k += 1;
            let mut content = String::new();
            while k < body.len() && !body[k].starts_with("***") {
                match body[k].strip_prefix('+') {
                    Some(t) => {
                        content.push_str(t);
                        content.push('\n');
                    }
                    // Blank lines after the last + line end the section; one before a + line
                    // is ambiguous (an empty line of the file is written "+").
                    None if blank_until_section(k) => break,
                    None => {
                        return Err(invalid(
                            first + k,
                            "every line of an Add File section starts with + (a + alone for an empty line)",
                        ))
                    }
                }
                k += 1;
            }
            if content.len() > max_file_bytes {
                return Err(Error::invalid(
                    Reason::ContentTooLarge,
                    format!(
                        "line {n}: the added file {} would be {} UTF-8 bytes; files written here hold at most {max_file_bytes}",
                        path.as_str(),
                        content.len()
                    ),
                )
                .with_details(serde_json::json!({ "line": n, "bytes": content.len(), "limit": max_file_bytes })));
            }
            ops.push(FileOp::Add { path, line: n, content });
        } else if let Some(rest) = l.strip_prefix(DELETE) {
            let path = header_path(rest, n, root)?;
            k += 1;
            while k < body.len() && body[k].trim().is_empty() {
                k += 1;
            }
            if k < body.len() && !body[k].starts_with("***") {
                return Err(invalid(first + k, "a Delete File section has no lines; start the next section with *** "));
            }
            ops.push(FileOp::Delete { path, line: n });
        } else if let Some(rest) = l.strip_prefix(UPDATE) {
            let path = header_path(rest, n, root)?;
            k += 1;
            let mut move_to = None;
            if k < body.len() {
                if let Some(rest) = body[k].trim().strip_prefix(MOVE) {
                    move_to = Some(header_path(rest, first + k, root)?);
                    k += 1;
                }
            }
            let mut hunks: Vec<Hunk> = Vec::new();
            let mut current: Option<Hunk> = None;
            loop {
                let at = first + k;
                let Some(&raw) = body.get(k) else { break };
                if raw.trim_end() == EOF {
                    match current.as_mut() {
                        Some(h) if !h.lines.is_empty() => h.end_of_file = true,
                        _ => return Err(invalid(at, "*** End of File ends a hunk; it must follow the hunk's lines")),
                    }
                    hunks.push(current.take().unwrap());
                    k += 1;
                    continue;
                }
                if raw.starts_with("***") {
                    break;
                }
                if let Some(rest) = raw.strip_prefix("@@") {
                    let anchor = rest.trim();
                    match current.as_mut() {
                        // Consecutive @@ lines: more anchors for the same hunk.
                        Some(h) if h.lines.is_empty() => {
                            if !anchor.is_empty() {
                                h.anchors.push(anchor.to_string())
                            }
                        }
                        _ => {
                            if let Some(h) = current.take() {
                                hunks.push(h);
                            }
                            let anchors = if anchor.is_empty() { vec![] } else { vec![anchor.to_string()] };
                            current = Some(Hunk { line: at, anchors, lines: vec![], end_of_file: false });
                        }
                    }
                    k += 1;
                    continue;
                }
                let blank = raw.trim().is_empty();
                if blank && current.is_none() {
                    // Between hunks (after *** End of File, before the first hunk): no hunk to
                    // be part of.
                    k += 1;
                    continue;
                }
                let hl = match raw.chars().next() {
                    Some(' ') => HunkLine::Context(raw[1..].to_string()),
                    Some('-') => HunkLine::Remove(raw[1..].to_string()),
                    Some('+') => HunkLine::Add(raw[1..].to_string()),
                    // An empty (or whitespace-only) line: an empty context line.
                    _ if blank => HunkLine::Context(raw.to_string()),
                    _ => {
                        return Err(invalid(
                            at,
                            "a hunk line starts with a space (context), - (removed) or + (added); start a hunk with @@",
                        ))
                    }
                };
                current.get_or_insert_with(|| Hunk { line: at, anchors: vec![], lines: vec![], end_of_file: false }).lines.push(hl);
                k += 1;
            }
            if let Some(h) = current.take() {
                hunks.push(h);
            }
            if let Some(h) = hunks.iter().find(|h| h.lines.is_empty()) {
                return Err(invalid(h.line, "this hunk has no lines; follow @@ with context, - and + lines"));
            }
            if hunks.is_empty() && move_to.is_none() {
                return Err(invalid(n, "an Update File section needs at least one hunk (@@ then context, - and + lines)"));
            }
            hunk_count += hunks.len();
            if hunk_count > MAX_PATCH_HUNKS {
                return Err(invalid(n, format!("the patch has more than {MAX_PATCH_HUNKS} hunks; split it into several patches")));
            }
            ops.push(FileOp::Update { path, line: n, move_to, hunks });
        } else if l == BEGIN || l == END {
            return Err(invalid(n, format!("{l:?} may appear only once, at the start or end of the patch")));
        } else if l.starts_with(MOVE) {
            return Err(invalid(n, "*** Move to: must come right after *** Update File:"));
        } else if l == EOF {
            return Err(invalid(n, "*** End of File ends a hunk of an Update File section"));
        } else {
            return Err(invalid(
                n,
                "expected a section header: *** Add File: PATH, *** Delete File: PATH or *** Update File: PATH",
            ));
        }
        if ops.len() > MAX_PATCH_FILES {
            return Err(invalid(n, format!("a patch touches at most {MAX_PATCH_FILES} files; split it into several patches")));
        }
    }
    if ops.is_empty() {
        return Err(invalid(first, "the patch changes no file; add *** Add File, *** Delete File or *** Update File sections"));
    }
    // One section per file: a path named twice (as a section or a Move to) is refused.
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for op in &ops {
        let mut names = vec![(op.path().as_str(), op.line())];
        if let FileOp::Update { move_to: Some(to), hunks, line, .. } = op {
            if to.as_str() != op.path().as_str() {
                names.push((to.as_str(), *line + 1));
            }
            let _ = hunks;
        }
        for (name, line) in names {
            if let Some(&(_, before)) = seen.iter().find(|(s, _)| *s == name) {
                return Err(invalid(line, format!("{name} is already changed at line {before}; give each file one section")));
            }
            seen.push((name, line));
        }
    }
    Ok(Patch { ops })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 65_536;

    fn p(text: &str) -> Result<Patch> {
        parse(text, MAX)
    }

    fn err_line(text: &str) -> (String, usize) {
        let e = p(text).unwrap_err();
        assert_eq!(e.reason(), Some("PATCH_INVALID"), "{e:?}");
        let line = e.details.as_ref().unwrap()["line"].as_u64().unwrap() as usize;
        assert!(e.hint.as_ref().unwrap().starts_with(&format!("line {line}: ")), "{e:?}");
        (e.hint.unwrap(), line)
    }

    fn ctx(s: &str) -> HunkLine {
        HunkLine::Context(s.into())
    }
    fn rm(s: &str) -> HunkLine {
        HunkLine::Remove(s.into())
    }
    fn add(s: &str) -> HunkLine {
        HunkLine::Add(s.into())
    }

    #[test]
    fn parses_every_section_kind() {
        let text = [
            "*** Begin Patch",
            "*** Add File: docs/notes.md",
            "+# Notes",
            "+",
            "+first",
            "*** Delete File: old/legacy.txt",
            "*** Update File: src/app.py",
            "*** Move to: src/main.py",
            "@@ def greet(name):",
            "-    print(\"hi\")",
            "+    print(f\"hello {name}\")",
            " ",
            "@@",
            " tail",
            "+more",
            "*** End of File",
            "*** End Patch",
            "",
        ]
        .join("\n");
        let text = text.as_str();
        let patch = p(text).unwrap();
        assert_eq!(patch.ops.len(), 3);
        match &patch.ops[0] {
            FileOp::Add { path, line, content } => {
                assert_eq!((path.as_str(), *line), ("docs/notes.md", 2));
                assert_eq!(content, "# Notes\n\nfirst\n");
            }
            o => panic!("{o:?}"),
        }
        assert!(matches!(&patch.ops[1], FileOp::Delete { path, line: 6 } if path.as_str() == "old/legacy.txt"));
        match &patch.ops[2] {
            FileOp::Update { path, line, move_to, hunks } => {
                assert_eq!((path.as_str(), *line), ("src/app.py", 7));
                assert_eq!(move_to.as_ref().unwrap().as_str(), "src/main.py");
                assert_eq!(hunks.len(), 2);
                assert_eq!(hunks[0].anchors, vec!["def greet(name):".to_string()]);
                assert_eq!(hunks[0].lines, vec![rm("    print(\"hi\")"), add("    print(f\"hello {name}\")"), ctx("")]);
                assert!(!hunks[0].end_of_file);
                assert_eq!(hunks[1].line, 13);
                assert!(hunks[1].anchors.is_empty());
                assert_eq!(hunks[1].lines, vec![ctx("tail"), add("more")]);
                assert!(hunks[1].end_of_file);
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(patch.targets().iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["docs/notes.md", "old/legacy.txt", "src/app.py", "src/main.py"]);
    }

    #[test]
    fn tolerates_what_models_write() {
        // CRLF, blank lines around, indented markers, a first hunk without @@, an empty line as
        // empty context, consecutive @@ anchors.
        let text = "\r\n  *** Begin Patch\r\n*** Update File: a.txt\r\n x\r\n\r\n-y\r\n+Y\r\n*** Update File: b.txt\r\n@@ class A\r\n@@   def f(self):\r\n-  pass\r\n+  return 1\r\n  *** End Patch  \r\n\r\n";
        let patch = p(text).unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        assert_eq!(hunks[0].lines, vec![ctx("x"), ctx(""), rm("y"), add("Y")]);
        let FileOp::Update { hunks, .. } = &patch.ops[1] else { panic!() };
        assert_eq!(hunks[0].anchors, vec!["class A".to_string(), "def f(self):".to_string()]);
        // A pure rename.
        let patch = p("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** End Patch").unwrap();
        assert!(matches!(&patch.ops[0], FileOp::Update { hunks, move_to: Some(_), .. } if hunks.is_empty()));
        // An empty added file.
        let patch = p("*** Begin Patch\n*** Add File: empty.txt\n*** End Patch\n").unwrap();
        assert!(matches!(&patch.ops[0], FileOp::Add { content, .. } if content.is_empty()));
    }

    #[test]
    fn a_blank_line_after_end_of_file_starts_no_phantom_hunk() {
        let patch = p("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End of File\n\n*** End Patch\n").unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        assert_eq!(hunks.len(), 1, "{hunks:?}");
        assert!(hunks[0].end_of_file);
        // Nor a blank line right after the header, before the first hunk.
        let patch = p("*** Begin Patch\n*** Update File: a\n\n\n@@\n-x\n+y\n*** End Patch\n").unwrap();
        let FileOp::Update { hunks, .. } = &patch.ops[0] else { panic!() };
        assert_eq!((hunks.len(), hunks[0].line), (1, 5));
    }

    #[test]
    fn blank_lines_at_the_end_of_a_hunk_are_counted_as_trailing_blanks() {
        // Before the next @@, the next section, *** End of File and *** End Patch.
        let text = "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n\n@@\n z\n\n   \n*** Update File: b\n@@\n-q\n\n*** End of File\n*** Update File: c\n@@\n \n-r\n\n*** End Patch\n";
        let patch = p(text).unwrap();
        let trailing = |i: usize| match &patch.ops[i] {
            FileOp::Update { hunks, .. } => hunks.iter().map(|h| h.trailing_blanks()).collect::<Vec<_>>(),
            _ => panic!(),
        };
        assert_eq!(trailing(0), vec![1, 2]);
        assert_eq!(trailing(1), vec![1]);
        // A blank line in the middle stays an empty context line, not a trailing one.
        assert_eq!(trailing(2), vec![1]);
        let FileOp::Update { hunks, .. } = &patch.ops[2] else { panic!() };
        assert_eq!(hunks[0].lines, vec![ctx(""), rm("r"), ctx("")]);
    }

    #[test]
    fn a_patch_wrapped_for_a_shell_is_read_as_text_with_the_lines_numbered_as_sent() {
        let inner = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        for wrapped in [
            format!("apply_patch <<'EOF'\n{inner}\nEOF\n"),
            format!("apply_patch <<EOF\n{inner}\nEOF"),
            format!("apply_patch <<\"PATCH\"\n{inner}\nPATCH\n"),
            format!("<<'EOF'\n{inner}\nEOF\n"),
            format!("applypatch <<'EOF'\n{inner}\nEOF\n"),
            format!("  apply_patch   <<'EOF'  \n{inner}\n  EOF  \n\n"),
            format!("apply_patch\n{inner}\n"),
            format!("apply_patch\r\n{}\r\n", inner.replace('\n', "\r\n")),
        ] {
            let patch = p(&wrapped).unwrap_or_else(|e| panic!("{wrapped:?}: {e:?}"));
            assert!(matches!(&patch.ops[0], FileOp::Add { content, line: 3, .. } if content == "x\n"), "{wrapped:?}");
        }
        // An error inside names the line of the text as sent.
        let (_, line) = err_line("apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\nx\n*** End Patch\nEOF\n");
        assert_eq!(line, 4);
    }

    #[test]
    fn anything_else_around_a_wrapper_stays_patch_invalid_with_its_line() {
        let inner = "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch";
        let cases: &[(String, usize, &str)] = &[
            (format!("echo hi; apply_patch <<'EOF'\n{inner}\nEOF\n"), 1, "starts with"),
            (format!("cd sub && apply_patch <<'EOF'\n{inner}\nEOF\n"), 1, "starts with"),
            (format!("apply_patch <<'EOF' && rm -rf ~\n{inner}\nEOF\n"), 1, "starts with"),
            (format!("apply_patch <<-EOF\n{inner}\nEOF\n"), 1, "starts with"),
            (format!("apply_patch <<\"EOF'\n{inner}\nEOF\n"), 1, "starts with"),
            (format!("apply_patch --force\n{inner}\n"), 1, "starts with"),
            (format!("apply_patch <<'EOF'\n{inner}\nEOF\necho done\n"), 7, "here-document opened at line 1 ends with a line EOF"),
            (format!("apply_patch <<'EOF'\n{inner}\n"), 5, "here-document opened at line 1"),
            (format!("apply_patch <<'EOF'\n{inner}\nrm -rf /\nEOF\n"), 6, "ends with the line"),
            (format!("apply_patch <<'EOF'\nEOF\n"), 2, "starts with"),
            (format!("apply_patch\napply_patch\n{inner}\n"), 2, "starts with"),
            (format!("{inner}\nEOF\n"), 5, "ends with"),
        ];
        for (text, line, words) in cases {
            let (hint, got) = err_line(text);
            assert_eq!(got, *line, "{text:?}: {hint}");
            assert!(hint.contains(words), "{text:?}: {hint}");
        }
    }

    #[test]
    fn an_absolute_path_is_accepted_only_beneath_the_root() {
        let root = "/work/ws";
        let text = "*** Begin Patch\n*** Add File: /work/ws/src/new.rs\n+x\n*** Update File: /work/ws/a.rs\n*** Move to: /work/ws/b/a.rs\n@@\n-y\n+z\n*** Delete File: rel.txt\n*** End Patch\n";
        let patch = parse_in(text, MAX, Some(root)).unwrap();
        assert_eq!(patch.targets().iter().map(|t| t.as_str()).collect::<Vec<_>>(), ["src/new.rs", "a.rs", "b/a.rs", "rel.txt"]);
        // Without the root (and outside it) it is refused as before, with the line.
        for (text, root) in [(text, None), ("*** Begin Patch\n*** Delete File: /work/wsx/a\n*** End Patch", Some(root)), ("*** Begin Patch\n*** Delete File: /etc/passwd\n*** End Patch", Some(root))] {
            let e = parse_in(text, MAX, root).unwrap_err();
            assert_eq!(e.reason(), Some("INVALID_RELATIVE_PATH"), "{text}");
            assert_eq!(e.details.as_ref().unwrap()["line"], 2);
            if root.is_some() {
                assert!(e.hint.as_ref().unwrap().contains("accepted only beneath the workspace, /work/ws/"), "{e:?}");
            }
        }
    }

    #[test]
    fn every_format_error_names_its_line() {
        let cases: &[(&str, usize, &str)] = &[
            ("", 1, "starts with"),
            ("*** Update File: a\n", 1, "starts with"),
            ("*** Begin Patch\n*** Add File: a\n+x\n", 3, "ends with"),
            ("*** Begin Patch\n*** End Patch\n", 2, "changes no file"),
            ("*** Begin Patch\n*** Add File: a\nx\n*** End Patch", 3, "starts with +"),
            ("*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch", 3, "no lines"),
            ("*** Begin Patch\n*** Update File: a\n*** End Patch", 2, "at least one hunk"),
            ("*** Begin Patch\n*** Update File: a\n@@ x\n*** End Patch", 3, "no lines"),
            ("*** Begin Patch\n*** Update File: a\n@@\n x\n?y\n*** End Patch", 5, "hunk line starts"),
            ("*** Begin Patch\n*** Update File: a\n*** End of File\n*** End Patch", 3, "must follow"),
            ("*** Begin Patch\n*** Frobnicate File: a\n*** End Patch", 2, "section header"),
            ("*** Begin Patch\n*** Move to: b\n*** End Patch", 2, "right after"),
            ("*** Begin Patch\n*** Begin Patch\n*** End Patch", 2, "only once"),
            ("*** Begin Patch\nhello\n*** End Patch", 2, "section header"),
            ("*** Begin Patch\n*** Add File: a\n+x\n*** Delete File: a\n*** End Patch", 4, "already changed at line 2"),
            ("*** Begin Patch\n*** Update File: a\n*** Move to: b\n*** Add File: b\n+x\n*** End Patch", 4, "already changed at line 3"),
            ("*** Begin Patch\n*** Update File:   \n@@\n x\n*** End Patch", 2, "no path"),
            ("*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\ntrailing\n", 5, "ends with"),
        ];
        for (text, line, words) in cases {
            let (hint, got) = err_line(text);
            assert_eq!(got, *line, "{text:?}: {hint}");
            assert!(hint.contains(words), "{text:?}: {hint}");
        }
    }

    #[test]
    fn paths_follow_the_grammar_with_the_line() {
        for bad in ["../x", "/etc/passwd", "a\\b", "C:x", "dir/"] {
            let e = p(&format!("*** Begin Patch\n*** Delete File: ok\n*** Delete File: {bad}\n*** End Patch")).unwrap_err();
            assert_eq!(e.reason(), Some("INVALID_RELATIVE_PATH"), "{bad}");
            assert_eq!(e.details.as_ref().unwrap()["line"], 3, "{bad}");
            assert!(e.hint.unwrap().starts_with("line 3: "));
        }
        let patch = p("*** Begin Patch\n*** Delete File: ./a//b\n*** End Patch").unwrap();
        assert_eq!(patch.ops[0].path().as_str(), "a/b");
        // Two spellings of one path are one file.
        let (_, line) = err_line("*** Begin Patch\n*** Delete File: a/b\n*** Delete File: ./a/b\n*** End Patch");
        assert_eq!(line, 3);
    }

    #[test]
    fn limits() {
        let big = format!("*** Begin Patch\n*** Add File: a\n+{}\n*** End Patch", "x".repeat(MAX_PATCH_BYTES));
        assert_eq!(p(&big).unwrap_err().reason(), Some("CONTENT_TOO_LARGE"));
        let files: String = (0..=MAX_PATCH_FILES).map(|i| format!("*** Delete File: f{i}\n")).collect();
        let (hint, line) = err_line(&format!("*** Begin Patch\n{files}*** End Patch"));
        assert!(hint.contains("at most 100 files"));
        assert_eq!(line, 2 + MAX_PATCH_FILES);
        let ok: String = (0..MAX_PATCH_FILES).map(|i| format!("*** Delete File: f{i}\n")).collect();
        assert_eq!(p(&format!("*** Begin Patch\n{ok}*** End Patch")).unwrap().ops.len(), 100);
        let e = parse("*** Begin Patch\n*** Add File: a\n+0123456789\n*** End Patch", 10).unwrap_err();
        assert_eq!(e.reason(), Some("CONTENT_TOO_LARGE"));
        let hunks: String = (0..=MAX_PATCH_HUNKS).map(|i| format!("@@\n-{i}\n")).collect();
        let (hint, _) = err_line(&format!("*** Begin Patch\n*** Update File: a\n{hunks}*** End Patch"));
        assert!(hint.contains("hunks"));
    }

    #[test]
    fn generated_patches_round_trip_through_the_parser() {
        // A small generator: random sections rendered in the format, parsed back.
        let mut seed = 0x9e3779b97f4a7c15u64;
        let mut next = move |m: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % m
        };
        let words = ["alpha", "", "  indented", "tab\there", "*** not a marker", "@@ nope", "ünïcode", "-dash", "+plus"];
        for _ in 0..300 {
            let mut text = String::from("*** Begin Patch\n");
            let mut want = Vec::new();
            for f in 0..(1 + next(4)) {
                let path = format!("d{f}/file{}.txt", next(1000));
                match next(3) {
                    0 => {
                        let lines: Vec<&str> = (0..next(4)).map(|_| words[next(words.len() as u64) as usize]).collect();
                        text.push_str(&format!("*** Add File: {path}\n"));
                        lines.iter().for_each(|l| text.push_str(&format!("+{l}\n")));
                        want.push(("add", path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()));
                    }
                    1 => {
                        text.push_str(&format!("*** Delete File: {path}\n"));
                        want.push(("delete", path, String::new()));
                    }
                    _ => {
                        text.push_str(&format!("*** Update File: {path}\n@@ anchor\n"));
                        let mut rendered = String::new();
                        for _ in 0..(1 + next(5)) {
                            let w = words[next(words.len() as u64) as usize];
                            let sign = [' ', '-', '+'][next(3) as usize];
                            text.push_str(&format!("{sign}{w}\n"));
                            rendered.push_str(&format!("{sign}{w}\n"));
                        }
                        want.push(("update", path, rendered));
                    }
                }
            }
            text.push_str("*** End Patch\n");
            let patch = p(&text).unwrap_or_else(|e| panic!("{text}\n{e:?}"));
            assert_eq!(patch.ops.len(), want.len());
            for (op, (kind, path, body)) in patch.ops.iter().zip(&want) {
                assert_eq!(op.path().as_str(), path);
                match (op, *kind) {
                    (FileOp::Add { content, .. }, "add") => assert_eq!(content, body),
                    (FileOp::Delete { .. }, "delete") => {}
                    (FileOp::Update { hunks, .. }, "update") => {
                        let back: String = hunks[0]
                            .lines
                            .iter()
                            .map(|l| match l {
                                HunkLine::Context(t) => format!(" {t}\n"),
                                HunkLine::Remove(t) => format!("-{t}\n"),
                                HunkLine::Add(t) => format!("+{t}\n"),
                            })
                            .collect();
                        assert_eq!(&back, body);
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
    }
}
