//! run_tests end to end with the node runner (node is always here) and go when installed: the
//! report, the two deadlines, cancellation, the scratch directory, the environment.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use workcell_core::testrun::{run_tests, TestsOptions, TestsRequest};
use workcell_core::{Cancel, Code};

mod common;

use common::{fixture, node, Fixture, PATH};

impl Fixture {
    fn options(&self) -> TestsOptions {
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
    let out = run_tests(&f.ws, &req("node", &[], None), &f.options(), &Cancel::new()).await.unwrap();
    assert_eq!((out.passed, out.failed, out.skipped), (2, 1, 0));
    assert_eq!(out.exit_code, Some(1));
    assert_eq!(out.failures.len(), 1);
    assert_eq!(out.failures[0].name, "fails");
    assert!(out.failures[0].output.contains("4 !== 5"), "{}", out.failures[0].output);
    assert!(!out.report.contains("CHATTER"));
    assert!(out.report.starts_with("node: 2 passed, 1 failed, 0 skipped (exit code 1)"), "{}", out.report);
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
    let mut o = f.options();
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
    assert!(d["report"].as_str().unwrap().starts_with("cargo: 1 passed, 0 failed, 0 skipped (stopped)"), "{d}");
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
    let e = run_tests(&f.ws, &req("node", &[], None), &f.options(), &cancel).await.unwrap_err();
    assert!(e.is_cancelled());
    assert!(started.elapsed() < Duration::from_millis(400 + 800));
    assert!(f.scratch_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_args_and_missing_runners_have_no_effect() {
    let f = fixture(&[("test/a.test.js", SUITE)]);
    let e = run_tests(&f.ws, &req("node", &["--test-reporter=spec"], None), &f.options(), &Cancel::new()).await.unwrap_err();
    assert_eq!(e.reason(), Some("COMMAND_REFUSED"));
    let e = run_tests(&f.ws, &req("vitest", &[], None), &f.options(), &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code, Code::CommandNotFound);
    let mut o = f.options();
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
    let mut o = f.options();
    o.path = std::env::var_os("PATH").unwrap();
    let out = run_tests(&f.ws, &req("go", &["-run", "TestEnv"], None), &o, &Cancel::new()).await.unwrap();
    assert_eq!((out.passed, out.failed), (1, 0), "{}", out.report);
    assert!(f.scratch_empty());
}
