//! `go test -json` output: test2json events, one JSON object per line, mixed (through the
//! merged pipe) with the go command's own text: compiler and vet errors (`# pkg` blocks),
//! `FAIL pkg [build failed]` lines, module errors.
//!
//! Tests are counted at the leaves (a test with subtests counts through them). A test that
//! started but has no result when its package ended was running when the test binary died
//! (the inner `-timeout` panic, a crash): it is a failure, named, with the panic as its output.

use std::collections::{HashMap, HashSet};

use super::report::{Bounded, Cleaner, Kept, Summary, Unit, MAX_TEST_OUTPUT};
use super::sink::Parser;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Status {
    Running,
    Passed,
    Failed,
    Skipped,
}

struct Test {
    pkg: String,
    name: String,
    status: Status,
    output: Option<Kept>,
}

struct Package {
    name: String,
    status: Option<Status>,
    output: Kept,
    build_failed: bool,
    no_tests: bool,
}

pub struct GoParser {
    cleaner: Cleaner,
    tests: Vec<Test>,
    test_index: HashMap<(String, String), usize>,
    packages: Vec<Package>,
    package_index: HashMap<String, usize>,
    build_blocks: Vec<Bounded>,
    in_block: bool,
    other: Bounded,
}

impl GoParser {
    pub fn new(cleaner: Cleaner) -> Self {
        GoParser {
            cleaner,
            tests: Vec::new(),
            test_index: HashMap::new(),
            packages: Vec::new(),
            package_index: HashMap::new(),
            build_blocks: Vec::new(),
            in_block: false,
            other: Bounded::new(4 * 1024),
        }
    }

    fn package(&mut self, name: &str) -> &mut Package {
        let i = *self.package_index.entry(name.to_string()).or_insert_with(|| {
            self.packages.push(Package {
                name: name.to_string(),
                status: None,
                output: Kept::new(MAX_TEST_OUTPUT),
                build_failed: false,
                no_tests: false,
            });
            self.packages.len() - 1
        });
        &mut self.packages[i]
    }

    fn test(&mut self, pkg: &str, name: &str) -> &mut Test {
        let key = (pkg.to_string(), name.to_string());
        let i = *self.test_index.entry(key).or_insert_with(|| {
            self.tests.push(Test {
                pkg: pkg.to_string(),
                name: name.to_string(),
                status: Status::Running,
                output: Some(Kept::new(MAX_TEST_OUTPUT)),
            });
            self.tests.len() - 1
        });
        &mut self.tests[i]
    }

    fn event(&mut self, ev: &serde_json::Value) {
        let action = ev["Action"].as_str().unwrap_or("");
        let test = ev["Test"].as_str().map(str::to_string);
        let output = ev["Output"].as_str().unwrap_or("");
        // Go 1.24+: build output comes as its own events, keyed by ImportPath (the package
        // then fails with an output line saying `[build failed]`).
        match action {
            "build-output" => {
                if !self.in_block {
                    self.build_blocks.push(Bounded::new(super::report::MAX_BUILD_ERROR));
                    self.in_block = true;
                }
                if let Some(b) = self.build_blocks.last_mut() {
                    if b.is_empty() && !output.starts_with("# ") {
                        b.push_line(&format!("# {}", ev["ImportPath"].as_str().unwrap_or("?")));
                    }
                    b.push(output);
                }
                return;
            }
            "build-fail" => {
                self.in_block = false;
                return;
            }
            _ => {}
        }
        let pkg = ev["Package"].as_str().unwrap_or("").to_string();
        if pkg.is_empty() {
            return;
        }
        self.package(&pkg);
        match (action, test) {
            ("output", Some(t)) => {
                let trimmed = output.trim_start();
                let noise = ["=== RUN", "=== PAUSE", "=== CONT", "=== NAME", "--- PASS", "--- FAIL", "--- SKIP"]
                    .iter()
                    .any(|p| trimmed.starts_with(p));
                if !noise {
                    if let Some(out) = &mut self.test(&pkg, &t).output {
                        out.push(output);
                    }
                }
            }
            ("run", Some(t)) => {
                self.test(&pkg, &t);
            }
            ("pass" | "fail" | "skip", Some(t)) => {
                let entry = self.test(&pkg, &t);
                entry.status = match action {
                    "pass" => Status::Passed,
                    "fail" => Status::Failed,
                    _ => Status::Skipped,
                };
                if entry.status != Status::Failed {
                    entry.output = None;
                }
            }
            ("output", None) => {
                let trimmed = output.trim_end();
                let p = self.package(&pkg);
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
                let p = self.package(&pkg);
                p.status = Some(match action {
                    "pass" => Status::Passed,
                    "fail" => Status::Failed,
                    _ => Status::Skipped,
                });
            }
            _ => {}
        }
    }
}

impl Parser for GoParser {
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
            let mut b = Bounded::new(super::report::MAX_BUILD_ERROR);
            b.push_line(&format!("# {rest}"));
            self.build_blocks.push(b);
            self.in_block = true;
            return;
        }
        if let Some(rest) = line.strip_prefix("FAIL\t") {
            if let Some(pkg) = rest.strip_suffix(" [build failed]").or_else(|| rest.strip_suffix(" [setup failed]")) {
                self.package(pkg).build_failed = true;
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
        let mut s = Summary { structured: !self.packages.is_empty() || !self.build_blocks.is_empty(), ..Summary::default() };
        for b in &self.build_blocks {
            s.push_build_error(&self.cleaner.clean(&b.text()));
        }
        let mut units: Vec<Unit> = self.packages.iter().map(|p| Unit::new(p.name.clone())).collect();
        // Tests in package order, leaves only. A parent is known by its children's names.
        let mut parents: HashSet<(&str, &str)> = HashSet::new();
        let mut unsettled_parents: HashSet<(&str, &str)> = HashSet::new();
        for t in &self.tests {
            for (i, _) in t.name.match_indices('/') {
                parents.insert((&t.pkg, &t.name[..i]));
                if matches!(t.status, Status::Failed | Status::Running) {
                    unsettled_parents.insert((&t.pkg, &t.name[..i]));
                }
            }
        }
        for t in &self.tests {
            let key = (t.pkg.as_str(), t.name.as_str());
            let leaf = !parents.contains(&key);
            let pi = self.package_index[&t.pkg];
            let pkg_done = self.packages[pi].status.is_some();
            let unit = &mut units[pi];
            match t.status {
                Status::Passed if leaf => {
                    unit.passed += 1;
                    s.passed += 1;
                }
                Status::Skipped if leaf => {
                    unit.skipped += 1;
                    s.skipped += 1;
                }
                Status::Failed if !unsettled_parents.contains(&key) => {
                    unit.failed += 1;
                    s.failed += 1;
                    let out = t.output.as_ref().map(|o| o.text()).unwrap_or_default();
                    s.push_failure(t.name.clone(), Some(t.pkg.clone()), &self.cleaner.clean(&out));
                }
                Status::Running if !self.tests.iter().any(|c| c.status == Status::Running && c.pkg == t.pkg && c.name.len() > t.name.len() && c.name.starts_with(&t.name) && c.name.as_bytes()[t.name.len()] == b'/') => {
                    if complete || pkg_done {
                        unit.failed += 1;
                        s.failed += 1;
                        let out = t.output.as_ref().map(|o| o.text()).unwrap_or_default();
                        s.push_failure(
                            t.name.clone(),
                            Some(t.pkg.clone()),
                            &format!("[did not finish: the test binary stopped while it ran]\n{}", self.cleaner.clean(&out)),
                        );
                    } else {
                        s.running.push(format!("{} ({})", t.name, t.pkg));
                    }
                }
                _ => {}
            }
        }
        for (p, unit) in self.packages.iter().zip(units.iter_mut()) {
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
                s.push_failure(p.name.clone(), None, &self.cleaner.clean(&p.output.text()));
            } else if p.status.is_none() && !complete {
                unit.note = Some("still running".into());
            }
        }
        s.units = units;
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
        let r = super::super::report::render("go", &s, Some(1), None);
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
    fn text_without_events_is_the_runners_own_error() {
        let (s, other) = parse(&["go: errors parsing go.mod:", "/w/root/go.mod:4: unknown directive: foo"], true);
        assert!(!s.structured);
        assert_eq!(other, "go: errors parsing go.mod:\ngo.mod:4: unknown directive: foo\n");
    }
}
