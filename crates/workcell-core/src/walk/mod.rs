//! Confined directory walking: the directory handles and ignore files, and the one [`Walker`]
//! of `list_files` and `search_files` (`walker.rs`). The sandbox's scan for protected paths
//! (`sandbox::protect`) reads directories through the same handles.
//!
//! The walk never resolves a path string. It starts from a directory opened beneath the root
//! handle (cap-std: openat2 `RESOLVE_BENEATH` or a component-by-component walk), reads each
//! directory through its own file descriptor, and opens a child with `openat(parent, name)`
//! where `name` is a single component returned by the kernel (never `.` or `..`, never
//! containing `/`) and the flags include `O_NOFOLLOW`. So:
//! - a symlink is never followed, neither into a directory nor to a file: a name that is a
//!   symlink (or became one after `readdir`) fails with `ELOOP` and is skipped;
//! - every descriptor the walk holds was obtained from its parent's descriptor, so nothing the
//!   walk opens lies outside the tree that the start directory designated;
//! - files are opened with `O_NONBLOCK | O_NOCTTY` and checked with `fstat` before any read, so
//!   a FIFO, socket or device (planted, or swapped in after `readdir`) never blocks the walk.
//!
//! `.gitignore` files are read the same way (beneath their directory's descriptor, `O_NOFOLLOW`,
//! regular files only, bounded) and applied with the `ignore` crate's matchers, with git's
//! precedence: the deepest `.gitignore` that has an opinion decides, and the last matching line
//! within a file wins. A directory that is ignored is not entered, so nothing beneath it can be
//! re-included (as in git).
//!
//! What ignore files may cost is bounded per walk ([`IgnoreFiles`]): a `.gitignore` larger than
//! [`MAX_GITIGNORE_BYTES`] is not honoured at all, and once [`MAX_WALK_GITIGNORE_BYTES`] of
//! ignore files have been parsed, later ones are not honoured either; the result's note names
//! them. Not honouring an ignore file only ever shows more files, never fewer. A file met again
//! (a hard link, or the same file reached twice) is parsed once: parsed matchers are kept by
//! device and inode for the walk.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{Error, Result};
use crate::path::RelPath;
use crate::root::Workspace;

mod walker;
pub use walker::{Held, Order, Step, Visit, Walker};

/// Largest `.gitignore` honoured; a larger one is not applied at all (and the note says so).
pub const MAX_GITIGNORE_BYTES: usize = 64 << 10;
/// Most bytes of ignore files parsed in one walk; ignore files met after that are not applied.
pub const MAX_WALK_GITIGNORE_BYTES: usize = 1 << 20;
/// Most bytes of entry names a walk keeps pending (directories read but not yet finished).
/// Past it the walk stops and says so: memory never grows with the tree's shape.
pub const MAX_WALK_HELD_BYTES: usize = 16 << 20;
/// Most entries considered in one directory. More are left out and reported.
pub const MAX_DIR_ENTRIES: usize = 100_000;
/// Deepest directory level the walk enters (1 = the start directory's children).
pub const MAX_WALK_DEPTH: usize = 64;

/// What a directory entry is, without following a symlink.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Fifo,
    Socket,
    BlockDevice,
    CharDevice,
    Unknown,
}

impl Kind {
    pub fn from_file_type(ft: FileType) -> Kind {
        match ft {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Symlink,
            FileType::Fifo => Kind::Fifo,
            FileType::Socket => Kind::Socket,
            FileType::BlockDevice => Kind::BlockDevice,
            FileType::CharacterDevice => Kind::CharDevice,
            _ => Kind::Unknown,
        }
    }

    /// The word used in results and `NOT_A_REGULAR_FILE` (as `read::kind_of`).
    pub fn describe(self) -> &'static str {
        match self {
            Kind::File => "file",
            Kind::Dir => "directory",
            Kind::Symlink => "symlink",
            Kind::Fifo => "fifo",
            Kind::Socket => "socket",
            Kind::BlockDevice => "block device",
            Kind::CharDevice => "character device",
            Kind::Unknown => "unknown",
        }
    }
}

/// One entry of a directory.
#[derive(Clone, Debug)]
pub struct Entry {
    pub name: OsString,
    pub kind: Kind,
}

/// An open directory: its descriptor and its entries, sorted by name (bytewise).
#[derive(Debug)]
pub struct DirHandle {
    fd: OwnedFd,
}

impl DirHandle {
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Opens the child directory `name` without following a symlink.
    pub fn open_dir(&self, name: &OsStr) -> io::Result<DirHandle> {
        debug_assert!(is_single_component(name));
        let fd = rustix::fs::openat(
            self.fd(),
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        Ok(DirHandle { fd })
    }

    /// Opens the child `name` for reading without following a symlink and without blocking,
    /// and checks that it is a regular file. `Ok(Err(kind))` when it is something else.
    pub fn open_regular(&self, name: &OsStr) -> io::Result<std::result::Result<(File, u64), Kind>> {
        debug_assert!(is_single_component(name));
        let fd = rustix::fs::openat(
            self.fd(),
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let stat = rustix::fs::fstat(&fd)?;
        let kind = Kind::from_file_type(FileType::from_raw_mode(stat.st_mode));
        if kind != Kind::File {
            return Ok(Err(kind));
        }
        Ok(Ok((File::from(fd), stat.st_size as u64)))
    }

    /// The target text of the symlink `name` (not followed).
    pub fn read_link(&self, name: &OsStr) -> io::Result<OsString> {
        let target = rustix::fs::readlinkat(self.fd(), name, Vec::new())?;
        Ok(OsString::from_vec(target.into_bytes()))
    }

    /// Reads the directory's entries (at most [`MAX_DIR_ENTRIES`]), sorted by name. The bool
    /// is true when entries were left out.
    pub fn entries(&self) -> io::Result<(Vec<Entry>, bool)> {
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            // getdents64 straight on our descriptor (the walk only uses it for openat otherwise,
            // which ignores the offset). A cap-std start directory is an O_PATH descriptor,
            // which cannot be read: EBADF, then the portable way below.
            match self.entries_raw() {
                Err(e) if e.raw_os_error() == Some(libc::EBADF) => {}
                other => return other,
            }
        }
        self.entries_reopened()
    }

    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn entries_raw(&self) -> io::Result<(Vec<Entry>, bool)> {
        rustix::fs::seek(self.fd(), rustix::fs::SeekFrom::Start(0))?;
        self.read_raw(self.fd())
    }

    /// The entries of the directory stream `fd` (at its start), read 32 KiB at a time.
    #[cfg(any(target_os = "linux", target_os = "android"))]
    fn read_raw(&self, fd: BorrowedFd<'_>) -> io::Result<(Vec<Entry>, bool)> {
        use std::mem::MaybeUninit;
        let mut buf = vec![MaybeUninit::<u8>::uninit(); 32 * 1024];
        let mut raw = rustix::fs::RawDir::new(fd, &mut buf);
        let mut out = Vec::new();
        let mut cut = false;
        while let Some(entry) = raw.next() {
            let entry = entry?;
            if !self.push_entry(&mut out, entry.file_name(), entry.file_type(), &mut cut) {
                break;
            }
        }
        out.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok((out, cut))
    }

    fn entries_reopened(&self) -> io::Result<(Vec<Entry>, bool)> {
        // A second, readable descriptor for the directory stream.
        let stream = rustix::fs::openat(
            self.fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::NOCTTY,
            Mode::empty(),
        )?;
        // The same 32 KiB reads as above (`Dir` starts at 768 bytes and doubles: seven
        // getdents calls for 1,000 entries instead of two).
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            self.read_raw(stream.as_fd())
        }
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        {
            let mut dir = rustix::fs::Dir::new(stream)?;
            let mut out = Vec::new();
            let mut cut = false;
            while let Some(entry) = dir.read() {
                let entry = entry?;
                if !self.push_entry(&mut out, entry.file_name(), entry.file_type(), &mut cut) {
                    break;
                }
            }
            out.sort_unstable_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
            Ok((out, cut))
        }
    }

    /// Adds one readdir entry (skipping `.` and `..`); false once the cap is reached.
    fn push_entry(&self, out: &mut Vec<Entry>, name: &std::ffi::CStr, ft: FileType, cut: &mut bool) -> bool {
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            return true;
        }
        if out.len() >= MAX_DIR_ENTRIES {
            *cut = true;
            return false;
        }
        let mut kind = Kind::from_file_type(ft);
        if kind == Kind::Unknown {
            // Some file systems do not report the type in readdir.
            kind = match rustix::fs::statat(self.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Kind::from_file_type(FileType::from_raw_mode(st.st_mode)),
                Err(_) => Kind::Unknown,
            };
        }
        out.push(Entry { name: OsString::from_vec(bytes.to_vec()), kind });
        true
    }

    /// The device and inode of this directory's `.gitignore` and the file itself (not through a
    /// symlink, regular files only). `None` when there is none or it cannot be opened.
    fn open_gitignore(&self) -> Option<(File, u64, (u64, u64))> {
        let (file, size) = self.open_regular(OsStr::new(".gitignore")).ok()?.ok()?;
        let st = rustix::fs::fstat(&file).ok()?;
        Some((file, size, (st.st_dev as u64, st.st_ino as u64)))
    }

    /// Reads and parses this directory's `.gitignore` without any walk budget (a test helper;
    /// walks go through [`IgnoreFiles::read`]).
    pub fn gitignore(&self) -> Option<Gitignore> {
        let (file, _, _) = self.open_gitignore()?;
        parse_gitignore(file).ok().flatten()
    }
}

/// Parses an ignore file of at most [`MAX_GITIGNORE_BYTES`]. `Err(())` when it is larger.
pub(crate) fn parse_gitignore(file: File) -> std::result::Result<Option<Gitignore>, ()> {
    let mut bytes = Vec::new();
    file.take(MAX_GITIGNORE_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(|_| ())?;
    if bytes.len() > MAX_GITIGNORE_BYTES {
        return Err(());
    }
    let text = String::from_utf8_lossy(&bytes);
    // Paths are matched relative to this directory, so the matcher's root is ".".
    let mut builder = GitignoreBuilder::new(".");
    for line in text.lines() {
        // A line that is not a valid glob is skipped, as git does.
        let _ = builder.add_line(None, line);
    }
    Ok(builder.build().ok().filter(|g| !g.is_empty()))
}

/// The ignore files of one walk: parsed once each (by device and inode), within a byte budget.
#[derive(Default)]
pub struct IgnoreFiles {
    cache: HashMap<(u64, u64), Option<Arc<Gitignore>>>,
    /// Ignore files parsed (each distinct file once).
    pub parsed: usize,
    /// Bytes of ignore files parsed.
    pub parsed_bytes: usize,
    too_large: Vec<String>,
    too_large_count: u64,
    over_budget: Vec<String>,
    over_budget_count: u64,
}

impl IgnoreFiles {
    /// The matcher of `dir`'s `.gitignore` (`dir` is at workspace-relative `rel`), if it has
    /// one that is honoured.
    pub fn read(&mut self, dir: &DirHandle, rel: &Path) -> Option<Arc<Gitignore>> {
        let (file, size, key) = dir.open_gitignore()?;
        if let Some(known) = self.cache.get(&key) {
            return known.clone();
        }
        let shown = || display(&join(rel, OsStr::new(".gitignore")));
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        let parsed = if size > MAX_GITIGNORE_BYTES {
            Err(())
        } else if self.parsed_bytes + size > MAX_WALK_GITIGNORE_BYTES {
            self.over_budget_count += 1;
            if self.over_budget.len() < 3 {
                self.over_budget.push(shown());
            }
            // Not cached: the budget is the walk's, the verdict is not the file's.
            return None;
        } else {
            self.parsed += 1;
            self.parsed_bytes += size;
            parse_gitignore(file)
        };
        let matcher = match parsed {
            Ok(m) => m.map(Arc::new),
            Err(()) => {
                self.too_large_count += 1;
                if self.too_large.len() < 3 {
                    self.too_large.push(shown());
                }
                None
            }
        };
        self.cache.insert(key, matcher.clone());
        matcher
    }

    /// What the note says about ignore files that were not honoured.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.too_large_count > 0 {
            notes.push(format!(
                "{} .gitignore files larger than {} bytes were not honoured (their files are shown): {}",
                self.too_large_count,
                MAX_GITIGNORE_BYTES,
                self.too_large.join(", ")
            ));
        }
        if self.over_budget_count > 0 {
            notes.push(format!(
                "{} .gitignore files past the {} byte budget of ignore files per call were not honoured (their files are shown): {}",
                self.over_budget_count,
                MAX_WALK_GITIGNORE_BYTES,
                self.over_budget.join(", ")
            ));
        }
        notes
    }
}

/// True when `name` is one path component: not empty, not `.` or `..`, no `/`.
pub fn is_single_component(name: &OsStr) -> bool {
    let b = name.as_bytes();
    !b.is_empty() && b != b"." && b != b".." && !b.contains(&b'/') && !b.contains(&0)
}

/// Parses the directory a walk starts from: like [`crate::parse_path`], except that a path
/// naming the root itself (`.`, `./`, or empty) is accepted and gives `None`. A leading `/` is
/// still refused.
pub fn parse_start(input: &str) -> Result<Option<RelPath>> {
    if !input.starts_with('/')
        && input.split('/').all(|s| s.is_empty() || s == ".")
        && input.len() <= crate::path::MAX_PATH_BYTES
    {
        return Ok(None);
    }
    crate::parse_path(input).map(Some)
}

/// What a walk starts from.
pub enum Start {
    Dir(DirHandle),
    /// The path names something that is not a directory (followed, if a symlink inside).
    NotDir(Kind),
}

/// Opens the start of a walk: the root, or `path` resolved beneath the root (relative symlinks
/// that stay inside are followed, as for every path the model names).
pub fn open_start(ws: &Workspace, path: Option<&RelPath>) -> Result<Start> {
    let Some(path) = path else {
        let dir = ws.dir().try_clone().map_err(|e| Error::from_io(&e, "."))?;
        return Ok(Start::Dir(DirHandle { fd: dir.into() }));
    };
    let meta = ws.dir().metadata(path.as_str()).map_err(|e| Error::from_io(&e, path.as_str()))?;
    if !meta.is_dir() {
        // Not a directory (`metadata` follows links, so not a symlink either).
        let kind = Kind::of(&meta.file_type());
        return Ok(Start::NotDir(kind));
    }
    let dir = ws.dir().open_dir(path.as_str()).map_err(|e| Error::from_io(&e, path.as_str()))?;
    Ok(Start::Dir(DirHandle { fd: dir.into() }))
}

/// The `.gitignore` matchers in force at one point of the walk, shallowest first. Each knows
/// the workspace-relative directory it applies to.
#[derive(Default)]
pub struct IgnoreStack {
    layers: Vec<(PathBuf, Arc<Gitignore>)>,
}

impl IgnoreStack {
    /// The matchers of the directories above `path` (the root and each ancestor of the start
    /// directory, named lexically), read beneath the root handle.
    pub fn for_start(ws: &Workspace, path: Option<&RelPath>, files: &mut IgnoreFiles) -> IgnoreStack {
        let mut stack = IgnoreStack::default();
        let Some(path) = path else { return stack };
        let mut rel = PathBuf::new();
        let segments: Vec<&str> = path.segments().collect();
        // The root and every proper ancestor of the start directory.
        for i in 0..segments.len() {
            let dir = if i == 0 { ws.dir().try_clone().ok() } else { ws.dir().open_dir(segments[..i].join("/")).ok() };
            if let Some(dir) = dir {
                let handle = DirHandle { fd: dir.into() };
                if let Some(gi) = files.read(&handle, &rel) {
                    stack.layers.push((rel.clone(), gi));
                }
            }
            rel.push(segments[i]);
        }
        stack
    }

    pub fn push(&mut self, dir_rel: PathBuf, gi: Arc<Gitignore>) {
        self.layers.push((dir_rel, gi));
    }

    pub fn pop(&mut self) {
        self.layers.pop();
    }

    pub fn len(&self) -> usize {
        self.layers.len()
    }

    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }

    pub fn truncate(&mut self, len: usize) {
        self.layers.truncate(len);
    }

    /// True when the entry at workspace-relative `rel` is ignored.
    pub fn is_ignored(&self, rel: &Path, is_dir: bool) -> bool {
        for (dir, gi) in self.layers.iter().rev() {
            let Ok(sub) = rel.strip_prefix(dir) else {
                continue;
            };
            match gi.matched(sub, is_dir) {
                Match::None => continue,
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
            }
        }
        false
    }
}

/// Joins a workspace-relative directory and a name.
pub fn join(dir: &Path, name: &OsStr) -> PathBuf {
    if dir.as_os_str().is_empty() {
        PathBuf::from(name)
    } else {
        dir.join(name)
    }
}

/// The workspace-relative path for display: lossy for names that are not UTF-8, control
/// characters escaped ([`crate::error::shown_name`]).
pub fn display(rel: &Path) -> String {
    shown(rel.as_os_str())
}

/// A name or path as the model reads it (see [`display`]).
pub fn shown(name: &OsStr) -> String {
    let lossy = name.to_string_lossy();
    crate::error::shown_name(&lossy).into_owned()
}

/// True for errors that mean "no longer the directory or file readdir showed": removed, or
/// swapped for a symlink (refused by `O_NOFOLLOW`) or a non-directory.
pub fn is_swapped(err: &io::Error) -> bool {
    matches!(err.raw_os_error(), Some(libc::ENOENT) | Some(libc::ELOOP) | Some(libc::ENOTDIR))
}

/// True for the entry a walk hides when ignore files are honoured: git's own directory.
pub fn is_git_dir(name: &OsStr) -> bool {
    name.as_bytes() == b".git"
}

impl Kind {
    /// The kind of a file type (`metadata`'s: a symlink only when not followed).
    pub(crate) fn of(ft: &cap_std::fs::FileType) -> Kind {
        use cap_std::fs::FileTypeExt as _;
        if ft.is_dir() {
            Kind::Dir
        } else if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_fifo() {
            Kind::Fifo
        } else if ft.is_socket() {
            Kind::Socket
        } else if ft.is_block_device() {
            Kind::BlockDevice
        } else if ft.is_char_device() {
            Kind::CharDevice
        } else if ft.is_file() {
            Kind::File
        } else {
            Kind::Unknown
        }
    }
}

/// Describes a file type for `NOT_A_REGULAR_FILE`.
pub(crate) fn kind_of(ft: &cap_std::fs::FileType) -> &'static str {
    Kind::of(ft).describe()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn the_root_can_be_named_as_a_start() {
        for root in ["", ".", "./", "./.", ".//."] {
            assert_eq!(parse_start(root).unwrap(), None, "{root:?}");
        }
        assert_eq!(parse_start("./src/").unwrap().unwrap().as_str(), "src");
        for bad in ["..", "/", "//", "/.", "/etc", "a/../b", "C:"] {
            assert_eq!(parse_start(bad).unwrap_err().reason(), Some("INVALID_RELATIVE_PATH"), "{bad:?}");
        }
    }

    #[test]
    fn single_components() {
        assert!(is_single_component(OsStr::new("a")));
        assert!(is_single_component(OsStr::new(".a")));
        for bad in ["", ".", "..", "a/b", "/"] {
            assert!(!is_single_component(OsStr::new(bad)), "{bad:?}");
        }
    }

    #[test]
    fn entries_are_sorted_and_typed_without_following() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::write(root.join("b"), "x").unwrap();
        fs::create_dir(root.join("a")).unwrap();
        std::os::unix::fs::symlink("a", root.join("c")).unwrap();
        let ws = Workspace::open(&root).unwrap();
        let Start::Dir(dir) = open_start(&ws, None).unwrap() else { panic!() };
        let (entries, cut) = dir.entries().unwrap();
        assert!(!cut);
        let got: Vec<_> = entries.iter().map(|e| (e.name.to_str().unwrap().to_string(), e.kind)).collect();
        assert_eq!(got, vec![("a".into(), Kind::Dir), ("b".into(), Kind::File), ("c".into(), Kind::Symlink)]);
        // A symlinked directory is never opened as a directory (Linux says ENOTDIR when
        // O_DIRECTORY and O_NOFOLLOW meet a symlink, other systems ELOOP).
        let err = dir.open_dir(OsStr::new("c")).unwrap_err().raw_os_error();
        assert!(matches!(err, Some(libc::ENOTDIR) | Some(libc::ELOOP)), "{err:?}");
        assert!(dir.open_dir(OsStr::new("a")).is_ok());
    }

    #[test]
    fn a_fifo_is_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        nix::unistd::mkfifo(&tmp.path().join("p"), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let ws = Workspace::open(tmp.path()).unwrap();
        let Start::Dir(dir) = open_start(&ws, None).unwrap() else { panic!() };
        assert_eq!(dir.open_regular(OsStr::new("p")).unwrap().unwrap_err(), Kind::Fifo);
    }

    #[test]
    fn deepest_gitignore_decides() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fs::write(root.join(".gitignore"), "*.log\n/build/\n").unwrap();
        fs::create_dir_all(root.join("sub")).unwrap();
        fs::write(root.join("sub/.gitignore"), "!keep.log\n").unwrap();
        let ws = Workspace::open(root).unwrap();
        let Start::Dir(dir) = open_start(&ws, None).unwrap() else { panic!() };
        let mut stack = IgnoreStack::default();
        stack.push(PathBuf::new(), Arc::new(dir.gitignore().unwrap()));
        assert!(stack.is_ignored(Path::new("a.log"), false));
        assert!(stack.is_ignored(Path::new("sub/x.log"), false));
        assert!(stack.is_ignored(Path::new("build"), true));
        assert!(!stack.is_ignored(Path::new("build"), false));
        assert!(!stack.is_ignored(Path::new("sub/build"), true));
        let sub = dir.open_dir(OsStr::new("sub")).unwrap();
        stack.push(PathBuf::from("sub"), Arc::new(sub.gitignore().unwrap()));
        assert!(!stack.is_ignored(Path::new("sub/keep.log"), false));
        assert!(stack.is_ignored(Path::new("sub/other.log"), false));
    }

    #[test]
    fn a_symlinked_gitignore_is_not_read() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        fs::create_dir(&root).unwrap();
        fs::write(tmp.path().join("outside"), "*\n").unwrap();
        std::os::unix::fs::symlink("../outside", root.join(".gitignore")).unwrap();
        let ws = Workspace::open(&root).unwrap();
        let Start::Dir(dir) = open_start(&ws, None).unwrap() else { panic!() };
        assert!(dir.gitignore().is_none());
    }
}
