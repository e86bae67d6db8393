//! Checkpoints (contract §19): every change listed whoever made it, rewound byte for byte, all
//! or nothing, never through a symlink; the store shared by a second instance and bounded.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use workcell_core::checkpoint::{snapshot, Checkpoints, Options};
use workcell_core::{Cancel, Code, Workspace};

struct Fixture {
    _tmp: tempfile::TempDir,
    parent: PathBuf,
    root: PathBuf,
    store: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let parent = fs::canonicalize(tmp.path()).unwrap();
    let root = parent.join("ROOT");
    fs::create_dir(&root).unwrap();
    let store = parent.join("store");
    Fixture { _tmp: tmp, parent, root, store }
}

impl Fixture {
    fn open_with(&self, f: impl FnOnce(&mut Options)) -> Checkpoints {
        let ws = Arc::new(Workspace::open(&self.root).unwrap());
        let mut o = Options { store_dir: Some(self.store.clone()), ..Options::default() };
        f(&mut o);
        Checkpoints::open(ws, o).unwrap()
    }

    fn open(&self) -> Checkpoints {
        self.open_with(|_| {})
    }

    fn write(&self, rel: &str, content: &str) {
        let p = self.root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }
}

/// Everything beneath `dir` (not following symlinks): kind, content or link text, mode.
fn tree(dir: &Path) -> BTreeMap<String, (String, Vec<u8>, u32)> {
    fn go(base: &Path, dir: &Path, out: &mut BTreeMap<String, (String, Vec<u8>, u32)>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            let m = fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                out.insert(rel, ("link".into(), fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes(), 0));
            } else if m.is_dir() {
                out.insert(rel.clone(), ("dir".into(), Vec::new(), 0));
                go(base, &p, out);
            } else {
                out.insert(rel, ("file".into(), fs::read(&p).unwrap(), m.mode() & 0o777));
            }
        }
    }
    let mut out = BTreeMap::new();
    go(dir, dir, &mut out);
    out
}

fn listed(cp: &Checkpoints, id: &str) -> Vec<(String, String)> {
    let d = cp.diff(id, &Cancel::new()).unwrap();
    d.files.into_iter().map(|f| (f.path, f.action.as_str().to_string())).collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn no_temps(dir: &Path) {
    let left: Vec<_> = tree(dir).into_keys().filter(|k| k.contains(".workcell-tmp-")).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// The usual tree: text files, a script, a link, ignored files, a git directory.
fn populate(fx: &Fixture) {
    fx.write(".gitignore", "*.log\nbuild/\n");
    fx.write("a.txt", "alpha\n");
    fx.write("b.txt", "bravo\n");
    fx.write("c.txt", "charlie\n");
    fx.write("d.sh", "#!/bin/sh\necho d\n");
    fx.write("f.txt", "foxtrot\n");
    fx.write("keep/unchanged.txt", "same\n");
    fx.write("debug.log", "ignored\n");
    fx.write("build/out.bin", "ignored too\n");
    fx.write(".git/config", "[core]\n");
    fs::write(fx.root.join("bin.dat"), [0u8, 1, 2, 3, 255]).unwrap();
    symlink("a.txt", fx.root.join("link")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changes_by_every_means_are_listed_exactly_and_rewound_byte_for_byte() {
    let fx = fixture();
    populate(&fx);
    let cp = fx.open();
    let c = Cancel::new();
    let before = tree(&fx.root);
    let created = cp.create(Some("start"), &c).unwrap();
    assert_eq!(created.files, 9, "{created:?}");
    assert!(created.not_kept.is_empty() && created.dropped.is_empty());
    assert_eq!(listed(&cp, &created.id), vec![]);

    // The tools.
    let ws = cp.workspace().clone();
    workcell_core::write::write(ws.clone(), "a.txt", "alpha changed by the tool\n", Cancel::new()).await.unwrap();
    // A command that writes, deletes, renames and chmods.
    let st = std::process::Command::new("sh")
        .arg("-c")
        .arg("echo new > new.txt && rm b.txt && mv c.txt c2.txt && chmod 755 d.sh")
        .current_dir(&fx.root)
        .status()
        .unwrap();
    assert!(st.success());
    // Plain writes by the test; a file turned into a link; a link retargeted; a binary file.
    fx.write("e.txt", "echo\n");
    fs::remove_file(fx.root.join("f.txt")).unwrap();
    symlink("a.txt", fx.root.join("f.txt")).unwrap();
    fs::remove_file(fx.root.join("link")).unwrap();
    symlink("b.txt", fx.root.join("link")).unwrap();
    fs::write(fx.root.join("bin.dat"), [0u8, 9, 9]).unwrap();
    // Ignored and git files change too: never listed, never touched by a rewind.
    fx.write("debug.log", "ignored, changed\n");
    fx.write(".git/config", "[core]\nchanged\n");
    let unchanged_ino = fs::metadata(fx.root.join("keep/unchanged.txt")).unwrap().ino();

    let want = pairs(&[
        ("a.txt", "modified"),
        ("b.txt", "deleted"),
        ("bin.dat", "modified"),
        ("c.txt", "deleted"),
        ("c2.txt", "added"),
        ("d.sh", "mode"),
        ("e.txt", "added"),
        ("f.txt", "type"),
        ("link", "modified"),
        ("new.txt", "added"),
    ]);
    assert_eq!(listed(&cp, &created.id), want);
    let d = cp.diff(&created.id, &c).unwrap();
    assert!(d.diff.contains("-alpha\n+alpha changed by the tool\n"), "{}", d.diff);
    assert!(d.diff.contains("Binary files a/bin.dat and b/bin.dat differ"), "{}", d.diff);
    assert!(d.diff.contains("old mode 644\nnew mode 755"), "{}", d.diff);
    assert!(d.diff.contains("+symlink -> b.txt"), "{}", d.diff);
    assert_eq!(d.truncated, None);
    // The same state gives the same hash.
    assert_eq!(cp.diff(&created.id, &c).unwrap().hash, d.hash);

    let out = cp.rewind(&created.id, &d.hash, &c).unwrap();
    assert_eq!(out.files.len(), 10);
    let mut expect = before.clone();
    expect.get_mut("debug.log").unwrap().1 = b"ignored, changed\n".to_vec();
    expect.get_mut(".git/config").unwrap().1 = b"[core]\nchanged\n".to_vec();
    assert_eq!(tree(&fx.root), expect);
    assert_eq!(fs::metadata(fx.root.join("keep/unchanged.txt")).unwrap().ino(), unchanged_ino, "an unchanged file was replaced");
    assert_eq!(listed(&cp, &created.id), vec![]);
    no_temps(&fx.root);
}

#[test]
fn a_stale_hash_changes_nothing() {
    let fx = fixture();
    populate(&fx);
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    fx.write("a.txt", "first change\n");
    let shown = cp.diff(&id, &c).unwrap();
    fx.write("b.txt", "a change after the diff was shown\n");
    let now = tree(&fx.root);
    let err = cp.rewind(&id, &shown.hash, &c).unwrap_err();
    assert_eq!(err.code, Code::TargetChanged, "{err:?}");
    assert!(err.hint.as_deref().unwrap().contains("diff"));
    assert_eq!(tree(&fx.root), now);
}

#[test]
fn a_rewind_that_cannot_finish_changes_nothing() {
    let fx = fixture();
    populate(&fx);
    fx.write("x", "x was a file\n");
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    // Changes the rewind would undo first (deepest paths first, then restores in order)...
    fx.write("a.txt", "changed\n");
    fs::remove_file(fx.root.join("b.txt")).unwrap();
    fx.write("zz/new.txt", "added\n");
    // ...and a directory in the way of restoring `x`, holding a file the checkpoint ignores.
    fs::remove_file(fx.root.join("x")).unwrap();
    fx.write("x/new.txt", "added inside\n");
    fx.write("x/debug.log", "ignored, never removed\n");
    let d = cp.diff(&id, &c).unwrap();
    let now = tree(&fx.root);
    let err = cp.rewind(&id, &d.hash, &c).unwrap_err();
    assert_eq!(err.code, Code::FileExists, "{err:?}");
    assert_eq!(err.details.as_ref().unwrap()["restored"], true, "{err:?}");
    assert_eq!(tree(&fx.root), now, "a failed rewind changed the workspace");
    no_temps(&fx.root);
}

#[test]
fn a_cancelled_rewind_changes_nothing() {
    let fx = fixture();
    populate(&fx);
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    fx.write("a.txt", "changed\n");
    let d = cp.diff(&id, &c).unwrap();
    let now = tree(&fx.root);
    let cancelled = Cancel::new();
    cancelled.cancel();
    assert!(cp.rewind(&id, &d.hash, &cancelled).unwrap_err().is_cancelled());
    assert!(cp.create(None, &cancelled).unwrap_err().is_cancelled());
    assert_eq!(tree(&fx.root), now);
    assert_eq!(cp.list(&c).unwrap().len(), 1);
}

#[test]
fn a_symlink_to_outside_is_restored_as_a_link_and_nothing_outside_changes() {
    let fx = fixture();
    let outside = fx.parent.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret.txt"), "secret\n").unwrap();
    let secret = outside.join("secret.txt");
    symlink(&secret, fx.root.join("out")).unwrap();
    symlink("../outside", fx.root.join("outdir")).unwrap();
    fx.write("plain.txt", "plain\n");
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    // The links become a file and a directory; a plain file becomes a link to outside.
    fs::remove_file(fx.root.join("out")).unwrap();
    fx.write("out", "not a link any more\n");
    fs::remove_file(fx.root.join("outdir")).unwrap();
    fx.write("outdir/secret.txt", "planted\n");
    fs::remove_file(fx.root.join("plain.txt")).unwrap();
    symlink(&secret, fx.root.join("plain.txt")).unwrap();
    let d = cp.diff(&id, &c).unwrap();
    cp.rewind(&id, &d.hash, &c).unwrap();
    assert_eq!(fs::read_link(fx.root.join("out")).unwrap(), secret);
    assert_eq!(fs::read_link(fx.root.join("outdir")).unwrap(), Path::new("../outside"));
    assert!(fs::symlink_metadata(fx.root.join("plain.txt")).unwrap().is_file());
    assert_eq!(fs::read_to_string(fx.root.join("plain.txt")).unwrap(), "plain\n");
    assert_eq!(fs::read_to_string(&secret).unwrap(), "secret\n");
    assert_eq!(fs::read_dir(&outside).unwrap().count(), 1, "something was created outside");
    no_temps(&fx.root);
}

#[test]
fn a_second_store_instance_lists_and_rewinds() {
    let fx = fixture();
    populate(&fx);
    let first = fx.open();
    let c = Cancel::new();
    let id = first.create(Some("from the first"), &c).unwrap().id;
    drop(first);
    fx.write("a.txt", "changed later\n");
    let second = fx.open();
    let list = second.list(&c).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].id, id);
    assert_eq!(list[0].label.as_deref(), Some("from the first"));
    let d = second.diff(&id, &c).unwrap();
    assert_eq!(d.files.len(), 1);
    second.rewind(&id, &d.hash, &c).unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("a.txt")).unwrap(), "alpha\n");
}

#[test]
fn max_file_bytes_and_max_bytes_hold() {
    let fx = fixture();
    fx.write("small.txt", "0123456789");
    fx.write("big.txt", "01234567890123456789");
    let cp = fx.open_with(|o| {
        o.max_file_bytes = 10;
        o.max_bytes = 25;
    });
    let c = Cancel::new();
    let first = cp.create(None, &c).unwrap();
    assert_eq!(first.files, 1);
    assert_eq!(first.not_kept.len(), 1);
    assert_eq!((first.not_kept[0].path.as_str(), first.not_kept[0].bytes), ("big.txt", 20));
    // A file not kept is never listed (a rewind cannot restore it, so never removes it).
    fx.write("big.txt", "a different big content");
    assert_eq!(listed(&cp, &first.id), vec![]);
    // 10 bytes stored; two more distinct 10-byte contents pass 25 bytes: the oldest goes.
    fx.write("small.txt", "abcdefghij");
    let second = cp.create(None, &c).unwrap();
    assert!(second.dropped.is_empty(), "{second:?}");
    fx.write("small.txt", "ABCDEFGHIJ");
    let third = cp.create(None, &c).unwrap();
    assert_eq!(third.dropped, vec![first.id.clone()]);
    let ids: Vec<String> = cp.list(&c).unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(ids, vec![second.id.clone(), third.id.clone()]);
    assert_eq!(cp.diff(&first.id, &c).unwrap_err().code, Code::CheckpointNotFound);
    // The second checkpoint's content is still there to rewind to.
    let d = cp.diff(&second.id, &c).unwrap();
    cp.rewind(&second.id, &d.hash, &c).unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("small.txt")).unwrap(), "abcdefghij");
}

#[test]
fn unknown_and_dropped_ids_are_checkpoint_not_found() {
    let fx = fixture();
    fx.write("a.txt", "a");
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    cp.drop_checkpoint(&id, &c).unwrap();
    for bad in [id.as_str(), "../../etc/passwd", "", "0000000000000-00000000"] {
        let err = cp.diff(bad, &c).unwrap_err();
        assert_eq!(err.code, Code::CheckpointNotFound, "{bad:?}");
        assert!(err.hint.as_deref().unwrap().contains("list"), "{err:?}");
        assert_eq!(cp.rewind(bad, "x", &c).unwrap_err().code, Code::CheckpointNotFound);
        assert_eq!(cp.drop_checkpoint(bad, &c).unwrap_err().code, Code::CheckpointNotFound);
    }
    assert!(cp.list(&c).unwrap().is_empty());
}

#[test]
fn a_protected_path_refuses_the_whole_rewind() {
    let fx = fixture();
    fx.write("a.txt", "a\n");
    fx.write("secrets/key", "k1\n");
    let cp = fx.open_with(|o| o.protect = Some(vec!["secrets/**".into()]));
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    fx.write("a.txt", "changed\n");
    fx.write("secrets/key", "k2\n");
    let d = cp.diff(&id, &c).unwrap();
    let now = tree(&fx.root);
    let err = cp.rewind(&id, &d.hash, &c).unwrap_err();
    assert_eq!(err.code, Code::PathProtected, "{err:?}");
    assert_eq!(tree(&fx.root), now);
}

#[test]
fn a_store_inside_the_workspace_is_refused() {
    let fx = fixture();
    let ws = Arc::new(Workspace::open(&fx.root).unwrap());
    let err = Checkpoints::open(ws.clone(), Options { store_dir: Some(fx.root.join("store")), ..Options::default() }).err().unwrap();
    assert_eq!(err.option, "storeDir");
    // Through a symlink too.
    symlink(&fx.root, fx.parent.join("via")).unwrap();
    let err = Checkpoints::open(ws.clone(), Options { store_dir: Some(fx.parent.join("via/s")), ..Options::default() }).err().unwrap();
    assert_eq!(err.option, "storeDir");
    let err = Checkpoints::open(ws, Options { exclude: vec!["ok".into(), "[".into()], ..Options::default() }).err().unwrap();
    assert_eq!(err.option, "exclude[1]");
    assert!(!fx.root.join("store").exists());
}

#[test]
fn the_default_store_is_private_and_outside_the_workspace() {
    let fx = fixture();
    fx.write("a.txt", "a");
    let ws = Arc::new(Workspace::open(&fx.root).unwrap());
    let cp = Checkpoints::open(ws, Options::default()).unwrap();
    let dir = cp.store_dir().to_path_buf();
    assert!(!dir.starts_with(&fx.root));
    assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    assert!(dir.to_string_lossy().contains("workcell/checkpoints/"));
}

/// The file system's time now (as it stamps files), in ns.
fn fs_now(dir: &Path) -> i64 {
    let p = dir.join("clock-probe");
    fs::write(&p, "").unwrap();
    let m = fs::metadata(&p).unwrap();
    fs::remove_file(&p).unwrap();
    m.ctime() * 1_000_000_000 + m.ctime_nsec()
}

#[test]
fn the_stat_cache_reads_only_what_changed_and_never_trusts_a_racy_entry() {
    let fx = fixture();
    for i in 0..50 {
        fx.write(&format!("f{i:02}.txt"), &format!("file {i}\n"));
    }
    let cp = fx.open();
    let c = Cancel::new();
    let (_, s1) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s1.read, 50);
    // Files stamped within the granularity of the cache's walk are read again.
    let (_, s2) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s2.read, 50, "a racily clean file was trusted");
    // Once the files are older than the walk by more than the granularity, none is read.
    let newest = fs::metadata(fx.root.join("f49.txt")).unwrap();
    let stamp = newest.ctime() * 1_000_000_000 + newest.ctime_nsec();
    let deadline = Instant::now() + Duration::from_secs(20);
    while fs_now(&fx.parent) <= stamp + workcell_core::checkpoint::statcache::GRANULARITY_NS {
        assert!(Instant::now() < deadline, "the file system clock does not advance");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, s3) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s3.read, 50, "the cache written by a walk stamped with the files is not trusted");
    let (first, s4) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!((s4.read, s4.cached), (0, 50));
    // Same size, mtime put back: the ctime still moved, and the file is read again.
    let p = fx.root.join("f07.txt");
    let old = fs::metadata(&p).unwrap();
    fs::write(&p, "FILE 7\n").unwrap();
    let times = [
        libc::timespec { tv_sec: old.atime(), tv_nsec: old.atime_nsec() },
        libc::timespec { tv_sec: old.mtime(), tv_nsec: old.mtime_nsec() },
    ];
    let cpath = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    assert_eq!(unsafe { libc::utimensat(libc::AT_FDCWD, cpath.as_ptr(), times.as_ptr(), 0) }, 0);
    assert_eq!(listed(&cp, &first.id), pairs(&[("f07.txt", "modified")]));
    let (_, s5) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s5.read, 1);
}

#[test]
fn the_diff_is_bounded_and_says_how_much_more() {
    let fx = fixture();
    for i in 0..40 {
        fx.write(&format!("f{i:02}.txt"), "");
    }
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    let line = "x".repeat(99) + "\n";
    for i in 0..40 {
        fx.write(&format!("f{i:02}.txt"), &line.repeat(400));
    }
    let d = cp.diff(&id, &c).unwrap();
    assert_eq!(d.files.len(), 40);
    assert_eq!(d.truncated, Some(true));
    assert!(d.diff.len() <= workcell_core::checkpoint::MAX_DIFF_BYTES + 64);
    assert!(d.diff.trim_end().ends_with("more bytes]"), "{}", &d.diff[d.diff.len() - 100..]);
}

/// Waits (on the file system's clock, never a fixed sleep) until every file beneath the root
/// is older than a stat-cache walk starting now by more than the granularity, then makes two
/// checkpoints: after them, the cache vouches for every file.
fn settle(fx: &Fixture, cp: &Checkpoints) {
    let newest = tree(&fx.root)
        .keys()
        .filter_map(|k| fs::symlink_metadata(fx.root.join(k)).ok())
        .map(|m| m.ctime() * 1_000_000_000 + m.ctime_nsec())
        .max()
        .unwrap_or(0);
    let deadline = Instant::now() + Duration::from_secs(20);
    while fs_now(&fx.parent) <= newest + workcell_core::checkpoint::statcache::GRANULARITY_NS {
        assert!(Instant::now() < deadline, "the file system clock does not advance");
        std::thread::sleep(Duration::from_millis(50));
    }
    let c = Cancel::new();
    snapshot::create_measured(cp, None, &c).unwrap();
    let (_, s) = snapshot::create_measured(cp, None, &c).unwrap();
    assert_eq!(s.read, 0, "the cache vouches for every file once they are old enough");
}

#[test]
fn a_stat_cache_cut_short_is_ignored_and_every_file_is_read_again() {
    let fx = fixture();
    for i in 0..30 {
        fx.write(&format!("d/f{i:02}.txt"), &format!("file {i}\n"));
    }
    let cp = fx.open();
    settle(&fx, &cp);
    let cache = fx.store.join("statcache");
    let whole = fs::read(&cache).unwrap();
    let c = Cancel::new();
    // What a crash of the machine can leave of a cache written without waiting for the disk:
    // cut short (at an entry's boundary or inside one), or zeroes.
    for damaged in [whole[..whole.len() / 2].to_vec(), whole[..whole.len() - 9].to_vec(), vec![0u8; whole.len()]] {
        fs::write(&cache, &damaged).unwrap();
        let (created, s) = snapshot::create_measured(&cp, None, &c).unwrap();
        assert_eq!((s.read, s.cached), (30, 0), "a damaged cache was trusted");
        assert_eq!(listed(&cp, &created.id), vec![]);
        // The checkpoint rewrote it whole.
        let (_, s) = snapshot::create_measured(&cp, None, &c).unwrap();
        assert_eq!(s.read, 0);
    }
}

#[test]
fn an_incremental_checkpoint_reads_and_rewrites_only_what_changed() {
    let fx = fixture();
    for i in 0..40 {
        fx.write(&format!("d{}/f{i:02}.txt", i % 4), &format!("file {i}\n"));
    }
    let cp = fx.open();
    settle(&fx, &cp);
    let cache = fx.store.join("statcache");
    let stamp = |p: &Path| {
        let m = fs::metadata(p).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    let before = stamp(&cache);
    let c = Cancel::new();
    // Nothing changed: nothing read, no object written, the cache not rewritten.
    let (_, s) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!((s.read, s.new_bytes), (0, 0));
    assert_eq!(stamp(&cache), before, "an unchanged stat cache was rewritten");
    // One file changed: it alone is read and stored.
    fx.write("d1/f05.txt", "changed\n");
    let (created, s) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!((s.read, s.cached, s.new_bytes), (1, 39, 8));
    assert_eq!(created.files, 40);
    assert_ne!(stamp(&cache), before);
    // The store holds what each checkpoint needs: the first one's diff shows the change.
    let first = cp.list(&c).unwrap()[0].id.clone();
    assert_eq!(listed(&cp, &first), pairs(&[("d1/f05.txt", "modified")]));
}

#[test]
fn a_stat_cache_kept_in_memory_is_not_trusted_after_another_instance_removed_its_contents() {
    let fx = fixture();
    for i in 0..20 {
        fx.write(&format!("d/f{i:02}.txt"), &format!("file {i}\n"));
    }
    let a = fx.open();
    // A's stat cache (kept in memory) vouches for every file.
    settle(&fx, &a);
    // Another instance (another host process on the same store) drops every checkpoint: the
    // contents go, and the cache on disk is pruned.
    let b = fx.open();
    let c = Cancel::new();
    for s in b.list(&c).unwrap() {
        b.drop_checkpoint(&s.id, &c).unwrap();
    }
    let (created, s) = snapshot::create_measured(&a, None, &c).unwrap();
    assert_eq!((s.read, s.cached), (20, 0), "a stat cache naming removed contents was trusted");
    // Every content the checkpoint names is in the store: a rewind restores it.
    fx.write("d/f03.txt", "changed\n");
    let d = a.diff(&created.id, &c).unwrap();
    a.rewind(&created.id, &d.hash, &c).unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("d/f03.txt")).unwrap(), "file 3\n");
}

#[test]
fn a_content_already_stored_is_not_written_again() {
    let fx = fixture();
    fx.write("a.txt", "same\n");
    let cp = fx.open();
    let c = Cancel::new();
    let (_, s) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s.new_bytes, 5);
    // A copy and a file put back to a stored content: read, never stored twice, no temp left.
    fx.write("b.txt", "same\n");
    let (_, s) = snapshot::create_measured(&cp, None, &c).unwrap();
    assert_eq!(s.new_bytes, 0);
    let temps: Vec<_> = fs::read_dir(fx.store.join("tmp")).map(|d| d.flatten().map(|e| e.file_name()).collect()).unwrap_or_default();
    assert!(temps.is_empty(), "left in the store: {temps:?}");
}

#[test]
fn create_diff_and_rewind_report_progress_through_the_cancel_handle() {
    use workcell_core::progress::Progress;
    let fx = fixture();
    for i in 0..300 {
        fx.write(&format!("d{}/f{i:03}.txt", i % 3), &format!("file {i}\n"));
    }
    let cp = fx.open();
    let watched = || {
        let p = Progress::watched();
        (Cancel::new().with_progress(p.clone()), p)
    };
    let (c, p) = watched();
    let id = cp.create(None, &c).unwrap().id;
    let u = p.take().expect("create reported");
    assert_eq!((u.progress, u.message.as_str()), (Some(300), "300 files recorded"));
    fx.write("d0/f000.txt", "changed\n");
    fx.write("new.txt", "new\n");
    let (c, p) = watched();
    let d = cp.diff(&id, &c).unwrap();
    let u = p.take().expect("diff reported");
    assert_eq!((u.progress, u.message.as_str()), (Some(301), "301 files compared"));
    let (c, p) = watched();
    cp.rewind(&id, &d.hash, &c).unwrap();
    let u = p.take().expect("rewind reported");
    assert_eq!(u.progress, Some(301));
    assert_eq!(u.message, "rewinding 2 paths: 2 put back");
    // An unwatched call reports nothing (and costs a branch).
    let c = Cancel::new();
    cp.create(None, &c).unwrap();
    assert!(c.progress().take().is_none());
}

#[test]
fn a_rewind_approval_shows_every_file_whole_behind_a_large_addition() {
    let fx = fixture();
    let auth = "export function allowed(token) {\n  return check(token);\n}\n";
    fx.write("src/auth.js", auth);
    fs::write(fx.root.join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    let cp = fx.open();
    let c = Cancel::new();
    let id = cp.create(None, &c).unwrap().id;
    // Two large additions sort first (their removal is most of the rewind's diff), then a
    // one-line change and a binary change.
    let line = "x".repeat(99) + "\n";
    fx.write("a1.txt", &line.repeat(6000));
    fx.write("a2.txt", &line.repeat(6000));
    fx.write("src/auth.js", &auth.replace("check(token)", "true"));
    fs::write(fx.root.join("blob.bin"), [9u8, 9, 0]).unwrap();
    // diff's own result stays bounded: the small change is past its 1 MiB.
    let bounded = cp.rewind_preview(&id, &c).unwrap();
    assert_eq!(bounded.truncated, Some(true));
    assert!(!bounded.diff.contains("return check(token)"));
    // What a person approves holds all of it, each file whole, each path bound to the hash.
    let p = cp.rewind_approval(&id, &c).unwrap();
    let paths: Vec<&str> = p.diffs.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["a1.txt", "a2.txt", "blob.bin", "src/auth.js"]);
    assert_eq!((p.diffs[0].added, p.diffs[0].removed), (0, 6000));
    assert!(p.diffs[3].diff.contains("-  return true;\n+  return check(token);\n"), "{}", p.diffs[3].diff);
    let sha = |b: &[u8]| workcell_core::hash::sha256_hex(b);
    assert!(
        p.diffs[2].diff.contains(&format!("sha256 {} (3 bytes) becomes sha256 {} (4 bytes)", sha(&[9, 9, 0]), sha(&[0, 1, 2, 3]))),
        "{}",
        p.diffs[2].diff
    );
    assert_eq!(p.diff.as_deref(), Some(p.diffs.iter().map(|d| d.diff.as_str()).collect::<String>().as_str()));
    assert!(p.files.iter().all(|(_, h)| *h == bounded.hash) && p.files.len() == 4);
    assert_eq!(p.summary, bounded.summary);
    // Approved, it applies exactly that change set: the hash binds it.
    cp.rewind(&id, &bounded.hash, &c).unwrap();
    assert_eq!(fs::read_to_string(fx.root.join("src/auth.js")).unwrap(), auth);
    assert!(!fx.root.join("a1.txt").exists());
}
