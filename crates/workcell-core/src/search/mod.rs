//! `search_files`: a regex search over the files beneath a directory, with ripgrep's crates.
//!
//! The walk is [`crate::walk::Walker`], depth first (descriptors only, `O_NOFOLLOW`,
//! `.gitignore` honoured, symlinks never followed, FIFOs and devices never opened); `tree.rs`
//! keeps its files. The rest, one file per concern: `pattern.rs` (the pattern and the glob),
//! `file.rs` (searching one file), `budget.rs` (what stops a search), `merge.rs` (results
//! into tree order), `workers.rs` (the searching threads). Each regular file is opened
//! beneath its directory's descriptor with `O_NOFOLLOW | O_NONBLOCK`, checked with `fstat`, and
//! searched with `grep-searcher` (line by line, binary files skipped: a NUL byte anywhere makes
//! the file's matches disappear). Files are searched in parallel, but matches are reported in
//! tree order (depth-first, names sorted bytewise), so a result cut by the limit is always the
//! first `limit` matches in that order. Paths in matches and notes have control characters
//! escaped ([`crate::error::shown_name`]).
//!
//! Bounds, whatever the tree and the pattern:
//! - at most `limit` matches (max [`MAX_LIMIT`]), each line cut at [`MAX_LINE_CHARS`]
//!   characters, at most [`MAX_OUTPUT_BYTES`] of match text;
//! - memory: at most [`WINDOW`] files are handed out ahead of the first one not yet finished
//!   (the walk waits for it), and each file keeps only the lines that can still fit the output
//!   (the remaining count and bytes when it is searched), so what waits to be merged in tree
//!   order is at most `WINDOW` times ([`MAX_OUTPUT_BYTES`] + one line); a line longer than
//!   [`MAX_LINE_BYTES`] skips its file (the searcher's buffer never grows past it);
//! - work: at most [`MAX_SEARCH_BYTES`] read across all files and [`SEARCH_DEADLINE`] of wall
//!   time; past either the search stops, `truncated` is true and the note says which; the
//!   compiled pattern is at most [`REGEX_SIZE_LIMIT`] bytes (its lazy DFA cache
//!   [`DFA_SIZE_LIMIT`]), which bounds both the compile and the work per byte searched;
//! - time to settle: cancellation, the deadline and the budgets are checked before every file
//!   and every read; the call returns within [`POLL`] of one of them even while a worker is
//!   still inside one buffer's match (at most [`MAX_LINE_BYTES`] with the bounded pattern),
//!   which it abandons at its next read.
//!
//! `check_arguments` (what `validate` calls, on the caller's thread) only parses the pattern
//! and the glob, which is linear in their length; compiling happens in the search itself.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::path::RelPath;
use crate::root::Workspace;
use crate::walk::{self, Kind, Order, Start, Walker};

mod budget;
mod file;
mod merge;
mod pattern;
mod tree;
mod workers;

use budget::Limits;
pub use file::cut_line;
pub use pattern::{check_arguments, compile};
use pattern::compile_glob;
use workers::{Item, Shared, Source};

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;
/// A matching line is cut after this many characters (and `…` appended).
pub const MAX_LINE_CHARS: usize = 500;
/// Most bytes of match text returned.
pub const MAX_OUTPUT_BYTES: usize = 65_536;
/// Longest pattern or glob accepted, in UTF-8 bytes.
pub const MAX_PATTERN_BYTES: usize = 4_096;
/// Longest line searched; a file with a longer line is skipped (and reported).
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// Most bytes of compiled pattern (the regex's NFA); a pattern needing more is refused.
pub const REGEX_SIZE_LIMIT: usize = 4 << 20;
/// Most bytes of the lazy DFA's cache, per searching thread.
pub const DFA_SIZE_LIMIT: usize = 2 << 20;
/// Most bytes read across all files of one search.
pub const MAX_SEARCH_BYTES: u64 = 512 << 20;
/// Longest one search runs.
pub const SEARCH_DEADLINE: Duration = Duration::from_secs(20);
/// Files handed out ahead of the first unfinished one.
pub const WINDOW: u64 = 256;
/// How often waiting threads look at cancellation and the deadline.
pub const POLL: Duration = Duration::from_millis(20);
/// Deepest nesting of groups and repetitions accepted in a pattern.

#[derive(Clone, Debug)]
pub struct SearchOptions {
    pub pattern: String,
    pub path: Option<RelPath>,
    pub glob: Option<String>,
    pub ignore_case: bool,
    pub literal: bool,
    pub limit: u32,
    pub gitignore: bool,
    /// Worker threads; 0 picks the number of CPUs (at most 8).
    pub threads: usize,
    /// Most bytes read across files ([`MAX_SEARCH_BYTES`] by default).
    pub max_read_bytes: u64,
    /// Longest the search runs ([`SEARCH_DEADLINE`] by default).
    pub deadline: Duration,
}

impl SearchOptions {
    pub fn new(pattern: impl Into<String>) -> Self {
        SearchOptions {
            pattern: pattern.into(),
            path: None,
            glob: None,
            ignore_case: false,
            literal: false,
            limit: DEFAULT_LIMIT,
            gitignore: true,
            threads: 0,
            max_read_bytes: MAX_SEARCH_BYTES,
            deadline: SEARCH_DEADLINE,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SearchFilesOutput")]
pub struct SearchOutput {
    /// `path:line: text`, in tree order.
    pub matches: Vec<String>,
    /// True when matches were left out (limit, output cap, or the search stopped early).
    pub truncated: bool,
    /// Files searched (binary ones included).
    pub files_searched: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn check_limit(limit: u32) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::invalid(
            Reason::InvalidArgumentsShape,
            format!("limit must be an integer from 1 to {MAX_LIMIT}"),
        )
        .with_details(serde_json::json!({ "at": "arguments.limit" })));
    }
    Ok(())
}

/// Measurements of one search, for tests and the bench.
#[derive(Clone, Debug, Default)]
pub struct SearchStats {
    /// Most bytes of match lines kept at once while waiting to be merged in tree order.
    pub peak_held_bytes: usize,
    /// Most bytes of directory entry names the walk kept at once.
    pub peak_held_names: usize,
    /// Distinct `.gitignore` files parsed, and their bytes.
    pub ignore_files_parsed: usize,
    pub ignore_bytes_parsed: usize,
    /// Bytes read from files.
    pub bytes_read: u64,
}

/// Searches the files beneath `opts.path` (the root when `None`; a file searches that file).
/// A watched call's progress counts the files handed to the searchers.
pub fn search_files(ws: &Workspace, opts: &SearchOptions, cancel: &Cancel) -> Result<SearchOutput> {
    let progress = cancel.progress();
    if !progress.is_watched() {
        return search_files_observed(ws, opts, cancel, &|_, _| {});
    }
    search_files_observed(ws, opts, cancel, &|index, _| {
        let n = index + 1;
        progress.count(n, None, || format!("{n} file{} searched", if n == 1 { "" } else { "s" }));
    })
}

/// [`search_files`], calling `on_file(index, path)` on the walking thread as each file is
/// handed to the searchers (in tree order), for progress reports.
pub fn search_files_observed(
    ws: &Workspace,
    opts: &SearchOptions,
    cancel: &Cancel,
    on_file: &(dyn Fn(u64, &str) + Sync),
) -> Result<SearchOutput> {
    search_files_measured(ws, opts, cancel, on_file).map(|(out, _)| out)
}

/// [`search_files_observed`], with what the search held and read.
pub fn search_files_measured(
    ws: &Workspace,
    opts: &SearchOptions,
    cancel: &Cancel,
    on_file: &(dyn Fn(u64, &str) + Sync),
) -> Result<(SearchOutput, SearchStats)> {
    check_limit(opts.limit)?;
    let matcher = compile(&opts.pattern, opts.ignore_case, opts.literal)?;
    let glob = opts.glob.as_deref().map(compile_glob).transpose()?;
    cancel.check()?;
    ws.check()?;
    let limit = opts.limit as usize;
    let shared = Arc::new(Shared::new(matcher, Limits::new(cancel, opts), limit));
    let spawn = |n: usize| -> Result<()> {
        for _ in 0..n {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("workcell-search".into())
                .spawn(move || shared.worker())
                .map_err(|e| Error::from_io(&e, "."))?;
        }
        Ok(())
    };
    let mut notes = Vec::new();
    let mut stats = SearchStats::default();
    let mut names_cut = false;

    let total = match walk::open_start(ws, opts.path.as_ref())? {
        Start::NotDir(Kind::File) => {
            // One named file: opened beneath the root (inside symlinks followed), without blocking.
            let path = opts.path.as_ref().expect("a file start has a path");
            let (file, _, size) = crate::read::open_regular(ws, path)?;
            let rel = crate::error::shown_name(path.as_str()).into_owned();
            shared.queue(vec![Item { index: 0, source: Source::Opened(file.into_std(), size), rel }]);
            spawn(1)?;
            1
        }
        Start::NotDir(kind) => {
            let path = opts.path.as_ref().map_or(".", |p| p.as_str());
            return Err(Error::not_regular(path, kind.describe()).with_hint(
                "search_files searches a directory or a regular file; pass a directory such as src, or omit path",
            ));
        }
        Start::Dir(dir) => {
            let threads = if opts.threads > 0 {
                opts.threads
            } else {
                std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
            };
            spawn(threads)?;
            let mut walker = Walker::new(ws, opts.path.as_ref(), opts.gitignore, Order::DepthFirst);
            let rel = opts.path.as_ref().map_or_else(PathBuf::new, |p| PathBuf::from(p.as_str()));
            let mut files = tree::Files::new(&shared, on_file, glob);
            walker.run(&mut files, dir, &rel, ())?;
            files.flush();
            if walker.too_deep > 0 {
                notes.push(format!(
                    "{} directories nested deeper than {} levels were not searched",
                    walker.too_deep,
                    walk::MAX_WALK_DEPTH
                ));
            }
            if !walker.crowded.is_empty() {
                notes.push(format!(
                    "directories with more than {} entries were only partly searched: {}",
                    walk::MAX_DIR_ENTRIES,
                    walker.crowded.join(", ")
                ));
            }
            if !walker.unreadable.is_empty() {
                let shown: Vec<String> = walker.unreadable.iter().map(|(path, errno)| format!("{path}/ ({errno})")).collect();
                notes.push(format!("directories that could not be read: {}", shown.join(", ")));
            }
            if walker.held.cut {
                names_cut = true;
                notes.push(format!(
                    "the walk stopped: the directories being walked held more than {} bytes of names; search a subdirectory with path",
                    walk::MAX_WALK_HELD_BYTES
                ));
            }
            notes.extend(walker.ignore_files.notes());
            stats.peak_held_names = walker.held.peak;
            stats.ignore_files_parsed = walker.ignore_files.parsed;
            stats.ignore_bytes_parsed = walker.ignore_files.parsed_bytes;
            files.next_index
        }
    };
    let c = shared.finish(total);
    cancel.check()?;
    ws.check()?;
    stats.peak_held_bytes = shared.held.peak.load(Ordering::Relaxed);
    stats.bytes_read = shared.limits.read.load(Ordering::Relaxed);

    let out_of_time = shared.limits.out_of_time.load(Ordering::Relaxed);
    let out_of_bytes = shared.limits.out_of_bytes.load(Ordering::Relaxed);
    // Stopped by a budget before every file handed out was merged.
    let cut_short = !c.over_limit && !c.over_bytes && (c.stopped_short || c.next < total);
    let mut head = Vec::new();
    if c.over_limit {
        head.push(format!(
            "showing the first {} matches; more exist: narrow the pattern, path or glob, or raise limit (max {MAX_LIMIT})",
            c.matches.len()
        ));
    }
    if c.over_bytes {
        head.push(format!(
            "showing the first {} matches ({MAX_OUTPUT_BYTES} byte output cap); more exist: narrow the pattern, path or glob",
            c.matches.len()
        ));
    }
    if cut_short || ((out_of_time || out_of_bytes) && !c.over_limit && !c.over_bytes) {
        let why = if out_of_bytes {
            format!("it had read {} bytes, its budget per call", opts.max_read_bytes)
        } else {
            format!("it reached its deadline of {} s", opts.deadline.as_secs_f64())
        };
        head.push(format!(
            "the search stopped early because {why}: the {} matches shown are those of the first {} files in tree order, later files were not searched; narrow path or glob",
            c.matches.len(),
            c.next,
        ));
    }
    if c.binary > 0 {
        notes.push(format!("{} binary files skipped", c.binary));
    }
    if c.unreadable > 0 {
        notes.push(format!("{} files could not be read: {}", c.unreadable, c.unreadable_examples.join(", ")));
    }
    if !c.too_long.is_empty() {
        notes.push(format!(
            "files with a line longer than {} bytes were skipped: {}",
            MAX_LINE_BYTES,
            c.too_long.join(", ")
        ));
    }
    head.extend(notes);
    let stopped = cut_short || out_of_time || out_of_bytes;
    Ok((
        SearchOutput {
            truncated: c.over_limit || c.over_bytes || stopped || names_cut,
            matches: c.matches,
            files_searched: c.files_searched,
            note: (!head.is_empty()).then(|| head.join("; ")),
        },
        stats,
    ))
}
