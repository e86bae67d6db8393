//! The per-call scratch directory: the child's private HOME and TMPDIR (and, for run_tests, its
//! caches), outside the workspace, removed when the call ends.
//!
//! It is created with `mkdir` (which fails if the name exists) under the host's temporary
//! directory as `workcell-scratch-<random>`, mode 0700, with `home/` and `tmp/` inside. Dropping
//! the [`Scratch`] removes it, whatever the call's outcome; what the child left there that
//! cannot be removed as it is (directories without write permission) is made removable first.
//! Symlinks the child planted are removed, never followed.

use std::fs;
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Prefix of a scratch directory's name.
pub const SCRATCH_PREFIX: &str = "workcell-scratch-";

/// A private directory for one call, removed on drop.
#[derive(Debug)]
pub struct Scratch {
    dir: PathBuf,
}

fn scratch_error(e: &io::Error, what: &Path) -> Error {
    let mut err = Error::from_io(e, &what.display().to_string());
    err.message = format!("could not prepare the private scratch directory: {}", err.message);
    err.with_hint("the host's temporary directory must be writable; report this to the user")
}

/// Checks that `parent` can hold scratch directories for the workspace at `root` (canonical):
/// an existing directory that is neither the root nor inside it. Returns its canonical path.
pub fn check_parent(parent: &Path, root: &Path) -> std::result::Result<PathBuf, String> {
    let canonical = fs::canonicalize(parent)
        .map_err(|e| format!("the scratch directory's parent {} cannot be used: {e}", parent.display()))?;
    if !canonical.is_dir() {
        return Err(format!("the scratch directory's parent {} is not a directory", parent.display()));
    }
    if canonical.starts_with(root) {
        return Err(format!(
            "the scratch directory's parent {} is inside the workspace {}; choose a temporary directory outside it",
            canonical.display(),
            root.display()
        ));
    }
    Ok(canonical)
}

impl Scratch {
    /// Creates `<parent>/workcell-scratch-<random>/{home,tmp}`. `parent` must have passed
    /// [`check_parent`].
    pub fn create(parent: &Path) -> Result<Self> {
        let mut attempts = 0;
        let dir = loop {
            let dir = parent.join(crate::temp_name::random_name(SCRATCH_PREFIX, 8));
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 8 => attempts += 1,
                Err(e) => return Err(scratch_error(&e, parent)),
            }
        };
        let scratch = Scratch { dir };
        // mkdir applies the umask; the directory must be private whatever it is.
        fs::set_permissions(&scratch.dir, fs::Permissions::from_mode(0o700)).map_err(|e| scratch_error(&e, &scratch.dir))?;
        for sub in ["home", "tmp"] {
            scratch.subdir(sub)?;
        }
        Ok(scratch)
    }

    /// The scratch directory itself.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The child's HOME.
    pub fn home(&self) -> PathBuf {
        self.dir.join("home")
    }

    /// The child's TMPDIR.
    pub fn tmp(&self) -> PathBuf {
        self.dir.join("tmp")
    }

    /// Creates (if needed) and returns `<scratch>/<name>`, mode 0700.
    pub fn subdir(&self, name: &str) -> Result<PathBuf> {
        let path = self.dir.join(name);
        match fs::DirBuilder::new().mode(0o700).recursive(true).create(&path) {
            Ok(()) => Ok(path),
            Err(e) => Err(scratch_error(&e, &path)),
        }
    }

    /// Writes a file into the scratch directory (mode 0600) and returns its path.
    pub fn write_file(&self, name: &str, content: &[u8]) -> Result<PathBuf> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let path = self.dir.join(name);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| scratch_error(&e, &path))?;
        file.write_all(content).map_err(|e| scratch_error(&e, &path))?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        remove_tree(&self.dir);
    }
}

/// Removes `dir` and everything in it without following symlinks; directories the child made
/// unwritable or unsearchable are given back their owner's permissions first.
pub fn remove_tree(dir: &Path) {
    if fs::remove_dir_all(dir).is_ok() || !dir.exists() {
        return;
    }
    make_removable(dir, 0);
    let _ = fs::remove_dir_all(dir);
}

fn make_removable(dir: &Path, depth: usize) {
    // symlink_metadata: a symlink is never followed (and its own mode does not matter).
    let Ok(meta) = fs::symlink_metadata(dir) else { return };
    if !meta.is_dir() || depth > 256 {
        return;
    }
    let _ = fs::set_permissions(dir, fs::Permissions::from_mode(0o700));
    if let Ok(entries) = fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_removable(&entry.path(), depth + 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt as _;

    #[test]
    fn created_private_and_removed_on_drop() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let dir = scratch.path().to_path_buf();
        assert!(dir.file_name().unwrap().to_str().unwrap().starts_with(SCRATCH_PREFIX));
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        assert!(scratch.home().is_dir() && scratch.tmp().is_dir());
        // Content the child might leave: nested files, a locked directory, a symlink outside.
        let outside = parent.path().join("outside.txt");
        fs::write(&outside, "keep").unwrap();
        fs::create_dir_all(scratch.tmp().join("a/b")).unwrap();
        fs::write(scratch.tmp().join("a/b/f"), "x").unwrap();
        fs::set_permissions(scratch.tmp().join("a"), fs::Permissions::from_mode(0o000)).unwrap();
        std::os::unix::fs::symlink(&outside, scratch.home().join("link")).unwrap();
        std::os::unix::fs::symlink(parent.path(), scratch.home().join("dirlink")).unwrap();
        drop(scratch);
        assert!(!dir.exists());
        assert_eq!(fs::read_to_string(&outside).unwrap(), "keep");
    }

    #[test]
    fn the_parent_must_be_outside_the_workspace() {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir(root.join("inner")).unwrap();
        assert!(check_parent(&root, &root).is_err());
        assert!(check_parent(&root.join("inner"), &root).is_err());
        assert!(check_parent(&root.join("missing"), &root).is_err());
        let outside = tempfile::tempdir().unwrap();
        assert!(check_parent(outside.path(), &root).is_ok());
    }
}
