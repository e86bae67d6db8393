//! `go test -json` output: test2json events, one JSON object per line, mixed (through the
//! merged pipe) with the go command's own text: compiler and vet errors (`# pkg` blocks),
//! `FAIL pkg [build failed]` lines, module errors.
//!
//! Tests are counted at the leaves (a test with subtests counts through them), as their results
//! arrive: only running tests are remembered (by a keyed hash of package and name, with a
//! head/tail of their output), plus the hashes of the failed ones, so memory follows the tests
//! running at once, not the tests run. A test that started but has no result when its package
//! ended was running when the test binary died (the inner `-timeout` panic, a crash): it is a
//! failure, named, with the panic as its output.
//!
//! test2json reads the test binary's stdout, so a test (or a goroutine of it) that prints
//! `--- PASS: TestX` produces a `pass` event for TestX: a failed test stays failed whatever
//! comes after (a conflicting result is an anomaly), and every package must end with go's own
//! result for it (the runner's summary).

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher as _, Hash as _, Hasher as _};

use super::report::{escape_name, Bounded, Cleaner, Kept, Summary, Unit, MAX_BUILD_ERRORS, MAX_TEST_OUTPUT};
use super::sink::Parser;

/// Most tests remembered while they run; results of further tests are still counted.
pub const MAX_RUNNING_TESTS: usize = 10_000;
/// Most failed tests remembered (to keep them failed); further ones are still counted.
pub const MAX_FAILED_TESTS: usize = 10_000;
/// Most packages tracked by name; further packages share one unit.
pub const MAX_PACKAGES: usize = 10_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Passed,
    Failed,
    Skipped,
}

struct Test {
    pkg: usize,
    /// For the report (escaped and bounded).
    name: String,
    /// Hash of the parent test, when the name has one.
    parent: Option<u64>,
    has_children: bool,
    failed_children: bool,
    running_children: usize,
    output: Kept,
}

struct Package {
    unit: Unit,
    status: Option<Status>,
    output: Kept,
    build_failed: bool,
    no_tests: bool,
}

pub struct GoParser {
    cleaner: Cleaner,
    hasher: std::collections::hash_map::RandomState,
    running: HashMap<u64, Test>,
    failed_tests: HashSet<u64>,
    packages: Vec<Package>,
    package_index: HashMap<String, usize>,
    summary: Summary,
    untracked: u64,
    build_blocks: Vec<Bounded>,
    build_blocks_dropped: u64,
    in_block: bool,
    other: Bounded,
}

impl GoParser {
    pub fn new(cleaner: Cleaner) -> Self {
        GoParser {
            cleaner,
            hasher: std::collections::hash_map::RandomState::new(),
            running: HashMap::new(),
            failed_tests: HashSet::new(),
            packages: Vec::new(),
            package_index: HashMap::new(),
            summary: Summary::default(),
            untracked: 0,
            build_blocks: Vec::new(),
            build_blocks_dropped: 0,
            in_block: false,
            other: Bounded::new(4 * 1024),
        }
    }

    fn key(&self, pkg: usize, name: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        pkg.hash(&mut h);
        name.hash(&mut h);
        h.finish()
    }

    fn package(&mut self, name: &str) -> usize {
        if let Some(&i) = self.package_index.get(name) {
            return i;
        }
        let (key, shown) = if self.packages.len() >= MAX_PACKAGES { (String::new(), "(further packages)") } else { (name.to_string(), name) };
        if let Some(&i) = self.package_index.get(&key) {
            return i;
        }
        self.packages.push(Package { unit: Unit::new(shown), status: None, output: Kept::new(MAX_TEST_OUTPUT), build_failed: false, no_tests: false });
        self.package_index.insert(key, self.packages.len() - 1);
        self.packages.len() - 1
    }

    fn new_block(&mut self) -> Option<&mut Bounded> {
        if self.build_blocks.len() < 2 * MAX_BUILD_ERRORS {
            self.build_blocks.push(Bounded::new(super::report::MAX_BUILD_ERROR));
            self.in_block = true;
            self.build_blocks.last_mut()
        } else {
            self.build_blocks_dropped += 1;
            self.in_block = false;
            None
        }
    }

    fn run(&mut self, pi: usize, name: &str) {
        let key = self.key(pi, name);
        if self.running.contains_key(&key) || self.failed_tests.contains(&key) {
            return;
        }
        let parent = name.rsplit_once('/').map(|(p, _)| self.key(pi, p));
        if self.running.len() >= MAX_RUNNING_TESTS {
            self.untracked += 1;
            return;
        }
        if let Some(p) = parent.and_then(|p| self.running.get_mut(&p)) {
            p.has_children = true;
            p.running_children += 1;
        }
        self.running.insert(key, Test { pkg: pi, name: escape_name(name), parent, has_children: false, failed_children: false, running_children: 0, output: Kept::new(MAX_TEST_OUTPUT) });
    }

    fn result(&mut self, pi: usize, name: &str, status: Status) {
        let key = self.key(pi, name);
        if self.failed_tests.contains(&key) {
            if status != Status::Failed {
                self.summary.push_anomaly(format!(
                    "go reported {} as {} after it had failed (a test's own output can make test2json report that): it is kept as failed",
                    escape_name(name),
                    if status == Status::Passed { "passing" } else { "skipped" }
                ));
            }
            return;
        }
        let test = self.running.remove(&key);
        let (leaf, failed_children) = test.as_ref().map(|t| (!t.has_children, t.failed_children)).unwrap_or((true, false));
        let parent = test.as_ref().and_then(|t| t.parent).or_else(|| name.rsplit_once('/').map(|(p, _)| self.key(pi, p)));
        if let Some(p) = parent.and_then(|p| self.running.get_mut(&p)) {
            p.running_children = p.running_children.saturating_sub(1);
            if status == Status::Failed {
                p.failed_children = true;
            }
        }
        let unit = &mut self.packages[pi].unit;
        match status {
            Status::Passed if leaf => {
                unit.passed += 1;
                self.summary.passed += 1;
            }
            Status::Skipped if leaf => {
                unit.skipped += 1;
                self.summary.skipped += 1;
            }
            Status::Failed => {
                if self.failed_tests.len() < MAX_FAILED_TESTS {
                    self.failed_tests.insert(key);
                }
                // A parent fails through its children: counted once, at the child.
                if !failed_children {
                    unit.failed += 1;
                    self.summary.failed += 1;
                    let out = test.map(|t| t.output.text()).unwrap_or_default();
                    let pkg = unit.name.clone();
                    let out = self.cleaner.clean(&out);
                    self.summary.push_failure(name.to_string(), Some(pkg), &out);
                }
            }
            _ => {}
        }
    }

    /// Tests of package `pi` (all packages with `None`) still running: the deepest are failures
    /// (`complete`) or still running.
    fn settle_running(&mut self, pi: Option<usize>, complete: bool) {
        let keys: Vec<u64> = self.running.iter().filter(|(_, t)| pi.is_none_or(|p| t.pkg == p)).map(|(k, _)| *k).collect();
        let mut tests: Vec<Test> = keys.into_iter().filter_map(|k| self.running.remove(&k)).collect();
        tests.sort_by(|a, b| a.name.cmp(&b.name));
        for t in tests {
            if t.running_children > 0 {
                continue;
            }
            let pkg = self.packages[t.pkg].unit.name.clone();
            if complete {
                self.packages[t.pkg].unit.failed += 1;
                self.summary.failed += 1;
                let out = self.cleaner.clean(&t.output.text());
                self.summary.push_failure(t.name, Some(pkg), &format!("[did not finish: the test binary stopped while it ran]\n{out}"));
            } else {
                self.summary.push_running(&format!("{} ({pkg})", t.name));
            }
        }
    }

    fn event(&mut self, ev: &serde_json::Value) {
        let action = ev["Action"].as_str().unwrap_or("");
        let test = ev["Test"].as_str();
        let output = ev["Output"].as_str().unwrap_or("");
        // Go 1.24+: build output comes as its own events, keyed by ImportPath (the package
        // then fails with an output line saying `[build failed]`).
        match action {
            "build-output" => {
                if !self.in_block {
                    self.new_block();
                }
                if self.in_block {
                    let path = ev["ImportPath"].as_str().unwrap_or("?").to_string();
                    if let Some(b) = self.build_blocks.last_mut() {
                        if b.is_empty() && !output.starts_with("# ") {
                            b.push_line(&format!("# {path}"));
                        }
                        b.push(output);
                    }
                }
                return;
            }
            "build-fail" => {
                self.in_block = false;
                return;
            }
            _ => {}
        }
        let pkg = ev["Package"].as_str().unwrap_or("");
        if pkg.is_empty() {
            return;
        }
        let pi = self.package(pkg);
        match (action, test) {
            ("output", Some(t)) => {
                let trimmed = output.trim_start();
                let noise = ["=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"]
                    .iter()
                    .any(|p| trimmed.starts_with(p));
                if !noise {
                    let key = self.key(pi, t);
                    if let Some(test) = self.running.get_mut(&key) {
                        test.output.push(output);
                    }
                }
            }
            ("run", Some(t)) => self.run(pi, t),
            ("pass" | "fail" | "skip", Some(t)) => {
                let status = match action {
                    "pass" => Status::Passed,
                    "fail" => Status::Failed,
                    _ => Status::Skipped,
                };
                self.result(pi, t, status);
            }
            ("output", None) => {
                let trimmed = output.trim_end();
                let p = &mut self.packages[pi];
                if trimmed.ends_with("[no test files]") {
                    p.no_tests = true;
                } else if trimmed.ends_with("[build failed]") || trimmed.ends_with("[setup failed]") {
                    p.build_failed = true;
                } else if !(trimmed == "PASS"
                    || trimmed == "FAIL"
                    || trimmed.starts_with("ok  ")
                    || trimmed.starts_with("FAIL\t")
                    || trimmed.starts_with("testing: warning: no tests to run"))
                {
                    p.output.push(output);
                }
            }
            ("pass" | "fail" | "skip", None) => {
                let status = match action {
                    "pass" => Status::Passed,
                    "fail" => Status::Failed,
                    _ => Status::Skipped,
                };
                let p = &mut self.packages[pi];
                // A package that failed stays failed.
                if p.status != Some(Status::Failed) {
                    p.status = Some(status);
                }
                self.settle_running(Some(pi), true);
            }
            _ => {}
        }
    }
}

impl Parser for GoParser {
    fn counts(&self) -> Option<(u64, u64, u64)> {
        Some((self.summary.passed, self.summary.failed, self.summary.skipped))
    }
    fn is_event(&self, line: &str) -> bool {
        line.starts_with('{')
    }
    fn line(&mut self, line: &str) {
        if line.starts_with('{') {
            if let Ok(ev) = serde_json::from_str::<serde_json::Value>(line) {
                if ev.get("Action").is_some() {
                    if ev["Action"] != "build-output" {
                        self.in_block = false;
                    }
                    self.event(&ev);
                    return;
                }
            }
        }
        // The go command's own text.
        if let Some(rest) = line.strip_prefix("# ") {
            if let Some(b) = self.new_block() {
                b.push_line(&format!("# {rest}"));
            }
            return;
        }
        if let Some(rest) = line.strip_prefix("FAIL\t") {
            if let Some(pkg) = rest.strip_suffix(" [build failed]").or_else(|| rest.strip_suffix(" [setup failed]")) {
                let pi = self.package(pkg);
                self.packages[pi].build_failed = true;
                self.in_block = false;
                return;
            }
        }
        if self.in_block {
            if let Some(b) = self.build_blocks.last_mut() {
                b.push_line(line);
            }
            return;
        }
        if !line.trim().is_empty() {
            self.other.push_line(line);
        }
    }

    fn finish(&mut self, complete: bool) -> Summary {
        self.settle_running(None, complete);
        let mut s = self.summary.clone();
        s.structured = !self.packages.is_empty() || !self.build_blocks.is_empty();
        for b in &self.build_blocks {
            s.push_build_error(&self.cleaner.clean(&b.text()));
        }
        s.build_errors_dropped += self.build_blocks_dropped;
        s.runner_summary = true;
        if self.untracked > 0 {
            s.push_anomaly(format!("more than {MAX_RUNNING_TESTS} tests ran at once: {} were counted without being tracked, so a parent test may be counted as a test", self.untracked));
        }
        for p in &mut self.packages {
            let unit = &mut p.unit;
            if p.build_failed {
                unit.broken = true;
                unit.note = Some("build failed".into());
            } else if p.no_tests {
                unit.note = Some("no test files".into());
            } else if p.status == Some(Status::Failed) && unit.failed == 0 {
                // The package failed outside any test (TestMain, init, a crash): its own output.
                unit.broken = true;
                s.failed += 1;
                unit.failed += 1;
                s.push_failure(unit.name.clone(), None, &self.cleaner.clean(&p.output.text()));
            } else if p.status.is_none() {
                s.runner_summary = false;
                if !complete {
                    unit.note = Some("still running".into());
                } else {
                    s.push_anomaly(format!("go gave no result for the package {}", unit.name));
                }
            } else if p.status == Some(Status::Passed) && unit.failed > 0 {
                s.push_anomaly(format!("go reported the package {} as passing though a test in it failed", unit.name));
            }
        }
        for p in &self.packages {
            s.push_unit(p.unit.clone());
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

    fn parse(lines: &[&str], complete: bool) -> (Summary, String) {
        let mut p = GoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        for l in lines {
            p.line(l);
        }
        (p.finish(complete), p.other())
    }

    const EVENTS: &[&str] = &[
        r#"{"Action":"run","Package":"m/fail","Test":"TestGood"}"#,
        r#"{"Action":"output","Package":"m/fail","Test":"TestGood","Output":"=== RUN   TestGood\n"}"#,
        r#"{"Action":"output","Package":"m/fail","Test":"TestGood","Output":"noise from good\n"}"#,
        r#"{"Action":"pass","Package":"m/fail","Test":"TestGood","Elapsed":0}"#,
        r#"{"Action":"run","Package":"m/fail","Test":"TestBad"}"#,
        r#"{"Action":"output","Package":"m/fail","Test":"TestBad","Output":"    a_test.go:4: want 1, got 2\n"}"#,
        r#"{"Action":"output","Package":"m/fail","Test":"TestBad","Output":"--- FAIL: TestBad (0.00s)\n"}"#,
        r#"{"Action":"fail","Package":"m/fail","Test":"TestBad","Elapsed":0}"#,
        r#"{"Action":"run","Package":"m/fail","Test":"TestSub"}"#,
        r#"{"Action":"run","Package":"m/fail","Test":"TestSub/inner"}"#,
        r#"{"Action":"output","Package":"m/fail","Test":"TestSub/inner","Output":"    a_test.go:5: inner broke\n"}"#,
        r#"{"Action":"run","Package":"m/fail","Test":"TestSub/ok"}"#,
        r#"{"Action":"fail","Package":"m/fail","Test":"TestSub/inner","Elapsed":0}"#,
        r#"{"Action":"pass","Package":"m/fail","Test":"TestSub/ok","Elapsed":0}"#,
        r#"{"Action":"fail","Package":"m/fail","Test":"TestSub","Elapsed":0}"#,
        r#"{"Action":"output","Package":"m/fail","Output":"FAIL\n"}"#,
        r#"{"Action":"output","Package":"m/fail","Output":"FAIL\tm/fail\t0.002s\n"}"#,
        r#"{"Action":"fail","Package":"m/fail","Elapsed":0.002}"#,
        r#"{"Action":"output","Package":"m/none","Output":"?   \tm/none\t[no test files]\n"}"#,
        r#"{"Action":"skip","Package":"m/none","Elapsed":0}"#,
        "# m/broken [m/broken.test]",
        "broken/a.go:2:23: cannot use \"s\" (untyped string constant) as int value in return statement",
        "FAIL\tm/broken [build failed]",
        r#"{"Action":"run","Package":"m/hang","Test":"TestHang"}"#,
        r#"{"Action":"output","Package":"m/hang","Test":"TestHang","Output":"panic: test timed out after 3s\n"}"#,
        r#"{"Action":"output","Package":"m/hang","Output":"FAIL\tm/hang\t3.005s\n"}"#,
        r#"{"Action":"fail","Package":"m/hang","Elapsed":3.005}"#,
    ];

    #[test]
    fn counts_leaves_keeps_failing_output_and_build_errors() {
        let (s, _) = parse(EVENTS, true);
        assert_eq!((s.passed, s.failed, s.skipped), (2, 3, 0));
        let names: Vec<&str> = s.failures.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["TestBad", "TestSub/inner", "TestHang"]);
        assert_eq!(s.failures[0].output, "    a_test.go:4: want 1, got 2");
        assert!(s.failures[2].output.contains("did not finish") && s.failures[2].output.contains("panic: test timed out after 3s"));
        assert_eq!(s.build_errors.len(), 1);
        assert!(s.build_errors[0].starts_with("# m/broken [m/broken.test]\nbroken/a.go:2:23: cannot use"));
        let r = super::super::report::render("go", &s, &crate::testrun::verdict::decide(&crate::testrun::verdict::Ending::Exited(1), &s), None);
        assert!(!r.contains("noise from good"), "{r}");
        assert!(r.contains("FAIL m/broken [build failed]"), "{r}");
        assert!(r.contains("--   m/none [no test files]"), "{r}");
        assert!(r.contains("FAIL m/fail (2 failed, 2 passed)"), "{r}");
    }

    #[test]
    fn build_output_events_of_newer_go_are_build_errors() {
        let (s, _) = parse(
            &[
                r##"{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"# m/broken [m/broken.test]\n"}"##,
                r#"{"ImportPath":"m/broken [m/broken.test]","Action":"build-output","Output":"broken/b.go:3:23: cannot use \"s\"\n"}"#,
                r#"{"ImportPath":"m/broken [m/broken.test]","Action":"build-fail"}"#,
                r#"{"Action":"start","Package":"m/broken"}"#,
                r#"{"Action":"output","Package":"m/broken","Output":"FAIL\tm/broken [build failed]\n"}"#,
                r#"{"Action":"fail","Package":"m/broken","Elapsed":0,"FailedBuild":"m/broken [m/broken.test]"}"#,
            ],
            true,
        );
        assert_eq!(s.build_errors, ["# m/broken [m/broken.test]\nbroken/b.go:3:23: cannot use \"s\""]);
        assert_eq!(s.units.len(), 1);
        assert_eq!((s.units[0].broken, s.units[0].note.as_deref()), (true, Some("build failed")));
        assert_eq!(s.failed, 0);
    }

    #[test]
    fn a_cut_run_lists_what_was_running() {
        let (s, _) = parse(&EVENTS[..25], false);
        assert_eq!(s.running, ["TestHang (m/hang)"]);
        assert_eq!(s.failed, 2);
    }

    #[test]
    fn a_goroutine_printing_pass_after_the_failure_cannot_overwrite_it() {
        use crate::testrun::verdict::{decide, Ending, Status};
        let (s, _) = parse(
            &[
                r#"{"Action":"run","Package":"m/p","Test":"TestFails"}"#,
                r#"{"Action":"output","Package":"m/p","Test":"TestFails","Output":"    p_test.go:9: THE-ASSERTION\n"}"#,
                r#"{"Action":"output","Package":"m/p","Test":"TestFails","Output":"--- FAIL: TestFails (0.00s)\n"}"#,
                r#"{"Action":"fail","Package":"m/p","Test":"TestFails","Elapsed":0}"#,
                r#"{"Action":"run","Package":"m/p","Test":"TestOk"}"#,
                r#"{"Action":"output","Package":"m/p","Test":"TestOk","Output":"--- PASS: TestFails (0.00s)\n"}"#,
                r#"{"Action":"pass","Package":"m/p","Test":"TestFails","Elapsed":0}"#,
                r#"{"Action":"pass","Package":"m/p","Test":"TestOk","Elapsed":0}"#,
                r#"{"Action":"output","Package":"m/p","Output":"FAIL\n"}"#,
                r#"{"Action":"fail","Package":"m/p","Elapsed":0.1}"#,
            ],
            true,
        );
        assert_eq!((s.passed, s.failed), (1, 1));
        assert_eq!(s.failures[0].name, "TestFails");
        assert!(s.failures[0].output.contains("THE-ASSERTION"));
        assert!(s.anomalies.iter().any(|a| a.contains("TestFails as passing after it had failed")), "{:?}", s.anomalies);
        assert_eq!(decide(&Ending::Exited(1), &s).status, Status::Failed);
        // Even if go said the package passed.
        let (s, _) = parse(
            &[
                r#"{"Action":"run","Package":"m/p","Test":"TestFails"}"#,
                r#"{"Action":"fail","Package":"m/p","Test":"TestFails","Elapsed":0}"#,
                r#"{"Action":"pass","Package":"m/p","Test":"TestFails","Elapsed":0}"#,
                r#"{"Action":"pass","Package":"m/p","Elapsed":0.1}"#,
            ],
            true,
        );
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Failed);
    }

    #[test]
    fn every_package_needs_gos_own_result() {
        use crate::testrun::verdict::{decide, Ending, Status};
        let ok = [r#"{"Action":"run","Package":"m/p","Test":"TestOk"}"#, r#"{"Action":"pass","Package":"m/p","Test":"TestOk","Elapsed":0}"#];
        let (s, _) = parse(&[ok[0], ok[1], r#"{"Action":"pass","Package":"m/p","Elapsed":0.1}"#], true);
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Passed);
        let (s, _) = parse(&ok, true);
        assert!(!s.runner_summary);
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Incomplete);
    }

    #[test]
    fn memory_follows_the_tests_running_not_the_tests_run() {
        let mut p = GoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        let long = "N".repeat(10_000);
        for i in 0..20_000 {
            let name = format!("TestMany/{long}{i}");
            p.line(&serde_json::json!({ "Action": "run", "Package": "m/p", "Test": name }).to_string());
            p.line(&serde_json::json!({ "Action": "output", "Package": "m/p", "Test": name, "Output": "chatter\n" }).to_string());
            p.line(&serde_json::json!({ "Action": "pass", "Package": "m/p", "Test": name }).to_string());
            assert!(p.running.len() <= 1);
        }
        p.line(r#"{"Action":"pass","Package":"m/p","Elapsed":1}"#);
        let s = p.finish(true);
        assert_eq!(s.passed, 20_000);
        // Paused parallel tests: tracked up to the cap, counted beyond.
        let mut p = GoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        for i in 0..(MAX_RUNNING_TESTS + 100) {
            p.line(&serde_json::json!({ "Action": "run", "Package": "m/p", "Test": format!("TestP{i}") }).to_string());
        }
        assert_eq!(p.running.len(), MAX_RUNNING_TESTS);
        for i in 0..(MAX_RUNNING_TESTS + 100) {
            p.line(&serde_json::json!({ "Action": "pass", "Package": "m/p", "Test": format!("TestP{i}") }).to_string());
        }
        p.line(r#"{"Action":"pass","Package":"m/p","Elapsed":1}"#);
        let s = p.finish(true);
        assert_eq!(s.passed, (MAX_RUNNING_TESTS + 100) as u64);
        assert!(!s.anomalies.is_empty());
    }

    #[test]
    fn text_without_events_is_the_runners_own_error() {
        let (s, other) = parse(&["go: errors parsing go.mod:", "/w/root/go.mod:4: unknown directive: foo"], true);
        assert!(!s.structured);
        assert_eq!(other, "go: errors parsing go.mod:\ngo.mod:4: unknown directive: foo\n");
    }
}
