//! The test report: what every runner's parser produces, cleaned of noise and rendered into a
//! short text the model can act on.
//!
//! Kept: the output of failing tests (message and the stack frames in the workspace), build and
//! compile errors, one result line per package or file, the counts. Dropped: passing tests'
//! output, timings, frames inside dependencies and the runtime, colors, and the absolute paths
//! of the workspace and of the scratch directory (shown relative, or as `$TMPDIR`). The text is
//! cut to [`MAX_REPORT_BYTES`] on a character boundary with `[N more bytes not shown]`.

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
/// Output kept per test while it runs (dropped when it passes).
pub const MAX_TEST_OUTPUT: usize = 4 * 1024;

/// One failing test.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub name: String,
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
    pub fn new(name: impl Into<String>) -> Self {
        Unit { name: name.into(), passed: 0, failed: 0, skipped: 0, broken: false, note: None }
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
}

impl Summary {
    /// Adds a failure (kept when there is room; always counted by the caller).
    pub fn push_failure(&mut self, name: String, file: Option<String>, output: &str) {
        if self.failures.len() < MAX_FAILURES {
            self.failures.push(Failure { name, file, output: cut_middle(output.trim_end().trim_start_matches('\n'), MAX_FAILURE_OUTPUT) });
        }
    }

    pub fn push_build_error(&mut self, text: &str) {
        let text = cut(text.trim_matches('\n'), MAX_BUILD_ERROR);
        if !text.is_empty() && self.build_errors.len() < MAX_BUILD_ERRORS && !self.build_errors.contains(&text) {
            self.build_errors.push(text);
        }
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
        let text = strip_ansi(text);
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

/// Removes ANSI escape sequences (CSI and OSC) from `text`.
pub fn strip_ansi(text: &str) -> String {
    if !text.contains('\u{1b}') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('[') => {
                chars.next();
                // Parameters and intermediates, then one final byte in @..~.
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' && chars.peek() == Some(&'\\') {
                        chars.next();
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
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
/// test while it runs: its end holds the failure).
#[derive(Clone, Debug)]
pub struct Kept(crate::process::HeadTail);

impl Kept {
    pub fn new(limit: usize) -> Self {
        Kept(crate::process::HeadTail::new(limit / 4, limit - limit / 4))
    }

    pub fn push(&mut self, s: &str) {
        use crate::process::Sink as _;
        self.0.push(s.as_bytes());
    }

    pub fn push_line(&mut self, s: &str) {
        self.push(s);
        if !s.ends_with('\n') {
            self.push("\n");
        }
    }

    pub fn text(&self) -> String {
        self.0.clone().finish().text
    }
}

/// Indents every line of `text` by `n` spaces.
fn indent(text: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    text.lines().map(|l| if l.is_empty() { String::new() } else { format!("{pad}{l}") }).collect::<Vec<_>>().join("\n")
}

/// The report text: a summary line, build errors, failures with their output, one line per
/// unit (failing ones first), cut to [`MAX_REPORT_BYTES`].
pub fn render(runner: &str, s: &Summary, exit_code: Option<i32>, note: Option<&str>) -> String {
    let mut text = String::new();
    let mut head = format!("{runner}: {} passed, {} failed, {} skipped", s.passed, s.failed, s.skipped);
    if !s.build_errors.is_empty() {
        head.push_str(&format!(", {} build error{}", s.build_errors.len(), if s.build_errors.len() == 1 { "" } else { "s" }));
    }
    match exit_code {
        Some(code) => head.push_str(&format!(" (exit code {code})")),
        None => head.push_str(" (stopped)"),
    }
    text.push_str(&head);
    text.push('\n');
    if s.passed + s.failed + s.skipped == 0 && s.build_errors.is_empty() {
        text.push_str("no tests ran\n");
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
    }
    if !s.units.is_empty() {
        text.push_str("\nresults:\n");
        let (bad, good): (Vec<&Unit>, Vec<&Unit>) = s.units.iter().partition(|u| u.failed > 0 || u.broken);
        for u in bad.into_iter().chain(good) {
            text.push_str(&u.line());
            text.push('\n');
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
        assert_eq!(strip_ansi("\u{1b}[31mred\u{1b}[0m plain \u{1b}[38;5;246m╭\u{1b}[0m"), "red plain ╭");
        assert_eq!(strip_ansi("a\u{1b}]8;;http://x\u{7}link\u{1b}]8;;\u{1b}\\b"), "alinkb");
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
        let mut s = Summary { passed: 500, failed: 1, ..Summary::default() };
        let mut ok = Unit::new("pkg/ok");
        ok.passed = 500;
        let mut bad = Unit::new("pkg/bad");
        bad.failed = 1;
        s.units = vec![ok, bad];
        s.push_failure("TestX".into(), Some("pkg/bad".into()), "x_test.go:4: want 1, got 2\n");
        let r = render("go", &s, Some(1), None);
        assert_eq!(
            r,
            "go: 500 passed, 1 failed, 0 skipped (exit code 1)\n\nfailures:\n- TestX (pkg/bad)\n    x_test.go:4: want 1, got 2\n\nresults:\nFAIL pkg/bad (1 failed)\nok   pkg/ok (500 passed)"
        );
        // Thousands of units: cut at 8 KiB with the note.
        s.units = (0..2_000).map(|i| Unit { passed: 1, ..Unit::new(format!("pkg/p{i}")) }).collect();
        let r = render("go", &s, Some(1), None);
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
