//! `list_files`: the entries beneath a directory of the workspace, bounded.
//!
//! The walk is [`crate::walk`]'s: descriptors only, `O_NOFOLLOW` on every child, so symlinks
//! are shown as links (with their target text, which is never resolved) and never entered.
//!
//! Which entries are shown: every entry within `depth` levels is a candidate; when there are
//! more than `limit` (or their text passes [`MAX_LIST_OUTPUT_BYTES`]), the shallowest win, and
//! among one level the earlier in tree order. The shown entries come back in tree order
//! (depth-first, each directory's entries sorted bytewise by name, a directory followed by its
//! contents). Entries deeper than `depth` are counted, not shown; the count, like the whole
//! walk, stops after [`MAX_VISITED`] entries, and the note then says "at least".

use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::path::RelPath;
use crate::root::Workspace;
use crate::walk::{self, DirHandle, IgnoreStack, Kind, Start};

pub const DEFAULT_DEPTH: u32 = 2;
pub const MAX_DEPTH: u32 = 10;
pub const DEFAULT_LIMIT: u32 = 500;
pub const MAX_LIMIT: u32 = 5_000;
/// Most bytes of entry text returned (the JSON escaping aside).
pub const MAX_LIST_OUTPUT_BYTES: usize = 65_536;
/// Most entries within `depth` the walk looks at before it stops.
pub const MAX_VISITED: usize = 100_000;
/// Most entries deeper than `depth` the walk counts before it stops counting.
pub const MAX_COUNTED: usize = 100_000;

#[derive(Clone, Debug)]
pub struct ListOptions {
    pub path: Option<RelPath>,
    pub depth: u32,
    pub limit: u32,
    pub gitignore: bool,
}

impl Default for ListOptions {
    fn default() -> Self {
        ListOptions { path: None, depth: DEFAULT_DEPTH, limit: DEFAULT_LIMIT, gitignore: true }
    }
}

#[derive(Clone, Debug, PartialEq)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListOutput {
    /// The listed directory, normalized (`.` for the root).
    pub path: String,
    /// Workspace-relative entries: `dir/`, `file`, `link -> target`, `name [fifo]`.
    pub entries: Vec<String>,
    /// True when some entries were not shown.
    pub truncated: bool,
    /// How many entries were not shown (a lower bound when the walk stopped early).
    pub not_shown: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn check_range(name: &str, value: u32, max: u32) -> Result<()> {
    if value == 0 || value > max {
        return Err(Error::invalid(Reason::InvalidArgumentsShape, format!("{name} must be an integer from 1 to {max}"))
            .with_details(serde_json::json!({ "at": format!("arguments.{name}") })));
    }
    Ok(())
}

/// The text shown for one entry.
fn entry_text(rel: &Path, kind: Kind, link: Option<String>) -> String {
    let shown = walk::display(rel);
    match kind {
        Kind::Dir => format!("{shown}/"),
        Kind::File => shown,
        Kind::Symlink => format!("{shown} -> {}", link.unwrap_or_else(|| "?".into())),
        other => format!("{shown} [{}]", other.describe()),
    }
}

/// A shown-entry candidate. Ordered by priority: shallower first, then tree order.
struct Candidate {
    depth: usize,
    rel: PathBuf,
    text: String,
}

impl PartialEq for Candidate {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for Candidate {}
impl PartialOrd for Candidate {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Candidate {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        // Path's order compares component by component: tree order.
        (self.depth, &self.rel).cmp(&(o.depth, &o.rel))
    }
}

struct Walker<'a> {
    opts: &'a ListOptions,
    cancel: &'a Cancel,
    ignores: IgnoreStack,
    /// The `limit` best candidates so far (a max-heap: the worst on top).
    best: BinaryHeap<Candidate>,
    /// Entries within `depth` looked at.
    visited: usize,
    /// Entries deeper than `depth` counted.
    counted: usize,
    /// The visit budget ran out: the walk stopped.
    stopped: bool,
    /// The count budget ran out: deeper entries are no longer counted.
    count_stopped: bool,
    beyond_limit: u64,
    beyond_depth: u64,
    unreadable: Vec<String>,
    crowded: Vec<String>,
    too_deep: u64,
}

impl Walker<'_> {
    fn offer(&mut self, c: Candidate) {
        if self.best.len() < self.opts.limit as usize {
            self.best.push(c);
        } else if self.best.peek().is_some_and(|worst| c < *worst) {
            self.best.pop();
            self.best.push(c);
            self.beyond_limit += 1;
        } else {
            self.beyond_limit += 1;
        }
    }

    fn unreadable(&mut self, rel: &Path, err: &std::io::Error) {
        if self.unreadable.len() < 5 {
            let errno = crate::error::errno_name(err.raw_os_error().unwrap_or(libc::EIO));
            self.unreadable.push(format!("{} ({errno})", walk::display(rel)));
        }
    }

    /// Walks `dir` (at workspace-relative `rel`), whose entries are at `depth`. A directory's
    /// own entries are all looked at before any of its subdirectories is entered, so the
    /// budget never starves a shallow level for a deep one.
    fn walk(&mut self, dir: &DirHandle, rel: &Path, depth: usize) -> Result<()> {
        self.cancel.check()?;
        let (entries, cut) = match dir.entries() {
            Ok(e) => e,
            Err(e) => {
                self.unreadable(rel, &e);
                return Ok(());
            }
        };
        if cut && self.crowded.len() < 5 {
            self.crowded.push(walk::display(rel));
        }
        let layers = self.ignores.len();
        if self.opts.gitignore {
            if let Some(gi) = dir.gitignore() {
                self.ignores.push(rel.to_path_buf(), gi);
            }
        }
        let within = depth <= self.opts.depth as usize;
        let mut subdirs = Vec::new();
        for entry in entries {
            let child = walk::join(rel, &entry.name);
            let is_dir = entry.kind == Kind::Dir;
            if self.opts.gitignore && (walk::is_git_dir(&entry.name) || self.ignores.is_ignored(&child, is_dir)) {
                continue;
            }
            if within {
                if self.visited >= MAX_VISITED {
                    self.stopped = true;
                    break;
                }
                self.visited += 1;
                let link = if entry.kind == Kind::Symlink {
                    dir.read_link(&entry.name).ok().map(|t| t.to_string_lossy().into_owned())
                } else {
                    None
                };
                let text = entry_text(&child, entry.kind, link);
                self.offer(Candidate { depth, rel: child.clone(), text });
            } else {
                if self.counted >= MAX_COUNTED {
                    self.count_stopped = true;
                    break;
                }
                self.counted += 1;
                self.beyond_depth += 1;
            }
            if is_dir {
                subdirs.push((entry.name, child));
            }
        }
        for (name, child) in subdirs {
            if self.stopped || (depth >= self.opts.depth as usize && self.count_stopped) {
                break;
            }
            if depth >= walk::MAX_WALK_DEPTH {
                self.too_deep += 1;
                continue;
            }
            match dir.open_dir(&name) {
                Ok(sub) => self.walk(&sub, &child, depth + 1)?,
                // Removed, or swapped for a symlink, since readdir: not entered.
                Err(e) if walk::is_swapped(&e) => {}
                Err(e) => self.unreadable(&child, &e),
            }
        }
        self.ignores.truncate(layers);
        Ok(())
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Lists the entries beneath `opts.path` (the root when `None`).
pub fn list_files(ws: &Workspace, opts: &ListOptions, cancel: &Cancel) -> Result<ListOutput> {
    check_range("depth", opts.depth, MAX_DEPTH)?;
    check_range("limit", opts.limit, MAX_LIMIT)?;
    cancel.check()?;
    ws.check()?;
    let shown_path = opts.path.as_ref().map_or(".".to_string(), |p| p.as_str().to_string());
    let dir = match walk::open_start(ws, opts.path.as_ref())? {
        Start::Dir(d) => d,
        Start::NotDir(kind) => {
            // A single file (or other non-directory) lists as itself.
            let rel = Path::new(opts.path.as_ref().map_or(".", |p| p.as_str()));
            return Ok(ListOutput {
                path: shown_path,
                entries: vec![entry_text(rel, kind, None)],
                truncated: false,
                not_shown: 0,
                note: Some("this path is not a directory; it is listed as itself".into()),
            });
        }
    };
    let ignores = if opts.gitignore { IgnoreStack::for_start(ws, opts.path.as_ref()) } else { IgnoreStack::default() };
    let mut w = Walker {
        opts,
        cancel,
        ignores,
        best: BinaryHeap::new(),
        visited: 0,
        counted: 0,
        stopped: false,
        count_stopped: false,
        beyond_limit: 0,
        beyond_depth: 0,
        unreadable: Vec::new(),
        crowded: Vec::new(),
        too_deep: 0,
    };
    let rel = opts.path.as_ref().map_or_else(PathBuf::new, |p| PathBuf::from(p.as_str()));
    w.walk(&dir, &rel, 1)?;
    cancel.check()?;
    ws.check()?;

    // Shallowest first until the byte cap, then back to tree order.
    let mut chosen: Vec<Candidate> = w.best.into_sorted_vec();
    let mut bytes = 0usize;
    let mut beyond_bytes = 0u64;
    let mut keep = chosen.len();
    for (i, c) in chosen.iter().enumerate() {
        if bytes + c.text.len() + 1 > MAX_LIST_OUTPUT_BYTES {
            keep = i;
            break;
        }
        bytes += c.text.len() + 1;
    }
    beyond_bytes += (chosen.len() - keep) as u64;
    chosen.truncate(keep);
    chosen.sort_by(|a, b| a.rel.cmp(&b.rel));
    let entries: Vec<String> = chosen.into_iter().map(|c| c.text).collect();

    let not_shown = w.beyond_limit + beyond_bytes + w.beyond_depth;
    let partial = w.stopped || w.count_stopped;
    let mut notes = Vec::new();
    if not_shown > 0 || partial {
        let at_least = if partial { "at least " } else { "" };
        let mut parts = Vec::new();
        if w.beyond_limit > 0 {
            parts.push(format!("{} beyond the limit of {}", thousands(w.beyond_limit), opts.limit));
        }
        if beyond_bytes > 0 {
            parts.push(format!("{} beyond the {} byte output cap", thousands(beyond_bytes), MAX_LIST_OUTPUT_BYTES));
        }
        if w.beyond_depth > 0 {
            parts.push(format!("{} deeper than depth {}", thousands(w.beyond_depth), opts.depth));
        }
        notes.push(format!(
            "{at_least}{} entries not shown ({}); list a subdirectory with path, or raise depth (max {MAX_DEPTH}) or limit (max {MAX_LIMIT})",
            thousands(not_shown),
            if parts.is_empty() { "the walk stopped".to_string() } else { parts.join(", ") },
        ));
    }
    if w.stopped {
        notes.push(format!("the walk stopped after {} entries", thousands(MAX_VISITED as u64)));
    } else if w.count_stopped {
        notes.push(format!("counting stopped after {} deeper entries", thousands(MAX_COUNTED as u64)));
    }
    if w.too_deep > 0 {
        notes.push(format!("{} directories nested deeper than {} levels were not entered", w.too_deep, walk::MAX_WALK_DEPTH));
    }
    if !w.crowded.is_empty() {
        notes.push(format!(
            "directories with more than {} entries were cut: {}",
            thousands(walk::MAX_DIR_ENTRIES as u64),
            w.crowded.join(", ")
        ));
    }
    if !w.unreadable.is_empty() {
        notes.push(format!("could not read: {}", w.unreadable.join(", ")));
    }
    let truncated = not_shown > 0 || partial || w.too_deep > 0 || !w.crowded.is_empty();
    Ok(ListOutput {
        path: shown_path,
        entries,
        truncated,
        not_shown,
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    })
}
