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

mod images {
    use super::*;
    use workcell_core::image::MAX_IMAGE_BYTES;
    use workcell_core::read::{read_file_or_image, ReadResult};

    /// A 1x1 transparent PNG.
    const PNG_1X1: &[u8] = &[
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01, 0x00,
        0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4, 0x89, 0x00, 0x00, 0x00, 0x0B, 0x49, 0x44, 0x41, 0x54, 0x78,
        0xDA, 0x63, 0x60, 0x00, 0x02, 0x00, 0x00, 0x05, 0x00, 0x01, 0xE9, 0xFA, 0xDC, 0xD8, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E,
        0x44, 0xAE, 0x42, 0x60, 0x82,
    ];

    fn any(ws: &Workspace, p: &str) -> workcell_core::Result<ReadResult> {
        read_file_or_image(ws, &parse_path(p)?, &Cancel::new())
    }

    fn decode64(s: &str) -> Vec<u8> {
        let val = |c: u8| match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => panic!("not base64: {c}"),
        };
        let mut out = Vec::new();
        for chunk in s.as_bytes().chunks(4) {
            let pad = chunk.iter().filter(|&&c| c == b'=').count();
            let n = chunk.iter().take(4 - pad).enumerate().fold(0u32, |n, (i, &c)| n | (u32::from(val(c)) << (18 - 6 * i)));
            out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8][..3 - pad]);
        }
        out
    }

    #[test]
    fn png_round_trips_as_base64_with_its_hash() {
        let (tmp, ws) = setup();
        fs::write(tmp.path().join("ROOT/dot.png"), PNG_1X1).unwrap();
        let ReadResult::Image(img) = any(&ws, "./dot.png").unwrap() else { panic!("not an image") };
        assert_eq!(img.path, "dot.png");
        assert_eq!(img.mime_type, "image/png");
        assert_eq!(img.bytes, PNG_1X1.len());
        assert_eq!(decode64(&img.data), PNG_1X1);
        assert_eq!(img.hash, workcell_core::hash::sha256_hex(PNG_1X1));
    }

    #[test]
    fn image_recognized_by_content_not_name() {
        let (tmp, ws) = setup();
        let root = tmp.path().join("ROOT");
        fs::write(root.join("photo.txt"), [0xFF, 0xD8, 0xFF, 0xE0, 0, 0x10, b'J', b'F', b'I', b'F']).unwrap();
        fs::write(root.join("anim"), b"GIF89a\x01\x00\x01\x00\x00\x00\x00;").unwrap();
        fs::write(root.join("p.webp.bin"), b"RIFF\x1a\0\0\0WEBPVP8L\x0d\0\0\0\x2f\0\0\0\x10\x07\x10\x11\x11\x88\x88\xfe\x07\0").unwrap();
        fs::write(root.join("fake.png"), "just text").unwrap();
        let mime = |p| match any(&ws, p).unwrap() {
            ReadResult::Image(i) => Some(i.mime_type),
            ReadResult::Text(_) => None,
        };
        assert_eq!(mime("photo.txt"), Some("image/jpeg"));
        assert_eq!(mime("anim"), Some("image/gif"));
        assert_eq!(mime("p.webp.bin"), Some("image/webp"));
        assert_eq!(mime("fake.png"), None);
        let ReadResult::Text(t) = any(&ws, "fake.png").unwrap() else { unreachable!() };
        assert_eq!(t.content, "just text");
    }

    #[test]
    fn image_size_cap_is_exact_with_a_hint() {
        let (tmp, ws) = setup();
        let root = tmp.path().join("ROOT");
        let mut max = PNG_1X1.to_vec();
        max.resize(MAX_IMAGE_BYTES, 0);
        fs::write(root.join("max.png"), &max).unwrap();
        max.push(0);
        fs::write(root.join("over.png"), &max).unwrap();
        let ReadResult::Image(img) = any(&ws, "max.png").unwrap() else { panic!("not an image") };
        assert_eq!(img.bytes, MAX_IMAGE_BYTES);
        let err = any(&ws, "over.png").unwrap_err();
        assert_eq!(err.code, Code::FileTooLarge);
        assert!(err.message.contains("image/png"), "{}", err.message);
        assert!(err.hint.as_deref().unwrap_or("").contains("5 MiB"));
    }

    #[test]
    fn text_limit_unchanged_for_files_that_are_not_images() {
        let (tmp, ws) = setup();
        fs::write(tmp.path().join("ROOT/over"), vec![b'a'; MAX_READ_BYTES + 1]).unwrap();
        fs::write(tmp.path().join("ROOT/short"), "ab").unwrap();
        fs::write(tmp.path().join("ROOT/empty"), "").unwrap();
        assert_eq!(any(&ws, "over").unwrap_err().code, Code::FileTooLarge);
        assert!(matches!(any(&ws, "short").unwrap(), ReadResult::Text(t) if t.content == "ab"));
        assert!(matches!(any(&ws, "empty").unwrap(), ReadResult::Text(t) if t.content.is_empty()));
    }

    #[test]
    fn image_through_symlink_outside_refused() {
        let (tmp, ws) = setup();
        fs::write(tmp.path().join("secret.png"), PNG_1X1).unwrap();
        symlink("../secret.png", tmp.path().join("ROOT/s.png")).unwrap();
        assert_eq!(any(&ws, "s.png").unwrap_err().code, Code::PathEscapesWorkspace);
    }
}
