//! Approval hashes: what a write to a path would replace, as one string.
//!
//! [`hash_file`] returns `"absent"`, `"not a regular file: <type>"` or the lowercase hex SHA-256
//! of the content. A host shows the user a proposed write together with this string and later
//! passes it back as `expectedHash`; the write proceeds only while the string is unchanged.
//!
//! The final component is looked at without following first (an lstat beneath the root), so a
//! directory, FIFO, socket or device is described without ever being opened. A final symlink
//! is then followed beneath the root, because the write tools write through a symlink that
//! resolves inside: the hash must describe the file such a write would replace, or a change to
//! the link's target would go unnoticed. A symlink leading outside is `PATH_ESCAPES_WORKSPACE`
//! and a loop `SYMLINK_LOOP` (the write would be refused the same way); a dangling symlink
//! inside is `"absent"`. The content is read without blocking, at most [`MAX_HASH_BYTES`]
//! (`FILE_TOO_LARGE` beyond), and the opened file's identity is checked against a fresh lookup
//! afterwards (`TARGET_CHANGED` when the name was swapped meanwhile).

use std::io::Read;

use cap_std::fs::{OpenOptions, OpenOptionsExt as _};
use sha2::{Digest as _, Sha256};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::path::RelPath;
use crate::walk::kind_of;
use crate::root::{Identity, Workspace};

/// Largest file hashed.
pub const MAX_HASH_BYTES: u64 = 64 << 20;

/// The string for a path with nothing at it.
pub const ABSENT: &str = "absent";

pub(crate) fn not_regular(kind: &str) -> String {
    format!("not a regular file: {kind}")
}

fn too_large(path: &str) -> Error {
    Error::new(Code::FileTooLarge, format!("{path} is larger than {MAX_HASH_BYTES} bytes"))
        .with_hint("files over 64 MiB cannot be hashed for approval; choose a smaller file")
        .with_details(serde_json::json!({ "limit": MAX_HASH_BYTES }))
}

fn is_enoent(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOENT)
}

/// Hex SHA-256 of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// The hash of bytes fed in pieces (a file read in chunks): the same string as
/// [`sha256_hex`] of their concatenation.
pub struct Hasher(Sha256);

impl Hasher {
    pub fn new() -> Self {
        Hasher(Sha256::new())
    }
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
    pub fn finish(self) -> String {
        hex(&self.0.finalize())
    }
}

impl Default for Hasher {
    fn default() -> Self {
        Self::new()
    }
}

/// Lowercase hex of `digest`, two digits a byte (a table, not `format!`: every read_file
/// result carries one, and formatting each byte cost about as much as a 4 KiB read's copy).
fn hex(digest: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(digest.len() * 2);
    for &b in digest {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
    // Only ASCII digits were pushed.
    String::from_utf8(out).unwrap_or_default()
}

/// `"absent"`, `"not a regular file: <type>"` or the hex SHA-256 of what `path` designates.
pub fn hash_file(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<String> {
    cancel.check()?;
    ws.check()?;
    let p = path.as_str();
    let lmeta = match ws.dir().symlink_metadata(p) {
        Ok(m) => m,
        Err(e) if is_enoent(&e) => return Ok(ABSENT.to_string()),
        Err(e) => return Err(Error::from_io(&e, p)),
    };
    if !lmeta.is_symlink() && !lmeta.is_file() {
        return Ok(not_regular(kind_of(&lmeta.file_type())));
    }
    if lmeta.is_symlink() {
        // What a write through the link would replace.
        match ws.dir().metadata(p) {
            Ok(m) if !m.is_file() => return Ok(not_regular(kind_of(&m.file_type()))),
            Ok(_) => {}
            Err(e) if is_enoent(&e) => return Ok(ABSENT.to_string()),
            Err(e) => return Err(Error::from_io(&e, p)),
        }
    }
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = match ws.dir().open_with(p, &options) {
        Ok(f) => f,
        Err(e) if is_enoent(&e) => return Ok(ABSENT.to_string()),
        Err(e) => return Err(Error::from_io(&e, p)),
    };
    let meta = file.metadata().map_err(|e| Error::from_io(&e, p))?;
    if !meta.is_file() {
        // Swapped between the lookups; still never read.
        return Ok(not_regular(kind_of(&meta.file_type())));
    }
    if meta.len() > MAX_HASH_BYTES {
        return Err(too_large(p));
    }
    let identity = Identity::of_cap(&meta);
    let digest = digest(&file, p, cancel)?;
    cancel.check()?;
    match ws.identity_of(path) {
        Ok(now) if now == identity => {}
        _ => return Err(Error::target_changed(p)),
    }
    Ok(digest)
}

/// The hex SHA-256 of an open file's content, read to its end in 64 KiB chunks (cancellable
/// between them); `FILE_TOO_LARGE` past [`MAX_HASH_BYTES`], whatever its size claimed.
pub(crate) fn digest(file: impl Read, shown: &str, cancel: &Cancel) -> Result<String> {
    let mut hasher = Hasher::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut total: u64 = 0;
    let mut reader = file.take(MAX_HASH_BYTES + 1);
    loop {
        cancel.check()?;
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_io(&e, shown)),
        };
        total += n as u64;
        if total > MAX_HASH_BYTES {
            return Err(too_large(shown));
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn sha256_hex_is_the_lowercase_hex_of_the_digest() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[0x00, 0x0f, 0xf0, 0xff, 0x5a]), "000ff0ff5a");
    }

    fn hash(ws: &Workspace, p: &str) -> Result<String> {
        hash_file(ws, &crate::parse_path(p).unwrap(), &Cancel::new())
    }

    #[test]
    fn known_digest() {
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }

    #[test]
    fn absent_regular_and_others() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("f"), "abc").unwrap();
        fs::create_dir(root.join("d")).unwrap();
        nix::unistd::mkfifo(&root.join("p"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        std::os::unix::fs::symlink("f", root.join("link")).unwrap();
        std::os::unix::fs::symlink("missing", root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("d", root.join("dirlink")).unwrap();
        fs::write(tmp.path().join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("../secret", root.join("out")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        let ws = Workspace::open(&root).unwrap();
        assert_eq!(hash(&ws, "missing").unwrap(), "absent");
        assert_eq!(hash(&ws, "f").unwrap(), sha256_hex(b"abc"));
        assert_eq!(hash(&ws, "link").unwrap(), sha256_hex(b"abc"));
        assert_eq!(hash(&ws, "dangling").unwrap(), "absent");
        assert_eq!(hash(&ws, "d").unwrap(), "not a regular file: directory");
        assert_eq!(hash(&ws, "dirlink").unwrap(), "not a regular file: directory");
        assert_eq!(hash(&ws, "p").unwrap(), "not a regular file: fifo");
        assert_eq!(hash(&ws, "out").unwrap_err().code, Code::PathEscapesWorkspace);
        assert_eq!(hash(&ws, "loop").unwrap_err().code, Code::SymlinkLoop);
    }

    #[test]
    fn over_the_limit_is_file_too_large() {
        let tmp = tempfile::tempdir().unwrap();
        let f = fs::File::create(tmp.path().join("big")).unwrap();
        f.set_len(MAX_HASH_BYTES + 1).unwrap();
        let exact = fs::File::create(tmp.path().join("exact")).unwrap();
        exact.set_len(MAX_HASH_BYTES).unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        assert_eq!(hash(&ws, "big").unwrap_err().code, Code::FileTooLarge);
        assert_eq!(hash(&ws, "exact").unwrap().len(), 64);
    }

    #[test]
    fn cancelled_before_reading() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("f"), "x").unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        let cancel = Cancel::new();
        cancel.cancel();
        assert!(hash_file(&ws, &crate::parse_path("f").unwrap(), &cancel).unwrap_err().is_cancelled());
    }
}
