//! `node --test` with a small reporter of ours ([`reporter_source`]), written to the scratch
//! directory for each call (readable by the runner, not writable: [`super::confine`]): it turns
//! the runner's events into one JSON line each, behind a random prefix, with the files'
//! stdout/stderr in pieces of at most 16 KiB (the runner reports output per file, not per
//! test). The parser keeps of each file's output a head and a tail ([`FILE_OUTPUT`] bytes, a
//! ring buffer: never the whole output) until the file passes; a failing test's report carries
//! its file's output with the number of bytes printed and cut. The runner's closing counts
//! (`pass`, `fail`, `cancelled`, `skipped`, `todo`) are checked against the events.
//!
//! Counting: tests only (suites and the per-file entries are containers). A file that fails
//! without having reported a test could not load: its stderr is a build error. A file that hit
//! the per-test timeout (`--test-timeout`, the inner deadline) is killed by the runner; the tests
//! of that file that had started and never reported are named as failures.

use std::collections::HashMap;

use super::report::{cut_middle, Bounded, Cleaner, Kept, Summary, Unit, MAX_FAILURES, MAX_NAME_BYTES};
use super::sink::Parser;

/// Per-file output kept while the file runs: its first quarter and last three quarters.
pub const FILE_OUTPUT: usize = 768;
/// Longest failure message kept before the file's output is added.
const MESSAGE_BUDGET: usize = 640;
/// Output given to a file that failed to load (its error is in it).
const LOAD_OUTPUT: usize = 4 * 1024;
/// Most files tracked by name; events of further files are counted in one unit.
pub const MAX_FILES: usize = 10_000;

/// The reporter module: an async generator over the runner's events.
pub fn reporter_source(prefix: &str) -> String {
    format!(
        r#"// workcell's reporter for node --test: one JSON line per event, behind a per-call prefix.
const PREFIX = {prefix:?};
const PIECE = 16384;
const text = (v, n) => (typeof v === "string" ? v : String(v ?? "")).slice(0, n);
export default async function* workcellReporter(source) {{
  for await (const event of source) {{
    const d = event.data ?? {{}};
    let o;
    switch (event.type) {{
      case "test:dequeue":
        o = {{ e: "start", name: d.name, file: d.file, nesting: d.nesting }};
        break;
      case "test:pass":
      case "test:fail": {{
        o = {{
          e: event.type === "test:pass" ? "pass" : "fail",
          name: d.name,
          file: d.file,
          nesting: d.nesting,
          suite: d.details?.type === "suite",
          skip: d.skip !== undefined && d.skip !== false,
          todo: d.todo !== undefined && d.todo !== false,
        }};
        const err = d.details?.error;
        if (err) {{
          const cause = err.cause ?? err;
          o.error = {{
            type: err.failureType,
            message: text(cause?.message ?? cause, 4096),
            stack: typeof cause?.stack === "string" ? cause.stack.slice(0, 8192) : undefined,
          }};
        }}
        break;
      }}
      case "test:diagnostic":
        // The runner's closing counts: no file, top level.
        if (d.file !== undefined || d.nesting !== 0) continue;
        o = {{ e: "count", message: text(d.message, 200) }};
        break;
      case "test:stdout":
      case "test:stderr": {{
        const message = text(d.message, 1 << 30);
        for (let i = 0; i < message.length; i += PIECE) {{
          yield PREFIX + " " + JSON.stringify({{ e: "out", file: d.file, text: message.slice(i, i + PIECE) }}) + "\n";
        }}
        continue;
      }}
      default:
        continue;
    }}
    yield PREFIX + " " + JSON.stringify(o) + "\n";
  }}
}}
"#
    )
}

struct File {
    unit: Unit,
    reported: u64,
    /// Tests that started and have no result yet: (nesting, full name).
    started: Vec<(u64, String)>,
    /// Names of the enclosing tests by nesting level.
    stack: Vec<String>,
    /// A head and a tail of what the file printed, until it passes.
    output: Kept,
    /// Whether any failure of this file was recorded (its output is then kept).
    failing: bool,
    /// A head of what the file printed, for a file that fails to load.
    load_output: Bounded,
}

impl File {
    fn new(name: &str) -> Self {
        File {
            unit: Unit::new(name),
            reported: 0,
            started: Vec::new(),
            stack: Vec::new(),
            output: Kept::new(FILE_OUTPUT),
            failing: false,
            load_output: Bounded::new(LOAD_OUTPUT),
        }
    }
}

/// A failure recorded while the run goes on; its file's output is added at the end.
struct Pending {
    file: usize,
    name: String,
    message: String,
}

/// The runner's closing counts.
#[derive(Default)]
struct Counts {
    pass: Option<u64>,
    fail: Option<u64>,
    cancelled: Option<u64>,
    skipped: Option<u64>,
    todo: Option<u64>,
}

pub struct NodeParser {
    cleaner: Cleaner,
    prefix: String,
    files: Vec<File>,
    index: HashMap<String, usize>,
    summary: Summary,
    pending: Vec<Pending>,
    /// Failures of tests (not of suites' hooks), as the runner counts them.
    test_failed: u64,
    /// Files that failed as a whole (could not load, stopped by the timeout): the runner counts
    /// each as one failure.
    file_failed: u64,
    counts: Counts,
    other: Bounded,
}

impl NodeParser {
    pub fn new(cleaner: Cleaner, prefix: String) -> Self {
        NodeParser {
            cleaner,
            prefix,
            files: Vec::new(),
            index: HashMap::new(),
            summary: Summary::default(),
            pending: Vec::new(),
            test_failed: 0,
            file_failed: 0,
            counts: Counts::default(),
            other: Bounded::new(4 * 1024),
        }
    }

    fn file(&mut self, path: &str) -> usize {
        if let Some(&i) = self.index.get(path) {
            return i;
        }
        if self.files.len() >= MAX_FILES {
            // Past the cap, every further file shares one unit (counts stay exact).
            return *self.index.entry(String::new()).or_insert_with(|| {
                self.files.push(File::new("(further files)"));
                self.files.len() - 1
            });
        }
        let shown = self.cleaner.path(path);
        self.files.push(File::new(&shown));
        self.index.insert(path.to_string(), self.files.len() - 1);
        self.files.len() - 1
    }

    fn full_name(f: &File, nesting: u64, name: &str) -> String {
        let mut parts: Vec<&str> = f.stack.iter().take(nesting as usize).map(String::as_str).collect();
        parts.push(name);
        let full = parts.join(" > ");
        // Names are matched by this string: keep it bounded.
        if full.len() > 4 * MAX_NAME_BYTES {
            let mut end = 4 * MAX_NAME_BYTES;
            while !full.is_char_boundary(end) {
                end -= 1;
            }
            return full[..end].to_string();
        }
        full
    }

    fn error_text(&self, ev: &serde_json::Value) -> String {
        let err = &ev["error"];
        let stack = err["stack"].as_str().unwrap_or("");
        let message = err["message"].as_str().unwrap_or("");
        if err["type"] == "testTimeoutFailure" {
            return self.cleaner.clean(message);
        }
        if stack.is_empty() || stack == "undefined" {
            self.cleaner.clean(message)
        } else {
            self.cleaner.js_error(stack)
        }
    }

    /// Records a failure (counted always, kept while there is room).
    fn fail(&mut self, fi: usize, name: String, message: String) {
        self.files[fi].unit.failed += 1;
        self.files[fi].failing = true;
        self.summary.failed += 1;
        if self.pending.len() < MAX_FAILURES {
            self.pending.push(Pending { file: fi, name, message: cut_middle(message.trim_end(), MESSAGE_BUDGET) });
        }
    }

    fn event(&mut self, ev: serde_json::Value) {
        let kind = ev["e"].as_str().unwrap_or("");
        if kind == "count" {
            let message = ev["message"].as_str().unwrap_or("");
            if let Some((key, n)) = message.split_once(' ') {
                let n = n.trim().parse::<u64>().ok();
                match key {
                    "pass" => self.counts.pass = n,
                    "fail" => self.counts.fail = n,
                    "cancelled" => self.counts.cancelled = n,
                    "skipped" => self.counts.skipped = n,
                    "todo" => self.counts.todo = n,
                    _ => {}
                }
            }
            return;
        }
        let Some(path) = ev["file"].as_str().map(str::to_string) else { return };
        let fi = self.file(&path);
        let name = ev["name"].as_str().unwrap_or("").to_string();
        let nesting = ev["nesting"].as_u64().unwrap_or(0);
        let file_level = nesting == 0 && name == path;
        match kind {
            "out" => {
                let text = ev["text"].as_str().unwrap_or("");
                let f = &mut self.files[fi];
                f.output.push(text);
                if f.reported == 0 {
                    f.load_output.push(text);
                }
            }
            "start" if !file_level => {
                let f = &mut self.files[fi];
                f.stack.truncate(nesting as usize);
                while f.stack.len() < nesting as usize {
                    f.stack.push(String::new());
                }
                let full = Self::full_name(f, nesting, &name);
                f.stack.push(name);
                f.started.push((nesting, full));
            }
            "pass" | "fail" if !file_level => {
                let f = &mut self.files[fi];
                let full = Self::full_name(f, nesting, &name);
                if let Some(i) = f.started.iter().position(|(n, s)| *n == nesting && *s == full) {
                    f.started.remove(i);
                }
                let suite = ev["suite"].as_bool().unwrap_or(false);
                if suite {
                    // A suite fails through its tests, except when a hook of its own failed.
                    if kind == "fail" && ev["error"]["type"] != "subtestsFailed" {
                        f.reported += 1;
                        let out = self.error_text(&ev);
                        self.fail(fi, full, out);
                    }
                    return;
                }
                f.reported += 1;
                let skip = ev["skip"].as_bool().unwrap_or(false);
                let todo = ev["todo"].as_bool().unwrap_or(false);
                if skip || todo {
                    // A todo test may fail without failing the run: the runner counts it as todo.
                    f.unit.skipped += 1;
                    self.summary.skipped += 1;
                } else if kind == "pass" {
                    f.unit.passed += 1;
                    self.summary.passed += 1;
                } else {
                    self.test_failed += 1;
                    let out = self.error_text(&ev);
                    self.fail(fi, full, out);
                }
            }
            "pass" if file_level => {
                // The file is done and passed: what it printed is not needed.
                let f = &mut self.files[fi];
                if !f.failing {
                    f.output = Kept::new(FILE_OUTPUT);
                }
                f.load_output = Bounded::new(0);
            }
            "fail" if file_level => {
                self.file_failed += 1;
                let kind = ev["error"]["type"].as_str().unwrap_or("").to_string();
                let message = self.error_text(&ev);
                let f = &mut self.files[fi];
                if kind == "testTimeoutFailure" {
                    // The runner killed the file: name what was still running (deepest first).
                    let mut hung: Vec<String> = Vec::new();
                    for (i, (n, s)) in f.started.iter().enumerate() {
                        let deeper_follows = f.started.get(i + 1).is_some_and(|(m, _)| m > n);
                        if !deeper_follows {
                            hung.push(s.clone());
                        }
                    }
                    f.started.clear();
                    f.unit.broken = true;
                    f.unit.note = Some("stopped by the per-test timeout".into());
                    if hung.is_empty() {
                        hung.push(f.unit.name.clone());
                    }
                    for name in hung {
                        self.fail(fi, name, format!("{message}; the test did not finish"));
                    }
                } else if f.reported == 0 {
                    // The file failed before reporting any test: it could not load or crashed.
                    f.unit.broken = true;
                    f.unit.note = Some("failed to load".into());
                    let out = f.load_output.text();
                    let text = if out.trim().is_empty() { message } else { self.cleaner.js_error(&out) };
                    let file = self.files[fi].unit.name.clone();
                    self.summary.push_build_error(&format!("{file}:\n{}", text.trim_end()));
                }
                self.files[fi].load_output = Bounded::new(0);
            }
            _ => {}
        }
    }

    /// The failure's message, then (for the first failure of its file) what the file printed:
    /// its head and tail, with the bytes printed and cut.
    fn failure_output(&self, p: &Pending, with_output: bool) -> String {
        let f = &self.files[p.file];
        if !with_output || f.output.total() == 0 {
            return p.message.clone();
        }
        let printed = f.output.total();
        let kept = f.output.text();
        let cut = f.output.omitted();
        let head = if cut > 0 {
            format!("output of the file ({printed} bytes printed, {cut} cut from the middle):")
        } else {
            format!("output of the file ({printed} bytes printed):")
        };
        format!("{}\n{head}\n{}", p.message, self.cleaner.clean(kept.trim_end()))
    }
}

impl Parser for NodeParser {
    fn counts(&self) -> Option<(u64, u64, u64)> {
        Some((self.summary.passed, self.summary.failed, self.summary.skipped))
    }
    fn is_event(&self, line: &str) -> bool {
        line.starts_with(&self.prefix)
    }
    fn line(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix(&self.prefix).and_then(|r| r.strip_prefix(' ')) {
            if let Ok(ev) = serde_json::from_str::<serde_json::Value>(rest) {
                self.summary.structured = true;
                self.event(ev);
                return;
            }
        }
        if !line.trim().is_empty() {
            self.other.push_line(line);
        }
    }

    fn finish(&mut self, complete: bool) -> Summary {
        let mut s = self.summary.clone();
        let mut shown_output = std::collections::HashSet::new();
        for p in &self.pending {
            let first = shown_output.insert(p.file);
            let out = self.failure_output(p, first);
            s.push_failure(p.name.clone(), Some(self.files[p.file].unit.name.clone()), &out);
        }
        for f in &mut self.files {
            for (_, name) in f.started.drain(..) {
                if complete {
                    // Cancelled by the runner (its file ended first).
                    f.unit.failed += 1;
                    s.failed += 1;
                    s.push_failure(name, Some(f.unit.name.clone()), "the test was cancelled before it finished");
                } else {
                    s.push_running(&format!("{name} ({})", f.unit.name));
                }
            }
        }
        for f in &self.files {
            s.push_unit(f.unit.clone());
        }
        // The runner's closing counts against the events.
        let c = &self.counts;
        if let (Some(pass), Some(fail)) = (c.pass, c.fail) {
            s.runner_summary = true;
            let failed = fail + c.cancelled.unwrap_or(0);
            let skipped = c.skipped.unwrap_or(0) + c.todo.unwrap_or(0);
            let counted = self.test_failed + self.file_failed;
            if pass != s.passed || failed != counted || skipped != s.skipped {
                s.push_anomaly(format!(
                    "node's closing counts ({pass} passed, {failed} failed or cancelled, {skipped} skipped or todo) disagree with its test events ({} passed, {counted} failed, {} skipped)",
                    s.passed, s.skipped
                ));
            }
            // Failures the runner counted and its events did not name are kept.
            if failed > counted && !s.failing() {
                s.failed += failed - counted;
            }
        }
        s
    }

    fn other(&self) -> String {
        self.cleaner.clean(&self.other.text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const P: &str = "WCX";

    fn ev(json: &str) -> String {
        format!("{P} {json}")
    }

    #[test]
    fn events_become_counts_failures_and_build_errors() {
        let mut p = NodeParser::new(Cleaner::new(Path::new("/w"), Path::new("/s")), P.into());
        for l in [
            ev(r#"{"e":"out","file":"/w/test/a.test.js","text":"noise from passing\n"}"#),
            ev(r#"{"e":"out","file":"/w/test/ok.test.js","text":"noise of a passing file\n"}"#),
            ev(r#"{"e":"start","name":"fine","file":"/w/test/ok.test.js","nesting":0}"#),
            ev(r#"{"e":"pass","name":"fine","file":"/w/test/ok.test.js","nesting":0,"suite":false}"#),
            ev(r#"{"e":"pass","name":"/w/test/ok.test.js","file":"/w/test/ok.test.js","nesting":0,"suite":false}"#),
            ev(r#"{"e":"start","name":"passes","file":"/w/test/a.test.js","nesting":0}"#),
            ev(r#"{"e":"pass","name":"passes","file":"/w/test/a.test.js","nesting":0,"suite":false,"skip":false,"todo":false}"#),
            ev(r#"{"e":"start","name":"fails","file":"/w/test/a.test.js","nesting":0}"#),
            ev(r#"{"e":"fail","name":"fails","file":"/w/test/a.test.js","nesting":0,"suite":false,"skip":false,"todo":false,"error":{"type":"testCodeFailure","message":"Expected values to be strictly equal:\n\n2 !== 3\n","stack":"AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n    at TestContext.<anonymous> (/w/test/a.test.js:3:65)\n    at Test.runInAsyncScope (node:async_hooks:206:9)"}}"#),
            ev(r#"{"e":"pass","name":"skipped","file":"/w/test/a.test.js","nesting":0,"suite":false,"skip":true,"todo":false}"#),
            ev(r#"{"e":"start","name":"suite","file":"/w/test/a.test.js","nesting":0}"#),
            ev(r#"{"e":"start","name":"inner bad","file":"/w/test/a.test.js","nesting":1}"#),
            ev(r#"{"e":"fail","name":"inner bad","file":"/w/test/a.test.js","nesting":1,"suite":false,"error":{"type":"testCodeFailure","message":"inner broke","stack":"Error: inner broke\n    at TestContext.<anonymous> (/w/test/a.test.js:5:98)"}}"#),
            ev(r#"{"e":"fail","name":"suite","file":"/w/test/a.test.js","nesting":0,"suite":true,"error":{"type":"subtestsFailed","message":"1 subtest failed"}}"#),
            ev(r#"{"e":"start","name":"fast","file":"/w/test/hang.test.js","nesting":0}"#),
            ev(r#"{"e":"pass","name":"fast","file":"/w/test/hang.test.js","nesting":0,"suite":false}"#),
            ev(r#"{"e":"start","name":"hangs","file":"/w/test/hang.test.js","nesting":0}"#),
            ev(r#"{"e":"fail","name":"/w/test/hang.test.js","file":"/w/test/hang.test.js","nesting":0,"suite":false,"error":{"type":"testTimeoutFailure","message":"test timed out after 2000ms","stack":"Error [ERR_TEST_FAILURE]: test timed out after 2000ms"}}"#),
            ev(r#"{"e":"out","file":"/w/test/syntax.test.js","text":"/w/test/syntax.test.js:1\nconst x = ;\n          ^\n\nSyntaxError: Unexpected token ';'\n"}"#),
            ev(r#"{"e":"fail","name":"/w/test/syntax.test.js","file":"/w/test/syntax.test.js","nesting":0,"suite":false,"error":{"type":"testCodeFailure","message":"test failed","stack":"undefined"}}"#),
            "something the runner printed itself".to_string(),
        ] {
            p.line(&l);
        }
        let s = p.finish(true);
        assert_eq!((s.passed, s.failed, s.skipped), (3, 3, 1));
        let names: Vec<(&str, &str)> = s.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref().unwrap())).collect();
        assert_eq!(names, [("fails", "test/a.test.js"), ("suite > inner bad", "test/a.test.js"), ("hangs", "test/hang.test.js")]);
        // The first failure of a file carries what the file printed.
        assert_eq!(
            s.failures[0].output,
            "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n    at TestContext.<anonymous> (test/a.test.js:3:65)\noutput of the file (19 bytes printed):\nnoise from passing"
        );
        assert_eq!(s.failures[1].output, "Error: inner broke\n    at TestContext.<anonymous> (test/a.test.js:5:98)");
        assert_eq!(s.failures[2].output, "test timed out after 2000ms; the test did not finish");
        assert_eq!(s.build_errors, ["test/syntax.test.js:\ntest/syntax.test.js:1\nconst x = ;\n          ^\n\nSyntaxError: Unexpected token ';'"]);
        assert_eq!(p.other(), "something the runner printed itself\n");
        let r = super::super::report::render("node", &s, &crate::testrun::verdict::decide(&crate::testrun::verdict::Ending::Exited(1), &s), None);
        assert!(!r.contains("noise of a passing file"));
        // No closing counts: the runner's summary is missing.
        assert!(!s.runner_summary);
    }

    fn parser() -> NodeParser {
        NodeParser::new(Cleaner::new(Path::new("/w"), Path::new("/s")), P.into())
    }

    fn counts(p: &mut NodeParser, pass: u64, fail: u64, cancelled: u64, skipped: u64, todo: u64) {
        for m in [format!("tests {}", pass + fail), format!("pass {pass}"), format!("fail {fail}"), format!("cancelled {cancelled}"), format!("skipped {skipped}"), format!("todo {todo}")] {
            p.line(&ev(&serde_json::json!({ "e": "count", "message": m }).to_string()));
        }
    }

    fn test_event(p: &mut NodeParser, kind: &str, name: &str, file: &str, extra: serde_json::Value) {
        let mut v = serde_json::json!({ "e": kind, "name": name, "file": file, "nesting": 0, "suite": false });
        if let serde_json::Value::Object(m) = extra {
            for (k, x) in m {
                v[k] = x;
            }
        }
        p.line(&ev(&v.to_string()));
    }

    #[test]
    fn a_failing_file_that_printed_megabytes_keeps_its_head_and_tail_with_the_bytes_cut() {
        let mut p = parser();
        p.line(&ev(r#"{"e":"start","name":"prints","file":"/w/t.js","nesting":0}"#));
        let piece = "x".repeat(16 * 1024 - 1) + "\n";
        let mut printed = 0;
        p.line(&ev(&serde_json::json!({ "e": "out", "file": "/w/t.js", "text": "HEAD-OF-OUTPUT\n" }).to_string()));
        printed += "HEAD-OF-OUTPUT\n".len();
        for _ in 0..256 {
            p.line(&ev(&serde_json::json!({ "e": "out", "file": "/w/t.js", "text": piece }).to_string()));
            printed += piece.len();
        }
        p.line(&ev(&serde_json::json!({ "e": "out", "file": "/w/t.js", "text": "TAIL-OF-OUTPUT\n" }).to_string()));
        printed += "TAIL-OF-OUTPUT\n".len();
        test_event(&mut p, "fail", "prints", "/w/t.js", serde_json::json!({ "error": { "type": "testCodeFailure", "message": "THE-ASSERTION", "stack": "AssertionError: THE-ASSERTION" } }));
        let s = p.finish(true);
        let out = &s.failures[0].output;
        assert!(out.starts_with("AssertionError: THE-ASSERTION\noutput of the file ("), "{out}");
        assert!(out.contains(&format!("{printed} bytes printed, ")), "{out}");
        assert!(out.contains("HEAD-OF-OUTPUT") && out.trim_end().ends_with("TAIL-OF-OUTPUT"), "{out}");
        assert!(out.contains("bytes omitted]"), "{out}");
        assert!(out.len() <= crate::testrun::report::MAX_FAILURE_OUTPUT + 64, "{}", out.len());
    }

    #[test]
    fn the_runners_closing_counts_are_checked_and_todo_failures_do_not_fail() {
        use crate::testrun::verdict::{decide, Ending, Status};
        // Agreeing: passed.
        let mut p = parser();
        test_event(&mut p, "pass", "a", "/w/t.js", serde_json::json!({}));
        test_event(&mut p, "fail", "later", "/w/t.js", serde_json::json!({ "todo": true, "error": { "type": "testCodeFailure", "message": "not yet" } }));
        counts(&mut p, 1, 0, 0, 0, 1);
        let s = p.finish(true);
        assert_eq!((s.passed, s.failed, s.skipped), (1, 0, 1));
        assert!(s.runner_summary && s.anomalies.is_empty(), "{:?}", s.anomalies);
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Passed);
        // The runner counted a failure its events did not name: failed, never passed.
        let mut p = parser();
        test_event(&mut p, "pass", "a", "/w/t.js", serde_json::json!({}));
        test_event(&mut p, "pass", "b", "/w/t.js", serde_json::json!({}));
        counts(&mut p, 1, 1, 0, 0, 0);
        let s = p.finish(true);
        assert_eq!(s.failed, 1);
        assert!(!s.anomalies.is_empty());
        assert_eq!(decide(&Ending::Exited(1), &s).status, Status::Failed);
        // No closing counts (the runner was killed): incomplete, with the signal said.
        let mut p = parser();
        for i in 0..7 {
            test_event(&mut p, "pass", &format!("t{i}"), "/w/t.js", serde_json::json!({}));
        }
        let s = p.finish(true);
        let v = decide(&Ending::Signaled("SIGKILL".into()), &s);
        assert_eq!(v.status, Status::Incomplete);
        let r = super::super::report::render("node", &s, &v, None);
        assert!(r.starts_with("node: incomplete: 7 passed, 0 failed, 0 skipped (killed by SIGKILL)\nincomplete: the runner was killed by SIGKILL"), "{r}");
        // A non-zero exit without a failing test.
        let mut p = parser();
        test_event(&mut p, "pass", "a", "/w/t.js", serde_json::json!({}));
        counts(&mut p, 1, 0, 0, 0, 0);
        assert_eq!(decide(&Ending::Exited(1), &p.finish(true)).status, Status::Incomplete);
    }

    #[test]
    fn names_with_control_characters_cannot_forge_report_lines() {
        use crate::testrun::verdict::{decide, Ending};
        let mut p = parser();
        let forged = "x\nok   test/all-good.test.cjs (40 passed)\u{1b}]0;title\u{7}\u{9b}2J\r\u{8}";
        test_event(&mut p, "fail", forged, "/w/t\nok   test/forged.js", serde_json::json!({ "error": { "type": "testCodeFailure", "message": "boom\u{1b}[31m\r\nok   test/x.js\u{9b}31m" } }));
        counts(&mut p, 0, 1, 0, 0, 0);
        let s = p.finish(true);
        let r = super::super::report::render("node", &s, &decide(&Ending::Exited(1), &s), None);
        for line in r.lines() {
            assert!(!line.starts_with("ok "), "a forged line: {line:?}\n{r}");
            assert!(!line.chars().any(|c| c.is_control()), "a control character: {line:?}");
        }
        assert!(r.contains("x\\nok   test/all-good.test.cjs (40 passed)\\u{1b}]0;title\\u{7}\\u{9b}2J\\r\\u{8}"), "{r}");
    }

    #[test]
    fn the_reporter_embeds_its_prefix() {
        let src = reporter_source("wc-abc");
        assert!(src.contains("const PREFIX = \"wc-abc\";"));
        assert!(src.contains("export default async function*"));
    }
}
