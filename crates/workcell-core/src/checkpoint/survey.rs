//! The survey `create` and `diff` make: [`super::scan`]'s walk, with each entry's `lstat` and
//! what the stat cache vouches for, taken in parallel batches and handed over in walk order.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::Result;
use crate::root::Workspace;
use crate::walk::{DirHandle, Kind};

use super::scan::{lstat, walk, Rules, Stat};
use super::statcache::StatCache;

/// One file or symlink [`survey`] found, in walk order.
pub(crate) struct Found {
    /// Its directory (open: a visitor reads the entry beneath it).
    pub dir: Arc<DirHandle>,
    /// Workspace-relative path (bytes, `/`-separated).
    pub path: Vec<u8>,
    /// Where the final name starts in `path`.
    name_at: usize,
    /// What readdir said it is.
    pub kind: Kind,
    /// What `lstat` says now (none: gone since readdir).
    pub stat: Option<Stat>,
    /// The content's hash, when the stat cache vouches for it (a regular file of at most the
    /// survey's `max_file` bytes, with the trusted stat).
    pub cached: Option<[u8; 32]>,
}

impl Found {
    pub(crate) fn name(&self) -> &OsStr {
        OsStr::from_bytes(&self.path[self.name_at..])
    }
}

/// Entries whose `lstat` (and stat-cache lookup) is taken together, in parallel as git's
/// preloaded index does, then handed over in walk order. Bounds what a survey holds.
const BATCH: usize = 2048;
/// Most directories a batch holds open (each pending entry keeps its directory's descriptor).
const BATCH_DIRS: usize = 128;
/// Most threads taking `lstat`s.
const MAX_STAT_THREADS: usize = 8;
/// Fewest entries worth another thread.
const PER_THREAD: usize = 256;

/// [`walk`], with each entry's `lstat` and what `cache` vouches for: taken in batches on
/// several threads (a tree where little changed costs `lstat`s and lookups, spread over the
/// cores), and `visit`ed in walk order on the calling thread.
pub(crate) fn survey(
    ws: &Workspace,
    rules: &Rules,
    cancel: &Cancel,
    verb: &str,
    cache: &StatCache,
    max_file: u64,
    visit: &mut dyn FnMut(Found) -> Result<()>,
) -> Result<()> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(MAX_STAT_THREADS);
    let mut pending: Vec<Found> = Vec::with_capacity(BATCH);
    let mut dirs = 0usize;
    let flush = |pending: &mut Vec<Found>, visit: &mut dyn FnMut(Found) -> Result<()>| -> Result<()> {
        let stat_all = |items: &mut [Found]| {
            // The cache is in a walk's order: each lookup tries the entry after the last one.
            let mut next = 0;
            for f in items.iter_mut() {
                f.stat = lstat(&f.dir.fd(), OsStr::from_bytes(&f.path[f.name_at..])).ok().flatten();
                if let Some(st) = f.stat.as_ref().filter(|st| f.kind == Kind::File && st.kind() == Kind::File && st.size <= max_file) {
                    f.cached = cache.lookup_next(&mut next, &f.path, st);
                }
            }
        };
        let n = threads.min(pending.len() / PER_THREAD).max(1);
        if n > 1 {
            let chunk = pending.len().div_ceil(n);
            std::thread::scope(|s| {
                let mut parts = pending.chunks_mut(chunk);
                let mine = parts.next();
                for part in parts {
                    s.spawn(move || stat_all(part));
                }
                if let Some(part) = mine {
                    stat_all(part);
                }
            });
        } else {
            stat_all(pending);
        }
        for f in pending.drain(..) {
            cancel.check()?;
            visit(f)?;
        }
        Ok(())
    };
    walk(ws, rules, cancel, verb, &mut |seen| {
        // The walk yields a directory's entries together: a new directory is a new descriptor.
        if pending.last().is_none_or(|p| !Arc::ptr_eq(&p.dir, seen.dir)) {
            dirs += 1;
        }
        let path = seen.rel.as_os_str().as_encoded_bytes().to_vec();
        let name_at = path.len() - seen.name.len();
        pending.push(Found { dir: seen.dir.clone(), path, name_at, kind: seen.kind, stat: None, cached: None });
        if pending.len() >= BATCH || dirs >= BATCH_DIRS {
            dirs = 0;
            flush(&mut pending, visit)?;
        }
        Ok(())
    })?;
    flush(&mut pending, visit)
}
