//! node_process end to end with the real Node.js found on PATH.

use std::path::Path;
use std::time::{Duration, Instant};

use workcell_core::node::{node_process, NodeOptions, NodeRequest, SCRIPT_PREFIX};
use workcell_core::process::Reaper;
use workcell_core::{Cancel, Code, Workspace};

use crate::common;

use common::node;

fn req(source: &str, arguments: &[&str]) -> NodeRequest {
    NodeRequest { source: source.into(), arguments: arguments.iter().map(|s| s.to_string()).collect(), timeout_ms: None }
}

fn leftovers(root: &Path) -> Vec<String> {
    std::fs::read_dir(root)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(SCRIPT_PREFIX))
        .collect()
}

fn workspace() -> (tempfile::TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::open(dir.path()).unwrap();
    (dir, ws)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argv_exec_path_cwd_and_env_inside_the_child() {
    let (_dir, ws) = workspace();
    let args = ["--", "-e", "", "two words", "ünï 😀", "--version", "-p", "$HOME", "a\"b\\"];
    let source = "console.log(JSON.stringify({argv: process.argv.slice(1), execPath: process.execPath, cwd: process.cwd(), env: Object.keys(process.env), main: require.main === module}))";
    for reaper in [Reaper::Pidfd, Reaper::Thread] {
        let mut opts = NodeOptions::new(node());
        opts.path = Some("/usr/bin:/bin".into());
        opts.reaper = reaper;
        opts.timeout = Duration::from_secs(10);
        let out = node_process(&ws, &req(source, &args), &opts, &Cancel::new()).await.unwrap();
        assert_eq!(out.exit_code, Some(0), "{}", out.stderr);
        let seen: serde_json::Value = serde_json::from_str(out.stdout.trim()).unwrap();
        assert_eq!(seen["argv"], serde_json::json!(args));
        assert_eq!(seen["execPath"], node().to_string_lossy().as_ref());
        assert_eq!(seen["cwd"], ws.canonical().to_string_lossy().as_ref());
        assert_eq!(seen["env"], serde_json::json!(["PATH"]));
        assert_eq!(seen["main"], true);
        assert!(leftovers(ws.canonical()).is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_script_is_data() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_secs(10);
    let out = node_process(&ws, &req("console.log('before'); throw new Error('boom')", &[]), &opts, &Cancel::new()).await.unwrap();
    assert_eq!((out.exit_code, out.signal.as_deref()), (Some(1), None));
    assert_eq!(out.stdout, "before\n");
    assert!(out.stderr.contains("Error: boom"));
    let out = node_process(&ws, &req("process.exitCode = 7", &[]), &opts, &Cancel::new()).await.unwrap();
    assert_eq!(out.exit_code, Some(7));
    assert!(leftovers(ws.canonical()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_is_an_error_with_the_partial_output() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_millis(800);
    let started = Instant::now();
    let err = node_process(&ws, &req("console.log('partial'); console.error('e'); for(;;){}", &[]), &opts, &Cancel::new()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1_800));
    assert_eq!(err.code, Code::NodeProcessTimeout);
    assert!(err.hint.is_some());
    let d = err.details.unwrap();
    assert_eq!(d["stdout"], "partial\n");
    assert_eq!(d["stderr"], "e\n");
    assert_eq!(d["timedOut"], true);
    assert_eq!(d["signal"], "SIGKILL");
    assert_eq!(d["timeoutMs"], 800);
    assert!(leftovers(ws.canonical()).is_empty());
}

fn with_timeout(source: &str, timeout_ms: f64) -> NodeRequest {
    NodeRequest { timeout_ms: Some(timeout_ms), ..req(source, &[]) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_call_timeout_below_the_hosts_applies() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_secs(30);
    let started = Instant::now();
    let err = node_process(&ws, &with_timeout("for(;;){}", 700.0), &opts, &Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::NodeProcessTimeout);
    assert_eq!(err.details.unwrap()["timeoutMs"], 700);
    assert!(started.elapsed() < Duration::from_secs(10), "the call's 700 ms, not the host's 30 s");
    assert!(leftovers(ws.canonical()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_per_call_timeout_above_the_hosts_maximum_is_clamped_and_said() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    // No maxTimeoutMs: the maximum is the host's timeout, so a call cannot raise it.
    opts.timeout = Duration::from_millis(800);
    let err = node_process(&ws, &with_timeout("for(;;){}", 5_000.0), &opts, &Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::NodeProcessTimeout);
    assert_eq!(err.details.unwrap()["timeoutMs"], 800);
    // A call that ends in time says that its timeout was clamped.
    opts.timeout = Duration::from_secs(20);
    let out = node_process(&ws, &with_timeout("", 60_000.0), &opts, &Cancel::new()).await.unwrap();
    assert_eq!(out.note.as_deref(), Some("timeoutMs 60000 is above this tool's maximum of 20000 ms and was clamped to 20000 ms"));
    let plain = node_process(&ws, &with_timeout("", 20_000.0), &opts, &Cancel::new()).await.unwrap();
    assert_eq!(plain.note, None);
    assert!(serde_json::to_value(&plain).unwrap().get("note").is_none());
    // A host's maxTimeoutMs lets a call ask for more than the default.
    opts.timeout = Duration::from_millis(1);
    opts.max_timeout = Some(Duration::from_secs(60));
    let raised = node_process(&ws, &with_timeout("console.log('done')", 30_000.0), &opts, &Cancel::new()).await.unwrap();
    assert_eq!(raised.stdout, "done\n");
    assert_eq!(raised.note, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_per_call_timeout_or_host_maximum_is_refused_before_any_effect() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    for bad in [0.0, -1.0, 1.5, f64::NAN, f64::INFINITY] {
        let err = node_process(&ws, &with_timeout("require('fs').writeFileSync('ran', '')", bad), &opts, &Cancel::new()).await.unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"), "{bad}");
    }
    opts.timeout = Duration::from_secs(2);
    opts.max_timeout = Some(Duration::from_secs(1));
    assert_eq!(opts.validate().unwrap_err(), "timeoutMs (2000 ms) is above maxTimeoutMs (1000 ms)");
    let err = node_process(&ws, &req("require('fs').writeFileSync('ran', '')", &[]), &opts, &Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::IoError);
    assert_eq!(std::fs::read_dir(ws.canonical()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_removes_the_script() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_secs(30);
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c.cancel();
    });
    let err = node_process(&ws, &req("setInterval(() => {}, 1000)", &[]), &opts, &cancel).await.unwrap_err();
    assert!(err.is_cancelled());
    assert!(leftovers(ws.canonical()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_and_cancellation_come_before_any_effect() {
    let (_dir, ws) = workspace();
    let opts = NodeOptions::new(node());
    let big = "x".repeat(32_769);
    let err = node_process(&ws, &req(&big, &[]), &opts, &Cancel::new()).await.unwrap_err();
    assert_eq!(err.reason(), Some("SOURCE_TOO_LARGE"));
    let cancel = Cancel::new();
    cancel.cancel();
    let err = node_process(&ws, &req("require('fs').writeFileSync('ran', '')", &[]), &opts, &cancel).await.unwrap_err();
    assert!(err.is_cancelled());
    assert_eq!(std::fs::read_dir(ws.canonical()).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replaced_root_is_refused_before_writing() {
    let parent = tempfile::tempdir().unwrap();
    let root = parent.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let ws = Workspace::open(&root).unwrap();
    std::fs::rename(&root, parent.path().join("away")).unwrap();
    std::fs::create_dir(&root).unwrap();
    let err = node_process(&ws, &req("", &[]), &NodeOptions::new(node()), &Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::WorkspaceRootChanged);
    assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
    assert_eq!(std::fs::read_dir(parent.path().join("away")).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_node_is_an_io_error_and_leaves_nothing() {
    let (_dir, ws) = workspace();
    let err = node_process(&ws, &req("", &[]), &NodeOptions::new("/nonexistent/node"), &Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::IoError);
    assert!(err.message.starts_with("ENOENT"), "{}", err.message);
    assert!(leftovers(ws.canonical()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_caps_are_per_stream() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_secs(10);
    opts.max_stdout_bytes = 5;
    opts.max_stderr_bytes = 100;
    let out = node_process(&ws, &req("process.stdout.write('0123456789'); process.stderr.write('short')", &[]), &opts, &Cancel::new())
        .await
        .unwrap();
    assert_eq!((out.stdout.as_str(), out.stdout_truncated), ("01234", true));
    assert_eq!((out.stderr.as_str(), out.stderr_truncated), ("short", false));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_argv_prelude_changes_nothing_else() {
    let (_dir, ws) = workspace();
    let mut opts = NodeOptions::new(node());
    opts.timeout = Duration::from_secs(10);
    let run = |source: &'static str, args: &'static [&'static str]| {
        let ws = &ws;
        let opts = &opts;
        async move {
            let out = node_process(ws, &req(source, args), opts, &Cancel::new()).await.unwrap();
            (out.stdout, out.stderr)
        }
    };
    // A directive prologue still makes the module strict.
    let (out, _) = run("'use strict'\nconsole.log((function () { return this })() === undefined, process.argv.length)", &["a"]).await;
    assert_eq!(out, "true 2\n");
    let (out, _) = run("console.log((function () { return this })() === undefined)", &[]).await;
    assert_eq!(out, "false\n");
    // A hashbang line is accepted, and strictness below it kept.
    let (out, _) = run("#!/usr/bin/env node\n\"use strict\";\nconsole.log(JSON.stringify(process.argv.slice(1)), (function () { return this })())", &["x"]).await;
    assert_eq!(out, "[\"x\"] undefined\n");
    // Line numbers in stack traces are the model's.
    let (_, err) = run("\n\nthrow new Error('on line 3')", &[]).await;
    assert!(err.contains(".cjs:3"), "{err}");
    // Nothing leaks into execArgv, so fork() gives children their own exact argv.
    let (out, _) = run(
        "require('fs').writeFileSync('child.cjs', 'console.log(JSON.stringify([process.execArgv, process.argv.slice(2)]))');\
         const c = require('child_process').fork('./child.cjs', ['p', '--', ''], { stdio: 'inherit' });\
         console.log(JSON.stringify(process.execArgv));",
        &[],
    )
    .await;
    assert_eq!(out, "[]\n[[],[\"p\",\"--\",\"\"]]\n");
}

/// The prelude never changes whether a source compiles, whether it is strict, or what it does,
/// and always runs first: checked with Node's own parser over generated sources.
#[test]
fn the_prelude_preserves_compilation_and_strictness_of_generated_sources() {
    use workcell_core::node::prelude::with_prelude;
    const FRAGMENTS: &[&str] = &[
        "'use strict'", "\"use strict\"", "'x'", "\"a\\\"b\"", "'a\\\\'", ";", "\n", "\r\n", "\u{2028}", " ", "\t",
        "/* c */", "/* multi\nline */", "// c\n", "x", "+1", ".length", "(0)", " in o", "!x", "!=x", "`t`", "[0]",
        "=1", "var y=1", "{", "}", "'unterminated", "\\\n", "?1:2", "instanceof Object", ",", "\u{feff}",
    ];
    let mut seed: u64 = 0x5eed_1234_abcd_0001;
    let mut next = move |n: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % n as u64) as usize
    };
    let mut cases = Vec::new();
    for _ in 0..3_000 {
        let len = 1 + next(8);
        let src: String = (0..len).map(|_| FRAGMENTS[next(FRAGMENTS.len())]).collect();
        cases.push(serde_json::json!([src, with_prelude(&src)]));
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("cases.json");
    std::fs::write(&data, serde_json::to_string(&cases).unwrap()).unwrap();
    let checker = r#"
        const vm = require("vm");
        const cases = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
        const params = ["exports", "require", "module", "__filename", "__dirname", "process", "__probe", "o", "x"];
        const probe = "\n;__probe.strict = (function () { return this === undefined; })();";
        function run(src) {
          let fn;
          try { fn = vm.compileFunction(src + probe, params); } catch { return { compiles: false }; }
          const proc = { argv: ["node", "script", "arg"] };
          const p = {};
          let threw = false;
          try { fn({}, null, {}, "f", "d", proc, p, {}, 1); } catch { threw = true; }
          return { compiles: true, threw, strict: p.strict, argv: proc.argv.length };
        }
        let bad = 0;
        for (const [src, pre] of cases) {
          const a = run(src), b = run(pre);
          const same = a.compiles === b.compiles && (!a.compiles || (a.threw === b.threw && a.strict === b.strict && a.argv === 3 && b.argv === 2));
          if (!same && bad++ < 5) console.log(JSON.stringify({ src, pre, a, b }));
        }
        console.log(bad === 0 ? "ok " + cases.length : "mismatches " + bad);
    "#;
    let out = std::process::Command::new(node()).arg("-e").arg(checker).arg("--").arg(&data).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "ok 3000", "{stdout}{}", String::from_utf8_lossy(&out.stderr));
}
