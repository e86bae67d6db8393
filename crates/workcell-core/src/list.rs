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
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::path::RelPath;
use crate::root::Workspace;
use crate::walk::{self, DirHandle, Entry, Held, Kind, Order, Start, Step, Visit, Walker};

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
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ListFilesOutput")]
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
        return Err(Error::invalid(
            Reason::InvalidArgumentsShape,
            format!("{name} must be an integer from 1 to {max}"),
        )
        .with_details(serde_json::json!({ "at": format!("arguments.{name}") })));
    }
    Ok(())
}

/// The text shown for one entry, from its shown path.
fn entry_text(shown: &str, kind: Kind, link: Option<&str>) -> String {
    let mut text = String::with_capacity(shown.len() + suffix_len(kind, link));
    text.push_str(shown);
    push_suffix(&mut text, kind, link);
    text
}

/// Adds what an entry's text says after its path: `/` for a directory, ` -> target` for a
/// symlink, ` [fifo]` and the like for the other kinds.
fn push_suffix(text: &mut String, kind: Kind, link: Option<&str>) {
    match kind {
        Kind::Dir => text.push('/'),
        Kind::File => {}
        Kind::Symlink => {
            text.push_str(" -> ");
            text.push_str(link.unwrap_or("?"));
        }
        other => {
            text.push_str(" [");
            text.push_str(other.describe());
            text.push(']');
        }
    }
}

/// Bytes [`entry_text`] adds to the path.
fn suffix_len(kind: Kind, link: Option<&str>) -> usize {
    match kind {
        Kind::Dir => 1,
        Kind::File => 0,
        Kind::Symlink => 4 + link.map_or(1, str::len),
        other => 3 + other.describe().len(),
    }
}

/// A directory whose entries are candidates: its shown name and its parent, so that a full
/// path is only ever built for what is returned.
struct Node {
    /// Index of the parent node; `None` for the start directory.
    parent: Option<u32>,
    /// The shown (escaped) name; for the start directory, its whole shown path.
    name: Box<str>,
    /// Length of the shown path.
    len: usize,
    /// The entry's visit number (tree order among siblings).
    seq: u64,
}

/// A shown-entry candidate. Ordered by priority: shallower first, then tree order (which, at
/// one depth, is the order entries are visited in: directories are walked depth-first in
/// sorted order, each directory's entries before any of its subdirectories).
struct Candidate {
    depth: usize,
    seq: u64,
    parent: u32,
    name: Box<str>,
    kind: Kind,
    link: Option<Box<str>>,
    /// Bytes of the entry's text (plus its newline), as [`MAX_LIST_OUTPUT_BYTES`] counts it.
    cost: usize,
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
        (self.depth, self.seq).cmp(&(o.depth, o.seq))
    }
}

/// The candidates kept: all of those offered, in visit order, while they all fit (`limit` and
/// the byte cap), so a listing that shows everything keeps no heap; from the first that does
/// not fit, a max-heap with the worst on top, from which the worst are dropped.
enum Best {
    All(Vec<Candidate>),
    Heap(BinaryHeap<Candidate>),
}

/// Measurements of one listing, for tests and the bench.
#[derive(Clone, Debug, Default)]
pub struct ListStats {
    /// Most bytes of names the walk kept at once (directory nodes, pending subdirectories,
    /// candidates).
    pub peak_held_bytes: usize,
    /// Distinct `.gitignore` files parsed, and their bytes.
    pub ignore_files_parsed: usize,
    pub ignore_bytes_parsed: usize,
}

/// What `list_files` keeps during the walk ([`walk::Walker`], entries first: a directory's
/// entries are all looked at before any of its subdirectories is entered, so the budget never
/// starves a shallow level for a deep one).
struct Lister<'a> {
    opts: &'a ListOptions,
    cancel: &'a Cancel,
    nodes: Vec<Node>,
    /// The best candidates so far, at most `limit` of them and only as many as can still be
    /// shown within the byte cap.
    best: Best,
    /// Bytes of the candidates in `best`.
    best_cost: usize,
    /// Candidates offered.
    offered: u64,
    /// Entries within `depth` looked at.
    visited: usize,
    /// Entries deeper than `depth` counted.
    counted: usize,
    seq: u64,
    /// The visit budget ran out: the walk stopped.
    stopped: bool,
    /// The count budget ran out: deeper entries are no longer counted.
    count_stopped: bool,
    beyond_depth: u64,
}

impl Lister<'_> {
    fn candidate_bytes(c: &Candidate) -> usize {
        c.name.len() + c.link.as_ref().map_or(0, |l| l.len()) + std::mem::size_of::<Candidate>()
    }

    fn offer(&mut self, held: &mut Held, c: Candidate) {
        self.offered += 1;
        let size = Self::candidate_bytes(&c);
        if !held.hold(size) {
            return;
        }
        self.best_cost += c.cost;
        let over = |n: usize, cost: usize| n > self.opts.limit as usize || cost > MAX_LIST_OUTPUT_BYTES;
        let heap = match &mut self.best {
            Best::All(all) => {
                all.push(c);
                if !over(all.len(), self.best_cost) {
                    return;
                }
                self.best = Best::Heap(BinaryHeap::from(std::mem::take(all)));
                let Best::Heap(heap) = &mut self.best else { unreachable!() };
                heap
            }
            Best::Heap(heap) => {
                heap.push(c);
                heap
            }
        };
        // Drop the worst while there are more than `limit`, or while all of them together
        // pass the byte cap: what is shown is the longest prefix, in priority order, that fits
        // both, so the worst can then never be shown, whatever comes later.
        while over(heap.len(), self.best_cost) {
            let dropped = heap.pop().expect("not empty");
            self.best_cost -= dropped.cost;
            held.release(Self::candidate_bytes(&dropped));
        }
    }

    /// The text of a candidate as shown (its path and kind suffix) and its tree-order key (the
    /// visit numbers from the start directory down), built only for what is returned: one
    /// allocation, of the text's exact size.
    fn shown_entry(&self, c: &Candidate) -> (TreeKey, String) {
        // The directories from the start down to the candidate's parent (nodes exist only
        // within `depth`, so at most MAX_DEPTH of them).
        let mut chain = [0u32; MAX_DEPTH as usize];
        let mut n = 0;
        let mut at = Some(c.parent);
        while let Some(i) = at {
            chain[n] = i;
            n += 1;
            at = self.nodes[i as usize].parent;
        }
        let mut text = String::with_capacity(c.cost);
        let mut key = TreeKey { len: 0, seqs: [0; MAX_DEPTH as usize] };
        for &i in chain[..n].iter().rev() {
            let node = &self.nodes[i as usize];
            if !node.name.is_empty() {
                if !text.is_empty() {
                    text.push('/');
                }
                text.push_str(&node.name);
            }
            if node.parent.is_some() {
                key.push(node.seq);
            }
        }
        if !text.is_empty() {
            text.push('/');
        }
        text.push_str(&c.name);
        key.push(c.seq);
        push_suffix(&mut text, c.kind, c.link.as_deref());
        (key, text)
    }
}

/// A shown entry's place in tree order: the visit numbers of its directories from the start
/// down, and its own (at most `MAX_DEPTH` in all), compared as a sequence.
struct TreeKey {
    len: usize,
    seqs: [u64; MAX_DEPTH as usize],
}

impl TreeKey {
    fn push(&mut self, seq: u64) {
        self.seqs[self.len] = seq;
        self.len += 1;
    }

    fn as_slice(&self) -> &[u64] {
        &self.seqs[..self.len]
    }
}

/// A directory being walked: its node when its entries are within `depth`.
type At = Option<u32>;

impl Visit for Lister<'_> {
    type Dir = At;
    /// A subdirectory waiting: its visit number and, within `depth`, its shown name.
    type Sub = (u64, Box<str>);

    fn dir_start(&mut self) -> Result<bool> {
        self.cancel.check()?;
        // A watched call's progress: the entries seen so far (at most one update per 250 ms).
        let seen = (self.visited + self.counted) as u64;
        self.cancel.progress().count(seen, None, || format!("{seen} entries seen"));
        Ok(true)
    }

    fn entry(&mut self, held: &mut Held, dir: &Arc<DirHandle>, node: &At, entry: &Entry, _rel: &Path, depth: usize) -> Step<Self::Sub> {
        let seq = self.seq;
        self.seq += 1;
        let mut shown_name: Box<str> = Box::from("");
        if depth <= self.opts.depth as usize {
            if self.visited >= MAX_VISITED {
                self.stopped = true;
                return Step::Stop;
            }
            self.visited += 1;
            let link: Option<Box<str>> = if entry.kind == Kind::Symlink {
                dir.read_link(&entry.name).ok().map(|t| walk::shown(&t).into_boxed_str())
            } else {
                None
            };
            let name = walk::shown(&entry.name).into_boxed_str();
            let parent = node.expect("entries within depth have a node");
            let path_len = self.nodes[parent as usize].len + usize::from(self.nodes[parent as usize].len > 0) + name.len();
            let cost = path_len + suffix_len(entry.kind, link.as_deref()) + 1;
            // Only a directory needs its name again, to be entered later.
            if entry.kind == Kind::Dir {
                shown_name = name.clone();
            }
            self.offer(held, Candidate { depth, seq, parent, name, kind: entry.kind, link, cost });
        } else {
            if self.counted >= MAX_COUNTED {
                self.count_stopped = true;
                return Step::Stop;
            }
            self.counted += 1;
            self.beyond_depth += 1;
        }
        if entry.kind == Kind::Dir {
            Step::Enter((seq, shown_name))
        } else {
            Step::Next
        }
    }

    fn sub_bytes(sub: &Self::Sub) -> usize {
        sub.1.len()
    }

    fn enter_waiting(&self, depth: usize) -> bool {
        !(self.stopped || (depth >= self.opts.depth as usize && self.count_stopped))
    }

    fn entered(&mut self, held: &mut Held, node: &At, (seq, shown_name): Self::Sub, depth: usize) -> Option<At> {
        // A node only where the subdirectory's entries are candidates.
        if depth >= self.opts.depth as usize {
            return Some(None);
        }
        let parent = node.expect("within depth");
        let plen = self.nodes[parent as usize].len;
        let len = plen + usize::from(plen > 0) + shown_name.len();
        if !held.hold(shown_name.len() + std::mem::size_of::<Node>()) {
            return None;
        }
        self.nodes.push(Node { parent: Some(parent), name: shown_name, len, seq });
        Some(Some((self.nodes.len() - 1) as u32))
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
    list_files_measured(ws, opts, cancel).map(|(out, _)| out)
}

/// [`list_files`], with what the walk held.
pub fn list_files_measured(ws: &Workspace, opts: &ListOptions, cancel: &Cancel) -> Result<(ListOutput, ListStats)> {
    check_range("depth", opts.depth, MAX_DEPTH)?;
    check_range("limit", opts.limit, MAX_LIMIT)?;
    cancel.check()?;
    ws.check()?;
    let shown_path = opts.path.as_ref().map_or(".".to_string(), |p| crate::error::shown_name(p.as_str()).into_owned());
    let dir = match walk::open_start(ws, opts.path.as_ref())? {
        Start::Dir(d) => d,
        Start::NotDir(kind) => {
            // A single file (or other non-directory) lists as itself.
            return Ok((
                ListOutput {
                    entries: vec![entry_text(&shown_path, kind, None)],
                    path: shown_path,
                    truncated: false,
                    not_shown: 0,
                    note: Some("this path is not a directory; it is listed as itself".into()),
                },
                ListStats::default(),
            ));
        }
    };
    let start_name = opts.path.as_ref().map_or_else(String::new, |p| crate::error::shown_name(p.as_str()).into_owned());
    let start_len = start_name.len();
    let mut w = Lister {
        opts,
        cancel,
        nodes: vec![Node { parent: None, name: start_name.into_boxed_str(), len: start_len, seq: 0 }],
        best: Best::All(Vec::new()),
        best_cost: 0,
        offered: 0,
        visited: 0,
        counted: 0,
        seq: 0,
        stopped: false,
        count_stopped: false,
        beyond_depth: 0,
    };
    let mut walker = Walker::new(ws, opts.path.as_ref(), opts.gitignore, Order::EntriesFirst);
    let rel = opts.path.as_ref().map_or_else(PathBuf::new, |p| PathBuf::from(p.as_str()));
    walker.run(&mut w, dir, &rel, Some(0))?;
    cancel.check()?;
    ws.check()?;

    // Shallowest first until the byte cap, then back to tree order.
    let best = match std::mem::replace(&mut w.best, Best::All(Vec::new())) {
        // All of them fit: none is cut below, so their order does not matter.
        Best::All(all) => all,
        Best::Heap(heap) => heap.into_sorted_vec(),
    };
    let mut bytes = 0usize;
    let mut chosen = Vec::with_capacity(best.len());
    for c in &best {
        if bytes + c.cost > MAX_LIST_OUTPUT_BYTES {
            break;
        }
        bytes += c.cost;
        chosen.push(w.shown_entry(c));
    }
    // Keys are distinct (visit numbers are), so an unstable sort gives the one tree order.
    chosen.sort_unstable_by(|a, b| a.0.as_slice().cmp(b.0.as_slice()));
    let shown = chosen.len() as u64;
    let entries: Vec<String> = chosen.into_iter().map(|(_, text)| text).collect();

    let within = w.offered.min(u64::from(opts.limit));
    let beyond_limit = w.offered - within;
    let beyond_bytes = within - shown;
    let not_shown = beyond_limit + beyond_bytes + w.beyond_depth;
    let partial = w.stopped || w.count_stopped || walker.held.cut;
    let mut notes = Vec::new();
    if not_shown > 0 || partial {
        let at_least = if partial { "at least " } else { "" };
        let mut parts = Vec::new();
        if beyond_limit > 0 {
            parts.push(format!("{} beyond the limit of {}", thousands(beyond_limit), opts.limit));
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
    } else if walker.held.cut {
        notes.push(format!(
            "the walk stopped: it held more than {} bytes of names; list a subdirectory with path",
            thousands(walk::MAX_WALK_HELD_BYTES as u64)
        ));
    } else if w.count_stopped {
        notes.push(format!("counting stopped after {} deeper entries", thousands(MAX_COUNTED as u64)));
    }
    if walker.too_deep > 0 {
        notes.push(format!(
            "{} directories nested deeper than {} levels were not entered",
            walker.too_deep,
            walk::MAX_WALK_DEPTH
        ));
    }
    if !walker.crowded.is_empty() {
        notes.push(format!(
            "directories with more than {} entries were cut: {}",
            thousands(walk::MAX_DIR_ENTRIES as u64),
            walker.crowded.join(", ")
        ));
    }
    if !walker.unreadable.is_empty() {
        let shown: Vec<String> = walker.unreadable.iter().map(|(path, errno)| format!("{path} ({errno})")).collect();
        notes.push(format!("could not read: {}", shown.join(", ")));
    }
    notes.extend(walker.ignore_files.notes());
    let truncated = not_shown > 0 || partial || walker.too_deep > 0 || !walker.crowded.is_empty();
    let stats = ListStats {
        peak_held_bytes: walker.held.peak,
        ignore_files_parsed: walker.ignore_files.parsed,
        ignore_bytes_parsed: walker.ignore_files.parsed_bytes,
    };
    Ok((
        ListOutput {
            path: shown_path,
            entries,
            truncated,
            not_shown,
            note: (!notes.is_empty()).then(|| notes.join("; ")),
        },
        stats,
    ))
}
