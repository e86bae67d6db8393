//! write_file through its public async API, on a real tokio runtime.

use std::fs;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use workcell_core::write::{self, WriteRequest, MAX_WRITE_BYTES, TEMP_PREFIX};
use workcell_core::{Cancel, Code, Workspace};

struct Fixture {
    _tmp: tempfile::TempDir,
    parent: PathBuf,
    root: PathBuf,
    ws: Arc<Workspace>,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let parent = fs::canonicalize(tmp.path()).unwrap();
    let root = parent.join("ROOT");
    fs::create_dir(&root).unwrap();
    let ws = Arc::new(Workspace::open(&root).unwrap());
    Fixture { _tmp: tmp, parent, root, ws }
}

/// Every entry beneath `dir` (not following symlinks), as relative paths.
fn tree(dir: &Path) -> Vec<String> {
    fn go(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            out.push(p.strip_prefix(base).unwrap().display().to_string());
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                go(base, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    go(dir, dir, &mut out);
    out.sort();
    out
}

fn no_temps(dir: &Path) {
    let left: Vec<_> = tree(dir).into_iter().filter(|p| p.rsplit('/').next().unwrap().starts_with(TEMP_PREFIX)).collect();
    assert!(left.is_empty(), "temporary files left behind: {left:?}");
}

async fn write(f: &Fixture, path: &str, content: &str) -> workcell_core::Result<write::WriteOutput> {
    write::write(f.ws.clone(), path, content, Cancel::new()).await
}

#[tokio::test]
async fn creates_then_replaces() {
    let f = fixture();
    let out = write(&f, "./src//lib.rs", "fn main() {}\n").await.unwrap();
    assert_eq!((out.path.as_str(), out.bytes, out.created), ("src/lib.rs", 13, true));
    let out = write(&f, "src/lib.rs", "😀").await.unwrap();
    assert_eq!((out.bytes, out.created), (4, false));
    assert_eq!(fs::read_to_string(f.root.join("src/lib.rs")).unwrap(), "😀");
    no_temps(&f.parent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_in_call_order_to_one_target() {
    let f = fixture();
    // Tickets are taken here, in order; the tasks then race on the runtime.
    let mut handles = Vec::new();
    for i in 0..200 {
        let request = WriteRequest::new("t.txt", format!("version {i}"), MAX_WRITE_BYTES).unwrap();
        let ticket = write::ticket();
        let ws = f.ws.clone();
        handles.push(tokio::spawn(write::write_file(ws, request, ticket, Cancel::new())));
    }
    for h in handles {
        h.await.unwrap().unwrap();
    }
    assert_eq!(fs::read_to_string(f.root.join("t.txt")).unwrap(), "version 199");
    no_temps(&f.parent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_spellings_share_one_queue() {
    let f = fixture();
    fs::create_dir(f.root.join("d")).unwrap();
    fs::write(f.root.join("d/t.txt"), "start").unwrap();
    symlink("d/t.txt", f.root.join("link")).unwrap();
    symlink("d", f.root.join("dlink")).unwrap();
    let spellings = ["d/t.txt", "link", "dlink/t.txt", "./d//t.txt"];
    for round in 0..5 {
        let mut handles = Vec::new();
        for i in 0..40 {
            let request = WriteRequest::new(spellings[i % 4], format!("{round}:{i}"), MAX_WRITE_BYTES).unwrap();
            let ticket = write::ticket();
            handles.push(tokio::spawn(write::write_file(f.ws.clone(), request, ticket, Cancel::new())));
        }
        for h in handles {
            h.await.unwrap().unwrap();
        }
        assert_eq!(fs::read_to_string(f.root.join("d/t.txt")).unwrap(), format!("{round}:39"));
    }
    assert!(fs::symlink_metadata(f.root.join("link")).unwrap().file_type().is_symlink());
    no_temps(&f.parent);
}

#[tokio::test]
async fn a_fifo_socket_or_directory_is_not_a_regular_file_without_blocking() {
    let f = fixture();
    nix::unistd::mkfifo(&f.root.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
    let _listener = std::os::unix::net::UnixListener::bind(f.root.join("sock")).unwrap();
    fs::create_dir(f.root.join("dir")).unwrap();
    symlink("fifo", f.root.join("to-fifo")).unwrap();
    for (path, kind) in [("fifo", "fifo"), ("sock", "socket"), ("dir", "directory"), ("to-fifo", "fifo")] {
        let err = tokio::time::timeout(Duration::from_secs(5), write(&f, path, "x")).await.expect("blocked").unwrap_err();
        assert_eq!(err.code, Code::NotARegularFile, "{path}");
        assert_eq!(err.details.unwrap()["type"], kind);
    }
    assert!(fs::symlink_metadata(f.root.join("fifo")).unwrap().file_type().is_fifo_like());
    no_temps(&f.parent);
}

trait FifoLike {
    fn is_fifo_like(&self) -> bool;
}
impl FifoLike for fs::FileType {
    fn is_fifo_like(&self) -> bool {
        use std::os::unix::fs::FileTypeExt as _;
        self.is_fifo()
    }
}

#[tokio::test]
async fn a_final_symlink_inside_is_written_through_and_stays_a_link() {
    let f = fixture();
    fs::create_dir_all(f.root.join("a/b")).unwrap();
    fs::write(f.root.join("a/b/real.txt"), "old").unwrap();
    symlink("b/real.txt", f.root.join("a/link")).unwrap();
    symlink("a/link", f.root.join("chain")).unwrap();
    symlink("a/b/../b/new.txt", f.root.join("dangling")).unwrap();
    let out = write(&f, "chain", "new").await.unwrap();
    assert_eq!((out.path.as_str(), out.created), ("chain", false));
    assert_eq!(fs::read_to_string(f.root.join("a/b/real.txt")).unwrap(), "new");
    assert!(fs::symlink_metadata(f.root.join("chain")).unwrap().file_type().is_symlink());
    assert!(fs::symlink_metadata(f.root.join("a/link")).unwrap().file_type().is_symlink());
    // A dangling link inside: the file it names is created.
    assert!(write(&f, "dangling", "made").await.unwrap().created);
    assert_eq!(fs::read_to_string(f.root.join("a/b/new.txt")).unwrap(), "made");
    no_temps(&f.parent);
}

#[tokio::test]
async fn escaping_symlinks_are_refused_and_nothing_outside_changes() {
    let f = fixture();
    fs::write(f.parent.join("secret.txt"), "outside").unwrap();
    fs::create_dir(f.parent.join("OUT")).unwrap();
    symlink("../secret.txt", f.root.join("up")).unwrap();
    symlink(f.parent.join("secret.txt"), f.root.join("abs")).unwrap();
    symlink(f.root.join("inside.txt"), f.root.join("abs-inside")).unwrap();
    symlink("../OUT", f.root.join("outdir")).unwrap();
    symlink("../missing", f.root.join("updangling")).unwrap();
    symlink("../", f.root.join("updir")).unwrap();
    let before = tree(&f.parent);
    for path in ["up", "abs", "abs-inside", "outdir/x", "outdir/new/deeper/x", "updangling", "updir"] {
        let err = write(&f, path, "pwned").await.unwrap_err();
        assert_eq!(err.code, Code::PathEscapesWorkspace, "{path}: {err}");
    }
    assert_eq!(tree(&f.parent), before);
    assert_eq!(fs::read_to_string(f.parent.join("secret.txt")).unwrap(), "outside");
}

#[tokio::test]
async fn a_symlink_loop_is_symlink_loop() {
    let f = fixture();
    symlink("b", f.root.join("a")).unwrap();
    symlink("a", f.root.join("b")).unwrap();
    symlink("self", f.root.join("self")).unwrap();
    for p in ["a", "self"] {
        assert_eq!(write(&f, p, "x").await.unwrap_err().code, Code::SymlinkLoop);
    }
}

#[tokio::test]
async fn a_final_symlink_chain_of_40_hops_is_followed_and_41_is_symlink_loop() {
    let f = fixture();
    fs::create_dir(f.root.join("c")).unwrap();
    // c/l0 -> l1 -> ... -> l40 -> file: 41 hops from l0, 40 from l1.
    for i in 0..41 {
        let next = if i == 40 { "file".to_string() } else { format!("l{}", i + 1) };
        symlink(&next, f.root.join(format!("c/l{i}"))).unwrap();
    }
    write(&f, "c/l1", "forty").await.unwrap();
    assert_eq!(fs::read_to_string(f.root.join("c/file")).unwrap(), "forty");
    assert_eq!(write(&f, "c/l0", "forty-one").await.unwrap_err().code, Code::SymlinkLoop);
    assert_eq!(fs::read_to_string(f.root.join("c/file")).unwrap(), "forty");
}

#[tokio::test]
async fn missing_parents_are_created_but_not_through_a_file_or_dangling_link() {
    let f = fixture();
    write(&f, "x/y/z/file.txt", "deep").await.unwrap();
    assert_eq!(fs::read_to_string(f.root.join("x/y/z/file.txt")).unwrap(), "deep");
    fs::write(f.root.join("plain"), "p").unwrap();
    let err = write(&f, "plain/sub/file", "x").await.unwrap_err();
    assert_eq!(err.code, Code::FileNotFound);
    symlink("nowhere", f.root.join("dl")).unwrap();
    let err = write(&f, "dl/sub/file", "x").await.unwrap_err();
    assert_eq!(err.code, Code::FileNotFound);
    assert!(!f.root.join("nowhere").exists());
    no_temps(&f.parent);
}

#[tokio::test]
async fn a_replaced_root_is_never_written() {
    let f = fixture();
    fs::rename(&f.root, f.parent.join("moved")).unwrap();
    fs::create_dir(&f.root).unwrap();
    let err = write(&f, "a.txt", "x").await.unwrap_err();
    assert_eq!(err.code, Code::WorkspaceRootChanged);
    assert!(tree(&f.root).is_empty());
    assert!(tree(&f.parent.join("moved")).is_empty());
}

#[tokio::test]
async fn a_cancelled_call_has_no_effect() {
    let f = fixture();
    let cancel = Cancel::new();
    cancel.cancel();
    let err = write::write(f.ws.clone(), "new/dir/file", "x", cancel).await.unwrap_err();
    assert!(err.is_cancelled());
    assert!(tree(&f.root).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_waiter_cancelled_in_the_queue_leaves_the_others_in_order() {
    let f = fixture();
    let mut handles = Vec::new();
    let mut cancels = Vec::new();
    for i in 0..30 {
        let cancel = Cancel::new();
        cancels.push(cancel.clone());
        let request = WriteRequest::new("q.txt", format!("{i}"), MAX_WRITE_BYTES).unwrap();
        let ticket = write::ticket();
        handles.push(tokio::spawn(write::write_file(f.ws.clone(), request, ticket, cancel)));
    }
    // Once the first write landed, the last call is waiting behind the others.
    while !f.root.join("q.txt").exists() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    cancels[29].cancel();
    let results: Vec<_> = futures_join(handles).await;
    assert!(results[29].as_ref().unwrap_err().is_cancelled());
    assert_eq!(fs::read_to_string(f.root.join("q.txt")).unwrap(), "28");
    no_temps(&f.parent);
}

async fn futures_join<T>(handles: Vec<tokio::task::JoinHandle<T>>) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}

/// `spawn_write` is how the host starts writes: from a thread outside the runtime's workers,
/// in call order, mostly on one blocking thread each.
#[test]
fn spawn_write_keeps_call_order_from_a_host_thread() {
    let f = fixture();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let _ctx = rt.enter();
    let (tx, rx) = std::sync::mpsc::channel();
    for i in 0..300 {
        let request = WriteRequest::new("s.txt", format!("{i}"), MAX_WRITE_BYTES).unwrap();
        let tx = tx.clone();
        write::spawn_write(f.ws.clone(), request, write::ticket(), Cancel::new(), move |r| tx.send((i, r)).unwrap());
    }
    drop(tx);
    let mut done: Vec<_> = rx.iter().collect();
    assert_eq!(done.len(), 300);
    done.sort_by_key(|(i, _)| *i);
    assert!(done.iter().all(|(_, r)| r.is_ok()), "{:?}", done.iter().find(|(_, r)| r.is_err()));
    assert_eq!(fs::read_to_string(f.root.join("s.txt")).unwrap(), "299");
    no_temps(&f.parent);
}
