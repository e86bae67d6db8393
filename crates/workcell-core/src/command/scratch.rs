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

/// Directories held open at once while removing a tree; a deeper subdirectory is moved up to
/// the top of the tree (a rename beneath the same handle) and removed from there.
const MAX_OPEN_DEPTH: usize = 32;

/// Entries removed per tree at most: a process still writing into the tree (one that outlived
/// the call where there is no PID namespace) cannot keep the cleanup going for ever.
const MAX_REMOVALS: usize = 1 << 20;

/// Removes `dir` and everything in it, treating its content as hostile (a confined process
/// could have changed it, and may still be changing it): every step is beneath a directory
/// handle, directories are opened `O_NOFOLLOW | O_DIRECTORY | O_NONBLOCK` (a symlink is
/// unlinked, never followed; nothing else is ever opened, so a FIFO cannot block), a directory
/// made unwritable or unsearchable gets its owner's permissions back through its own handle,
/// at most [`MAX_OPEN_DEPTH`] handles are open at once whatever the depth, and at most
/// [`MAX_REMOVALS`] entries are removed. What cannot be removed is left in place.
pub fn remove_tree(dir: &Path) {
    use rustix::fs::{unlinkat, AtFlags, Mode, OFlags};
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else { return };
    // The parent is the host's temporary directory (checked when the host configured it).
    let Ok(parent) = rustix::fs::open(parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else { return };
    if let Ok(top) = open_dir_beneath(&parent, name) {
        let mut budget = MAX_REMOVALS;
        let mut hoisted = Vec::new();
        let mut next = 0u64;
        let salt = crate::temp_name::random_name("", 8);
        if let Ok(top_dir) = top.try_clone().map(rustix::fs::Dir::new) {
            if let Ok(top_dir) = top_dir {
                empty_dir(&top, top_dir, 0, &mut budget, &mut hoisted, &salt, &mut next);
            }
        }
        // Subtrees moved up from too deep, each emptied from the top (which may hoist more).
        while let Some(name) = hoisted.pop() {
            if budget == 0 {
                break;
            }
            let Ok(top) = open_dir_beneath(&parent, name_of(dir)) else { break };
            if let Ok(sub) = open_dir_beneath(&top, &name) {
                if let Ok(sub_dir) = rustix::fs::Dir::new(sub) {
                    empty_dir(&top, sub_dir, 1, &mut budget, &mut hoisted, &salt, &mut next);
                }
            }
            let _ = unlinkat(&top, &name, AtFlags::REMOVEDIR);
        }
    }
    let _ = unlinkat(&parent, name, AtFlags::REMOVEDIR);
}

fn name_of(dir: &Path) -> &std::ffi::OsStr {
    dir.file_name().unwrap_or_default()
}

/// Opens the directory `name` beneath `at`, never through a symlink, never blocking, and gives
/// it its owner's permissions (so its entries can be listed and removed).
fn open_dir_beneath<P: rustix::path::Arg>(at: &std::os::fd::OwnedFd, name: P) -> io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{openat, Mode, OFlags};
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let name = name.into_c_str()?;
    let fd = match openat(at, &*name, OFlags::RDONLY | flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::ACCESS) => {
            // No read permission: give it back through a handle that needs none (`O_PATH`),
            // by its `/proc/self/fd` name (which is that very directory), then open it again
            // beneath the same handle (still no symlink, still a directory).
            let path = openat(at, &*name, OFlags::PATH | flags, Mode::empty())?;
            use std::os::fd::AsRawFd as _;
            rustix::fs::chmod(format!("/proc/self/fd/{}", path.as_raw_fd()).as_str(), Mode::from_raw_mode(0o700))?;
            openat(at, &*name, OFlags::RDONLY | flags, Mode::empty())?
        }
        Err(e) => return Err(e.into()),
    };
    let _ = rustix::fs::fchmod(&fd, Mode::from_raw_mode(0o700));
    Ok(fd)
}

/// Removes every entry of `dir` (a handle opened by [`open_dir_beneath`]); `top` is the tree's
/// top, where subdirectories deeper than [`MAX_OPEN_DEPTH`] are moved.
fn empty_dir(
    top: &std::os::fd::OwnedFd,
    mut dir: rustix::fs::Dir,
    depth: usize,
    budget: &mut usize,
    hoisted: &mut Vec<std::ffi::OsString>,
    salt: &str,
    next: &mut u64,
) {
    use rustix::fs::{unlinkat, AtFlags, RenameFlags};
    let Ok(Ok(fd)) = dir.fd().map(|fd| fd.try_clone_to_owned()) else { return };
    // Passes until one removes nothing (entries may appear while the tree is removed).
    loop {
        let mut removed = false;
        dir.rewind();
        while let Some(Ok(entry)) = dir.read() {
            let name = entry.file_name();
            if name.to_bytes() == b"." || name.to_bytes() == b".." {
                continue;
            }
            if *budget == 0 {
                return;
            }
            *budget -= 1;
            match unlinkat(&fd, name, AtFlags::empty()) {
                Ok(()) => {
                    removed = true;
                    continue;
                }
                // A directory (EISDIR on Linux, EPERM elsewhere): empty it, then remove it.
                Err(rustix::io::Errno::ISDIR | rustix::io::Errno::PERM) => {}
                Err(_) => continue,
            }
            if depth + 1 >= MAX_OPEN_DEPTH {
                let new = format!("{}{salt}-{next}", HOIST_PREFIX);
                *next += 1;
                if rustix::fs::renameat_with(&fd, name, top, new.as_str(), RenameFlags::NOREPLACE).is_ok() {
                    hoisted.push(new.into());
                    removed = true;
                }
                continue;
            }
            let Ok(sub) = open_dir_beneath(&fd, name) else { continue };
            let Ok(sub_dir) = rustix::fs::Dir::new(sub) else { continue };
            empty_dir(top, sub_dir, depth + 1, budget, hoisted, salt, next);
            if unlinkat(&fd, name, AtFlags::REMOVEDIR).is_ok() {
                removed = true;
            }
        }
        if !removed {
            return;
        }
    }
}

/// Prefix of a subtree moved up to the top of a tree being removed.
const HOIST_PREFIX: &str = ".workcell-removing-";

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

    /// An outside directory with content, mode 0750, to plant links to.
    fn outside_dir(parent: &Path) -> PathBuf {
        let outside = parent.join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "keep").unwrap();
        fs::create_dir(outside.join("sub")).unwrap();
        fs::write(outside.join("sub/deep.txt"), "deep").unwrap();
        fs::set_permissions(&outside, fs::Permissions::from_mode(0o750)).unwrap();
        fs::set_permissions(outside.join("sub"), fs::Permissions::from_mode(0o750)).unwrap();
        outside
    }

    fn outside_intact(outside: &Path) {
        assert_eq!(fs::read_to_string(outside.join("keep.txt")).unwrap(), "keep");
        assert_eq!(fs::read_to_string(outside.join("sub/deep.txt")).unwrap(), "deep");
        assert_eq!(fs::metadata(outside).unwrap().mode() & 0o777, 0o750);
        assert_eq!(fs::metadata(outside.join("sub")).unwrap().mode() & 0o777, 0o750);
    }

    /// Drops `scratch` on another thread; panics if that does not end (a cleanup blocked on a
    /// FIFO would never end: this is a hang detector, not a timing assertion).
    fn drop_without_hanging(scratch: Scratch) {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            drop(scratch);
            let _ = tx.send(());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the cleanup blocked");
    }

    #[test]
    fn cleanup_follows_no_planted_symlink_and_never_blocks_on_a_fifo() {
        let parent = tempfile::tempdir().unwrap();
        let outside = outside_dir(parent.path());
        let scratch = Scratch::create(parent.path()).unwrap();
        let dir = scratch.path().to_path_buf();
        // What the child plants in its HOME during the run: links to the outside directory
        // (also inside locked directories), FIFOs where files and directories are expected.
        let planted = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(r#"cd "$HOME" && ln -s "$1" link && mkfifo fifo && mkdir -p locked/inner && ln -s "$1" locked/inner/link && ln -s "$1/sub" locked/sublink && mkfifo locked/fifo && chmod 000 locked/inner && chmod 100 locked && mkdir noread && ln -s "$1" noread/l && chmod 300 noread"#)
            .arg("sh")
            .arg(&outside)
            .env("HOME", scratch.home())
            .status()
            .unwrap();
        assert!(planted.success());
        drop_without_hanging(scratch);
        assert!(!dir.exists());
        outside_intact(&outside);
    }

    #[test]
    fn cleanup_of_a_very_deep_tree_completes_with_few_descriptors() {
        // Deeper than the descriptors a host may hold (and than PATH_MAX allows by path).
        use rustix::fs::{mkdirat, openat, Mode, OFlags};
        let parent = tempfile::tempdir().unwrap();
        let outside = outside_dir(parent.path());
        let scratch = Scratch::create(parent.path()).unwrap();
        let dir = scratch.path().to_path_buf();
        let mut fd = rustix::fs::open(scratch.home(), OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        for i in 0..3_000 {
            mkdirat(&fd, "d", Mode::from_raw_mode(0o700)).unwrap();
            if i % 500 == 0 {
                rustix::fs::symlinkat(outside.as_path(), &fd, "l").unwrap();
            }
            fd = openat(&fd, "d", OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        }
        rustix::fs::symlinkat(outside.as_path(), &fd, "bottom").unwrap();
        drop(fd);
        drop_without_hanging(scratch);
        assert!(!dir.exists());
        outside_intact(&outside);
    }

    #[test]
    fn cleanup_racing_a_process_that_swaps_a_directory_for_a_symlink_stays_inside() {
        // A process that outlived the call (no PID namespace) keeps replacing a locked
        // directory with a symlink to the outside while the tree is removed: nothing outside
        // is changed (a path-based chmod or listing would follow the swapped-in link).
        let parent = tempfile::tempdir().unwrap();
        let outside = outside_dir(parent.path());
        for _ in 0..5 {
            let scratch = Scratch::create(parent.path()).unwrap();
            let home = scratch.home();
            for i in 0..50 {
                // A locked `sub` (what makes a plain removal fail first), named like the
                // outside directory's own `sub`.
                let d = home.join(format!("d{i}"));
                fs::create_dir_all(d.join("sub")).unwrap();
                fs::write(d.join("sub/f"), "x").unwrap();
                fs::set_permissions(d.join("sub"), fs::Permissions::from_mode(0o000)).unwrap();
            }
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let swapper = {
                let (stop, home, outside) = (stop.clone(), home.clone(), outside.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        for i in 0..50 {
                            let d = home.join(format!("d{i}"));
                            let _ = fs::rename(&d, home.join(format!("old{i}")));
                            let _ = std::os::unix::fs::symlink(&outside, &d);
                        }
                    }
                })
            };
            drop_without_hanging(scratch);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            swapper.join().unwrap();
            outside_intact(&outside);
            // Whatever the swapper recreated after the removal ended is cleaned here.
            for e in fs::read_dir(parent.path()).unwrap().flatten() {
                if e.file_name().to_string_lossy().starts_with(SCRATCH_PREFIX) {
                    remove_tree(&e.path());
                }
            }
        }
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
