//! The test report: what every runner's parser produces, cleaned of noise and rendered into a
//! short text the model can act on.
//!
//! Kept: the output of failing tests (message and the stack frames in the workspace), build and
//! compile errors, one result line per package or file, the counts. Dropped: passing tests'
//! output, timings, frames inside dependencies and the runtime, colors, and the absolute paths
//! of the workspace and of the scratch directory (shown relative, or as `$TMPDIR`). The text is
//! cut to [`MAX_REPORT_BYTES`] on a character boundary with `[N more bytes not shown]`.
//!
//! What a runner prints is not trusted to be text for a terminal: every name the model reads
//! (tests, files, packages, test binaries) goes through [`escape_name`], which shows control
//! characters as escapes so that a name cannot start a line of its own; every output text goes
//! through [`strip_controls`], which removes ECMA-48 sequences and C0/C1 controls (keeping `\n`
//! and `\t`). What is kept is bounded: at most [`MAX_FAILURES`] failures, [`MAX_UNITS`] result
//! lines, [`MAX_BUILD_ERRORS`] build errors and [`MAX_RUNNING`] running names, each cut, and
//! what was left out is counted and said.

use std::path::Path;


/// Longest report text, in UTF-8 bytes (before the closing note).
pub const MAX_REPORT_BYTES: usize = 8 * 1024;
/// Longest output kept per failure (structured field and report alike).
pub const MAX_FAILURE_OUTPUT: usize = 1_536;
/// Most failures listed in the structured field (the counts include all of them).
pub const MAX_FAILURES: usize = 50;
/// Longest build error block kept.
pub const MAX_BUILD_ERROR: usize = 3 * 1024;
/// Most build error blocks kept.
pub const MAX_BUILD_ERRORS: usize = 20;
/// Output kept per test while it runs (dropped when it passes): a head and a tail that fit in
/// a failure's budget together with the marker of what was cut.
pub const MAX_TEST_OUTPUT: usize = MAX_FAILURE_OUTPUT - 64;
/// Most result lines (packages, binaries, files) kept; the rest are counted.
pub const MAX_UNITS: usize = 500;
/// Most names of still-running tests kept (a cut run).
pub const MAX_RUNNING: usize = 50;
/// Longest name kept (test, file, package), in UTF-8 bytes after escaping.
pub const MAX_NAME_BYTES: usize = 512;
/// Most reasons kept for which a run's counts cannot be trusted.
pub const MAX_ANOMALIES: usize = 8;

/// One failing test.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct Failure {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    pub output: String,
}

/// The result of one package (go), test binary (cargo) or file (vitest, node).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    pub name: String,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    /// Failed as a whole (build failure, crash, timeout) even without failing tests.
    pub broken: bool,
    /// Said after the counts: `build failed`, `no test files`...
    pub note: Option<String>,
}

impl Unit {
    /// A unit named `name` (escaped with [`escape_name`]).
    pub fn new(name: impl AsRef<str>) -> Self {
        Unit { name: escape_name(name.as_ref()), passed: 0, failed: 0, skipped: 0, broken: false, note: None }
    }

    fn line(&self) -> String {
        let status = if self.failed > 0 || self.broken {
            "FAIL"
        } else if self.passed == 0 && self.skipped == 0 {
            "--"
        } else {
            "ok"
        };
        let mut counts = Vec::new();
        if self.failed > 0 {
            counts.push(format!("{} failed", self.failed));
        }
        if self.passed > 0 {
            counts.push(format!("{} passed", self.passed));
        }
        if self.skipped > 0 {
            counts.push(format!("{} skipped", self.skipped));
        }
        let mut line = format!("{status:<4} {}", self.name);
        if !counts.is_empty() {
            line.push_str(&format!(" ({})", counts.join(", ")));
        }
        if let Some(note) = &self.note {
            line.push_str(&format!(" [{note}]"));
        }
        line
    }
}

/// The verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Status {
    Passed,
    Failed,
    Incomplete,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Passed => "passed",
            Status::Failed => "failed",
            Status::Incomplete => "incomplete",
        }
    }
}

/// How the runner ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// It exited by itself with this code.
    Exited(i32),
    /// A signal ended it (not one sent by the tool: a test may have killed it).
    Signaled(String),
    /// The outer deadline: the tool killed everything after this many milliseconds.
    Deadline(u64),
    /// Neither a code nor a signal is known.
    Unknown,
}

impl Ending {
    /// From an exit code and a signal name as the process layer reports them.
    pub fn from_status(code: Option<i32>, signal: Option<String>) -> Ending {
        match (code, signal) {
            (Some(c), _) => Ending::Exited(c),
            (None, Some(s)) => Ending::Signaled(s),
            (None, None) => Ending::Unknown,
        }
    }

    /// For the report's first line.
    pub fn describe(&self) -> String {
        match self {
            Ending::Exited(c) => format!("exit code {c}"),
            Ending::Signaled(s) => format!("killed by {s}"),
            Ending::Deadline(ms) => format!("stopped at the {ms} ms deadline"),
            Ending::Unknown => "ended without an exit status".to_string(),
        }
    }
}

/// The verdict and why a run is not `passed` beyond its counted failures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub status: Status,
    pub ending: Ending,
    pub reasons: Vec<String>,
}

/// What a parser found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub units: Vec<Unit>,
    pub failures: Vec<Failure>,
    pub build_errors: Vec<String>,
    /// Whether the runner produced any structured result at all (events, results, a report
    /// file). Without one, a non-zero exit means the runner could not start.
    pub structured: bool,
    /// Tests that were running when the run was cut short (outer deadline).
    pub running: Vec<String>,
    /// Whether the runner's own account of the run (libtest's `test result:` lines, go's
    /// package results, node's closing counts, vitest's report totals) was seen for all of it.
    pub runner_summary: bool,
    /// Why the counts cannot be trusted: the runner's account and the events disagree, a test
    /// has conflicting results, the report file was unusable (at most [`MAX_ANOMALIES`]).
    pub anomalies: Vec<String>,
    /// Units, build errors and running names left out of the lists (counted).
    pub units_dropped: u64,
    pub build_errors_dropped: u64,
    pub running_dropped: u64,
}

impl Summary {
    /// Adds a failure (kept when there is room; always counted by the caller). The name and the
    /// file are escaped, the output stripped of terminal controls and cut to its budget.
    pub fn push_failure(&mut self, name: String, file: Option<String>, output: &str) {
        if self.failures.len() < MAX_FAILURES {
            let output = strip_controls(output);
            self.failures.push(Failure {
                name: escape_name(&name),
                file: file.map(|f| escape_name(&f)),
                output: cut_middle(output.trim_end().trim_start_matches('\n'), MAX_FAILURE_OUTPUT),
            });
        }
    }

    pub fn push_build_error(&mut self, text: &str) {
        let text = cut(strip_controls(text).trim_matches('\n'), MAX_BUILD_ERROR);
        if text.is_empty() || self.build_errors.contains(&text) {
            return;
        }
        if self.build_errors.len() < MAX_BUILD_ERRORS {
            self.build_errors.push(text);
        } else {
            self.build_errors_dropped += 1;
        }
    }

    /// A unit's result line (kept when there is room; its counts are the caller's).
    pub fn push_unit(&mut self, unit: Unit) {
        if self.units.len() < MAX_UNITS {
            self.units.push(unit);
        } else {
            self.units_dropped += 1;
        }
    }

    /// A test still running when the run was cut short (escaped; kept when there is room).
    pub fn push_running(&mut self, name: &str) {
        if self.running.len() < MAX_RUNNING {
            self.running.push(escape_name(name));
        } else {
            self.running_dropped += 1;
        }
    }

    /// A reason the counts cannot be trusted (kept once, when there is room).
    pub fn push_anomaly(&mut self, reason: impl Into<String>) {
        let reason = reason.into();
        if self.anomalies.len() < MAX_ANOMALIES && !self.anomalies.contains(&reason) {
            self.anomalies.push(reason);
        }
    }

    /// Whether anything in the summary says a test or the build failed.
    pub fn failing(&self) -> bool {
        self.failed > 0 || !self.build_errors.is_empty() || self.build_errors_dropped > 0 || self.units.iter().any(|u| u.failed > 0 || u.broken)
    }
}

/// Cleans text from a runner for the model: colors removed, the workspace's absolute path made
/// relative, the scratch directory shown as `$TMPDIR`.
#[derive(Clone, Debug)]
pub struct Cleaner {
    root: String,
    scratch: String,
}

impl Cleaner {
    pub fn new(root: &Path, scratch: &Path) -> Self {
        Cleaner { root: root.to_string_lossy().into_owned(), scratch: scratch.to_string_lossy().into_owned() }
    }

    pub fn clean(&self, text: &str) -> String {
        let text = strip_controls(text);
        let text = text.replace(&format!("file://{}/", self.root), "").replace(&format!("{}/", self.root), "");
        if self.scratch.is_empty() {
            return text;
        }
        text.replace(&format!("{}/tmp/", self.scratch), "$TMPDIR/").replace(&format!("{}/", self.scratch), "$SCRATCH/")
    }

    /// A path shown relative to the root when it is inside.
    pub fn path(&self, p: &str) -> String {
        let p = p.strip_prefix("file://").unwrap_or(p);
        match p.strip_prefix(&self.root) {
            Some(rest) if rest.starts_with('/') => rest[1..].to_string(),
            Some("") => ".".to_string(),
            _ => p.to_string(),
        }
    }

    /// A JavaScript error stack cut to what helps: the message lines, then only the frames in
    /// the workspace outside `node_modules` (at most 5).
    pub fn js_error(&self, text: &str) -> String {
        let text = self.clean(text);
        let mut out = Vec::new();
        let mut frames = 0;
        for line in text.lines() {
            let t = line.trim_start();
            if t.starts_with("at ") {
                let internal = t.contains("node_modules")
                    || t.contains("node:")
                    || t.contains("(<anonymous>)")
                    || t == "at <anonymous>"
                    || t.contains(" (/")
                    || t.starts_with("at /")
                    || t.contains("file:///");
                if !internal && frames < 5 {
                    out.push(format!("    {t}"));
                    frames += 1;
                }
            } else {
                out.push(line.to_string());
            }
        }
        out.join("\n").trim_end().to_string()
    }
}

/// Whether `c` is a C0 or C1 control character or DEL.
fn is_control(c: char) -> bool {
    c < ' ' || ('\u{7f}'..='\u{9f}').contains(&c)
}

/// Characters that change how the text around them is shown without being visible: line and
/// paragraph separators, zero-width characters and the bidirectional overrides and isolates.
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// A name for the report: every control character (C0, DEL, C1, `\n`, `\r` and `\t` included)
/// and every invisible formatting character (line separators, bidirectional overrides) shown as
/// an escape (`\n`, `\r`, `\t`, `\u{1b}`), so that no name can start a line of its own, move
/// the cursor or hide text; cut to [`MAX_NAME_BYTES`] with the number of bytes left out. This
/// is the one place names are made safe: units, failures and running tests all go through it.
pub fn escape_name(name: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(name.len().min(MAX_NAME_BYTES));
    for (i, c) in name.char_indices() {
        if out.len() >= MAX_NAME_BYTES {
            let _ = write!(out, "...[{} more bytes]", name.len() - i);
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_control(c) || is_invisible_format(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// Skips the rest of a control sequence (CSI) after its introducer: parameter bytes
/// (`0x30..=0x3F`), intermediate bytes (`0x20..=0x2F`), then one final byte (`0x40..=0x7E`).
/// Anything else ends it unconsumed (so a newline after a cut sequence stays).
fn skip_csi(it: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = it.peek() {
        if ('\u{20}'..='\u{3f}').contains(&c) {
            it.next();
        } else {
            if ('\u{40}'..='\u{7e}').contains(&c) {
                it.next();
            }
            return;
        }
    }
}

/// Skips a control string (OSC, DCS, SOS, PM, APC) after its introducer, through its
/// terminator: BEL, ST (`ESC \` or `0x9C`); an unterminated one ends at the end of the line.
fn skip_string(it: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    while let Some(&c) = it.peek() {
        match c {
            '\n' => return,
            '\u{7}' | '\u{9c}' => {
                it.next();
                return;
            }
            '\u{1b}' => {
                it.next();
                if it.peek() == Some(&'\\') {
                    it.next();
                }
                return;
            }
            _ => {
                it.next();
            }
        }
    }
}

/// Output text for the report: every ECMA-48 control sequence removed (CSI as `ESC [` and as
/// the 8-bit `0x9B`; OSC, DCS, SOS, PM and APC strings, 7- and 8-bit, terminated by BEL or ST;
/// the other escape sequences), then every remaining C0 and C1 control and DEL, except `\n` and
/// `\t` (`\r` and `\b` go too: they would let a line overwrite what came before it).
pub fn strip_controls(text: &str) -> String {
    if !text.chars().any(|c| is_control(c) && c != '\n' && c != '\t') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut it = text.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '\n' | '\t' => out.push(c),
            '\u{1b}' => match it.peek().copied() {
                Some('[') => {
                    it.next();
                    skip_csi(&mut it);
                }
                Some(']' | 'P' | 'X' | '^' | '_') => {
                    it.next();
                    skip_string(&mut it);
                }
                Some(c2) if ('\u{20}'..='\u{2f}').contains(&c2) => {
                    // nF: intermediates, then one final byte.
                    while it.peek().is_some_and(|c| ('\u{20}'..='\u{2f}').contains(c)) {
                        it.next();
                    }
                    if it.peek().is_some_and(|c| ('\u{30}'..='\u{7e}').contains(c)) {
                        it.next();
                    }
                }
                Some(c2) if ('\u{30}'..='\u{7e}').contains(&c2) => {
                    it.next();
                }
                _ => {}
            },
            '\u{9b}' => skip_csi(&mut it),
            '\u{90}' | '\u{98}' | '\u{9d}' | '\u{9e}' | '\u{9f}' => skip_string(&mut it),
            c if is_control(c) => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` cut to at most `max` bytes on a character boundary, with `[N more bytes not shown]`.
pub fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}\n[{} more bytes not shown]", &text[..end], text.len() - end)
}

/// `text` cut to about `max` bytes keeping its start (a quarter) and its end (where a failing
/// test's message usually is), with `[N more bytes not shown]` between; character boundaries
/// are respected.
pub fn cut_middle(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut head = max / 4;
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len() - (max - max / 4);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!("{}\n[{} more bytes not shown]\n{}", &text[..head], tail - head, &text[tail..])
}

/// Text kept by its first quarter and its last three quarters of `limit` bytes (the output of a
/// test while it runs: its end holds the failure). Memory is the limit, whatever is pushed: a
/// head buffer and a ring buffer for the tail.
#[derive(Clone, Debug)]
pub struct Kept {
    kept: crate::process::HeadTail,
    total: u64,
}

impl Kept {
    pub fn new(limit: usize) -> Self {
        Kept { kept: crate::process::HeadTail::new(limit / 4, limit - limit / 4), total: 0 }
    }

    pub fn push(&mut self, s: &str) {
        use crate::process::Sink as _;
        self.total += s.len() as u64;
        self.kept.push(s.as_bytes());
    }

    pub fn push_line(&mut self, s: &str) {
        self.push(s);
        if !s.ends_with('\n') {
            self.push("\n");
        }
    }

    /// Bytes pushed.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Bytes pushed and not kept.
    pub fn omitted(&self) -> u64 {
        self.kept.clone().finish().omitted_bytes
    }

    /// The head, then `[N bytes omitted]` when something was cut, then the tail.
    pub fn text(&self) -> String {
        self.kept.clone().finish().text
    }
}

/// Indents every line of `text` by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") }).collect::<Vec<_>>().join("\n")
}

/// The report text: a summary line whose first word after the runner is the verdict
/// ([`super::verdict`]), why a run is not complete, build errors, failures with their output,
/// one line per unit (failing ones first), cut to [`MAX_REPORT_BYTES`].
pub fn render(runner: &str, s: &Summary, verdict: &Verdict, note: Option<&str>) -> String {
    let mut text = String::new();
    let mut head = format!("{runner}: {}: {} passed, {} failed, {} skipped", verdict.status.as_str(), s.passed, s.failed, s.skipped);
    let build_errors = s.build_errors.len() as u64 + s.build_errors_dropped;
    if build_errors > 0 {
        head.push_str(&format!(", {build_errors} build error{}", if build_errors == 1 { "" } else { "s" }));
    }
    head.push_str(&format!(" ({})", verdict.ending.describe()));
    text.push_str(&head);
    text.push('\n');
    if s.passed + s.failed + s.skipped == 0 && build_errors == 0 {
        text.push_str("no tests ran\n");
    }
    for reason in &verdict.reasons {
        text.push_str(&format!("{}: {reason}\n", if verdict.status == Status::Incomplete { "incomplete" } else { "also" }));
    }
    if let Some(note) = note {
        text.push_str(&format!("note: {note}\n"));
    }
    if !s.build_errors.is_empty() {
        text.push_str("\nbuild errors:\n");
        for e in &s.build_errors {
            text.push_str(&indent(e, 2));
            text.push('\n');
        }
        if s.build_errors_dropped > 0 {
            text.push_str(&format!("  ({} more build errors not listed)\n", s.build_errors_dropped));
        }
    }
    if !s.failures.is_empty() {
        text.push_str("\nfailures:\n");
        for f in &s.failures {
            match &f.file {
                Some(file) => text.push_str(&format!("- {} ({file})\n", f.name)),
                None => text.push_str(&format!("- {}\n", f.name)),
            }
            if !f.output.is_empty() {
                text.push_str(&indent(&f.output, 4));
                text.push('\n');
            }
        }
        let unlisted = s.failed.saturating_sub(s.failures.len() as u64);
        if unlisted > 0 && s.failures.len() >= MAX_FAILURES {
            text.push_str(&format!("  ({unlisted} more failures not listed)\n"));
        }
    }
    if !s.running.is_empty() {
        text.push_str("\nstill running when stopped:\n");
        for name in &s.running {
            text.push_str(&format!("- {name}\n"));
        }
        if s.running_dropped > 0 {
            text.push_str(&format!("  ({} more not listed)\n", s.running_dropped));
        }
    }
    if !s.units.is_empty() {
        text.push_str("\nresults:\n");
        let (bad, good): (Vec<&Unit>, Vec<&Unit>) = s.units.iter().partition(|u| u.failed > 0 || u.broken);
        for u in bad.into_iter().chain(good) {
            text.push_str(&u.line());
            text.push('\n');
        }
        if s.units_dropped > 0 {
            text.push_str(&format!("({} more results not listed)\n", s.units_dropped));
        }
    }
    // The whole text, marker included, stays within the limit.
    let text = text.trim_end();
    if text.len() <= MAX_REPORT_BYTES {
        return text.to_string();
    }
    cut(text, MAX_REPORT_BYTES - 48)
}

/// Bytes of one text kept in order up to a limit, with the rest counted.
#[derive(Clone, Debug, Default)]
pub struct Bounded {
    text: String,
    limit: usize,
    dropped: u64,
}

impl Bounded {
    pub fn new(limit: usize) -> Self {
        Bounded { text: String::new(), limit, dropped: 0 }
    }

    pub fn push(&mut self, s: &str) {
        let room = self.limit.saturating_sub(self.text.len());
        if s.len() <= room {
            self.text.push_str(s);
            return;
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.dropped += (s.len() - end) as u64;
    }

    pub fn push_line(&mut self, s: &str) {
        self.push(s);
        if !s.ends_with('\n') {
            self.push("\n");
        }
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn text(&self) -> String {
        if self.dropped == 0 {
            self.text.clone()
        } else {
            format!("{}\n[{} more bytes not shown]", self.text.trim_end(), self.dropped)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_respects_character_boundaries() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "abc\n[1 more bytes not shown]");
        // é is 2 bytes: a cut at 2 would split it.
        assert_eq!(cut("aéb", 2), "a\n[3 more bytes not shown]");
        let long = "😀".repeat(5_000);
        let c = cut(&long, MAX_REPORT_BYTES);
        assert!(c.starts_with(&"😀".repeat(2_048)));
        assert!(c.ends_with(&format!("[{} more bytes not shown]", 20_000 - 8_192)));
    }

    #[test]
    fn failures_keep_their_start_and_their_end() {
        let text = format!("START{}END: the assertion", "x".repeat(10_000));
        let c = cut_middle(&text, 1_000);
        assert!(c.starts_with("START") && c.ends_with("END: the assertion"), "{c}");
        assert!(c.len() < 1_100);
        let mut k = Kept::new(100);
        k.push_line(&"y".repeat(1_000));
        k.push_line("the end");
        assert!(k.text().ends_with("the end\n") && k.text().contains("bytes omitted]"));
    }

    #[test]
    fn ansi_sequences_are_removed() {
        assert_eq!(strip_controls("\u{1b}[31mred\u{1b}[0m plain \u{1b}[38;5;246m╭\u{1b}[0m"), "red plain ╭");
        assert_eq!(strip_controls("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\b"), "alinkb");
    }

    #[test]
    fn every_ecma48_sequence_and_control_is_stripped_from_output() {
        let cases = [
            ("a\u{9b}31mred\u{9b}0m", "ared"),                        // 8-bit CSI
            ("a\u{1b}[?25l\u{1b}[2J\u{1b}[1;1Hb", "ab"),               // private and cursor CSI
            ("a\u{9d}0;title\u{9c}b", "ab"),                          // 8-bit OSC ended by 8-bit ST
            ("a\u{1b}]0;title\u{1b}\\b", "ab"),                       // OSC ended by ESC \\
            ("a\u{1b}P1$r0m\u{1b}\\b", "ab"),                          // DCS
            ("a\u{1b}_apc\u{7}b\u{1b}^pm\u{1b}\\c\u{1b}Xsos\u{9c}d", "abcd"), // APC, PM, SOS
            ("a\u{1b}(Bb\u{1b}7c\u{1b}=d", "abcd"),                     // nF, Fp, Fs
            ("over\rwrite\u{8}\u{8}x\u{7}\u{0}\u{7f}\u{85}", "overwritex"), // CR, BS, BEL, NUL, DEL, NEL
            ("keep\n\ttabs", "keep\n\ttabs"),
            ("unterminated \u{1b}]8;;http://x\nnext line", "unterminated \nnext line"),
        ];
        for (input, want) in cases {
            assert_eq!(strip_controls(input), want, "{input:?}");
        }
    }

    #[test]
    fn names_are_escaped_and_bounded() {
        assert_eq!(escape_name("a\nb\tc\rd\u{1b}[31m\u{9b}\u{2028}\u{202e}e"), "a\\nb\\tc\\rd\\u{1b}[31m\\u{9b}\\u{2028}\\u{202e}e");
        assert_eq!(escape_name("plain/test name > sub"), "plain/test name > sub");
        let long = escape_name(&"n".repeat(10_000));
        assert!(long.len() < MAX_NAME_BYTES + 32 && long.ends_with(&format!("...[{} more bytes]", 10_000 - MAX_NAME_BYTES)), "{long}");
        let mut u = Unit::new("x\nok   forged (1 passed)");
        u.passed = 1;
        assert_eq!(u.line(), "ok   x\\nok   forged (1 passed) (1 passed)");
    }

    #[test]
    fn paths_and_stacks_are_cleaned() {
        let c = Cleaner::new(Path::new("/w/root"), Path::new("/tmp/workcell-scratch-1"));
        assert_eq!(c.path("/w/root/test/a.js"), "test/a.js");
        assert_eq!(c.path("file:///w/root/test/a.js"), "test/a.js");
        assert_eq!(c.path("/elsewhere/a.js"), "/elsewhere/a.js");
        assert_eq!(c.clean("at /w/root/src/x.ts:3 in /tmp/workcell-scratch-1/tmp/go-build1"), "at src/x.ts:3 in $TMPDIR/go-build1");
        assert_eq!(c.clean("/tmp/workcell-scratch-1/gopath/x /tmp/workcell-scratch-10"), "$SCRATCH/gopath/x /tmp/workcell-scratch-10");
        let stack = "AssertionError: expected 2 to be 3\n    at /w/root/test/a.test.ts:3:72\n    at file:///w/root/node_modules/@vitest/runner/dist/x.js:1:1\n    at new Promise (<anonymous>)\n    at Test.run (node:internal/test_runner/test:796:25)\n    at TestContext.<anonymous> (/w/root/test/b.test.js:3:65)";
        assert_eq!(
            c.js_error(stack),
            "AssertionError: expected 2 to be 3\n    at test/a.test.ts:3:72\n    at TestContext.<anonymous> (test/b.test.js:3:65)"
        );
    }

    #[test]
    fn the_report_is_ordered_and_bounded() {
        let mut s = Summary { passed: 500, failed: 1, runner_summary: true, ..Summary::default() };
        let mut ok = Unit::new("pkg/ok");
        ok.passed = 500;
        let mut bad = Unit::new("pkg/bad");
        bad.failed = 1;
        s.units = vec![ok, bad];
        s.push_failure("TestX".into(), Some("pkg/bad".into()), "x_test.go:4: want 1, got 2\n");
        let r = render("go", &s, &crate::testrun::verdict::decide(&crate::testrun::verdict::Ending::Exited(1), &s), None);
        assert_eq!(
            r,
            "go: failed: 500 passed, 1 failed, 0 skipped (exit code 1)\n\nfailures:\n- TestX (pkg/bad)\n    x_test.go:4: want 1, got 2\n\nresults:\nFAIL pkg/bad (1 failed)\nok   pkg/ok (500 passed)"
        );
        // Thousands of units: cut at 8 KiB with the note.
        s.units = (0..2_000).map(|i| Unit { passed: 1, ..Unit::new(format!("pkg/p{i}")) }).collect();
        let r = render("go", &s, &crate::testrun::verdict::decide(&crate::testrun::verdict::Ending::Exited(1), &s), None);
        assert!(r.len() <= MAX_REPORT_BYTES);
        assert!(r.ends_with("more bytes not shown]"));
        assert!(r.contains("want 1, got 2"));
    }

    #[test]
    fn bounded_text_counts_what_it_drops() {
        let mut b = Bounded::new(5);
        b.push("abc");
        b.push("déf");
        assert_eq!(b.text(), "abcd\n[3 more bytes not shown]");
    }
}
