//! Paged reads: a window of lines of a file of up to [`MAX_WINDOW_FILE_BYTES`], returned within
//! the same [`MAX_READ_BYTES`] output cap as a whole-file read.
//!
//! `offset` is the 1-based number of the first line returned, `limit` the most lines returned.
//! A line is everything up to and including its `\n` (so `\r\n` lines keep their `\r`); the last
//! line may lack the terminator. The window holds whole lines only: it ends at `limit` lines,
//! at the end of the file, or before the first line that would take `content` past
//! [`MAX_READ_BYTES`], whichever comes first. Concatenating consecutive windows gives back the
//! file byte for byte. A single line longer than the cap cannot be returned whole:
//! `FILE_TOO_LARGE`, with its line number in the details.
//!
//! The file is opened as `read_file` opens it (beneath the root, without blocking, regular files
//! only), read only as far as the window needs (never more than [`MAX_WINDOW_FILE_BYTES`] + 1
//! bytes), and its identity is checked against a fresh lookup before the window is returned.
//! The window (not the whole file) is decoded as UTF-8 fatally; `INVALID_UTF8` gives the offset
//! of the bad byte within the file.

use std::io::Read as _;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::path::RelPath;
use crate::read::{open_regular, MAX_READ_BYTES};
use crate::root::Workspace;

/// Largest file a window can be read from.
pub const MAX_WINDOW_FILE_BYTES: u64 = 64 << 20;
/// Largest `offset` or `limit`.
pub const MAX_LINE_NUMBER: u64 = u32::MAX as u64;

const CHUNK: usize = 64 * 1024;

#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ReadFileWindow")]
pub struct WindowOutput {
    /// The normalized path.
    pub path: String,
    /// The lines of the window, each with its line terminator.
    pub content: String,
    /// UTF-8 byte length of `content` (at most 65,536).
    pub bytes: usize,
    /// The `hashFile` string of the whole file (pass it as `expectedHash`).
    pub hash: String,
    /// Size of the file in bytes, as it was when opened.
    pub file_bytes: u64,
    /// The 1-based number of the first line in `content` (the requested offset).
    pub offset: u64,
    /// How many lines `content` holds.
    pub lines: u64,
    /// The line to pass as `offset` to read on; absent when the window reached the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// The number of lines in the file; present when the read reached the end of the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
}

fn check_number(name: &str, value: Option<u64>) -> Result<()> {
    if let Some(v) = value {
        if v == 0 || v > MAX_LINE_NUMBER {
            return Err(Error::invalid(
                Reason::InvalidArgumentsShape,
                format!("{name} must be an integer from 1 to {MAX_LINE_NUMBER}; lines are numbered from 1"),
            )
            .with_details(serde_json::json!({ "at": format!("arguments.{name}") })));
        }
    }
    Ok(())
}

pub fn window_file_too_large(path: &str, size: u64) -> Error {
    Error::new(Code::FileTooLarge, format!("{path} is larger than {MAX_WINDOW_FILE_BYTES} bytes"))
        .with_hint("files over 64 MiB cannot be read, even in windows; use search_files to find the lines you need")
        .with_details(serde_json::json!({ "limit": MAX_WINDOW_FILE_BYTES, "size": size }))
}

/// Where the window stands while the file is scanned.
struct Scan {
    offset: u64,
    limit: u64,
    /// Number of the line that starts at the current position.
    line_no: u64,
    /// File offset of the window's first byte.
    start: Option<u64>,
    content: Vec<u8>,
    lines: u64,
    /// Bytes of the current (unfinished) line inside the window.
    partial: Vec<u8>,
    /// The current position is inside a line (bytes since the last `\n`).
    mid_line: bool,
    /// The window is complete; `more` tells whether anything follows it.
    finished: bool,
    more: bool,
}

impl Scan {
    /// Accepts a complete line (terminator included) at the window.
    fn accept_line(&mut self, path: &str) -> Result<()> {
        if self.content.len() + self.partial.len() > MAX_READ_BYTES {
            return self.line_does_not_fit(path);
        }
        self.content.append(&mut self.partial);
        self.lines += 1;
        if self.lines >= self.limit {
            self.finished = true;
        }
        Ok(())
    }

    fn line_does_not_fit(&mut self, path: &str) -> Result<()> {
        if self.lines == 0 {
            return Err(Error::new(
                Code::FileTooLarge,
                format!("line {} of {path} is longer than {MAX_READ_BYTES} bytes", self.line_no),
            )
            .with_hint("this line is too long to return whole, even alone; use search_files to see parts of it")
            .with_details(serde_json::json!({ "limit": MAX_READ_BYTES, "line": self.line_no })));
        }
        // The window ends before this line; it remains.
        self.finished = true;
        self.more = true;
        self.partial.clear();
        Ok(())
    }

    /// Feeds `buf`, which starts at file offset `pos`. Returns how many bytes were used.
    fn feed(&mut self, path: &str, buf: &[u8], pos: u64) -> Result<usize> {
        let mut i = 0;
        while i < buf.len() {
            if self.finished {
                // Something follows the window.
                self.more = true;
                return Ok(i);
            }
            let rest = &buf[i..];
            let nl = memchr::memchr(b'\n', rest);
            if self.line_no < self.offset {
                match nl {
                    Some(n) => {
                        i += n + 1;
                        self.line_no += 1;
                        self.mid_line = false;
                    }
                    None => {
                        i = buf.len();
                        self.mid_line = true;
                    }
                }
                continue;
            }
            if self.start.is_none() {
                self.start = Some(pos + i as u64);
            }
            let end = nl.map_or(rest.len(), |n| n + 1);
            // Never hold more than the cap (plus one byte to know it is exceeded).
            let room = (MAX_READ_BYTES + 1).saturating_sub(self.content.len() + self.partial.len());
            self.partial.extend_from_slice(&rest[..end.min(room)]);
            if end > room {
                self.line_does_not_fit(path)?;
                return Ok(i);
            }
            i += end;
            if nl.is_some() {
                self.accept_line(path)?;
                self.line_no += 1;
                self.mid_line = false;
            } else {
                self.mid_line = true;
            }
        }
        Ok(i)
    }
}

/// Reads a window of `path`: lines `offset..offset+limit` (defaults: 1 and as many as fit).
pub fn read_window(
    ws: &Workspace,
    path: &RelPath,
    offset: Option<u64>,
    limit: Option<u64>,
    cancel: &Cancel,
) -> Result<WindowOutput> {
    check_number("offset", offset)?;
    check_number("limit", limit)?;
    let offset = offset.unwrap_or(1);
    let limit = limit.unwrap_or(MAX_LINE_NUMBER);
    cancel.check()?;
    ws.check()?;
    let (mut file, identity, size) = open_regular(ws, path)?;
    if size > MAX_WINDOW_FILE_BYTES {
        return Err(window_file_too_large(path.as_str(), size));
    }
    let mut scan = Scan {
        offset,
        limit,
        line_no: 1,
        start: None,
        content: Vec::new(),
        lines: 0,
        partial: Vec::new(),
        mid_line: false,
        finished: false,
        more: false,
    };
    let mut buf = vec![0u8; CHUNK];
    let mut pos: u64 = 0;
    let eof;
    // Reads to the end (the whole file's hash); the window is complete once something is known
    // to follow it.
    let mut hasher = crate::hash::Hasher::new();
    loop {
        cancel.check()?;
        // Never more than the limit + 1 bytes in all.
        let want = (CHUNK as u64).min(MAX_WINDOW_FILE_BYTES + 1 - pos) as usize;
        let n = match file.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::from_io(&e, path.as_str())),
        };
        if n == 0 {
            eof = true;
            break;
        }
        if pos == 0 {
            if let Some(mime) = crate::image::image_type(&buf[..n]) {
                // Windows of lines are for text; an image is read whole.
                return Err(Error::new(Code::InvalidUtf8, format!("{} is an image ({mime}), not text", path.as_str()))
                    .with_hint("windows of lines (offset, limit) are for text files; read the image without offset and limit to get it whole (at most 5 MiB)")
                    .with_details(serde_json::json!({ "mimeType": mime })));
            }
        }
        if pos + n as u64 > MAX_WINDOW_FILE_BYTES {
            // Grew past the limit while being read.
            return Err(window_file_too_large(path.as_str(), pos + n as u64));
        }
        hasher.update(&buf[..n]);
        if !(scan.finished && scan.more) {
            scan.feed(path.as_str(), &buf[..n], pos)?;
        }
        pos += n as u64;
    }
    let mut total_lines = None;
    if eof {
        if !scan.partial.is_empty() && !scan.finished {
            // The last line, without a terminator, inside the window.
            scan.accept_line(path.as_str())?;
        }
        if !scan.more {
            total_lines = Some(scan.line_no - 1 + u64::from(scan.mid_line));
        }
    }
    cancel.check()?;
    // The handle must still be what the name designates (no swap during the call).
    match ws.identity_of(path) {
        Ok(now) if now == identity => {}
        _ => return Err(Error::target_changed(path.as_str())),
    }
    let start = scan.start.unwrap_or(pos);
    let content = String::from_utf8(scan.content).map_err(|e| {
        let at = start + e.utf8_error().valid_up_to() as u64;
        Error::new(Code::InvalidUtf8, format!("{path} is not valid UTF-8 (first invalid byte at offset {at})"))
            .with_hint("read_file returns text files only; this looks like a binary file")
            .with_details(serde_json::json!({ "offset": at }))
    })?;
    let next_offset = scan.more.then_some(offset + scan.lines);
    Ok(WindowOutput {
        path: path.as_str().to_string(),
        bytes: content.len(),
        hash: hasher.finish(),
        content,
        file_bytes: size,
        offset,
        lines: scan.lines,
        next_offset,
        total_lines: if next_offset.is_some() { None } else { total_lines },
    })
}
