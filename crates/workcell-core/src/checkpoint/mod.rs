//! Checkpoints (contract §19): record the workspace, see everything that changed since, and
//! rewind it all or nothing.
//!
//! One file per operation:
//! - [`store`]: the store outside the workspace: content-addressed objects, one manifest per
//!   checkpoint (written last), the lock that orders processes, the `maxBytes` bound;
//! - [`scan`]: the walk beneath the root handle both `create` and `diff` use (ignore rules,
//!   `.git` always skipped, symlinks never followed) and the records it yields;
//! - [`survey`]: the walk with each entry's `lstat` and stat-cache lookup, in parallel batches;
//! - [`statcache`]: the stat cache that makes a checkpoint of a tree where little changed cost a
//!   walk, not a read of every file;
//! - [`snapshot`]: `create`; [`diff`]: `diff` and the change set's hash; [`rewind`]: `rewind`.
//!
//! Everything here is synchronous and blocking: the binding runs it on workcell's own worker
//! threads, with a [`Cancel`] polled between files.

pub mod diff;
pub(crate) mod journal;
pub mod rewind;
pub mod scan;
pub mod snapshot;
pub mod statcache;
pub mod store;
pub(crate) mod survey;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::guard::Guard;
use crate::root::Workspace;

pub use diff::{Changed, DiffOutput};
pub use rewind::RewindOutput;
pub use snapshot::{Created, NotKept};
pub use store::Summary;

/// Default bound of the store: the oldest checkpoints are dropped past it.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;
/// Default largest file kept; a larger one is listed in `notKept`.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;
/// Most entries (files and symlinks) one checkpoint records: what bounds a checkpoint's memory
/// (a record is a path, a hash and a few numbers: about 30 MiB at this count, twice that while
/// a diff holds the checkpoint and the workspace). A larger tree is refused with a hint to
/// exclude its generated parts.
pub const MAX_RECORDS: usize = 250_000;
/// Longest unified diff `diff` returns (then `truncated: true` and `[N more bytes]`).
pub const MAX_DIFF_BYTES: usize = 1 << 20;
/// Longest label.
pub const MAX_LABEL_BYTES: usize = 256;

/// What a host configures (the TS layer checks types; these are checked again here).
#[derive(Clone, Debug)]
pub struct Options {
    /// Where the store lives; default [`store::default_dir`] for the root.
    pub store_dir: Option<PathBuf>,
    pub max_bytes: u64,
    pub max_file_bytes: u64,
    /// Globs over workspace-relative paths that are not recorded (as `.gitignore` lines are).
    pub exclude: Vec<String>,
    /// The write guard's globs: a rewind listing a protected path is refused whole.
    pub protect: Option<Vec<String>>,
}

impl Default for Options {
    fn default() -> Self {
        Options { store_dir: None, max_bytes: DEFAULT_MAX_BYTES, max_file_bytes: DEFAULT_MAX_FILE_BYTES, exclude: Vec::new(), protect: None }
    }
}

/// The checkpoints of one workspace root.
pub struct Checkpoints {
    pub(crate) ws: Arc<Workspace>,
    pub(crate) store: store::Store,
    pub(crate) rules: scan::Rules,
    pub(crate) max_bytes: u64,
    pub(crate) max_file_bytes: u64,
    pub(crate) guard: Guard,
    /// The stat cache this process last read or wrote (see [`statcache`]).
    stat_cache: std::sync::Mutex<Option<Arc<statcache::StatCache>>>,
}

/// A host's misconfiguration: the option path and what is wrong (a `TypeError` in JS).
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub option: String,
    pub message: String,
}

fn config(option: &str, message: impl Into<String>) -> ConfigError {
    ConfigError { option: option.to_string(), message: message.into() }
}

impl Checkpoints {
    /// Opens (creating it when missing) the store for `ws`. A `storeDir` inside the workspace,
    /// an invalid glob or a zero limit is a [`ConfigError`]; a store that cannot be created is
    /// an [`Error`] (as `Err(Ok(..))` is awkward, both come back as `ConfigError` with the
    /// option `storeDir` for the latter).
    pub fn open(ws: Arc<Workspace>, opts: Options) -> std::result::Result<Checkpoints, ConfigError> {
        if opts.max_bytes == 0 {
            return Err(config("maxBytes", "must be a positive number of bytes"));
        }
        if opts.max_file_bytes == 0 {
            return Err(config("maxFileBytes", "must be a positive number of bytes"));
        }
        let rules = scan::Rules::new(&opts.exclude).map_err(|(i, m)| config(&format!("exclude[{i}]"), m))?;
        let guard = match &opts.protect {
            Some(p) => Guard::new(p, false).map_err(|m| config("protect", m))?,
            None => Guard::default_guard(),
        };
        let dir = match &opts.store_dir {
            Some(d) => {
                if !d.is_absolute() {
                    return Err(config("storeDir", "must be an absolute path"));
                }
                d.clone()
            }
            None => store::default_dir(ws.canonical()).map_err(|m| config("storeDir", m))?,
        };
        if inside(&dir, ws.canonical()) {
            return Err(config(
                "storeDir",
                format!("{} is inside the workspace; choose a directory outside it (default: the user's cache directory)", dir.display()),
            ));
        }
        let store = store::Store::open(&dir, ws.canonical()).map_err(|m| config("storeDir", m))?;
        // The canonical store path may lead inside the workspace through a symlink.
        if inside(store.path(), ws.canonical()) {
            return Err(config("storeDir", format!("{} leads inside the workspace; choose a directory outside it", dir.display())));
        }
        Ok(Checkpoints { ws, store, rules, max_bytes: opts.max_bytes, max_file_bytes: opts.max_file_bytes, guard, stat_cache: Default::default() })
    }

    /// The store's stat cache (the caller holds the store's lock): the one kept in memory while
    /// the file on disk is still the one it mirrors, else read again. Taken out of the process's
    /// keeping (`create` changes it, then [`Checkpoints::keep_stat_cache`]) or shared.
    pub(crate) fn stat_cache(&self, take: bool) -> Arc<statcache::StatCache> {
        let mut kept = self.stat_cache.lock().unwrap_or_else(|e| e.into_inner());
        let k = if take { kept.take() } else { kept.clone() };
        drop(kept);
        statcache::StatCache::load(&self.store, k)
    }

    /// Keeps `cache` in memory for the next checkpoint or diff of this process.
    pub(crate) fn keep_stat_cache(&self, cache: Arc<statcache::StatCache>) {
        *self.stat_cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(cache);
    }

    pub fn workspace(&self) -> &Arc<Workspace> {
        &self.ws
    }

    /// The store's directory.
    pub fn store_dir(&self) -> &Path {
        self.store.path()
    }

    /// Records the workspace as it is now.
    pub fn create(&self, label: Option<&str>, cancel: &Cancel) -> Result<Created> {
        snapshot::create(self, label, cancel)
    }

    /// The checkpoints in the store, oldest first.
    pub fn list(&self, cancel: &Cancel) -> Result<Vec<Summary>> {
        cancel.check()?;
        let _lock = self.store.lock(false, cancel)?;
        self.store.summaries()
    }

    /// What changed since checkpoint `id`.
    pub fn diff(&self, id: &str, cancel: &Cancel) -> Result<DiffOutput> {
        diff::diff(self, id, false, cancel)
    }

    /// What a rewind to `id` would change now (the diff from the workspace to the checkpoint):
    /// what a person approves. Its `hash` is the one `rewind` takes.
    pub fn rewind_preview(&self, id: &str, cancel: &Cancel) -> Result<DiffOutput> {
        diff::diff(self, id, true, cancel)
    }

    /// What a person approves before `rewind(id)`: the whole change it makes, each file's
    /// diff never cut (see [`diff::rewind_approval`]); every path with the change set's hash.
    pub fn rewind_approval(&self, id: &str, cancel: &Cancel) -> Result<crate::approval::Preview> {
        diff::rewind_approval(self, id, cancel)
    }

    /// Puts every path `diff(id)` lists back, all or nothing, while the change set's hash is
    /// still `expected_hash`.
    pub fn rewind(&self, id: &str, expected_hash: &str, cancel: &Cancel) -> Result<RewindOutput> {
        rewind::rewind(self, id, expected_hash, cancel)
    }

    /// Removes checkpoint `id` (and the objects no other checkpoint uses).
    pub fn drop_checkpoint(&self, id: &str, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        store::check_id(id)?;
        let _lock = self.store.lock(true, cancel)?;
        self.store.remove_manifest(id)?;
        collect(&self.store, cancel)?;
        Ok(())
    }
}

/// True when `path` (absolute) lies in `root` (canonical), through any symlink in `path`'s
/// existing part.
fn inside(path: &Path, root: &Path) -> bool {
    // The longest existing ancestor, canonicalized, plus the rest.
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(&existing) {
            let mut full = c;
            for r in rest.iter().rev() {
                full.push(r);
            }
            return full.starts_with(root);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n.to_os_string());
                existing = p.to_path_buf();
            }
            _ => return path.starts_with(root),
        }
    }
}

/// Removes the contents no checkpoint names (under the store's exclusive lock): the stat cache
/// is pruned first, so that it never names a content that is gone. Returns the bytes kept.
pub(crate) fn collect(store: &store::Store, cancel: &Cancel) -> Result<u64> {
    let live = store.live(cancel)?;
    statcache::StatCache::prune(store, &live)?;
    store.sweep(&live, cancel)
}

/// `CHECKPOINT_NOT_FOUND` for `id`.
pub(crate) fn not_found(id: &str) -> Error {
    Error::new(Code::CheckpointNotFound, format!("no checkpoint has the id {}", crate::error::shown_name(id)))
        .with_hint("list the checkpoints (list_checkpoints) to see the ids that exist; a dropped checkpoint cannot be used")
        .with_details(serde_json::json!({ "id": id }))
}
