//! read_file against real files, links, FIFOs and a cancelled token.

use std::fs;
use std::os::unix::fs::symlink;

use workcell_core::read::{read_file, MAX_READ_BYTES};
use workcell_core::{parse_path, Cancel, Code, Workspace};

fn setup() -> (tempfile::TempDir, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ROOT");
    fs::create_dir(&root).unwrap();
    let ws = Workspace::open(&root).unwrap();
    (tmp, ws)
}

fn read(ws: &Workspace, p: &str) -> workcell_core::Result<String> {
    read_file(ws, &parse_path(p)?, &Cancel::new()).map(|o| o.content)
}

#[test]
fn reads_inside_and_refuses_outside() {
    let (tmp, ws) = setup();
    let root = tmp.path().join("ROOT");
    fs::write(root.join("a"), "inside").unwrap();
    fs::write(tmp.path().join("secret"), "outside").unwrap();
    symlink("../secret", root.join("out")).unwrap();
    symlink("a", root.join("in")).unwrap();
    symlink(root.join("a"), root.join("abs")).unwrap();
    assert_eq!(read(&ws, "a").unwrap(), "inside");
    assert_eq!(read(&ws, "in").unwrap(), "inside");
    assert_eq!(read(&ws, "out").unwrap_err().code, Code::PathEscapesWorkspace);
    assert_eq!(read(&ws, "abs").unwrap_err().code, Code::PathEscapesWorkspace);
}

#[test]
fn fifo_does_not_block() {
    let (tmp, ws) = setup();
    let fifo = tmp.path().join("ROOT/fifo");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert_eq!(read(&ws, "fifo").unwrap_err().code, Code::NotARegularFile);
}

#[test]
fn size_cap_is_exact() {
    let (tmp, ws) = setup();
    fs::write(tmp.path().join("ROOT/max"), vec![b'a'; MAX_READ_BYTES]).unwrap();
    fs::write(tmp.path().join("ROOT/over"), vec![b'a'; MAX_READ_BYTES + 1]).unwrap();
    assert_eq!(read(&ws, "max").unwrap().len(), MAX_READ_BYTES);
    assert_eq!(read(&ws, "over").unwrap_err().code, Code::FileTooLarge);
}

#[test]
fn trailing_slash_on_a_file_is_refused() {
    let (tmp, ws) = setup();
    fs::write(tmp.path().join("ROOT/f"), "x").unwrap();
    assert_eq!(read(&ws, "f/").unwrap_err().code, Code::NotARegularFile);
    assert_eq!(read(&ws, "f/.").unwrap_err().code, Code::NotARegularFile);
    assert_eq!(read(&ws, "missing/").unwrap_err().code, Code::FileNotFound);
}

#[test]
fn a_cancelled_call_reads_nothing() {
    let (tmp, ws) = setup();
    fs::write(tmp.path().join("ROOT/a"), "x").unwrap();
    let cancel = Cancel::new();
    cancel.cancel();
    let err = read_file(&ws, &parse_path("a").unwrap(), &cancel).unwrap_err();
    assert!(err.is_cancelled());
}

#[test]
fn invalid_utf8_reports_the_offset() {
    let (tmp, ws) = setup();
    fs::write(tmp.path().join("ROOT/b"), [b'o', b'k', 0xff, b'x']).unwrap();
    let err = read(&ws, "b").unwrap_err();
    assert_eq!(err.code, Code::InvalidUtf8);
    assert_eq!(err.details.unwrap()["offset"], 2);
}
