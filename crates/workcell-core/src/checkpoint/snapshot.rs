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
use super::survey;
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

/// What `create` builds while it walks.
struct Recorder<'a> {
    cp: &'a Checkpoints,
    cancel: &'a Cancel,
    records: Vec<Record>,
    not_kept: Vec<(Vec<u8>, u64)>,
    stats: CreateStats,
    batch: Batch,
    /// The next stat cache, in walk order: every file the cache vouched for, and every file
    /// read whose stat did not move while it was read.
    next: StatCache,
    /// The copy buffer, one for the whole walk.
    buf: Vec<u8>,
}

impl Recorder<'_> {
    fn record(&mut self, f: survey::Found) -> Result<()> {
        if self.records.len() >= MAX_RECORDS {
            return Err(too_many());
        }
        let max_file = self.cp.max_file_bytes;
        match f.kind {
            Kind::Symlink => {
                // Gone or no longer a link since readdir: not recorded.
                if let Ok(t) = f.dir.read_link(f.name()) {
                    self.records.push(Record { path: f.path, state: State::Link { target: t.into_encoded_bytes() } });
                }
            }
            Kind::File => {
                // A file the stat cache vouches for is not even opened (an lstat, as git's).
                if let (Some(hash), Some(st)) = (f.cached, f.stat) {
                    self.stats.cached += 1;
                    self.next.push(&f.path, st, hash);
                    self.records.push(Record { path: f.path, state: State::File { mode: st.mode & 0o777, size: st.size, hash } });
                    return Ok(());
                }
                let (mut file, _) = match f.dir.open_regular(f.name()) {
                    Ok(Ok(file)) => file,
                    Ok(Err(_)) => return Ok(()),
                    Err(e) if crate::walk::is_swapped(&e) => return Ok(()),
                    Err(e) => return Err(Error::from_io(&e, &scan::shown(&f.path))),
                };
                let path = f.path;
                let before = Stat::of(&rustix::fs::fstat(&file).map_err(|e| Error::from_io(&e.into(), &scan::shown(&path)))?);
                if before.size > max_file {
                    self.not_kept.push((path, before.size));
                    return Ok(());
                }
                let mode = before.mode & 0o777;
                let (hash, size, added) = self.cp.store.put(&mut self.batch, &mut file, max_file + 1, &mut self.buf, self.cancel)?;
                self.stats.read += 1;
                self.stats.new_bytes += added;
                if size > max_file {
                    // Grew past the limit while read.
                    self.not_kept.push((path, size));
                    return Ok(());
                }
                let after = rustix::fs::fstat(&file).map(|s| Stat::of(&s));
                if after.as_ref().is_ok_and(|a| *a == before) && size == before.size {
                    self.next.push(&path, before, hash);
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
    let cache = cp.stat_cache(true);
    let mut rec = Recorder {
        cp,
        cancel,
        records: Vec::new(),
        not_kept: Vec::new(),
        stats: CreateStats::default(),
        batch: Batch::default(),
        next: StatCache::with_capacity(cache.len() + 64, 0),
        buf: Vec::new(),
    };
    clock.lap(&mut rec.stats, "lock, cache load");
    let walked = survey::survey(&cp.ws, &cp.rules, cancel, "recorded", &cache, cp.max_file_bytes, &mut |f| rec.record(f)).and_then(|()| cancel.check());
    let Recorder { mut records, mut not_kept, mut stats, batch, next, .. } = rec;
    if let Err(e) = walked {
        cp.store.discard(batch);
        cp.keep_stat_cache(cache);
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
            cp.keep_stat_cache(cache);
            return Err(e);
        }
    };
    clock.lap(&mut stats, "manifest");
    // The objects durable and named, the manifest's bytes durable; then its name.
    if let Err(e) = cp.store.commit(batch, &[&staged]) {
        cp.store.unstage(&staged);
        cp.keep_stat_cache(cache);
        return Err(e);
    }
    clock.lap(&mut stats, "sync");
    if let Err(e) = cp.store.publish(&staged, &format!("manifests/{id}")) {
        cp.keep_stat_cache(cache);
        return Err(e);
    }
    clock.lap(&mut stats, "publish");
    // The checkpoint exists from here on; what follows only speeds up or bounds the store.
    // Rewritten only when it would say something else: an entry read again, or one left out
    // (every trusted entry carried over as it was says what the file says; a different walk
    // start alone trusts nothing more, since every carried entry was trusted already).
    if stats.read > 0 || stats.cached as usize != cache.len() {
        drop(cache);
        let mut next = next.seal(started);
        // A cache that could not be written is not kept: the next checkpoint reads the file.
        if next.save(&cp.store).is_ok() {
            cp.keep_stat_cache(std::sync::Arc::new(next));
        }
    } else {
        cp.keep_stat_cache(cache);
    }
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
