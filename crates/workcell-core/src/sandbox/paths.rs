//! Which paths a confined child may use, besides the workspace.
//!
//! Read and execute:
//! - `/usr`, every `/lib*` (`/lib`, `/lib32`, `/lib64`, `/libx32`), `/bin`, `/sbin`, `/etc`:
//!   programs, their shared libraries, and system configuration (the dynamic loader's cache,
//!   `/etc/ssl`, `/etc/passwd`, `/etc/gitconfig`...);
//! - the directory of the program a tool runs (for node_process: `process.execPath`'s, both as
//!   given and resolved) and, for a Node.js installed under a prefix (`<prefix>/bin/node`),
//!   `<prefix>/lib/node_modules`, where `npm` lives;
//! - `/sys/fs/cgroup` and `/sys/devices/system/cpu`: Node sizes its heap from the cgroup's
//!   memory limit and counts CPUs there;
//! - `/proc`: all of it where the child has a private one (its PID namespace's, added in the
//!   child); otherwise only its own `/proc/<pid>` and [`PROC_FILES`], since the host's `/proc`
//!   would show other processes' command lines and environments.
//!
//! Read and write: the workspace, the host's `writePaths`, and `/dev/null`, `/dev/zero`,
//! `/dev/full`. Read only: `/dev/random`, `/dev/urandom` (git and others need random bytes).
//!
//! Nothing else: not `$HOME`, `/root`, `/tmp`, `/var`, `/run`, `/mnt`, `/media`, `/srv`,
//! `/opt`, other workspaces, or the host's own files.

use std::path::{Path, PathBuf};

/// What a rule allows beneath a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read files, list directories, execute.
    ReadExecute,
    /// Everything the ABI knows.
    ReadWrite,
    /// Read, write, truncate and ioctl (for character devices such as `/dev/null`).
    DeviceReadWrite,
    /// Read only (the random devices).
    DeviceRead,
}

/// One rule: a path (opened when the ruleset is built) and what is allowed beneath it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub path: PathBuf,
    pub access: Access,
    /// Refuse to follow a symlink in the last component (for canonical paths from the host's
    /// options, which must still be what they were when they were checked).
    pub no_follow: bool,
}

impl Grant {
    pub fn new(path: impl Into<PathBuf>, access: Access) -> Self {
        Grant { path: path.into(), access, no_follow: false }
    }
}

/// Top-level system directories allowed for reading and executing (besides every `/lib*`).
pub const SYSTEM_DIRS: [&str; 4] = ["/usr", "/bin", "/sbin", "/etc"];
/// What Node.js reads at start-up outside the system directories.
pub const SYSTEM_INFO_DIRS: [&str; 2] = ["/sys/fs/cgroup", "/sys/devices/system/cpu"];
/// System-wide `/proc` files allowed for reading where the child's `/proc` is the host's (with
/// a private `/proc`, all of it is readable).
pub const PROC_FILES: [&str; 8] =
    ["/proc/meminfo", "/proc/cpuinfo", "/proc/stat", "/proc/loadavg", "/proc/uptime", "/proc/version", "/proc/filesystems", "/proc/sys"];
/// Character devices allowed for reading and writing.
pub const DEVICES_READ_WRITE: [&str; 3] = ["/dev/null", "/dev/zero", "/dev/full"];
/// Character devices allowed for reading.
pub const DEVICES_READ: [&str; 2] = ["/dev/random", "/dev/urandom"];

/// The system grants (see the module documentation).
pub fn system_grants() -> Vec<Grant> {
    let mut grants: Vec<Grant> = SYSTEM_DIRS.iter().map(|p| Grant::new(*p, Access::ReadExecute)).collect();
    if let Ok(entries) = std::fs::read_dir("/") {
        let mut libs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_name().as_encoded_bytes().starts_with(b"lib"))
            .map(|e| e.path())
            .collect();
        libs.sort();
        grants.extend(libs.into_iter().map(|p| Grant::new(p, Access::ReadExecute)));
    }
    grants.extend(SYSTEM_INFO_DIRS.iter().map(|p| Grant::new(*p, Access::ReadExecute)));
    grants.extend(PROC_FILES.iter().map(|p| Grant::new(*p, Access::ReadExecute)));
    grants.extend(DEVICES_READ_WRITE.iter().map(|p| Grant::new(*p, Access::DeviceReadWrite)));
    grants.extend(DEVICES_READ.iter().map(|p| Grant::new(*p, Access::DeviceRead)));
    grants
}

/// The paths [`system_grants`] lets every confined process read (not the writable devices),
/// that exist: what node_process's permission model also allows where Landlock confines it.
pub fn system_read_paths() -> Vec<PathBuf> {
    system_grants()
        .into_iter()
        .filter(|g| matches!(g.access, Access::ReadExecute | Access::DeviceRead) && g.path.exists())
        // A name Node's flag parser would misread is left out (never the whole layer).
        .filter(|g| !g.path.as_os_str().as_encoded_bytes().iter().any(|b| matches!(b, b',' | b'*')))
        .map(|g| g.path)
        .collect()
}

/// Read-and-execute grants for a program: its directory as given and as resolved, and
/// `<prefix>/lib/node_modules` beside a `<prefix>/bin`.
pub fn program_grants(program: &Path) -> Vec<Grant> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let resolved = std::fs::canonicalize(program).ok();
    for p in [Some(program.to_path_buf()), resolved].into_iter().flatten() {
        if let Some(dir) = p.parent().filter(|d| d.is_absolute() && *d != Path::new("/")) {
            if !dirs.iter().any(|d| d == dir) {
                dirs.push(dir.to_path_buf());
            }
            if dir.file_name().is_some_and(|n| n == "bin") {
                if let Some(prefix) = dir.parent() {
                    let modules = prefix.join("lib").join("node_modules");
                    if modules.is_dir() && !dirs.contains(&modules) {
                        dirs.push(modules);
                    }
                }
            }
        }
    }
    dirs.into_iter().map(|d| Grant::new(d, Access::ReadExecute)).collect()
}

/// Validates and canonicalizes a path from the host's `readPaths` / `writePaths`: absolute,
/// no NUL, existing. Returns a message for the host otherwise.
pub fn canonical_grant(path: &str) -> Result<PathBuf, String> {
    if path.contains('\0') {
        return Err(format!("sandbox path {path:?} contains a NUL character"));
    }
    let p = Path::new(path);
    if !p.is_absolute() {
        return Err(format!("sandbox path {path:?} must be absolute"));
    }
    std::fs::canonicalize(p).map_err(|e| format!("sandbox path {path:?} cannot be granted: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_checked_and_canonical() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        assert_eq!(canonical_grant(real.join("link").to_str().unwrap()).unwrap(), real);
        assert!(canonical_grant("relative/dir").unwrap_err().contains("absolute"));
        assert!(canonical_grant(real.join("missing").to_str().unwrap()).unwrap_err().contains("cannot be granted"));
        assert!(canonical_grant("/a\0b").unwrap_err().contains("NUL"));
    }

    #[test]
    fn program_grants_cover_a_prefix_install() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(prefix.join("bin")).unwrap();
        std::fs::create_dir_all(prefix.join("lib/node_modules/npm")).unwrap();
        std::fs::write(prefix.join("bin/node"), "").unwrap();
        let got: Vec<PathBuf> = program_grants(&prefix.join("bin/node")).into_iter().map(|g| g.path).collect();
        assert_eq!(got, vec![prefix.join("bin"), prefix.join("lib/node_modules")]);
        // Without lib/node_modules only the directory.
        std::fs::remove_dir_all(prefix.join("lib")).unwrap();
        let got: Vec<PathBuf> = program_grants(&prefix.join("bin/node")).into_iter().map(|g| g.path).collect();
        assert_eq!(got, vec![prefix.join("bin")]);
    }

    #[test]
    fn system_grants_have_no_home_or_tmp() {
        let grants = system_grants();
        for g in &grants {
            for bad in ["/root", "/home", "/tmp", "/var", "/run"] {
                assert!(!g.path.starts_with(bad), "{:?}", g.path);
            }
            assert_ne!(g.path, Path::new("/"));
        }
        assert!(grants.iter().any(|g| g.path == Path::new("/usr") && g.access == Access::ReadExecute));
        assert!(grants.iter().any(|g| g.path == Path::new("/dev/null") && g.access == Access::DeviceReadWrite));
    }
}
