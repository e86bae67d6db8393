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
    assert_eq!(
        search_files(&ws, &SearchOptions::new("x"), &Cancel::new()).unwrap_err().code,
        Code::WorkspaceRootChanged
    );
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

// ---- bounded memory, work and time (hostile trees) ----

use workcell_core::list::list_files_measured;
use workcell_core::search::{search_files_measured, MAX_OUTPUT_BYTES, WINDOW};
use workcell_core::walk::{MAX_GITIGNORE_BYTES, MAX_WALK_GITIGNORE_BYTES};

/// `levels` directories of `name_len`-byte names below `base`, created beneath descriptors
/// (no absolute path gets long); returns the relative path of the deepest.
fn deep_chain(base: &std::path::Path, levels: usize, name_len: usize, tag: char) -> String {
    let mut dir = cap_std::fs::Dir::open_ambient_dir(base, cap_std::ambient_authority()).unwrap();
    let mut rel = Vec::new();
    for i in 0..levels {
        let name = format!("{tag}{i:02}{}", "d".repeat(name_len - 3));
        dir.create_dir(&name).unwrap();
        dir = dir.open_dir(&name).unwrap();
        rel.push(name);
    }
    rel.join("/")
}

#[test]
fn search_memory_bounded_with_many_slow_files() {
    // One file with more matching lines than any limit, hard-linked under 300 long names
    // (paths of 3 KB): each file used to keep limit + 1 lines (3 MB here) while waiting for
    // the files before it.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let deep = deep_chain(root, 14, 200, 'a');
    let original = root.join("original.txt");
    fs::write(&original, "needle in the haystack\n".repeat(1_500)).unwrap();
    let ws = Workspace::open(root).unwrap();
    let cap = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap().open_dir(&deep).unwrap();
    for i in 0..300 {
        // Hard links made beneath the deep directory's descriptor.
        rustix::fs::linkat(
            rustix::fs::CWD,
            &original,
            &cap,
            format!("f{i:03}{}", "n".repeat(200)).as_str(),
            rustix::fs::AtFlags::empty(),
        )
        .unwrap();
    }
    fs::remove_file(&original).unwrap();
    let mut answers = Vec::new();
    for threads in [1, 4] {
        let mut o = SearchOptions::new("needle");
        o.limit = 1000;
        o.threads = threads;
        let (out, stats) = search_files_measured(&ws, &o, &Cancel::new(), &|_, _| {}).unwrap();
        // Bounded by the window of files in flight times what can still fit the output (how
        // many of the window's files hold lines at once depends on the threads' timing: on a
        // loaded machine, dozens); the old collector held 1,001 lines of 3 KB for each of them.
        let bound = WINDOW as usize * MAX_OUTPUT_BYTES;
        assert!(stats.peak_held_bytes <= bound, "{threads} threads held {} bytes", stats.peak_held_bytes);
        assert!(out.truncated);
        assert!(out.note.as_deref().unwrap().contains("byte output cap"));
        let bytes: usize = out.matches.iter().map(|m| m.len()).sum();
        assert!(bytes <= MAX_OUTPUT_BYTES);
        assert!(out
            .matches
            .iter()
            .enumerate()
            .all(|(i, m)| m.ends_with(&format!(":{}: needle in the haystack", i + 1))));
        answers.push(out.matches);
    }
    // Deterministic whatever the threads: the first matches in tree order.
    assert_eq!(answers[0], answers[1]);
    assert!(answers[0][0].contains("/f000n"));
}

fn many_files(n: usize, text: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..n {
        fs::write(tmp.path().join(format!("f{i:04}.txt")), text).unwrap();
    }
    tmp
}

#[test]
fn search_stops_at_its_read_budget_with_a_prefix_of_the_matches() {
    let text = format!("{}needle\n", "hay hay hay\n".repeat(800));
    let tmp = many_files(100, &text);
    let ws = Workspace::open(tmp.path()).unwrap();
    let full = search(&ws, "needle", |o| o.limit = 1000);
    assert_eq!(full.matches.len(), 100);
    assert!(!full.truncated);
    for threads in [1, 3] {
        let mut o = SearchOptions::new("needle");
        o.limit = 1000;
        o.threads = threads;
        o.max_read_bytes = 20 * text.len() as u64;
        let (out, stats) = search_files_measured(&ws, &o, &Cancel::new(), &|_, _| {}).unwrap();
        assert!(out.truncated);
        let note = out.note.unwrap();
        assert!(note.contains("budget per call"), "{note}");
        assert!(out.matches.len() < 100, "{}", out.matches.len());
        assert_eq!(out.matches[..], full.matches[..out.matches.len()], "not a prefix in tree order");
        // Reads stop at the budget (plus what the threads had in hand).
        assert!(stats.bytes_read <= o.max_read_bytes + (threads as u64 + 1) * 64 * 1024, "{}", stats.bytes_read);
    }
}

#[test]
fn search_stops_at_its_deadline() {
    let tmp = many_files(50, "needle\n");
    let ws = Workspace::open(tmp.path()).unwrap();
    let mut o = SearchOptions::new("needle");
    o.deadline = Duration::ZERO;
    let out = search_files(&ws, &o, &Cancel::new()).unwrap();
    assert!(out.truncated);
    assert!(out.note.unwrap().contains("deadline"));
    assert!(out.matches.len() < 50);
}

#[test]
fn a_line_over_the_cap_skips_its_file_without_buffering_it() {
    // One 8 MiB line: refused at the 1 MiB searcher heap limit instead of being matched.
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("huge.txt"), "a".repeat(8 << 20) + "\n").unwrap();
    fs::write(tmp.path().join("small.txt"), "a b\n").unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    let (out, stats) = search_files_measured(&ws, &SearchOptions::new("a b"), &Cancel::new(), &|_, _| {}).unwrap();
    assert_eq!(out.matches, vec!["small.txt:1: a b"]);
    assert!(out.note.unwrap().contains("line longer than 1048576 bytes were skipped: huge.txt"));
    assert!(stats.bytes_read < 3 << 20, "read {} bytes of the long line", stats.bytes_read);
}

/// A .gitignore of about `bytes` bytes that ignores `*.ign`.
fn big_gitignore(bytes: usize) -> String {
    let mut s = String::from("*.ign\n");
    let mut i = 0;
    while s.len() < bytes {
        s.push_str(&format!("generated/build-output-{i:08}/\n"));
        i += 1;
    }
    s
}

#[test]
fn gitignore_hard_linked_into_many_directories_is_parsed_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let gi = root.join("shared-ignore");
    fs::write(&gi, big_gitignore(60 << 10)).unwrap();
    for d in 0..10 {
        let dir = root.join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        fs::hard_link(&gi, dir.join(".gitignore")).unwrap();
        fs::write(dir.join("kept.txt"), "needle\n").unwrap();
        fs::write(dir.join("x.ign"), "needle\n").unwrap();
    }
    fs::remove_file(&gi).unwrap();
    let ws = Workspace::open(root).unwrap();
    let (out, stats) = list_files_measured(&ws, &ListOptions::default(), &Cancel::new()).unwrap();
    assert_eq!(stats.ignore_files_parsed, 1, "the same inode was parsed {} times", stats.ignore_files_parsed);
    assert!(out.entries.iter().all(|e| !e.ends_with(".ign")), "{:?}", out.entries);
    assert_eq!(out.entries.iter().filter(|e| e.ends_with("kept.txt")).count(), 10);
    let (out, stats) = search_files_measured(&ws, &SearchOptions::new("needle"), &Cancel::new(), &|_, _| {}).unwrap();
    assert_eq!(stats.ignore_files_parsed, 1);
    assert_eq!(out.matches.len(), 10);
}

#[test]
fn oversized_and_over_budget_gitignores_are_not_honoured_and_said_so() {
    // Over the per-file cap: not applied at all, so its files are shown (the safe reading).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    fs::write(root.join(".gitignore"), big_gitignore(MAX_GITIGNORE_BYTES + 100)).unwrap();
    fs::write(root.join("a.ign"), "needle\n").unwrap();
    let ws = Workspace::open(root).unwrap();
    let (out, stats) = list_files_measured(&ws, &ListOptions::default(), &Cancel::new()).unwrap();
    assert!(out.entries.contains(&"a.ign".to_string()));
    assert_eq!(stats.ignore_bytes_parsed, 0);
    let note = out.note.unwrap();
    assert!(note.contains("larger than 65536 bytes were not honoured") && note.contains(".gitignore"), "{note}");
    let s = search(&ws, "needle", |_| {});
    assert_eq!(s.matches, vec!["a.ign:1: needle"]);
    assert!(s.note.unwrap().contains("not honoured"));

    // Distinct ignore files past the per-walk budget: the later ones are not applied.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for d in 0..20 {
        let dir = root.join(format!("d{d:02}"));
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join(".gitignore"), big_gitignore(60 << 10) + &format!("# {d}\n")).unwrap();
        fs::write(dir.join("x.ign"), "needle\n").unwrap();
    }
    let ws = Workspace::open(root).unwrap();
    let (out, stats) = list_files_measured(&ws, &ListOptions::default(), &Cancel::new()).unwrap();
    assert!(stats.ignore_bytes_parsed <= MAX_WALK_GITIGNORE_BYTES, "{}", stats.ignore_bytes_parsed);
    assert!(stats.ignore_files_parsed >= 16, "{}", stats.ignore_files_parsed);
    assert!(out.note.unwrap().contains("byte budget of ignore files per call were not honoured"));
    assert!(out.entries.contains(&"d19/x.ign".to_string()));
    assert!(!out.entries.contains(&"d00/x.ign".to_string()));
}

#[test]
fn list_memory_bounded_with_deep_chains() {
    // A comb: a 60-level chain of 120-byte names, each level with 40 sibling directories
    // that sort after the chain, so all of them wait while the walk goes down. The walk used
    // to keep every waiting sibling's full path (up to 7 KB each, 8.7 MB here, 440 MB for the
    // tree of the report); it now keeps names and parent indices.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let mut dir = cap_std::fs::Dir::open_ambient_dir(root, cap_std::ambient_authority()).unwrap();
    for level in 0..60 {
        let chain = format!("a{level:02}{}", "c".repeat(117));
        dir.create_dir(&chain).unwrap();
        for s in 0..40 {
            dir.create_dir(format!("z{s:02}{}", "s".repeat(117))).unwrap();
        }
        dir = dir.open_dir(&chain).unwrap();
    }
    dir.write("leaf.txt", "x").unwrap();
    let ws = Workspace::open(root).unwrap();
    let (out, stats) = list_files_measured(&ws, &ListOptions::default(), &Cancel::new()).unwrap();
    // 60 levels x 41 names of 120 bytes is 295 KB of names; what old code held grows with the
    // path length on top of that.
    assert!(stats.peak_held_bytes < 1 << 20, "held {} bytes", stats.peak_held_bytes);
    assert_eq!(out.entries.len(), 41 + 41);
    assert!(out.entries[0].starts_with("a00") && out.entries[1].starts_with("a00") && out.entries[1].contains("/a01"));
    assert_eq!(out.not_shown, 58 * 41 + 1);
    // Deep entries shown in full when asked for.
    let (out, _) =
        list_files_measured(&ws, &ListOptions { depth: 3, limit: 5000, ..ListOptions::default() }, &Cancel::new())
            .unwrap();
    assert_eq!(out.entries.len(), 3 * 41);
    assert!(out.entries[2].starts_with(&format!("a00{c}/a01{c}/a02", c = "c".repeat(117))), "{}", out.entries[2]);
}

#[test]
fn list_keeps_only_what_fits_the_output() {
    // 5,000 entries of 250 bytes: only about 260 fit 64 KiB; the rest are counted, not kept.
    let tmp = tempfile::tempdir().unwrap();
    for i in 0..5000 {
        fs::write(tmp.path().join(format!("{i:05}{}", "n".repeat(245))), "").unwrap();
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    let (out, stats) =
        list_files_measured(&ws, &ListOptions { limit: 5000, ..ListOptions::default() }, &Cancel::new()).unwrap();
    let bytes: usize = out.entries.iter().map(|e| e.len() + 1).sum();
    assert!(bytes <= 65_536);
    assert_eq!(out.entries.len(), 65_536 / 251);
    assert_eq!(out.not_shown, 5000 - out.entries.len() as u64);
    assert!(out.note.unwrap().contains("beyond the 65536 byte output cap"));
    assert!(stats.peak_held_bytes < 200 << 10, "held {}", stats.peak_held_bytes);
}

#[test]
fn file_names_with_control_characters_cannot_forge_result_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    // A name that, printed raw, reads as a second match line after a fake first one.
    let forged = "a.txt:1: all good\nz.txt";
    fs::write(root.join(forged), "needle\n").unwrap();
    fs::create_dir(root.join("esc\u{1b}]0;pwn\u{7}")).unwrap();
    fs::write(root.join("esc\u{1b}]0;pwn\u{7}/c1\u{9b}2J.txt"), "needle\n").unwrap();
    symlink("target\nfake -> elsewhere", root.join("link")).unwrap();
    let ws = Workspace::open(root).unwrap();
    let out = search(&ws, "needle", |_| {});
    assert_eq!(
        out.matches,
        vec![
            "a.txt:1: all good\\nz.txt:1: needle".to_string(),
            "esc\\x1b]0;pwn\\x07/c1\\u{9b}2J.txt:1: needle".to_string()
        ]
    );
    let listed = list(&ws, |_| {});
    assert_eq!(
        listed.entries,
        vec![
            "a.txt:1: all good\\nz.txt".to_string(),
            "esc\\x1b]0;pwn\\x07/".into(),
            "esc\\x1b]0;pwn\\x07/c1\\u{9b}2J.txt".into(),
            "link -> target\\nfake -> elsewhere".into(),
        ]
    );
    for text in out.matches.iter().chain(&listed.entries) {
        assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
    }
    // The raw names do hold the control characters: the escaping is what removes them.
    assert!(fs::read_dir(root).unwrap().any(|e| e.unwrap().file_name().to_string_lossy().contains('\n')));
}

#[test]
fn a_listing_kept_whole_and_one_cut_by_its_limit_are_both_in_tree_order() {
    // A listing that shows everything keeps its entries in visit order (no heap) and sorts
    // them once; one cut by its limit keeps the shallowest in a heap. Both come back in tree
    // order, which differs from visit order (a directory's entries are visited before its
    // subdirectories' contents).
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for dir in ["a/x", "b"] {
        fs::create_dir_all(root.join(dir)).unwrap();
    }
    for file in ["a/x/deep.txt", "a/y.txt", "b/z.txt", "c.txt"] {
        fs::write(root.join(file), "").unwrap();
    }
    let ws = Workspace::open(root).unwrap();
    let whole = list(&ws, |o| o.depth = 3);
    assert_eq!(whole.entries, vec!["a/", "a/x/", "a/x/deep.txt", "a/y.txt", "b/", "b/z.txt", "c.txt"]);
    assert!(!whole.truncated);
    let cut = list(&ws, |o| {
        o.depth = 3;
        o.limit = 6;
    });
    assert_eq!(cut.entries, vec!["a/", "a/x/", "a/y.txt", "b/", "b/z.txt", "c.txt"]);
    assert_eq!(cut.not_shown, 1);
}
