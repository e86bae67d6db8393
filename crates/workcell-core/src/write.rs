//! `write_file`: atomic, durable, serialized per target, confined to the workspace.
//!
//! A write goes through three phases:
//!
//! 1. **Checks without effects** ([`WriteRequest::new`]): the path grammar (plus: a file path
//!    may not end in `/`), well-formed content of at most [`MAX_WRITE_BYTES`] UTF-8 bytes.
//! 2. **Resolution** (a worker thread): root check; missing parent directories are created one
//!    at a time, each step re-resolved beneath the root; a final-component symlink is followed
//!    (at most [`MAX_SYMLINK_HOPS`] hops) as long as it stays inside, so the write replaces the
//!    file the link names and the link stays. The result is an open handle to the target's
//!    directory and a final name: the lock key ([`TargetKey`]).
//! 3. **Install** (a worker thread, holding the target's lock, see [`crate::target_lock`]):
//!    `lstat` the target (never an open, so a FIFO or device cannot block); create the temp
//!    `.workcell-tmp-<random>` with `O_CREAT|O_EXCL|O_NOFOLLOW` and mode 0600 beside it; write
//!    everything; give it the old target's permission bits (0644 for a new file); fsync; check
//!    that the temp's name still names the open file; recheck root, parent, target and
//!    cancellation; `renameat` over the target; fsync the directory; check that the installed
//!    file is the temp. Any failure before the rename removes the temp (only if the name still
//!    names the file this call created) and leaves the old target untouched.
//!
//! The phases are shared with `edit_file` through [`Job`]: a job is checked against the write
//! guard ([`crate::guard`]) around resolution, and its [`Job::run`] (for `write_file`: the
//! `expectedHash` check, then the install) runs while the lock is held.
//!
//! Waiting for the lock is asynchronous; the filesystem work runs on tokio's blocking pool,
//! never on the caller's thread (Node's event loop).

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use tokio::sync::Semaphore;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::guard::Guard;
use crate::path::RelPath;
use crate::root::{Identity, Workspace};
use crate::target_lock::{self, Registration, TargetKey, Ticket};

/// Largest content `write_file` accepts, in UTF-8 bytes.
pub const MAX_WRITE_BYTES: usize = 65_536;
/// Prefix of the temporary files a write creates beside its target.
pub const TEMP_PREFIX: &str = ".workcell-tmp-";
/// Most symlinks followed for the final component (the kernel's limit too).
pub const MAX_SYMLINK_HOPS: usize = 40;
/// Mode of a newly created file.
pub const NEW_FILE_MODE: u32 = 0o644;
/// Filesystem phases running at once (resolution or install), across all writes.
const BLOCKING_SLOTS: usize = 16;

static BLOCKING: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(BLOCKING_SLOTS)));

/// Counts filesystem phases running at once (tests check the bound).
#[cfg(test)]
mod gauge {
    use std::sync::atomic::{AtomicUsize, Ordering};
    pub static ACTIVE: AtomicUsize = AtomicUsize::new(0);
    pub static PEAK: AtomicUsize = AtomicUsize::new(0);
    pub struct Running;
    impl Running {
        pub fn new() -> Self {
            let now = ACTIVE.fetch_add(1, Ordering::SeqCst) + 1;
            PEAK.fetch_max(now, Ordering::SeqCst);
            Running
        }
    }
    impl Drop for Running {
        fn drop(&mut self) {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Marks a filesystem phase (a no-op outside tests).
#[inline(always)]
fn running() -> impl Drop {
    #[cfg(test)]
    return gauge::Running::new();
    #[cfg(not(test))]
    return Noop;
}

#[cfg(not(test))]
struct Noop;
#[cfg(not(test))]
impl Drop for Noop {
    fn drop(&mut self) {}
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutput {
    /// The normalized path, as given (a symlink's name, not its target's).
    pub path: String,
    /// UTF-8 byte length of the content written.
    pub bytes: usize,
    /// Whether the file did not exist before.
    pub created: bool,
}

/// The arguments of one write, checked without touching the filesystem.
#[derive(Clone, Debug)]
pub struct WriteRequest {
    path: RelPath,
    content: String,
    expected_hash: Option<String>,
    guard: Option<Arc<Guard>>,
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

/// Takes this call's place in the per-target queues. Call it synchronously, when the call is
/// made, so writes run in call order.
pub fn ticket() -> Ticket {
    target_lock::ticket()
}

/// One writing operation run by the shared machinery: `write_file` ([`WriteRequest`]) or
/// `edit_file` (`crate::edit::EditRequest`). The machinery checks the write guard, resolves the
/// target, takes its lock and calls [`Job::run`] while holding it; `run` ends with [`install`].
pub trait Job: Send + 'static {
    type Output: Send + 'static;
    /// The normalized path the call names.
    fn path(&self) -> &RelPath;
    /// The write guard of the tool that made the call.
    fn guard(&self) -> Option<&Guard>;
    /// The work done under the target's lock.
    fn run(self, ws: &Workspace, target: &Resolved, cancel: &Cancel) -> Result<Self::Output>;
}

impl Job for WriteRequest {
    type Output = WriteOutput;
    fn path(&self) -> &RelPath {
        &self.path
    }
    fn guard(&self) -> Option<&Guard> {
        self.guard.as_deref()
    }
    fn run(self, ws: &Workspace, target: &Resolved, cancel: &Cancel) -> Result<WriteOutput> {
        if let Some(expected) = &self.expected_hash {
            check_expected_hash(target, &self.path, expected, cancel)?;
        }
        install(ws, &self.path, target, self.content.as_bytes(), cancel)
    }
}

/// How far [`start`] got.
#[derive(Debug)]
pub enum Started<J: Job> {
    /// The write ended (the target's lock was free, or the call failed before needing it).
    Done(Result<J::Output>),
    /// Resolved and queued behind other writes of the same target: finish it with
    /// [`Queued::finish`], which waits asynchronously.
    Queued(Queued<J>),
}

/// A resolved write waiting for its target's lock.
#[derive(Debug)]
pub struct Queued<J: Job> {
    ws: Arc<Workspace>,
    job: J,
    resolved: Resolved,
    registration: Registration,
    cancel: Cancel,
}

impl<J: Job> Queued<J> {
    /// Waits for the lock without blocking a thread, then runs the job on the blocking pool.
    pub async fn finish(self) -> Result<J::Output> {
        let Queued { ws, job, resolved, registration, cancel } = self;
        let guard = registration.wait(&cancel).await?;
        let out = {
            let cancel = cancel.clone();
            blocking(&cancel.clone(), move || job.run(&ws, &resolved, &cancel)).await
        };
        drop(guard);
        out
    }
}

/// The blocking part of a write, for a worker thread: checks the guard, resolves the target
/// and, when its lock is free right away, runs the job too, all on this thread. Otherwise
/// returns the queued write.
pub fn start<J: Job>(ws: Arc<Workspace>, job: J, ticket: Ticket, cancel: Cancel) -> Started<J> {
    let resolved = match guarded_resolve(&ws, &job, &cancel) {
        Ok(r) => r,
        Err(e) => return Started::Done(Err(e)),
    };
    match ticket.register(resolved.key()).try_take() {
        Ok(guard) => {
            let out = job.run(&ws, &resolved, &cancel);
            drop(guard);
            Started::Done(out)
        }
        Err(registration) => Started::Queued(Queued { ws, job, resolved, registration, cancel }),
    }
}

/// The guard's checks around resolution: the path as named and the links on the way (before
/// any directory is created), then the file the write really lands on.
fn guarded_resolve<J: Job>(ws: &Workspace, job: &J, cancel: &Cancel) -> Result<Resolved> {
    if let Some(guard) = job.guard() {
        cancel.check()?;
        ws.check()?;
        guard.check_before(ws, job.path())?;
    }
    let resolved = resolve_guarded(ws, job.path(), cancel, job.guard())?;
    if let Some(guard) = job.guard() {
        guard.check_landing(ws, job.path(), &resolved.dir, &resolved.name)?;
    }
    Ok(resolved)
}

/// Runs `job` (resolution, lock, the job's work). `ticket` must have been taken when the call
/// was made.
pub async fn run_job<J: Job>(ws: Arc<Workspace>, job: J, ticket: Ticket, cancel: Cancel) -> Result<J::Output> {
    cancel.check()?;
    let started = {
        let cancel = cancel.clone();
        blocking(&cancel.clone(), move || Ok(start(ws, job, ticket, cancel))).await?
    };
    match started {
        Started::Done(out) => out,
        Started::Queued(queued) => queued.finish().await,
    }
}

/// Writes `request` into the workspace (resolution, lock, install). `ticket` must have been
/// taken when the call was made.
pub async fn write_file(ws: Arc<Workspace>, request: WriteRequest, ticket: Ticket, cancel: Cancel) -> Result<WriteOutput> {
    run_job(ws, request, ticket, cancel).await
}

/// Calls its callback exactly once: with the outcome, or with an internal error if the write
/// was dropped without one (a panic in a worker), so a host's promise always settles.
struct Settle<T, F: FnOnce(Result<T>)>(Option<F>, std::marker::PhantomData<fn(T)>);

impl<T, F: FnOnce(Result<T>)> Settle<T, F> {
    fn new(f: F) -> Self {
        Settle(Some(f), std::marker::PhantomData)
    }
    fn done(mut self, out: Result<T>) {
        if let Some(f) = self.0.take() {
            f(out)
        }
    }
}

impl<T, F: FnOnce(Result<T>)> Drop for Settle<T, F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Err(internal("the write stopped unexpectedly")))
        }
    }
}

/// Starts a job from a thread outside the runtime's workers (a host's main thread), inside
/// the runtime's context. `done` gets the outcome, exactly once, on a worker thread. When a
/// blocking slot is free, the whole job usually runs on one blocking-pool thread: no hop
/// through an async worker, no thread ever blocked waiting for a lock.
pub fn spawn_job<J: Job>(
    ws: Arc<Workspace>,
    job: J,
    ticket: Ticket,
    cancel: Cancel,
    done: impl FnOnce(Result<J::Output>) + Send + 'static,
) {
    let settle = Settle::new(done);
    match BLOCKING.clone().try_acquire_owned() {
        Ok(permit) => {
            tokio::task::spawn_blocking(move || {
                let running = running();
                if let Err(e) = cancel.check() {
                    drop(permit);
                    return settle.done(Err(e));
                }
                let started = start(ws, job, ticket, cancel);
                drop(running);
                drop(permit);
                match started {
                    Started::Done(out) => settle.done(out),
                    Started::Queued(queued) => {
                        tokio::spawn(async move { settle.done(queued.finish().await) });
                    }
                }
            });
        }
        Err(_) => {
            tokio::spawn(async move { settle.done(run_job(ws, job, ticket, cancel).await) });
        }
    }
}

/// [`spawn_job`] for `write_file`.
pub fn spawn_write(
    ws: Arc<Workspace>,
    request: WriteRequest,
    ticket: Ticket,
    cancel: Cancel,
    done: impl FnOnce(Result<WriteOutput>) + Send + 'static,
) {
    spawn_job(ws, request, ticket, cancel, done)
}

/// Convenience for Rust callers: checks, takes a ticket now and writes.
pub async fn write(ws: Arc<Workspace>, path: &str, content: impl Into<String>, cancel: Cancel) -> Result<WriteOutput> {
    let request = WriteRequest::new(path, content.into(), MAX_WRITE_BYTES)?;
    let ticket = ticket();
    write_file(ws, request, ticket, cancel).await
}

/// `expectedHash`: what the target holds now (under its lock) must still hash to `expected`
/// (the [`crate::hash::hash_file`] string: `"absent"` for a free name).
pub(crate) fn check_expected_hash(target: &Resolved, path: &RelPath, expected: &str, cancel: &Cancel) -> Result<()> {
    let now = crate::hash::hash_at(&target.dir, &target.name, path.as_str(), cancel)?;
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

/// Runs `f` on tokio's blocking pool, at most [`BLOCKING_SLOTS`] at once.
pub(crate) async fn blocking<T: Send + 'static>(cancel: &Cancel, f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let permit = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(Error::cancelled()),
        p = BLOCKING.acquire() => p.map_err(|_| internal("the worker pool is closed"))?,
    };
    let out = tokio::task::spawn_blocking(move || {
        let _running = running();
        f()
    })
    .await.map_err(|e| internal(&format!("a write worker failed: {e}")))?;
    drop(permit);
    out
}

fn internal(what: &str) -> Error {
    Error::new(Code::IoError, what.to_string()).with_hint("an internal error stopped the write; retry the call")
}

// ---------------------------------------------------------------------------------------------
// Resolution

/// The target of a write: a directory handle beneath the root and a name in it.
#[derive(Debug)]
pub struct Resolved {
    /// The target's directory (an `O_PATH` handle is enough for the `*at` calls).
    pub(crate) dir: Dir,
    pub(crate) dir_id: Identity,
    /// How to find `dir` again from the root (may contain `..` from a symlink's text).
    pub(crate) dir_spelling: PathBuf,
    pub(crate) name: OsString,
}

impl Resolved {
    pub(crate) fn key(&self) -> TargetKey {
        TargetKey { dir: self.dir_id, name: self.name.clone() }
    }
}

/// Device and inode of a `stat` result (the field types differ between platforms).
#[allow(clippy::unnecessary_cast)]
pub(crate) fn id_of(st: &rustix::fs::Stat) -> Identity {
    Identity { dev: st.st_dev as u64, ino: st.st_ino as u64 }
}

pub(crate) fn io_err(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from(e)
}

pub(crate) fn dir_identity(dir: &Dir, shown: &str) -> Result<Identity> {
    let st = rustix::fs::fstat(dir).map_err(|e| Error::from_io(&io_err(e), shown))?;
    Ok(id_of(&st))
}

fn open_beneath(ws: &Workspace, spelling: &Path, shown: &str) -> Result<Dir> {
    ws.dir().open_dir(spelling).map_err(|e| Error::from_io(&e, shown))
}

/// Opens `dir` itself for reading (an `O_PATH` handle cannot be fsynced) and fsyncs it.
pub(crate) fn fsync_dir(dir: &impl AsFd) -> std::io::Result<()> {
    let fd = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(io_err)?;
    rustix::fs::fsync(&fd).map_err(io_err)
}

/// Opens the parent directory of `path` beneath the root, creating missing directories one
/// component at a time. Each step is looked up again from the root, so a directory swapped for
/// a symlink mid-way can never lead outside.
pub(crate) fn ensure_parent(ws: &Workspace, path: &RelPath, cancel: &Cancel, guard: Option<&Guard>) -> Result<(Dir, PathBuf)> {
    let shown = path.as_str();
    let Some(parent) = path.parent() else {
        return Ok((open_beneath(ws, Path::new("."), shown)?, PathBuf::from(".")));
    };
    match ws.dir().open_dir(parent) {
        Ok(dir) => return Ok((dir, PathBuf::from(parent))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::from_io(&e, shown)),
    }
    let mut prefix = String::new();
    for segment in parent.split('/') {
        let base_spelling = if prefix.is_empty() { ".".to_string() } else { prefix.clone() };
        let next = if prefix.is_empty() { segment.to_string() } else { format!("{prefix}/{segment}") };
        match ws.dir().open_dir(&next) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                cancel.check()?;
                let base = open_beneath(ws, Path::new(&base_spelling), shown)?;
                if let Some(guard) = guard {
                    // Where the new directory would really appear (a link may have been swapped
                    // in since the guard's first look).
                    guard.check_mkdir(ws, path, &base, &next)?;
                }
                match rustix::fs::mkdirat(&base, segment, Mode::from_raw_mode(0o777)) {
                    Ok(()) => fsync_dir(&base).map_err(|e| Error::from_io(&e, shown))?,
                    Err(rustix::io::Errno::EXIST) => {}
                    Err(e) => return Err(Error::from_io(&io_err(e), shown)),
                }
                match ws.dir().open_dir(&next) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        // The name exists but does not lead to a directory: a dangling symlink.
                        return Err(Error::new(Code::FileNotFound, format!("{next} is a symlink to a missing directory"))
                            .with_hint("write_file creates missing directories but does not follow a dangling symlink; write to the real directory instead")
                            .with_details(serde_json::json!({ "component": next })));
                    }
                    Err(e) => return Err(Error::from_io(&e, shown)),
                }
            }
            Err(e) => return Err(Error::from_io(&e, shown)),
        }
        prefix = next;
    }
    Ok((open_beneath(ws, Path::new(parent), shown)?, PathBuf::from(parent)))
}

/// What is at a name, looked at without following or opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Existing {
    Absent,
    Regular { id: Identity, mode: u32, uid: u32, gid: u32 },
    Symlink,
    Other(&'static str),
}

fn kind_name(ft: FileType) -> &'static str {
    match ft {
        FileType::Directory => "directory",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::BlockDevice => "block device",
        FileType::CharacterDevice => "character device",
        FileType::Symlink => "symlink",
        FileType::RegularFile => "file",
        _ => "unknown",
    }
}

#[allow(clippy::unnecessary_cast)]
pub(crate) fn lstat_at(dir: &impl AsFd, name: &OsStr) -> std::io::Result<Existing> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let ft = FileType::from_raw_mode(st.st_mode as _);
            Ok(match ft {
                FileType::RegularFile => Existing::Regular {
                    id: id_of(&st),
                    mode: st.st_mode as u32 & 0o777,
                    uid: st.st_uid as u32,
                    gid: st.st_gid as u32,
                },
                FileType::Symlink => Existing::Symlink,
                other => Existing::Other(kind_name(other)),
            })
        }
        Err(rustix::io::Errno::NOENT) => Ok(Existing::Absent),
        Err(e) => Err(io_err(e)),
    }
}

/// What is at a resolved target, for the work done under its lock (an edit's read, an
/// `expectedHash` check): nothing, something that is not a regular file, or the file, opened
/// without following a symlink and without blocking, checked to be the file the name names.
pub(crate) enum AtTarget {
    Absent,
    Other(&'static str),
    File(File),
}

pub(crate) fn open_at(dir: &impl AsFd, name: &OsStr, shown: &str) -> Result<AtTarget> {
    let io = |e: rustix::io::Errno| Error::from_io(&io_err(e), shown);
    let id = match lstat_at(dir, name).map_err(|e| Error::from_io(&e, shown))? {
        Existing::Absent => return Ok(AtTarget::Absent),
        Existing::Other(kind) => return Ok(AtTarget::Other(kind)),
        // Resolution followed every final symlink; one now is someone else's swap.
        Existing::Symlink => return Err(changed(shown, "target")),
        Existing::Regular { id, .. } => id,
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOENT) => return Err(changed(shown, "target")),
        Err(e) => return Err(io(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(io)?;
    if id_of(&st) != id || FileType::from_raw_mode(st.st_mode as _) != FileType::RegularFile {
        return Err(changed(shown, "target"));
    }
    Ok(AtTarget::File(File::from(fd)))
}

pub(crate) fn identity_at(dir: &impl AsFd, name: &OsStr) -> std::io::Result<Option<Identity>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(id_of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(io_err(e)),
    }
}

/// Whether a symlink's text names a directory: it ends in `/`, or its last component is `.` or
/// `..`.
fn names_directory(text: &[u8]) -> bool {
    let last = text.rsplit(|&b| b == b'/').next().unwrap_or(text);
    last.is_empty() || last == b"." || last == b".."
}

/// Resolution without a guard (tests).
#[cfg(test)]
pub(crate) fn resolve(ws: &Workspace, path: &RelPath, cancel: &Cancel) -> Result<Resolved> {
    resolve_guarded(ws, path, cancel, None)
}

/// Resolves the write target of `path`: creates missing parents (consulting `guard` before
/// each), follows a final-component symlink while it stays inside, and refuses anything but a
/// regular file or a free name.
pub(crate) fn resolve_guarded(ws: &Workspace, path: &RelPath, cancel: &Cancel, guard: Option<&Guard>) -> Result<Resolved> {
    cancel.check()?;
    ws.check()?;
    let shown = path.as_str();
    let (mut dir, mut spelling) = ensure_parent(ws, path, cancel, guard)?;
    let mut name = OsString::from(path.file_name());
    for _hop in 0..=MAX_SYMLINK_HOPS {
        cancel.check()?;
        match lstat_at(&dir, &name).map_err(|e| Error::from_io(&e, shown))? {
            Existing::Absent | Existing::Regular { .. } => {
                let dir_id = dir_identity(&dir, shown)?;
                return Ok(Resolved { dir, dir_id, dir_spelling: spelling, name });
            }
            Existing::Other(kind) => return Err(Error::not_regular(shown, kind)),
            Existing::Symlink => {
                let text = match rustix::fs::readlinkat(&dir, &name, Vec::new()) {
                    Ok(text) => text.into_bytes(),
                    // Replaced or removed since the lstat: look at the name again.
                    Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOENT) => continue,
                    Err(e) => return Err(Error::from_io(&io_err(e), shown)),
                };
                if text.first() == Some(&b'/') {
                    // Absolute symlinks are refused even when they point inside.
                    return Err(Error::escape(shown));
                }
                if names_directory(&text) {
                    // Classify through the resolver: an escape is reported as one.
                    let whole = spelling.join(OsStr::from_bytes(&text));
                    return Err(match ws.dir().metadata(&whole) {
                        Err(e) if matches!(Error::from_io(&e, shown).code, Code::PathEscapesWorkspace | Code::SymlinkLoop) => {
                            Error::from_io(&e, shown)
                        }
                        _ => Error::not_regular(shown, "directory"),
                    });
                }
                let (dir_part, base) = match text.iter().rposition(|&b| b == b'/') {
                    Some(i) => (Some(&text[..i]), &text[i + 1..]),
                    None => (None, &text[..]),
                };
                if let Some(dir_part) = dir_part {
                    spelling = spelling.join(OsStr::from_bytes(dir_part));
                    dir = ws.dir().open_dir(&spelling).map_err(|e| {
                        let err = Error::from_io(&e, shown);
                        if err.code == Code::FileNotFound {
                            Error::new(Code::FileNotFound, format!("{shown} is a symlink into a missing directory"))
                                .with_hint("the symlink's target directory does not exist; create it first or write to another path")
                        } else {
                            err
                        }
                    })?;
                }
                name = OsString::from(OsStr::from_bytes(base));
            }
        }
    }
    Err(Error::from_io(&std::io::Error::from_raw_os_error(libc::ELOOP), shown))
}

// ---------------------------------------------------------------------------------------------
// Install

/// Steps at which tests can interfere (a deterministic attacker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The temp is created and written, before its name is checked.
    TempWritten,
    /// Every recheck passed, right before the rename.
    BeforeRename,
    /// Right after the rename.
    AfterRename,
}

#[cfg(test)]
pub(crate) mod hooks {
    use std::cell::RefCell;
    use std::collections::VecDeque;

    type Hook = Box<dyn FnMut(super::Step, &std::ffi::OsStr)>;

    thread_local! {
        pub static NAMES: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
        pub static STEP: RefCell<Option<Hook>> = const { RefCell::new(None) };
        pub static RENAME_ERRNO: RefCell<Option<i32>> = const { RefCell::new(None) };
    }
}

#[cfg(test)]
fn step(step: Step, temp: &OsStr) {
    hooks::STEP.with(|h| {
        if let Some(hook) = h.borrow_mut().as_mut() {
            hook(step, temp)
        }
    });
}

#[cfg(not(test))]
#[inline(always)]
fn step(_step: Step, _temp: &OsStr) {}

pub(crate) fn temp_name() -> String {
    #[cfg(test)]
    if let Some(name) = hooks::NAMES.with(|n| n.borrow_mut().pop_front()) {
        return name;
    }
    let mut bytes = [0u8; 12];
    if getrandom::fill(&mut bytes).is_err() {
        // Never a fixed name: fall back to the clock and a counter, still unpredictable enough
        // and O_EXCL refuses any collision.
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        bytes[..8].copy_from_slice(&(t as u64).to_le_bytes());
        bytes[8..].copy_from_slice(&(n as u32 ^ std::process::id()).to_le_bytes());
    }
    let mut name = String::with_capacity(TEMP_PREFIX.len() + 24);
    name.push_str(TEMP_PREFIX);
    for b in bytes {
        name.push_str(&format!("{b:02x}"));
    }
    name
}

/// The temp file this call created; removed on drop unless installed. Removal only happens
/// while the name still names the file we opened.
pub(crate) struct Temp<'a> {
    pub(crate) dir: &'a Dir,
    pub(crate) name: OsString,
    pub(crate) file: File,
    pub(crate) id: Identity,
    pub(crate) installed: bool,
}

impl Temp<'_> {
    pub(crate) fn create<'a>(dir: &'a Dir, shown: &str) -> Result<Temp<'a>> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
        let mut last = None;
        for _ in 0..16 {
            let name = OsString::from(temp_name());
            match rustix::fs::openat(dir, &name, flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    let fd: OwnedFd = fd;
                    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io(&io_err(e), shown))?;
                    let id = id_of(&st);
                    return Ok(Temp { dir, name, file: File::from(fd), id, installed: false });
                }
                // Something (a planted file or symlink) already has this name: never follow or
                // reuse it, pick another.
                Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
        }
        Err(Error::from_io(&io_err(last.unwrap_or(rustix::io::Errno::EXIST)), shown))
    }

    pub(crate) fn still_named(&self) -> bool {
        matches!(identity_at(self.dir, &self.name), Ok(Some(id)) if id == self.id)
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.installed && self.still_named() {
            let _ = rustix::fs::unlinkat(self.dir, &self.name, AtFlags::empty());
        }
    }
}

pub(crate) fn changed(shown: &str, what: &str) -> Error {
    Error::target_changed(shown).with_details(serde_json::json!({ "changed": what }))
}

fn rename_at(dir: &Dir, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
    #[cfg(test)]
    if let Some(errno) = hooks::RENAME_ERRNO.with(|e| *e.borrow()) {
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    rustix::fs::renameat(dir, from, dir, to).map_err(io_err)
}

/// Installs `content` at the resolved target. The caller holds the target's lock.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn install(ws: &Workspace, path: &RelPath, target: &Resolved, content: &[u8], cancel: &Cancel) -> Result<WriteOutput> {
    let shown = path.as_str();
    cancel.check()?;
    let before = match lstat_at(&target.dir, &target.name).map_err(|e| Error::from_io(&e, shown))? {
        Existing::Other(kind) => return Err(Error::not_regular(shown, kind)),
        // It was resolved to a file or a free name; a symlink now is someone else's swap.
        Existing::Symlink => return Err(changed(shown, "target")),
        other => other,
    };
    let mode = match before {
        Existing::Regular { mode, .. } => mode,
        _ => NEW_FILE_MODE,
    };

    let mut temp = Temp::create(&target.dir, shown)?;
    let io = |e: std::io::Error| Error::from_io(&e, shown);
    temp.file.write_all(content).map_err(io)?;
    rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode)).map_err(|e| io(io_err(e)))?;
    if let Existing::Regular { uid, gid, .. } = before {
        // Keep the owner when we may (a privileged host); an unprivileged one cannot and
        // keeps its own.
        let st = rustix::fs::fstat(&temp.file).map_err(|e| io(io_err(e)))?;
        if st.st_uid as u32 != uid || st.st_gid as u32 != gid {
            let _ = rustix::fs::fchown(
                &temp.file,
                Some(rustix::process::Uid::from_raw(uid)),
                Some(rustix::process::Gid::from_raw(gid)),
            );
            // chown may clear set-id bits; the permission bits are set again to be exact.
            let _ = rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode));
        }
    }
    temp.file.sync_all().map_err(io)?;
    step(Step::TempWritten, &temp.name);

    // The temp's name must still name the file we wrote.
    if !temp.still_named() {
        return Err(changed(shown, "temporary file"));
    }
    // Recheck cancellation, root, parent and target.
    cancel.check()?;
    ws.check()?;
    match ws.dir().metadata(&target.dir_spelling) {
        Ok(meta) if meta.is_dir() && Identity::of_cap(&meta) == target.dir_id => {}
        _ => return Err(changed(shown, "parent directory")),
    }
    let now = lstat_at(&target.dir, &target.name).map_err(io)?;
    match (before, now) {
        (Existing::Absent, Existing::Absent) => {}
        (Existing::Regular { id: a, .. }, Existing::Regular { id: b, mode: m, .. }) if a == b => {
            if m != mode {
                rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(m)).map_err(|e| io(io_err(e)))?;
            }
        }
        _ => return Err(changed(shown, "target")),
    }
    step(Step::BeforeRename, &temp.name);

    // On failure the old target is intact; `temp`'s drop removes only our file.
    rename_at(&target.dir, &temp.name, &target.name).map_err(io)?;
    temp.installed = true;
    step(Step::AfterRename, &temp.name);
    fsync_dir(&target.dir).map_err(io)?;
    match identity_at(&target.dir, &target.name) {
        Ok(Some(id)) if id == temp.id => {}
        _ => return Err(changed(shown, "installed file")),
    }
    Ok(WriteOutput { path: shown.to_string(), bytes: content.len(), created: before == Existing::Absent })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{symlink, PermissionsExt as _};

    #[test]
    fn a_directory_path_refusal_says_its_rule_once() {
        let err = check_path("src/").unwrap_err();
        assert!(err.hint.as_deref().unwrap().contains("names a directory"));
        assert!(err.details.is_none(), "{:?}", err.details);
    }

    fn setup() -> (tempfile::TempDir, PathBuf, Workspace) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root).unwrap();
        (tmp, root, ws)
    }

    /// Resolution and install on this thread (so the thread-local hooks apply).
    fn write_here(ws: &Workspace, path: &str, content: &str) -> Result<WriteOutput> {
        let rel = check_path(path)?;
        let cancel = Cancel::new();
        let target = resolve(ws, &rel, &cancel)?;
        install(ws, &rel, &target, content.as_bytes(), &cancel)
    }

    fn temps(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            let name = entry.file_name().unwrap().to_string_lossy().into_owned();
            if name.starts_with(TEMP_PREFIX) {
                out.push(entry.display().to_string());
            }
        }
        out
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            out.push(p.clone());
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.extend(walk(&p));
            }
        }
        out
    }

    fn reset_hooks() {
        hooks::NAMES.with(|n| n.borrow_mut().clear());
        hooks::STEP.with(|h| *h.borrow_mut() = None);
        hooks::RENAME_ERRNO.with(|e| *e.borrow_mut() = None);
    }

    #[test]
    fn trailing_slash_and_grammar_are_refused_before_any_effect() {
        for p in ["a/", "a/.", "a//", "../x", "/etc/x", "C:x", "nul.txt", ""] {
            let err = WriteRequest::new(p, "x".into(), MAX_WRITE_BYTES).unwrap_err();
            assert_eq!(err.reason(), Some("INVALID_RELATIVE_PATH"), "{p:?}");
        }
        assert_eq!(WriteRequest::new("./a//b", "x".into(), MAX_WRITE_BYTES).unwrap().path().as_str(), "a/b");
    }

    #[test]
    fn content_limit_counts_utf8_bytes() {
        assert!(WriteRequest::new("a", "x".repeat(MAX_WRITE_BYTES), MAX_WRITE_BYTES).is_ok());
        let err = WriteRequest::new("a", "x".repeat(MAX_WRITE_BYTES + 1), MAX_WRITE_BYTES).unwrap_err();
        assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
        // 21,846 three-byte characters = 65,538 bytes, though only 21,846 UTF-16 units.
        let err = WriteRequest::new("a", "€".repeat(21_846), MAX_WRITE_BYTES).unwrap_err();
        assert_eq!(err.reason(), Some("CONTENT_TOO_LARGE"));
        let err = WriteRequest::from_utf16(&[0x61], &[0x61, 0xdc00], MAX_WRITE_BYTES).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_UNICODE"));
        let err = WriteRequest::from_utf16(&[0xd800], &[0x61], MAX_WRITE_BYTES).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_UNICODE"));
    }

    #[test]
    fn writes_creates_parents_and_reports() {
        let (_t, root, ws) = setup();
        let out = write_here(&ws, "a/b/c.txt", "héllo").unwrap();
        assert_eq!(out, WriteOutput { path: "a/b/c.txt".into(), bytes: 6, created: true });
        assert_eq!(fs::read_to_string(root.join("a/b/c.txt")).unwrap(), "héllo");
        let out = write_here(&ws, "a/b/c.txt", "").unwrap();
        assert!(!out.created);
        assert_eq!(fs::read(root.join("a/b/c.txt")).unwrap(), b"");
        assert!(temps(&root).is_empty());
    }

    #[test]
    fn a_planted_symlink_at_the_temp_name_is_skipped_never_followed() {
        let (t, root, ws) = setup();
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "outside").unwrap();
        let planted = format!("{TEMP_PREFIX}planted");
        symlink(&outside, root.join(&planted)).unwrap();
        fs::write(root.join(format!("{TEMP_PREFIX}file")), "someone's").unwrap();
        hooks::NAMES.with(|n| n.borrow_mut().extend([planted.clone(), format!("{TEMP_PREFIX}file")]));
        write_here(&ws, "target", "mine").unwrap();
        reset_hooks();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "mine");
        assert!(fs::symlink_metadata(root.join(&planted)).unwrap().file_type().is_symlink());
        assert_eq!(fs::read_to_string(root.join(format!("{TEMP_PREFIX}file"))).unwrap(), "someone's");
    }

    #[test]
    fn rename_failure_keeps_the_old_target_and_removes_only_our_temp() {
        let (_t, root, ws) = setup();
        fs::write(root.join("target"), "old").unwrap();
        let other = format!("{TEMP_PREFIX}other-writer");
        fs::write(root.join(&other), "not ours").unwrap();
        hooks::RENAME_ERRNO.with(|e| *e.borrow_mut() = Some(libc::ENOSPC));
        let err = write_here(&ws, "target", "new").unwrap_err();
        reset_hooks();
        assert_eq!(err.code, Code::IoError);
        assert!(err.message.starts_with("ENOSPC"), "{}", err.message);
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
        assert_eq!(temps(&root), vec![root.join(&other).display().to_string()]);
    }

    #[test]
    fn a_temp_swapped_after_writing_is_target_changed_and_the_swap_is_not_installed() {
        let (t, root, ws) = setup();
        fs::write(root.join("target"), "old").unwrap();
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "outside").unwrap();
        let root2 = root.clone();
        let out2 = outside.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, temp| {
                if s == Step::TempWritten {
                    let p = root2.join(temp);
                    fs::remove_file(&p).unwrap();
                    symlink(&out2, &p).unwrap();
                }
            }))
        });
        let err = write_here(&ws, "target", "new").unwrap_err();
        reset_hooks();
        assert_eq!(err.code, Code::TargetChanged);
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
        assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
        // The attacker's symlink is not ours: left alone.
        assert_eq!(temps(&root).len(), 1);
    }

    #[test]
    fn a_parent_swapped_for_an_outside_symlink_before_rename_is_refused() {
        let (t, root, ws) = setup();
        fs::create_dir(root.join("dir")).unwrap();
        let outside = t.path().join("OUT");
        fs::create_dir(&outside).unwrap();
        let root2 = root.clone();
        let out2 = outside.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::BeforeRename {
                    fs::rename(root2.join("dir"), root2.join("dir.moved")).unwrap();
                    symlink(&out2, root2.join("dir")).unwrap();
                }
            }))
        });
        // The recheck ran before the hook; install into the moved directory (still inside) is
        // the worst case: the outside directory stays empty.
        let _ = write_here(&ws, "dir/target", "new");
        reset_hooks();
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        assert!(temps(&root).is_empty());
        // Swapped before the recheck: refused.
        fs::remove_file(root.join("dir")).unwrap();
        fs::rename(root.join("dir.moved"), root.join("dir")).unwrap();
        let root3 = root.clone();
        let out3 = outside.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::TempWritten {
                    fs::rename(root3.join("dir"), root3.join("dir.moved2")).unwrap();
                    symlink(&out3, root3.join("dir")).unwrap();
                }
            }))
        });
        let err = write_here(&ws, "dir/target", "newer").unwrap_err();
        reset_hooks();
        assert_eq!(err.code, Code::TargetChanged);
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        assert!(temps(&root).is_empty());
    }

    #[test]
    fn a_target_replaced_by_an_outside_symlink_just_before_rename_replaces_the_link_only() {
        let (t, root, ws) = setup();
        fs::write(root.join("target"), "old").unwrap();
        let outside = t.path().join("outside.txt");
        fs::write(&outside, "outside").unwrap();
        let root2 = root.clone();
        let out2 = outside.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::BeforeRename {
                    fs::remove_file(root2.join("target")).unwrap();
                    symlink(&out2, root2.join("target")).unwrap();
                }
            }))
        });
        write_here(&ws, "target", "new").unwrap();
        reset_hooks();
        assert_eq!(fs::read_to_string(&outside).unwrap(), "outside");
        assert!(fs::symlink_metadata(root.join("target")).unwrap().is_file());
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "new");
    }

    #[test]
    fn a_target_swapped_before_the_recheck_is_target_changed() {
        let (_t, root, ws) = setup();
        fs::write(root.join("target"), "old").unwrap();
        let root2 = root.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::TempWritten {
                    fs::write(root2.join("other"), "other").unwrap();
                    fs::rename(root2.join("other"), root2.join("target")).unwrap();
                }
            }))
        });
        let err = write_here(&ws, "target", "new").unwrap_err();
        reset_hooks();
        assert_eq!(err.code, Code::TargetChanged);
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "other");
        assert!(temps(&root).is_empty());
    }

    #[test]
    fn a_file_replaced_after_rename_is_target_changed() {
        let (_t, root, ws) = setup();
        let root2 = root.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::AfterRename {
                    fs::write(root2.join("x"), "theirs").unwrap();
                    fs::rename(root2.join("x"), root2.join("target")).unwrap();
                }
            }))
        });
        let err = write_here(&ws, "target", "mine").unwrap_err();
        reset_hooks();
        assert_eq!(err.code, Code::TargetChanged);
        assert!(temps(&root).is_empty());
    }

    #[test]
    fn permission_bits_are_carried_over_and_new_files_are_0644() {
        let (_t, root, ws) = setup();
        fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(root.join("secret"), "s").unwrap();
        fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o600)).unwrap();
        write_here(&ws, "run.sh", "#!/bin/sh\necho hi\n").unwrap();
        write_here(&ws, "secret", "t").unwrap();
        write_here(&ws, "new.txt", "n").unwrap();
        let mode = |p: &str| fs::metadata(root.join(p)).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode("run.sh"), 0o755);
        assert_eq!(mode("secret"), 0o600);
        assert_eq!(mode("new.txt"), 0o644);
    }

    #[test]
    fn filesystem_phases_are_bounded_and_parallel() {
        let (_t, root, ws) = setup();
        let ws = Arc::new(ws);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let _ctx = rt.enter();
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..300 {
            let request = WriteRequest::new(&format!("d{}/f{i}", i % 7), "x".repeat(4096), MAX_WRITE_BYTES).unwrap();
            let tx = tx.clone();
            spawn_write(ws.clone(), request, ticket(), Cancel::new(), move |r| tx.send(r).unwrap());
        }
        drop(tx);
        assert!(rx.iter().all(|r| r.is_ok()));
        let peak = gauge::PEAK.load(std::sync::atomic::Ordering::SeqCst);
        assert!(peak <= 16, "{peak} filesystem phases ran at once (the documented bound is 16)");
        assert!(peak > 1, "different targets never ran in parallel");
        assert!(temps(&root).is_empty());
    }

    #[test]
    fn a_dropped_write_still_settles_its_callback_once() {
        let (tx, rx) = std::sync::mpsc::channel();
        let tx2 = tx.clone();
        drop(Settle::new(move |r: Result<WriteOutput>| tx.send(r.map(|o| o.bytes)).unwrap()));
        Settle::new(move |r: Result<WriteOutput>| tx2.send(r.map(|o| o.bytes)).unwrap())
            .done(Ok(WriteOutput { path: "a".into(), bytes: 1, created: true }));
        let got: Vec<_> = rx.iter().collect();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].as_ref().unwrap_err().code, Code::IoError);
        assert_eq!(got[1].as_ref().unwrap(), &1);
    }

    #[test]
    fn cancellation_before_rename_leaves_nothing() {
        let (_t, root, ws) = setup();
        fs::write(root.join("target"), "old").unwrap();
        let rel = check_path("target").unwrap();
        let cancel = Cancel::new();
        let target = resolve(&ws, &rel, &cancel).unwrap();
        let c2 = cancel.clone();
        hooks::STEP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move |s, _| {
                if s == Step::TempWritten {
                    c2.cancel();
                }
            }))
        });
        let err = install(&ws, &rel, &target, b"new", &cancel).unwrap_err();
        reset_hooks();
        assert!(err.is_cancelled());
        assert_eq!(fs::read_to_string(root.join("target")).unwrap(), "old");
        assert!(temps(&root).is_empty());
    }
}
