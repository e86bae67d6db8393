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
//! again). A process keeps the cache it last read or wrote in memory and uses it again while
//! the file on disk is that one (the same random generation in its header and the same
//! length): a checkpoint where little changed neither parses nor re-encodes the whole cache.

use std::collections::HashSet;
use std::hash::BuildHasher as _;
use std::io::Read as _;

use super::scan::Stat;
use super::store::Store;

/// How close to the cache's walk a timestamp must be for the entry not to be trusted: 2 s
/// (the coarsest file-system timestamps in use, FAT's, and any clock tick below that).
pub const GRANULARITY_NS: i64 = 2_000_000_000;

/// The file starts with this, then a random generation (16 bytes: which write this is), the
/// walk's start (i64), the entry count (u64), the entries (each: dev, ino, size as u64; mtime,
/// ctime as i64; mode as u32; the hash; the path's length as u32 and its bytes; all
/// little-endian) and ends with [`END`]. A file that does not parse exactly (cut short, or from
/// another version) is no cache: every file is read again.
const MAGIC: &[u8; 16] = b"workcell-stat 3\n";
const END: &[u8; 8] = b"\nend-sc\n";
/// Bytes of an entry besides its path.
const FIXED: usize = 8 * 5 + 4 + 32 + 4;
/// Bytes before the first entry.
const HEADER: usize = MAGIC.len() + 16 + 8 + 8;

/// One entry: its path (in [`StatCache::paths`]), the stat and the hash.
#[derive(Clone, Copy)]
struct Entry {
    at: u32,
    len: u32,
    stat: Stat,
    hash: [u8; 32],
}

/// The entries in the order they were recorded (a walk's order: the next walk looks them up
/// in the same order, reading memory front to back), their paths in one buffer, and an index
/// by path (hashed with a per-process random seed: the names come from the workspace).
#[derive(Clone, Default)]
pub(crate) struct StatCache {
    paths: Vec<u8>,
    entries: Vec<Entry>,
    index: hashbrown::HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    /// Entries with a timestamp at or after this are not trusted.
    trusted_before: i64,
    /// When the walk that wrote the cache started.
    started: i64,
    /// The file this cache was read from or written as: its generation and length (none: no
    /// file says what this cache says).
    on_disk: Option<([u8; 16], u64)>,
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

fn generation() -> [u8; 16] {
    let mut g = [0u8; 16];
    if getrandom::fill(&mut g).is_err() {
        // No randomness: a generation no other write shares in practice (time and a counter).
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0);
        g[..8].copy_from_slice(&t.to_le_bytes());
        g[8..].copy_from_slice(&(COUNTER.fetch_add(1, Ordering::Relaxed) ^ (u64::from(std::process::id()) << 32)).to_le_bytes());
    }
    g
}

impl StatCache {
    /// The store's cache: `kept` when the file on disk is the one it was read from or written
    /// as, else the file read again (an empty cache when it is absent or does not parse).
    pub(crate) fn load(store: &Store, kept: Option<std::sync::Arc<StatCache>>) -> std::sync::Arc<StatCache> {
        if let Some(k) = kept {
            if k.on_disk.is_some() && k.on_disk == Self::identity(store) {
                return k;
            }
        }
        std::sync::Arc::new(Self::parse(store).unwrap_or_default())
    }

    /// The generation and length of the file on disk, from its header and size.
    fn identity(store: &Store) -> Option<([u8; 16], u64)> {
        let mut r = store.reader("statcache")?;
        let len = r.get_ref().metadata().ok()?.len();
        let mut head = [0u8; MAGIC.len() + 16];
        r.read_exact(&mut head).ok()?;
        (&head[..MAGIC.len()] == MAGIC).then(|| (head[MAGIC.len()..].try_into().expect("16 bytes"), len))
    }

    fn parse(store: &Store) -> Option<StatCache> {
        let mut bytes = Vec::new();
        store.reader("statcache")?.read_to_end(&mut bytes).ok()?;
        let mut c = Cursor(&bytes);
        if c.take(MAGIC.len())? != MAGIC {
            return None;
        }
        let gen: [u8; 16] = c.take(16)?.try_into().ok()?;
        let started = c.u64()? as i64;
        let count = c.u64()? as usize;
        // Each entry takes at least FIXED bytes: a count the file cannot hold is damage.
        if count > bytes.len() / FIXED {
            return None;
        }
        let mut cache = StatCache::with_capacity(count, bytes.len());
        for _ in 0..count {
            let stat = Stat { dev: c.u64()?, ino: c.u64()?, size: c.u64()?, mtime: c.u64()? as i64, ctime: c.u64()? as i64, mode: c.u32()? };
            let hash: [u8; 32] = c.take(32)?.try_into().ok()?;
            let len = c.u32()? as usize;
            cache.push(c.take(len)?, stat, hash);
        }
        if c.0 != END {
            return None;
        }
        let mut cache = cache.seal(started);
        cache.on_disk = Some((gen, bytes.len() as u64));
        Some(cache)
    }

    /// An empty cache to [`StatCache::push`] into, then [`StatCache::seal`].
    pub(crate) fn with_capacity(entries: usize, path_bytes: usize) -> StatCache {
        StatCache { paths: Vec::with_capacity(path_bytes), entries: Vec::with_capacity(entries), ..StatCache::default() }
    }

    /// Adds an entry (a path at most once; indexed by [`StatCache::seal`]).
    pub(crate) fn push(&mut self, path: &[u8], stat: Stat, hash: [u8; 32]) {
        let (Ok(at), Ok(len)) = (u32::try_from(self.paths.len()), u32::try_from(path.len())) else {
            // Past 4 GiB of paths: not cached (the file is read again next time).
            return;
        };
        if at.checked_add(len).is_none() {
            return;
        }
        self.paths.extend_from_slice(path);
        self.entries.push(Entry { at, len, stat, hash });
    }

    /// Indexes the entries; `started` is when the walk that recorded them started.
    pub(crate) fn seal(mut self, started: i64) -> StatCache {
        let mut index = hashbrown::HashTable::with_capacity(self.entries.len());
        for (i, e) in self.entries.iter().enumerate() {
            let h = self.hasher.hash_one(&self.paths[e.at as usize..(e.at + e.len) as usize]);
            index.insert_unique(h, i as u32, |&j| {
                let e = &self.entries[j as usize];
                self.hasher.hash_one(&self.paths[e.at as usize..(e.at + e.len) as usize])
            });
        }
        self.index = index;
        self.started = started;
        self.trusted_before = started.saturating_sub(GRANULARITY_NS);
        self.on_disk = None;
        self
    }

    fn path(&self, i: usize) -> &[u8] {
        let e = &self.entries[i];
        &self.paths[e.at as usize..(e.at + e.len) as usize]
    }

    fn find(&self, path: &[u8]) -> Option<usize> {
        let h = self.hasher.hash_one(path);
        self.index.find(h, |&i| self.path(i as usize) == path).map(|&i| i as usize)
    }

    fn trusted(&self, i: usize, now: &Stat) -> Option<[u8; 32]> {
        let e = &self.entries[i];
        (e.stat == *now && now.mtime < self.trusted_before && now.ctime < self.trusted_before).then_some(e.hash)
    }

    /// The hash recorded for `path` if its stat is the same and old enough to be trusted.
    pub(crate) fn lookup(&self, path: &[u8], now: &Stat) -> Option<[u8; 32]> {
        self.trusted(self.find(path)?, now)
    }

    /// [`StatCache::lookup`] for a walk that asks in the cache's own order: `next` is where
    /// the previous entry found was, plus one (tried before the index).
    pub(crate) fn lookup_next(&self, next: &mut usize, path: &[u8], now: &Stat) -> Option<[u8; 32]> {
        let i = if *next < self.entries.len() && self.path(*next) == path { *next } else { self.find(path)? };
        *next = i + 1;
        self.trusted(i, now)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Keeps only the entries whose content is `live` and writes the cache again, durably,
    /// before those contents are removed from the store: the cache on disk, whatever a crash
    /// keeps of the later unsynced saves, never names a removed content.
    pub(crate) fn prune(store: &Store, live: &HashSet<[u8; 32]>) -> crate::error::Result<()> {
        let Some(c) = Self::parse(store) else {
            // Damaged or absent: none (never one naming a removed content).
            return store.remove_durably("statcache");
        };
        let mut kept = StatCache::with_capacity(c.entries.len(), c.paths.len());
        for (i, e) in c.entries.iter().enumerate() {
            if live.contains(&e.hash) {
                kept.push(c.path(i), e.stat, e.hash);
            }
        }
        kept.started = c.started;
        let (bytes, _) = kept.encode();
        store.write_whole("statcache", &bytes)
    }

    fn encode(&self) -> (Vec<u8>, [u8; 16]) {
        let gen = generation();
        let mut out = Vec::with_capacity(HEADER + self.entries.len() * FIXED + self.paths.len() + END.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&gen);
        out.extend_from_slice(&(self.started as u64).to_le_bytes());
        out.extend_from_slice(&(self.entries.len() as u64).to_le_bytes());
        for (i, e) in self.entries.iter().enumerate() {
            let s = &e.stat;
            for v in [s.dev, s.ino, s.size, s.mtime as u64, s.ctime as u64] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            out.extend_from_slice(&s.mode.to_le_bytes());
            out.extend_from_slice(&e.hash);
            out.extend_from_slice(&e.len.to_le_bytes());
            out.extend_from_slice(self.path(i));
        }
        out.extend_from_slice(END);
        (out, gen)
    }

    /// Writes the cache whole (not made durable on its own: it only names contents already
    /// durable in the store, and a cache lost or cut short by a crash is detected and
    /// ignored). On success the cache knows itself as the file on disk.
    pub(crate) fn save(&mut self, store: &Store) -> crate::error::Result<()> {
        let (bytes, gen) = self.encode();
        store.write_replace("statcache", &bytes)?;
        self.on_disk = Some((gen, bytes.len() as u64));
        Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn stat(ino: u64) -> Stat {
        Stat { dev: 1, ino, size: 3, mtime: 10, ctime: 10, mode: 0o100_644 }
    }

    fn cache(entries: &[(&[u8], u64)]) -> StatCache {
        let mut c = StatCache::with_capacity(entries.len(), 64);
        for (p, ino) in entries {
            c.push(p, stat(*ino), [*ino as u8; 32]);
        }
        c.seal(GRANULARITY_NS * 10)
    }

    fn store() -> (tempfile::TempDir, Store) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let store = Store::open(&tmp.path().join("store"), &std::fs::canonicalize(&root).unwrap()).unwrap();
        (tmp, store)
    }

    #[test]
    fn a_kept_cache_is_used_only_while_the_file_on_disk_is_the_one_it_mirrors() {
        let (tmp, store) = store();
        let mut a = cache(&[(b"a.txt", 1)]);
        a.save(&store).unwrap();
        let a = Arc::new(a);
        assert!(Arc::ptr_eq(&StatCache::load(&store, Some(a.clone())), &a), "the cache this process wrote was parsed again");
        // Another writer's cache of the same length (another host process): read, not the kept one.
        let mut b = cache(&[(b"b.txt", 2)]);
        b.save(&store).unwrap();
        let loaded = StatCache::load(&store, Some(a.clone()));
        assert!(!Arc::ptr_eq(&loaded, &a), "a cache another writer replaced was still used");
        assert_eq!(loaded.lookup(b"b.txt", &stat(2)), Some([2; 32]));
        assert_eq!(loaded.lookup(b"a.txt", &stat(1)), None);
        // The file cut short behind the process's back: it is read again (and is no cache).
        let file = tmp.path().join("store/statcache");
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() - 3]).unwrap();
        let cut = StatCache::load(&store, Some(loaded.clone()));
        assert!(!Arc::ptr_eq(&cut, &loaded));
        assert_eq!(cut.len(), 0);
        // Gone: none.
        std::fs::remove_file(&file).unwrap();
        assert_eq!(StatCache::load(&store, Some(loaded)).len(), 0);
    }

    proptest! {
        /// The walk-order lookup and the index agree, in any order of asking.
        #[test]
        fn lookups_in_walk_order_agree_with_the_index(
            names in proptest::collection::btree_set("[a-c/]{1,6}", 1..40),
            asks in proptest::collection::vec((0usize..60, any::<bool>()), 0..80),
        ) {
            let names: Vec<Vec<u8>> = names.into_iter().map(String::into_bytes).collect();
            let entries: Vec<(&[u8], u64)> = names.iter().enumerate().map(|(i, n)| (n.as_slice(), i as u64)).collect();
            let c = cache(&entries);
            let mut next = 0;
            for (i, same) in asks {
                let path: Vec<u8> = names.get(i).cloned().unwrap_or_else(|| format!("missing{i}").into_bytes());
                let now = if same { stat(i as u64) } else { stat(i as u64 + 1000) };
                prop_assert_eq!(c.lookup_next(&mut next, &path, &now), c.lookup(&path, &now));
            }
        }
    }
}
