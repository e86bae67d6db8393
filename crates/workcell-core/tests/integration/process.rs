//! The process machinery against hostile children, with both ways of observing exits.

use std::time::{Duration, Instant};

use workcell_core::process::{self, End, Finished, Head, HeadTail, OutputPipes, Reaper, RunOptions, SpawnSpec};
use workcell_core::Cancel;

const REAPERS: [Reaper; 2] = [Reaper::Pidfd, Reaper::Thread];

use crate::common;

use common::marker as random_marker;

fn marker() -> String {
    random_marker("wc-test")
}

/// Waits briefly for killed processes to disappear (SIGKILL delivery is asynchronous).
fn assert_none_alive(marker: &str) {
    common::assert_none_alive(marker, Duration::from_secs(2));
}

fn sh(script: &str, mark: &str) -> SpawnSpec {
    SpawnSpec::new("/bin/sh", "/")
        .arg("-c")
        .arg(script)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("WC_MARK", mark)
}

async fn run_sep(spec: SpawnSpec, opts: RunOptions, cancel: &Cancel) -> Finished<Head> {
    process::run(spec, &opts, cancel, Head::new(32_768), Some(Head::new(32_768))).await.unwrap()
}

fn opts(reaper: Reaper, timeout_ms: u64) -> RunOptions {
    RunOptions { timeout: Some(Duration::from_millis(timeout_ms)), reaper, ..RunOptions::default() }
}

fn text(h: Head) -> String {
    h.finish().text
}

#[test]
fn pidfd_works_on_this_kernel() {
    assert!(process::pidfd_available());
    assert_eq!(Reaper::Auto.resolve(), Reaper::Pidfd);
    assert_eq!(Reaper::Thread.resolve(), Reaper::Thread);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_code_and_separate_streams() {
    for reaper in REAPERS {
        let m = marker();
        let f = run_sep(sh("echo out; echo err >&2; exit 3", &m), opts(reaper, 5_000), &Cancel::new()).await;
        assert_eq!(f.end, End::Exited);
        assert_eq!(f.status.unwrap().code, Some(3));
        assert_eq!(text(f.stdout), "out\n");
        assert_eq!(text(f.stderr.unwrap()), "err\n");
        assert!(!f.pipes_forced);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signal_that_ends_the_child_is_reported() {
    let f = run_sep(sh("kill -TERM $$", &marker()), opts(Reaper::Auto, 5_000), &Cancel::new()).await;
    assert_eq!(f.end, End::Exited);
    let status = f.status.unwrap();
    assert_eq!((status.code, status.signal_name().as_deref()), (None, Some("SIGTERM")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_is_only_what_is_given() {
    let spec = SpawnSpec::new("/usr/bin/env", "/").env("ONLY", "this");
    let f = run_sep(spec, opts(Reaper::Auto, 5_000), &Cancel::new()).await;
    assert_eq!(text(f.stdout), "ONLY=this\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argv_is_passed_verbatim_and_cwd_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(dir.path()).unwrap();
    let spec = SpawnSpec::new("/bin/sh", &cwd)
        .args(["-c", "pwd; for a in \"$@\"; do printf '[%s]' \"$a\"; done", "sh", "", "two words", "$HOME", "*", ";|&"]);
    let f = run_sep(spec, opts(Reaper::Auto, 5_000), &Cancel::new()).await;
    assert_eq!(text(f.stdout), format!("{}\n[][two words][$HOME][*][;|&]", cwd.display()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_is_the_null_device() {
    for reaper in REAPERS {
        let started = Instant::now();
        let f = run_sep(sh("cat; echo eof", &marker()), opts(reaper, 10_000), &Cancel::new()).await;
        assert_eq!((f.end, text(f.stdout)), (End::Exited, "eof\n".to_string()));
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_kills_the_group() {
    for reaper in REAPERS {
        let m = marker();
        // Ignores SIGTERM, and has a background child in its group.
        let f = run_sep(sh("trap '' TERM; sleep 30 & echo started; sleep 30", &m), opts(reaper, 300), &Cancel::new()).await;
        assert_eq!(f.end, End::TimedOut);
        assert_eq!(f.status.unwrap().signal_name().as_deref(), Some("SIGKILL"));
        assert_eq!(text(f.stdout), "started\n");
        assert!(f.duration < Duration::from_millis(1_300), "{:?}", f.duration);
        assert_none_alive(&m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_children_are_killed_after_a_normal_exit() {
    for reaper in REAPERS {
        let m = marker();
        let started = Instant::now();
        let f = run_sep(sh("sleep 30 & sleep 30 & echo bye", &m), opts(reaper, 10_000), &Cancel::new()).await;
        assert_eq!((f.end, f.status.unwrap().code), (End::Exited, Some(0)));
        assert_eq!(text(f.stdout), "bye\n");
        assert!(started.elapsed() < Duration::from_secs(2));
        assert_none_alive(&m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_grandchild_holding_stdout_does_not_keep_the_run_waiting() {
    for reaper in REAPERS {
        let m = marker();
        let started = Instant::now();
        let f = run_sep(sh("setsid sleep 30 & sleep 0.1; echo parent-done", &m), opts(reaper, 10_000), &Cancel::new()).await;
        assert_eq!(f.end, End::Exited);
        assert_eq!(text(f.stdout), "parent-done\n");
        assert!(f.holders_killed >= 1, "the escaped holder was found");
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
        assert_none_alive(&m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_group_promptly() {
    for reaper in REAPERS {
        let m = marker();
        let cancel = Cancel::new();
        let c2 = cancel.clone();
        let aborted_at = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(150)).await;
            c2.cancel();
            Instant::now()
        });
        let f = run_sep(sh("setsid sleep 30 & sleep 30", &m), opts(reaper, 30_000), &cancel).await;
        let settled = Instant::now();
        assert_eq!(f.end, End::Cancelled);
        let took = settled - aborted_at.await.unwrap();
        assert!(took < Duration::from_millis(250), "{took:?}");
        assert_none_alive(&m);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelled_before_start_spawns_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let flag = dir.path().join("ran");
    let cancel = Cancel::new();
    cancel.cancel();
    let f = run_sep(sh(&format!("touch '{}'", flag.display()), &marker()), opts(Reaper::Auto, 5_000), &cancel).await;
    assert_eq!((f.end, f.status), (End::Cancelled, None));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!flag.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_run_kills_its_group() {
    let m = marker();
    let cancel = Cancel::new();
    let fut = run_sep(sh("sleep 30 & sleep 30", &m), opts(Reaper::Auto, 30_000), &cancel);
    assert!(tokio::time::timeout(Duration::from_millis(200), fut).await.is_err());
    assert_none_alive(&m);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_output_is_drained_and_bounded() {
    let f = process::run(
        SpawnSpec::new("/usr/bin/head", "/").args(["-c", "268435456", "/dev/zero"]),
        &opts(Reaper::Auto, 60_000),
        &Cancel::new(),
        Head::new(32_768),
        Some(Head::new(32_768)),
    )
    .await
    .unwrap();
    assert_eq!(f.end, End::Exited);
    assert_eq!(f.stdout.total_bytes(), 268_435_456);
    let out = f.stdout.finish();
    assert!(out.truncated);
    assert_eq!(out.text.len(), 32_768);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merged_output_keeps_order_and_head_and_tail() {
    let spec = sh("for i in 1 2 3; do echo out$i; echo err$i >&2; done", &marker()).output(OutputPipes::Merged);
    let f = process::run(spec, &opts(Reaper::Auto, 5_000), &Cancel::new(), HeadTail::new(8192, 24_576), None).await.unwrap();
    assert_eq!(f.stdout.finish().text, "out1\nerr1\nout2\nerr2\nout3\nerr3\n");

    let spec = sh("seq 1 100000", &marker()).output(OutputPipes::Merged);
    let f = process::run(spec, &opts(Reaper::Auto, 10_000), &Cancel::new(), HeadTail::new(6, 7), None).await.unwrap();
    let out = f.stdout.finish();
    assert!(out.text.starts_with("1\n2\n3\n\n["), "{}", out.text);
    assert!(out.text.ends_with("bytes omitted]\n100000\n"), "{}", out.text);
    assert_eq!(out.omitted_bytes, out.total_bytes - 13);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_a_spawn_error() {
    let spec = SpawnSpec::new("/nonexistent/program", "/");
    let err = process::run(spec, &RunOptions::default(), &Cancel::new(), Head::new(10), Some(Head::new(10))).await.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
}



#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pre_exec_steps_run_in_the_child_and_can_refuse() {
    // A step runs in the child before exec (umask is async-signal-safe) and not in the host.
    // SAFETY: the step only calls umask(2), which is async-signal-safe.
    let spec = unsafe {
        sh("umask", &marker()).pre_exec(Box::new(|| {
            libc::umask(0o027);
            Ok(())
        }))
    };
    let f = run_sep(spec, opts(Reaper::Auto, 5_000), &Cancel::new()).await;
    assert_eq!(text(f.stdout), "0027\n");

    // A step that fails aborts the spawn with its error.
    let spec = unsafe {
        SpawnSpec::new("/bin/true", "/").pre_exec(Box::new(|| Err(std::io::Error::from_raw_os_error(13))))
    };
    let err = process::run(spec, &RunOptions::default(), &Cancel::new(), Head::new(10), Some(Head::new(10))).await.unwrap_err();
    assert_eq!(err.raw_os_error(), Some(13));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_runs_with_both_reapers_all_settle() {
    let mut tasks = Vec::new();
    for i in 0..40 {
        let reaper = REAPERS[i % 2];
        tasks.push(tokio::spawn(async move {
            let f = run_sep(sh(&format!("echo {i}"), "many"), opts(reaper, 20_000), &Cancel::new()).await;
            (i, f.end, text(f.stdout))
        }));
    }
    for t in tasks {
        let (i, end, out) = t.await.unwrap();
        assert_eq!((end, out), (End::Exited, format!("{i}\n")));
    }
}

