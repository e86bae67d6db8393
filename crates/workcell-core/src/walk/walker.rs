//! The one directory walk of `list_files` and `search_files`: it reads each directory beneath
//! its own descriptor (see the module above), applies the `.gitignore` files and git's own
//! directory, bounds the walk (the deepest level entered, the entries of a directory, the bytes
//! of names held), records what it could not read, and asks a [`Visit`] what each entry is
//! worth: the tool decides what to keep, and which directories to enter.
//!
//! Two orders ([`Order`]): `search_files` enters a subdirectory where it is met, so its files
//! come in tree order; `list_files` looks at a directory's entries all before entering any of
//! its subdirectories, so its budget is never spent on a deep level before a shallow one.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{display, is_git_dir, is_swapped, join, DirHandle, Entry, IgnoreFiles, IgnoreStack, Kind, MAX_WALK_DEPTH, MAX_WALK_HELD_BYTES};
use crate::error::Result;
use crate::path::RelPath;
use crate::root::Workspace;

/// When a walk enters a subdirectory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Where it is met among its directory's entries: every entry comes in tree order
    /// (depth-first, each directory's entries sorted bytewise). The directory's entries are held
    /// while its subdirectories are walked.
    DepthFirst,
    /// After all of its directory's entries. The subdirectories waiting are held.
    EntriesFirst,
}

/// What the walk does after an entry.
pub enum Step<S> {
    /// The next entry.
    Next,
    /// Enter this entry, a directory, keeping `S` for it until then.
    Enter(S),
    /// Nothing more in this directory: no later entry, no subdirectory still waiting.
    Stop,
}

/// Bytes of names a walk holds (its own and its visitor's), against [`MAX_WALK_HELD_BYTES`].
#[derive(Debug, Default)]
pub struct Held {
    now: usize,
    /// The most held at once.
    pub peak: usize,
    /// A hold was refused: the walk stops.
    pub cut: bool,
}

impl Held {
    /// Holds `n` more bytes; false (and `cut`) when that would pass the budget.
    pub fn hold(&mut self, n: usize) -> bool {
        if self.now + n > MAX_WALK_HELD_BYTES {
            self.cut = true;
            return false;
        }
        self.now += n;
        self.peak = self.peak.max(self.now);
        true
    }

    pub fn release(&mut self, n: usize) {
        self.now -= n;
    }
}

/// What a tool decides during a walk. The walk calls it only for entries that no ignore file
/// hides, in name order within each directory.
pub trait Visit {
    /// What the visitor keeps for a directory being walked.
    type Dir;
    /// What it keeps for a subdirectory waiting to be entered.
    type Sub;
    /// At the start of each directory: false to skip it, an error to end the walk.
    fn dir_start(&mut self) -> Result<bool> {
        Ok(true)
    }
    /// Before each entry: false ends the directory's entries.
    fn next_entry(&self) -> bool {
        true
    }
    /// One entry of `dir` (kept as `at`), at workspace-relative `rel`; its depth is `depth`
    /// (1 for the start directory's entries).
    fn entry(&mut self, held: &mut Held, dir: &Arc<DirHandle>, at: &Self::Dir, entry: &Entry, rel: &Path, depth: usize) -> Step<Self::Sub>;
    /// Bytes of names in a waiting subdirectory's `Sub` ([`Order::EntriesFirst`]).
    fn sub_bytes(_sub: &Self::Sub) -> usize {
        0
    }
    /// Before a waiting subdirectory of a directory at `depth` is entered
    /// ([`Order::EntriesFirst`]): false leaves it and the rest waiting there.
    fn enter_waiting(&self, _depth: usize) -> bool {
        true
    }
    /// A subdirectory of `at` (whose entries are at `depth`) was opened: what to keep for it,
    /// or `None` to leave it and the rest of its parent's subdirectories.
    fn entered(&mut self, held: &mut Held, at: &Self::Dir, sub: Self::Sub, depth: usize) -> Option<Self::Dir>;
}

/// One walk: its order, its ignore files and what it met.
pub struct Walker {
    order: Order,
    gitignore: bool,
    ignores: IgnoreStack,
    /// The ignore files read, and the note on those not honoured.
    pub ignore_files: IgnoreFiles,
    /// Bytes of names held (the visitor's included).
    pub held: Held,
    /// Directories nested deeper than [`MAX_WALK_DEPTH`], not entered.
    pub too_deep: u64,
    /// Directories with more than [`super::MAX_DIR_ENTRIES`] entries (the first five).
    pub crowded: Vec<String>,
    /// Directories that could not be read: their shown path and the errno's name (the first five).
    pub unreadable: Vec<(String, String)>,
}

impl Walker {
    /// A walk from `start` (the root when `None`); with `gitignore`, the ignore files of the
    /// directories above the start apply too.
    pub fn new(ws: &Workspace, start: Option<&RelPath>, gitignore: bool, order: Order) -> Walker {
        let mut ignore_files = IgnoreFiles::default();
        let ignores = if gitignore { IgnoreStack::for_start(ws, start, &mut ignore_files) } else { IgnoreStack::default() };
        Walker {
            order,
            gitignore,
            ignores,
            ignore_files,
            held: Held::default(),
            too_deep: 0,
            crowded: Vec::new(),
            unreadable: Vec::new(),
        }
    }

    /// Walks `dir` (at workspace-relative `rel`, kept by the visitor as `at`).
    pub fn run<V: Visit>(&mut self, v: &mut V, dir: DirHandle, rel: &Path, at: V::Dir) -> Result<()> {
        self.dir(v, Arc::new(dir), rel, &at, 1)
    }

    fn unreadable(&mut self, rel: &Path, err: &std::io::Error) {
        if self.unreadable.len() < 5 {
            self.unreadable.push((display(rel), crate::error::errno_name(err.raw_os_error().unwrap_or(libc::EIO))));
        }
    }

    /// Walks `dir`, whose entries are at `depth`.
    fn dir<V: Visit>(&mut self, v: &mut V, dir: Arc<DirHandle>, rel: &Path, at: &V::Dir, depth: usize) -> Result<()> {
        if self.held.cut || !v.dir_start()? {
            return Ok(());
        }
        let (entries, cut) = match dir.entries() {
            Ok(e) => e,
            Err(e) => {
                self.unreadable(rel, &e);
                return Ok(());
            }
        };
        if cut && self.crowded.len() < 5 {
            self.crowded.push(display(rel));
        }
        // Depth first, the entries not yet visited wait while a subdirectory is walked.
        let mut held = 0;
        if self.order == Order::DepthFirst {
            held = entries.iter().map(|e| e.name.len() + std::mem::size_of::<Entry>()).sum();
            if !self.held.hold(held) {
                return Ok(());
            }
        }
        let layers = self.ignores.len();
        if self.gitignore {
            if let Some(gi) = self.ignore_files.read(&dir, rel) {
                self.ignores.push(rel.to_path_buf(), gi);
            }
        }
        let mut waiting: Vec<(OsString, V::Sub)> = Vec::new();
        let mut result = Ok(());
        // One buffer for every entry's workspace-relative path (`rel/name`): each entry pushes
        // its name and pops it, so a directory of n entries costs no allocation per entry.
        let mut child = rel.to_path_buf();
        let base = child.as_os_str().len();
        for entry in entries {
            if self.held.cut || !v.next_entry() {
                break;
            }
            child.push(&entry.name);
            let step = if self.gitignore && (is_git_dir(&entry.name) || self.ignores.is_ignored(&child, entry.kind == Kind::Dir)) {
                Step::Next
            } else {
                v.entry(&mut self.held, &dir, at, &entry, &child, depth)
            };
            let go_on = match step {
                Step::Next => true,
                Step::Stop => false,
                Step::Enter(sub) if self.order == Order::DepthFirst => match self.enter(v, &dir, &entry.name, &child, at, sub, depth) {
                    Ok(go_on) => go_on,
                    Err(e) => {
                        result = Err(e);
                        false
                    }
                },
                Step::Enter(sub) => {
                    let size = entry.name.len() + V::sub_bytes(&sub) + std::mem::size_of::<(OsString, V::Sub)>();
                    let held_it = self.held.hold(size);
                    if held_it {
                        held += size;
                        waiting.push((entry.name, sub));
                    }
                    held_it
                }
            };
            if !go_on {
                break;
            }
            // Back to `rel` by its length (`PathBuf::pop` parses the path's components from the
            // end, a fifth of a 1,000-entry listing's own time).
            child = truncated(child, base);
        }
        if result.is_ok() {
            for (name, sub) in waiting {
                if self.held.cut || !v.enter_waiting(depth) {
                    break;
                }
                let child = join(rel, &name);
                match self.enter(v, &dir, &name, &child, at, sub, depth) {
                    Ok(true) => {}
                    Ok(false) => break,
                    Err(e) => {
                        result = Err(e);
                        break;
                    }
                }
            }
        }
        self.held.release(held);
        self.ignores.truncate(layers);
        result
    }

    /// Enters the subdirectory `name` of `dir` (a directory at `depth`); false when the visitor
    /// left it and the rest.
    #[allow(clippy::too_many_arguments)]
    fn enter<V: Visit>(&mut self, v: &mut V, dir: &DirHandle, name: &std::ffi::OsStr, child: &Path, at: &V::Dir, sub: V::Sub, depth: usize) -> Result<bool> {
        if depth >= MAX_WALK_DEPTH {
            self.too_deep += 1;
            return Ok(true);
        }
        match dir.open_dir(name) {
            Ok(opened) => {
                let Some(sub_at) = v.entered(&mut self.held, at, sub, depth) else { return Ok(false) };
                self.dir(v, Arc::new(opened), child, &sub_at, depth + 1)?;
            }
            // Removed, or swapped for a symlink or a non-directory, since readdir: not entered.
            Err(e) if is_swapped(&e) => {}
            Err(e) => self.unreadable(child, &e),
        }
        Ok(true)
    }
}

/// `path` cut to its first `len` bytes, in the same buffer.
fn truncated(path: PathBuf, len: usize) -> PathBuf {
    let mut bytes = path.into_os_string().into_vec();
    bytes.truncate(len);
    PathBuf::from(OsString::from_vec(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_path_cut_back_by_length_is_its_directory_again() {
        for rel in ["", "src", "src/deep/er"] {
            let mut child = PathBuf::from(rel);
            let base = child.as_os_str().len();
            for name in ["a", "long-name.txt", "é"] {
                child.push(name);
                assert_eq!(child, Path::new(rel).join(name));
                child = truncated(child, base);
                assert_eq!(child, Path::new(rel));
            }
        }
    }
}
