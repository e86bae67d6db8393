//! run_tests end to end with the node runner (node is always here) and go when installed: the
//! report, the two deadlines, cancellation, the scratch directory, the environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use workcell_core::sandbox::{Features, Mode};
use workcell_core::testrun::verdict::Status;
use workcell_core::testrun::{run_tests, TestsOptions, TestsRequest};
use workcell_core::{Cancel, Code};

use crate::common;

use common::{fixture, node, Fixture, PATH};

impl Fixture {
    fn tests_options(&self) -> TestsOptions {
        let mut o = TestsOptions::new(PATH, node());
        o.scratch_parent = self.scratch.clone();
        o
    }

    fn scratch_empty(&self) -> bool {
        std::fs::read_dir(&self.scratch).unwrap().count() == 0
    }
}

fn req(runner: &str, args: &[&str], timeout_ms: Option<f64>) -> TestsRequest {
    TestsRequest { runner: runner.into(), args: args.iter().map(|s| s.to_string()).collect(), timeout_ms }
}

const SUITE: &str = r#"const test = require("node:test");
const assert = require("node:assert");
test("passes", () => { console.log("CHATTER"); });
test("fails", () => { assert.strictEqual(2 + 2, 5); });
test("sees", () => { console.log(JSON.stringify(Object.keys(process.env).sort())); });
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_report_counts_and_keeps_only_failing_output() {
    let f = fixture(&[("test/a.test.js", SUITE)]);
    let out = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
    assert_eq!((out.passed, out.failed, out.skipped), (2, 1, 0));
    assert_eq!(out.exit_code, Some(1));
    assert_eq!(out.failures.len(), 1);
    assert_eq!(out.failures[0].name, "fails");
    assert!(out.failures[0].output.contains("4 !== 5"), "{}", out.failures[0].output);
    // node reports output per file, not per test: the failing file's output comes with its
    // failure, labelled; a passing file's never.
    assert!(out.failures[0].output.contains("output of the file (") && out.failures[0].output.contains("CHATTER"), "{}", out.failures[0].output);
    assert!(out.report.starts_with("node: failed: 2 passed, 1 failed, 0 skipped (exit code 1)"), "{}", out.report);
    assert_eq!(out.status, Status::Failed);
    assert!(!out.report.contains(f.root.to_str().unwrap()));
    assert_eq!(out.timeout_ms, 120_000);
    assert!(f.scratch_empty());
}

fn home_dir(var: &str, dot: &str) -> Option<PathBuf> {
    std::env::var_os(var).map(PathBuf::from).or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(dot))).filter(|p| p.is_dir())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_outer_deadline_is_tests_timed_out_with_what_was_running() {
    // libtest has no per-test timeout: only the outer deadline stops a hanging test.
    let lib = "#[test] fn fast() {}\n#[test] fn hangs() { std::thread::sleep(std::time::Duration::from_secs(3600)); }\n";
    let f = fixture(&[("Cargo.toml", "[package]\nname = \"fx\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"), ("src/lib.rs", lib)]);
    let mut o = f.tests_options();
    o.path = std::env::var_os("PATH").unwrap();
    o.cargo_home = home_dir("CARGO_HOME", ".cargo");
    o.rustup_home = home_dir("RUSTUP_HOME", ".rustup");
    let built = run_tests(&f.ws, &req("cargo", &["--no-run"], None), &o, &Cancel::new()).await.unwrap();
    assert_eq!(built.exit_code, Some(0), "{}", built.report);
    let started = Instant::now();
    let e = run_tests(&f.ws, &req("cargo", &[], Some(2_000.0)), &o, &Cancel::new()).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(e.code, Code::TestsTimedOut, "{e:?}");
    assert!(took < Duration::from_millis(2_000 + 1_000), "{took:?}");
    let d = e.details.unwrap();
    assert_eq!(d["timeoutMs"], 2_000);
    assert_eq!((d["passed"].as_u64(), d["failed"].as_u64()), (Some(1), Some(0)), "{d}");
    assert_eq!(d["running"], serde_json::json!(["1 test(s) of src/lib.rs"]));
    assert!(d["report"].as_str().unwrap().starts_with("cargo: incomplete: 1 passed, 0 failed, 0 skipped (stopped at the 2000 ms deadline)"), "{d}");
    assert_eq!(d["status"], "incomplete");
    assert!(e.hint.unwrap().contains("timeoutMs"));
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_is_not_a_timeout() {
    let f = fixture(&[("test/slow.test.js", "require('node:test')('slow', () => new Promise((r) => setTimeout(r, 60_000)));\n")]);
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(400)).await;
        c.cancel();
    });
    let started = Instant::now();
    let e = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &cancel).await.unwrap_err();
    assert!(e.is_cancelled());
    assert!(started.elapsed() < Duration::from_millis(400 + 800));
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_args_and_missing_runners_have_no_effect() {
    let f = fixture(&[("test/a.test.js", SUITE)]);
    let e = run_tests(&f.ws, &req("node", &["--test-reporter=spec"], None), &f.tests_options(), &Cancel::new()).await.unwrap_err();
    assert_eq!(e.reason(), Some("COMMAND_REFUSED"));
    let e = run_tests(&f.ws, &req("vitest", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code, Code::CommandNotFound);
    let mut o = f.tests_options();
    o.path = "/nonexistent".into();
    let e = run_tests(&f.ws, &req("cargo", &[], None), &o, &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code, Code::CommandNotFound);
    assert!(f.scratch_empty());
    assert!(!Path::new(&f.root.join("node_modules")).exists());
}

fn has_go() -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap()).any(|d| d.join("go").is_file())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_runs_offline_with_its_caches_in_the_scratch_directory() {
    if !has_go() {
        eprintln!("go is not installed: skipped");
        return;
    }
    let test = r#"package m

import (
	"os"
	"strings"
	"testing"
)

func TestEnv(t *testing.T) {
	for _, kv := range []string{"GOPROXY=off", "GOFLAGS=", "GOTOOLCHAIN=local", "GOWORK=off", "GOENV=off"} {
		k, v, _ := strings.Cut(kv, "=")
		if got, ok := os.LookupEnv(k); !ok || got != v { t.Errorf("%s = %q", k, got) }
	}
	for _, k := range []string{"GOCACHE", "GOPATH", "HOME", "TMPDIR"} {
		if !strings.Contains(os.Getenv(k), "workcell-scratch-") { t.Errorf("%s = %q", k, os.Getenv(k)) }
	}
}
"#;
    let f = fixture(&[("go.mod", "module example.com/m\n\ngo 1.19\n"), ("m_test.go", test)]);
    let mut o = f.tests_options();
    o.path = std::env::var_os("PATH").unwrap();
    let out = run_tests(&f.ws, &req("go", &["-run", "TestEnv"], None), &o, &Cancel::new()).await.unwrap();
    assert_eq!((out.passed, out.failed), (1, 0), "{}", out.report);
    assert!(f.scratch_empty());
}

fn landlock() -> bool {
    Features::detect().landlock_abi.is_some()
}

fn sandbox_off(f: &Fixture) -> TestsOptions {
    let mut o = f.tests_options();
    o.sandbox.mode = Mode::Off;
    o
}

/// A stand-in for vitest at node_modules/.bin/vitest: records whether it could create a file
/// beside its report (in the name of its one test file), writes the report, then does
/// `ATTACK` to the report path (replace it with a symlink to the canary, or with a FIFO).
fn fake_vitest(attack: &str) -> String {
    format!(
        r#"#!/usr/bin/env node
const fs = require("node:fs");
const path = require("node:path");
const out = process.argv.find((a) => a.startsWith("--outputFile=")).slice("--outputFile=".length);
let beside = "created";
try {{ fs.writeFileSync(path.join(path.dirname(out), "planted"), "x"); }} catch (e) {{ beside = e.code; }}
const report = {{ numTotalTests: 1, numPassedTests: 1, numFailedTests: 0, numPendingTests: 0, numTodoTests: 0, success: true,
  testResults: [{{ name: path.join(process.cwd(), "beside-" + beside + ".test.ts"), status: "passed", message: "", assertionResults: [{{ fullName: "a", status: "passed", failureMessages: [] }}] }}] }};
fs.writeFileSync(out, JSON.stringify(report));
let attack = "done";
try {{ {attack} }} catch (e) {{ attack = e.code; }}
console.log("attack:" + attack);
"#
    )
}

fn canary_fixture(attack: &str) -> (Fixture, PathBuf) {
    let f = fixture(&[("node_modules/.bin/vitest", &fake_vitest(attack)), ("a.test.ts", "")]);
    let canary = f.root.parent().unwrap().join("canary.txt");
    // A JSON file outside everything the runner may read: parsed as a report, its content
    // would show in the report's lines.
    std::fs::write(&canary, r#"{"testResults":[{"name":"CANARY-OUTSIDE-THE-SANDBOX","status":"passed","assertionResults":[{"fullName":"x","status":"passed"}]}],"numPassedTests":1,"numFailedTests":0,"success":true}"#).unwrap();
    (f, canary)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vitest_report_replaced_by_a_symlink_to_a_canary_is_never_read() {
    let attack = r#"fs.rmSync(out); fs.symlinkSync(path.join(process.cwd(), "..", "canary.txt"), out);"#;
    // Confined: the runner can neither plant a file beside its report nor replace it.
    if landlock() {
        let (f, _) = canary_fixture(attack);
        let out = run_tests(&f.ws, &req("vitest", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
        assert_eq!(out.status, Status::Passed, "{}", out.report);
        assert_eq!(out.passed, 1);
        assert!(out.report.contains("ok   beside-EACCES.test.ts (1 passed)"), "{}", out.report);
        let text = serde_json::to_string(&out.to_json()).unwrap();
        assert!(!text.contains("CANARY"), "{text}");
        assert!(f.scratch_empty());
    }
    // Unconfined (sandbox off, or no Landlock): the replacement happens, and the host refuses it.
    let (f, _) = canary_fixture(attack);
    let out = run_tests(&f.ws, &req("vitest", &[], None), &sandbox_off(&f), &Cancel::new()).await.unwrap();
    let text = serde_json::to_string(&out.to_json()).unwrap();
    assert!(!text.contains("CANARY"), "{text}");
    assert_eq!(out.status, Status::Incomplete, "{}", out.report);
    assert!(out.report.contains("vitest's report file was replaced by a symlink during the run and was not read"), "{}", out.report);
    assert!(out.report.starts_with("vitest: incomplete: 0 passed, 0 failed"), "{}", out.report);
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_vitest_runner_cannot_create_anything_beside_its_report() {
    if !landlock() {
        eprintln!("no Landlock: skipped");
        return;
    }
    let (f, _) = canary_fixture("");
    let out = run_tests(&f.ws, &req("vitest", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
    assert_eq!(out.status, Status::Passed, "{}", out.report);
    assert!(out.report.contains("ok   beside-EACCES.test.ts (1 passed)"), "{}", out.report);
    // Without the sandbox it can: what the test above relies on is the confinement.
    let off = run_tests(&f.ws, &req("vitest", &[], None), &sandbox_off(&f), &Cancel::new()).await.unwrap();
    assert!(off.report.contains("ok   beside-created.test.ts (1 passed)"), "{}", off.report);
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vitest_report_replaced_by_a_fifo_does_not_hang_the_host() {
    let attack = r#"fs.rmSync(out); require("node:child_process").execFileSync("mkfifo", [out]);"#;
    let (f, _) = canary_fixture(attack);
    let started = Instant::now();
    let out = run_tests(&f.ws, &req("vitest", &[], Some(20_000.0)), &sandbox_off(&f), &Cancel::new()).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    assert_eq!(out.status, Status::Incomplete, "{}", out.report);
    assert!(out.report.contains("replaced by a FIFO"), "{}", out.report);
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_that_kills_its_runner_is_an_incomplete_run() {
    let mut src = String::from("const test = require(\"node:test\");\n");
    for i in 0..7 {
        src.push_str(&format!("test(\"passes {i}\", () => {{}});\n"));
    }
    src.push_str("test(\"kills the runner\", async () => { await new Promise((r) => setTimeout(r, 200)); process.kill(process.ppid, \"SIGKILL\"); await new Promise((r) => setTimeout(r, 5000)); });\n");
    let f = fixture(&[("test/kill.test.js", &src)]);
    let out = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
    assert_eq!(out.status, Status::Incomplete, "{}", out.report);
    assert_eq!(out.exit_code, None);
    // The seven passes ran before the kill, but on a loaded machine the runner may not have
    // passed all of them on yet: the counts are what it reported, never more, never a failure.
    assert!(out.passed <= 7 && out.failed == 0, "{}", out.report);
    if out.passed == 7 {
        assert!(out.report.contains("still running when stopped:\n- kills the runner (test/kill.test.js)"), "{}", out.report);
    }
    assert!(out.report.starts_with("node: incomplete: "), "{}", out.report);
    assert!(out.report.contains("(killed by SIGKILL)") && out.report.contains("incomplete: the runner was killed by SIGKILL"), "{}", out.report);
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nonzero_exit_with_no_failing_test_is_never_passed() {
    // Every test passes, then the file exits with code 1: the runner fails the run.
    let f = fixture(&[("test/exit.test.js", "const test = require(\"node:test\");\ntest(\"a\", () => {});\nprocess.on(\"exit\", () => { process.exitCode = 1; });\n")]);
    let out = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
    assert_eq!(out.exit_code, Some(1));
    assert_ne!(out.status, Status::Passed, "{}", out.report);
    assert!(!out.report.starts_with("node: passed"), "{}", out.report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_node_runner_cannot_rewrite_its_reporter_or_plant_files_beside_it() {
    // The test reaches the scratch directory through its TMPDIR.
    let test = r#"const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const path = require("node:path");
const scratch = path.dirname(process.env.TMPDIR);
const reporter = "reporter.mjs";
const code = (f) => { try { f(); return "done"; } catch (e) { return e.code; } };
test("confined", () => {
  assert.ok(fs.readFileSync(path.join(scratch, reporter), "utf8").includes("workcell"));
  assert.strictEqual(code(() => fs.appendFileSync(path.join(scratch, reporter), "\n// changed\n")), "EACCES");
  assert.strictEqual(code(() => fs.writeFileSync(path.join(scratch, "planted"), "x")), "EACCES");
  assert.strictEqual(code(() => fs.renameSync(path.join(scratch, "home"), path.join(scratch, "moved"))), "EACCES");
  assert.strictEqual(code(() => fs.writeFileSync(path.join(process.env.TMPDIR, "ok"), "x")), "done");
});
"#;
    let f = fixture(&[("test/scratch.test.js", test)]);
    if landlock() {
        let out = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
        assert_eq!(out.status, Status::Passed, "{}", out.report);
    }
    // Without the sandbox the same test fails: the checks above can fail.
    let out = run_tests(&f.ws, &req("node", &[], None), &sandbox_off(&f), &Cancel::new()).await.unwrap();
    assert_eq!(out.status, Status::Failed, "{}", out.report);
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_node_test_that_printed_megabytes_keeps_the_head_and_tail_of_its_output() {
    let test = r#"const test = require("node:test");
const assert = require("node:assert");
test("prints 4 MB and fails", () => {
  console.log("FIRST-PRINTED-LINE");
  const line = "m".repeat(1023);
  for (let i = 0; i < 4 * 1024; i++) console.log(line);
  console.log("LAST-PRINTED-LINE");
  assert.fail("THE-ASSERTION");
});
"#;
    let f = fixture(&[("test/print.test.js", test)]);
    let out = run_tests(&f.ws, &req("node", &[], None), &f.tests_options(), &Cancel::new()).await.unwrap();
    assert_eq!(out.status, Status::Failed, "{}", out.report);
    let o = &out.failures[0].output;
    assert!(o.contains("THE-ASSERTION") && o.contains("FIRST-PRINTED-LINE") && o.contains("LAST-PRINTED-LINE"), "{o}");
    assert!(o.contains("bytes printed, ") && o.contains(" cut from the middle"), "{o}");
    assert!(o.len() <= 1_600, "{}", o.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cargo_a_child_printing_ok_after_the_test_line_cannot_pass_the_failure() {
    let lib = r#"#[test] fn fails() {
    std::process::Command::new("sh").arg("-c").arg("printf ok").status().unwrap();
    panic!("THE-ASSERTION");
}
#[test] fn passes() {}
"#;
    let f = fixture(&[("Cargo.toml", "[package]\nname = \"fx\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"), ("src/lib.rs", lib)]);
    let mut o = f.tests_options();
    o.path = std::env::var_os("PATH").unwrap();
    o.cargo_home = home_dir("CARGO_HOME", ".cargo");
    o.rustup_home = home_dir("RUSTUP_HOME", ".rustup");
    let out = run_tests(&f.ws, &req("cargo", &["--", "--test-threads=1"], None), &o, &Cancel::new()).await.unwrap();
    assert_eq!(out.exit_code, Some(101), "{}", out.report);
    assert_eq!(out.status, Status::Failed, "{}", out.report);
    assert_eq!((out.passed, out.failed), (1, 1), "{}", out.report);
    assert!(out.report.starts_with("cargo: failed: 1 passed, 1 failed"), "{}", out.report);
    assert!(out.failures[0].output.contains("THE-ASSERTION"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_a_goroutine_printing_pass_after_the_failure_cannot_overwrite_it() {
    if !has_go() {
        eprintln!("go is not installed: skipped");
        return;
    }
    let test = r#"package m

import (
	"fmt"
	"testing"
	"time"
)

func TestFails(t *testing.T) {
	go func() { time.Sleep(100 * time.Millisecond); fmt.Println("--- PASS: TestFails (0.00s)") }()
	t.Error("THE-ASSERTION")
}

func TestSlow(t *testing.T) { time.Sleep(400 * time.Millisecond) }
"#;
    let f = fixture(&[("go.mod", "module example.com/m\n\ngo 1.19\n"), ("m_test.go", test)]);
    let mut o = f.tests_options();
    o.path = std::env::var_os("PATH").unwrap();
    let out = run_tests(&f.ws, &req("go", &[], None), &o, &Cancel::new()).await.unwrap();
    assert_eq!(out.exit_code, Some(1));
    assert_eq!(out.status, Status::Failed, "{}", out.report);
    assert_eq!((out.passed, out.failed), (1, 1), "{}", out.report);
    assert_eq!(out.failures[0].name, "TestFails");
    assert!(f.scratch_empty());
}
