use super::*;
use std::fs;
use std::os::unix::fs::{symlink, PermissionsExt as _};

fn setup() -> (tempfile::TempDir, PathBuf, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
    fs::create_dir(&root).unwrap();
    let ws = Workspace::open(&root).unwrap();
    (tmp, root, ws)
}

/// Resolution and install on this thread (so the thread-local hooks apply).
fn write_here(ws: &Workspace, path: &str, content: &str) -> Result<WriteOutput> {
    let rel = check_path(path)?;
    let cancel = Cancel::new();
    let target = resolve(ws, &rel, &cancel)?;
    install(ws, &rel, &target, content.as_bytes(), &cancel)
}

fn temps(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in walk(dir) {
        let name = entry.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(TEMP_PREFIX) {
            out.push(entry.display().to_string());
        }
    }
    out
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        out.push(p.clone());
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

fn reset_hooks() {
    hooks::NAMES.with(|n| n.borrow_mut().clear());
    hooks::STEP.with(|h| *h.borrow_mut() = None);
    hooks::RENAME_ERRNO.with(|e| *e.borrow_mut() = None);
}

#[test]
fn trailing_slash_and_grammar_are_refused_before_any_effect() {
    for p in ["a/", "a/.", "a//", "../x", "/etc/x", "C:x", "nul.txt", ""] {
        let err = WriteRequest::new(p, "x".into(), MAX_WRITE_BYTES).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_RELATIVE_PATH"), "{p:?}");
    }
    assert_eq!(WriteRequest::new("./a//b", "x".into(), MAX_WRITE_BYTES).unwrap().path().as_str(), "a/b");
}

#[test]
fn content_limit_counts_utf8_bytes() {
    assert!(WriteRequest::new("a", "x".repeat(MAX_WRITE_BYTES), MAX_WRITE_BYTES).is_ok());
    let err = WriteRequest::new("a", "x".repeat(MAX_WRITE_BYTES + 1), MAX_WRITE_BYTES).unwrap_err();
    assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
    // 21,846 three-byte characters = 65,538 bytes, though only 21,846 UTF-16 units.
    let err = WriteRequest::new("a", "€".repeat(21_846), MAX_WRITE_BYTES).unwrap_err();
    assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
    let err = WriteRequest::from_utf16(&[0x61], &[0x61, 0xdc00], MAX_WRITE_BYTES).unwrap_err();
    assert_eq!(err.reason(), Some("INVALID_UNICODE"));
    let err = WriteRequest::from_utf16(&[0xd800], &[0x61], MAX_WRITE_BYTES).unwrap_err();
    assert_eq!(err.reason(), Some("INVALID_UNICODE"));
}

#[test]
fn writes_creates_parents_and_reports() {
    let (_t, root, ws) = setup();
    let out = write_here(&ws, "a/b/c.txt", "héllo").unwrap();
    assert_eq!(out, WriteOutput { path: "a/b/c.txt".into(), bytes: 6, created: true });
    assert_eq!(fs::read_to_string(root.join("a/b/c.txt")).unwrap(), "héllo");
    let out = write_here(&ws, "a/b/c.txt", "").unwrap();
    assert!(!out.created);
    assert_eq!(fs::read(root.join("a/b/c.txt")).unwrap(), b"");
    assert!(temps(&root).is_empty());
}

#[test]
fn a_planted_symlink_at_the_temp_name_is_skipped_never_followed() {
    let (t, root, ws) = setup();
    let outside = t.path().join("outside.txt");
    fs::write(&outside, "outside").unwrap();
    let planted = format!("{TEMP_PREFIX}planted");
    symlink(&outside, root.join(&planted)).unwrap();
    fs::write(root.join(format!("{TEMP_PREFIX}file")), "someone's").unwrap();
    hooks::NAMES.with(|n| n.borrow_mut().extend([planted.clone(), format!("{TEMP_PREFIX}file")]));
    write_here(&ws, "target", "mine").unwrap();
    reset_hooks();
    assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "mine");
    assert!(fs::symlink_metadata(root.join(&planted)).unwrap().file_type().is_symlink());
    assert_eq!(fs::read_to_string(root.join(format!("{TEMP_PREFIX}file"))).unwrap(), "someone's");
}

#[test]
fn rename_failure_keeps_the_old_target_and_removes_only_our_temp() {
    let (_t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let other = format!("{TEMP_PREFIX}other-writer");
    fs::write(root.join(&other), "not ours").unwrap();
    hooks::RENAME_ERRNO.with(|e| *e.borrow_mut() = Some(libc::ENOSPC));
    let err = write_here(&ws, "target", "new").unwrap_err();
    reset_hooks();
    assert_eq!(err.code, Code::IoError);
    assert!(err.message.starts_with("ENOSPC"), "{}", err.message);
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
    assert_eq!(temps(&root), vec![root.join(&other).display().to_string()]);
}

#[test]
fn a_temp_swapped_after_writing_is_target_changed_and_the_swap_is_not_installed() {
    let (t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let outside = t.path().join("outside.txt");
    fs::write(&outside, "outside").unwrap();
    let root2 = root.clone();
    let out2 = outside.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, temp| {
            if s == Step::TempWritten {
                let p = root2.join(temp);
                fs::remove_file(&p).unwrap();
                symlink(&out2, &p).unwrap();
            }
        }))
    });
    let err = write_here(&ws, "target", "new").unwrap_err();
    reset_hooks();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
    assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
    // The attacker's symlink is not ours: left alone.
    assert_eq!(temps(&root).len(), 1);
}

#[test]
fn a_parent_swapped_for_an_outside_symlink_before_rename_is_refused() {
    let (t, root, ws) = setup();
    fs::create_dir(root.join("dir")).unwrap();
    let outside = t.path().join("OUT");
    fs::create_dir(&outside).unwrap();
    let root2 = root.clone();
    let out2 = outside.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::BeforeRename {
                fs::rename(root2.join("dir"), root2.join("dir.moved")).unwrap();
                symlink(&out2, root2.join("dir")).unwrap();
            }
        }))
    });
    // The recheck ran before the hook; install into the moved directory (still inside) is
    // the worst case: the outside directory stays empty.
    let _ = write_here(&ws, "dir/target", "new");
    reset_hooks();
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert!(temps(&root).is_empty());
    // Swapped before the recheck: refused.
    fs::remove_file(root.join("dir")).unwrap();
    fs::rename(root.join("dir.moved"), root.join("dir")).unwrap();
    let root3 = root.clone();
    let out3 = outside.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::TempWritten {
                fs::rename(root3.join("dir"), root3.join("dir.moved2")).unwrap();
                symlink(&out3, root3.join("dir")).unwrap();
            }
        }))
    });
    let err = write_here(&ws, "dir/target", "newer").unwrap_err();
    reset_hooks();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
    assert!(temps(&root).is_empty());
}

#[test]
fn a_target_replaced_by_an_outside_symlink_just_before_rename_replaces_the_link_only() {
    let (t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let outside = t.path().join("outside.txt");
    fs::write(&outside, "outside").unwrap();
    let root2 = root.clone();
    let out2 = outside.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::BeforeRename {
                fs::remove_file(root2.join("target")).unwrap();
                symlink(&out2, root2.join("target")).unwrap();
            }
        }))
    });
    write_here(&ws, "target", "new").unwrap();
    reset_hooks();
    assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
    assert!(fs::symlink_metadata(root.join("target")).unwrap().is_file());
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "new");
}

#[test]
fn a_target_swapped_before_the_recheck_is_target_changed() {
    let (_t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let root2 = root.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::TempWritten {
                fs::write(root2.join("other"), "other").unwrap();
                fs::rename(root2.join("other"), root2.join("target")).unwrap();
            }
        }))
    });
    let err = write_here(&ws, "target", "new").unwrap_err();
    reset_hooks();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "other");
    assert!(temps(&root).is_empty());
}

#[test]
fn a_file_replaced_after_rename_is_target_changed() {
    let (_t, root, ws) = setup();
    let root2 = root.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::AfterRename {
                fs::write(root2.join("x"), "theirs").unwrap();
                fs::rename(root2.join("x"), root2.join("target")).unwrap();
            }
        }))
    });
    let err = write_here(&ws, "target", "mine").unwrap_err();
    reset_hooks();
    assert_eq!(err.code, Code::TargetChanged);
    assert!(temps(&root).is_empty());
}

#[test]
fn permission_bits_are_carried_over_and_new_files_are_0644() {
    let (_t, root, ws) = setup();
    fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(root.join("secret"), "s").unwrap();
    fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
    write_here(&ws, "run.sh", "#!/bin/sh\necho hi\n").unwrap();
    write_here(&ws, "secret", "t").unwrap();
    write_here(&ws, "new.txt", "n").unwrap();
    let mode = |p: &str| fs::metadata(root.join(p)).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode("run.sh"), 0o755);
    assert_eq!(mode("secret"), 0o600);
    assert_eq!(mode("new.txt"), 0o644);
}

#[test]
fn filesystem_phases_are_bounded_and_parallel() {
    let (_t, root, ws) = setup();
    let ws = Arc::new(ws);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let _ctx = rt.enter();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..300 {
        let request = WriteRequest::new(&format!("d{}/f{i}", i % 7), "x".repeat(4096), MAX_WRITE_BYTES).unwrap();
        let tx = tx.clone();
        spawn_write(ws.clone(), request, ticket(), Cancel::new(), move |r| tx.send(r).unwrap());
    }
    drop(tx);
    assert!(rx.iter().all(|r| r.is_ok()));
    let peak = gauge::PEAK.load(std::sync::atomic::Ordering::SeqCst);
    assert!(peak <= 16, "{peak} filesystem phases ran at once (the documented bound is 16)");
    assert!(peak > 1, "different targets never ran in parallel");
    assert!(temps(&root).is_empty());
}

#[test]
fn a_dropped_write_still_settles_its_callback_once() {
    let (tx, rx) = std::sync::mpsc::channel();
    let tx2 = tx.clone();
    drop(Settle::new(move |r: Result<WriteOutput>| tx.send(r.map(|o| o.bytes)).unwrap()));
    Settle::new(move |r: Result<WriteOutput>| tx2.send(r.map(|o| o.bytes)).unwrap())
        .done(Ok(WriteOutput { path: "a".into(), bytes: 1, created: true }));
    let got: Vec<_> = rx.iter().collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].as_ref().unwrap_err().code, Code::IoError);
    assert_eq!(got[1].as_ref().unwrap(), &1);
}

#[test]
fn cancellation_before_rename_leaves_nothing() {
    let (_t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let rel = check_path("target").unwrap();
    let cancel = Cancel::new();
    let target = resolve(&ws, &rel, &cancel).unwrap();
    let c2 = cancel.clone();
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::TempWritten {
                c2.cancel();
            }
        }))
    });
    let err = install(&ws, &rel, &target, b"new", &cancel).unwrap_err();
    reset_hooks();
    assert!(err.is_cancelled());
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
    assert!(temps(&root).is_empty());
}

#[test]
fn a_directory_path_refusal_says_its_rule_once() {
    let err = check_path("src/").unwrap_err();
    assert!(err.hint.as_deref().unwrap().contains("names a directory"));
    assert!(err.details.is_none(), "{:?}", err.details);
}

/// A temp name as a host that has exited would have left it: this machine's and namespace's
/// tag, the pid of a process that ran and was reaped.
fn name_of_an_exited_host() -> String {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let me = crate::temp_name::this_process().expect("a /proc of this PID namespace");
    let name = format!("{TEMP_PREFIX}{:016x}-{pid}-12345-00112233445566778899aabb", me.tag);
    assert!(crate::temp_name::owner_is_gone(&name, TEMP_PREFIX));
    name
}

#[test]
fn temps_left_by_an_exited_host_are_swept_by_the_next_write_in_that_directory() {
    let (t, root, ws) = setup();
    fs::create_dir(root.join("sub")).unwrap();
    let outside = t.path().join("outside.txt");
    fs::write(&outside, "outside").unwrap();
    let stale_file = name_of_an_exited_host();
    let stale_link = name_of_an_exited_host();
    let stale_dir = name_of_an_exited_host();
    fs::write(root.join("sub").join(&stale_file), "half a file").unwrap();
    symlink(&outside, root.join("sub").join(&stale_link)).unwrap();
    fs::create_dir(root.join("sub").join(&stale_dir)).unwrap();
    // A live writer's temp (this process's), a plain random name, another namespace's tag.
    let live = crate::temp_name::owned_name(TEMP_PREFIX, 12);
    let plain = crate::temp_name::random_name(TEMP_PREFIX, 12);
    let foreign = format!("{TEMP_PREFIX}0000000000000001-{}-1-00ff", std::process::id());
    for n in [&live, &plain, &foreign] {
        fs::write(root.join("sub").join(n), "keep").unwrap();
    }
    // A write elsewhere leaves that directory alone.
    write_here(&ws, "other.txt", "x").unwrap();
    assert_eq!(temps(&root).len(), 6);
    write_here(&ws, "sub/file.txt", "new").unwrap();
    let mut left: Vec<String> = temps(&root).into_iter().map(|p| p.rsplit('/').next().unwrap().to_string()).collect();
    left.sort();
    let mut want = vec![stale_dir.clone(), live, plain, foreign];
    want.sort();
    assert_eq!(left, want);
    // The symlink was removed, never followed.
    assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
    assert!(root.join("sub").join(&stale_dir).is_dir());
}

#[test]
fn the_sweep_turned_off_leaves_an_exited_hosts_temps() {
    let (_t, root, ws) = setup();
    let stale = name_of_an_exited_host();
    fs::write(root.join(&stale), "half").unwrap();
    sweep::OFF.with(|o| o.set(true));
    write_here(&ws, "file.txt", "new").unwrap();
    sweep::OFF.with(|o| o.set(false));
    assert_eq!(temps(&root).len(), 1);
    write_here(&ws, "file.txt", "newer").unwrap();
    assert!(temps(&root).is_empty());
}

#[test]
fn a_temp_is_staged_unnamed_and_named_only_for_the_install() {
    let (_t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    let rel = check_path("target").unwrap();
    let cancel = Cancel::new();
    let target = resolve(&ws, &rel, &cancel).unwrap();
    let dir = &target.dir;
    let mut temp = Temp::create(dir, "target").unwrap();
    use std::io::Write as _;
    temp.file.write_all(b"staged").unwrap();
    // While written, nothing in the directory names it.
    assert!(temps(&root).is_empty());
    let name = temp.link().unwrap().to_os_string();
    let got = temps(&root);
    assert_eq!(got.len(), 1);
    assert!(crate::temp_name::owner_of(name.to_str().unwrap(), TEMP_PREFIX).is_some(), "{name:?}");
    drop(temp);
    assert!(temps(&root).is_empty());
}

#[test]
fn where_unnamed_temps_are_unsupported_a_named_temp_installs_and_leaves_nothing() {
    let (_t, root, ws) = setup();
    fs::write(root.join("target"), "old").unwrap();
    hooks::NAMED_ONLY.with(|n| n.set(true));
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let (root2, seen2) = (root.clone(), seen.clone());
    hooks::STEP.with(|h| {
        *h.borrow_mut() = Some(Box::new(move |s, _| {
            if s == Step::TempWritten {
                seen2.lock().unwrap().push(temps(&root2).len());
            }
        }))
    });
    write_here(&ws, "target", "new").unwrap();
    hooks::NAMED_ONLY.with(|n| n.set(false));
    reset_hooks();
    assert_eq!(*seen.lock().unwrap(), vec![1]);
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "new");
    assert!(temps(&root).is_empty());
    let err = {
        hooks::NAMED_ONLY.with(|n| n.set(true));
        hooks::RENAME_ERRNO.with(|e| *e.borrow_mut() = Some(libc::EIO));
        let r = write_here(&ws, "target", "newer");
        hooks::NAMED_ONLY.with(|n| n.set(false));
        reset_hooks();
        r.unwrap_err()
    };
    assert_eq!(err.code, Code::IoError);
    assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "new");
    assert!(temps(&root).is_empty());
}

use crate::root::Identity;

/// The flush hook and counter are process-wide: the tests that set them run one at a time.
static FLUSH_HOOK_SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

struct FlushHookReset;
impl Drop for FlushHookReset {
    fn drop(&mut self) {
        *flush::hooks::BEFORE_FLUSH.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

#[test]
fn a_write_is_answered_only_after_a_flush_of_its_directory_that_started_after_its_rename() {
    let _serial = FLUSH_HOOK_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Dropped last: a failing assertion first drops the gate's sender, which lets a held flush go.
    let _reset = FlushHookReset;
    let (_t, root, ws) = setup();
    fs::create_dir(root.join("d")).unwrap();
    let dir_id = Identity::of_std(&fs::metadata(root.join("d")).unwrap());
    let ws = Arc::new(ws);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let _ctx = rt.enter();

    // Each flush of d/ says when it starts, whether the write's rename was already done then
    // (the new content is at the name), and waits until the test lets it run.
    let (started_tx, started) = std::sync::mpsc::channel::<bool>();
    let (go, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let started_tx = std::sync::Mutex::new(started_tx);
    let file = root.join("d/f.txt");
    *flush::hooks::BEFORE_FLUSH.lock().unwrap() = Some(Arc::new(move |id| {
        if id == dir_id {
            let renamed = fs::read_to_string(&file).is_ok_and(|s| s == "new");
            let _ = started_tx.lock().unwrap().send(renamed);
            let _ = gate.lock().unwrap().recv();
        }
    }));

    let (done_tx, done) = std::sync::mpsc::channel();
    let request = WriteRequest::new("d/f.txt", "new".into(), MAX_WRITE_BYTES).unwrap();
    spawn_write(ws.clone(), request, ticket(), Cancel::new(), move |r| done_tx.send(r).unwrap());

    // The flush starts after the rename, and the write is not answered while it runs.
    assert!(started.recv().unwrap(), "the directory flush started before the write's rename");
    assert!(done.try_recv().is_err(), "the write was answered before its directory was flushed");
    go.send(()).unwrap();
    done.recv().unwrap().unwrap();
    assert_eq!(fs::read_to_string(root.join("d/f.txt")).unwrap(), "new");
}

#[test]
fn writers_that_arrive_during_a_flush_share_the_next_one_and_none_is_answered_by_an_earlier_one() {
    let _serial = FLUSH_HOOK_SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // Dropped last: a failing assertion first drops the gate's sender, which lets a held flush go.
    let _reset = FlushHookReset;
    let (_t, root, ws) = setup();
    fs::create_dir(root.join("d")).unwrap();
    let dir_id = Identity::of_std(&fs::metadata(root.join("d")).unwrap());
    let ws = Arc::new(ws);
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let _ctx = rt.enter();

    // The first flush of d/ is held until the other writers have all renamed; then flushes run.
    let (started_tx, started) = std::sync::mpsc::channel::<usize>();
    let (go, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let started_tx = std::sync::Mutex::new(started_tx);
    let count = std::sync::atomic::AtomicUsize::new(0);
    *flush::hooks::BEFORE_FLUSH.lock().unwrap() = Some(Arc::new(move |id| {
        if id == dir_id {
            let n = count.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let _ = started_tx.lock().unwrap().send(n);
            if n == 1 {
                let _ = gate.lock().unwrap().recv();
            }
        }
    }));

    let (done_tx, done) = std::sync::mpsc::channel();
    let first = WriteRequest::new("d/first.txt", "1".into(), MAX_WRITE_BYTES).unwrap();
    {
        let done_tx = done_tx.clone();
        spawn_write(ws.clone(), first, ticket(), Cancel::new(), move |r| done_tx.send(("first".to_string(), r)).unwrap());
    }
    assert_eq!(started.recv().unwrap(), 1);
    // Flush 1 is running: these rename meanwhile, so flush 1 may not answer them.
    let n = 8;
    for i in 0..n {
        let request = WriteRequest::new(&format!("d/w{i}.txt"), "x".into(), MAX_WRITE_BYTES).unwrap();
        let done_tx = done_tx.clone();
        spawn_write(ws.clone(), request, ticket(), Cancel::new(), move |r| done_tx.send((format!("w{i}"), r)).unwrap());
    }
    drop(done_tx);
    // Wait until all of them renamed (their files are there), then let flush 1 end.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while (0..n).any(|i| !root.join(format!("d/w{i}.txt")).exists()) {
        assert!(std::time::Instant::now() < deadline, "the writers did not rename");
        std::thread::yield_now();
    }
    assert!(done.try_recv().is_err(), "a write was answered while the flush it waits for was held");
    go.send(()).unwrap();
    let answered: Vec<_> = done.iter().collect();
    assert_eq!(answered.len(), n + 1);
    assert!(answered.iter().all(|(_, r)| r.is_ok()));
    // The first was answered by flush 1, the others by a later one: one flush for all eight
    // (two flushes in all, not nine).
    let flushes: Vec<usize> = started.try_iter().collect();
    assert_eq!(flushes, vec![2], "the eight writers that renamed during flush 1 should share flush 2");
}
