//! Read-only files: a tool replaces a file only where the caller could open it for writing.
//!
//! The writing tools replace a file by renaming a new one over it, which the directory's
//! permission alone allows; the file's own mode must be asked separately. These tests run the
//! tools as an unprivileged user (this binary re-run under uid/gid 65534, when the tests run as
//! root) and as root, whose `open` may write a 0444 file and whose tools may too.

use std::fs;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use workcell_core::fileops::{self, MoveRequest, NameRequest};
use workcell_core::{edit, patch, write, Cancel, Code, Workspace};

const NOBODY: u32 = 65534;
/// Set in the re-run child: the workspace it works in.
const CHILD_ROOT: &str = "WORKCELL_TEST_READ_ONLY_ROOT";

fn set_mode(p: &Path, mode: u32) {
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

/// A workspace with `ro.txt` (0444), `rw.txt` (0644) and `ro-dest.txt` (0444), all owned by
/// `owner`, in a directory `owner` may write.
fn workspace(owner: u32) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    set_mode(tmp.path(), 0o755);
    let root = fs::canonicalize(tmp.path()).unwrap().join("ws");
    fs::create_dir(&root).unwrap();
    for (name, mode) in [("ro.txt", 0o444), ("rw.txt", 0o644), ("ro-dest.txt", 0o444), ("ro-gone.txt", 0o444)] {
        fs::write(root.join(name), format!("{name}\n")).unwrap();
        std::os::unix::fs::chown(root.join(name), Some(owner), Some(owner)).unwrap();
        set_mode(&root.join(name), mode);
    }
    std::os::unix::fs::chown(&root, Some(owner), Some(owner)).unwrap();
    (tmp, root)
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Every writing tool on the read-only files, as the caller the process runs as. Returns the
/// errors of the refused calls (in order: write, edit, patch, move over, and the successful
/// delete and move of a read-only source).
async fn exercise(root: &Path) -> Vec<workcell_core::Result<()>> {
    let ws = Arc::new(Workspace::open(root).unwrap());
    let mut out = Vec::new();
    out.push(write::write(ws.clone(), "ro.txt", "replaced\n", Cancel::new()).await.map(drop));
    out.push(edit::edit(ws.clone(), "ro.txt", &[("ro.txt", "edited")], Cancel::new()).await.map(drop));
    // All or nothing: rw.txt comes first and would change, ro.txt is refused, nothing changes.
    let p = "*** Begin Patch\n*** Update File: rw.txt\n@@\n-rw.txt\n+rw changed\n*** Update File: ro.txt\n@@\n-ro.txt\n+ro changed\n*** End Patch";
    out.push(patch::apply(ws.clone(), p, Cancel::new()).await.map(drop));
    let p = "*** Begin Patch\n*** Update File: ro.txt\n*** Move to: moved-by-patch.txt\n@@\n-ro.txt\n+ro changed\n*** End Patch";
    out.push(patch::apply(ws.clone(), p, Cancel::new()).await.map(drop));
    let mv = MoveRequest::new("rw.txt", "ro-dest.txt", true).unwrap();
    out.push(fileops::move_file(ws.clone(), mv, fileops::move_tickets(), Cancel::new()).await.map(drop));
    // A read-only file may be deleted and moved: names are the directory's.
    let del = NameRequest::new("ro-gone.txt").unwrap();
    out.push(fileops::delete_file(ws.clone(), del, fileops::one_ticket(), Cancel::new()).await.map(drop));
    let mv = MoveRequest::new("ro-dest.txt", "sub/ro-moved.txt", false).unwrap();
    out.push(fileops::move_file(ws.clone(), mv, fileops::move_tickets(), Cancel::new()).await.map(drop));
    out
}

/// The state after `exercise` by an unprivileged caller: every read-only file kept its content,
/// owner and mode; the move and delete of read-only files went through; no temp is left.
fn assert_refused(root: &Path, results: &[workcell_core::Result<()>], owner: u32) {
    for (i, r) in results[..5].iter().enumerate() {
        let e = r.as_ref().expect_err(&format!("call {i} replaced a read-only file"));
        assert_eq!(e.code, Code::IoError, "call {i}: {e:?}");
        assert!(e.message.starts_with("EACCES: ") && e.message.contains("read-only"), "call {i}: {}", e.message);
        assert!(e.hint.as_deref().unwrap().contains("chmod u+w"), "call {i}: {e:?}");
        assert_eq!(e.details.as_ref().unwrap()["errno"], "EACCES");
    }
    results[5].as_ref().unwrap();
    results[6].as_ref().unwrap();
    assert_eq!(fs::read_to_string(root.join("ro.txt")).unwrap(), "ro.txt\n");
    assert_eq!(fs::read_to_string(root.join("rw.txt")).unwrap(), "rw.txt\n", "the patch was not all or nothing");
    assert!(!root.join("moved-by-patch.txt").exists());
    assert_eq!(fs::read_to_string(root.join("sub/ro-moved.txt")).unwrap(), "ro-dest.txt\n");
    assert!(!root.join("ro-gone.txt").exists());
    for name in ["ro.txt", "sub/ro-moved.txt"] {
        let m = fs::metadata(root.join(name)).unwrap();
        assert_eq!((m.mode() & 0o777, m.uid(), m.gid()), (0o444, owner, owner), "{name}");
    }
    let names: Vec<_> = fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert!(!names.iter().any(|n| n.starts_with(write::TEMP_PREFIX)), "{names:?}");
}

#[test]
fn read_only_files_are_not_replaced_by_an_unprivileged_caller() {
    if !is_root() {
        // Already unprivileged: run the tools here.
        let (_tmp, root) = workspace(rustix::process::geteuid().as_raw());
        let rt = tokio::runtime::Runtime::new().unwrap();
        let results = rt.block_on(exercise(&root));
        assert_refused(&root, &results, rustix::process::geteuid().as_raw());
        return;
    }
    // As root: the same calls from this binary re-run as nobody, on files nobody owns.
    let (tmp, root) = workspace(NOBODY);
    let exe = std::env::current_exe().unwrap();
    let probe = std::process::Command::new(&exe).arg("--list").uid(NOBODY).gid(NOBODY).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: uid {NOBODY} cannot run {} (a directory above it is not searchable by others)", exe.display());
        return;
    }
    let child = std::process::Command::new(&exe)
        .args(["--exact", "read_only::as_the_unprivileged_child", "--include-ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD_ROOT, &root)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&child.stdout), String::from_utf8_lossy(&child.stderr));
    assert!(child.status.success() && text.contains("1 passed"), "the unprivileged run failed:\n{text}");
    drop(tmp);
}

/// The body of the unprivileged run (only in the child: it needs the workspace it is given).
#[test]
#[ignore = "run by read_only_files_are_not_replaced_by_an_unprivileged_caller as uid 65534"]
fn as_the_unprivileged_child() {
    let Some(root) = std::env::var_os(CHILD_ROOT) else { return };
    let root = PathBuf::from(root);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let results = rt.block_on(exercise(&root));
    assert_refused(&root, &results, rustix::process::geteuid().as_raw());
}

#[tokio::test]
async fn root_writes_a_read_only_file_as_its_open_would_and_keeps_owner_and_mode() {
    if !is_root() {
        eprintln!("skipped: needs root");
        return;
    }
    let (_tmp, root) = workspace(NOBODY);
    let ws = Arc::new(Workspace::open(&root).unwrap());
    write::write(ws.clone(), "ro.txt", "replaced\n", Cancel::new()).await.unwrap();
    edit::edit(ws.clone(), "ro-dest.txt", &[("ro-dest.txt", "edited")], Cancel::new()).await.unwrap();
    let p = "*** Begin Patch\n*** Update File: ro-gone.txt\n@@\n-ro-gone.txt\n+patched\n*** End Patch";
    patch::apply(ws.clone(), p, Cancel::new()).await.unwrap();
    for (name, content) in [("ro.txt", "replaced\n"), ("ro-dest.txt", "edited\n"), ("ro-gone.txt", "patched\n")] {
        assert_eq!(fs::read_to_string(root.join(name)).unwrap(), content);
        let m = fs::metadata(root.join(name)).unwrap();
        assert_eq!((m.mode() & 0o777, m.uid(), m.gid()), (0o444, NOBODY, NOBODY), "{name}");
    }
}
