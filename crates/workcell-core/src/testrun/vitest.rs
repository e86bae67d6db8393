//! `vitest run --reporter=json --outputFile=<scratch>/vitest-report.json`: the report file is
//! read after the run (bounded); the merged output only matters when there is no report (the
//! runner could not start: a broken config, a missing dependency).

use super::report::{Cleaner, Summary, Unit};
use super::sink::Parser;
use super::report::Bounded;

/// Largest report file read.
pub const MAX_REPORT_FILE: u64 = 64 * 1024 * 1024;

/// Collects the runner's own lines (everything on the pipe).
pub struct VitestOutput {
    cleaner: Cleaner,
    other: Bounded,
}

impl VitestOutput {
    pub fn new(cleaner: Cleaner) -> Self {
        VitestOutput { cleaner, other: Bounded::new(4 * 1024) }
    }
}

impl Parser for VitestOutput {
    fn line(&mut self, line: &str) {
        if !line.trim().is_empty() && !line.starts_with("JSON report written to") {
            self.other.push_line(line);
        }
    }

    fn finish(&mut self, _complete: bool) -> Summary {
        Summary::default()
    }

    fn other(&self) -> String {
        self.cleaner.clean(&self.other.text())
    }
}

/// The summary of a vitest JSON report. `inner_ms` is the per-test timeout handed to vitest: a
/// timed-out test's message is lost by the JSON reporter (it keeps the stack only), so it is
/// said again here.
pub fn parse_report(json: &serde_json::Value, cleaner: &Cleaner, inner_ms: u64) -> Summary {
    let mut s = Summary { structured: true, ..Summary::default() };
    let empty = Vec::new();
    for file in json["testResults"].as_array().unwrap_or(&empty) {
        let name = cleaner.path(file["name"].as_str().unwrap_or("?"));
        let mut unit = Unit::new(name.clone());
        let tests = file["assertionResults"].as_array().unwrap_or(&empty);
        for t in tests {
            let title = t["fullName"].as_str().or_else(|| t["title"].as_str()).unwrap_or("?").to_string();
            match t["status"].as_str().unwrap_or("") {
                "passed" => unit.passed += 1,
                "failed" => {
                    unit.failed += 1;
                    let messages: Vec<String> = t["failureMessages"]
                        .as_array()
                        .unwrap_or(&empty)
                        .iter()
                        .filter_map(|m| m.as_str())
                        .map(|m| {
                            let m = match m.strip_prefix("Error: STACK_TRACE_ERROR") {
                                Some(rest) if t["duration"].as_f64().is_some_and(|d| d + 50.0 >= inner_ms as f64) => {
                                    format!("Error: Test timed out in {inner_ms}ms (the per-test timeout){rest}")
                                }
                                Some(rest) => format!("Error: the test failed without a message{rest}"),
                                None => m.to_string(),
                            };
                            cleaner.js_error(&m)
                        })
                        .collect();
                    s.push_failure(title, Some(name.clone()), &messages.join("\n"));
                }
                "skipped" | "pending" | "todo" | "disabled" => unit.skipped += 1,
                _ => {}
            }
        }
        let message = file["message"].as_str().unwrap_or("");
        if file["status"] == "failed" && unit.failed == 0 {
            unit.broken = true;
            if tests.is_empty() {
                unit.note = Some("failed to load".into());
                s.push_build_error(&format!("{name}:\n{}", cleaner.js_error(message)));
            } else {
                // Tests passed but the file failed (a hook, an unhandled error).
                unit.failed += 1;
                s.push_failure(name.clone(), Some(name.clone()), &cleaner.js_error(message));
            }
        }
        s.passed += unit.passed;
        s.failed += unit.failed;
        s.skipped += unit.skipped;
        s.units.push(unit);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn report_files_become_summaries() {
        let json = serde_json::json!({
            "testResults": [
                { "name": "/w/test/a.test.ts", "status": "failed", "message": "", "assertionResults": [
                    { "fullName": "passes", "status": "passed", "failureMessages": [] },
                    { "fullName": "fails", "status": "failed", "duration": 4.5, "failureMessages": ["AssertionError: expected 2 to be 3 // Object.is equality\n    at /w/test/a.test.ts:3:72\n    at file:///w/node_modules/@vitest/runner/dist/x.js:302:11"] },
                    { "fullName": "skipped", "status": "skipped", "failureMessages": [] },
                ]},
                { "name": "/w/test/hang.test.ts", "status": "failed", "message": "", "assertionResults": [
                    { "fullName": "hangs", "status": "failed", "duration": 2009.4, "failureMessages": ["Error: STACK_TRACE_ERROR\n    at task (file:///w/node_modules/@vitest/runner/dist/x.js:1784:27)\n    at /w/test/hang.test.ts:3:1"] },
                ]},
                { "name": "/w/test/syntax.test.ts", "status": "failed", "message": "Transform failed with 1 error:\n\n\u{1b}[31m[PARSE_ERROR] \u{1b}[0mUnexpected token", "assertionResults": [] },
            ]
        });
        let s = parse_report(&json, &Cleaner::new(Path::new("/w"), Path::new("/s")), 2000);
        assert_eq!((s.passed, s.failed, s.skipped), (1, 2, 1));
        assert_eq!(s.failures[0].output, "AssertionError: expected 2 to be 3 // Object.is equality\n    at test/a.test.ts:3:72");
        assert_eq!(s.failures[1].output, "Error: Test timed out in 2000ms (the per-test timeout)\n    at test/hang.test.ts:3:1");
        assert_eq!(s.build_errors, ["test/syntax.test.ts:\nTransform failed with 1 error:\n\n[PARSE_ERROR] Unexpected token"]);
        assert!(s.units[2].broken);
    }
}
