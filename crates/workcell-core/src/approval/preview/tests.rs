use super::*;
use crate::fileops::{self, DeleteRequest, MkdirRequest, MoveRequest};
use crate::patch;
use std::fs;
use std::path::PathBuf;

fn setup() -> (tempfile::TempDir, PathBuf, Arc<Workspace>) {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
    fs::create_dir_all(&root).unwrap();
    let ws = Arc::new(Workspace::open(&root).unwrap());
    (tmp, root, ws)
}

fn entries(root: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[tokio::test]
async fn write_preview_creates_nothing_and_its_hash_guards_the_write() {
    let (_t, root, ws) = setup();
    let req = WriteRequest::new("new/dir/a.txt", "one\ntwo\n".into(), write::MAX_WRITE_BYTES).unwrap();
    let p = preview_write(&ws, &req, &Cancel::new()).unwrap();
    assert_eq!(p.files, vec![("new/dir/a.txt".to_string(), "absent".to_string())]);
    assert_eq!(p.summary, "write_file new/dir/a.txt: new file, +2 -0");
    assert!(p.diff.as_deref().unwrap().contains("+++ b/new/dir/a.txt\n@@"), "{:?}", p.diff);
    assert!(entries(&root).is_empty(), "a preview creates no directory");

    fs::write(root.join("f.txt"), "a\nb\nc\n").unwrap();
    let req = WriteRequest::new("f.txt", "a\nB\nc\n".into(), write::MAX_WRITE_BYTES).unwrap();
    let p = preview_write(&ws, &req, &Cancel::new()).unwrap();
    assert_eq!(p.summary, "write_file f.txt: +1 -1");
    assert_eq!(p.files[0].1, sha256_hex(b"a\nb\nc\n"));
    // Changed between the preview and the write: refused, nothing written.
    fs::write(root.join("f.txt"), "someone else\n").unwrap();
    let approved = req.clone().with_expected_hash(Some(p.files[0].1.clone()));
    let err = write::write_file(ws.clone(), approved, write::ticket(), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("f.txt")).unwrap(), "someone else\n");
    // The same write without the approved hash goes through (the refusal above is the hash's).
    write::write_file(ws.clone(), req, write::ticket(), Cancel::new()).await.unwrap();
    // A free name approved as absent must still be free.
    let req = WriteRequest::new("g.txt", "x".into(), write::MAX_WRITE_BYTES).unwrap();
    let p = preview_write(&ws, &req, &Cancel::new()).unwrap();
    fs::write(root.join("g.txt"), "planted").unwrap();
    let err = write::write_file(ws.clone(), req.with_expected_hash(Some(p.files[0].1.clone())), write::ticket(), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("g.txt")).unwrap(), "planted");
}

#[tokio::test]
async fn edit_preview_is_the_edit_and_a_later_change_refuses_it() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.ts"), "let a = 1;\nlet b = 2;\n").unwrap();
    let edits = vec![crate::edit::Edit { old_text: "a = 1".into(), new_text: "a = 10".into() }];
    let req = EditRequest::new("a.ts", edits.clone(), write::MAX_WRITE_BYTES).unwrap();
    let p = preview_edit(&ws, &req, &Cancel::new()).unwrap();
    assert_eq!(p.summary, "edit_file a.ts: +1 -1");
    assert_eq!(fs::read_to_string(root.join("a.ts")).unwrap(), "let a = 1;\nlet b = 2;\n");
    fs::write(root.join("a.ts"), "let a = 1;\nlet b = 3;\n").unwrap();
    let approved = req.with_expected_hash(Some(p.files[0].1.clone()));
    let err = crate::edit::edit_file(ws.clone(), approved, write::ticket(), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("a.ts")).unwrap(), "let a = 1;\nlet b = 3;\n");
    // A preview of an edit that cannot apply fails like the edit.
    let bad = EditRequest::new("a.ts", vec![crate::edit::Edit { old_text: "nope".into(), new_text: "x".into() }], write::MAX_WRITE_BYTES).unwrap();
    assert_eq!(preview_edit(&ws, &bad, &Cancel::new()).unwrap_err().code, Code::EditNotFound);
    let missing = EditRequest::new("x/y.ts", edits, write::MAX_WRITE_BYTES).unwrap();
    assert_eq!(preview_edit(&ws, &missing, &Cancel::new()).unwrap_err().code, Code::FileNotFound);
    assert!(!root.join("x").exists());
}

#[tokio::test]
async fn patch_preview_lists_every_file_moves_both_names_and_guards_them_all() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a.txt"), "one\ntwo\n").unwrap();
    fs::write(root.join("old.txt"), "x\n").unwrap();
    fs::write(root.join("gone.txt"), "bye\n").unwrap();
    let text = "*** Begin Patch\n*** Update File: a.txt\n@@\n one\n-two\n+three\n*** Update File: old.txt\n*** Move to: sub/new.txt\n@@\n-x\n+y\n*** Delete File: gone.txt\n*** Add File: added/n.txt\n+hi\n*** End Patch\n";
    let req = patch::PatchRequest::new(text, vec![], write::MAX_WRITE_BYTES).unwrap();
    let p = preview_patch(&ws, &req, &Cancel::new()).unwrap();
    let names: Vec<&str> = p.files.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(names, vec!["a.txt", "old.txt", "sub/new.txt", "gone.txt", "added/n.txt"]);
    assert_eq!(p.files[2].1, "absent");
    assert_eq!(p.files[4].1, "absent");
    assert!(p.summary.starts_with("apply_patch 4 files: +3 -2"), "{}", p.summary);
    assert!(!root.join("sub").exists() && !root.join("added").exists(), "a preview creates no directory");
    // One file changed after the preview: the whole patch is refused, every file as it was.
    fs::write(root.join("gone.txt"), "changed\n").unwrap();
    let approved = patch::PatchRequest::new(text, p.files.clone(), write::MAX_WRITE_BYTES).unwrap();
    let err = patch::apply_patch(ws.clone(), approved, patch::tickets_for(&req), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert_eq!(fs::read_to_string(root.join("a.txt")).unwrap(), "one\ntwo\n");
    assert!(root.join("old.txt").exists() && !root.join("sub").exists());
    // Unchanged since the preview: applied.
    let p = preview_patch(&ws, &req, &Cancel::new()).unwrap();
    let approved = patch::PatchRequest::new(text, p.files.clone(), write::MAX_WRITE_BYTES).unwrap();
    patch::apply_patch(ws.clone(), approved, patch::tickets_for(&req), Cancel::new()).await.unwrap();
    assert_eq!(fs::read_to_string(root.join("sub/new.txt")).unwrap(), "y\n");
}

#[tokio::test]
async fn patch_delete_of_a_symlink_is_approved_by_its_text() {
    let (_t, root, ws) = setup();
    fs::write(root.join("t"), "t").unwrap();
    std::os::unix::fs::symlink("t", root.join("l")).unwrap();
    let text = "*** Begin Patch\n*** Delete File: l\n*** End Patch\n";
    let req = patch::PatchRequest::new(text, vec![], write::MAX_WRITE_BYTES).unwrap();
    let p = preview_patch(&ws, &req, &Cancel::new()).unwrap();
    assert_eq!(p.files, vec![("l".to_string(), "symlink: t".to_string())]);
    fs::remove_file(root.join("l")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join("l")).unwrap();
    let approved = patch::PatchRequest::new(text, p.files.clone(), write::MAX_WRITE_BYTES).unwrap();
    let err = patch::apply_patch(ws.clone(), approved, patch::tickets_for(&req), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged, "a repointed link is not the one approved");
    assert!(fs::symlink_metadata(root.join("l")).is_ok());
}

#[tokio::test]
async fn file_operations_check_their_approved_names_under_the_locks() {
    let (_t, root, ws) = setup();
    fs::write(root.join("a"), "A").unwrap();
    let mv = MoveRequest::new("a", "d/b", false).unwrap();
    let p = preview_move(&ws, &mv, &Cancel::new()).unwrap();
    assert_eq!(p.summary, "move_file a -> d/b");
    assert_eq!(p.files, vec![("a".to_string(), sha256_hex(b"A")), ("d/b".to_string(), "absent".to_string())]);
    fs::write(root.join("a"), "changed").unwrap();
    let approved = MoveRequest::new("a", "d/b", false).unwrap().with_expected(p.files.clone()).unwrap();
    let err = fileops::move_file(ws.clone(), approved, fileops::move_tickets(), Cancel::new()).await.unwrap_err();
    assert_eq!(err.code, Code::TargetChanged);
    assert!(root.join("a").exists() && !root.join("d/b").exists());

    let del = DeleteRequest::new("a").unwrap();
    let p = preview_delete(&ws, &del, &Cancel::new()).unwrap();
    assert!(p.diff.as_deref().unwrap().contains("-changed"), "{:?}", p.diff);
    fs::write(root.join("a"), "again").unwrap();
    let approved = DeleteRequest::new("a").unwrap().with_expected(p.files.clone()).unwrap();
    assert_eq!(fileops::delete_file(ws.clone(), approved, fileops::one_ticket(), Cancel::new()).await.unwrap_err().code, Code::TargetChanged);
    assert!(root.join("a").exists());

    let mk = MkdirRequest::new("m").unwrap();
    let p = preview_mkdir(&ws, &mk, &Cancel::new()).unwrap();
    assert_eq!(p.files[0].1, "absent");
    assert!(!root.join("m").exists());
    fs::write(root.join("m"), "file").unwrap();
    let approved = MkdirRequest::new("m").unwrap().with_expected(p.files.clone()).unwrap();
    assert_eq!(fileops::make_directory(ws.clone(), approved, fileops::one_ticket(), Cancel::new()).await.unwrap_err().code, Code::TargetChanged);
    // A key the call does not touch is refused.
    assert!(MkdirRequest::new("m").unwrap().with_expected(vec![("other".into(), "absent".into())]).is_err());
}

#[test]
fn guarded_paths_are_refused_before_any_preview() {
    let (_t, root, ws) = setup();
    fs::create_dir_all(root.join(".git")).unwrap();
    let g = Some(Arc::new(Guard::default_guard()));
    let req = WriteRequest::new(".git/config", "x".into(), 10).unwrap().with_guard(g.clone());
    assert_eq!(preview_write(&ws, &req, &Cancel::new()).unwrap_err().code, Code::PathProtected);
    let text = "*** Begin Patch\n*** Add File: ok.txt\n+x\n*** Add File: .git/hooks/pre-commit\n+x\n*** End Patch\n";
    let req = patch::PatchRequest::new(text, vec![], write::MAX_WRITE_BYTES).unwrap().with_guard(g);
    assert_eq!(preview_patch(&ws, &req, &Cancel::new()).unwrap_err().code, Code::PathProtected);
}

/// The attack of a patch whose first file is a long addition: the change of another file
/// must still be in what the person is shown, whole.
#[test]
fn a_change_behind_a_long_addition_is_in_the_patch_preview() {
    let (_t, root, ws) = setup();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(root.join("src/auth.js"), "export function allowed(token) {\n  return check(token);\n}\n").unwrap();
    let mut text = String::from("*** Begin Patch\n*** Add File: docs/big.md\n");
    for i in 0..2000 {
        text.push_str(&format!("+line {i} of a long document\n"));
    }
    text.push_str("*** Update File: src/auth.js\n@@ export function allowed(token) {\n-  return check(token);\n+  return true;\n*** End Patch\n");
    let req = patch::PatchRequest::new(&text, Vec::new(), write::MAX_WRITE_BYTES).unwrap();
    let p = preview_patch(&ws, &req, &Cancel::new()).unwrap();
    let diff = p.diff.as_deref().unwrap();
    assert!(diff.contains("+++ b/src/auth.js\n"), "the second file's header is in the diff");
    assert!(diff.contains("\n-  return check(token);\n+  return true;\n"), "the second file's change is in the diff");
    assert!(diff.contains("+line 1999 of a long document"), "every added line is in the diff");
    assert!(!diff.contains("cut") && !diff.contains(crate::diff::OMITTED), "nothing is cut");
    assert_eq!(p.summary, "apply_patch 2 files: +2001 -1 (+docs/big.md, src/auth.js)");
    assert_eq!(p.diffs.len(), 2);
    assert_eq!((p.diffs[1].path.as_str(), p.diffs[1].added, p.diffs[1].removed), ("src/auth.js", 1, 1));
    assert_eq!((p.diffs[0].added, p.diffs[0].removed), (2000, 0));
    assert_eq!(p.diffs.iter().map(|d| d.diff.as_str()).collect::<String>(), diff);
}

#[test]
fn every_line_of_a_large_write_and_edit_is_in_the_preview() {
    let (_t, root, ws) = setup();
    let old: String = (0..3000).map(|i| format!("old line {i}\n")).collect();
    fs::write(root.join("f.txt"), &old).unwrap();
    // Every line replaced: too costly to diff line by line, shown removed and added whole.
    let new: String = (0..3000).map(|i| format!("new line {i}\n")).collect();
    let p = preview_write(&ws, &WriteRequest::new("f.txt", new.clone(), write::MAX_WRITE_BYTES).unwrap(), &Cancel::new()).unwrap();
    let diff = p.diff.as_deref().unwrap();
    assert!(diff.contains("\n+new line 2999\n") && diff.contains("\n-old line 2999\n"), "the last lines are in the diff");
    assert_eq!(p.summary, "write_file f.txt: +3000 -3000");
    // A line hidden at the end of a long new file.
    let tail = format!("{}SECRET TAIL\n", "filler line\n".repeat(3000));
    let p = preview_write(&ws, &WriteRequest::new("g.txt", tail, write::MAX_WRITE_BYTES).unwrap(), &Cancel::new()).unwrap();
    assert!(p.diff.as_deref().unwrap().ends_with("+SECRET TAIL\n"));
    // An edit whose new text is long.
    let edits = vec![crate::edit::Edit { old_text: "old line 0\n".into(), new_text: format!("{}EDITED TAIL\n", "x\n".repeat(5000)) }];
    let p = preview_edit(&ws, &EditRequest::new("f.txt", edits, write::MAX_WRITE_BYTES).unwrap(), &Cancel::new()).unwrap();
    assert!(p.diff.as_deref().unwrap().contains("\n+EDITED TAIL\n"), "the end of a long edit is in the diff");
    assert_eq!(p.summary, "edit_file f.txt: +5001 -1");
    // A file too large to show the old content of: every new line is shown.
    let huge = "y".repeat(write::MAX_WRITE_BYTES + 10);
    fs::write(root.join("h.txt"), &huge).unwrap();
    let p = preview_write(&ws, &WriteRequest::new("h.txt", "short\nLAST\n".into(), write::MAX_WRITE_BYTES).unwrap(), &Cancel::new()).unwrap();
    assert!(p.diff.as_deref().unwrap().ends_with("+short\n+LAST\n"), "{:?}", p.diff);
    assert!(p.summary.starts_with("write_file h.txt: replaces the whole file (the old content is larger than"), "{}", p.summary);
}
