//! run_command end to end: real programs from PATH, hostile children, the environment and the
//! scratch directory, cwd resolution, the policy before any effect.

use std::path::Path;
use std::time::{Duration, Instant};

use workcell_core::command::{run_command, CommandOptions, CommandOutput, CommandRequest};
use workcell_core::{Cancel, Code, Error};

use crate::common;

use common::{fixture, marker as random_marker, Fixture, PATH};

fn marker() -> String {
    random_marker("wc-cmd")
}

fn assert_none_alive(marker: &str) {
    common::assert_none_alive(marker, Duration::from_secs(1));
}

impl Fixture {
    fn command_options(&self, mark: &str) -> CommandOptions {
        let mut o = CommandOptions::new(PATH);
        o.scratch_parent = self.scratch.clone();
        o.env = vec![("WC_MARK".into(), mark.into())];
        o
    }

    fn scratch_left(&self) -> Vec<String> {
        std::fs::read_dir(&self.scratch).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    }

    async fn run(&self, argv: &[&str], opts: &CommandOptions) -> Result<CommandOutput, Error> {
        self.run_in(argv, None, None, opts, &Cancel::new()).await
    }

    async fn run_in(
        &self,
        argv: &[&str],
        cwd: Option<&str>,
        timeout_ms: Option<f64>,
        opts: &CommandOptions,
        cancel: &Cancel,
    ) -> Result<CommandOutput, Error> {
        let req = CommandRequest { argv: argv.iter().map(|s| s.to_string()).collect(), cwd: cwd.map(Into::into), timeout_ms };
        run_command(&self.ws, &req, opts, cancel).await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_in_the_canonical_root_with_the_exit_code_as_data() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    let out = f.run(&["sh", "-c", "pwd; echo err >&2; exit 7"], &o).await.unwrap();
    assert_eq!(out.exit_code, Some(7));
    assert_eq!(out.output, format!("{}\nerr\n", f.root.display()));
    assert!(!out.truncated && !out.timed_out && out.note.is_none());
    assert_eq!(out.timeout_ms, 30_000);
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_is_resolved_beneath_the_root_to_its_canonical_path() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    std::fs::create_dir_all(f.root.join("pkg/app")).unwrap();
    std::os::unix::fs::symlink("pkg/app", f.root.join("alias")).unwrap();
    std::fs::write(f.root.join("file.txt"), "x").unwrap();
    std::os::unix::fs::symlink("..", f.root.join("up")).unwrap();
    std::os::unix::fs::symlink(f.root.join("pkg"), f.root.join("absolute")).unwrap();

    for (cwd, expected) in [("pkg/app", "pkg/app"), ("./pkg//app/", "pkg/app"), ("alias", "pkg/app"), (".", "")] {
        let out = f.run_in(&["pwd"], Some(cwd), None, &o, &Cancel::new()).await.unwrap();
        let want = if expected.is_empty() { f.root.clone() } else { f.root.join(expected) };
        assert_eq!(out.output, format!("{}\n", want.display()), "cwd {cwd}");
    }
    let code = |r: Result<CommandOutput, Error>| {
        let e = r.unwrap_err();
        assert!(e.hint.is_some());
        e.reason().map(str::to_string).unwrap_or_else(|| e.code.as_str().to_string())
    };
    assert_eq!(code(f.run_in(&["pwd"], Some("../ROOT"), None, &o, &Cancel::new()).await), "INVALID_RELATIVE_PATH");
    assert_eq!(code(f.run_in(&["pwd"], Some("/tmp"), None, &o, &Cancel::new()).await), "INVALID_RELATIVE_PATH");
    assert_eq!(code(f.run_in(&["pwd"], Some("up"), None, &o, &Cancel::new()).await), "PATH_ESCAPES_WORKSPACE");
    assert_eq!(code(f.run_in(&["pwd"], Some("absolute"), None, &o, &Cancel::new()).await), "PATH_ESCAPES_WORKSPACE");
    assert_eq!(code(f.run_in(&["pwd"], Some("file.txt"), None, &o, &Cancel::new()).await), "FILE_NOT_FOUND");
    assert_eq!(code(f.run_in(&["pwd"], Some("missing"), None, &o, &Cancel::new()).await), "FILE_NOT_FOUND");
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_environment_is_built_from_nothing_with_a_private_home() {
    let f = fixture(&[]);
    let mut o = f.command_options("m");
    o.env = vec![("ALLOWED".into(), "yes".into())];
    let out = f.run(&["sh", "-c", "env | sort; touch \"$HOME/h\" \"$TMPDIR/t\"; ls -ld \"$HOME/..\""], &o).await.unwrap();
    let lines: Vec<&str> = out.output.lines().collect();
    let names: Vec<&str> = lines.iter().take_while(|l| !l.starts_with("drwx")).map(|l| l.split('=').next().unwrap()).collect();
    // sh adds PWD (and may add SHLVL / _): everything else is ours.
    let ours: Vec<&str> = names.iter().copied().filter(|n| !["PWD", "SHLVL", "_", "OLDPWD"].contains(n)).collect();
    assert_eq!(ours, ["ALLOWED", "HOME", "PATH", "TMPDIR"]);
    let home = lines.iter().find_map(|l| l.strip_prefix("HOME=")).unwrap();
    let tmp = lines.iter().find_map(|l| l.strip_prefix("TMPDIR=")).unwrap();
    let scratch = Path::new(home).parent().unwrap();
    assert_eq!(scratch.parent().unwrap(), f.scratch);
    assert_eq!(Path::new(tmp).parent().unwrap(), scratch);
    assert!(!home.starts_with(f.root.to_str().unwrap()));
    assert_ne!(Some(home.to_string()), std::env::var("HOME").ok());
    // drwx------: private to the user.
    assert!(lines.last().unwrap().starts_with("drwx------"), "{}", lines.last().unwrap());
    // Removed afterwards, with what the command put there.
    assert!(!scratch.exists());
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_stdout_and_stderr_keep_their_order() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    let script = "for i in 1 2 3 4 5 6 7 8 9 10; do echo out$i; echo err$i >&2; done";
    let out = f.run(&["sh", "-c", script], &o).await.unwrap();
    let expected: String = (1..=10).map(|i| format!("out{i}\nerr{i}\n")).collect();
    assert_eq!(out.output, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_output_keeps_head_and_tail_with_the_omission_said() {
    let f = fixture(&[]);
    let mut o = f.command_options(&marker());
    o.head_bytes = 100;
    o.tail_bytes = 200;
    // 64 MiB of 'x' between a recognizable start and end.
    let out = f.run(&["sh", "-c", "echo START; head -c 67108864 /dev/zero | tr '\\0' x; echo; echo END"], &o).await.unwrap();
    assert!(out.truncated);
    let total = 6 + 67_108_864 + 1 + 4;
    assert_eq!(out.omitted_bytes, total - 300);
    assert!(out.output.starts_with(&format!("START\n{}", "x".repeat(94))));
    assert!(out.output.ends_with(&format!("{}\nEND\n", "x".repeat(195))));
    assert!(out.output.contains(&format!("\n[{} bytes omitted]\n", total - 300)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_commands_settle_promptly_and_leave_nothing_alive() {
    let f = fixture(&[]);
    let cases: [(&[&str], bool); 5] = [
        (&["sleep", "60"], true),
        (&["yes"], true),
        (&["sh", "-c", "sleep 60 &"], false),
        (&["setsid", "sleep", "60"], false),
        (&["bash", "-c", "exec > >(cat)"], false),
    ];
    for (argv, times_out) in cases {
        let mark = marker();
        let o = f.command_options(&mark);
        let started = Instant::now();
        let r = f.run_in(argv, None, Some(500.0), &o, &Cancel::new()).await;
        let took = started.elapsed();
        if times_out {
            let e = r.unwrap_err();
            assert_eq!(e.code, Code::CommandTimeout, "{argv:?}");
            assert!(e.hint.is_some());
            let d = e.details.unwrap();
            assert_eq!((d["timedOut"].as_bool(), d["timeoutMs"].as_u64()), (Some(true), Some(500)));
        } else {
            assert_eq!(r.unwrap().exit_code, Some(0), "{argv:?}");
        }
        assert!(took < Duration::from_millis(500 + 1000), "{argv:?} took {took:?}");
        assert_none_alive(&mark);
    }
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_carries_the_partial_output() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    let e = f.run_in(&["sh", "-c", "echo before; sleep 30"], None, Some(300.0), &o, &Cancel::new()).await.unwrap_err();
    assert_eq!(e.code, Code::CommandTimeout);
    let d = e.details.unwrap();
    assert_eq!(d["output"], "before\n");
    assert_eq!(d["signal"], "SIGKILL");
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_requested_timeout_above_the_maximum_is_clamped_and_said() {
    let f = fixture(&[]);
    let mut o = f.command_options(&marker());
    o.timeout = Duration::from_millis(200);
    o.max_timeout = Duration::from_millis(400);
    let started = Instant::now();
    let e = f.run_in(&["sleep", "30"], None, Some(3_600_000.0), &o, &Cancel::new()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_millis(1_400));
    let d = e.details.unwrap();
    assert_eq!(d["timeoutMs"], 400);
    assert!(d["note"].as_str().unwrap().contains("clamped to 400 ms"));
    let ok = f.run_in(&["true"], None, Some(1e9), &o, &Cancel::new()).await.unwrap();
    assert_eq!(ok.timeout_ms, 400);
    assert!(ok.note.unwrap().contains("clamped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancellation_kills_the_group_and_removes_the_scratch() {
    let f = fixture(&[]);
    let mark = marker();
    let o = f.command_options(&mark);
    let cancel = Cancel::new();
    let c2 = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        c2.cancel();
    });
    let started = Instant::now();
    let e = f.run_in(&["sh", "-c", "sleep 60 & sleep 60"], None, None, &o, &cancel).await.unwrap_err();
    assert!(e.is_cancelled());
    assert!(started.elapsed() < Duration::from_millis(300 + 700));
    assert_none_alive(&mark);
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_command_not_found_without_effects() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    let e = f.run(&["no-such-program-xyz", "arg"], &o).await.unwrap_err();
    assert_eq!(e.code, Code::CommandNotFound);
    assert!(e.hint.unwrap().contains("/usr/bin"));
    // A program in the workspace is not on PATH, even when cwd is where it lives.
    std::fs::write(f.root.join("tool"), "#!/bin/sh\necho ran\n").unwrap();
    std::fs::set_permissions(f.root.join("tool"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut o2 = f.command_options(&marker());
    o2.path = format!(".:{PATH}").into();
    assert_eq!(f.run(&["tool"], &o2).await.unwrap_err().code, Code::CommandNotFound);
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_refuses_before_any_effect() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    for argv in [
        vec!["sh", "-c", "touch made; sudo ls"],
        vec!["sh", "-c", "touch made > /etc/x"],
        vec!["/bin/touch", "made"],
        vec!["env", "sudo", "touch", "made"],
    ] {
        let e = f.run(&argv, &o).await.unwrap_err();
        assert_eq!(e.reason(), Some("COMMAND_REFUSED"), "{argv:?}");
        assert!(e.hint.as_deref().is_some_and(|h| h.starts_with("refused `")), "{argv:?}");
    }
    let mut denied = f.command_options(&marker());
    denied.policy = denied.policy.with_deny(["touch"]);
    assert_eq!(f.run(&["touch", "made"], &denied).await.unwrap_err().reason(), Some("COMMAND_REFUSED"));
    let mut allowed = f.command_options(&marker());
    allowed.policy = allowed.policy.with_allow(["echo", "ls"]);
    assert_eq!(f.run(&["touch", "made"], &allowed).await.unwrap_err().reason(), Some("COMMAND_REFUSED"));
    assert_eq!(f.run(&["ls"], &allowed).await.unwrap().exit_code, Some(0));
    assert!(!f.root.join("made").exists());
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn git_runs_inside_the_workspace() {
    let f = fixture(&[]);
    let o = f.command_options(&marker());
    let out = f.run(&["sh", "-c", "git init -q && git status"], &o).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.output);
    assert!(out.output.contains("No commits yet"), "{}", out.output);
    assert!(f.root.join(".git").is_dir());
    assert!(f.scratch_left().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scratch_parent_inside_the_workspace_is_refused() {
    let f = fixture(&[]);
    let mut o = f.command_options(&marker());
    std::fs::create_dir(f.root.join("tmp")).unwrap();
    o.scratch_parent = f.root.join("tmp");
    let e = f.run(&["true"], &o).await.unwrap_err();
    assert_eq!(e.code, Code::IoError);
    assert!(e.message.contains("inside the workspace"));
    assert_eq!(std::fs::read_dir(f.root.join("tmp")).unwrap().count(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_after_resolution_does_not_move_the_child() {
    use workcell_core::command::launch::{self, Launch};
    use workcell_core::command::Scratch;
    use workcell_core::process::{HeadTail, RunOptions};
    let f = fixture(&[]);
    let outside = f.root.parent().unwrap().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::create_dir(f.root.join("a")).unwrap();
    let rel = workcell_core::parse_path("a").unwrap();
    let workdir = launch::open_workdir(&f.ws, Some(&rel)).unwrap();
    // The race: after resolution, `a` becomes a symlink to a directory outside.
    std::fs::rename(f.root.join("a"), f.root.join("b")).unwrap();
    std::os::unix::fs::symlink(&outside, f.root.join("a")).unwrap();
    let scratch = Scratch::create(&f.scratch).unwrap();
    let spec = launch::spawn_spec(
        Launch {
            program: "/bin/sh".into(),
            arg0: "sh".into(),
            args: vec!["-c".into(), "pwd -P".into()],
            env: launch::base_environment(std::ffi::OsStr::new(PATH), &scratch, &[]),
        },
        &workdir,
    );
    let run = RunOptions::with_timeout(Duration::from_secs(10));
    let finished = launch::start(spec, None, &f.root, &run, &Cancel::new(), HeadTail::new(1000, 1000)).await.unwrap();
    assert_eq!(finished.stdout.finish().text, format!("{}\n", f.root.join("b").display()));
}
