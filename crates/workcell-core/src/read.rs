//! `read_file`: one regular UTF-8 file, bounded, identity-checked.

use std::io::Read as _;

use cap_std::fs::{OpenOptions, OpenOptionsExt as _};

use crate::walk::kind_of;
use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::image::{base64, image_type, MAX_IMAGE_BYTES, SNIFF_BYTES};
use crate::path::RelPath;
use crate::root::{Identity, Workspace};

/// Largest file `read_file` returns, in bytes.
pub const MAX_READ_BYTES: usize = 65_536;

#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "ReadFileText")]
pub struct ReadOutput {
    pub path: String,
    pub content: String,
    pub bytes: usize,
    /// The `hashFile` string of the bytes returned (pass it as `expectedHash`).
    pub hash: String,
}

/// An image read by `read_file` (PNG, JPEG, GIF or WebP, recognized by content).
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ReadFileImage")]
pub struct ImageOutput {
    pub path: String,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    #[schemars(extend("enum" = ["image/png", "image/jpeg", "image/gif", "image/webp"]))]
    pub mime_type: &'static str,
    /// The file's bytes, base64 (standard alphabet, padded).
    pub data: String,
    /// The file's size in bytes.
    pub bytes: usize,
    /// The `hashFile` string of the bytes.
    pub hash: String,
}

/// What `read_file` returns: a text file's content or an image.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum ReadResult {
    Text(ReadOutput),
    Image(ImageOutput),
}

/// Opens `path` beneath the root for reading without blocking (a FIFO or device never hangs)
/// and checks that it is a regular file. Returns the file and its identity.
pub fn open_regular(ws: &Workspace, path: &RelPath) -> Result<(cap_std::fs::File, Identity, u64)> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    if path.dir_only() {
        // `name/` asks for a directory: let the kernel resolve it as one (ENOTDIR for a file),
        // and refuse whatever it is, since only regular files are read.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_DIRECTORY);
        let shown = format!("{}/", path.as_str());
        return Err(match ws.dir().open_with(&shown, &options) {
            Ok(_) => Error::not_regular(&shown, "directory"),
            Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) => Error::not_regular(&shown, "a file named with a trailing slash")
                .with_hint("a path ending in / names a directory; drop the trailing slash to name a file"),
            Err(e) => Error::from_io(&e, &shown),
        });
    }
    let file = ws.dir().open_with(path.as_str(), &options).map_err(|e| Error::from_io(&e, path.as_str()))?;
    let meta = file.metadata().map_err(|e| Error::from_io(&e, path.as_str()))?;
    if !meta.is_file() {
        return Err(Error::not_regular(path.as_str(), kind_of(&meta.file_type())));
    }
    Ok((file, Identity::of_cap(&meta), meta.len()))
}

/// Reads at most `limit + 1` bytes of `file`, checking cancellation between chunks.
pub(crate) fn read_bounded(file: &mut cap_std::fs::File, limit: usize, size_hint: u64, cancel: &Cancel) -> std::io::Result<Vec<u8>> {
    let buf = Vec::with_capacity((size_hint as usize).min(limit + 1).max(64) + 1);
    read_more(file, buf, limit, size_hint, cancel).map(|(buf, _)| buf)
}

/// Growth of a read buffer per step beyond what was reserved for the file's size.
const READ_CHUNK: usize = 64 << 10;

/// Appends to `buf` from `file` until `buf` holds `limit + 1` bytes or the file ends, checking
/// cancellation between reads (a cancelled read returns what it has). Each read asks for all
/// the room left up to `limit + 1`, so a file that fits in `buf`'s capacity costs one read
/// (fewer bytes than asked, and all of `size`, the size it had when opened: the end). Returns
/// whether the end of the file was seen.
fn read_more(file: &mut cap_std::fs::File, mut buf: Vec<u8>, limit: usize, size: u64, cancel: &Cancel) -> std::io::Result<(Vec<u8>, bool)> {
    let want = limit + 1;
    loop {
        if cancel.is_cancelled() || buf.len() >= want {
            return Ok((buf, false));
        }
        let start = buf.len();
        if start == buf.capacity() {
            buf.reserve((want - start).min(READ_CHUNK));
        }
        let end = start + (want - start).min(buf.capacity() - start);
        buf.resize(end, 0);
        match file.read(&mut buf[start..end]) {
            Ok(0) => {
                buf.truncate(start);
                return Ok((buf, true));
            }
            // Fewer bytes than asked, and at least the size the file had when opened: its end
            // (a read of a regular file is short only there), which saves the read that would
            // return 0. A file of pseudo-file systems (size 0, or one that says a page) reads on.
            Ok(n) if n < end - start && size > 0 && (start + n) as u64 >= size => {
                buf.truncate(start + n);
                return Ok((buf, true));
            }
            Ok(n) => buf.truncate(start + n),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(start),
            Err(e) => return Err(e),
        }
    }
}

/// Decodes UTF-8 fatally. `INVALID_UTF8` carries the byte offset of the first bad byte.
pub fn decode_utf8(path: &str, bytes: Vec<u8>) -> Result<String> {
    decode_text(path, bytes, "read_file returns text files only")
}

/// Decodes UTF-8 fatally, without a copy (the bytes become the string). `INVALID_UTF8` carries
/// the byte offset of the first bad byte; `rule` starts its hint (what the tool takes).
pub fn decode_text(path: &str, bytes: Vec<u8>, rule: &str) -> Result<String> {
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        Error::new(Code::InvalidUtf8, format!("{path} is not valid UTF-8 (first invalid byte at offset {offset})"))
            .with_hint(format!("{rule}; this looks like a binary file"))
            .with_details(serde_json::json!({ "offset": offset }))
    })
}

pub fn too_large(path: &str, limit: usize) -> Error {
    Error::new(Code::FileTooLarge, format!("{path} is larger than {limit} bytes"))
        .with_hint("the file is too large to read whole; read it in windows of lines: pass offset (the first line, from 1) and limit (how many lines), such as { path, offset: 1, limit: 400 }, then continue from the nextOffset of each result; or use search_files to find what you need")
        .with_details(serde_json::json!({ "limit": limit }))
}

/// Reads one regular UTF-8 file of at most [`MAX_READ_BYTES`].
pub fn read_file(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<ReadOutput> {
    cancel.check()?;
    ws.check()?;
    let (mut file, identity, size) = open_regular(ws, path)?;
    let bytes = read_bounded(&mut file, MAX_READ_BYTES, size, cancel).map_err(|e| Error::from_io(&e, path.as_str()))?;
    cancel.check()?;
    // The handle must still be what the name designates (no swap during the call).
    match ws.identity_of(path) {
        Ok(now) if now == identity => {}
        _ => return Err(Error::target_changed(path.as_str())),
    }
    if bytes.len() > MAX_READ_BYTES {
        return Err(too_large(path.as_str(), MAX_READ_BYTES));
    }
    let len = bytes.len();
    let hash = crate::hash::sha256_hex(&bytes);
    let content = decode_utf8(path.as_str(), bytes)?;
    Ok(ReadOutput { path: path.as_str().to_string(), content, bytes: len, hash })
}

fn image_too_large(path: &str, mime: &str) -> Error {
    Error::new(Code::FileTooLarge, format!("{path} is a {mime} image larger than {MAX_IMAGE_BYTES} bytes"))
        .with_hint("images are returned up to 5 MiB; ask the user for a smaller image, or make a smaller copy inside the workspace (for example with an image tool through run_command) and read that")
        .with_details(serde_json::json!({ "limit": MAX_IMAGE_BYTES, "mimeType": mime }))
}

/// `read_file`: an image (PNG, JPEG, GIF or WebP by its first bytes, at most
/// [`MAX_IMAGE_BYTES`]) as base64, any other file as [`read_file`] reads it.
pub fn read_file_or_image(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<ReadResult> {
    cancel.check()?;
    ws.check()?;
    let (mut file, identity, size) = open_regular(ws, path)?;
    let io = |e: std::io::Error| Error::from_io(&e, path.as_str());
    // The first bytes decide what it is; the first read asks for the whole file as its size
    // says (within the text limit), so a small file is read in one read (see `read_more`).
    let first = (size as usize).clamp(SNIFF_BYTES - 1, MAX_READ_BYTES);
    let (head, ended) = read_more(&mut file, Vec::with_capacity(first + 1), first, size, cancel).map_err(io)?;
    let mime = image_type(&head);
    let limit = if mime.is_some() { MAX_IMAGE_BYTES } else { MAX_READ_BYTES };
    let bytes = if ended {
        head
    } else {
        // The rest, up to the limit of what the first bytes say it is.
        let mut buf = head;
        buf.reserve((size as usize).min(limit + 1).saturating_sub(buf.len()));
        read_more(&mut file, buf, limit, size, cancel).map_err(io)?.0
    };
    cancel.check()?;
    // The handle must still be what the name designates (no swap during the call).
    match ws.identity_of(path) {
        Ok(now) if now == identity => {}
        _ => return Err(Error::target_changed(path.as_str())),
    }
    let len = bytes.len();
    match mime {
        Some(mime) => {
            if len > MAX_IMAGE_BYTES {
                return Err(image_too_large(path.as_str(), mime));
            }
            let hash = crate::hash::sha256_hex(&bytes);
            Ok(ReadResult::Image(ImageOutput { path: path.as_str().to_string(), mime_type: mime, data: base64(&bytes), bytes: len, hash }))
        }
        None => {
            if len > MAX_READ_BYTES {
                return Err(too_large(path.as_str(), MAX_READ_BYTES));
            }
            let hash = crate::hash::sha256_hex(&bytes);
            let content = decode_utf8(path.as_str(), bytes)?;
            Ok(ReadResult::Text(ReadOutput { path: path.as_str().to_string(), content, bytes: len, hash }))
        }
    }
}
