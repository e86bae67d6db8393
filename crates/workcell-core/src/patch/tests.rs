//! apply_patch on disk: fixtures in the format's documented shapes, all-or-nothing, the guard,
//! locks and readers.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::error::Code;
use crate::write::TEMP_PREFIX;

fn setup() -> (tempfile::TempDir, PathBuf, Arc<Workspace>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
    fs::create_dir(&root).unwrap();
    let ws = Arc::new(Workspace::open(&root).unwrap());
    (tmp, root, ws)
}

fn temps(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.file_name().unwrap().to_string_lossy().starts_with(TEMP_PREFIX) {
            out.push(p.display().to_string());
        }
        if fs::symlink_metadata(&p).unwrap().is_dir() {
            out.extend(temps(&p));
        }
    }
    out
}

fn read(root: &Path, p: &str) -> String {
    fs::read_to_string(root.join(p)).unwrap()
}

/// Resolve and run on this thread (thread-local hooks apply), without the locks.
fn run_here(ws: &Arc<Workspace>, patch: &str, guard: Option<Arc<Guard>>) -> Result<PatchOutput> {
    let req = PatchRequest::new(patch, vec![], crate::write::MAX_WRITE_BYTES)?.with_guard(guard);
    let cancel = Cancel::new();
    let resolution = plan::resolve(ws, &req, &cancel)?;
    plan::run(ws, &req, resolution, &cancel)
}

fn guard() -> Option<Arc<Guard>> {
    Some(Arc::new(Guard::default_guard()))
}

#[tokio::test]
async fn fixtures_add_delete_update_move_and_end_of_file() {
    let (_t, root, ws) = setup();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/greet.py"), "import sys\n\ndef greet(name):\n    print(\"hi\", name)\n\nif __name__ == \"__main__\":\n    greet(sys.argv[1])\n").unwrap();
    fs::write(root.join("src/util.py"), "def helper():\n    return 1\n\n\ndef other():\n    return 2\n").unwrap();
    fs::write(root.join("OLD_NOTES.txt"), "obsolete\n").unwrap();
    fs::write(root.join("config.ini"), "[main]\nlevel = 1\nname = demo\n").unwrap();
    let patch = "*** Begin Patch
*** Add File: docs/usage.md
+# Usage
+
+Run `python src/greet.py NAME`.
*** Delete File: OLD_NOTES.txt
*** Update File: src/greet.py
@@ def greet(name):
-    print(\"hi\", name)
+    print(f\"Hello, {name}!\")
*** Update File: src/util.py
*** Move to: src/helpers.py
@@
 def helper():
-    return 1
+    return 10
*** Update File: config.ini
 [main]
-level = 1
+level = 2
@@
-name = demo
+name = production
*** End of File
*** End Patch
";
    let out = apply(ws.clone(), patch, Cancel::new()).await.unwrap();
    assert_eq!(
        out.files,
        vec![
            FileResult { path: "docs/usage.md".into(), action: "add", moved_to: None, bytes: Some(read(&root, "docs/usage.md").len()) },
            FileResult { path: "OLD_NOTES.txt".into(), action: "delete", moved_to: None, bytes: None },
            FileResult { path: "src/greet.py".into(), action: "update", moved_to: None, bytes: Some(read(&root, "src/greet.py").len()) },
            FileResult { path: "src/util.py".into(), action: "update", moved_to: Some("src/helpers.py".into()), bytes: Some(read(&root, "src/helpers.py").len()) },
            FileResult { path: "config.ini".into(), action: "update", moved_to: None, bytes: Some(read(&root, "config.ini").len()) },
        ]
    );
    assert_eq!(read(&root, "docs/usage.md"), "# Usage\n\nRun `python src/greet.py NAME`.\n");
    assert!(!root.join("OLD_NOTES.txt").exists());
    assert!(read(&root, "src/greet.py").contains("    print(f\"Hello, {name}!\")\n\nif __name__"));
    assert!(!root.join("src/util.py").exists());
    assert_eq!(read(&root, "src/helpers.py"), "def helper():\n    return 10\n\n\ndef other():\n    return 2\n");
    assert_eq!(read(&root, "config.ini"), "[main]\nlevel = 2\nname = production\n");
    assert_eq!(out.note, None);
    assert!(out.diff.contains("--- /dev/null\n+++ b/docs/usage.md\n@@ -0,0 +1,3 @@\n+# Usage\n"), "{}", out.diff);
    assert!(out.diff.contains("--- a/OLD_NOTES.txt\n+++ /dev/null\n"));
    assert!(out.diff.contains("--- a/src/util.py\n+++ b/src/helpers.py\n"));
    assert!(out.diff.contains("-    print(\"hi\", name)\n+    print(f\"Hello, {name}!\")\n"));
    assert!(temps(&root).is_empty());
}

#[tokio::test]
async fn tolerant_passes_apply_and_say_so_in_the_note() {
    let (_t, root, ws) = setup();
    // Trailing spaces and tabs in the file; typographic punctuation and a no-break space.
    fs::write(root.join("a.js"), "function f() {  \n\treturn \u{201c}done\u{201d};\u{00a0}\n}\n").unwrap();
    fs::write(root.join("b.md"), "Title \u{2014} draft\n").unwrap();
    let patch = "*** Begin Patch
*** Update File: a.js
@@ function f() {
-    return \"done\";
+    return \"finished\";
*** Update File: b.md
@@
-Title - draft   
+Title - final
*** End Patch";
    let out = apply(ws.clone(), patch, Cancel::new()).await.unwrap();
    assert_eq!(read(&root, "a.js"), "function f() {  \n    return \"finished\";\n}\n");
    assert_eq!(read(&root, "b.md"), "Title - final\n");
    let note = out.note.unwrap();
    assert!(note.contains("a.js: hunks matched ignoring whitespace and with Unicode punctuation"), "{note}");
    assert!(note.contains("b.md: hunks matched ignoring whitespace and with Unicode punctuation"), "{note}");
    // Only trailing whitespace: the note says that pass.
    fs::write(root.join("c.txt"), "x = 1   \ny = 2\n").unwrap();
    let out = apply(ws.clone(), "*** Begin Patch\n*** Update File: c.txt\n@@\n x = 1\n-y = 2\n+y = 3\n*** End Patch", Cancel::new()).await.unwrap();
    assert_eq!(out.note.as_deref(), Some("c.txt: hunks matched ignoring trailing whitespace"));
    assert_eq!(read(&root, "c.txt"), "x = 1   \ny = 3\n");
}

#[tokio::test]
async fn patch_whose_third_file_fails_leaves_files_one_and_two_byte_identical() {
    let (_t, root, ws) = setup();
    fs::write(root.join("one.txt"), "one\r\nkeep\r\n").unwrap();
    fs::write(root.join("two.txt"), b"two\nbytes \xe2\x80\x94 exact\n").unwrap();
    fs::write(root.join("three.txt"), "three\n").unwrap();
    let before: Vec<Vec<u8>> = ["one.txt", "two.txt", "three.txt"].iter().map(|p| fs::read(root.join(p)).unwrap()).collect();
    let patch = "*** Begin Patch
*** Update File: one.txt
-one
+ONE
*** Update File: two.txt
-two
+TWO
*** Add File: new/dir/four.txt
+four
*** Update File: three.txt
-this line is not in the file
+x
*** End Patch";
    let err = apply(ws.clone(), patch, Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::EditNotFound);
    assert!(err.message.contains("three.txt"), "{}", err.message);
    assert!(err.hint.as_ref().unwrap().contains("\"three\""), "{:?}", err.hint);
    let after: Vec<Vec<u8>> = ["one.txt", "two.txt", "three.txt"].iter().map(|p| fs::read(root.join(p)).unwrap()).collect();
    assert_eq!(before, after);
    assert!(!root.join("new").exists(), "a directory created for the patch was left");
    assert!(temps(&root).is_empty());
}

#[test]
fn an_install_failure_puts_back_the_files_already_installed() {
    let (_t, root, ws) = setup();
    fs::write(root.join("one.txt"), "one\n").unwrap();
    fs::write(root.join("two.txt"), "two\n").unwrap();
    fs::write(root.join("gone.txt"), "gone\n").unwrap();
    fs::write(root.join("three.txt"), "three\n").unwrap();
    let ino = |p: &str| std::os::unix::fs::MetadataExt::ino(&fs::metadata(root.join(p)).unwrap());
    let inodes: Vec<u64> = ["one.txt", "two.txt", "gone.txt", "three.txt"].iter().map(|p| ino(p)).collect();
    let patch = "*** Begin Patch
*** Update File: one.txt
-one
+ONE
*** Add File: added.txt
+added
*** Delete File: gone.txt
*** Update File: two.txt
*** Move to: moved/two.txt
-two
+TWO
*** Update File: three.txt
-three
+THREE
*** End Patch";
    // Steps: 0 one, 1 added, 2 gone, 3 moved/two (write), 4 two (remove), 5 three.
    for failing in 0..6 {
        plan::hooks::FAIL_STEP.with(|h| *h.borrow_mut() = Some((failing, libc::ENOSPC)));
        let err = run_here(&ws, patch, None).unwrap_err();
        plan::hooks::FAIL_STEP.with(|h| *h.borrow_mut() = None);
        assert_eq!(err.code, Code::IoError, "step {failing}");
        assert!(err.message.starts_with("ENOSPC"));
        assert_eq!(err.details.as_ref().unwrap()["restored"], true, "step {failing}: {err:?}");
        assert_eq!(read(&root, "one.txt"), "one\n", "step {failing}");
        assert_eq!(read(&root, "two.txt"), "two\n", "step {failing}");
        assert_eq!(read(&root, "gone.txt"), "gone\n", "step {failing}");
        assert_eq!(read(&root, "three.txt"), "three\n", "step {failing}");
        assert!(!root.join("added.txt").exists(), "step {failing}");
        assert!(!root.join("moved").exists(), "step {failing}");
        // The very same files (inodes) are back, not copies.
        let now: Vec<u64> = ["one.txt", "two.txt", "gone.txt", "three.txt"].iter().map(|p| ino(p)).collect();
        assert_eq!(now, inodes, "step {failing}");
        assert!(temps(&root).is_empty(), "step {failing}: {:?}", temps(&root));
    }
    // Without a failure the same patch applies.
    run_here(&ws, patch, None).unwrap();
    assert_eq!(read(&root, "moved/two.txt"), "TWO\n");
    assert_eq!(read(&root, "three.txt"), "THREE\n");
    assert!(!root.join("gone.txt").exists());
    assert!(temps(&root).is_empty());
}

#[test]
fn without_hard_links_the_old_content_is_kept_as_a_staged_copy_and_put_back() {
    let (_t, root, ws) = setup();
    fs::write(root.join("one.txt"), "one\r\n").unwrap();
    fs::write(root.join("two.txt"), "two\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: one.txt\n-one\n+ONE\n*** Update File: two.txt\n-two\n+TWO\n*** End Patch";
    plan::hooks::LINK_ERRNO.with(|h| *h.borrow_mut() = Some(libc::EPERM));
    plan::hooks::FAIL_STEP.with(|h| *h.borrow_mut() = Some((1, libc::EIO)));
    let err = run_here(&ws, patch, None).unwrap_err();
    plan::hooks::FAIL_STEP.with(|h| *h.borrow_mut() = None);
    assert_eq!(err.details.as_ref().unwrap()["restored"], true, "{err:?}");
    assert_eq!(fs::read(root.join("one.txt")).unwrap(), b"one\r\n");
    assert_eq!(read(&root, "two.txt"), "two\n");
    assert!(temps(&root).is_empty(), "{:?}", temps(&root));
    run_here(&ws, patch, None).unwrap();
    plan::hooks::LINK_ERRNO.with(|h| *h.borrow_mut() = None);
    assert_eq!(fs::read(root.join("one.txt")).unwrap(), b"ONE\r\n");
    assert!(temps(&root).is_empty());
}

#[tokio::test]
async fn a_patch_touching_git_config_is_refused_whole() {
    let (_t, root, ws) = setup();
    fs::create_dir(root.join(".git")).unwrap();
    fs::write(root.join(".git/config"), "[core]\n").unwrap();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink(".git", root.join("g")).unwrap();
    for target in [".git/config", "g/config", ".GIT/config"] {
        let patch = format!(
            "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: b.txt\n+b\n*** Update File: {target}\n-[core]\n+[core]\n+\thooksPath = /tmp/evil\n*** End Patch"
        );
        let req = PatchRequest::new(&patch, vec![], crate::write::MAX_WRITE_BYTES).unwrap().with_guard(guard());
        let tickets = tickets_for(&req);
        let err = apply_patch(ws.clone(), req, tickets, Cancel::new()).await.unwrap_err();
        assert_eq!(err.code, Code::PathProtected, "{target}: {err:?}");
        assert_eq!(read(&root, "a.txt"), "a\n");
        assert!(!root.join("b.txt").exists());
        assert_eq!(read(&root, ".git/config"), "[core]\n");
    }
    // A move into .git is refused too.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n*** Move to: .git/hooks/pre-commit\n*** End Patch";
    let req = PatchRequest::new(patch, vec![], crate::write::MAX_WRITE_BYTES).unwrap().with_guard(guard());
    let tickets = tickets_for(&req);
    assert_eq!(apply_patch(ws.clone(), req, tickets, Cancel::new()).await.unwrap_err().code, Code::PathProtected);
    assert!(!root.join(".git/hooks").exists());
    // With the guard off the same patch goes through (the refusal above is the guard's).
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: .git/config\n-[core]\n+[core]\n+\thooksPath = /tmp/evil\n*** End Patch";
    apply(ws.clone(), patch, Cancel::new()).await.unwrap();
    assert!(read(&root, ".git/config").contains("hooksPath"));
    assert!(temps(&root).is_empty());
}

#[tokio::test]
async fn add_of_an_existing_file_is_file_exists_and_hashes_are_checked() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    fs::write(root.join("b.txt"), "b\n").unwrap();
    let err = apply(ws.clone(), "*** Begin Patch\n*** Update File: b.txt\n-b\n+B\n*** Add File: a.txt\n+new\n*** End Patch", Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::FileExists);
    assert_eq!(read(&root, "a.txt"), "a\n");
    assert_eq!(read(&root, "b.txt"), "b\n");
    // A Move onto an existing file too.
    let err = apply(ws.clone(), "*** Begin Patch\n*** Update File: b.txt\n*** Move to: a.txt\n*** End Patch", Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::FileExists);
    // expectedHashes: a stale hash refuses the whole patch; the right ones apply it.
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: b.txt\n-b\n+B\n*** Add File: c.txt\n+c\n*** End Patch";
    let stale = vec![("a.txt".to_string(), crate::hash::sha256_hex(b"a\n")), ("b.txt".to_string(), crate::hash::sha256_hex(b"old\n"))];
    let req = PatchRequest::new(patch, stale, crate::write::MAX_WRITE_BYTES).unwrap();
    let t = tickets_for(&req);
    let err = apply_patch(ws.clone(), req, t, Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(read(&root, "a.txt"), "a\n");
    assert!(!root.join("c.txt").exists());
    let good = vec![
        ("./a.txt".to_string(), crate::hash::sha256_hex(b"a\n")),
        ("b.txt".to_string(), crate::hash::sha256_hex(b"b\n")),
        ("c.txt".to_string(), "absent".to_string()),
    ];
    let req = PatchRequest::new(patch, good, crate::write::MAX_WRITE_BYTES).unwrap();
    let t = tickets_for(&req);
    apply_patch(ws.clone(), req, t, Cancel::new()).await.unwrap();
    assert_eq!(read(&root, "a.txt"), "A\n");
    // A hash for a path the patch does not touch is an argument error.
    let err = PatchRequest::new(patch, vec![("zzz".into(), "absent".into())], 65_536).unwrap_err();
    assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    assert!(temps(&root).is_empty());
}

#[tokio::test]
async fn two_names_of_one_file_and_other_refusals_change_nothing() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    let err = apply(ws.clone(), "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Update File: link\n-a\n+B\n*** End Patch", Cancel::new()).await.unwrap_err();
    assert_eq!(err.reason(), Some("PATCH_INVALID"));
    assert_eq!(read(&root, "a.txt"), "a\n");
    // Missing file, directory, binary, too large a result.
    assert_eq!(apply(ws.clone(), "*** Begin Patch\n*** Delete File: nope\n*** End Patch", Cancel::new()).await.unwrap_err().code, Code::FileNotFound);
    fs::create_dir(root.join("dir")).unwrap();
    assert_eq!(apply(ws.clone(), "*** Begin Patch\n*** Delete File: dir\n*** End Patch", Cancel::new()).await.unwrap_err().code, Code::NotARegularFile);
    fs::write(root.join("bin"), b"a\xff\n").unwrap();
    assert_eq!(apply(ws.clone(), "*** Begin Patch\n*** Update File: bin\n-a\n*** End Patch", Cancel::new()).await.unwrap_err().code, Code::InvalidUtf8);
    fs::write(root.join("full"), format!("x\n{}", "y".repeat(65_530))).unwrap();
    let err = apply(ws.clone(), "*** Begin Patch\n*** Update File: full\n-x\n+xxxxxxxxxx\n*** End Patch", Cancel::new()).await.unwrap_err();
    assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
    assert_eq!(apply(ws.clone(), "*** Begin Patch\n*** Update File: missing/deep/f\n-a\n*** End Patch", Cancel::new()).await.unwrap_err().code, Code::FileNotFound);
    assert!(!root.join("missing").exists());
    // Deleting a symlink removes the link, not its target.
    apply(ws.clone(), "*** Begin Patch\n*** Delete File: link\n*** End Patch", Cancel::new()).await.unwrap();
    assert_eq!(read(&root, "a.txt"), "a\n");
    assert!(fs::symlink_metadata(root.join("link")).is_err());
    assert!(temps(&root).is_empty());
}

#[test]
fn cancellation_before_the_install_changes_nothing() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "a\n").unwrap();
    let patch = "*** Begin Patch\n*** Update File: a.txt\n-a\n+A\n*** Add File: b/c.txt\n+c\n*** End Patch";
    let req = PatchRequest::new(patch, vec![], crate::write::MAX_WRITE_BYTES).unwrap();
    let cancel = Cancel::new();
    let resolution = plan::resolve(&ws, &req, &cancel).unwrap();
    let c2 = cancel.clone();
    plan::hooks::STAGED.with(|h| *h.borrow_mut() = Some(Box::new(move || c2.cancel())));
    let err = plan::run(&ws, &req, resolution, &cancel).unwrap_err();
    plan::hooks::STAGED.with(|h| *h.borrow_mut() = None);
    assert!(err.is_cancelled());
    assert_eq!(read(&root, "a.txt"), "a\n");
    assert!(!root.join("b").exists());
    assert!(temps(&root).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patches_touching_the_same_files_in_opposite_orders_never_deadlock() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "0\n").unwrap();
    fs::write(root.join("b.txt"), "0\n").unwrap();
    let mut tasks = Vec::new();
    for i in 0..40 {
        let (first, second) = if i % 2 == 0 { ("a.txt", "b.txt") } else { ("b.txt", "a.txt") };
        // Each patch appends a line to both files (a pure addition at the end).
        let patch = format!("*** Begin Patch\n*** Update File: {first}\n@@\n+{i}\n*** Update File: {second}\n@@\n+{i}\n*** End Patch");
        let req = PatchRequest::new(&patch, vec![], crate::write::MAX_WRITE_BYTES).unwrap();
        let tickets = tickets_for(&req);
        tasks.push(tokio::spawn(apply_patch(ws.clone(), req, tickets, Cancel::new())));
    }
    let all = async {
        for t in tasks {
            t.await.unwrap().unwrap();
        }
    };
    // A hang detector, not a timing assertion.
    tokio::time::timeout(std::time::Duration::from_secs(120), all).await.expect("patches deadlocked");
    // Call order holds on both files.
    let want: String = std::iter::once("0\n".to_string()).chain((0..40).map(|i| format!("{i}\n"))).collect();
    assert_eq!(read(&root, "a.txt"), want);
    assert_eq!(read(&root, "b.txt"), want);
    assert!(temps(&root).is_empty());
}

#[test]
fn fifty_patches_while_a_reader_loops_never_show_a_half_written_file() {
    let (_t, root, ws) = setup();
    let files = ["a.txt", "sub/b.txt", "c.txt"];
    let version = |v: usize, f: &str| format!("{f} version {v}\n{}", format!("{v} padding line\n").repeat(800));
    fs::create_dir(root.join("sub")).unwrap();
    for f in files {
        fs::write(root.join(f), version(0, f)).unwrap();
    }
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (root, stop) = (root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for f in files {
                    let text = fs::read_to_string(root.join(f)).expect("a file was missing while a patch ran");
                    let first = text.lines().next().unwrap().to_string();
                    let v: usize = first.rsplit(' ').next().unwrap().parse().unwrap();
                    assert_eq!(text, version(v, f), "a half-written {f}");
                    reads += 1;
                }
            }
            reads
        })
    };
    for v in 1..=50 {
        let mut patch = String::from("*** Begin Patch\n");
        for f in files {
            patch.push_str(&format!("*** Update File: {f}\n@@\n-{f} version {}\n+{f} version {v}\n", v - 1));
            for _ in 0..800 {
                patch.push_str(&format!("-{} padding line\n+{v} padding line\n", v - 1));
            }
        }
        patch.push_str("*** End Patch\n");
        run_here(&ws, &patch, None).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 0);
    for f in files {
        assert_eq!(read(&root, f), version(50, f));
    }
    assert!(temps(&root).is_empty());
}

#[test]
fn a_patch_sweeps_what_an_exited_host_left_in_the_directories_it_stages_in() {
    let (_t, root, ws) = setup();
    fs::create_dir(root.join("a")).unwrap();
    fs::write(root.join("a/one.txt"), "one\n").unwrap();
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    let tag = crate::temp_name::this_process().unwrap().tag;
    let stale = |i: u32| format!("{TEMP_PREFIX}{tag:016x}-{pid}-{i}-00ff");
    // What a host killed mid-install leaves: a staged new content, a kept old one.
    fs::write(root.join("a").join(stale(1)), "ONE\n").unwrap();
    fs::hard_link(root.join("a/one.txt"), root.join("a").join(stale(2))).unwrap();
    fs::write(root.join("b.txt"), "b\n").unwrap();
    fs::write(root.join(stale(3)), "x").unwrap();
    run_here(&ws, "*** Begin Patch\n*** Update File: a/one.txt\n-one\n+uno\n*** End Patch", None).unwrap();
    assert_eq!(read(&root, "a/one.txt"), "uno\n");
    // The root was not staged in: its temp waits for a call there.
    assert_eq!(temps(&root), vec![root.join(stale(3)).display().to_string()]);
    run_here(&ws, "*** Begin Patch\n*** Delete File: b.txt\n*** End Patch", None).unwrap();
    assert!(temps(&root).is_empty(), "{:?}", temps(&root));
}

#[tokio::test]
async fn an_absolute_path_beneath_the_canonical_root_is_accepted_and_reported_relative() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "one\n").unwrap();
    let r = root.display();
    let patch = format!("*** Begin Patch\n*** Update File: {r}/a.txt\n*** Move to: {r}/sub/b.txt\n@@\n-one\n+two\n*** Add File: {r}/c.txt\n+c\n*** End Patch\n");
    let out = apply(ws.clone(), &patch, Cancel::new()).await.unwrap();
    assert_eq!(out.files[0].path, "a.txt");
    assert_eq!(out.files[0].moved_to.as_deref(), Some("sub/b.txt"));
    assert_eq!(out.files[1].path, "c.txt");
    assert_eq!(read(&root, "sub/b.txt"), "two\n");
    assert!(out.diff.contains("--- a/a.txt\n+++ b/sub/b.txt\n"), "{}", out.diff);
    // expectedHashes may name it absolutely as well.
    let req = PatchRequest::new_in(Some(r.to_string().as_str()), &format!("*** Begin Patch\n*** Delete File: {r}/c.txt\n*** End Patch"), vec![(format!("{r}/c.txt"), "absent".into())], 65_536);
    assert!(req.is_ok(), "{req:?}");
}

#[tokio::test]
async fn an_absolute_path_elsewhere_is_refused_and_nothing_changes() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "one\n").unwrap();
    let parent = root.parent().unwrap().display().to_string();
    let r = root.display();
    for outside in [format!("{parent}/escaped.txt"), format!("{r}x/escaped.txt"), format!("{r}/../escaped.txt"), "/tmp/escaped.txt".to_string()] {
        let patch = format!("*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+two\n*** Add File: {outside}\n+x\n*** End Patch\n");
        let err = apply(ws.clone(), &patch, Cancel::new()).await.unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_RELATIVE_PATH"), "{outside}: {err:?}");
        assert_eq!(err.details.as_ref().unwrap()["line"], 6);
        assert_eq!(read(&root, "a.txt"), "one\n");
    }
    assert!(!root.parent().unwrap().join("escaped.txt").exists());
}
