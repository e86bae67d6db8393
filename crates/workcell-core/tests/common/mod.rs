//! Setup shared by the integration tests: temporary workspaces, the Node.js on PATH, random
//! markers and the checks that no process carrying one is left alive.
//! Each test crate uses part of it.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use workcell_core::Workspace;

/// The PATH the tests give children.
pub const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// A random marker `<prefix>-<16 hex digits>`, to find a run's processes by.
pub fn marker(prefix: &str) -> String {
    use std::io::Read as _;
    let mut b = [0u8; 8];
    std::fs::File::open("/dev/urandom").unwrap().read_exact(&mut b).unwrap();
    format!("{prefix}-{}", b.iter().map(|x| format!("{x:02x}")).collect::<String>())
}

/// Live (non-zombie) processes whose `/proc/<pid>/<file>` contains `needle`, for each file of
/// `files` ("environ", "cmdline").
pub fn pids_with(needle: &str, files: &[&str]) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')) {
            continue;
        }
        for file in files {
            let bytes = std::fs::read(format!("/proc/{pid}/{file}")).unwrap_or_default();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                found.push(pid);
                break;
            }
        }
    }
    found
}

/// Live (non-zombie) processes whose environment or command line contains `marker`.
pub fn alive_with(marker: &str) -> Vec<i32> {
    pids_with(marker, &["environ", "cmdline"])
}

/// Waits up to `within` for the processes carrying `marker` to disappear (SIGKILL delivery is
/// asynchronous), and fails naming those still alive.
pub fn assert_none_alive(marker: &str, within: Duration) {
    let until = Instant::now() + within;
    loop {
        let alive = alive_with(marker);
        if alive.is_empty() {
            return;
        }
        assert!(Instant::now() < until, "processes from the run are still alive: {alive:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The canonical path of the Node.js found on PATH.
pub fn node() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|d| d.join("node"))
        .find(|p| p.is_file())
        .map(|p| std::fs::canonicalize(p).unwrap())
        .expect("node is on PATH")
}

/// A temporary directory and its canonical path.
pub fn temp_base() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    (dir, base)
}

/// A workspace at `<tmp>/ROOT` holding `files`, and an empty scratch parent at `<tmp>/scratch`.
pub struct Fixture {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
    pub scratch: PathBuf,
    pub ws: Workspace,
}

pub fn fixture(files: &[(&str, &str)]) -> Fixture {
    let (dir, base) = temp_base();
    let root = base.join("ROOT");
    let scratch = base.join("scratch");
    std::fs::create_dir(&root).unwrap();
    std::fs::create_dir(&scratch).unwrap();
    for (name, text) in files {
        let p = root.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let ws = Workspace::open(&root).unwrap();
    Fixture { _dir: dir, root, scratch, ws }
}
