//! `cargo test` output: cargo's progress and compiler diagnostics, then for each test binary
//! libtest's plain format (`running N tests`, `test name ... ok|FAILED|ignored`, the captured
//! output of failures between `---- name stdout ----` headers, `test result: ...`).
//!
//! A test's own output (and its subprocesses') shares the pipe with libtest's lines, so no one
//! line is trusted alone: a test is failed when its `test name ... FAILED` line or libtest's
//! `failures:` list says so, and a later line never turns a failure back into a pass. Each test
//! binary's `test result:` line is checked against the counted lines: a difference is an
//! anomaly (the run cannot be `passed`), and the larger failure count is kept.

use std::collections::HashSet;

use super::report::{Bounded, Cleaner, Kept, Summary, Unit, MAX_BUILD_ERROR, MAX_BUILD_ERRORS, MAX_FAILURES, MAX_TEST_OUTPUT};
use super::sink::Parser;

/// Most failing test names remembered per test binary (to count each once); beyond, counted.
const MAX_FAILED_NAMES: usize = 10_000;

/// libtest's `test result:` line: passed, failed, ignored.
fn result_counts(rest: &str) -> Option<(u64, u64, u64)> {
    let (_, counts) = rest.split_once(". ")?;
    let mut passed = None;
    let mut failed = None;
    let mut ignored = None;
    for part in counts.split(';') {
        let mut words = part.split_whitespace();
        let n = words.next()?.parse::<u64>().ok();
        match words.next() {
            Some("passed") => passed = n,
            Some("failed") => failed = n,
            Some("ignored") => ignored = n,
            _ => {}
        }
    }
    Some((passed?, failed?, ignored?))
}

/// What the parser knows of one test binary besides its [`Unit`].
#[derive(Default)]
struct Binary {
    failed_names: HashSet<String>,
    /// The `test result:` line's counts (the last one seen; failures: the most seen).
    result: Option<(u64, u64, u64)>,
    most_failed: u64,
}

pub struct CargoParser {
    cleaner: Cleaner,
    units: Vec<Unit>,
    binaries: Vec<Binary>,
    /// Failing tests (unit index, name) in the order libtest reported them (the first
    /// [`MAX_FAILURES`]).
    failed: Vec<(usize, String)>,
    /// Inside a `failures:` section, where libtest lists the failing names.
    listing: bool,
    error_blocks_dropped: u64,
    outputs: Vec<(usize, String, Kept)>,
    /// The failure output being read: its index in `outputs`.
    capturing: Option<usize>,
    /// The unit whose `test result:` line has not come yet.
    open: Option<usize>,
    saw_running: bool,
    compile_failed: bool,
    error_blocks: Vec<Bounded>,
    in_error: bool,
    in_warning: bool,
    /// Tests announced by `running N tests` whose result has not come (for a cut run).
    pending: u64,
    other: Bounded,
}

impl CargoParser {
    pub fn new(cleaner: Cleaner) -> Self {
        CargoParser {
            cleaner,
            units: Vec::new(),
            binaries: Vec::new(),
            failed: Vec::new(),
            listing: false,
            error_blocks_dropped: 0,
            outputs: Vec::new(),
            capturing: None,
            open: None,
            saw_running: false,
            compile_failed: false,
            error_blocks: Vec::new(),
            in_error: false,
            in_warning: false,
            pending: 0,
            other: Bounded::new(4 * 1024),
        }
    }

    fn unit(&mut self) -> usize {
        if self.units.is_empty() {
            self.add_unit(Unit::new("tests"));
        }
        self.open.unwrap_or(self.units.len() - 1)
    }

    fn add_unit(&mut self, unit: Unit) {
        self.units.push(unit);
        self.binaries.push(Binary::default());
    }

    /// A test of unit `u` failed (counted once per name; never undone).
    fn failed_test(&mut self, u: usize, name: &str) {
        let b = &mut self.binaries[u];
        if b.failed_names.contains(name) {
            return;
        }
        if b.failed_names.len() < MAX_FAILED_NAMES {
            b.failed_names.insert(name.to_string());
        }
        self.units[u].failed += 1;
        if self.failed.len() < MAX_FAILURES {
            self.failed.push((u, name.to_string()));
        }
    }
}

impl CargoParser {
    /// A binary that is still open when the next one starts ended without its result line.
    fn close_crashed(&mut self) {
        if let Some(open) = self.open.take() {
            let u = &mut self.units[open];
            if !u.broken {
                u.broken = true;
                u.note = Some("the test binary stopped before reporting".into());
            }
        }
    }
}

/// `Running unittests src/lib.rs (target/debug/deps/x-123)` -> `src/lib.rs`.
fn binary_name(rest: &str) -> String {
    let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
    let end = rest.rfind(" (").unwrap_or(rest.len());
    rest[..end].to_string()
}

impl Parser for CargoParser {
    fn counts(&self) -> Option<(u64, u64, u64)> {
        Some(self.units.iter().fold((0, 0, 0), |(p, f, s), u| (p + u.passed, f + u.failed, s + u.skipped)))
    }
    fn line(&mut self, line: &str) {
        let trimmed = line.trim_start();
        // Test binaries.
        if let Some(rest) = trimmed.strip_prefix("Running ") {
            if line.starts_with("     Running ") || line.starts_with("Running ") {
                self.close_crashed();
                self.add_unit(Unit::new(binary_name(rest)));
                self.open = Some(self.units.len() - 1);
                self.capturing = None;
                self.listing = false;
                self.in_error = false;
                return;
            }
        }
        if let Some(rest) = trimmed.strip_prefix("Doc-tests ") {
            self.close_crashed();
            self.add_unit(Unit::new(format!("doc-tests {rest}")));
            self.open = Some(self.units.len() - 1);
            self.capturing = None;
            self.listing = false;
            return;
        }
        if let Some(n) = trimmed.strip_prefix("running ").and_then(|r| r.strip_suffix(" tests").or_else(|| r.strip_suffix(" test"))) {
            if let Ok(n) = n.parse::<u64>() {
                self.saw_running = true;
                self.pending = n;
                return;
            }
        }
        if let Some(rest) = line.strip_prefix("test ") {
            if let Some((name, status)) = rest.rsplit_once(" ... ") {
                let u = self.unit();
                let status = status.trim();
                if status == "ok" {
                    self.units[u].passed += 1;
                } else if status.starts_with("FAILED") {
                    self.failed_test(u, name);
                } else if status.starts_with("ignored") {
                    self.units[u].skipped += 1;
                } else {
                    return;
                }
                self.pending = self.pending.saturating_sub(1);
                return;
            }
            if let Some(counts) = rest.strip_prefix("result: ") {
                if let Some(u) = self.open {
                    if let Some(c) = result_counts(counts) {
                        let b = &mut self.binaries[u];
                        b.result = Some(c);
                        b.most_failed = b.most_failed.max(c.1);
                    }
                }
                self.open = None;
                self.capturing = None;
                self.listing = false;
                self.pending = 0;
                return;
            }
        }
        if let Some(name) = line.strip_prefix("---- ").and_then(|r| r.strip_suffix(" stdout ----").or_else(|| r.strip_suffix(" stderr ----"))) {
            let u = self.unit();
            self.listing = false;
            if self.outputs.len() < MAX_FAILURES {
                self.outputs.push((u, name.to_string(), Kept::new(MAX_TEST_OUTPUT)));
                self.capturing = Some(self.outputs.len() - 1);
            } else {
                self.capturing = Some(usize::MAX);
            }
            return;
        }
        if let Some(i) = self.capturing {
            if line == "failures:" || line == "successes:" {
                self.capturing = None;
                self.listing = line == "failures:";
            } else if let Some((_, _, kept)) = self.outputs.get_mut(i) {
                kept.push_line(line);
            }
            return;
        }
        if line == "failures:" && self.open.is_some() {
            self.listing = true;
            return;
        }
        if self.listing {
            if let Some(name) = line.strip_prefix("    ") {
                let name = name.trim_end();
                if !name.is_empty() && !name.starts_with(' ') {
                    let u = self.unit();
                    // Past the cap of remembered names a listed name may have been counted
                    // already: the result line's count then decides.
                    if self.binaries[u].failed_names.len() < MAX_FAILED_NAMES || self.binaries[u].failed_names.contains(name) {
                        self.failed_test(u, name);
                    }
                }
                return;
            }
            if !line.is_empty() {
                self.listing = false;
            }
        }
        if let Some(open) = self.open {
            // Inside a test binary's run: what is not a result line is the binary's own output,
            // except cargo's word that the binary died.
            if let Some(rest) = trimmed.strip_prefix("process didn't exit successfully: ") {
                let why = rest.rsplit_once(" (").map(|(_, w)| w.trim_end_matches(')')).unwrap_or("crashed");
                self.units[open].broken = true;
                self.units[open].note = Some(format!("the test binary stopped: {why}"));
            }
            return;
        }
        // Cargo and the compiler.
        if line.starts_with("error: could not compile") {
            self.compile_failed = true;
            self.in_error = false;
            return;
        }
        if line.starts_with("error: test failed, to rerun pass")
            || line.starts_with("error: 1 target failed")
            || (line.starts_with("error: ") && line.ends_with(" targets failed:"))
        {
            self.in_error = false;
            return;
        }
        if line.starts_with("error[") || line.starts_with("error:") {
            // Each block is usually printed twice (lib and lib test): room for both.
            if self.error_blocks.len() < 2 * MAX_BUILD_ERRORS {
                let mut b = Bounded::new(MAX_BUILD_ERROR);
                b.push_line(line);
                self.error_blocks.push(b);
                self.in_error = true;
            } else {
                self.error_blocks_dropped += 1;
                self.in_error = false;
            }
            self.in_warning = false;
            return;
        }
        if line.starts_with("warning") {
            self.in_warning = true;
            self.in_error = false;
            return;
        }
        if line.is_empty() {
            self.in_error = false;
            self.in_warning = false;
            return;
        }
        if self.in_error {
            if let Some(b) = self.error_blocks.last_mut() {
                b.push_line(line);
            }
            return;
        }
        if self.in_warning
            || trimmed.starts_with("Compiling ")
            || trimmed.starts_with("Finished ")
            || trimmed.starts_with("Blocking ")
            || trimmed.starts_with("Downloaded ")
            || trimmed.starts_with("Locking ")
            || trimmed.starts_with("Adding ")
            || trimmed.starts_with("For more information about")
        {
            return;
        }
        self.other.push_line(line);
    }

    fn finish(&mut self, complete: bool) -> Summary {
        let mut s = Summary { structured: self.saw_running || self.compile_failed, ..Summary::default() };
        if self.compile_failed {
            for b in &self.error_blocks {
                s.push_build_error(&self.cleaner.clean(&b.text()));
            }
            s.build_errors_dropped += self.error_blocks_dropped;
        }
        // Every test binary's result line against its counted test lines.
        s.runner_summary = true;
        for (u, b) in self.units.iter_mut().zip(&self.binaries) {
            let Some((passed, _, ignored)) = b.result else {
                s.runner_summary = false;
                continue;
            };
            if (passed, b.most_failed, ignored) != (u.passed, u.failed, u.skipped) {
                s.push_anomaly(format!(
                    "libtest's result line for {} ({passed} passed, {} failed, {ignored} ignored) disagrees with its test lines ({} passed, {} failed, {} ignored): a test's output may have mixed with them",
                    u.name, b.most_failed, u.passed, u.failed, u.skipped
                ));
                // The result line's counts, and the most failures either side saw.
                u.passed = passed;
                u.skipped = ignored;
                u.failed = u.failed.max(b.most_failed);
            }
        }
        for (u, name) in &self.failed {
            let out = self
                .outputs
                .iter()
                .find(|(ou, on, _)| ou == u && on == name)
                .map(|(_, _, b)| b.text())
                .unwrap_or_default();
            let out = out.lines().filter(|l| !l.starts_with("note: run with `RUST_BACKTRACE=1`")).collect::<Vec<_>>().join("\n");
            s.push_failure(name.clone(), Some(self.units[*u].name.clone()), &self.cleaner.clean(&out));
        }
        for u in &self.units {
            s.passed += u.passed;
            s.failed += u.failed;
            s.skipped += u.skipped;
        }
        if let Some(open) = self.open {
            if complete {
                // The binary ended without its result line: it crashed.
                self.units[open].broken = true;
                self.units[open].note = Some("the test binary stopped before reporting".into());
            } else if self.pending > 0 {
                s.running.push(format!("{} test(s) of {}", self.pending, self.units[open].name));
            }
        }
        if self.compile_failed && s.build_errors.is_empty() {
            s.push_build_error("the build failed (no compiler error was captured)");
        }
        for u in &self.units {
            s.push_unit(u.clone());
        }
        s
    }

    fn other(&self) -> String {
        let mut text = String::new();
        for b in &self.error_blocks {
            text.push_str(&b.text());
            text.push('\n');
        }
        text.push_str(&self.other.text());
        self.cleaner.clean(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(text: &str) -> (Summary, String) {
        let mut p = CargoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        for l in text.lines() {
            p.line(l);
        }
        (p.finish(true), p.other())
    }

    #[test]
    fn libtest_results_and_failure_output() {
        let out = "   Compiling fx v0.1.0 (/w/root)
    Finished `test` profile [unoptimized + debuginfo] target(s) in 0.54s
     Running unittests src/lib.rs (target/debug/deps/fx-4a99a53287a4b62f)

running 3 tests
test tests::passes ... ok
test tests::skipped ... ignored
test tests::fails ... FAILED

failures:

---- tests::fails stdout ----
printed by failing

thread 'tests::fails' (22897) panicked at src/lib.rs:6:58:
assertion `left == right` failed: math is broken
  left: 2
 right: 3
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    tests::fails

test result: FAILED. 1 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.13s

error: test failed, to rerun pass `--lib`
     Running tests/it.rs (target/debug/deps/it-91a660321255027c)

running 1 test
test integration_ok ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.11s

   Doc-tests fx

running 0 tests

test result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

error: 1 target failed:
    `--lib`
";
        let (s, _) = parse(out);
        assert_eq!((s.passed, s.failed, s.skipped), (2, 1, 1));
        assert_eq!(s.failures.len(), 1);
        assert_eq!(s.failures[0].name, "tests::fails");
        assert_eq!(s.failures[0].file.as_deref(), Some("src/lib.rs"));
        assert!(s.failures[0].output.contains("assertion `left == right` failed: math is broken"));
        assert!(!s.failures[0].output.contains("RUST_BACKTRACE"));
        let names: Vec<&str> = s.units.iter().map(|u| u.name.as_str()).collect();
        assert_eq!(names, ["src/lib.rs", "tests/it.rs", "doc-tests fx"]);
        assert!(s.build_errors.is_empty());
    }

    #[test]
    fn a_subprocess_printing_ok_after_the_test_line_cannot_pass_a_failure() {
        use crate::testrun::verdict::{decide, Ending, Status};
        // One test thread: libtest writes `test name ... `, the test's child prints `ok`, then
        // libtest writes `FAILED` on the line after.
        let out = "     Running unittests src/lib.rs (target/debug/deps/fx-1)

running 2 tests
test tests::fails ... ok
FAILED
test tests::passes ... ok

failures:

---- tests::fails stdout ----
thread 'tests::fails' panicked at src/lib.rs:4:5:
THE-ASSERTION

failures:
    tests::fails

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        let (s, _) = parse(out);
        assert_eq!((s.passed, s.failed), (1, 1));
        assert_eq!(s.failures[0].name, "tests::fails");
        assert!(s.failures[0].output.contains("THE-ASSERTION"));
        assert!(!s.anomalies.is_empty());
        let v = decide(&Ending::Exited(101), &s);
        assert_eq!(v.status, Status::Failed);
        let r = crate::testrun::report::render("cargo", &s, &v, None);
        assert!(r.starts_with("cargo: failed: 1 passed, 1 failed, 0 skipped (exit code 101)"), "{r}");
    }

    #[test]
    fn a_forged_result_line_cannot_hide_a_failure_and_a_missing_one_is_incomplete() {
        use crate::testrun::verdict::{decide, Ending, Status};
        let out = "     Running tests/it.rs (target/debug/deps/it-1)

running 1 test
test result: ok. 9 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";
        // A test printed a result line, then the binary died before its own.
        let (s, _) = parse(&format!("{out}     Running tests/b.rs (target/debug/deps/b-1)\n\nrunning 1 test\ntest t ... ok\n"));
        assert!(!s.runner_summary);
        assert!(s.failing(), "a binary without its result line is broken");
        assert_eq!(decide(&Ending::Exited(101), &s).status, Status::Failed);
        // Everything agrees: passed.
        let (s, _) = parse("     Running tests/it.rs (target/debug/deps/it-1)\n\nrunning 1 test\ntest t ... ok\n\ntest result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n");
        assert!(s.runner_summary && s.anomalies.is_empty(), "{:?}", s.anomalies);
        assert_eq!(decide(&Ending::Exited(0), &s).status, Status::Passed);
        assert_eq!(decide(&Ending::Exited(101), &s).status, Status::Incomplete);
    }

    #[test]
    fn many_failures_and_compile_errors_stay_bounded() {
        let mut p = CargoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        p.line("     Running unittests src/lib.rs (target/debug/deps/fx-1)");
        p.line("running 100000 tests");
        for i in 0..100_000 {
            p.line(&format!("test t{i} ... FAILED"));
        }
        p.line("failures:");
        for i in 0..100_000 {
            p.line(&format!("---- t{i} stdout ----"));
            p.line(&"y".repeat(10_000));
        }
        p.line("failures:");
        for i in 0..100_000 {
            p.line(&format!("    t{i}"));
        }
        p.line("test result: FAILED. 0 passed; 100000 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s");
        assert!(p.outputs.len() <= MAX_FAILURES && p.failed.len() <= MAX_FAILURES);
        let s = p.finish(true);
        assert_eq!(s.failed, 100_000);
        assert!(s.anomalies.is_empty(), "{:?}", s.anomalies);
        assert_eq!(s.failures.len(), MAX_FAILURES);
        let mut p = CargoParser::new(Cleaner::new(Path::new("/w/root"), Path::new("/tmp/s")));
        for i in 0..10_000 {
            p.line(&format!("error[E{i}]: broken"));
            p.line(&"z".repeat(5_000));
            p.line("");
        }
        p.line("error: could not compile `fx` (lib) due to 10000 previous errors");
        assert!(p.error_blocks.len() <= 2 * MAX_BUILD_ERRORS);
        let s = p.finish(true);
        assert_eq!(s.build_errors.len(), MAX_BUILD_ERRORS);
        assert!(s.build_errors_dropped > 0);
    }

    #[test]
    fn compile_errors_are_build_errors_once() {
        let out = "   Compiling fx v0.1.0 (/w/root)
warning: unused variable: `x`
 --> src/lib.rs:2:9

error[E0277]: cannot add `&str` to `i32`
 --> src/lib.rs:1:39
  |
1 | pub fn add(a: i32, b: i32) -> i32 { a + \"b\" }
  |                                       ^ no implementation for `i32 + &str`

For more information about this error, try `rustc --explain E0277`.
error: could not compile `fx` (lib) due to 1 previous error
warning: build failed, waiting for other jobs to finish...
error[E0277]: cannot add `&str` to `i32`
 --> src/lib.rs:1:39
  |
1 | pub fn add(a: i32, b: i32) -> i32 { a + \"b\" }
  |                                       ^ no implementation for `i32 + &str`

error: could not compile `fx` (lib test) due to 1 previous error
";
        let (s, _) = parse(out);
        assert!(s.structured);
        assert_eq!(s.build_errors.len(), 1, "{:?}", s.build_errors);
        assert!(s.build_errors[0].starts_with("error[E0277]: cannot add `&str` to `i32`\n --> src/lib.rs:1:39"));
        assert!(!s.build_errors[0].contains("unused variable"));
    }

    #[test]
    fn cargo_errors_without_a_build_are_the_runners_own() {
        let (s, other) = parse("error: manifest path `/w/root/Cargo.toml` does not exist\n");
        assert!(!s.structured);
        assert_eq!(other.trim(), "error: manifest path `Cargo.toml` does not exist");
    }
}
