//! Checks without effects: the arguments of one write ([`WriteRequest`]), and the
//! `expectedHash` comparison made under the target's lock.

use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::guard::Guard;
use crate::hash;
use crate::path::RelPath;

use super::at::{io_err, lstat_at, open_at, AtTarget, Existing};
use super::resolve::Resolved;

/// Largest content `write_file` accepts, in UTF-8 bytes.
pub const MAX_WRITE_BYTES: usize = 65_536;
/// Largest `maxContentBytes` a host may configure for write_file and edit_file.
pub const MAX_WRITE_BYTES_CEILING: usize = 16 * 1024 * 1024;

/// The arguments of one write, checked without touching the filesystem.
#[derive(Clone, Debug)]
pub struct WriteRequest {
    pub(crate) path: RelPath,
    pub(crate) content: String,
    pub(crate) expected_hash: Option<String>,
    pub(crate) guard: Option<Arc<Guard>>,
}

impl WriteRequest {
    /// Applies every effect-free check: the path grammar, no trailing `/` (it would name a
    /// directory), content of at most `max_bytes` UTF-8 bytes.
    pub fn new(path: &str, content: String, max_bytes: usize) -> Result<Self> {
        let path = check_path(path)?;
        check_content_len(content.len(), max_bytes)?;
        Ok(WriteRequest { path, content, expected_hash: None, guard: None })
    }

    /// Like [`WriteRequest::new`] for strings that arrived as UTF-16: lone surrogates in the
    /// path or the content are `INVALID_UNICODE`.
    pub fn from_utf16(path: &[u16], content: &[u16], max_bytes: usize) -> Result<Self> {
        let path = crate::path::from_utf16(path)?;
        let path = check_path(&path)?;
        // Each UTF-16 unit is at least one UTF-8 byte, so this bounds the work on huge input;
        // the well-formedness check still comes first for content that fits.
        let content = crate::path::from_utf16(content)?;
        check_content_len(content.len(), max_bytes)?;
        Ok(WriteRequest { path, content, expected_hash: None, guard: None })
    }

    pub fn path(&self) -> &RelPath {
        &self.path
    }

    pub fn content(&self) -> &str {
        &self.content
    }

    /// Writes only if the target still has this approval hash (else `TARGET_CHANGED`).
    pub fn with_expected_hash(mut self, hash: Option<String>) -> Self {
        self.expected_hash = hash;
        self
    }

    /// Applies a write guard (protected globs, links refused).
    pub fn with_guard(mut self, guard: Option<Arc<Guard>>) -> Self {
        self.guard = guard;
        self
    }
}

/// The path grammar, plus the write-only rule that a file path may not end in `/` or `/.`.
pub fn check_path(raw: &str) -> Result<RelPath> {
    let path = crate::path::parse(raw)?;
    if path.dir_only() {
        return Err(Error::invalid(
            Reason::InvalidRelativePath,
            format!(
                "a path ending in / names a directory; write_file needs a file path, such as {}",
                path.as_str()
            ),
        ));
    }
    Ok(path)
}

fn check_content_len(len: usize, max_bytes: usize) -> Result<()> {
    if len > max_bytes {
        return Err(Error::invalid(
            Reason::ContentTooLarge,
            format!("the content is {len} UTF-8 bytes; write_file accepts at most {max_bytes}: split it into several smaller files"),
        )
        .with_details(serde_json::json!({ "bytes": len, "limit": max_bytes })));
    }
    Ok(())
}

/// `expectedHash`: what the target holds now (under its lock) must still hash to `expected`
/// (the [`crate::hash::hash_file`] string: `"absent"` for a free name).
pub(crate) fn check_expected_hash(target: &Resolved, path: &RelPath, expected: &str, cancel: &Cancel) -> Result<()> {
    let now = hash_at(&target.dir, &target.name, path.as_str(), cancel)?;
    if now != expected {
        return Err(hash_mismatch(path.as_str(), expected, &now));
    }
    Ok(())
}

pub(crate) fn hash_mismatch(shown: &str, expected: &str, now: &str) -> Error {
    Error::new(Code::TargetChanged, format!("{shown} no longer has the expected hash"))
        .with_hint("the file changed since its hash was taken; read it again, then retry with its current content (and hash)")
        .with_details(serde_json::json!({ "changed": "content", "expectedHash": expected, "actualHash": now }))
}

/// The approval hash of a resolved write target (a name in an open directory, any final
/// symlink already followed), computed under the target's lock. Same strings as [`hash::hash_file`].
pub(crate) fn hash_at(dir: &impl std::os::fd::AsFd, name: &std::ffi::OsStr, shown: &str, cancel: &Cancel) -> Result<String> {
    let file = match open_at(dir, name, shown)? {
        AtTarget::Absent => return Ok(hash::ABSENT.to_string()),
        AtTarget::Other(kind) => return Ok(hash::not_regular(kind)),
        AtTarget::File(f) => f,
    };
    hash::digest(&file, shown, cancel)
}

/// The approval string of a name itself, its final component not followed: what `move_file`,
/// `delete_file`, `make_directory` and a patch's `*** Delete File` act on. A symlink is
/// `"symlink: <its text>"` (the link is what moves or goes, so repointing it changes the
/// string); anything else is [`hash_at`]'s string.
pub(crate) fn name_state(dir: &impl std::os::fd::AsFd, name: &std::ffi::OsStr, shown: &str, cancel: &Cancel) -> Result<String> {
    match lstat_at(dir, name).map_err(|e| Error::from_io(&e, shown))? {
        Existing::Symlink => match rustix::fs::readlinkat(dir, name, Vec::new()) {
            Ok(text) => Ok(format!("symlink: {}", String::from_utf8_lossy(text.as_bytes()))),
            Err(rustix::io::Errno::NOENT) => Ok(hash::ABSENT.to_string()),
            Err(e) => Err(Error::from_io(&io_err(e), shown)),
        },
        Existing::Absent => Ok(hash::ABSENT.to_string()),
        Existing::Other(kind) => Ok(hash::not_regular(kind)),
        Existing::Regular { .. } => hash_at(dir, name, shown, cancel),
    }
}
