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
    /// The common case costs one `stat` (two for a root given through a symlink): the
    /// canonical path still names a directory of the recorded identity, and so does the
    /// original string. A rename, a replacement or a symlink moved to another directory changes
    /// what one of them names; only then is the original string resolved again, for the
    /// message. (A directory has one name per mount: two paths of one identity name the same
    /// directory, so nothing the slow path would see is missed.)
    pub fn check(&self) -> Result<()> {
        let same = |p: &Path| fs::metadata(p).is_ok_and(|m| m.is_dir() && Identity::of_std(&m) == self.identity);
        if same(&self.canonical) && (self.original == self.canonical || same(&self.original)) {
            return Ok(());
        }
        self.check_resolved()
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
    fn deleted_root_is_detected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        let ws = Workspace::open(&root).unwrap();
        fs::remove_dir(&root).unwrap();
        assert_eq!(ws.check().unwrap_err().code, crate::error::Code::WorkspaceRootChanged);
    }
}
