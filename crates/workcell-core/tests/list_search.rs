//! list_files and search_files against hostile trees: escaping symlinks (relative and
//! absolute), symlink loops, FIFOs, gitignore, limits, binary files, long lines, cancellation.

use std::fs;
use std::os::unix::fs::symlink;
use std::time::{Duration, Instant};

use workcell_core::list::{list_files, ListOptions};
use workcell_core::search::{search_files, search_files_observed, SearchOptions, MAX_LINE_CHARS};
use workcell_core::{parse_path, Cancel, Code, Workspace};

/// parent/ROOT with a secret next to it, and traps planted inside.
fn hostile() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path();
    let root = parent.join("ROOT");
    fs::create_dir(&root).unwrap();
    fs::create_dir(parent.join("outside")).unwrap();
    fs::write(parent.join("outside/secret.txt"), "TOPSECRET outside\n").unwrap();
    fs::write(parent.join("secret.txt"), "TOPSECRET parent\n").unwrap();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/a.txt"), "needle one\nhay\nneedle two\n").unwrap();
    fs::write(root.join("b.txt"), "needle three\n").unwrap();
    symlink("../outside", root.join("reldir")).unwrap();
    symlink(parent.join("outside"), root.join("absdir")).unwrap();
    symlink("../secret.txt", root.join("relfile")).unwrap();
    symlink(parent.join("secret.txt"), root.join("absfile")).unwrap();
    symlink("src", root.join("innerdir")).unwrap();
    symlink("loop1", root.join("loop2")).unwrap();
    symlink("loop2", root.join("loop1")).unwrap();
    symlink(".", root.join("src/self")).unwrap();
    nix::unistd::mkfifo(&root.join("fifo"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    nix::unistd::mkfifo(&root.join("src/fifo.txt"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    (tmp, root)
}

fn list(ws: &Workspace, f: impl FnOnce(&mut ListOptions)) -> workcell_core::list::ListOutput {
    let mut o = ListOptions::default();
    f(&mut o);
    list_files(ws, &o, &Cancel::new()).unwrap()
}

fn search(ws: &Workspace, pattern: &str, f: impl FnOnce(&mut SearchOptions)) -> workcell_core::search::SearchOutput {
    let mut o = SearchOptions::new(pattern);
    f(&mut o);
    search_files(ws, &o, &Cancel::new()).unwrap()
}

#[test]
fn list_shows_links_as_links_and_never_enters_them() {
    let (_tmp, root) = hostile();
    let ws = Workspace::open(&root).unwrap();
    let out = list(&ws, |o| o.depth = 10);
    let abs = root.parent().unwrap().join("outside");
    assert_eq!(
        out.entries,
        vec![
            "absdir -> ".to_string() + abs.to_str().unwrap(),
            "absfile -> ".to_string() + root.parent().unwrap().join("secret.txt").to_str().unwrap(),
            "b.txt".into(),
            "fifo [fifo]".into(),
            "innerdir -> src".into(),
            "loop1 -> loop2".into(),
            "loop2 -> loop1".into(),
            "reldir -> ../outside".into(),
            "relfile -> ../secret.txt".into(),
            "src/".into(),
            "src/a.txt".into(),
            "src/fifo.txt [fifo]".into(),
            "src/self -> .".into(),
        ]
    );
    assert!(!out.truncated);
    assert_eq!(out.not_shown, 0);
    assert!(out.entries.iter().all(|e| !e.contains("secret.txt") || e.contains(" -> ")));
}

#[test]
fn search_never_reads_outside_or_through_links_and_never_hangs_on_fifos() {
    let (_tmp, root) = hostile();
    let ws = Workspace::open(&root).unwrap();
    let started = Instant::now();
    let out = search(&ws, "TOPSECRET|needle", |_| {});
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(out.matches, vec!["b.txt:1: needle three", "src/a.txt:1: needle one", "src/a.txt:3: needle two"]);
    assert!(!out.truncated);
    // Through the inside symlink as the start path: followed (it stays inside), links below it are not.
    let out = search(&ws, "needle", |o| o.path = Some(parse_path("innerdir").unwrap()));
    assert_eq!(out.matches, vec!["innerdir/a.txt:1: needle one", "innerdir/a.txt:3: needle two"]);
}

#[test]
fn escaping_start_paths_are_refused() {
    let (_tmp, root) = hostile();
    let ws = Workspace::open(&root).unwrap();
    for p in ["reldir", "absdir", "relfile", "absfile", "reldir/secret.txt"] {
        let mut o = SearchOptions::new("TOPSECRET");
        o.path = Some(parse_path(p).unwrap());
        assert_eq!(search_files(&ws, &o, &Cancel::new()).unwrap_err().code, Code::PathEscapesWorkspace, "{p}");
        let lo = ListOptions { path: Some(parse_path(p).unwrap()), ..Default::default() };
        assert_eq!(list_files(&ws, &lo, &Cancel::new()).unwrap_err().code, Code::PathEscapesWorkspace, "{p}");
    }
    let mut o = SearchOptions::new("x");
    o.path = Some(parse_path("loop1").unwrap());
    assert_eq!(search_files(&ws, &o, &Cancel::new()).unwrap_err().code, Code::SymlinkLoop);
    o.path = Some(parse_path("fifo").unwrap());
    assert_eq!(search_files(&ws, &o, &Cancel::new()).unwrap_err().code, Code::NotARegularFile);
}

#[test]
fn search_one_named_file() {
    let (_tmp, root) = hostile();
    let ws = Workspace::open(&root).unwrap();
    let out = search(&ws, "two", |o| o.path = Some(parse_path("src/a.txt").unwrap()));
    assert_eq!(out.matches, vec!["src/a.txt:3: needle two"]);
}

#[test]
fn list_limit_prefers_shallow_entries_and_counts_the_rest() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A deep first directory must not crowd out later top-level entries.
    fs::create_dir_all(root.join("a/deep")).unwrap();
    for i in 0..50 {
        fs::write(root.join(format!("a/deep/f{i:02}")), "").unwrap();
        fs::write(root.join(format!("a/g{i:02}")), "").unwrap();
    }
    fs::write(root.join("z.txt"), "").unwrap();
    let ws = Workspace::open(root).unwrap();
    let out = list(&ws, |o| {
        o.limit = 3;
        o.depth = 3;
    });
    assert_eq!(out.entries, vec!["a/", "a/deep/", "z.txt"]);
    assert!(out.truncated);
    assert_eq!(out.not_shown, 100);
    let note = out.note.unwrap();
    assert!(note.contains("100 entries not shown"), "{note}");
    assert!(note.contains("beyond the limit of 3"), "{note}");

    // Depth 1: everything below is counted as deeper.
    let out = list(&ws, |o| o.depth = 1);
    assert_eq!(out.entries, vec!["a/", "z.txt"]);
    assert_eq!(out.not_shown, 101);
    assert!(out.note.unwrap().contains("101 deeper than depth 1"));

    // Exactly at the limit: nothing left out, no note.
    let out = list(&ws, |o| {
        o.depth = 1;
        o.limit = 2;
    });
    assert_eq!(out.entries.len(), 2);
    let out = list(&ws, |o| {
        o.depth = 3;
        o.limit = 103;
    });
    assert_eq!(out.entries.len(), 103);
    assert!(!out.truncated && out.note.is_none());
}

#[test]
fn list_rejects_out_of_range_depth_and_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    for (depth, limit) in [(0, 10), (11, 10), (2, 0), (2, 5001)] {
        let o = ListOptions { depth, limit, ..Default::default() };
        assert_eq!(list_files(&ws, &o, &Cancel::new()).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    }
    let o = ListOptions { depth: 10, limit: 5000, ..Default::default() };
    assert!(list_files(&ws, &o, &Cancel::new()).is_ok());
}

fn gitignored_tree() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::write(root.join(".gitignore"), "target/\n*.log\n").unwrap();
    fs::create_dir_all(root.join("target/debug")).unwrap();
    fs::write(root.join("target/debug/out.txt"), "needle built\n").unwrap();
    fs::write(root.join("app.log"), "needle log\n").unwrap();
    fs::create_dir(root.join("src")).unwrap();
    fs::write(root.join("src/.gitignore"), "!keep.log\n").unwrap();
    fs::write(root.join("src/keep.log"), "needle kept\n").unwrap();
    fs::write(root.join("src/main.rs"), "needle src\n").unwrap();
    fs::create_dir(root.join(".git")).unwrap();
    fs::write(root.join(".git/HEAD"), "needle git\n").unwrap();
    tmp
}

#[test]
fn gitignore_is_honoured_by_default_and_can_be_turned_off() {
    let tmp = gitignored_tree();
    let ws = Workspace::open(tmp.path()).unwrap();
    let out = list(&ws, |_| {});
    assert_eq!(out.entries, vec![".gitignore", "src/", "src/.gitignore", "src/keep.log", "src/main.rs"]);
    let out = list(&ws, |o| o.gitignore = false);
    assert!(out.entries.contains(&"app.log".to_string()));
    assert!(out.entries.contains(&"target/".to_string()));
    assert!(out.entries.contains(&".git/HEAD".to_string()));

    let out = search(&ws, "needle", |_| {});
    assert_eq!(out.matches, vec!["src/keep.log:1: needle kept", "src/main.rs:1: needle src"]);
    let out = search(&ws, "needle", |o| o.gitignore = false);
    assert_eq!(out.matches.len(), 5);
    // Starting inside an ignored tree's parent still applies the root's .gitignore.
    let out = search(&ws, "needle", |o| o.path = Some(parse_path("src").unwrap()));
    assert_eq!(out.matches.len(), 2);
}

#[test]
fn glob_narrows_the_files() {
    let tmp = gitignored_tree();
    let ws = Workspace::open(tmp.path()).unwrap();
    assert_eq!(search(&ws, "needle", |o| o.glob = Some("*.rs".into())).matches, vec!["src/main.rs:1: needle src"]);
    assert_eq!(search(&ws, "needle", |o| o.glob = Some("src/**".into())).matches.len(), 2);
    assert_eq!(search(&ws, "needle", |o| o.glob = Some("!*.rs".into())).matches, vec!["src/keep.log:1: needle kept"]);
    let mut o = SearchOptions::new("x");
    o.glob = Some("a{b".into());
    let err = search_files(&ws, &o, &Cancel::new()).unwrap_err();
    assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
}

#[test]
fn binary_files_are_skipped_and_long_lines_cut() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let mut bin = b"needle before the nul\n".to_vec();
    bin.extend_from_slice(&[0, 1, 2]);
    bin.extend_from_slice(b"\nneedle after\n");
    fs::write(root.join("a.bin"), &bin).unwrap();
    // A NUL after the first buffer: matches before it still disappear.
    let mut late = b"needle early\n".to_vec();
    late.extend(std::iter::repeat_n(b'x', 200_000));
    late.extend_from_slice(b"\n\0\n");
    fs::write(root.join("b.late"), &late).unwrap();
    let long = format!("needle{}\n", "é".repeat(10_000));
    fs::write(root.join("c.txt"), &long).unwrap();
    fs::write(root.join("d.txt"), format!("{}needle\r\n", "x".repeat(494))).unwrap();
    let ws = Workspace::open(root).unwrap();
    let out = search(&ws, "needle", |_| {});
    assert_eq!(out.matches.len(), 2, "{:?}", out.matches);
    let text = out.matches[0].strip_prefix("c.txt:1: ").unwrap();
    assert_eq!(text.chars().count(), MAX_LINE_CHARS + 1);
    assert!(text.ends_with('…') && text.starts_with("needleé"));
    // Exactly 500 characters: not cut, CR removed.
    let exact = out.matches[1].strip_prefix("d.txt:1: ").unwrap();
    assert_eq!(exact.chars().count(), 500);
    assert!(exact.ends_with("needle"));
    assert!(out.note.unwrap().contains("2 binary files skipped"));
}

#[test]
fn limit_is_exact_and_noted() {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..30 {
        fs::write(tmp.path().join(format!("f{i:02}")), "hit\nhit\n").unwrap();
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    let out = search(&ws, "hit", |o| o.limit = 60);
    assert_eq!(out.matches.len(), 60);
    assert!(!out.truncated && out.note.is_none());
    let out = search(&ws, "hit", |o| o.limit = 59);
    assert_eq!(out.matches.len(), 59);
    assert!(out.truncated);
    assert!(out.note.unwrap().contains("showing the first 59 matches"));
    // The first ones in tree order, whatever thread found them.
    for threads in [1, 2, 4] {
        let out = search(&ws, "hit", |o| {
            o.limit = 5;
            o.threads = threads;
        });
        assert_eq!(out.matches, vec!["f00:1: hit", "f00:2: hit", "f01:1: hit", "f01:2: hit", "f02:1: hit"]);
    }
    for limit in [0, 1001] {
        let mut o = SearchOptions::new("hit");
        o.limit = limit;
        assert_eq!(search_files(&ws, &o, &Cancel::new()).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    }
}

#[test]
fn output_is_capped_in_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let line = format!("{}\n", "y".repeat(600));
    fs::write(tmp.path().join("f"), line.repeat(1000)).unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    let out = search(&ws, "y", |o| o.limit = 1000);
    let bytes: usize = out.matches.iter().map(|m| m.len()).sum();
    assert!(bytes <= 65_536);
    assert!(out.matches.len() > 100 && out.matches.len() < 1000);
    assert!(out.truncated);
    assert!(out.note.unwrap().contains("byte output cap"));
}

#[test]
fn bad_regex_is_invalid_arguments_with_the_parser_message() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    let err = search_files(&ws, &SearchOptions::new("foo(bar"), &Cancel::new()).unwrap_err();
    assert_eq!(err.code, Code::ToolArgumentsInvalid);
    assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    let hint = err.hint.unwrap();
    assert!(hint.contains("unclosed group"), "{hint}");
    assert!(hint.contains("literal"));
    // The same text as a literal is fine.
    fs::write(tmp.path().join("f"), "x foo(bar y\n").unwrap();
    assert_eq!(search(&ws, "foo(bar", |o| o.literal = true).matches, vec!["f:1: x foo(bar y"]);
    assert_eq!(search(&ws, "FOO\\(BAR", |o| o.ignore_case = true).matches.len(), 1);
    assert!(search(&ws, "FOO\\(BAR", |_| {}).matches.is_empty());
    // A pattern whose compiled form would be huge is refused, not built.
    let err = search_files(&ws, &SearchOptions::new("\\w{1000}\\w{1000}\\w{1000}"), &Cancel::new()).unwrap_err();
    assert_eq!(err.code, Code::ToolArgumentsInvalid);
}

#[test]
fn cancellation_stops_the_walk() {
    let tmp = tempfile::tempdir().unwrap();
    for d in 0..20 {
        fs::create_dir(tmp.path().join(format!("d{d}"))).unwrap();
        for f in 0..50 {
            fs::write(tmp.path().join(format!("d{d}/f{f}")), "x\n").unwrap();
        }
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    assert!(search_files(&ws, &SearchOptions::new("x"), &cancel).unwrap_err().is_cancelled());
    assert!(list_files(&ws, &ListOptions::default(), &cancel).unwrap_err().is_cancelled());
    // Cancelled mid-walk from another thread: stops with a cancellation.
    let cancel = Cancel::new();
    let c2 = cancel.clone();
    let t = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(1));
        c2.cancel();
    });
    let mut o = SearchOptions::new("x");
    o.limit = 1000;
    let r = search_files(&ws, &o, &cancel);
    t.join().unwrap();
    // Either it finished before the cancel landed or it reports the cancellation.
    if let Err(e) = r {
        assert!(e.is_cancelled());
    }
}

#[test]
fn cancellation_mid_walk_stops_at_the_next_file() {
    let tmp = tempfile::tempdir().unwrap();
    for d in 0..10 {
        fs::create_dir(tmp.path().join(format!("d{d}"))).unwrap();
        for f in 0..100 {
            fs::write(tmp.path().join(format!("d{d}/f{f:03}")), "x\n").unwrap();
        }
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    let cancel = Cancel::new();
    let seen = std::sync::Mutex::new(Vec::new());
    let on_file = |i: u64, rel: &str| {
        seen.lock().unwrap().push(rel.to_string());
        if i == 150 {
            cancel.cancel();
        }
    };
    // A pattern that matches nothing, so only the cancellation can stop the walk early.
    let err = search_files_observed(&ws, &SearchOptions::new("nothing here"), &cancel, &on_file).unwrap_err();
    assert!(err.is_cancelled());
    let seen = seen.into_inner().unwrap();
    // The walk stopped right after the file during which the call was cancelled.
    assert_eq!(seen.len(), 151);
    assert_eq!(seen[150], "d1/f050");
}

#[test]
fn reaching_the_limit_stops_the_walk() {
    let tmp = tempfile::tempdir().unwrap();
    for f in 0..2000 {
        fs::write(tmp.path().join(format!("f{f:04}")), "x\n").unwrap();
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    let seen = std::sync::atomic::AtomicU64::new(0);
    let on_file = |_: u64, _: &str| {
        seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let mut o = SearchOptions::new("x");
    o.limit = 5;
    let out = search_files_observed(&ws, &o, &Cancel::new(), &on_file).unwrap();
    assert_eq!(out.matches.len(), 5);
    assert!(out.truncated);
    // At most the queue (128) and the files in the workers' hands ran ahead of the stop.
    assert!(seen.load(std::sync::atomic::Ordering::Relaxed) < 300);
}

#[test]
fn root_replaced_is_detected() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    fs::create_dir(&root).unwrap();
    let ws = Workspace::open(&root).unwrap();
    fs::rename(&root, tmp.path().join("away")).unwrap();
    fs::create_dir(&root).unwrap();
    assert_eq!(search_files(&ws, &SearchOptions::new("x"), &Cancel::new()).unwrap_err().code, Code::WorkspaceRootChanged);
    assert_eq!(list_files(&ws, &ListOptions::default(), &Cancel::new()).unwrap_err().code, Code::WorkspaceRootChanged);
}

#[test]
fn racing_directory_symlink_swaps_never_lead_outside() {
    let tmp = tempfile::tempdir().unwrap();
    let parent = tmp.path();
    let root = parent.join("ROOT");
    fs::create_dir_all(root.join("d")).unwrap();
    fs::create_dir(parent.join("outside")).unwrap();
    for i in 0..50 {
        fs::write(parent.join(format!("outside/s{i}")), "TOPSECRET\n").unwrap();
        fs::write(root.join(format!("d/f{i}")), "inside\n").unwrap();
    }
    let ws = Workspace::open(&root).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let root = root.clone();
        std::thread::spawn(move || {
            let d = root.join("d");
            let held = root.join("held");
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = fs::rename(&d, &held);
                let _ = symlink("../outside", &d);
                let _ = fs::remove_file(&d);
                let _ = fs::rename(&held, &d);
            }
        })
    };
    // A file swapped for a symlink to an outside file, and for a FIFO, over and over.
    let file_swapper = {
        let stop = stop.clone();
        let root = root.clone();
        let secret = parent.join("outside/s0");
        std::thread::spawn(move || {
            let f = root.join("f");
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let _ = fs::remove_file(&f);
                match i % 3 {
                    0 => drop(fs::write(&f, "inside\n")),
                    1 => drop(symlink(&secret, &f)),
                    _ => drop(nix::unistd::mkfifo(&f, nix::sys::stat::Mode::from_bits_truncate(0o600))),
                }
                i += 1;
            }
        })
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut rounds = 0;
    while Instant::now() < deadline {
        let out = search(&ws, "TOPSECRET|inside", |o| o.limit = 1000);
        assert!(out.matches.iter().all(|m| !m.contains("TOPSECRET")), "{:?}", out.matches);
        let out = list(&ws, |o| o.depth = 3);
        // Names from outside (s0..s49) never appear as entries (a link's target text may).
        assert!(out.entries.iter().all(|e| !e.split(" -> ").next().unwrap().contains("/s")), "{:?}", out.entries);
        rounds += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    swapper.join().unwrap();
    file_swapper.join().unwrap();
    assert!(rounds > 10);
}

