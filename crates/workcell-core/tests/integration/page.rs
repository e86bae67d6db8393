//! Paged reads: windows at exact boundaries, the 65,536-byte output cap, the 64 MiB file limit.

use std::fs;

use workcell_core::page::{read_window, WindowOutput, MAX_WINDOW_FILE_BYTES};
use workcell_core::read::MAX_READ_BYTES;
use workcell_core::{parse_path, Cancel, Code, Workspace};

fn ws_with(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    for (name, content) in files {
        fs::write(tmp.path().join(name), content).unwrap();
    }
    let ws = Workspace::open(tmp.path()).unwrap();
    (tmp, ws)
}

fn window(ws: &Workspace, path: &str, offset: Option<u64>, limit: Option<u64>) -> workcell_core::Result<WindowOutput> {
    read_window(ws, &parse_path(path).unwrap(), offset, limit, &Cancel::new())
}

#[test]
fn small_windows() {
    let (_t, ws) = ws_with(&[("f", b"a\nb\r\nc")]);
    let w = window(&ws, "f", Some(1), Some(1)).unwrap();
    assert_eq!((w.content.as_str(), w.bytes, w.lines, w.next_offset, w.total_lines), ("a\n", 2, 1, Some(2), None));
    assert_eq!(w.file_bytes, 6);
    let w = window(&ws, "f", Some(2), Some(1)).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset), ("b\r\n", Some(3)));
    let w = window(&ws, "f", Some(3), Some(1)).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset, w.total_lines), ("c", None, Some(3)));
    let w = window(&ws, "f", Some(2), None).unwrap();
    assert_eq!((w.content.as_str(), w.lines, w.next_offset, w.total_lines), ("b\r\nc", 2, None, Some(3)));
    // Just past the end, and far past it: empty, with the line count.
    for off in [4, 1000] {
        let w = window(&ws, "f", Some(off), Some(5)).unwrap();
        assert_eq!((w.content.as_str(), w.lines, w.next_offset, w.total_lines), ("", 0, None, Some(3)));
    }
}

#[test]
fn trailing_newline_and_empty_file() {
    let (_t, ws) = ws_with(&[("f", b"a\nb\n"), ("e", b"")]);
    let w = window(&ws, "f", Some(2), Some(1)).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset, w.total_lines), ("b\n", None, Some(2)));
    let w = window(&ws, "f", Some(1), Some(2)).unwrap();
    assert_eq!((w.next_offset, w.total_lines), (None, Some(2)));
    let w = window(&ws, "f", Some(3), None).unwrap();
    assert_eq!((w.content.as_str(), w.total_lines), ("", Some(2)));
    let w = window(&ws, "e", None, None).unwrap();
    assert_eq!((w.content.as_str(), w.lines, w.next_offset, w.total_lines), ("", 0, None, Some(0)));
}

#[test]
fn consecutive_windows_give_back_the_file() {
    let mut text = String::new();
    for i in 0..5000 {
        text.push_str(&format!("line {i} {}{}", "é😀".repeat(i % 7), if i % 3 == 0 { "\r\n" } else { "\n" }));
    }
    text.push_str("last without newline");
    let (_t, ws) = ws_with(&[("f", text.as_bytes())]);
    for limit in [1, 7, 1000, u32::MAX as u64] {
        let mut got = String::new();
        let mut offset = 1;
        loop {
            let w = window(&ws, "f", Some(offset), Some(limit)).unwrap();
            assert!(w.bytes <= MAX_READ_BYTES);
            assert_eq!(w.bytes, w.content.len());
            assert!(w.lines <= limit);
            got.push_str(&w.content);
            match w.next_offset {
                Some(n) => {
                    assert_eq!(n, offset + w.lines);
                    offset = n;
                }
                None => {
                    assert_eq!(w.total_lines, Some(5001));
                    break;
                }
            }
        }
        assert_eq!(got, text, "limit {limit}");
    }
}

#[test]
fn the_output_cap_is_exact() {
    // 64 lines of 1,024 bytes: exactly 65,536 bytes fit in one window.
    let line = format!("{}\n", "x".repeat(1023));
    let exact = line.repeat(64);
    let over = format!("{exact}y\n");
    let (_t, ws) = ws_with(&[("exact", exact.as_bytes()), ("over", over.as_bytes())]);
    let w = window(&ws, "exact", Some(1), None).unwrap();
    assert_eq!((w.bytes, w.lines, w.next_offset, w.total_lines), (65_536, 64, None, Some(64)));
    let w = window(&ws, "over", Some(1), None).unwrap();
    assert_eq!((w.bytes, w.lines, w.next_offset), (65_536, 64, Some(65)));
    let w = window(&ws, "over", Some(65), None).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset, w.total_lines), ("y\n", None, Some(65)));
    // One byte more in the first 64 lines: the window stops a line earlier.
    let shifted = format!("z{over}");
    let (_t2, ws2) = ws_with(&[("s", shifted.as_bytes())]);
    let w = window(&ws2, "s", Some(1), None).unwrap();
    assert_eq!((w.bytes, w.lines, w.next_offset), (64_512 + 1, 63, Some(64)));
}

#[test]
fn a_line_longer_than_the_cap() {
    let fits = format!("{}\n", "a".repeat(MAX_READ_BYTES - 1));
    let long = format!("{}\n", "a".repeat(MAX_READ_BYTES));
    let after = format!("short\n{long}tail\n");
    let (_t, ws) = ws_with(&[("fits", fits.as_bytes()), ("long", long.as_bytes()), ("after", after.as_bytes())]);
    assert_eq!(window(&ws, "fits", None, None).unwrap().bytes, MAX_READ_BYTES);
    let err = window(&ws, "long", None, None).unwrap_err();
    assert_eq!(err.code, Code::FileTooLarge);
    assert_eq!(err.details.unwrap()["line"], 1);
    let w = window(&ws, "after", None, None).unwrap();
    assert_eq!((w.content.as_str(), w.next_offset), ("short\n", Some(2)));
    let err = window(&ws, "after", Some(2), None).unwrap_err();
    assert_eq!(err.details.unwrap()["line"], 2);
    assert_eq!(window(&ws, "after", Some(3), None).unwrap().content, "tail\n");
}

#[test]
fn a_64_mib_file_pages_and_one_byte_more_is_too_large() {
    let tmp = tempfile::tempdir().unwrap();
    // 1,048,576 lines of 64 bytes: exactly 64 MiB.
    let mut data = Vec::with_capacity(MAX_WINDOW_FILE_BYTES as usize + 1);
    for i in 0..1_048_576u32 {
        data.extend_from_slice(format!("{i:>63}\n").as_bytes());
    }
    assert_eq!(data.len() as u64, MAX_WINDOW_FILE_BYTES);
    fs::write(tmp.path().join("max"), &data).unwrap();
    data.push(b'!');
    fs::write(tmp.path().join("over"), &data).unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    let w = window(&ws, "max", Some(1_048_576), None).unwrap();
    assert_eq!((w.content.trim(), w.next_offset, w.total_lines), ("1048575", None, Some(1_048_576)));
    // The last 1,024 lines are exactly the cap.
    let w = window(&ws, "max", Some(1_047_553), None).unwrap();
    assert_eq!((w.bytes, w.lines, w.next_offset), (65_536, 1024, None));
    let w = window(&ws, "max", Some(1_047_552), None).unwrap();
    assert_eq!((w.bytes, w.lines, w.next_offset), (65_536, 1024, Some(1_048_576)));
    assert_eq!(w.file_bytes, MAX_WINDOW_FILE_BYTES);
    let err = window(&ws, "over", Some(1), Some(1)).unwrap_err();
    assert_eq!(err.code, Code::FileTooLarge);
    assert!(err.hint.unwrap().contains("search_files"));
}

#[test]
fn a_sparse_huge_file_is_refused_without_reading() {
    let tmp = tempfile::tempdir().unwrap();
    let f = fs::File::create(tmp.path().join("sparse")).unwrap();
    f.set_len(1 << 40).unwrap();
    let ws = Workspace::open(tmp.path()).unwrap();
    assert_eq!(window(&ws, "sparse", Some(1), Some(1)).unwrap_err().code, Code::FileTooLarge);
}

#[test]
fn utf8_is_checked_in_the_window_only() {
    let (_t, ws) = ws_with(&[("f", b"ok\n\xff\xfe bad\nok again\n")]);
    assert_eq!(window(&ws, "f", Some(1), Some(1)).unwrap().content, "ok\n");
    assert_eq!(window(&ws, "f", Some(3), None).unwrap().content, "ok again\n");
    let err = window(&ws, "f", Some(2), Some(1)).unwrap_err();
    assert_eq!(err.code, Code::InvalidUtf8);
    assert_eq!(err.details.unwrap()["offset"], 3);
}

#[test]
fn bad_numbers_fifos_and_cancellation() {
    let (t, ws) = ws_with(&[("f", b"a\n")]);
    for (o, l) in [(Some(0), None), (None, Some(0)), (Some(u32::MAX as u64 + 1), None)] {
        assert_eq!(window(&ws, "f", o, l).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    }
    nix::unistd::mkfifo(&t.path().join("p"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
    assert_eq!(window(&ws, "p", Some(1), None).unwrap_err().code, Code::NotARegularFile);
    let cancel = Cancel::new();
    cancel.cancel();
    assert!(read_window(&ws, &parse_path("f").unwrap(), Some(1), None, &cancel).unwrap_err().is_cancelled());
}

#[test]
fn window_of_an_image_says_to_read_it_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ROOT");
    fs::create_dir(&root).unwrap();
    let ws = Workspace::open(&root).unwrap();
    fs::write(root.join("dot.png"), b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR").unwrap();
    let err = workcell_core::page::read_window(&ws, &parse_path("dot.png").unwrap(), Some(1), None, &Cancel::new()).unwrap_err();
    assert_eq!(err.code, Code::InvalidUtf8);
    assert!(err.message.contains("image/png"), "{}", err.message);
    assert!(err.hint.unwrap().contains("without offset and limit"));
}
