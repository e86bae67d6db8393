//! Per-call cgroups: the memory and process caps of a whole confined tree.
//!
//! Where the host may create one, each call gets a leaf of its own, named at random, below the
//! host's own cgroup (so the host's own limits still bound it): a cgroup v2 leaf where the
//! controller is delegated there (listed in the host cgroup's `cgroup.subtree_control`), else a
//! group in the cgroup v1 hierarchy of that controller. The host opens the leaf's `tasks` (v1)
//! or `cgroup.procs` (v2) and the program's process writes `0` to it just before exec
//! ([`super::resources::ChildLimits`]), so the tree is in it from its first instruction, and the
//! processes that share the host's memory until exec (C and the namespace's init) never are: the
//! cgroup's OOM killer can only choose one of the program's processes.
//!
//! When the call ends ([`Leaf`]'s drop, after the process machinery has killed the tree, also
//! on timeout, cancellation and a failed spawn) whatever is left in the leaf is killed and the
//! leaf removed; a leaf that cannot be removed at once (a process still exiting) is retried in
//! the background for a bounded time.

use std::ffi::OsStr;
use std::fs;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::resources::By;

/// The cgroup directory of the host for one controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    pub dir: PathBuf,
    pub version: By,
}

/// Where this process may create per-call cgroups (probed once: found from `/proc/self/cgroup`
/// and `/proc/self/mountinfo`, then tried with a throwaway leaf).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Support {
    pub memory: Option<Place>,
    pub pids: Option<Place>,
}

impl Support {
    pub fn detect() -> &'static Support {
        static DETECTED: OnceLock<Support> = OnceLock::new();
        DETECTED.get_or_init(|| {
            let cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let mountinfo = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
            let found = find(&cgroup, &mountinfo);
            let support = Support { memory: found.memory.filter(|p| usable(p, "memory")), pids: found.pids.filter(|p| usable(p, "pids")) };
            for place in support.memory.iter().chain(&support.pids) {
                remove_stale(&place.dir);
            }
            support
        })
    }
}

/// How old an empty leaf must be before a later host removes it.
const STALE: Duration = Duration::from_secs(60);

/// Removes the empty leaves a host left behind in `dir` (it was killed before its drop ran, or
/// exited while a leaf was still being emptied). Only `workcell-<hex>` leaves older than
/// [`STALE`]: a leaf in use is never empty that long after its creation (the program joins it
/// within milliseconds) and `rmdir` refuses a leaf with processes in it.
fn remove_stale(dir: &Path) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten().take(4096) {
        if !is_leaf_name(&e.file_name()) {
            continue;
        }
        let old = e.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE);
        if old {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// The host's place in each hierarchy, from the texts of `/proc/self/cgroup` and
/// `/proc/self/mountinfo`: a v2 place where the controller is delegated below the host's cgroup,
/// else the v1 one.
pub fn find(cgroup: &str, mountinfo: &str) -> Support {
    let mut v2_path = None;
    let mut v1_paths: Vec<(Vec<&str>, &str)> = Vec::new();
    for line in cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if controllers.is_empty() {
            v2_path = Some(path);
        } else {
            v1_paths.push((controllers.split(',').collect(), path));
        }
    }
    let mut v2_mount = None;
    let mut v1_mounts: Vec<(Vec<&str>, &str, &str)> = Vec::new();
    for line in mountinfo.lines() {
        // id parent major:minor root mountpoint options [optional...] - fstype source super-options
        let Some((left, right)) = line.split_once(" - ") else { continue };
        let fields: Vec<&str> = left.split(' ').collect();
        let rfields: Vec<&str> = right.split(' ').collect();
        if fields.len() < 5 || rfields.len() < 3 {
            continue;
        }
        let (root, mountpoint) = (fields[3], fields[4]);
        match rfields[0] {
            "cgroup2" => v2_mount = v2_mount.or(Some((root, mountpoint))),
            "cgroup" => v1_mounts.push((rfields[2].split(',').collect(), root, mountpoint)),
            _ => {}
        }
    }
    let place = |root: &str, mountpoint: &str, path: &str| -> Option<PathBuf> {
        // Paths are relative to the mount's root (a cgroup namespace shows "/").
        let rel = if root == "/" { path } else { path.strip_prefix(root)? };
        let rel = rel.trim_start_matches('/');
        if rel.split('/').any(|c| c == "..") || mountpoint.contains('\\') {
            return None;
        }
        Some(Path::new(mountpoint).join(rel))
    };
    let v2_dir = match (v2_path, v2_mount) {
        (Some(path), Some((root, mountpoint))) => place(root, mountpoint, path),
        _ => None,
    };
    let for_controller = |name: &str| -> Option<Place> {
        if let Some(dir) = &v2_dir {
            let delegated = fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
            if delegated.split_whitespace().any(|c| c == name) {
                return Some(Place { dir: dir.clone(), version: By::CgroupV2 });
            }
        }
        let (_, path) = v1_paths.iter().find(|(c, _)| c.contains(&name))?;
        let (_, root, mountpoint) = v1_mounts.iter().find(|(opts, _, _)| opts.contains(&name))?;
        Some(Place { dir: place(root, mountpoint, path)?, version: By::CgroupV1 })
    };
    Support { memory: for_controller("memory"), pids: for_controller("pids") }
}

/// Whether a leaf can be made, limited and removed at `place`.
fn usable(place: &Place, controller: &str) -> bool {
    let Ok(dir) = make_dir(&place.dir) else { return false };
    let file = match (place.version, controller) {
        (By::CgroupV2, "memory") => "memory.max",
        (By::CgroupV1, "memory") => "memory.limit_in_bytes",
        _ => "pids.max",
    };
    let ok = dir.join(file).exists() && fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")).is_ok();
    let removed = fs::remove_dir(&dir).is_ok();
    ok && removed
}

fn make_dir(parent: &Path) -> io::Result<PathBuf> {
    let dir = parent.join(crate::temp_name::random_name("workcell-", 8));
    fs::create_dir(&dir)?;
    Ok(dir)
}

/// What a call asks of its cgroups.
#[derive(Clone, Copy, Debug, Default)]
pub struct Request {
    pub memory_bytes: Option<u64>,
    pub processes: Option<u64>,
}

/// The cgroups of one call: removed (with whatever is left in them killed) on drop.
#[derive(Debug)]
pub struct Leaf {
    dirs: Vec<PathBuf>,
    procs: Vec<OwnedFd>,
}

impl Leaf {
    /// Creates the leaves for `req` at the places of `support` (one v2 leaf for both, or one per
    /// v1 hierarchy). Nothing is left behind on failure.
    pub fn create(support: &Support, req: &Request) -> io::Result<Leaf> {
        let mut leaf = Leaf { dirs: Vec::new(), procs: Vec::new() };
        let mut settings: Vec<(&Place, &str, String)> = Vec::new();
        if let (Some(max), Some(place)) = (req.memory_bytes, &support.memory) {
            match place.version {
                By::CgroupV2 => {
                    settings.push((place, "memory.max", max.to_string()));
                    // No escape into swap.
                    settings.push((place, "memory.swap.max", "0".into()));
                }
                _ => {
                    settings.push((place, "memory.limit_in_bytes", max.to_string()));
                    settings.push((place, "memory.memsw.limit_in_bytes", max.to_string()));
                }
            }
        }
        if let (Some(max), Some(place)) = (req.processes, &support.pids) {
            settings.push((place, "pids.max", max.to_string()));
        }
        let mut made: Vec<(&Path, PathBuf)> = Vec::new();
        for (place, file, value) in settings {
            let dir = match made.iter().find(|(p, _)| *p == place.dir.as_path()) {
                Some((_, d)) => d.clone(),
                None => {
                    let d = make_dir(&place.dir)?;
                    leaf.dirs.push(d.clone());
                    leaf.procs.push(open_join_file(&d, place.version)?);
                    made.push((place.dir.as_path(), d.clone()));
                    d
                }
            };
            let path = dir.join(file);
            match fs::write(&path, value) {
                Ok(()) => {}
                // Swap accounting is optional: without it there is no swap to escape into.
                Err(e) if e.kind() == io::ErrorKind::NotFound && file.contains("sw") => {}
                Err(e) => return Err(e),
            }
        }
        Ok(leaf)
    }

    /// The descriptors of the leaves' join files (close-on-exec), for the child to join.
    pub fn procs(&self) -> Vec<libc::c_int> {
        self.procs.iter().map(|f| f.as_raw_fd()).collect()
    }
}

/// The file through which the program's process joins a leaf by writing `0`.
///
/// On cgroup v1 that is `tasks`, which moves only the writing thread: the program's process is
/// a freshly cloned, single-threaded process, so that is the whole process, and the kernel
/// (since 6.0) then skips the global `cgroup_threadgroup_rwsem` that a write to `cgroup.procs`
/// takes for writing, whose RCU grace period cost every confined call about 5 ms per
/// controller. On cgroup v2 `tasks` does not exist (and `cgroup.threads` needs a threaded
/// subtree): `cgroup.procs`.
fn open_join_file(dir: &Path, version: By) -> io::Result<OwnedFd> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = if version == By::CgroupV1 { "tasks" } else { "cgroup.procs" };
    let f = fs::OpenOptions::new().write(true).custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW).open(dir.join(file))?;
    Ok(f.into())
}

/// How long a drop waits for a leaf to empty before leaving it to a background thread (the
/// tree is already killed: this is the kernel finishing its exits on a loaded machine).
const REMOVE_WAIT: Duration = Duration::from_secs(2);
/// How long the background thread keeps trying.
const REMOVE_BACKGROUND: Duration = Duration::from_secs(30);

impl Drop for Leaf {
    fn drop(&mut self) {
        self.procs.clear();
        let dirs = std::mem::take(&mut self.dirs);
        let left: Vec<PathBuf> = dirs.into_iter().filter(|d| !remove(d, REMOVE_WAIT)).collect();
        if !left.is_empty() {
            let _ = std::thread::Builder::new().name("workcell-cgroup".into()).spawn(move || {
                for d in left {
                    remove(&d, REMOVE_BACKGROUND);
                }
            });
        }
    }
}

/// Kills what is in `dir` and removes it, trying until `wait` has passed. True once it is gone.
pub fn remove(dir: &Path, wait: Duration) -> bool {
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        match fs::remove_dir(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return true,
            Err(_) => {}
        }
        kill_members(dir);
        if start.elapsed() >= wait {
            return false;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// SIGKILL to every process in the cgroup (`cgroup.kill` on v2, Linux 5.14+; else one by one
/// from `cgroup.procs`).
fn kill_members(dir: &Path) {
    if fs::write(dir.join("cgroup.kill"), "1").is_ok() {
        return;
    }
    let Ok(list) = fs::read_to_string(dir.join("cgroup.procs")) else { return };
    for pid in list.split_whitespace().filter_map(|p| p.parse::<libc::pid_t>().ok()).filter(|p| *p > 1) {
        // SAFETY: kill with plain integers.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Whether a path is a leaf made here (for tests and leak checks: `workcell-<hex>`).
pub fn is_leaf_name(name: &OsStr) -> bool {
    name.to_str().and_then(|n| n.strip_prefix("workcell-")).is_some_and(|h| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    #[test]
    fn finds_the_v1_places_of_a_hybrid_system() {
        let cgroup = "8:pids:/\n4:memory:/process_api/abc\n1:cpu:/\n0::/\n";
        let s = find(cgroup, MOUNTINFO);
        assert_eq!(s.memory, Some(Place { dir: "/sys/fs/cgroup/memory/process_api/abc".into(), version: By::CgroupV1 }));
        assert_eq!(s.pids, Some(Place { dir: "/sys/fs/cgroup/pids".into(), version: By::CgroupV1 }));
    }

    #[test]
    fn a_path_outside_the_mount_root_or_climbing_is_no_place() {
        let mountinfo = "35 31 0:32 /outer /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(find("4:memory:/elsewhere\n", mountinfo).memory, None);
        assert_eq!(find("4:memory:/outer/x\n", mountinfo).memory.unwrap().dir, PathBuf::from("/sys/fs/cgroup/memory/x"));
        assert_eq!(find("4:memory:/outer/../x\n", mountinfo).memory, None);
        assert_eq!(find("4:cpu:/\n", mountinfo).memory, None);
    }

    #[test]
    fn only_old_empty_leaves_are_swept() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join(crate::temp_name::random_name("workcell-", 8));
        let old = dir.path().join(crate::temp_name::random_name("workcell-", 8));
        let busy = dir.path().join(crate::temp_name::random_name("workcell-", 8));
        let other = dir.path().join("workcell-other");
        for d in [&fresh, &old, &busy, &other] {
            fs::create_dir(d).unwrap();
        }
        // A leaf with something in it stands for one with processes (rmdir refuses both).
        fs::write(busy.join("cgroup.procs"), "1").unwrap();
        let past = std::time::SystemTime::now() - Duration::from_secs(120);
        for d in [&old, &busy, &other] {
            fs::File::open(d).unwrap().set_modified(past).unwrap();
        }
        remove_stale(dir.path());
        assert!(fresh.exists() && busy.exists() && other.exists());
        assert!(!old.exists());
    }

    #[test]
    fn leaf_names_are_random_and_recognized() {
        let a = crate::temp_name::random_name("workcell-", 8);
        assert!(is_leaf_name(OsStr::new(&a)));
        assert_ne!(a, crate::temp_name::random_name("workcell-", 8));
        assert!(!is_leaf_name(OsStr::new("workcell-x")));
    }
}
