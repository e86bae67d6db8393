//! `node --test` with a small reporter of ours ([`reporter_source`]), written to the scratch
//! directory for each call: it turns the runner's events into one JSON line each, behind a
//! random prefix, and keeps at most 4 KiB of each file's stdout/stderr (the runner reports
//! output per file, not per test).
//!
//! Counting: tests only (suites and the per-file entries are containers). A file that fails
//! without having reported a test could not load: its stderr is a build error. A file that hit
//! the per-test timeout (`--test-timeout`, the inner deadline) is killed by the runner; the tests
//! of that file that had started and never reported are named as failures.

use std::collections::HashMap;

use super::report::{Bounded, Cleaner, Summary, Unit};
use super::sink::Parser;

/// Per-file output kept by the reporter (and again here).
pub const FILE_OUTPUT: usize = 4 * 1024;

/// The reporter module: an async generator over the runner's events.
pub fn reporter_source(prefix: &str) -> String {
    format!(
        r#"// workcell's reporter for node --test: one JSON line per event, behind a per-call prefix.
const PREFIX = {prefix:?};
const CAP = {FILE_OUTPUT};
const text = (v, n) => (typeof v === "string" ? v : String(v ?? "")).slice(0, n);
export default async function* workcellReporter(source) {{
  const used = new Map();
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
      case "test:stdout":
      case "test:stderr": {{
        const key = d.file ?? "";
        const before = used.get(key) ?? 0;
        const message = text(d.message, 1 << 30);
        used.set(key, before + message.length);
        if (before >= CAP) continue;
        o = {{ e: "out", file: d.file, text: message.slice(0, CAP - before) }};
        break;
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
    output: Bounded,
}

pub struct NodeParser {
    cleaner: Cleaner,
    prefix: String,
    files: Vec<File>,
    index: HashMap<String, usize>,
    summary: Summary,
    other: Bounded,
}

impl NodeParser {
    pub fn new(cleaner: Cleaner, prefix: String) -> Self {
        NodeParser { cleaner, prefix, files: Vec::new(), index: HashMap::new(), summary: Summary::default(), other: Bounded::new(4 * 1024) }
    }

    fn file(&mut self, path: &str) -> usize {
        let shown = self.cleaner.path(path);
        *self.index.entry(path.to_string()).or_insert_with(|| {
            self.files.push(File { unit: Unit::new(shown), reported: 0, started: Vec::new(), stack: Vec::new(), output: Bounded::new(FILE_OUTPUT) });
            self.files.len() - 1
        })
    }

    fn full_name(f: &File, nesting: u64, name: &str) -> String {
        let mut parts: Vec<&str> = f.stack.iter().take(nesting as usize).map(String::as_str).collect();
        parts.push(name);
        parts.join(" > ")
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

    fn event(&mut self, ev: serde_json::Value) {
        let kind = ev["e"].as_str().unwrap_or("");
        let Some(path) = ev["file"].as_str().map(str::to_string) else { return };
        let fi = self.file(&path);
        let name = ev["name"].as_str().unwrap_or("").to_string();
        let nesting = ev["nesting"].as_u64().unwrap_or(0);
        let file_level = nesting == 0 && name == path;
        match kind {
            "out" => {
                let text = ev["text"].as_str().unwrap_or("");
                self.files[fi].output.push(text);
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
                        f.unit.failed += 1;
                        f.reported += 1;
                        self.summary.failed += 1;
                        let out = self.error_text(&ev);
                        let file = self.files[fi].unit.name.clone();
                        self.summary.push_failure(full, Some(file), &out);
                    }
                    return;
                }
                f.reported += 1;
                if kind == "pass" {
                    if ev["skip"].as_bool().unwrap_or(false) || ev["todo"].as_bool().unwrap_or(false) {
                        f.unit.skipped += 1;
                        self.summary.skipped += 1;
                    } else {
                        f.unit.passed += 1;
                        self.summary.passed += 1;
                    }
                } else {
                    f.unit.failed += 1;
                    self.summary.failed += 1;
                    let out = self.error_text(&ev);
                    let file = self.files[fi].unit.name.clone();
                    self.summary.push_failure(full, Some(file), &out);
                }
            }
            "fail" if file_level => {
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
                    let file = f.unit.name.clone();
                    for name in hung {
                        self.files[fi].unit.failed += 1;
                        self.summary.failed += 1;
                        self.summary.push_failure(name, Some(file.clone()), &format!("{message}; the test did not finish"));
                    }
                } else if f.reported == 0 {
                    // The file failed before reporting any test: it could not load or crashed.
                    f.unit.broken = true;
                    f.unit.note = Some("failed to load".into());
                    let out = f.output.text();
                    let text = if out.trim().is_empty() { message } else { self.cleaner.js_error(&out) };
                    let file = self.files[fi].unit.name.clone();
                    self.summary.push_build_error(&format!("{file}:\n{}", text.trim_end()));
                }
            }
            _ => {}
        }
    }
}

impl Parser for NodeParser {
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
        for f in &mut self.files {
            if f.started.is_empty() {
                continue;
            }
            for (_, name) in f.started.drain(..) {
                if complete {
                    // Cancelled by the runner (its file ended first).
                    f.unit.failed += 1;
                    s.failed += 1;
                    s.push_failure(name, Some(f.unit.name.clone()), "the test was cancelled before it finished");
                } else {
                    s.running.push(format!("{name} ({})", f.unit.name));
                }
            }
        }
        s.units = self.files.iter().map(|f| f.unit.clone()).collect();
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
        assert_eq!((s.passed, s.failed, s.skipped), (2, 3, 1));
        let names: Vec<(&str, &str)> = s.failures.iter().map(|f| (f.name.as_str(), f.file.as_deref().unwrap())).collect();
        assert_eq!(names, [("fails", "test/a.test.js"), ("suite > inner bad", "test/a.test.js"), ("hangs", "test/hang.test.js")]);
        assert_eq!(
            s.failures[0].output,
            "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n\n2 !== 3\n\n    at TestContext.<anonymous> (test/a.test.js:3:65)"
        );
        assert_eq!(s.failures[2].output, "test timed out after 2000ms; the test did not finish");
        assert_eq!(s.build_errors, ["test/syntax.test.js:\ntest/syntax.test.js:1\nconst x = ;\n          ^\n\nSyntaxError: Unexpected token ';'"]);
        assert_eq!(p.other(), "something the runner printed itself\n");
        let r = super::super::report::render("node", &s, Some(1), None);
        assert!(!r.contains("noise from passing"));
    }

    #[test]
    fn the_reporter_embeds_its_prefix() {
        let src = reporter_source("wc-abc");
        assert!(src.contains("const PREFIX = \"wc-abc\";"));
        assert!(src.contains("export default async function*"));
    }
}
