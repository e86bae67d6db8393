//! The checkpoint store: a private directory outside the workspace.
//!
//! Layout (all beneath one directory, created 0700):
//! - `objects/ab/cdef…`: file contents, named by their SHA-256 (so one content is kept once,
//!   whichever checkpoint and path it belongs to);
//! - `manifests/<id>`: one checkpoint: its header (id, label, time, counts) and one line per
//!   recorded file (mode, size, hash, path) or symlink (text, path);
//! - `statcache`: the stat cache (its own module); `usage`: the bytes of the objects;
//! - `tmp/`: what is being written; `lock`: the lock that orders processes.
//!
//! Every file is written under `tmp/` and renamed into place, so a host killed at any moment
//! leaves each name whole or absent. A checkpoint's new objects and its manifest are written
//! under `tmp/` and made durable by one `syncfs`, the objects renamed into `objects/` and that
//! made durable by a second, then the manifest renamed into `manifests/` and that directory
//! fsynced ([`Store::commit`], [`Store::publish`]): a manifest that exists names only objects
//! that exist whole, after a crash of the host or of the machine. The stat cache and the usage
//! count are replaced without waiting for the disk (checked when read, recounted by a
//! collection). Removal goes the other way (manifest first, then the objects no other
//! manifest names), so a kill in between leaves unreferenced objects, collected by the next
//! collection. `create`, `drop` and collection hold the lock exclusively; `list`, `diff` and
//! `rewind` share it (the objects they read are not collected under them).

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, OpenOptions};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::hash::Hasher;

use super::scan::{Record, State};

/// The default store of a root: `$XDG_CACHE_HOME` (or `~/.cache`) `/workcell/checkpoints/` and
/// the first 32 hex digits of the SHA-256 of the canonical root.
pub fn default_dir(canonical_root: &Path) -> std::result::Result<PathBuf, String> {
    let base = match std::env::var_os("XDG_CACHE_HOME").filter(|v| Path::new(v).is_absolute()) {
        Some(x) => PathBuf::from(x),
        None => match std::env::var_os("HOME").filter(|v| Path::new(v).is_absolute()) {
            Some(h) => PathBuf::from(h).join(".cache"),
            None => return Err("no cache directory: set XDG_CACHE_HOME or HOME, or pass storeDir".into()),
        },
    };
    use std::os::unix::ffi::OsStrExt as _;
    let key = crate::hash::sha256_hex(canonical_root.as_os_str().as_bytes());
    Ok(base.join("workcell").join("checkpoints").join(&key[..32]))
}

/// One checkpoint as `list` shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CheckpointSummary")]
pub struct Summary {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Milliseconds since the epoch.
    #[serde(serialize_with = "crate::json::number")]
    pub created_at: u64,
    /// Files and symlinks recorded.
    #[serde(serialize_with = "crate::json::number")]
    pub files: u64,
    /// Their size in bytes.
    #[serde(serialize_with = "crate::json::number")]
    pub bytes: u64,
}

/// A whole manifest.
pub(crate) struct Manifest {
    pub summary: Summary,
    /// Sorted by path bytes.
    pub records: Vec<Record>,
    /// Paths over `maxFileBytes` when recorded (not kept: a diff leaves them out).
    pub not_kept: Vec<(Vec<u8>, u64)>,
}

pub(crate) struct Store {
    dir: Dir,
    path: PathBuf,
}

/// The new objects of one checkpoint: written under `tmp/`, named together by
/// [`Store::commit`] once durable.
#[derive(Default)]
pub(crate) struct Batch {
    pending: Vec<([u8; 32], String)>,
    named: HashSet<[u8; 32]>,
}

/// The lock, released on drop (closing the descriptor releases the `flock`).
pub(crate) struct Lock(#[allow(dead_code)] std::fs::File);

const MAGIC: &str = "workcell-checkpoint 1";

fn store_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Code::IoError, format!("the checkpoint store: {what}: {e}"))
        .with_hint("the checkpoint store could not be used; check the disk (space, permissions) or report the problem to the user")
}

/// `Err(not found)` unless `id` is one this store could have made.
pub(crate) fn check_id(id: &str) -> Result<()> {
    let b = id.as_bytes();
    let ok = b.len() == 21 && b[12] == b'-' && b.iter().enumerate().all(|(i, c)| i == 12 || matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if ok { Ok(()) } else { Err(super::not_found(id)) }
}

/// Percent-escapes bytes that are not printable ASCII, `%` and space (one field of a line).
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    push_escaped(&mut out, bytes);
    out
}

/// [`escape`] onto `out`.
pub(crate) fn push_escaped(out: &mut String, bytes: &[u8]) {
    let plain = |b: u8| b > b' ' && b < 0x7f && b != b'%';
    if bytes.is_empty() {
        out.push('%');
    } else if bytes.iter().all(|&b| plain(b)) {
        out.push_str(std::str::from_utf8(bytes).expect("printable ASCII"));
    } else {
        for &b in bytes {
            if plain(b) {
                out.push(b as char);
            } else {
                out.push('%');
                push_hex_byte(out, b);
            }
        }
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_hex_byte(out: &mut String, b: u8) {
    out.push(HEX[(b >> 4) as usize] as char);
    out.push(HEX[(b & 15) as usize] as char);
}

/// A hash's 64 hex digits onto `out`.
pub(crate) fn push_hex(out: &mut String, h: &[u8; 32]) {
    for &b in h {
        push_hex_byte(out, b);
    }
}

pub(crate) fn unescape(s: &str) -> Option<Vec<u8>> {
    if s == "%" {
        return Some(Vec::new());
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(h, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

pub(crate) fn hex(h: &[u8; 32]) -> String {
    let mut s = String::with_capacity(64);
    push_hex(&mut s, h);
    s
}

pub(crate) fn unhex(s: &str) -> Option<[u8; 32]> {
    let b = s.as_bytes();
    if b.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, o) in out.iter_mut().enumerate() {
        *o = (digit(b[2 * i])? << 4) | digit(b[2 * i + 1])?;
    }
    Some(out)
}

/// Creates the directory `name` 0700 beneath `dir`; an existing one is fine.
fn mkdir_private(dir: &Dir, name: &str) -> std::io::Result<()> {
    match rustix::fs::mkdirat(dir, name, rustix::fs::Mode::from_raw_mode(0o700)) {
        Ok(()) | Err(rustix::io::Errno::EXIST) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

fn object_name(h: &[u8; 32]) -> (String, String) {
    let x = hex(h);
    (format!("objects/{}", &x[..2]), x[2..].to_string())
}

impl Store {
    /// Opens the store directory, creating it (and its parents) 0700 when missing. The
    /// directory must be the user's own and not reachable by others.
    pub(crate) fn open(path: &Path, root: &Path) -> std::result::Result<Store, String> {
        let shown = path.display();
        // A directory that exists must be a store already, or empty: never `/`, a home
        // directory or another program's files.
        if let Ok(entries) = std::fs::read_dir(path) {
            let mut names: Vec<std::ffi::OsString> = entries.flatten().map(|e| e.file_name()).collect();
            names.sort();
            if !names.is_empty() && !names.iter().any(|n| n == "manifests") {
                return Err(format!("{shown} is neither empty nor a checkpoint store; choose a directory of its own"));
            }
        }
        let mut b = std::fs::DirBuilder::new();
        use std::os::unix::fs::DirBuilderExt as _;
        b.recursive(true).mode(0o700);
        b.create(path).map_err(|e| format!("{shown} could not be created: {e}"))?;
        let canonical = std::fs::canonicalize(path).map_err(|e| format!("{shown}: {e}"))?;
        if canonical.starts_with(root) {
            return Err(format!("{shown} leads inside the workspace; choose a directory outside it"));
        }
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(|e| format!("{shown}: {e}"))?;
        let meta = dir.dir_metadata().map_err(|e| format!("{shown}: {e}"))?;
        use cap_std::fs::MetadataExt as _;
        if meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(format!("{shown} belongs to another user; choose a directory of your own"));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(format!("{shown} can be read or written by other users; the store must be private (chmod 700)"));
        }
        for d in ["objects", "manifests", "tmp"] {
            mkdir_private(&dir, d).map_err(|e| format!("{shown}/{d}: {e}"))?;
        }
        Ok(Store { dir, path: canonical })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Takes the store's lock (exclusive for writers), waiting while another holds it.
    pub(crate) fn lock(&self, exclusive: bool, cancel: &Cancel) -> Result<Lock> {
        let file = self
            .dir
            .open_with("lock", OpenOptions::new().read(true).write(true).create(true))
            .map_err(|e| store_err("lock", e))?
            .into_std();
        let op = if exclusive { rustix::fs::FlockOperation::NonBlockingLockExclusive } else { rustix::fs::FlockOperation::NonBlockingLockShared };
        let mut wait = std::time::Duration::from_millis(1);
        loop {
            cancel.check()?;
            match rustix::fs::flock(&file, op) {
                Ok(()) => return Ok(Lock(file)),
                Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {
                    // Another process (or instance) writes the store: poll, staying cancellable
                    // (a watched call says why it waits).
                    cancel.progress().message(|| "waiting for the checkpoint store: another process is using it".to_string());
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(std::time::Duration::from_millis(50));
                }
                Err(e) => return Err(store_err("lock", e)),
            }
        }
    }

    /// Removes what a killed writer left in `tmp/` (call under the exclusive lock). True when
    /// something was left (the usage count may then be off: collect).
    pub(crate) fn clean_tmp(&self) -> bool {
        let Ok(entries) = self.dir.read_dir("tmp") else { return false };
        let mut any = false;
        for e in entries.flatten() {
            any = true;
            let _ = self.dir.remove_file(Path::new("tmp").join(e.file_name()));
        }
        any
    }

    fn tmp_name() -> String {
        crate::temp_name::random_name("tmp/", 12)
    }

    /// Whether the object exists.
    pub(crate) fn has_object(&self, h: &[u8; 32]) -> bool {
        let (d, n) = object_name(h);
        self.dir.symlink_metadata(format!("{d}/{n}")).is_ok_and(|m| m.is_file())
    }

    /// Opens an object for reading.
    pub(crate) fn open_object(&self, h: &[u8; 32]) -> Result<std::fs::File> {
        let (d, n) = object_name(h);
        self.dir
            .open(format!("{d}/{n}"))
            .map(|f| f.into_std())
            .map_err(|e| store_err(&format!("object {}", hex(h)), e))
    }

    /// Copies `src` (at most `limit` bytes) into a temp of the store, added to `batch` (named
    /// by [`Store::commit`]). Returns its hash, its length and the bytes it adds to the store
    /// (0 when the content is there already, or in the batch). `buf` is the copy buffer (kept
    /// by the caller from one file to the next); a content that fits in it and is stored
    /// already is never written.
    pub(crate) fn put(&self, batch: &mut Batch, src: &mut impl std::io::Read, limit: u64, buf: &mut Vec<u8>, cancel: &Cancel) -> Result<([u8; 32], u64, u64)> {
        const CHUNK: usize = 128 * 1024;
        if buf.len() < CHUNK {
            buf.resize(CHUNK, 0);
        }
        let mut src = src.take(limit);
        let mut hasher = Hasher::new();
        let mut len = 0u64;
        let read = |src: &mut std::io::Take<&mut _>, buf: &mut [u8]| -> Result<usize> {
            // Fills the buffer (or reaches the end): a small file is one chunk.
            let mut filled = 0;
            while filled < buf.len() {
                cancel.check()?;
                match std::io::Read::read(src, &mut buf[filled..]) {
                    Ok(0) => break,
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(Error::from_io(&e, "a file being recorded")),
                }
            }
            Ok(filled)
        };
        let mut n = read(&mut src, buf)?;
        hasher.update(&buf[..n]);
        len += n as u64;
        // A content that fits in the buffer is hashed before any write: a known one is not
        // written again.
        let whole = n < buf.len();
        let mut hasher = Some(hasher);
        let known = if whole {
            let h = unhex(&hasher.take().expect("a hasher").finish()).expect("a SHA-256 is 64 hex digits");
            if batch.named.contains(&h) || self.has_object(&h) {
                return Ok((h, len, 0));
            }
            Some(h)
        } else {
            None
        };
        let tmp = Self::tmp_name();
        let mut out = self
            .dir
            .open_with(&tmp, OpenOptions::new().write(true).create_new(true))
            .map_err(|e| store_err("a new object", e))?;
        let remove = |dir: &Dir| {
            let _ = dir.remove_file(&tmp);
        };
        loop {
            if let Err(e) = out.write_all(&buf[..n]) {
                remove(&self.dir);
                return Err(store_err("writing an object", e));
            }
            if n < buf.len() {
                break;
            }
            n = match read(&mut src, buf) {
                Ok(n) => n,
                Err(e) => {
                    remove(&self.dir);
                    return Err(e);
                }
            };
            if let Some(h) = hasher.as_mut() {
                h.update(&buf[..n]);
            }
            len += n as u64;
        }
        drop(out);
        let h = match known {
            Some(h) => h,
            None => {
                let h = unhex(&hasher.expect("a content not hashed whole is hashed as copied").finish()).expect("a SHA-256 is 64 hex digits");
                if batch.named.contains(&h) || self.has_object(&h) {
                    remove(&self.dir);
                    return Ok((h, len, 0));
                }
                h
            }
        };
        batch.named.insert(h);
        batch.pending.push((h, tmp));
        Ok((h, len, len))
    }

    /// Writes `bytes` under a temp name of the store (not synced); returns the name, for
    /// [`Store::commit`] and [`Store::publish`].
    pub(crate) fn stage(&self, bytes: &[u8]) -> Result<String> {
        let tmp = Self::tmp_name();
        let written = self.dir.open_with(&tmp, OpenOptions::new().write(true).create_new(true)).and_then(|mut f| f.write_all(bytes));
        if let Err(e) = written {
            let _ = self.dir.remove_file(&tmp);
            return Err(store_err("a new file", e));
        }
        Ok(tmp)
    }

    /// Makes the batch's objects and the `staged` temps durable, then names the objects: after
    /// this, every object of the batch exists whole under its name, durably, and so do the
    /// staged temps' contents (still under their temp names). With new objects: one `syncfs`
    /// before the renames and one after (two waits for the disk, however many objects: syncing
    /// each file and each `objects/xx` directory cost ten times more for ten files, measured);
    /// without, the staged temps alone are synced.
    pub(crate) fn commit(&self, batch: Batch, staged: &[&str]) -> Result<()> {
        if batch.pending.is_empty() {
            for name in staged {
                self.dir.open(name).and_then(|f| f.into_std().sync_data()).map_err(|e| store_err("sync", e))?;
            }
            return Ok(());
        }
        self.sync()?;
        for (h, tmp) in &batch.pending {
            let (d, n) = object_name(h);
            let named = mkdir_private(&self.dir, &d).and_then(|()| self.dir.rename(tmp, &self.dir, format!("{d}/{n}")));
            if let Err(e) = named {
                for (_, t) in &batch.pending {
                    let _ = self.dir.remove_file(t);
                }
                return Err(store_err("storing an object", e));
            }
        }
        self.sync()
    }

    /// Renames the staged temp `tmp` (made durable by [`Store::commit`]) onto `name` and makes
    /// the rename durable.
    pub(crate) fn publish(&self, tmp: &str, name: &str) -> Result<()> {
        let result = (|| -> std::io::Result<()> {
            self.dir.rename(tmp, &self.dir, name)?;
            let parent = Path::new(name).parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            crate::write::fsync_dir(&self.dir.open_dir(parent)?)
        })();
        if result.is_err() {
            let _ = self.dir.remove_file(tmp);
        }
        result.map_err(|e| store_err(name, e))
    }

    /// Removes the temps of a batch that will not be committed.
    pub(crate) fn discard(&self, batch: Batch) {
        for (_, t) in batch.pending {
            let _ = self.dir.remove_file(t);
        }
    }

    /// Removes a staged temp that will not be published.
    pub(crate) fn unstage(&self, tmp: &str) {
        let _ = self.dir.remove_file(tmp);
    }

    /// Makes everything written so far durable (one `syncfs` for the store's file system).
    pub(crate) fn sync(&self) -> Result<()> {
        // The store's handle may be an `O_PATH` descriptor, which syncfs refuses: a real one.
        let fd = rustix::fs::openat(self.dir.as_fd(), ".", rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
            .map_err(|e| store_err("sync", e))?;
        rustix::fs::syncfs(&fd).map_err(|e| store_err("sync", e))
    }

    /// Writes `name` (relative to the store) whole: a temp, fsynced, renamed, the directory
    /// fsynced.
    pub(crate) fn write_whole(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let tmp = self.stage(bytes)?;
        if let Err(e) = self.dir.open(&tmp).and_then(|f| f.into_std().sync_all()) {
            self.unstage(&tmp);
            return Err(store_err(name, e));
        }
        self.publish(&tmp, name)
    }

    /// Replaces `name` whole (a temp renamed onto it), without waiting for the disk: what a
    /// crash can lose or cut short, and a reader detects.
    pub(crate) fn write_replace(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let tmp = self.stage(bytes)?;
        self.dir.rename(&tmp, &self.dir, name).map_err(|e| {
            self.unstage(&tmp);
            store_err(name, e)
        })
    }

    /// Removes `name` if it exists, durably.
    pub(crate) fn remove_durably(&self, name: &str) -> Result<()> {
        match self.dir.remove_file(name) {
            Ok(()) => crate::write::fsync_dir(&self.dir.open_dir(".").map_err(|e| store_err(name, e))?).map_err(|e| store_err(name, e)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(store_err(name, e)),
        }
    }

    pub(crate) fn read_small(&self, name: &str) -> Option<Vec<u8>> {
        let mut f = self.dir.open(name).ok()?;
        let mut v = Vec::new();
        f.read_to_end(&mut v).ok()?;
        Some(v)
    }

    /// Opens a file of the store for buffered reading.
    pub(crate) fn reader(&self, name: &str) -> Option<BufReader<std::fs::File>> {
        self.dir.open(name).ok().map(|f| BufReader::with_capacity(64 * 1024, f.into_std()))
    }

    /// Bytes of the objects, as counted at the last collection and since.
    pub(crate) fn usage(&self) -> Option<u64> {
        String::from_utf8(self.read_small("usage")?).ok()?.trim().parse().ok()
    }

    /// Counts the objects' bytes. Written without waiting for the disk: a crash of the machine
    /// (not of the host, whose writes the kernel keeps) can leave the count behind by the last
    /// checkpoint's new bytes until the next collection recounts.
    pub(crate) fn set_usage(&self, bytes: u64) -> Result<()> {
        self.write_replace("usage", bytes.to_string().as_bytes())
    }

    /// A manifest's bytes (staged, then published as `manifests/<id>`: the last step of a
    /// checkpoint).
    pub(crate) fn encode_manifest(m: &Manifest) -> Vec<u8> {
        use std::fmt::Write as _;
        let mut text = String::with_capacity(64 + m.records.len() * 100);
        text.push_str(MAGIC);
        text.push('\n');
        let s = &m.summary;
        let _ = write!(text, "id {}\ncreated {}\nfiles {}\nbytes {}\n", s.id, s.created_at, s.files, s.bytes);
        if let Some(l) = &s.label {
            text.push_str("label ");
            push_escaped(&mut text, l.as_bytes());
            text.push('\n');
        }
        for (p, size) in &m.not_kept {
            let _ = write!(text, "notkept {size} ");
            push_escaped(&mut text, p);
            text.push('\n');
        }
        for r in &m.records {
            match &r.state {
                State::File { mode, size, hash } => {
                    let _ = write!(text, "f {mode:o} {size} ");
                    push_hex(&mut text, hash);
                }
                State::Link { target } => {
                    text.push_str("l ");
                    push_escaped(&mut text, target);
                }
            }
            text.push(' ');
            push_escaped(&mut text, &r.path);
            text.push('\n');
        }
        text.push_str("end\n");
        text.into_bytes()
    }

    /// Reads a manifest: its header only (`records: false`) or whole.
    pub(crate) fn read_manifest(&self, id: &str, records: bool) -> Result<Manifest> {
        check_id(id)?;
        let Some(reader) = self.reader(&format!("manifests/{id}")) else { return Err(super::not_found(id)) };
        let bad = || store_err(&format!("manifest {id}"), "it is damaged");
        let mut lines = reader.lines();
        if lines.next().and_then(|l| l.ok()).as_deref() != Some(MAGIC) {
            return Err(bad());
        }
        let mut summary = Summary { id: String::new(), label: None, created_at: 0, files: 0, bytes: 0 };
        let mut out = Vec::new();
        let mut not_kept = Vec::new();
        let mut ended = false;
        for line in lines {
            let line = line.map_err(|e| store_err(&format!("manifest {id}"), e))?;
            let mut f = line.split(' ');
            match f.next() {
                Some("id") => summary.id = f.next().ok_or_else(bad)?.to_string(),
                Some("created") => summary.created_at = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?,
                Some("files") => summary.files = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?,
                Some("bytes") => summary.bytes = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?,
                Some("label") => {
                    let l = f.next().and_then(unescape).ok_or_else(bad)?;
                    summary.label = Some(String::from_utf8_lossy(&l).into_owned());
                }
                Some("notkept") => {
                    let size = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
                    let p = f.next().and_then(unescape).ok_or_else(bad)?;
                    not_kept.push((p, size));
                }
                Some("f") => {
                    if !records {
                        continue;
                    }
                    let mode = f.next().and_then(|v| u32::from_str_radix(v, 8).ok()).ok_or_else(bad)?;
                    let size = f.next().and_then(|v| v.parse().ok()).ok_or_else(bad)?;
                    let hash = f.next().and_then(unhex).ok_or_else(bad)?;
                    let path = f.next().and_then(unescape).ok_or_else(bad)?;
                    out.push(Record { path, state: State::File { mode, size, hash } });
                }
                Some("l") => {
                    if !records {
                        continue;
                    }
                    let target = f.next().and_then(unescape).ok_or_else(bad)?;
                    let path = f.next().and_then(unescape).ok_or_else(bad)?;
                    out.push(Record { path, state: State::Link { target } });
                }
                Some("end") => {
                    ended = true;
                    break;
                }
                _ => return Err(bad()),
            }
        }
        if !ended || summary.id != id {
            return Err(bad());
        }
        Ok(Manifest { summary, records: out, not_kept })
    }

    /// The ids of the manifests, oldest first (ids start with the creation time).
    pub(crate) fn ids(&self) -> Result<Vec<String>> {
        let mut ids: Vec<String> = self
            .dir
            .read_dir("manifests")
            .map_err(|e| store_err("manifests", e))?
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| check_id(n).is_ok())
            .collect();
        ids.sort();
        Ok(ids)
    }

    pub(crate) fn summaries(&self) -> Result<Vec<Summary>> {
        let mut out = Vec::new();
        for id in self.ids()? {
            match self.read_manifest(&id, false) {
                Ok(m) => out.push(m.summary),
                // Dropped meanwhile by another process.
                Err(e) if e.code == Code::CheckpointNotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    pub(crate) fn remove_manifest(&self, id: &str) -> Result<()> {
        check_id(id)?;
        match self.dir.remove_file(format!("manifests/{id}")) {
            Ok(()) => {
                if let Ok(d) = self.dir.open_dir("manifests") {
                    let _ = crate::write::fsync_dir(&d);
                }
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(super::not_found(id)),
            Err(e) => Err(store_err("manifests", e)),
        }
    }

    /// The contents the manifests name.
    pub(crate) fn live(&self, cancel: &Cancel) -> Result<HashSet<[u8; 32]>> {
        let mut live: HashSet<[u8; 32]> = HashSet::new();
        for id in self.ids()? {
            cancel.check()?;
            let m = self.read_manifest(&id, true)?;
            for r in m.records {
                if let State::File { hash, .. } = r.state {
                    live.insert(hash);
                }
            }
        }
        Ok(live)
    }

    /// Removes the objects not in `live` and recounts the usage (under the exclusive lock; see
    /// [`super::collect`]). Returns the bytes kept.
    pub(crate) fn sweep(&self, live: &HashSet<[u8; 32]>, cancel: &Cancel) -> Result<u64> {
        let mut kept = 0u64;
        for sub in self.dir.read_dir("objects").map_err(|e| store_err("objects", e))?.flatten() {
            cancel.check()?;
            let sub_name = sub.file_name();
            let Some(prefix) = sub_name.to_str().map(str::to_string) else { continue };
            let sub_path = Path::new("objects").join(OsStr::new(&prefix));
            let Ok(entries) = self.dir.read_dir(&sub_path) else { continue };
            for e in entries.flatten() {
                let name = e.file_name();
                let full = name.to_str().map(|n| format!("{prefix}{n}"));
                let h = full.as_deref().and_then(unhex);
                match h {
                    Some(h) if live.contains(&h) => kept += e.metadata().map(|m| m.len()).unwrap_or(0),
                    _ => {
                        let _ = self.dir.remove_file(sub_path.join(&name));
                    }
                }
            }
        }
        self.set_usage(kept)?;
        Ok(kept)
    }
}
