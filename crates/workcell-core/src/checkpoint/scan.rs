//! The walk checkpoints make: every regular file and symlink beneath the root, through
//! [`crate::walk`]'s descriptors (each child opened from its parent's descriptor with
//! `O_NOFOLLOW`: a symlink is recorded as a link and never entered or followed).
//!
//! Left out, as the ignore rules say: what `.gitignore` and `.ignore` files exclude (an
//! ignored directory is not entered; `.ignore` wins over `.gitignore` in one directory, as in
//! ripgrep), what the host's `exclude` globs match, `.git` (a directory or a file, at any
//! depth), workcell's own `.workcell-tmp-*`/`.workcell-node-*` names, and anything that is not
//! a regular file, a symlink or a directory (FIFOs, sockets, devices). Directories deeper than
//! [`crate::walk::MAX_WALK_DEPTH`] are not entered; a directory with more than
//! [`crate::walk::MAX_DIR_ENTRIES`] entries is an error (a checkpoint never silently misses
//! part of a directory).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};
use rustix::fs::{AtFlags, FileType};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::root::{Identity, Workspace};
use crate::walk::{self, DirHandle, IgnoreFiles, IgnoreStack, Kind, Start};

/// What a path holds, as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum State {
    File { mode: u32, size: u64, hash: [u8; 32] },
    Link { target: Vec<u8> },
}

/// One recorded path (workspace-relative bytes, `/`-separated).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    pub path: Vec<u8>,
    pub state: State,
}

/// What `lstat` says about a name: what a stat cache keys on and a rewind rechecks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: i64,
    pub ctime: i64,
    /// The whole `st_mode` (type and permission bits).
    pub mode: u32,
}

#[allow(clippy::unnecessary_cast)]
impl Stat {
    pub(crate) fn of(st: &rustix::fs::Stat) -> Stat {
        Stat {
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            size: st.st_size as u64,
            mtime: (st.st_mtime as i64).saturating_mul(1_000_000_000).saturating_add(st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64).saturating_mul(1_000_000_000).saturating_add(st.st_ctime_nsec as i64),
            mode: st.st_mode as u32,
        }
    }

    pub(crate) fn id(&self) -> Identity {
        Identity { dev: self.dev, ino: self.ino }
    }

    pub(crate) fn kind(&self) -> Kind {
        Kind::from_file_type(FileType::from_raw_mode(self.mode as _))
    }
}

/// `lstat` of a name beneath a directory descriptor.
pub(crate) fn lstat(dir: &impl std::os::fd::AsFd, name: &OsStr) -> std::io::Result<Option<Stat>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(Stat::of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The host's `exclude` globs.
pub(crate) struct Rules {
    exclude: Option<GlobSet>,
}

impl Rules {
    /// Compiles the globs; `Err((index, message))` names the first invalid one.
    pub(crate) fn new(exclude: &[String]) -> std::result::Result<Rules, (usize, String)> {
        if exclude.is_empty() {
            return Ok(Rules { exclude: None });
        }
        let mut b = GlobSetBuilder::new();
        for (i, g) in exclude.iter().enumerate() {
            // A glob without a `/` matches a name at any depth, as in `.gitignore`.
            let pattern = if g.contains('/') { g.trim_start_matches('/').to_string() } else { format!("**/{g}") };
            let glob = GlobBuilder::new(&pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map_err(|e| (i, format!("invalid glob {g:?}: {e}")))?;
            b.add(glob);
        }
        let set = b.build().map_err(|e| (0, e.to_string()))?;
        Ok(Rules { exclude: Some(set) })
    }

    fn excluded(&self, rel: &Path) -> bool {
        self.exclude.as_ref().is_some_and(|s| s.is_match(rel))
    }
}

/// One entry the walk yields: a regular file or a symlink.
pub(crate) struct Seen<'a> {
    /// Its directory (shared: a visitor may keep it to act on the entry later).
    pub dir: &'a Arc<DirHandle>,
    pub name: &'a OsStr,
    /// Workspace-relative path.
    pub rel: &'a Path,
    pub kind: Kind,
}

/// True for the names workcell itself creates inside the root.
fn ours(name: &OsStr) -> bool {
    let b = name.as_bytes();
    b.starts_with(crate::write::TEMP_PREFIX.as_bytes()) || b.starts_with(b".workcell-node-")
}

fn read_dot_ignore(dir: &DirHandle) -> Option<Arc<ignore::gitignore::Gitignore>> {
    let (file, size) = dir.open_regular(OsStr::new(".ignore")).ok()?.ok()?;
    if size as usize > walk::MAX_GITIGNORE_BYTES {
        return None;
    }
    walk::parse_gitignore(file).ok().flatten().map(Arc::new)
}

/// How often (in files) a watched walk reports its count.
const REPORT_EVERY: u64 = 64;

/// Walks the whole workspace, calling `visit` for each file and symlink, in tree order. A
/// watched call's progress (contract §18) counts the files seen: `{n} files {verb}`.
pub(crate) fn walk(ws: &Workspace, rules: &Rules, cancel: &Cancel, verb: &str, visit: &mut dyn FnMut(Seen<'_>) -> Result<()>) -> Result<()> {
    ws.check()?;
    let Start::Dir(root) = walk::open_start(ws, None)? else {
        return Err(Error::root_changed("the workspace root is no longer a directory"));
    };
    let mut files = IgnoreFiles::default();
    let mut stack = IgnoreStack::default();
    let mut rel = PathBuf::new();
    let root = Arc::new(root);
    let progress = cancel.progress();
    let mut seen = 0u64;
    let mut counted = |s: Seen<'_>| {
        seen += 1;
        if seen % REPORT_EVERY == 0 {
            progress.count(seen, None, || format!("{seen} files {verb}"));
        }
        visit(s)
    };
    walk_dir(&root, &mut rel, 1, rules, &mut files, &mut stack, cancel, &mut counted)?;
    progress.count(seen, None, || format!("{seen} files {verb}"));
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn walk_dir(
    dir: &Arc<DirHandle>,
    rel: &mut PathBuf,
    depth: usize,
    rules: &Rules,
    files: &mut IgnoreFiles,
    stack: &mut IgnoreStack,
    cancel: &Cancel,
    visit: &mut dyn FnMut(Seen<'_>) -> Result<()>,
) -> Result<()> {
    cancel.check()?;
    let (entries, cut) = dir.entries().map_err(|e| Error::from_io(&e, &walk::display(rel)))?;
    if cut {
        return Err(Error::new(
            Code::FileTooLarge,
            format!("{} has more than {} entries; a checkpoint does not record part of a directory", walk::display(rel), walk::MAX_DIR_ENTRIES),
        )
        .with_hint("exclude that directory (the exclude option, or .gitignore) and create the checkpoint again"));
    }
    let depth_before = stack.len();
    if let Some(gi) = files.read(dir, rel) {
        stack.push(rel.clone(), gi);
    }
    if let Some(gi) = read_dot_ignore(dir) {
        stack.push(rel.clone(), gi);
    }
    let result = (|| {
        for e in &entries {
            cancel.check()?;
            if walk::is_git_dir(&e.name) || ours(&e.name) {
                continue;
            }
            let is_dir = e.kind == Kind::Dir;
            rel.push(&e.name);
            let skip = rules.excluded(rel) || stack.is_ignored(rel, is_dir);
            let r = if skip {
                Ok(())
            } else {
                match e.kind {
                    Kind::Dir if depth < walk::MAX_WALK_DEPTH => match dir.open_dir(&e.name) {
                        Ok(child) => walk_dir(&Arc::new(child), rel, depth + 1, rules, files, stack, cancel, visit),
                        // Removed or swapped for a link since readdir: not a directory now.
                        Err(err) if walk::is_swapped(&err) => Ok(()),
                        Err(err) => Err(Error::from_io(&err, &walk::display(rel))),
                    },
                    Kind::File | Kind::Symlink => visit(Seen { dir, name: &e.name, rel, kind: e.kind }),
                    _ => Ok(()),
                }
            };
            rel.pop();
            r?;
        }
        Ok(())
    })();
    stack.truncate(depth_before);
    result
}

/// Opens the directory `parent` (workspace-relative bytes, `/`-separated; empty for the root)
/// component by component, never following a symlink.
pub(crate) fn open_parent(ws: &Workspace, parent: &[u8]) -> std::io::Result<DirHandle> {
    let Start::Dir(mut dir) = walk::open_start(ws, None).map_err(|_| std::io::Error::from_raw_os_error(libc::ENOTDIR))? else {
        return Err(std::io::Error::from_raw_os_error(libc::ENOTDIR));
    };
    for seg in parent.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        dir = dir.open_dir(OsStr::from_bytes(seg))?;
    }
    Ok(dir)
}

/// Splits a relative path into its parent (possibly empty) and its final name.
pub(crate) fn split(path: &[u8]) -> (&[u8], &OsStr) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => (&path[..i], OsStr::from_bytes(&path[i + 1..])),
        None => (&[], OsStr::from_bytes(path)),
    }
}

/// A path as the model reads it.
pub(crate) fn shown(path: &[u8]) -> String {
    walk::shown(OsStr::from_bytes(path))
}
