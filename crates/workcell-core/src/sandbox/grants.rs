//! Per-call grants (contract §12, §21): what one approved call may have beyond its tool's
//! sandbox options, for that call only (for the tool set with `remember: "session"`).
//!
//! The paths were resolved when the call was validated (the approval layer calls
//! [`canonical_grant`], whose errors the model gets, and shows the person the canonical paths).
//! When the person says yes they are pinned ([`pin`]): each is opened once, from `/`, one
//! component at a time, following no symlink in any component ([`open_no_symlinks`]), and the
//! open descriptors are kept ([`Pinned`], in a registry the host refers to by id). The sandbox
//! is built from those descriptors (Landlock rules on the open directories), never from the
//! path string again: a parent component replaced by a symlink after the approval changes
//! nothing (the rule is on the directory that was approved), and one replaced before the pin
//! makes the pin fail (`TARGET_CHANGED`, nothing run). A remembered grant keeps its
//! descriptors for the tool set.
//!
//! Paths given as strings (start_process's validation) are checked here too: absolute and
//! without NUL (else the call is refused), and still the canonical path of an existing file or
//! directory; one that no longer is opens nothing.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{canonical_grant, Mode, SandboxOptions};
use crate::error::{Code, Error, Reason, Result};

/// Most paths in each of `writePaths` and `readPaths` of one start: a call's own (at most 16,
/// checked when it is validated) merged with the grants remembered for the tool set.
pub const MAX_GRANT_PATHS: usize = 256;

/// A call's grants as the model sent them (after the approval layer resolved the paths).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantRequest {
    #[serde(default)]
    pub write_paths: Vec<String>,
    #[serde(default)]
    pub read_paths: Vec<String>,
    #[serde(default)]
    pub network: bool,
    /// Only `"off"`.
    #[serde(default)]
    pub sandbox: Option<String>,
    /// Pinned grants ([`pin`]) by id: what an approved start uses instead of path strings.
    #[serde(default)]
    pub handles: Vec<u64>,
}

/// One approved path, open.
#[derive(Debug)]
pub struct PinnedPath {
    /// The canonical path the person approved (for messages and Node's permission flags).
    pub path: PathBuf,
    /// Opened with `O_PATH`, no symlink followed in any component.
    pub fd: OwnedFd,
    /// Read and write (else read and execute).
    pub write: bool,
}

/// The paths of one approval, opened when the person said yes.
#[derive(Debug)]
pub struct Pinned {
    pub id: u64,
    pub paths: Vec<PinnedPath>,
}

impl PartialEq for Pinned {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}
impl Eq for Pinned {}

static PINS: Mutex<Option<HashMap<u64, Arc<Pinned>>>> = Mutex::new(None);
static NEXT_PIN: AtomicU64 = AtomicU64::new(1);

/// Opens `path` (absolute, canonical: no `.` or `..`) from `/`, one component at a time with
/// `O_NOFOLLOW`, so no symlink in any component is followed; the last component may be a file
/// or a directory but not a symlink. `O_PATH`, close-on-exec.
pub fn open_no_symlinks(path: &Path) -> std::io::Result<OwnedFd> {
    use rustix::fs::{openat, Mode as FsMode, OFlags, CWD};
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidInput, "not an absolute canonical path");
    let mut comps = path.components();
    if comps.next() != Some(Component::RootDir) {
        return Err(bad());
    }
    let mut fd: OwnedFd = openat(CWD, "/", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, FsMode::empty())?;
    let rest: Vec<Component<'_>> = comps.collect();
    for (i, c) in rest.iter().enumerate() {
        let Component::Normal(name) = c else { return Err(bad()) };
        let mut flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        if i + 1 < rest.len() {
            flags |= OFlags::DIRECTORY;
        }
        fd = openat(&fd, *name, flags, FsMode::empty()).map_err(|e| {
            // A symlink in the middle: ENOTDIR with O_DIRECTORY|O_NOFOLLOW.
            if e == rustix::io::Errno::NOTDIR { std::io::Error::from_raw_os_error(libc::ELOOP) } else { e.into() }
        })?;
    }
    let st = rustix::fs::fstat(&fd)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
        return Err(std::io::Error::from_raw_os_error(libc::ELOOP));
    }
    Ok(fd)
}

/// Pins an approved grant's paths: opens each now ([`open_no_symlinks`]) and keeps them under
/// a new id until [`release`]. A path that cannot be opened so (gone, or a symlink in it since
/// it was resolved) refuses the whole grant with `TARGET_CHANGED`, before any effect.
pub fn pin(write_paths: &[String], read_paths: &[String]) -> Result<Arc<Pinned>> {
    if write_paths.len() > MAX_GRANT_PATHS || read_paths.len() > MAX_GRANT_PATHS {
        return Err(refused("writePaths", format!("grants take at most {MAX_GRANT_PATHS} paths each")));
    }
    let mut paths = Vec::with_capacity(write_paths.len() + read_paths.len());
    for (list, write, name) in [(write_paths, true, "writePaths"), (read_paths, false, "readPaths")] {
        for p in list {
            if p.contains('\0') || !Path::new(p).is_absolute() {
                return Err(refused(name, format!("grants.{name}: {p:?} is not an absolute path")));
            }
            let fd = open_no_symlinks(Path::new(p)).map_err(|e| {
                Error::new(Code::TargetChanged, format!("grants.{name}: {p} is not what was approved any more ({e}): a component of it is now a symlink, or it is gone; nothing was run"))
                    .with_hint("ask again for the grant naming the directory's real path if it is still needed, or work inside the workspace")
                    .with_details(serde_json::json!({ "at": format!("arguments.grants.{name}"), "path": p }))
            })?;
            paths.push(PinnedPath { path: PathBuf::from(p), fd, write });
        }
    }
    let pinned = Arc::new(Pinned { id: NEXT_PIN.fetch_add(1, Ordering::Relaxed), paths });
    PINS.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(pinned.id, pinned.clone());
    Ok(pinned)
}

/// The pinned grant `id`, while it is held.
pub fn pinned(id: u64) -> Option<Arc<Pinned>> {
    PINS.lock().unwrap_or_else(|e| e.into_inner()).as_ref().and_then(|m| m.get(&id).cloned())
}

/// Drops the registry's hold on `id` (a call that uses it keeps its own until it is built).
pub fn release(id: u64) {
    if let Some(m) = PINS.lock().unwrap_or_else(|e| e.into_inner()).as_mut() {
        m.remove(&id);
    }
}

/// The pinned grants named by `ids`; a message for the host when one is not held.
pub fn pinned_all(ids: &[u64]) -> std::result::Result<Vec<Arc<Pinned>>, String> {
    ids.iter().map(|id| pinned(*id).ok_or_else(|| format!("grant handle {id} is not held (released)"))).collect()
}

/// Checked grants: canonical existing paths, and pinned ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    pub write_paths: Vec<PathBuf>,
    pub read_paths: Vec<PathBuf>,
    /// Pinned at approval ([`pin`]).
    pub pinned: Vec<Arc<Pinned>>,
    pub network: bool,
    /// `sandbox: "off"`: the last resort.
    pub sandbox_off: bool,
}

fn refused(at: &str, hint: impl Into<String>) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint).with_details(serde_json::json!({ "at": format!("arguments.grants.{at}") }))
}

fn paths(list: &[String], name: &str) -> Result<Vec<PathBuf>> {
    if list.len() > MAX_GRANT_PATHS {
        return Err(refused(name, format!("grants.{name} takes at most {MAX_GRANT_PATHS} absolute paths")));
    }
    let mut out: Vec<PathBuf> = Vec::with_capacity(list.len());
    for p in list {
        if p.contains('\0') || !std::path::Path::new(p).is_absolute() {
            return Err(refused(name, format!("grants.{name}: {p:?} is not an absolute path; give absolute paths of existing files or directories, such as /home/user/.cache/tool")));
        }
        // Only a path that is still its own canonical form is opened.
        match canonical_grant(p) {
            Ok(c) if c.as_os_str() == std::ffi::OsStr::new(p) => {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

impl GrantRequest {
    /// Checks the grants without any effect; the paths that still are what they were.
    pub fn check(&self) -> Result<Grants> {
        let sandbox_off = match self.sandbox.as_deref() {
            None => false,
            Some("off") => true,
            Some(_) => return Err(refused("sandbox", "grants.sandbox can only be \"off\"")),
        };
        let pinned = pinned_all(&self.handles).map_err(|m| refused("handles", m))?;
        Ok(Grants {
            write_paths: paths(&self.write_paths, "writePaths")?,
            read_paths: paths(&self.read_paths, "readPaths")?,
            pinned,
            network: self.network,
            sandbox_off,
        })
    }
}

impl Grants {
    pub fn is_empty(&self) -> bool {
        self.write_paths.is_empty() && self.read_paths.is_empty() && self.pinned.is_empty() && !self.network && !self.sandbox_off
    }
}

impl SandboxOptions {
    /// These options widened by `grants`, as the per-call tools widen theirs: the paths added
    /// to the host's, `network` opening the network (an allowlist gives way to it), `sandbox:
    /// "off"` applying nothing. Everything else (limits, ports, the simulated features) stays.
    pub fn granted(&self, grants: &Grants) -> SandboxOptions {
        let mut o = self.clone();
        for p in &grants.read_paths {
            if !o.read_paths.contains(p) {
                o.read_paths.push(p.clone());
            }
        }
        for p in &grants.write_paths {
            if !o.write_paths.contains(p) {
                o.write_paths.push(p.clone());
            }
        }
        for p in &grants.pinned {
            if !o.pinned.contains(p) {
                o.pinned.push(p.clone());
            }
        }
        if grants.network {
            o.network = true;
            o.network_allow = None;
        }
        if grants.sandbox_off {
            o.mode = Mode::Off;
            o.network_allow = None;
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_checked_canonical_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
        let ok = GrantRequest { write_paths: vec![s(&real), s(&real)], network: true, ..Default::default() }.check().unwrap();
        assert_eq!(ok.write_paths, vec![real.clone()]);
        assert!(ok.network && !ok.sandbox_off);
        // A symlink (or any other spelling), or a path that is gone, opens nothing: only the
        // approved path itself is ever opened.
        for gone in [s(&real.join("link")), "/no/such/path/anywhere".into(), format!("{}/.", s(&real))] {
            let g = GrantRequest { write_paths: vec![gone.clone()], read_paths: vec![gone.clone()], ..Default::default() }.check().unwrap();
            assert!(g.is_empty(), "{gone}: {g:?}");
        }
        for bad in ["relative", "/a\0b"] {
            assert!(GrantRequest { read_paths: vec![bad.into()], ..Default::default() }.check().is_err(), "{bad}");
        }
        let many = GrantRequest { read_paths: vec![s(&real); MAX_GRANT_PATHS + 1], ..Default::default() };
        assert!(many.check().is_err());
        assert!(GrantRequest { sandbox: Some("on".into()), ..Default::default() }.check().is_err());
        let json: GrantRequest = serde_json::from_value(serde_json::json!({ "sandbox": "off" })).unwrap();
        assert!(json.check().unwrap().sandbox_off);
        assert!(serde_json::from_value::<GrantRequest>(serde_json::json!({ "shell": true })).is_err());
    }

    #[test]
    fn a_pin_follows_no_symlink_in_any_component_and_keeps_the_directory() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let outside = real.join("outside");
        std::fs::create_dir_all(real.join("ws/sub/cache")).unwrap();
        std::fs::create_dir_all(outside.join("cache")).unwrap();
        let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
        let grant = s(&real.join("ws/sub/cache"));
        let pin_ = pin(&[grant.clone()], &[]).unwrap();
        assert!(pinned(pin_.id).is_some());
        let pinned = pin_;
        // A parent component replaced by a symlink after the pin: the pinned directory is still
        // the approved one, not the symlink's target.
        std::fs::rename(real.join("ws/sub"), real.join("ws/old")).unwrap();
        std::os::unix::fs::symlink(&outside, real.join("ws/sub")).unwrap();
        let st = rustix::fs::fstat(&pinned.paths[0].fd).unwrap();
        let approved = std::fs::metadata(real.join("ws/old/cache")).unwrap();
        assert_eq!((st.st_dev as u64, st.st_ino as u64), (std::os::unix::fs::MetadataExt::dev(&approved), std::os::unix::fs::MetadataExt::ino(&approved)));
        // Pinned now (the symlink is in place): refused, nothing opened.
        let err = pin(&[grant.clone()], &[]).unwrap_err();
        assert_eq!(err.code, Code::TargetChanged, "{err:?}");
        assert!(open_no_symlinks(&real.join("ws/sub/cache")).is_err());
        assert!(open_no_symlinks(&real.join("ws/sub")).is_err());
        assert!(open_no_symlinks(Path::new("relative")).is_err());
        assert!(open_no_symlinks(&real.join("ws/old/../old")).is_err());
        // Held until released; a start names it by id.
        let req = GrantRequest { handles: vec![pinned.id], ..Default::default() };
        assert_eq!(req.check().unwrap().pinned.len(), 1);
        release(pinned.id);
        assert!(req.check().is_err());
    }

    #[test]
    fn granted_options_widen_only_what_was_granted() {
        let base = SandboxOptions { write_paths: vec!["/host/w".into()], ..SandboxOptions::default() };
        assert_eq!(base.granted(&Grants::default()), base);
        let g = Grants { write_paths: vec!["/g/w".into()], read_paths: vec!["/g/r".into()], network: true, ..Grants::default() };
        let o = base.granted(&g);
        assert_eq!(o.write_paths, vec![PathBuf::from("/host/w"), PathBuf::from("/g/w")]);
        assert_eq!(o.read_paths, vec![PathBuf::from("/g/r")]);
        assert!(o.network && o.mode == Mode::Auto);
        assert_eq!(o.limits, base.limits);
        let off = base.granted(&Grants { sandbox_off: true, ..Grants::default() });
        assert_eq!(off.mode, Mode::Off);
        assert!(off.validate().is_ok());
    }
}
