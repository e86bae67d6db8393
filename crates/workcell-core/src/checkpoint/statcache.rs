//! The stat cache: for each recorded file, what `fstat` said (device, inode, size, mtime,
//! ctime, mode) and the SHA-256 of what was read. A later checkpoint or diff that finds the
//! same stat reuses the hash instead of reading the file.
//!
//! Never trusted for a file whose mtime or ctime is within [`GRANULARITY_NS`] of the moment
//! the cache's walk started (as the workspace's file system tells time): a file written in the
//! same timestamp tick as it was read, after the read, would show the same stat with another
//! content (git's "racily clean" entries). Such a file is read again. A content change always
//! moves ctime (no call sets it), so a file whose ctime is older than the walk and unchanged
//! since is the file that was read.

use std::collections::HashMap;
use std::io::BufRead as _;

use super::scan::Stat;
use super::store::{escape, hex, unescape, unhex, Store};

/// How close to the cache's walk a timestamp must be for the entry not to be trusted: 2 s
/// (the coarsest file-system timestamps in use, FAT's, and any clock tick below that).
pub const GRANULARITY_NS: i64 = 2_000_000_000;

const MAGIC: &str = "workcell-statcache 1";

#[derive(Default)]
pub(crate) struct StatCache {
    entries: HashMap<Vec<u8>, (Stat, [u8; 32])>,
    /// Entries with a timestamp at or after this are not trusted.
    trusted_before: i64,
    /// When the walk that wrote the cache started.
    started: i64,
}

impl StatCache {
    pub(crate) fn new() -> Self {
        StatCache::default()
    }

    /// The store's cache, or an empty one.
    pub(crate) fn load(store: &Store) -> StatCache {
        Self::parse(store).unwrap_or_default()
    }

    fn parse(store: &Store) -> Option<StatCache> {
        let reader = store.reader("statcache")?;
        let mut lines = reader.lines();
        let head = lines.next()?.ok()?;
        let started: i64 = head.strip_prefix(MAGIC)?.trim().parse().ok()?;
        let mut entries = HashMap::new();
        for line in lines {
            let line = line.ok()?;
            let f: Vec<&str> = line.split(' ').collect();
            if f.len() != 8 {
                return None;
            }
            let stat = Stat {
                dev: f[0].parse().ok()?,
                ino: f[1].parse().ok()?,
                size: f[2].parse().ok()?,
                mtime: f[3].parse().ok()?,
                ctime: f[4].parse().ok()?,
                mode: f[5].parse().ok()?,
            };
            entries.insert(unescape(f[7])?, (stat, unhex(f[6])?));
        }
        Some(StatCache { entries, trusted_before: started.saturating_sub(GRANULARITY_NS), started })
    }

    /// The hash recorded for `path` if its stat is the same and old enough to be trusted.
    pub(crate) fn lookup(&self, path: &[u8], now: &Stat) -> Option<[u8; 32]> {
        let (stat, hash) = self.entries.get(path)?;
        (stat == now && now.mtime < self.trusted_before && now.ctime < self.trusted_before).then_some(*hash)
    }

    /// Keeps only the entries whose content is `live` and writes the cache again (before those
    /// contents are removed from the store: a cache entry always names a stored object).
    pub(crate) fn prune(store: &Store, live: &std::collections::HashSet<[u8; 32]>) -> crate::error::Result<()> {
        let Some(mut c) = Self::parse(store) else { return Ok(()) };
        let before = c.entries.len();
        c.entries.retain(|_, (_, h)| live.contains(h));
        if c.entries.len() == before {
            return Ok(());
        }
        c.save(store, c.started)
    }

    pub(crate) fn insert(&mut self, path: Vec<u8>, stat: Stat, hash: [u8; 32]) {
        self.entries.insert(path, (stat, hash));
    }

    /// Writes the cache whole; `started` is when its walk started (file-system time, ns).
    pub(crate) fn save(&self, store: &Store, started: i64) -> crate::error::Result<()> {
        let mut text = String::with_capacity(32 + self.entries.len() * 120);
        text.push_str(&format!("{MAGIC} {started}\n"));
        for (p, (s, h)) in &self.entries {
            text.push_str(&format!("{} {} {} {} {} {} {} {}\n", s.dev, s.ino, s.size, s.mtime, s.ctime, s.mode, hex(h), escape(p)));
        }
        store.write_whole("statcache", text.as_bytes())
    }
}

/// The file system's time now, as the workspace's file system stamps files: the ctime of an
/// unnamed file made in the root (`O_TMPFILE`, never visible); the system clock where that is
/// not possible.
pub(crate) fn fs_now(ws: &crate::root::Workspace) -> i64 {
    use rustix::fs::{Mode, OFlags};
    if let Ok(fd) = rustix::fs::openat(ws.dir(), ".", OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC, Mode::from_raw_mode(0o600)) {
        if let Ok(st) = rustix::fs::fstat(&fd) {
            let s = Stat::of(&st);
            return s.ctime.max(s.mtime);
        }
    }
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as i64).unwrap_or(0)
}
