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
//!
//! On disk a compact binary file (its layout at `MAGIC` below), replaced whole and only when
//! what it says changed; a file that does not parse exactly is no cache (every file is read
//! again).

use std::collections::HashMap;
use std::io::Read as _;

use super::scan::Stat;
use super::store::Store;

/// How close to the cache's walk a timestamp must be for the entry not to be trusted: 2 s
/// (the coarsest file-system timestamps in use, FAT's, and any clock tick below that).
pub const GRANULARITY_NS: i64 = 2_000_000_000;

/// The file starts with this, then the walk's start (i64), the entry count (u64), the entries
/// (each: dev, ino, size as u64; mtime, ctime as i64; mode as u32; the hash; the path's length
/// as u32 and its bytes; all little-endian) and ends with [`END`]. A file that does not parse
/// exactly (cut short, or from another version) is no cache: every file is read again.
const MAGIC: &[u8; 16] = b"workcell-stat 2\n";
const END: &[u8; 8] = b"\nend-sc\n";
/// Bytes of an entry besides its path.
const FIXED: usize = 8 * 5 + 4 + 32 + 4;

#[derive(Default)]
pub(crate) struct StatCache {
    entries: HashMap<Vec<u8>, (Stat, [u8; 32])>,
    /// Entries with a timestamp at or after this are not trusted.
    trusted_before: i64,
    /// When the walk that wrote the cache started.
    started: i64,
}

struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
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
        let mut bytes = Vec::new();
        store.reader("statcache")?.read_to_end(&mut bytes).ok()?;
        let mut c = Cursor(&bytes);
        if c.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let started = c.u64()? as i64;
        let count = c.u64()? as usize;
        // Each entry takes at least FIXED bytes: a count the file cannot hold is damage.
        if count > bytes.len() / FIXED {
            return None;
        }
        let mut entries = HashMap::with_capacity(count);
        for _ in 0..count {
            let stat = Stat { dev: c.u64()?, ino: c.u64()?, size: c.u64()?, mtime: c.u64()? as i64, ctime: c.u64()? as i64, mode: c.u32()? };
            let hash: [u8; 32] = c.take(32)?.try_into().ok()?;
            let len = c.u32()? as usize;
            let path = c.take(len)?.to_vec();
            entries.insert(path, (stat, hash));
        }
        if c.0 != END {
            return None;
        }
        Some(StatCache { entries, trusted_before: started.saturating_sub(GRANULARITY_NS), started })
    }

    /// The hash recorded for `path` if its stat is the same and old enough to be trusted.
    pub(crate) fn lookup(&self, path: &[u8], now: &Stat) -> Option<[u8; 32]> {
        let (stat, hash) = self.entries.get(path)?;
        (stat == now && now.mtime < self.trusted_before && now.ctime < self.trusted_before).then_some(*hash)
    }

    /// [`StatCache::lookup`], taking the entry out when it is trusted (with its path, to move
    /// into the next cache: a checkpoint holds one copy of the cache, not two).
    pub(crate) fn take(&mut self, path: &[u8], now: &Stat) -> Option<(Vec<u8>, [u8; 32])> {
        let hash = self.lookup(path, now)?;
        let (key, _) = self.entries.remove_entry(path)?;
        Some((key, hash))
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keeps only the entries whose content is `live` and writes the cache again, durably,
    /// before those contents are removed from the store: the cache on disk, whatever a crash
    /// keeps of the later unsynced saves, never names a removed content.
    pub(crate) fn prune(store: &Store, live: &std::collections::HashSet<[u8; 32]>) -> crate::error::Result<()> {
        let Some(mut c) = Self::parse(store) else {
            // Damaged or absent: none (never one naming a removed content).
            return store.remove_durably("statcache");
        };
        c.entries.retain(|_, (_, h)| live.contains(h));
        store.write_whole("statcache", &c.encode(c.started))
    }

    pub(crate) fn insert(&mut self, path: Vec<u8>, stat: Stat, hash: [u8; 32]) {
        self.entries.insert(path, (stat, hash));
    }

    fn encode(&self, started: i64) -> Vec<u8> {
        let paths: usize = self.entries.keys().map(Vec::len).sum();
        let mut out = Vec::with_capacity(MAGIC.len() + 16 + self.entries.len() * FIXED + paths + END.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(started as u64).to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for (p, (s, h)) in &self.entries {
            for v in [s.dev, s.ino, s.size, s.mtime as u64, s.ctime as u64] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&s.mode.to_le_bytes());
            out.extend_from_slice(h);
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            out.extend_from_slice(p);
        }
        out.extend_from_slice(END);
        out
    }

    /// Writes the cache whole; `started` is when its walk started (file-system time, ns). Not
    /// made durable on its own: it only names contents already durable in the store, and a
    /// cache lost or cut short by a crash is detected and ignored.
    pub(crate) fn save(&self, store: &Store, started: i64) -> crate::error::Result<()> {
        store.write_replace("statcache", &self.encode(started))
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
