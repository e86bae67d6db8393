//! `vitest run --reporter=json --outputFile=<scratch>/vitest-report.json`: the report file is
//! read after the run through [`super::untrusted::ReportFile`] (the runner may write that one
//! file and nothing beside it; the read refuses symlinks, FIFOs and replacements, at most
//! [`MAX_REPORT_FILE`] bytes) and parsed as a stream ([`parse_report`]): each file's results
//! go into the summary as they are read, each test is counted as it is read and only failing
//! ones are kept (bounded), and every field not needed is skipped without being built
//! (`IgnoredAny`), so the host's memory is the file plus what the report keeps. The merged
//! output only matters when there is no report (the runner could not start: a broken config, a
//! missing dependency). vitest's JSON report carries no output the tests printed, so a vitest
//! failure shows its messages and stack only.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::report::{Cleaner, Summary, Unit, MAX_FAILURES};
use super::sink::Parser;
use super::report::Bounded;

/// Largest report file read (a report of 8 MiB describes tens of thousands of tests).
pub const MAX_REPORT_FILE: u64 = 8 * 1024 * 1024;

/// One test of a file's `assertionResults`: only the fields used (serde skips the others).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Assertion {
    full_name: Option<String>,
    title: Option<String>,
    status: Option<String>,
    duration: Option<f64>,
    #[serde(default)]
    failure_messages: Vec<Option<String>>,
}

/// A file's `assertionResults`, counted as they are read: only failing tests are kept (at
/// most [`MAX_FAILURES`]), so memory does not follow the number of tests.
#[derive(Default)]
struct Tally {
    tests: u64,
    passed: u64,
    failed: u64,
    skipped: u64,
    unknown: Option<String>,
    failures: Vec<Assertion>,
}

impl<'de> Deserialize<'de> for Tally {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Tally;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a list of test results")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tally, A::Error> {
                let mut t = Tally::default();
                while let Some(a) = seq.next_element::<Assertion>()? {
                    t.tests += 1;
                    match a.status.as_deref().unwrap_or("") {
                        "passed" => t.passed += 1,
                        "failed" => {
                            t.failed += 1;
                            if t.failures.len() < MAX_FAILURES {
                                t.failures.push(a);
                            }
                        }
                        "skipped" | "pending" | "todo" | "disabled" => t.skipped += 1,
                        other => {
                            if t.unknown.is_none() {
                                t.unknown = Some(other.chars().take(40).collect());
                            }
                        }
                    }
                }
                Ok(t)
            }
        }
        d.deserialize_seq(V)
    }
}

/// The report's own totals.
#[derive(Default)]
struct Totals {
    passed: Option<u64>,
    failed: Option<u64>,
    pending: Option<u64>,
    todo: Option<u64>,
    success: Option<bool>,
}

/// Where the report's files go as they are read: straight into the summary.
struct Sink<'a> {
    s: &'a mut Summary,
    cleaner: &'a Cleaner,
    inner_ms: u64,
    /// Failures of tests (not of whole files), as vitest's totals count them.
    test_failed: u64,
}

impl Sink<'_> {
    fn file(&mut self, name: Option<String>, status: Option<String>, message: Option<String>, tally: Tally) {
        let (s, cleaner, inner_ms) = (&mut *self.s, self.cleaner, self.inner_ms);
        let name = cleaner.path(name.as_deref().unwrap_or("?"));
        let mut unit = Unit::new(&name);
        unit.passed = tally.passed;
        unit.failed = tally.failed;
        unit.skipped = tally.skipped;
        self.test_failed += tally.failed;
        for t in tally.failures {
            let messages: Vec<String> = t
                .failure_messages
                .iter()
                .flatten()
                .map(|m| {
                    let m = match m.strip_prefix("Error: STACK_TRACE_ERROR") {
                        Some(rest) if t.duration.is_some_and(|d| d + 50.0 >= inner_ms as f64) => {
                            format!("Error: Test timed out in {inner_ms}ms (the per-test timeout){rest}")
                        }
                        Some(rest) => format!("Error: the test failed without a message{rest}"),
                        None => m.to_string(),
                    };
                    cleaner.js_error(&m)
                })
                .collect();
            s.push_failure(t.full_name.or(t.title).unwrap_or_else(|| "?".to_string()), Some(name.clone()), &messages.join("\n"));
        }
        if let Some(other) = tally.unknown {
            // Not a result vitest documents: never counted as passing.
            unit.broken = true;
            unit.note = Some("a test without a known result".into());
            s.push_anomaly(format!("vitest reported a test with the status \"{}\"", super::report::escape_name(&other)));
        }
        let message = message.as_deref().unwrap_or("");
        if status.as_deref() == Some("failed") && unit.failed == 0 {
            unit.broken = true;
            if tally.tests == 0 {
                unit.note = Some("failed to load".into());
                s.push_build_error(&format!("{}:\n{}", unit.name, cleaner.js_error(message)));
            } else {
                // Tests passed but the file failed (a hook, an unhandled error).
                unit.failed += 1;
                s.push_failure(name.clone(), Some(name.clone()), &cleaner.js_error(message));
            }
        }
        s.passed += unit.passed;
        s.failed += unit.failed;
        s.skipped += unit.skipped;
        s.push_unit(unit);
    }
}

/// One element of `testResults`.
struct FileSeed<'s, 'a>(&'s mut Sink<'a>);

impl<'de> DeserializeSeed<'de> for FileSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for FileSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a file's results")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<(), M::Error> {
        let (mut name, mut status, mut message, mut tally) = (None, None, None, Tally::default());
        while let Some(key) = m.next_key::<String>()? {
            match key.as_str() {
                "name" => name = m.next_value::<Option<String>>()?,
                "status" => status = m.next_value::<Option<String>>()?,
                "message" => message = m.next_value::<Option<String>>()?,
                "assertionResults" => tally = m.next_value::<Option<Tally>>()?.unwrap_or_default(),
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        self.0.file(name, status, message, tally);
        Ok(())
    }
}

/// `testResults`.
struct FilesSeed<'s, 'a>(&'s mut Sink<'a>);

impl<'de> DeserializeSeed<'de> for FilesSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FilesSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of files")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(FileSeed(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// The whole report.
struct ReportSeed<'s, 'a>(&'s mut Sink<'a>);

impl<'de> DeserializeSeed<'de> for ReportSeed<'_, '_> {
    type Value = Totals;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Totals, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ReportSeed<'_, '_> {
    type Value = Totals;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("vitest's JSON report")
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Totals, M::Error> {
        let mut t = Totals::default();
        while let Some(key) = m.next_key::<String>()? {
            match key.as_str() {
                "testResults" => m.next_value_seed(FilesSeed(&mut *self.0))?,
                "numPassedTests" => t.passed = m.next_value()?,
                "numFailedTests" => t.failed = m.next_value()?,
                "numPendingTests" => t.pending = m.next_value()?,
                "numTodoTests" => t.todo = m.next_value()?,
                "success" => t.success = m.next_value()?,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(t)
    }
}

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

/// The summary of a vitest JSON report (the file's bytes). `inner_ms` is the per-test timeout
/// handed to vitest: a timed-out test's message is lost by the JSON reporter (it keeps the stack
/// only), so it is said again here. A report that does not parse is an anomaly (the run is then
/// `incomplete` unless something failed). The report's own totals (`numPassedTests`,
/// `numFailedTests`, `numPendingTests` + `numTodoTests`, `success`) are checked against the
/// counts: a difference is an anomaly, and a failure counted by either is kept.
pub fn parse_report(bytes: &[u8], cleaner: &Cleaner, inner_ms: u64) -> Summary {
    let mut s = Summary { structured: true, ..Summary::default() };
    let mut sink = Sink { s: &mut s, cleaner, inner_ms, test_failed: 0 };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = ReportSeed(&mut sink).deserialize(&mut de).and_then(|t| de.end().map(|()| t));
    let test_failed = sink.test_failed;
    let report = match parsed {
        Ok(t) => t,
        Err(e) => {
            // What was read before the error stays counted (a failure is never lost).
            s.push_anomaly(format!("vitest's report file is not a complete JSON report ({e})"));
            return s;
        }
    };
    // The report's own totals.
    if let (Some(passed), Some(failed)) = (report.passed, report.failed) {
        s.runner_summary = true;
        let skipped = report.pending.unwrap_or(0) + report.todo.unwrap_or(0);
        if passed != s.passed || failed != test_failed || (report.pending.is_some() && skipped != s.skipped) {
            s.push_anomaly(format!(
                "vitest's totals ({passed} passed, {failed} failed, {skipped} skipped) disagree with its file results ({} passed, {test_failed} failed, {} skipped)",
                s.passed, s.skipped
            ));
        }
        if failed > test_failed {
            // A failure counted by either side is kept.
            s.failed += failed - test_failed;
        }
    }
    if report.success == Some(false) && !s.failing() {
        s.push_anomaly("vitest reported the run as unsuccessful though no test failed: an error outside the tests (an unhandled error or rejection, a failing global setup); read vitest's output");
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
        let s = parse_report(json.to_string().as_bytes(), &Cleaner::new(Path::new("/w"), Path::new("/s")), 2000);
        assert_eq!((s.passed, s.failed, s.skipped), (1, 2, 1));
        assert_eq!(s.failures[0].output, "AssertionError: expected 2 to be 3 // Object.is equality\n    at test/a.test.ts:3:72");
        assert_eq!(s.failures[1].output, "Error: Test timed out in 2000ms (the per-test timeout)\n    at test/hang.test.ts:3:1");
        assert_eq!(s.build_errors, ["test/syntax.test.ts:\nTransform failed with 1 error:\n\n[PARSE_ERROR] Unexpected token"]);
        assert!(s.units[2].broken);
    }

    fn report(v: serde_json::Value) -> Summary {
        parse_report(v.to_string().as_bytes(), &Cleaner::new(Path::new("/w"), Path::new("/s")), 2000)
    }

    #[test]
    fn the_reports_totals_are_checked_and_fields_not_needed_are_skipped() {
        use crate::testrun::verdict::{decide, Ending, Status};
        let file = |status: &str| serde_json::json!({ "name": "/w/a.test.ts", "status": status, "message": "", "startTime": 1, "assertionResults": [
            { "fullName": "a", "status": "passed", "failureMessages": [], "ancestorTitles": ["x"], "meta": { "huge": "y".repeat(10_000) }, "location": { "line": 1, "column": 2 } },
        ]});
        let ok = report(serde_json::json!({ "numTotalTests": 1, "numPassedTests": 1, "numFailedTests": 0, "numPendingTests": 0, "numTodoTests": 0, "success": true, "snapshot": { "x": 1 }, "testResults": [file("passed")] }));
        assert!(ok.runner_summary && ok.anomalies.is_empty(), "{:?}", ok.anomalies);
        assert_eq!(decide(&Ending::Exited(0), &ok).status, Status::Passed);
        // vitest says unsuccessful (an unhandled error) though every test passed.
        let s = report(serde_json::json!({ "numPassedTests": 1, "numFailedTests": 0, "success": false, "testResults": [file("passed")] }));
        assert_eq!(decide(&Ending::Exited(1), &s).status, Status::Incomplete);
        assert!(s.anomalies[0].contains("unsuccessful"));
        // Totals counting a failure the file results do not show: failed.
        let s = report(serde_json::json!({ "numPassedTests": 1, "numFailedTests": 1, "success": false, "testResults": [file("passed")] }));
        assert_eq!(s.failed, 1);
        assert_eq!(decide(&Ending::Exited(1), &s).status, Status::Failed);
        // Not a report: incomplete.
        let s = parse_report(b"{\"testResults\": [", &Cleaner::new(Path::new("/w"), Path::new("/s")), 2000);
        assert!(s.structured && !s.anomalies.is_empty());
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Incomplete);
        // An unknown status is never a pass.
        let s = report(serde_json::json!({ "testResults": [{ "name": "/w/a.test.ts", "status": "passed", "assertionResults": [{ "fullName": "a", "status": "weird" }] }] }));
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Failed);
    }
}
