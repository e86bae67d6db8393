//! The workspace root: one directory, identified once, rechecked on every operation.
//!
//! [`Workspace::open`] canonicalizes the root string once, checks that it is a directory, keeps
//! an open handle to it and records its device and inode. Every operation calls
//! [`Workspace::check`], which re-resolves the original string and compares both the canonical
//! path and the identity; any difference is `WORKSPACE_ROOT_CHANGED` and the replacement is
//! never adopted. All resolution then happens beneath the open handle (cap-std: openat2 with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS` where the kernel has it, a component-by-component
//! walk otherwise), so a symlink leading outside, an absolute symlink or a racing directory swap
//! can never take a lookup out of the root.

use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::{Dir, MetadataExt as _};

use crate::error::{Error, Result};
use crate::path::RelPath;

/// Device and inode: what makes two names one file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
}

impl Identity {
    pub fn of_std(meta: &fs::Metadata) -> Self {
        Identity { dev: meta.dev(), ino: meta.ino() }
    }

    pub fn of_cap(meta: &cap_std::fs::Metadata) -> Self {
        Identity { dev: meta.dev(), ino: meta.ino() }
    }
}

/// An open, identified workspace root.
#[derive(Debug)]
pub struct Workspace {
    original: PathBuf,
    canonical: PathBuf,
    identity: Identity,
    dir: Dir,
}

/// The root names a file (or anything else that is not a directory): said as such, not as the
/// "a parent component is not a directory" a path inside the workspace would get.
fn root_not_a_directory(shown: &str) -> Error {
    Error::new(crate::error::Code::FileNotFound, format!("the workspace root {shown} is not a directory"))
        .with_hint("create the tools with the path of a directory (the project's folder), not of a file in it")
}

impl Workspace {
    /// Canonicalizes `root`, checks it is a directory and opens it.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let original = root.as_ref().to_path_buf();
        let shown = original.display().to_string();
        if original.as_os_str().is_empty() {
            return Err(Error::root_changed("the workspace root is an empty string")
                .with_hint("create the tools with the absolute path of an existing directory"));
        }
        let canonical = fs::canonicalize(&original).map_err(|e| {
            Error::from_io(&e, &shown).with_hint("create the tools with the path of an existing directory")
        })?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(|e| {
            if e.raw_os_error() == Some(libc::ENOTDIR) {
                root_not_a_directory(&shown)
            } else {
                Error::from_io(&e, &shown).with_hint("the workspace root must be a directory you can open")
            }
        })?;
        let meta = dir.dir_metadata().map_err(|e| Error::from_io(&e, &shown))?;
        if !meta.is_dir() {
            return Err(root_not_a_directory(&shown));
        }
        let ws = Workspace { original, canonical, identity: Identity::of_cap(&meta), dir };
        // The name may have been swapped between canonicalize and open.
        ws.check()?;
        Ok(ws)
    }

    /// The canonical path of the root, as resolved when the workspace was opened.
    pub fn canonical(&self) -> &Path {
        &self.canonical
    }

    pub fn identity(&self) -> Identity {
        self.identity
    }

    /// The open root handle. All lookups go beneath it.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Re-resolves the original root string and compares canonical path and identity.
    ///
    /// The common case costs one lookup of the canonical path that follows no symlink in any
    /// component (`openat2` with `RESOLVE_NO_SYMLINKS`, then `fstat` of what it opened), plus a
    /// `stat` of the original string when the root was given through a symlink: the canonical
    /// path still names, without a link, a directory of the recorded identity, and so does the
    /// original string. A rename, a replacement, a symlink moved to another directory, or the
    /// root (or any directory above it) renamed away with a symlink left at its old name, changes
    /// what one of them names; only then is the original string resolved again, for the message.
    /// (A `stat` that follows links would adopt the renamed root through the symlink at its old
    /// name; `AT_SYMLINK_NOFOLLOW` covers only the last component, and an ancestor can be swapped
    /// just the same. A directory has one name per mount: two paths of one identity name the same
    /// directory, so nothing the slow path would see is missed.) Where the kernel has no
    /// `openat2` (before Linux 5.6, or a seccomp filter refusing it), every check is the full one.
    pub fn check(&self) -> Result<()> {
        if self.canonical_is_ours()
            && (self.original == self.canonical
                || fs::metadata(&self.original).is_ok_and(|m| m.is_dir() && Identity::of_std(&m) == self.identity))
        {
            return Ok(());
        }
        self.check_resolved()
    }

    /// Whether the canonical path, followed through no symlink, names the root's directory.
    /// False when it does not, and when that cannot be asked this way (the caller then does the
    /// full check).
    #[allow(clippy::unnecessary_cast)]
    fn canonical_is_ours(&self) -> bool {
        use std::sync::atomic::{AtomicBool, Ordering};
        use rustix::fs::{Mode, OFlags, ResolveFlags};
        static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
        if NO_OPENAT2.load(Ordering::Relaxed) {
            return false;
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match rustix::fs::openat2(rustix::fs::CWD, &self.canonical, flags, Mode::empty(), ResolveFlags::NO_SYMLINKS) {
            Ok(fd) => rustix::fs::fstat(&fd)
                .is_ok_and(|st| Identity { dev: st.st_dev as u64, ino: st.st_ino as u64 } == self.identity),
            Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                false
            }
            Err(_) => false,
        }
    }

    /// The full check: the original string canonicalized again, compared with the recorded
    /// path and identity.
    fn check_resolved(&self) -> Result<()> {
        let now = fs::canonicalize(&self.original).map_err(|e| {
            Error::root_changed(format!(
                "the workspace root {} can no longer be resolved: {e}",
                self.original.display()
            ))
        })?;
        if now != self.canonical {
            return Err(Error::root_changed(format!(
                "the workspace root {} now resolves to {} instead of {}",
                self.original.display(),
                now.display(),
                self.canonical.display()
            )));
        }
        let meta = fs::metadata(&now).map_err(|e| {
            Error::root_changed(format!("the workspace root {} can no longer be read: {e}", now.display()))
        })?;
        if Identity::of_std(&meta) != self.identity || !meta.is_dir() {
            return Err(Error::root_changed(format!(
                "the workspace root {} was replaced by a different directory",
                now.display()
            )));
        }
        Ok(())
    }

    /// Identity of what `path` names now, following symlinks, resolved beneath the root.
    pub fn identity_of(&self, path: &RelPath) -> std::io::Result<Identity> {
        self.dir.metadata(path.as_str()).map(|m| Identity::of_cap(&m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_records_canonical_identity() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        assert_eq!(ws.canonical(), fs::canonicalize(tmp.path()).unwrap());
        ws.check().unwrap();
    }

    #[test]
    fn a_file_is_not_a_root() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("f");
        fs::write(&f, "x").unwrap();
        assert!(Workspace::open(&f).is_err());
        assert!(Workspace::open(tmp.path().join("missing")).is_err());
    }

    #[test]
    fn a_file_given_as_the_root_says_the_root_is_not_a_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let f = tmp.path().join("notes.txt");
        fs::write(&f, "x").unwrap();
        let err = Workspace::open(&f).unwrap_err();
        assert_eq!(err.code, crate::error::Code::FileNotFound);
        assert_eq!(err.message, format!("the workspace root {} is not a directory", f.display()));
        assert!(!err.message.contains("parent component"), "{}", err.message);
        assert!(err.hint.as_deref().unwrap().contains("not of a file"));
    }

    #[test]
    fn replaced_root_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root).unwrap();
        fs::rename(&root, tmp.path().join("away")).unwrap();
        fs::create_dir(&root).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
    }

    #[test]
    fn the_same_directory_under_a_new_name_is_detected() {
        // The root's directory is renamed and the symlink the host named follows it: the same
        // directory, but the canonical path (the processes' working directory, Landlock's rule)
        // now names nothing, or whatever is made there next.
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink("real", &link).unwrap();
        let ws = Workspace::open(&link).unwrap();
        ws.check().unwrap();
        fs::rename(&real, tmp.path().join("real2")).unwrap();
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("real2", &link).unwrap();
        let err = ws.check().unwrap_err();
        assert_eq!(err.code, crate::error::Code::WorkspaceRootChanged);
        assert!(err.message.contains("now resolves to"), "{}", err.message);
        fs::create_dir(&real).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
    }

    #[test]
    fn repointed_root_symlink_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let ws = Workspace::open(&link).unwrap();
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&b, &link).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
        // Pointing it back restores the same directory: accepted again.
        fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&a, &link).unwrap();
        ws.check().unwrap();
    }

    #[test]
    fn a_root_renamed_away_with_a_symlink_at_its_old_name_is_not_adopted() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root).unwrap();
        fs::rename(&root, tmp.path().join("away")).unwrap();
        std::os::unix::fs::symlink("away", &root).unwrap();
        for _ in 0..3 {
            let err = ws.check().unwrap_err();
            assert_eq!(err.code, crate::error::Code::WorkspaceRootChanged);
            assert!(err.message.contains("now resolves to"), "{}", err.message);
        }
        // An absolute link is no different.
        fs::remove_file(&root).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("away"), &root).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
        // Renamed back: the same directory at the same name, accepted again.
        fs::remove_file(&root).unwrap();
        fs::rename(tmp.path().join("away"), &root).unwrap();
        ws.check().unwrap();
    }

    #[test]
    fn a_directory_above_the_root_renamed_away_with_a_symlink_at_its_old_name_is_not_adopted() {
        let tmp = tempfile::tempdir().unwrap();
        let above = tmp.path().join("above");
        fs::create_dir_all(above.join("root")).unwrap();
        let ws = Workspace::open(above.join("root")).unwrap();
        fs::rename(&above, tmp.path().join("moved")).unwrap();
        std::os::unix::fs::symlink("moved", &above).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
    }

    #[test]
    fn a_root_given_through_a_symlink_whose_directory_is_renamed_away_behind_a_symlink_is_not_adopted() {
        // The host named a symlink; the directory it leads to is renamed and a symlink left at
        // the directory's old name, so the host's string still reaches the same directory.
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        fs::create_dir(&real).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink("real", &link).unwrap();
        let ws = Workspace::open(&link).unwrap();
        assert_eq!(ws.canonical(), fs::canonicalize(&real).unwrap());
        ws.check().unwrap();
        fs::rename(&real, tmp.path().join("real2")).unwrap();
        std::os::unix::fs::symlink("real2", &real).unwrap();
        let err = ws.check().unwrap_err();
        assert_eq!(err.code, crate::error::Code::WorkspaceRootChanged);
        assert!(err.message.contains("now resolves to"), "{}", err.message);
    }

    #[test]
    fn deleted_root_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root).unwrap();
        fs::remove_dir(&root).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
    }
}
