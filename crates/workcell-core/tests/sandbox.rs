//! The sandbox applied to a plain `SpawnSpec` (`/bin/sh`), as any tool would apply it: every
//! attack is run confined and unconfined, so each test shows it would fail without the layer.
//! Attacks on a layer the kernel lacks are skipped (the probe says which).
#![cfg(target_os = "linux")]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use workcell_core::process::{self, Head, HeadText, RunOptions, SpawnSpec};
use workcell_core::sandbox::{self, Features, Filesystem, Mode, Network, Processes, Report, SandboxOptions};
use workcell_core::{Cancel, Workspace};

mod common;

struct Env {
    _dir: tempfile::TempDir,
    /// Stands for everything outside the workspace (`~/.ssh` and the like).
    outside: PathBuf,
    ws: Workspace,
}

fn env() -> Env {
    let (dir, base) = common::temp_base();
    let outside = base.join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("id_rsa"), "canary-secret\n").unwrap();
    std::fs::create_dir(base.join("ROOT")).unwrap();
    let ws = Workspace::open(base.join("ROOT")).unwrap();
    Env { _dir: dir, outside, ws }
}

struct Run {
    code: Option<i32>,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
    report: Report,
}

async fn run(env: &Env, opts: &SandboxOptions, script: &str, args: &[&str]) -> Run {
    let confinement = sandbox::prepare(opts, &env.ws, &[]).unwrap();
    let mut spec = SpawnSpec::new("/bin/sh", env.ws.canonical())
        .arg("-c")
        .arg(script)
        .arg("sh")
        .args(args.iter().copied())
        .env("PATH", "/usr/local/bin:/usr/bin:/bin");
    let report = confinement.apply(&mut spec);
    let f = process::run(spec, &RunOptions::with_timeout(Duration::from_secs(20)), &Cancel::new(), Head::new(1 << 16), Some(Head::new(1 << 16)))
        .await
        .unwrap();
    let text = |h: HeadText| h.text;
    let status = f.status.unwrap_or_default();
    Run { code: status.code, signal: status.signal, stdout: text(f.stdout.finish()), stderr: f.stderr.map(|h| text(h.finish())).unwrap_or_default(), report }
}

fn auto() -> SandboxOptions {
    SandboxOptions::default()
}

fn off() -> SandboxOptions {
    SandboxOptions { mode: Mode::Off, ..SandboxOptions::default() }
}

fn features() -> Features {
    Features::detect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_says_what_this_kernel_gave() {
    let e = env();
    let f = features();
    let r = run(&e, &auto(), "true", &[]).await;
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(r.report.landlock_abi, f.landlock_abi);
    assert_eq!(r.report.filesystem == Filesystem::Confined, f.landlock_abi.is_some());
    assert_eq!(r.report.processes == Processes::Namespace, f.pid_namespace);
    assert_eq!(r.report.network == Network::Blocked, f.landlock_abi.is_some_and(|a| a >= 4));
    assert_eq!(run(&e, &off(), "true", &[]).await.report, Report { limits: sandbox::LimitsReport::none(&sandbox::Limits::default()), ..Report::OFF });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_outside_are_out_of_reach() {
    let f = features();
    if f.landlock_abi.is_none() {
        eprintln!("skipped: no Landlock on this kernel");
        return;
    }
    let e = env();
    let out = e.outside.to_str().unwrap();
    let script = r#"
        cat "$1/id_rsa" 2>/dev/null && echo READ
        echo x > "$1/new" 2>/dev/null && echo WROTE
        echo y > moved && mv moved "$1/moved" 2>/dev/null && echo RENAMED
        ln moved "$1/linked" 2>/dev/null && echo LINKED
        ls / >/dev/null 2>&1 && echo LISTED_ROOT
        cat /etc/hostname >/dev/null 2>&1 && echo READ_ETC
        echo ok > inside && cat inside
    "#;
    let open = run(&e, &off(), script, &[out]).await;
    assert_eq!(open.stdout, "canary-secret\nREAD\nWROTE\nRENAMED\nLISTED_ROOT\nREAD_ETC\nok\n", "{}", open.stderr);
    std::fs::remove_file(e.outside.join("new")).unwrap();
    std::fs::remove_file(e.outside.join("moved")).unwrap();
    let confined = run(&e, &auto(), script, &[out]).await;
    assert_eq!(confined.stdout, "READ_ETC\nok\n", "{}", confined.stderr);
    assert!(!e.outside.join("new").exists() && !e.outside.join("moved").exists() && !e.outside.join("linked").exists());
    assert_eq!(std::fs::read_to_string(e.outside.join("id_rsa")).unwrap(), "canary-secret\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_grants_add_paths() {
    if features().landlock_abi.is_none() {
        eprintln!("skipped: no Landlock on this kernel");
        return;
    }
    let e = env();
    let out = e.outside.to_str().unwrap();
    let read = SandboxOptions { read_paths: vec![e.outside.clone()], ..auto() };
    let r = run(&e, &read, r#"cat "$1/id_rsa"; echo x > "$1/new" 2>/dev/null || echo NO_WRITE"#, &[out]).await;
    assert_eq!(r.stdout, "canary-secret\nNO_WRITE\n");
    let write = SandboxOptions { write_paths: vec![e.outside.clone()], ..auto() };
    let r = run(&e, &write, r#"echo x > "$1/new" && cat "$1/new""#, &[out]).await;
    assert_eq!(r.stdout, "x\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_grandchild_dies_with_the_call() {
    if !features().pid_namespace {
        eprintln!("skipped: no PID namespace here");
        return;
    }
    let e = env();
    for (opts, survives) in [(off(), true), (auto(), false)] {
        let mark = format!("wc-sandbox-{}", std::process::id());
        // Leaves the group, closes the pipes: only a namespace catches it.
        // The script waits until the grandchild has left the group (else the group kill could
        // beat its setsid).
        let r = run(
            &e,
            &opts,
            r#"rm -f ready; WC_MARK="$1" setsid sh -c 'touch ready; exec sleep 30' </dev/null >/dev/null 2>&1 & while [ ! -e ready ]; do sleep 0.01; done; echo started"#,
            &[&mark],
        )
        .await;
        assert_eq!(r.stdout, "started\n");
        let found = wait_for_alive(&format!("WC_MARK={mark}"), survives);
        assert_eq!(!found.is_empty(), survives, "{:?} survivors {found:?}", opts.mode);
        for pid in found {
            // SAFETY: a process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
}

/// Processes whose environment contains `needle`; when `expect` is false, waits up to a second
/// for them to be gone.
fn wait_for_alive(needle: &str, expect: bool) -> Vec<i32> {
    let until = Instant::now() + Duration::from_secs(1);
    loop {
        let found = common::pids_with(needle, &["environ"]);
        if found.is_empty() == !expect || Instant::now() > until {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_and_signals_come_through_the_namespace() {
    let e = env();
    for opts in [auto(), off()] {
        let r = run(&e, &opts, "exit 7", &[]).await;
        assert_eq!((r.code, r.signal), (Some(7), None));
        let r = run(&e, &opts, "kill -TERM $$", &[]).await;
        assert_eq!((r.code, r.signal), (None, Some(libc::SIGTERM)));
        let r = run(&e, &opts, "kill -KILL $$", &[]).await;
        assert_eq!((r.code, r.signal), (None, Some(libc::SIGKILL)));
        // A signal with a core dump by default: the same signal, and no core from the
        // processes above the child (their memory is the host's).
        let r = run(&e, &opts, "ulimit -c 0; kill -SEGV $$", &[]).await;
        assert_eq!((r.code, r.signal), (None, Some(libc::SIGSEGV)));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inside_the_namespace_only_the_call_is_visible() {
    let f = features();
    if !f.pid_namespace || !f.proc_mount {
        eprintln!("skipped: no PID namespace with a private /proc here");
        return;
    }
    let e = env();
    let host = std::process::id().to_string();
    let script = r#"echo "$$"; ls /proc | grep -c '^[0-9]'; test -e "/proc/$1" && echo HOST_VISIBLE; cat /proc/1/environ >/dev/null 2>&1 && echo INIT_ENVIRON; cat /proc/1/cmdline 2>/dev/null | grep -q . && echo INIT_CMDLINE; kill -0 "$1" 2>/dev/null && echo HOST_SIGNALLED; true"#;
    let r = run(&e, &auto(), script, &[&host]).await;
    let lines: Vec<&str> = r.stdout.lines().collect();
    // sh is PID 2 (the init is 1); /proc lists the init, sh, and ls / grep.
    assert_eq!(lines[0], "2", "{}", r.stderr);
    assert!(lines[1].parse::<u32>().unwrap() <= 5, "{}", r.stdout);
    // The init is a copy of the host: neither its environment nor its command line shows.
    for leak in ["HOST_VISIBLE", "INIT_ENVIRON", "INIT_CMDLINE", "HOST_SIGNALLED"] {
        assert!(!r.stdout.contains(leak), "{}", r.stdout);
    }
    let open = run(&e, &off(), script, &[&host]).await;
    assert!(open.stdout.contains("HOST_VISIBLE") && open.stdout.contains("HOST_SIGNALLED"), "{}", open.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_is_blocked_unless_allowed() {
    if !features().landlock_abi.is_some_and(|a| a >= 4) {
        eprintln!("skipped: no Landlock network rules on this kernel");
        return;
    }
    let e = env();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    // bash's /dev/tcp connects without any other program.
    let script = r#"if command -v bash >/dev/null; then bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null && echo CONNECTED; fi; echo done"#;
    let blocked = run(&e, &auto(), script, &[&port]).await;
    assert_eq!(blocked.stdout, "done\n");
    let allowed = run(&e, &SandboxOptions { network: true, ..auto() }, script, &[&port]).await;
    assert_eq!(allowed.stdout, "CONNECTED\ndone\n");
    assert_eq!(allowed.report.network, Network::Allowed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_still_a_spawn_error() {
    let e = env();
    let no_namespace = SandboxOptions { limit: Some(Features { pid_namespace: false, ..features() }), ..auto() };
    for opts in [auto(), no_namespace, off()] {
        let confinement = sandbox::prepare(&opts, &e.ws, &[]).unwrap();
        let mut spec = SpawnSpec::new("/nonexistent/program", e.ws.canonical());
        confinement.apply(&mut spec);
        let err = process::run(spec, &RunOptions::with_timeout(Duration::from_secs(5)), &Cancel::new(), Head::new(10), Some(Head::new(10)))
            .await
            .unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{:?}", opts.mode);
    }
}



#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_private_proc_only_the_childs_own_entries_are_readable() {
    if features().landlock_abi.is_none() {
        eprintln!("skipped: no Landlock on this kernel");
        return;
    }
    let e = env();
    let host = std::process::id().to_string();
    // The shell reads its own entry (a child's own entry is another /proc/<pid>).
    let script = r#"{ read -r l; } </proc/self/status && echo OWN; cat /proc/meminfo >/dev/null && echo MEMINFO; cat "/proc/$1/environ" >/dev/null 2>&1 && echo HOST_ENVIRON; cat "/proc/$1/cmdline" >/dev/null 2>&1 && echo HOST_CMDLINE; true"#;
    for limit in [Features { pid_namespace: false, ..features() }, Features { proc_mount: false, ..features() }] {
        let opts = SandboxOptions { limit: Some(limit), ..auto() };
        let r = run(&e, &opts, script, &[&host]).await;
        assert_eq!(r.stdout, "OWN\nMEMINFO\n", "{limit:?}: {}", r.stderr);
    }
    let open = run(&e, &off(), script, &[&host]).await;
    assert_eq!(open.stdout, "OWN\nMEMINFO\nHOST_ENVIRON\nHOST_CMDLINE\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_cancellation_stop_a_confined_child_promptly() {
    let e = env();
    for opts in [auto(), off()] {
        // The spawn returns as soon as the program runs (nothing between it and the host holds
        // the spawn's status pipe or the output pipes), so the timeout is counted and kills.
        let confinement = sandbox::prepare(&opts, &e.ws, &[]).unwrap();
        let mut spec = SpawnSpec::new("/bin/sh", e.ws.canonical()).arg("-c").arg("echo started; while :; do :; done");
        confinement.apply(&mut spec);
        let started = Instant::now();
        let f = process::run(spec, &RunOptions::with_timeout(Duration::from_millis(500)), &Cancel::new(), Head::new(100), Some(Head::new(100)))
            .await
            .unwrap();
        assert_eq!(f.end, process::End::TimedOut, "{:?}", opts.mode);
        assert_eq!(f.stdout.finish().text, "started\n");
        assert!(started.elapsed() < Duration::from_millis(1_500), "{:?}", started.elapsed());

        let confinement = sandbox::prepare(&opts, &e.ws, &[]).unwrap();
        let mut spec = SpawnSpec::new("/bin/sh", e.ws.canonical()).arg("-c").arg("sleep 30");
        confinement.apply(&mut spec);
        let cancel = Cancel::new();
        let c = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            c.cancel();
        });
        let started = Instant::now();
        let f = process::run(spec, &RunOptions::with_timeout(Duration::from_secs(30)), &cancel, Head::new(100), Some(Head::new(100))).await.unwrap();
        assert_eq!(f.end, process::End::Cancelled);
        assert!(started.elapsed() < Duration::from_millis(1_000), "{:?}", started.elapsed());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_reported_as_its_signal_and_dumps_no_host_memory() {
    // With core dumps allowed for the host, the processes above the program (which share the
    // host's memory) must still not dump one into the workspace, their working directory.
    let unlimited = libc::rlimit { rlim_cur: libc::RLIM_INFINITY, rlim_max: libc::RLIM_INFINITY };
    // SAFETY: setrlimit on this process with a valid struct.
    if unsafe { libc::setrlimit(libc::RLIMIT_CORE, &unlimited) } != 0 {
        eprintln!("skipped: core dumps cannot be enabled here");
        return;
    }
    let e = env();
    let r = run(&e, &auto(), "ulimit -c 0; kill -SEGV $$", &[]).await;
    assert_eq!((r.code, r.signal), (None, Some(libc::SIGSEGV)));
    let left: Vec<_> = std::fs::read_dir(e.ws.canonical()).unwrap().flatten().map(|d| d.file_name()).collect();
    assert!(left.is_empty(), "{left:?}");
    // The program itself keeps the host's limit (with and without a namespace).
    for opts in [auto(), SandboxOptions { limit: Some(Features { pid_namespace: false, ..features() }), ..auto() }] {
        let r = run(&e, &opts, "ulimit -c; ulimit -H -c", &[]).await;
        assert_eq!(r.stdout, "unlimited\nunlimited\n", "{:?}", opts.limit);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_with_pre_exec_steps_is_not_launched_confined() {
    let e = env();
    let confinement = sandbox::prepare(&auto(), &e.ws, &[]).unwrap();
    if !confinement.report().processes.eq(&Processes::Namespace) && confinement.report().landlock_abi.is_none() {
        eprintln!("skipped: nothing to confine with here");
        return;
    }
    let mut spec = SpawnSpec::new("/bin/true", e.ws.canonical());
    // SAFETY: a step that does nothing.
    unsafe { spec.add_pre_exec(Box::new(|| Ok(()))) };
    confinement.apply(&mut spec);
    let err = process::run(spec, &RunOptions::with_timeout(Duration::from_secs(5)), &Cancel::new(), Head::new(10), Some(Head::new(10)))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
}


#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn many_confined_runs_at_once_all_settle() {
    let e = std::sync::Arc::new(env());
    let mut tasks = Vec::new();
    for i in 0..64 {
        let e = e.clone();
        tasks.push(tokio::spawn(async move {
            let r = run(&e, &auto(), r#"echo "$1"; sh -c 'exit 3' & wait $!; exit $?"#, &[&i.to_string()]).await;
            (i, r.code, r.stdout)
        }));
    }
    for t in tasks {
        let (i, code, stdout) = t.await.unwrap();
        assert_eq!((code, stdout), (Some(3), format!("{i}\n")));
    }
}

/// A descriptor the host left inheritable (not close-on-exec), open on a file outside the
/// workspace, above stdio, with its number; closed on drop.
struct LeakedFd(i32);

impl LeakedFd {
    fn open(path: &std::path::Path) -> LeakedFd {
        use std::os::fd::IntoRawFd as _;
        let file = std::fs::OpenOptions::new().read(true).append(true).open(path).unwrap();
        let fd = file.into_raw_fd();
        // SAFETY: fcntl on a descriptor this test owns: a copy at 200 or above without the
        // close-on-exec flag (F_DUPFD never sets it), as a careless host would hold.
        let high = unsafe { libc::fcntl(fd, libc::F_DUPFD, 200) };
        unsafe { libc::close(fd) };
        assert!(high >= 200);
        LeakedFd(high)
    }
}

impl Drop for LeakedFd {
    fn drop(&mut self) {
        // SAFETY: the descriptor this value owns.
        unsafe { libc::close(self.0) };
    }
}

/// Through the descriptor itself and through its `/proc/self/fd` entry: read it, append to it.
const FD_ATTACK: &str = r#"n="$1"; bash -c 'head -c 64 <&"$1" 2>/dev/null && echo FD_READ; echo appended >&"$1" 2>/dev/null && echo FD_WROTE; head -c 64 "/proc/self/fd/$1" 2>/dev/null && echo PROC_READ; echo appended >> "/proc/self/fd/$1" 2>/dev/null && echo PROC_WROTE; true' bash "$n""#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_the_host_left_open_do_not_reach_the_child() {
    if !std::path::Path::new("/bin/bash").exists() {
        eprintln!("skipped: no bash for multi-digit descriptor redirections");
        return;
    }
    let e = env();
    let target = e.outside.join("id_rsa");
    let leaked = LeakedFd::open(&target);
    let n = leaked.0.to_string();
    // Every launch path: the full sandbox, Landlock without a namespace, nothing left to apply
    // (the clone spawn), "off", and the process machinery's own spawn (a spec with a pre-exec
    // step and nothing to confine).
    let f = features();
    let no_ns = SandboxOptions { limit: Some(Features { pid_namespace: false, ..f }), ..auto() };
    let nothing = SandboxOptions { limit: Some(Features::NONE), ..auto() };
    for opts in [auto(), no_ns, nothing, off()] {
        let r = run(&e, &opts, FD_ATTACK, &[&n]).await;
        assert_eq!(r.stdout, "", "{:?} {:?}: {}", opts.mode, opts.limit, r.stderr);
    }
    let confinement = sandbox::prepare(&off(), &e.ws, &[]).unwrap();
    let mut spec = SpawnSpec::new("/bin/sh", e.ws.canonical()).arg("-c").arg(FD_ATTACK).arg("sh").arg(&n).env("PATH", "/usr/bin:/bin");
    // SAFETY: a step that does nothing.
    unsafe { spec.add_pre_exec(Box::new(|| Ok(()))) };
    confinement.apply(&mut spec);
    let fin = process::run(spec, &RunOptions::with_timeout(Duration::from_secs(20)), &Cancel::new(), Head::new(1 << 16), Some(Head::new(1 << 16))).await.unwrap();
    assert_eq!(fin.stdout.finish().text, "", "the fork-based spawn");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "canary-secret\n");
    // The attack itself works where a descriptor is inherited: a plain spawn passes it on.
    let plain = std::process::Command::new("/bin/sh").arg("-c").arg(FD_ATTACK).arg("sh").arg(&n).output().unwrap();
    let out = String::from_utf8_lossy(&plain.stdout);
    assert!(out.contains("canary-secret") && out.contains("FD_WROTE"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_init_shows_nothing_of_the_host_whatever_the_childs_groups() {
    // The init (PID 1 inside) shares the host's memory: its command line is the host's. Under
    // `hidepid=invisible` group 0 is exempt, so a root child (this test runs as root) read it.
    let f = features();
    if !f.pid_namespace || !f.proc_mount {
        eprintln!("skipped: no PID namespace with a private /proc here");
        return;
    }
    let e = env();
    let host_argv0 = std::env::args().next().unwrap();
    let script = r#"id -u; cat /proc/1/cmdline 2>/dev/null | tr '\0' ' '; cat /proc/1/status 2>/dev/null | grep -q . && echo INIT_STATUS; cat /proc/1/environ >/dev/null 2>&1 && echo INIT_ENVIRON; ls /proc | grep -qx 1 && echo INIT_LISTED; grep ' /proc ' /proc/self/mountinfo | grep -o 'hidepid=[a-z0-9]*'"#;
    // With Landlock and without (then only the nested user namespace keeps ptrace from I).
    for opts in [auto(), SandboxOptions { limit: Some(Features { landlock_abi: None, ..f }), ..auto() }] {
        let r = run(&e, &opts, script, &[]).await;
        let lines: Vec<&str> = r.stdout.lines().collect();
        // SAFETY: a plain getter.
        assert_eq!(lines[0], unsafe { libc::geteuid() }.to_string());
        assert_eq!(&lines[1..], ["hidepid=ptraceable"], "{:?}: {}", opts.limit, r.stdout);
        assert!(!r.stdout.contains(&host_argv0));
    }
    // The attack: where the host's /proc entry is visible, its command line is read.
    let host = std::process::id().to_string();
    let open = run(&e, &off(), r#"cat "/proc/$1/cmdline" | tr '\0' ' '"#, &[&host]).await;
    assert!(open.stdout.contains(&host_argv0), "{}", open.stdout);
}

fn own_oom_score_adj() -> String {
    std::fs::read_to_string("/proc/self/oom_score_adj").unwrap().trim().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confined_processes_are_the_oom_killers_first_choice_and_the_host_is_not() {
    let e = env();
    let host_before = own_oom_score_adj();
    assert_ne!(host_before, "1000");
    let f = features();
    // The program at its first instruction, a child it forks at once, and a grandchild: 1000
    // each (the score is set before the exec); with a namespace, without one, and with nothing
    // to apply. Off leaves the host's score.
    // (Each reads its own entry with the shell's `read`: with Landlock and no private /proc,
    // a process may only read the /proc entry of the program itself.)
    let script = r#"read -r s </proc/self/oom_score_adj; echo "$s"; sh -c 'read -r s </proc/self/oom_score_adj && echo "$s"' & wait; (sleep 0.05; read -r s </proc/self/oom_score_adj && echo "$s")"#;
    let no_ns = SandboxOptions { limit: Some(Features { pid_namespace: false, ..f }), ..auto() };
    let nothing = SandboxOptions { limit: Some(Features::NONE), ..auto() };
    // Without a namespace, Landlock lets only the program itself read its /proc entry.
    for (opts, expect) in [(auto(), "1000\n1000\n1000\n"), (no_ns, "1000\n"), (nothing, "1000\n1000\n1000\n")] {
        let r = run(&e, &opts, script, &[]).await;
        assert_eq!(r.stdout, expect, "{:?}: {}", opts.limit, r.stderr);
        assert_eq!(own_oom_score_adj(), host_before);
    }
    let r = run(&e, &off(), "cat /proc/self/oom_score_adj", &[]).await;
    assert_eq!(r.stdout.trim(), host_before);
    assert_eq!(own_oom_score_adj(), host_before);
}

/// The regression: the score used to be written from outside once the program's exec had woken
/// its parent, which the kernel does just before the exec swaps in the program's memory; a
/// write that landed in between went to every process sharing the host's memory, the host
/// included. Many launches while host threads map and unmap memory (as V8 does), which keeps
/// the exec waiting for the host's memory map lock at that point: the old way failed within a
/// few launches here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosts_oom_score_never_follows_the_programs() {
    let e = env();
    let host_before = own_oom_score_adj();
    assert_ne!(host_before, "1000");
    let no_ns = SandboxOptions { limit: Some(Features { pid_namespace: false, ..features() }), ..auto() };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mappers: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    // SAFETY: an anonymous mapping of our own, unmapped at once.
                    unsafe {
                        let p = libc::mmap(std::ptr::null_mut(), 1 << 20, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE, -1, 0);
                        libc::munmap(p, 1 << 20);
                    }
                }
            })
        })
        .collect();
    let mut bad = None;
    'runs: for i in 0..300 {
        for opts in [&auto(), &no_ns] {
            let r = run(&e, opts, "exit 0", &[]).await;
            assert_eq!(r.code, Some(0));
            let now = own_oom_score_adj();
            if now != host_before {
                bad = Some((i, opts.limit, now));
                break 'runs;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    mappers.into_iter().for_each(|t| t.join().unwrap());
    if bad.is_some() {
        // Put the host back for the other tests (root may lower it; others cannot).
        let _ = std::fs::write("/proc/self/oom_score_adj", &host_before);
    }
    assert_eq!(bad, None);
}
