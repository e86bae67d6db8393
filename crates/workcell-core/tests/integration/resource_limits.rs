//! Resource limits on a plain `SpawnSpec` (`/bin/sh`), as any tool applies them: each bounded
//! attack stops at a small cap and reaches its own bound under the default caps (so the test can
//! fail); the per-call cgroups are gone after the run, also after a timeout and a cancellation;
//! `required` refuses where a cap cannot be enforced.
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::Duration;

use workcell_core::process::{self, End, Head, RunOptions, SpawnSpec};
use workcell_core::sandbox::{self, By, Features, Limits, Mode, SandboxOptions};
use workcell_core::{Cancel, Code, Workspace};

use crate::common;

struct Out {
    end: End,
    code: Option<i32>,
    stdout: String,
    by: sandbox::LimitsReport,
}

async fn run(ws: &Workspace, opts: &SandboxOptions, script: &str, timeout: Duration, cancel: &Cancel) -> Out {
    run_program(ws, opts, std::path::Path::new("/bin/sh"), &["-c", script], timeout, cancel).await
}

async fn run_program(ws: &Workspace, opts: &SandboxOptions, program: &std::path::Path, args: &[&str], timeout: Duration, cancel: &Cancel) -> Out {
    let confinement = sandbox::prepare(opts, ws, &sandbox::program_grants(program)).unwrap();
    let mut spec = SpawnSpec::new(program, ws.canonical()).args(args.iter().copied()).env("PATH", "/usr/local/bin:/usr/bin:/bin");
    let report = confinement.apply(&mut spec);
    let f = process::run(spec, &RunOptions::with_timeout(timeout), cancel, Head::new(1 << 16), Some(Head::new(1 << 16))).await.unwrap();
    Out { end: f.end, code: f.status.and_then(|s| s.code), stdout: f.stdout.finish().text, by: report.limits }
}

/// The host's Node.js (the fork bomb is a Node script: a shell exits when a fork fails).
fn node() -> Option<PathBuf> {
    let out = std::process::Command::new("sh").args(["-c", "command -v node"]).output().ok()?;
    let p = String::from_utf8(out.stdout).ok()?;
    std::fs::canonicalize(p.trim()).ok()
}

fn namespaced() -> bool {
    let f = Features::detect();
    f.pid_namespace && f.user_namespace
}

fn capped(limits: Limits) -> SandboxOptions {
    SandboxOptions { limits, ..SandboxOptions::default() }
}

/// The per-call cgroup directories a `/proc/<pid>/cgroup` text names.
fn call_cgroups(text: &str) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for line in text.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if !path.contains("workcell-") {
            continue;
        }
        let rel = path.trim_start_matches('/');
        if controllers.is_empty() {
            dirs.push(PathBuf::from("/sys/fs/cgroup/unified").join(rel));
            dirs.push(PathBuf::from("/sys/fs/cgroup").join(rel));
        } else {
            for c in controllers.split(',') {
                dirs.push(PathBuf::from("/sys/fs/cgroup").join(c).join(rel));
            }
        }
    }
    dirs
}

const FORK_BOMB: &str = r#"const { spawn } = require("child_process");
(async () => {
  let started = 0;
  for (let i = 0; i < 200; i++) {
    const e = await new Promise((res) => { const c = spawn("/bin/sleep", ["20"], { stdio: "ignore" }); c.on("spawn", () => res(null)); c.on("error", (err) => res(err.code)); });
    if (e) { console.log("error=" + e); break; }
    started++;
  }
  console.log("started=" + started);
  console.log(require("fs").readFileSync("/proc/self/cgroup", "utf8"));
  process.exit(0);
})();"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_bomb_stops_at_the_process_cap_and_its_cgroup_is_removed() {
    let (true, Some(node)) = (namespaced(), node()) else {
        eprintln!("skipped: no namespaces or no node");
        return;
    };
    let (_dir, base) = common::temp_base();
    let ws = Workspace::open(&base).unwrap();
    let small = capped(Limits { processes: 32, ..Limits::default() });
    let out = run_program(&ws, &small, &node, &["-e", FORK_BOMB], Duration::from_secs(60), &Cancel::new()).await;
    assert_eq!(out.end, End::Exited);
    assert_ne!(out.by.processes.by, By::None);
    let started: usize = out.stdout.lines().find_map(|l| l.strip_prefix("started=")).unwrap().trim().parse().unwrap();
    assert!(started < 32 && out.stdout.contains("error=EAGAIN"), "{}", out.stdout);
    for d in call_cgroups(&out.stdout) {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    // The default cap (512) lets the bounded bomb reach its own bound.
    let out = run_program(&ws, &SandboxOptions::default(), &node, &["-e", FORK_BOMB], Duration::from_secs(60), &Cancel::new()).await;
    assert!(out.stdout.contains("started=200"), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_past_the_cap_is_efbig_and_sigxfsz_does_not_kill_the_writer() {
    let (_dir, base) = common::temp_base();
    let ws = Workspace::open(&base).unwrap();
    let script = "head -c 8388608 /dev/zero > big; echo rc=$?; wc -c < big";
    let out = run(&ws, &capped(Limits { file_bytes: 1 << 20, ..Limits::default() }), script, Duration::from_secs(30), &Cancel::new()).await;
    assert_eq!(out.by.file_bytes.by, By::Rlimit);
    assert_eq!(out.code, Some(0));
    assert!(out.stdout.contains("rc=1") && out.stdout.contains("1048576"), "{}", out.stdout);
    let out = run(&ws, &SandboxOptions::default(), script, Duration::from_secs(30), &Cancel::new()).await;
    assert!(out.stdout.contains("rc=0") && out.stdout.contains("8388608"), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cgroups_are_removed_after_a_timeout_and_a_cancellation() {
    if !namespaced() || unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: cgroups are made for a root host here");
        return;
    }
    let (_dir, base) = common::temp_base();
    let ws = Workspace::open(&base).unwrap();
    let opts = capped(Limits { processes: 32, ..Limits::default() });
    let hang = "cat /proc/self/cgroup; for i in 1 2 3; do sleep 30 & done; sleep 30";
    let out = run(&ws, &opts, hang, Duration::from_millis(800), &Cancel::new()).await;
    assert_eq!(out.end, End::TimedOut);
    let dirs = call_cgroups(&out.stdout);
    assert!(!dirs.is_empty(), "{}", out.stdout);
    for d in &dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
    let cancel = Cancel::new();
    let c = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(800)).await;
        c.cancel();
    });
    let out = run(&ws, &opts, hang, Duration::from_secs(30), &cancel).await;
    assert_eq!(out.end, End::Cancelled);
    let dirs = call_cgroups(&out.stdout);
    assert!(!dirs.is_empty(), "{}", out.stdout);
    for d in &dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn required_refuses_a_process_cap_it_cannot_enforce() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: an unprivileged host has RLIMIT_NPROC in its namespace");
        return;
    }
    let (_dir, base) = common::temp_base();
    let ws = Workspace::open(&base).unwrap();
    let opts = SandboxOptions { mode: Mode::Required, no_cgroups: true, ..SandboxOptions::default() };
    let err = sandbox::prepare(&opts, &ws, &[]).unwrap_err();
    assert_eq!(err.code, Code::SandboxUnavailable);
    assert!(err.details.unwrap()["missing"].as_array().unwrap().iter().any(|m| m == "limit-processes"));
    // auto runs, and says the cap is not enforced.
    let report = sandbox::prepare(&SandboxOptions { mode: Mode::Auto, ..opts }, &ws, &[]).unwrap().report();
    assert_eq!((report.limits.processes.by, report.limits.memory_bytes.by), (By::None, By::Rlimit));
}

/// On cgroup v1 the program's process joins its leaves through `tasks`, which moves only the
/// writing thread (and so skips the kernel's global threadgroup lock and its RCU wait): that is
/// the whole program only because the process is single-threaded when it writes. Every thread
/// Node.js starts after exec, and every child, must be in the same leaves.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cgroup_join_through_tasks_holds_every_thread_and_child_of_the_program() {
    let (true, Some(node)) = (namespaced(), node()) else {
        eprintln!("skipped: no namespaces or no node");
        return;
    };
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: cgroups are made for a root host here");
        return;
    }
    let script = r#"const fs = require("fs");
const texts = fs.readdirSync("/proc/self/task").map((t) => fs.readFileSync(`/proc/self/task/${t}/cgroup`, "utf8"));
texts.push(require("child_process").execFileSync("/bin/cat", ["/proc/self/cgroup"], { encoding: "utf8" }));
console.log("threads=" + (texts.length - 1));
for (const t of texts) console.log("--\n" + t.trim());"#;
    let (_dir, base) = common::temp_base();
    let ws = Workspace::open(&base).unwrap();
    let lines_of = |text: &str| -> Vec<String> {
        let mut v: Vec<String> = text.lines().filter(|l| l.contains(":pids:") || l.contains(":memory:")).map(str::to_owned).collect();
        v.sort();
        v
    };
    let out = run_program(&ws, &SandboxOptions::default(), &node, &["-e", script], Duration::from_secs(60), &Cancel::new()).await;
    assert_eq!(out.end, End::Exited, "{}", out.stdout);
    if out.by.processes.by != By::CgroupV1 || out.by.memory_bytes.by != By::CgroupV1 {
        eprintln!("skipped: the caps are not on cgroup v1 here ({:?}, {:?})", out.by.processes.by, out.by.memory_bytes.by);
        return;
    }
    let threads: usize = out.stdout.lines().find_map(|l| l.strip_prefix("threads=")).unwrap().parse().unwrap();
    assert!(threads > 1, "{}", out.stdout);
    let sections: Vec<&str> = out.stdout.split("--\n").skip(1).collect();
    assert_eq!(sections.len(), threads + 1);
    let first = lines_of(sections[0]);
    assert_eq!(first.len(), 2, "{}", out.stdout);
    assert!(first.iter().all(|l| l.contains("workcell-")), "{}", out.stdout);
    for s in &sections[1..] {
        assert_eq!(lines_of(s), first, "a thread or the child is outside the call's leaves:\n{}", out.stdout);
    }
    // Without the cgroups nothing names a call's leaf: the check above can fail.
    let off = SandboxOptions { no_cgroups: true, ..SandboxOptions::default() };
    let out = run_program(&ws, &off, &node, &["-e", script], Duration::from_secs(60), &Cancel::new()).await;
    assert!(!out.stdout.contains("workcell-"), "{}", out.stdout);
}
