//! `create`: records the workspace as it is now.
//!
//! Under the store's exclusive lock: the walk ([`super::scan`]) visits every file and symlink;
//! a file whose `lstat` matches a trusted stat-cache entry is not opened (the cache names only
//! stored contents: it is saved after them, and pruned durably before any is removed);
//! another is opened beneath its directory's descriptor (`O_NOFOLLOW`, non-blocking, checked
//! to be regular) and copied into a temp of the store while hashed (at most `maxFileBytes`; a
//! larger file is listed as not kept). A file that changed while it was read (its stat differs
//! after the read) is recorded as read but not cached, so the next checkpoint reads it again.
//! Then [`Store::commit`] makes the new objects and the staged manifest durable and names the
//! objects, and the manifest is renamed into place (the checkpoint exists from that rename
//! on); then the stat cache is saved (only when it would say something else); then the oldest
//! checkpoints are dropped while the store is over `maxBytes`.

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::walk::Kind;

use super::scan::{self, Record, Stat, State};
use super::statcache::{fs_now, StatCache};
use super::store::{Batch, Manifest, Store, Summary};
use super::{Checkpoints, MAX_LABEL_BYTES, MAX_RECORDS};

/// A file over `maxFileBytes`: not kept, so never listed by a diff nor touched by a rewind.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct NotKept {
    pub path: String,
    #[serde(serialize_with = "crate::json::number")]
    pub bytes: u64,
}

/// What `create` returns: the new checkpoint, what was not kept, the checkpoints dropped to
/// stay within `maxBytes`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "CheckpointCreated")]
pub struct Created {
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
    /// Files over `maxFileBytes`, not kept.
    pub not_kept: Vec<NotKept>,
    /// Checkpoints dropped to stay within `maxBytes`.
    pub dropped: Vec<String>,
}

/// Measurements of one checkpoint (tests and the bench).
#[derive(Clone, Debug, Default)]
pub struct CreateStats {
    /// Files whose content was read.
    pub read: u64,
    /// Files whose hash came from the stat cache.
    pub cached: u64,
    /// Bytes of new objects.
    pub new_bytes: u64,
    /// Where the time went, in order: (phase, microseconds).
    pub phases: Vec<(&'static str, u64)>,
}

struct Clock(std::time::Instant);

impl Clock {
    fn lap(&mut self, stats: &mut CreateStats, phase: &'static str) {
        let now = std::time::Instant::now();
        stats.phases.push((phase, now.duration_since(self.0).as_micros() as u64));
        self.0 = now;
    }
}

pub(crate) fn check_label(label: Option<&str>) -> Result<Option<String>> {
    let Some(l) = label else { return Ok(None) };
    if l.len() > MAX_LABEL_BYTES || l.chars().any(char::is_control) {
        return Err(Error::invalid(
            crate::error::Reason::InvalidArgumentsShape,
            format!("label must be at most {MAX_LABEL_BYTES} bytes of text without control characters"),
        )
        .with_details(serde_json::json!({ "at": "arguments.label" })));
    }
    Ok((!l.is_empty()).then(|| l.to_string()))
}

fn new_id(created_ms: u64) -> String {
    let r = crate::temp_name::random_name("", 4);
    format!("{:012x}-{r}", created_ms & 0xffff_ffff_ffff)
}

fn too_many() -> Error {
    Error::new(Code::FileTooLarge, format!("the workspace has more than {MAX_RECORDS} files and symlinks to record"))
        .with_hint("exclude generated or vendored trees (the exclude option, or .gitignore) and create the checkpoint again")
        .with_details(serde_json::json!({ "limit": MAX_RECORDS }))
}

/// Entries whose `lstat` is taken together (in parallel, as git's preloaded index does), then
/// recorded in walk order. Bounds the directories held open meanwhile.
const BATCH: usize = 2048;
/// Most threads taking `lstat`s.
const MAX_STAT_THREADS: usize = 8;
/// Most directories a batch holds open (each pending entry keeps its directory's descriptor).
const BATCH_DIRS: usize = 128;

/// One entry the walk found, waiting for its `lstat`.
struct Pending {
    dir: std::sync::Arc<crate::walk::DirHandle>,
    name: std::ffi::OsString,
    path: Vec<u8>,
    kind: Kind,
    stat: Option<Stat>,
}

/// What `create` builds while it walks.
struct Recorder<'a> {
    cp: &'a Checkpoints,
    cancel: &'a Cancel,
    cache: StatCache,
    next_cache: StatCache,
    records: Vec<Record>,
    not_kept: Vec<(Vec<u8>, u64)>,
    stats: CreateStats,
    batch: Batch,
    pending: Vec<Pending>,
    /// Directories the pending entries hold open.
    pending_dirs: usize,
    threads: usize,
}

impl Recorder<'_> {
    fn push(&mut self, seen: scan::Seen<'_>) -> Result<()> {
        if self.records.len() + self.pending.len() >= MAX_RECORDS {
            return Err(too_many());
        }
        let path = seen.rel.as_os_str().as_encoded_bytes().to_vec();
        // The walk yields a directory's entries together: a new directory is a new descriptor.
        if self.pending.last().is_none_or(|p| !std::sync::Arc::ptr_eq(&p.dir, seen.dir)) {
            self.pending_dirs += 1;
        }
        self.pending.push(Pending { dir: seen.dir.clone(), name: seen.name.to_os_string(), path, kind: seen.kind, stat: None });
        if self.pending.len() >= BATCH || self.pending_dirs >= BATCH_DIRS {
            self.flush()?;
        }
        Ok(())
    }

    /// Takes the pending files' `lstat`s (several threads for a large batch), then records
    /// every pending entry in walk order.
    fn flush(&mut self) -> Result<()> {
        let mut pending = std::mem::take(&mut self.pending);
        self.pending_dirs = 0;
        let stat_all = |items: &mut [Pending]| {
            for p in items.iter_mut().filter(|p| p.kind == Kind::File) {
                p.stat = scan::lstat(&p.dir.fd(), &p.name).ok().flatten();
            }
        };
        let threads = self.threads.min(pending.len() / 256).max(1);
        if threads > 1 {
            let chunk = pending.len().div_ceil(threads);
            std::thread::scope(|s| {
                for part in pending.chunks_mut(chunk) {
                    s.spawn(move || stat_all(part));
                }
            });
        } else {
            stat_all(&mut pending);
        }
        for p in pending.drain(..) {
            self.cancel.check()?;
            self.record(p)?;
        }
        self.pending = pending;
        Ok(())
    }

    fn record(&mut self, p: Pending) -> Result<()> {
        let Pending { dir, name, path, kind, stat } = p;
        let max_file = self.cp.max_file_bytes;
        match kind {
            Kind::Symlink => {
                // Gone or no longer a link since readdir: not recorded.
                if let Ok(t) = dir.read_link(&name) {
                    self.records.push(Record { path, state: State::Link { target: t.into_encoded_bytes() } });
                }
            }
            Kind::File => {
                // A file the stat cache vouches for is not even opened (an lstat, as git's).
                if let Some(st) = stat.filter(|st| st.kind() == Kind::File && st.size <= max_file) {
                    if let Some((key, hash)) = self.cache.take(&path, &st) {
                        self.stats.cached += 1;
                        self.next_cache.insert(key, st, hash);
                        self.records.push(Record { path, state: State::File { mode: st.mode & 0o777, size: st.size, hash } });
                        return Ok(());
                    }
                }
                let (mut file, _) = match dir.open_regular(&name) {
                    Ok(Ok(f)) => f,
                    Ok(Err(_)) => return Ok(()),
                    Err(e) if crate::walk::is_swapped(&e) => return Ok(()),
                    Err(e) => return Err(Error::from_io(&e, &scan::shown(&path))),
                };
                let before = Stat::of(&rustix::fs::fstat(&file).map_err(|e| Error::from_io(&e.into(), &scan::shown(&path)))?);
                if before.size > max_file {
                    self.not_kept.push((path, before.size));
                    return Ok(());
                }
                let mode = before.mode & 0o777;
                let (hash, size, added) = self.cp.store.put(&mut self.batch, &mut file, max_file + 1, self.cancel)?;
                self.stats.read += 1;
                self.stats.new_bytes += added;
                if size > max_file {
                    // Grew past the limit while read.
                    self.not_kept.push((path, size));
                    return Ok(());
                }
                let after = rustix::fs::fstat(&file).map(|s| Stat::of(&s));
                if after.as_ref().is_ok_and(|a| *a == before) && size == before.size {
                    self.next_cache.insert(path.clone(), before, hash);
                }
                self.records.push(Record { path, state: State::File { mode, size, hash } });
            }
            _ => {}
        }
        Ok(())
    }
}

pub(crate) fn create(cp: &Checkpoints, label: Option<&str>, cancel: &Cancel) -> Result<Created> {
    create_measured(cp, label, cancel).map(|(c, _)| c)
}

pub fn create_measured(cp: &Checkpoints, label: Option<&str>, cancel: &Cancel) -> Result<(Created, CreateStats)> {
    let label = check_label(label)?;
    cancel.check()?;
    let mut clock = Clock(std::time::Instant::now());
    let _lock = cp.store.lock(true, cancel)?;
    let mut must_collect = cp.store.clean_tmp();
    // A store without checkpoints (and nothing left by a killed writer) holds no objects worth
    // counting: its first checkpoint's usage is its own new bytes, without a collection.
    let first = !must_collect && cp.store.ids()?.is_empty();
    let started = fs_now(&cp.ws);
    let cache = StatCache::load(&cp.store);
    let cached_before = cache.len() as u64;
    let mut rec = Recorder {
        cp,
        cancel,
        cache,
        next_cache: StatCache::new(),
        records: Vec::new(),
        not_kept: Vec::new(),
        stats: CreateStats::default(),
        batch: Batch::default(),
        pending: Vec::with_capacity(BATCH),
        pending_dirs: 0,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_STAT_THREADS),
    };
    clock.lap(&mut rec.stats, "lock, cache load");
    let walked = scan::walk(&cp.ws, &cp.rules, cancel, "recorded", &mut |seen| rec.push(seen))
        .and_then(|()| rec.flush())
        .and_then(|()| cancel.check());
    let Recorder { next_cache, cache, mut records, mut not_kept, mut stats, batch, .. } = rec;
    if let Err(e) = walked {
        cp.store.discard(batch);
        return Err(e);
    }
    clock.lap(&mut stats, "walk");
    records.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    not_kept.sort_unstable();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
    // Ids sort in creation order: each later than the store's latest (a clock that stepped
    // back, or two checkpoints in one millisecond).
    let latest = cp.store.ids()?.last().and_then(|l| u64::from_str_radix(&l[..12], 16).ok()).unwrap_or(0);
    let created_at = now.max(latest + 1);
    let id = new_id(created_at);
    let bytes = records.iter().map(|r| if let State::File { size, .. } = r.state { size } else { 0 }).sum();
    let summary = Summary { id: id.clone(), label: label.clone(), created_at, files: records.len() as u64, bytes };
    let manifest = Manifest { summary, records, not_kept };
    let staged = match cp.store.stage(&Store::encode_manifest(&manifest)) {
        Ok(t) => t,
        Err(e) => {
            cp.store.discard(batch);
            return Err(e);
        }
    };
    clock.lap(&mut stats, "manifest");
    // The objects durable and named, the manifest's bytes durable; then its name.
    if let Err(e) = cp.store.commit(batch, &[&staged]) {
        cp.store.unstage(&staged);
        return Err(e);
    }
    clock.lap(&mut stats, "sync");
    cp.store.publish(&staged, &format!("manifests/{id}"))?;
    clock.lap(&mut stats, "publish");
    // The checkpoint exists from here on; what follows only speeds up or bounds the store.
    // Rewritten only when it would say something else: an entry read again, or one left out
    // (every trusted entry carried over as it was says what the file says; a different walk
    // start alone trusts nothing more, since every carried entry was trusted already).
    if stats.read > 0 || stats.cached != cached_before {
        let _ = next_cache.save(&cp.store, started);
    }
    drop((cache, next_cache));
    clock.lap(&mut stats, "stat cache");
    let usage = match cp.store.usage() {
        Some(u) if !must_collect => u + stats.new_bytes,
        None if first => stats.new_bytes,
        _ => {
            must_collect = false;
            super::collect(&cp.store, &Cancel::new())?
        }
    };
    let _ = must_collect;
    let mut dropped = Vec::new();
    let mut usage = usage;
    if usage > cp.max_bytes {
        for old in cp.store.ids()? {
            if usage <= cp.max_bytes || old == id {
                break;
            }
            cp.store.remove_manifest(&old)?;
            dropped.push(old);
            usage = super::collect(&cp.store, &Cancel::new())?;
        }
    } else if stats.new_bytes > 0 {
        cp.store.set_usage(usage)?;
    }
    clock.lap(&mut stats, "usage");
    let Manifest { summary, not_kept, .. } = manifest;
    Ok((
        Created {
            id,
            label,
            created_at,
            files: summary.files,
            bytes: summary.bytes,
            not_kept: not_kept.into_iter().map(|(p, bytes)| NotKept { path: scan::shown(&p), bytes }).collect(),
            dropped,
        },
        stats,
    ))
}
