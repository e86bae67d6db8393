//! Staged runs (contract §20): the command runs for real, its writes land in an overlay, the
//! workspace is unchanged until the change set is applied, all or nothing.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use workcell_core::command::{run_command, CommandOptions, CommandOutput, CommandRequest};
use workcell_core::guard::Guard;
use workcell_core::stage::{self, StagedOutput};
use workcell_core::{Cancel, Code, Error};

use crate::common::{fixture, Fixture, PATH};

/// A script that creates, modifies, deletes, renames, chmods and symlinks, makes and removes
/// directories, and tries to write the repository.
const SCRIPT: &str = "echo new > new.txt; printf 'changed\\n' > mod.txt; rm del.txt; mv ren.txt renamed.txt; chmod 755 exec.sh; \
ln -s ../outside/secret link; mkdir empty; rm -r dir; mkdir -p sub/deep && echo d > sub/deep/f.txt; \
(echo planted > .git/config) 2>/dev/null || echo git-read-only; echo done";

const FILES: &[(&str, &str)] = &[
    ("keep.txt", "keep\n"),
    ("mod.txt", "old\n"),
    ("del.txt", "gone\n"),
    ("ren.txt", "moving\n"),
    ("exec.sh", "#!/bin/sh\n"),
    ("dir/a.txt", "a\n"),
    ("dir/b.txt", "b\n"),
    (".git/config", "[core]\n"),
];

fn options(f: &Fixture, group: u32) -> CommandOptions {
    let mut o = CommandOptions::new(PATH);
    o.scratch_parent = f.scratch.clone();
    o.stage.group = Some(group);
    o.stage.asked = true;
    // What the host gets from JSON by default: every .git read-only for the processes.
    o.sandbox.protect = workcell_core::guard::DEFAULT_PROTECT.iter().map(|s| s.to_string()).collect();
    o
}

async fn sh(f: &Fixture, script: &str, o: &CommandOptions) -> Result<CommandOutput, Error> {
    let req = CommandRequest { argv: vec!["sh".into(), "-c".into(), script.into()], cwd: None, timeout_ms: None };
    run_command(&f.ws, &req, o, &Cancel::new()).await
}

/// Every entry under `root` (not `.git`): its kind, permission bits and content or link text.
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" {
                continue;
            }
            let m = std::fs::symlink_metadata(&p).unwrap();
            let mode = m.permissions().mode() & 0o7777;
            if m.file_type().is_symlink() {
                out.insert(rel, format!("link {}", std::fs::read_link(&p).unwrap().display()));
            } else if m.is_dir() {
                out.insert(rel.clone(), format!("dir {mode:o}"));
                walk(root, &p, out);
            } else {
                out.insert(rel, format!("file {mode:o} {:?}", std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn setup() -> Fixture {
    let f = fixture(FILES);
    std::fs::set_permissions(f.root.join("exec.sh"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::create_dir_all(f.root.parent().unwrap().join("outside")).unwrap();
    std::fs::write(f.root.parent().unwrap().join("outside/secret"), "secret\n").unwrap();
    f
}

fn files(s: &StagedOutput) -> Vec<(String, String)> {
    s.files.iter().map(|f| (f.path.clone(), serde_json::to_value(f.action).unwrap().as_str().unwrap().to_string())).collect()
}

fn apply(f: &Fixture, group: u32, id: &str, hash: &str) -> workcell_core::Result<stage::AppliedOutput> {
    let guard = Guard::new(workcell_core::guard::DEFAULT_PROTECT, false).unwrap();
    stage::apply_staged(&f.ws, group, id, hash, &guard, &Cancel::new())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_run_leaves_the_workspace_unchanged_and_its_change_set_applies_byte_for_byte() {
    let f = setup();
    let g = stage::group_new();
    let before = tree(&f.root);
    let outside_before = tree(f.root.parent().unwrap());
    let out = sh(&f, SCRIPT, &options(&f, g)).await.unwrap();
    assert_eq!(out.exit_code, Some(0), "{}", out.output);
    assert!(out.output.contains("git-read-only"), "the repository was writable in the overlay: {}", out.output);
    assert_eq!(tree(&f.root), before, "the staged run changed the workspace");
    assert_eq!(std::fs::read_to_string(f.root.join(".git/config")).unwrap(), "[core]\n");
    let s = out.staged.expect("a staged result");
    let want: Vec<(String, String)> = [
        ("del.txt", "deleted"),
        ("dir/", "deleted"),
        ("dir/a.txt", "deleted"),
        ("dir/b.txt", "deleted"),
        ("empty/", "added"),
        ("exec.sh", "mode"),
        ("link", "added"),
        ("mod.txt", "modified"),
        ("new.txt", "added"),
        ("ren.txt", "deleted"),
        ("renamed.txt", "added"),
        ("sub/deep/f.txt", "added"),
    ]
    .iter()
    .map(|(p, a)| (p.to_string(), a.to_string()))
    .collect();
    assert_eq!(files(&s), want, "{}", s.diff);
    assert!(s.diff.contains("-old\n+changed\n"), "{}", s.diff);
    assert!(s.diff.contains("old mode 644\nnew mode 755"), "{}", s.diff);
    assert!(s.diff.contains("symlink -> ../outside/secret"), "{}", s.diff);
    assert!(s.summary.contains("12 paths"), "{}", s.summary);

    // The same script run unstaged in a copy of the workspace is what the apply must give.
    let control = setup();
    let unstaged = CommandOptions { stage: Default::default(), ..options(&control, g) };
    let c = sh(&control, SCRIPT, &unstaged).await.unwrap();
    assert!(c.staged.is_none());
    let applied = apply(&f, g, &s.id, &s.hash).unwrap();
    assert_eq!(applied.files, s.files);
    assert_eq!(tree(&f.root), tree(&control.root), "the applied change differs from the unstaged run's");
    assert_eq!(std::fs::read_to_string(f.root.join(".git/config")).unwrap(), "[core]\n");
    assert_eq!(tree(f.root.parent().unwrap()).into_iter().filter(|(k, _)| !k.starts_with("ROOT")).collect::<BTreeMap<_, _>>(),
        outside_before.into_iter().filter(|(k, _)| !k.starts_with("ROOT")).collect::<BTreeMap<_, _>>(), "something outside the workspace changed");
    // Applied once: gone.
    assert_eq!(apply(&f, g, &s.id, &s.hash).unwrap_err().code, Code::StagedNotFound);
    assert_eq!(stage::group_len(g), 0);
    stage::group_close(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_changed_between_the_run_and_the_apply_is_target_changed_and_nothing_is_applied() {
    let f = setup();
    let g = stage::group_new();
    let s = sh(&f, SCRIPT, &options(&f, g)).await.unwrap().staged.unwrap();
    std::fs::write(f.root.join("mod.txt"), "edited by a person\n").unwrap();
    let before = tree(&f.root);
    let err = apply(&f, g, &s.id, &s.hash).unwrap_err();
    assert_eq!(err.code, Code::TargetChanged, "{err:?}");
    assert_eq!(tree(&f.root), before, "a failed apply changed the workspace");
    // A wrong hash: refused, kept.
    assert_eq!(apply(&f, g, &s.id, "0").unwrap_err().code, Code::TargetChanged);
    assert_eq!(stage::group_len(g), 1);
    // Discard leaves nothing; the id is then unknown.
    stage::discard(g, &s.id).unwrap();
    assert_eq!(stage::group_len(g), 0);
    assert_eq!(stage::discard(g, &s.id).unwrap_err().code, Code::StagedNotFound);
    assert_eq!(apply(&f, g, &s.id, &s.hash).unwrap_err().code, Code::StagedNotFound);
    stage::group_close(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_to_the_repository_is_never_applied() {
    let f = setup();
    let g = stage::group_new();
    // A nested repository made by the run is staged (only what exists is read-only), and the
    // guard refuses the whole change set.
    let s = sh(&f, "mkdir -p pkg/.git && echo hook > pkg/.git/hooks; echo ok > ok.txt", &options(&f, g)).await.unwrap().staged.unwrap();
    let err = apply(&f, g, &s.id, &s.hash).unwrap_err();
    assert_eq!(err.code, Code::PathProtected, "{err:?}");
    assert!(!f.root.join("ok.txt").exists() && !f.root.join("pkg").exists());
    stage::group_close(g);
    assert_eq!(stage::group_len(g), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_gives_the_process_enospc_and_the_staged_data_is_bounded() {
    let f = setup();
    let g = stage::group_new();
    let mut o = options(&f, g);
    o.stage.max_staged_bytes = 64 * 1024;
    let out = sh(&f, "head -c 1000000 /dev/zero > big; echo rc=$?", &o).await.unwrap();
    assert!(out.output.contains("No space left on device") && out.output.contains("rc=1"), "{}", out.output);
    assert!(!f.root.join("big").exists());
    stage::group_close(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_staged_run_where_namespaces_are_off_is_sandbox_unavailable_and_never_runs_unstaged() {
    let f = setup();
    let g = stage::group_new();
    let mut o = options(&f, g);
    o.sandbox.limit = Some(workcell_core::sandbox::Features { landlock_abi: Some(u32::MAX), pid_namespace: true, user_namespace: false, proc_mount: true });
    o.sandbox.protect = Vec::new();
    let err = sh(&f, "echo ran > ran.txt", &o).await.unwrap_err();
    assert_eq!(err.code, Code::SandboxUnavailable, "{err:?}");
    assert_eq!(err.details.as_ref().unwrap()["missing"][0], "mount-namespace");
    o.sandbox.limit = None;
    o.sandbox.mode = workcell_core::sandbox::Mode::Off;
    let err = sh(&f, "echo ran > ran.txt", &o).await.unwrap_err();
    assert_eq!(err.code, Code::SandboxUnavailable, "{err:?}");
    assert!(!f.root.join("ran.txt").exists());
    // "never": asking is refused before any effect.
    let mut o = options(&f, g);
    o.stage.mode = stage::StageMode::Never;
    let err = sh(&f, "echo ran > ran.txt", &o).await.unwrap_err();
    assert_eq!(err.reason(), Some("STAGE_NOT_ALLOWED"));
    assert!(!f.root.join("ran.txt").exists());
    stage::group_close(g);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_symlink_the_run_planted_is_applied_as_a_link_and_never_followed() {
    let f = setup();
    let g = stage::group_new();
    let outside = f.root.parent().unwrap().join("outside");
    // The process cannot write outside (Landlock); its link to outside is only a link.
    let s = sh(&f, "ln -s ../outside esc; echo x > esc/secret 2>/dev/null; echo y > esc/new 2>/dev/null; true", &options(&f, g)).await.unwrap().staged.unwrap();
    assert_eq!(files(&s), vec![("esc".to_string(), "added".to_string())], "{}", s.diff);
    apply(&f, g, &s.id, &s.hash).unwrap();
    assert_eq!(std::fs::read_link(f.root.join("esc")).unwrap(), Path::new("../outside"));
    assert_eq!(std::fs::read_to_string(outside.join("secret")).unwrap(), "secret\n");
    assert!(!outside.join("new").exists());
    stage::group_close(g);
}
