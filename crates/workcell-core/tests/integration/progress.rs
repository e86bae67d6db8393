//! Progress of the tools that count (contract §18): search_files counts the files it searched,
//! list_files the entries it saw, apply_patch the files it staged; an unwatched call keeps
//! nothing. (The process tools' output is checked through the host in test/progress.test.ts.)

use std::fs;
use std::sync::Arc;

use workcell_core::list::{list_files, ListOptions};
use workcell_core::progress::Progress;
use workcell_core::search::{search_files, SearchOptions};
use workcell_core::{Cancel, Workspace};

fn tree(files: usize) -> (tempfile::TempDir, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    for d in 0..3 {
        let dir = tmp.path().join(format!("d{d}"));
        fs::create_dir(&dir).unwrap();
        for i in 0..files / 3 {
            fs::write(dir.join(format!("f{i}.txt")), format!("needle {d} {i}\n")).unwrap();
        }
    }
    let ws = Workspace::open(tmp.path().to_str().unwrap()).unwrap();
    (tmp, ws)
}

fn watched() -> (Cancel, Progress) {
    let progress = Progress::watched();
    (Cancel::new().with_progress(progress.clone()), progress)
}

#[test]
fn search_files_counts_the_files_it_searched_for_a_watcher() {
    let (_tmp, ws) = tree(30);
    let (cancel, progress) = watched();
    let out = search_files(&ws, &SearchOptions::new("needle"), &cancel).unwrap();
    assert_eq!(out.files_searched, 30);
    let u = progress.take().expect("an update");
    assert_eq!(u.progress, Some(30));
    assert_eq!(u.message, "30 files searched");
    assert_eq!(u.output, None);
    // The same search unwatched: the same result.
    assert_eq!(search_files(&ws, &SearchOptions::new("needle"), &Cancel::new()).unwrap(), out);
}

#[test]
fn list_files_counts_the_entries_it_saw_for_a_watcher() {
    let (_tmp, ws) = tree(30);
    let (cancel, progress) = watched();
    let out = list_files(&ws, &ListOptions::default(), &cancel).unwrap();
    let u = progress.take().expect("an update");
    // Reported as each directory is entered: the last report counts every entry before the
    // last directory's.
    let seen = u.progress.unwrap();
    assert!((3..=33).contains(&seen), "{seen}");
    assert_eq!(u.message, format!("{seen} entries seen"));
    assert_eq!(list_files(&ws, &ListOptions::default(), &Cancel::new()).unwrap(), out);
}

#[tokio::test]
async fn apply_patch_counts_the_files_it_staged_for_a_watcher() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = Arc::new(Workspace::open(tmp.path().to_str().unwrap()).unwrap());
    let (cancel, progress) = watched();
    let patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Add File: b.txt\n+b\n*** Add File: c/d.txt\n+d\n*** End Patch\n";
    workcell_core::patch::apply(ws, patch, cancel).await.unwrap();
    let u = progress.take().expect("an update");
    assert_eq!((u.progress, u.total), (Some(3), Some(3)));
    assert_eq!(u.message, "3 of 3 files staged");
}

#[test]
fn an_unwatched_call_keeps_no_progress() {
    let (_tmp, ws) = tree(9);
    let cancel = Cancel::new();
    search_files(&ws, &SearchOptions::new("needle"), &cancel).unwrap();
    assert!(!cancel.progress().is_watched());
    assert_eq!(cancel.progress().take(), None);
}
