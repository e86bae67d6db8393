//! `search_files`: a regex search over the files beneath a directory, with ripgrep's crates.
//!
//! The walk is [`crate::walk`]'s (descriptors only, `O_NOFOLLOW`, `.gitignore` honoured,
//! symlinks never followed, FIFOs and devices never opened). Each regular file is opened
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

use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::path::RelPath;
use crate::root::Workspace;
use crate::walk::{self, DirHandle, IgnoreFiles, IgnoreStack, Kind, Start};

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
const NEST_LIMIT: u32 = 64;

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
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
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

fn bad_argument(at: &str, hint: String, error: &str) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint)
        .with_details(serde_json::json!({ "at": format!("arguments.{at}"), "error": error }))
}

fn pattern_too_long() -> Error {
    bad_argument(
        "pattern",
        format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes; search for a shorter, more specific pattern"),
        "too long",
    )
}

fn bad_pattern(msg: &str) -> Error {
    bad_argument(
        "pattern",
        format!(
            "the pattern is not a valid regular expression (Rust regex syntax): {msg}; fix it, or pass literal: true to search for the text as written"
        ),
        msg,
    )
}

/// Compiles the pattern. A pattern that does not compile is `TOOL_ARGUMENTS_INVALID` whose
/// hint carries the parser's message; one whose compiled form passes [`REGEX_SIZE_LIMIT`]
/// (`[\p{L}]{1000}`, `(\w{1,100}){1,100}`) is refused the same way, with the work to refuse it
/// bounded by that limit.
pub fn compile(pattern: &str, ignore_case: bool, literal: bool) -> Result<RegexMatcher> {
    compile_with_limit(pattern, ignore_case, literal, REGEX_SIZE_LIMIT)
}

fn compile_with_limit(pattern: &str, ignore_case: bool, literal: bool, size_limit: usize) -> Result<RegexMatcher> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(pattern_too_long());
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .nest_limit(NEST_LIMIT)
        .size_limit(size_limit)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            let msg = e.to_string();
            if msg.contains("size limit") {
                bad_argument(
                    "pattern",
                    format!(
                        "the pattern compiles to more than {size_limit} bytes (large counted repetitions such as {{1000}} of a class or \\w multiply its size): {msg}; use a smaller repetition count, an ASCII class such as [a-zA-Z], or literal: true"
                    ),
                    &msg,
                )
            } else {
                bad_pattern(&msg)
            }
        })
}

/// Checks the shape of the arguments without compiling anything: the lengths, the pattern's
/// syntax (a parse, linear in its length) and the glob's. Cheap enough for the caller's
/// thread; what only the compile finds (a pattern too large once compiled, an unknown Unicode
/// class) comes back from the search itself, with the same code.
pub fn check_arguments(pattern: &str, glob: Option<&str>, ignore_case: bool, literal: bool) -> Result<()> {
    let _ = ignore_case;
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(pattern_too_long());
    }
    if !literal {
        regex_syntax::ast::parse::ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .build()
            .parse(pattern)
            .map_err(|e| bad_pattern(&e.to_string()))?;
    }
    if let Some(glob) = glob {
        glob_builder(glob)?;
    }
    Ok(())
}

fn bad_glob(e: ignore::Error) -> Error {
    let msg = e.to_string();
    bad_argument(
        "glob",
        format!("the glob is not valid: {msg}; use a glob such as *.ts, src/**/*.rs or !*.min.js"),
        &msg,
    )
}

/// The glob parsed (not compiled).
fn glob_builder(glob: &str) -> Result<OverrideBuilder> {
    if glob.len() > MAX_PATTERN_BYTES {
        return Err(bad_argument("glob", format!("the glob is longer than {MAX_PATTERN_BYTES} bytes"), "too long"));
    }
    let mut b = OverrideBuilder::new(".");
    b.add(glob).map_err(bad_glob)?;
    Ok(b)
}

fn compile_glob(glob: &str) -> Result<Override> {
    glob_builder(glob)?.build().map_err(bad_glob)
}

/// What searching one file gave.
enum FileResult {
    /// Not searched: gone, or no longer a regular file, since the walk saw it.
    Skipped,
    /// Not (fully) searched: the search is stopping (cancelled, the deadline, the read budget).
    Stopped,
    Binary,
    Unreadable(String),
    LineTooLong,
    /// The lines kept, their bytes, and whether more matched than could still fit the output
    /// when the file was searched.
    Searched {
        lines: Vec<String>,
        bytes: usize,
        cut: bool,
    },
}

/// Bytes of match lines kept but not yet merged into the output.
#[derive(Default)]
struct Held {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl Held {
    fn add(&self, n: usize) {
        let now = self.now.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn release(&self, n: usize) {
        self.now.fetch_sub(n, Ordering::Relaxed);
    }
}

struct Collect<'a> {
    rel: &'a str,
    /// Most lines kept: the matches the output can still take.
    max_lines: usize,
    /// Most bytes kept: the output bytes still free.
    max_bytes: usize,
    lines: Vec<String>,
    bytes: usize,
    cut: bool,
    binary: bool,
    held: &'a Held,
}

/// `text` cut at [`MAX_LINE_CHARS`] characters, `…` marking a cut.
pub fn cut_line(bytes: &[u8]) -> String {
    let mut line = bytes;
    if let Some(l) = line.strip_suffix(b"\n") {
        line = l;
    }
    if let Some(l) = line.strip_suffix(b"\r") {
        line = l;
    }
    // Enough bytes for MAX_LINE_CHARS + 1 characters whatever their width.
    let head = &line[..line.len().min(4 * MAX_LINE_CHARS + 4)];
    let text = String::from_utf8_lossy(head);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> io::Result<bool> {
        for (number, line) in (m.line_number().unwrap_or(0)..).zip(m.lines()) {
            if self.lines.len() >= self.max_lines {
                self.cut = true;
                return Ok(false);
            }
            let line = format!("{}:{}: {}", self.rel, number, cut_line(line));
            if self.bytes + line.len() > self.max_bytes {
                self.cut = true;
                return Ok(false);
            }
            self.bytes += line.len();
            self.held.add(line.len());
            self.lines.push(line);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// The reader a file is searched through: fails once the search is stopping (cancelled, past
/// its deadline or its read budget), so a huge file never delays any of them; counts what it
/// reads against the budget; and ends after the size `fstat` reported, which spares the read
/// that would only confirm the end (a file that grows meanwhile is searched as it was).
struct FileRead<'a, R> {
    inner: R,
    remaining: u64,
    limits: &'a Limits,
}

impl<R: Read> Read for FileRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.limits.stopping() {
            // Not ErrorKind::Interrupted: readers retry on that, forever.
            return Err(io::Error::other("the search is stopping"));
        }
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
        self.limits.count_read(n as u64);
        Ok(n)
    }
}

/// Read size per file: small files take one read.
const READ_CHUNK: usize = 64 * 1024;

fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}

/// When a search must stop whatever it is doing: cancelled, past its deadline, past its read
/// budget, or because the output is complete.
struct Limits {
    cancel: Cancel,
    deadline: Instant,
    max_read: u64,
    read: AtomicU64,
    /// The output is complete (limit or byte cap) or a budget ran out.
    stop: AtomicBool,
    out_of_time: AtomicBool,
    out_of_bytes: AtomicBool,
}

impl Limits {
    fn new(cancel: &Cancel, opts: &SearchOptions) -> Limits {
        Limits {
            cancel: cancel.clone(),
            deadline: Instant::now() + opts.deadline,
            max_read: opts.max_read_bytes,
            read: AtomicU64::new(0),
            stop: AtomicBool::new(false),
            out_of_time: AtomicBool::new(false),
            out_of_bytes: AtomicBool::new(false),
        }
    }

    fn stopping(&self) -> bool {
        if self.stop.load(Ordering::Relaxed) || self.cancel.is_cancelled() {
            return true;
        }
        if Instant::now() >= self.deadline {
            self.out_of_time.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        if self.read.load(Ordering::Relaxed) >= self.max_read {
            self.out_of_bytes.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
            return true;
        }
        false
    }

    fn count_read(&self, n: u64) {
        self.read.fetch_add(n, Ordering::Relaxed);
    }
}

#[allow(clippy::too_many_arguments)]
fn search_reader(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: impl Read,
    size: u64,
    rel: &str,
    room: (usize, usize),
    limits: &Limits,
    held: &Held,
) -> FileResult {
    let mut sink = Collect {
        rel,
        max_lines: room.0,
        max_bytes: room.1,
        lines: Vec::new(),
        bytes: 0,
        cut: false,
        binary: false,
        held,
    };
    // Buffered so that the searcher's 3-byte BOM peek does not cost a read of its own.
    let reader = io::BufReader::with_capacity(READ_CHUNK, FileRead { inner: file, remaining: size, limits });
    let outcome = searcher.search_reader(matcher, reader, &mut sink);
    let result = match outcome {
        Ok(()) if sink.binary => FileResult::Binary,
        Ok(()) => return FileResult::Searched { lines: sink.lines, bytes: sink.bytes, cut: sink.cut },
        Err(_) if limits.stopping() => FileResult::Stopped,
        Err(e) if e.raw_os_error().is_none() && e.to_string().contains("allocation limit") => FileResult::LineTooLong,
        Err(_) if sink.binary => FileResult::Binary,
        Err(e) => FileResult::Unreadable(match e.raw_os_error() {
            Some(n) => crate::error::errno_name(n),
            None => e.to_string(),
        }),
    };
    held.release(sink.bytes);
    result
}

/// Gathers per-file results (arriving in any order) into matches in tree order.
#[derive(Default)]
struct Collector {
    limit: usize,
    next: u64,
    pending: BTreeMap<u64, (String, FileResult)>,
    matches: Vec<String>,
    bytes: usize,
    /// More matches exist than were returned.
    over_limit: bool,
    over_bytes: bool,
    /// A file before the end was not searched because the search stopped.
    stopped_short: bool,
    files_searched: u64,
    binary: u64,
    unreadable: u64,
    unreadable_examples: Vec<String>,
    too_long: Vec<String>,
}

fn held_bytes(result: &FileResult) -> usize {
    match result {
        FileResult::Searched { bytes, .. } => *bytes,
        _ => 0,
    }
}

impl Collector {
    fn done(&self) -> bool {
        self.over_limit || self.over_bytes || self.stopped_short
    }

    fn add(&mut self, index: u64, rel: String, result: FileResult, held: &Held) {
        if self.done() {
            held.release(held_bytes(&result));
            return;
        }
        self.pending.insert(index, (rel, result));
        while !self.done() {
            let Some((rel, result)) = self.pending.remove(&self.next) else {
                break;
            };
            self.next += 1;
            held.release(held_bytes(&result));
            match result {
                FileResult::Skipped => {}
                FileResult::Stopped => self.stopped_short = true,
                FileResult::Binary => {
                    self.files_searched += 1;
                    self.binary += 1;
                }
                FileResult::Unreadable(why) => {
                    self.unreadable += 1;
                    if self.unreadable_examples.len() < 5 {
                        self.unreadable_examples.push(format!("{rel} ({why})"));
                    }
                }
                FileResult::LineTooLong => {
                    if self.too_long.len() < 5 {
                        self.too_long.push(rel);
                    }
                }
                FileResult::Searched { lines, cut, .. } => {
                    self.files_searched += 1;
                    let mut all = true;
                    for line in lines {
                        if self.matches.len() >= self.limit {
                            self.over_limit = true;
                            all = false;
                            break;
                        }
                        if self.bytes + line.len() > MAX_OUTPUT_BYTES {
                            self.over_bytes = true;
                            all = false;
                            break;
                        }
                        self.bytes += line.len();
                        self.matches.push(line);
                    }
                    // The file had a line that did not fit what was left when it was searched;
                    // what is left now is no more, so it does not fit now either.
                    if all && cut {
                        if self.matches.len() >= self.limit {
                            self.over_limit = true;
                        } else {
                            self.over_bytes = true;
                        }
                    }
                }
            }
        }
        if self.done() {
            for (_, (_, r)) in std::mem::take(&mut self.pending) {
                held.release(held_bytes(&r));
            }
        }
    }
}

enum Source {
    /// A name in a directory the walk opened.
    Entry(Arc<DirHandle>, OsString),
    /// A file already opened (the one named file of a search), with its size.
    Opened(File, u64),
}

struct Item {
    index: u64,
    source: Source,
    rel: String,
}

struct State {
    queue: VecDeque<Vec<Item>>,
    /// No more items will come.
    closed: bool,
    /// Batches taken by workers and not yet reported.
    busy: usize,
    /// The caller took the results: later reports are dropped.
    finished: bool,
    collector: Collector,
}

/// What the walker and the searching threads share. The threads are not scoped: a call that
/// is cancelled or past its deadline returns while a thread may still be inside one match; the
/// thread stops at its next read and exits.
struct Shared {
    matcher: RegexMatcher,
    limits: Limits,
    held: Held,
    limit: usize,
    /// What the collector has accepted (read without the lock, to size what a file keeps).
    committed_lines: AtomicUsize,
    committed_bytes: AtomicUsize,
    state: Mutex<State>,
    /// Work was queued, or the queue closed.
    work: Condvar,
    /// The collector advanced, or a worker went idle.
    progress: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stopping(&self) -> bool {
        self.limits.stopping()
    }

    /// What a file may still keep: (lines, bytes). Both only shrink as the collector accepts
    /// lines, so a file never keeps less than the output could still take from it.
    fn room(&self) -> (usize, usize) {
        let lines = self.limit.saturating_sub(self.committed_lines.load(Ordering::Relaxed));
        let bytes = MAX_OUTPUT_BYTES.saturating_sub(self.committed_bytes.load(Ordering::Relaxed));
        (lines, bytes)
    }

    fn search_one(&self, searcher: &mut Searcher, item: Item) -> (u64, String, FileResult) {
        if self.stopping() {
            return (item.index, item.rel, FileResult::Stopped);
        }
        let (file, size) = match item.source {
            Source::Opened(file, size) => (file, size),
            Source::Entry(dir, name) => match dir.open_regular(&name) {
                Ok(Ok(opened)) => opened,
                // Swapped for something else since readdir: a FIFO, a symlink (ELOOP), gone.
                Ok(Err(_)) => return (item.index, item.rel, FileResult::Skipped),
                Err(e) if walk::is_swapped(&e) => return (item.index, item.rel, FileResult::Skipped),
                Err(e) => {
                    let why = crate::error::errno_name(e.raw_os_error().unwrap_or(libc::EIO));
                    return (item.index, item.rel, FileResult::Unreadable(why));
                }
            },
        };
        let result =
            search_reader(searcher, &self.matcher, file, size, &item.rel, self.room(), &self.limits, &self.held);
        (item.index, item.rel, result)
    }

    /// Merges results; `batch_done` when they end the batch the worker took.
    fn report(&self, results: Vec<(u64, String, FileResult)>, batch_done: bool) {
        let mut st = self.lock();
        if batch_done {
            st.busy -= 1;
        }
        for (index, rel, result) in results {
            if st.finished {
                self.held.release(held_bytes(&result));
            } else {
                st.collector.add(index, rel, result, &self.held);
            }
        }
        self.committed_lines.store(st.collector.matches.len(), Ordering::Relaxed);
        self.committed_bytes.store(st.collector.bytes, Ordering::Relaxed);
        if st.collector.over_limit || st.collector.over_bytes {
            self.limits.stop.store(true, Ordering::Relaxed);
        }
        drop(st);
        self.progress.notify_all();
    }

    fn worker(&self) {
        let mut searcher = searcher();
        loop {
            let batch = {
                let mut st = self.lock();
                loop {
                    if self.stopping() {
                        return;
                    }
                    if let Some(batch) = st.queue.pop_front() {
                        st.busy += 1;
                        break batch;
                    }
                    if st.closed {
                        return;
                    }
                    st = self.work.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
                }
            };
            let mut results = Vec::new();
            for item in batch {
                let result = self.search_one(&mut searcher, item);
                let holds = held_bytes(&result.2) > 0;
                results.push(result);
                // Lines are merged (or dropped) at once rather than held to the batch's end;
                // files without lines are merged a batch at a time (one lock).
                if holds {
                    self.report(std::mem::take(&mut results), false);
                }
            }
            self.report(results, true);
        }
    }

    /// Queues a batch for the workers.
    fn queue(&self, batch: Vec<Item>) {
        self.lock().queue.push_back(batch);
        self.work.notify_one();
    }

    /// Waits until the file `index` may be handed out: fewer than [`WINDOW`] files ahead of
    /// the first unfinished one. False when the search is stopping.
    fn wait_for_window(&self, index: u64) -> bool {
        let mut st = self.lock();
        while st.collector.next + WINDOW <= index {
            if self.stopping() || st.collector.done() {
                return false;
            }
            st = self.progress.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
        }
        true
    }

    /// Closes the queue and waits until every file handed out (`total`) is merged, the output
    /// is complete, or the search must stop; then takes the collector.
    fn finish(&self, total: u64) -> Collector {
        let mut st = self.lock();
        st.closed = true;
        self.work.notify_all();
        let mut grace: Option<Instant> = None;
        loop {
            if st.collector.done() || st.collector.next >= total || self.limits.cancel.is_cancelled() {
                break;
            }
            if self.stopping() {
                // A budget or the deadline: give the workers a moment to report what they
                // finished (they stop at their next read), never longer.
                let until = *grace.get_or_insert_with(|| Instant::now() + 5 * POLL);
                if st.busy == 0 || Instant::now() >= until {
                    break;
                }
            }
            st = self.progress.wait_timeout(st, POLL).unwrap_or_else(|p| p.into_inner()).0;
        }
        st.finished = true;
        self.limits.stop.store(true, Ordering::Relaxed);
        let c = std::mem::take(&mut st.collector);
        for (_, r) in c.pending.values() {
            self.held.release(held_bytes(r));
        }
        c
    }
}

struct Walk<'a> {
    shared: &'a Shared,
    batch: Vec<Item>,
    on_file: &'a (dyn Fn(u64, &str) + Sync),
    ignores: IgnoreStack,
    ignore_files: IgnoreFiles,
    gitignore: bool,
    glob: Option<Override>,
    next_index: u64,
    too_deep: u64,
    crowded: Vec<String>,
    unreadable_dirs: Vec<String>,
    /// Bytes of entry names of the directories being walked (each level keeps its rest).
    held_names: usize,
    peak_names: usize,
    names_cut: bool,
}

/// Files handed to a worker at a time: few wake-ups per file.
const BATCH: usize = 16;

impl Walk<'_> {
    /// Hands the pending files to the workers.
    fn flush(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
            self.shared.queue(batch);
        }
    }

    fn filtered(&self, rel: &Path, name: &std::ffi::OsStr, is_dir: bool) -> bool {
        if self.gitignore && (walk::is_git_dir(name) || self.ignores.is_ignored(rel, is_dir)) {
            return true;
        }
        self.glob.as_ref().is_some_and(|g| g.matched(rel, is_dir).is_ignore())
    }

    fn unreadable_dir(&mut self, rel: &Path, e: &io::Error) {
        if self.unreadable_dirs.len() < 5 {
            self.unreadable_dirs.push(format!(
                "{}/ ({})",
                walk::display(rel),
                crate::error::errno_name(e.raw_os_error().unwrap_or(libc::EIO))
            ));
        }
    }

    /// Adds a file; false when the walk must stop.
    fn add_file(&mut self, item: Item) -> bool {
        if item.index >= WINDOW && self.shared.lock().collector.next + WINDOW <= item.index {
            // Everything before this file must be queued before waiting for it to finish.
            self.flush();
            if !self.shared.wait_for_window(item.index) {
                return false;
            }
        }
        (self.on_file)(item.index, &item.rel);
        self.next_index += 1;
        self.batch.push(item);
        if self.batch.len() >= BATCH {
            self.flush();
        }
        true
    }

    fn walk(&mut self, dir: Arc<DirHandle>, rel: &Path, depth: usize) {
        if self.shared.stopping() || self.names_cut {
            return;
        }
        let (entries, cut) = match dir.entries() {
            Ok(e) => e,
            Err(e) => {
                self.unreadable_dir(rel, &e);
                return;
            }
        };
        if cut && self.crowded.len() < 5 {
            self.crowded.push(walk::display(rel));
        }
        let names: usize = entries.iter().map(|e| e.name.len() + std::mem::size_of::<walk::Entry>()).sum();
        if self.held_names + names > walk::MAX_WALK_HELD_BYTES {
            self.names_cut = true;
            return;
        }
        self.held_names += names;
        self.peak_names = self.peak_names.max(self.held_names);
        let layers = self.ignores.len();
        if self.gitignore {
            if let Some(gi) = self.ignore_files.read(&dir, rel) {
                self.ignores.push(rel.to_path_buf(), gi);
            }
        }
        for entry in entries {
            if self.shared.stopping() || self.names_cut {
                break;
            }
            let child = walk::join(rel, &entry.name);
            match entry.kind {
                Kind::File => {
                    if self.filtered(&child, &entry.name, false) {
                        continue;
                    }
                    let item = Item {
                        index: self.next_index,
                        source: Source::Entry(dir.clone(), entry.name),
                        rel: walk::display(&child),
                    };
                    if !self.add_file(item) {
                        break;
                    }
                }
                Kind::Dir => {
                    if self.filtered(&child, &entry.name, true) {
                        continue;
                    }
                    if depth >= walk::MAX_WALK_DEPTH {
                        self.too_deep += 1;
                        continue;
                    }
                    match dir.open_dir(&entry.name) {
                        Ok(sub) => self.walk(Arc::new(sub), &child, depth + 1),
                        Err(e) if walk::is_swapped(&e) => {}
                        Err(e) => self.unreadable_dir(&child, &e),
                    }
                }
                // Symlinks are never followed; FIFOs, sockets and devices are never opened.
                _ => {}
            }
        }
        self.held_names -= names;
        self.ignores.truncate(layers);
    }
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
    let shared = Arc::new(Shared {
        matcher,
        limits: Limits::new(cancel, opts),
        held: Held::default(),
        limit,
        committed_lines: AtomicUsize::new(0),
        committed_bytes: AtomicUsize::new(0),
        state: Mutex::new(State {
            queue: VecDeque::new(),
            closed: false,
            busy: 0,
            finished: false,
            collector: Collector { limit, ..Collector::default() },
        }),
        work: Condvar::new(),
        progress: Condvar::new(),
    });
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
            let mut ignore_files = IgnoreFiles::default();
            let ignores = if opts.gitignore {
                IgnoreStack::for_start(ws, opts.path.as_ref(), &mut ignore_files)
            } else {
                IgnoreStack::default()
            };
            let rel = opts.path.as_ref().map_or_else(PathBuf::new, |p| PathBuf::from(p.as_str()));
            let mut w = Walk {
                shared: &shared,
                batch: Vec::with_capacity(BATCH),
                on_file,
                ignores,
                ignore_files,
                gitignore: opts.gitignore,
                glob,
                next_index: 0,
                too_deep: 0,
                crowded: Vec::new(),
                unreadable_dirs: Vec::new(),
                held_names: 0,
                peak_names: 0,
                names_cut: false,
            };
            w.walk(Arc::new(dir), &rel, 1);
            w.flush();
            if w.too_deep > 0 {
                notes.push(format!(
                    "{} directories nested deeper than {} levels were not searched",
                    w.too_deep,
                    walk::MAX_WALK_DEPTH
                ));
            }
            if !w.crowded.is_empty() {
                notes.push(format!(
                    "directories with more than {} entries were only partly searched: {}",
                    walk::MAX_DIR_ENTRIES,
                    w.crowded.join(", ")
                ));
            }
            if !w.unreadable_dirs.is_empty() {
                notes.push(format!("directories that could not be read: {}", w.unreadable_dirs.join(", ")));
            }
            if w.names_cut {
                names_cut = true;
                notes.push(format!(
                    "the walk stopped: the directories being walked held more than {} bytes of names; search a subdirectory with path",
                    walk::MAX_WALK_HELD_BYTES
                ));
            }
            notes.extend(w.ignore_files.notes());
            stats.peak_held_names = w.peak_names;
            stats.ignore_files_parsed = w.ignore_files.parsed;
            stats.ignore_bytes_parsed = w.ignore_files.parsed_bytes;
            w.next_index
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

#[cfg(test)]
mod tests {
    use super::*;

    fn limits_for(cancel: &Cancel) -> Limits {
        Limits::new(cancel, &SearchOptions::new("x"))
    }

    #[test]
    fn a_file_keeps_only_what_can_still_fit_the_output() {
        // 10,000 matching lines, 40 KiB already taken: the file keeps what fits the other 24
        // KiB and says that more matched.
        let text = "needle ".repeat(10) + "\n";
        let body = text.repeat(10_000);
        let cancel = Cancel::new();
        let limits = limits_for(&cancel);
        let held = Held::default();
        let matcher = compile("needle", false, false).unwrap();
        let room = (1000, MAX_OUTPUT_BYTES - 40 * 1024);
        let r = search_reader(&mut searcher(), &matcher, body.as_bytes(), body.len() as u64, "f", room, &limits, &held);
        let FileResult::Searched { lines, bytes, cut } = r else { panic!("not searched") };
        assert!(cut);
        assert!(bytes <= room.1, "{bytes}");
        assert!(bytes + lines[0].len() > room.1);
        assert_eq!(held.now.load(Ordering::Relaxed), bytes);
        // The line count left is honoured too.
        let r = search_reader(
            &mut searcher(),
            &matcher,
            body.as_bytes(),
            body.len() as u64,
            "f",
            (3, 1 << 20),
            &limits,
            &held,
        );
        let FileResult::Searched { lines, cut, .. } = r else { panic!("not searched") };
        assert_eq!((lines.len(), cut), (3, true));
    }

    #[test]
    fn the_collector_cuts_as_if_it_had_every_line() {
        // A file cut by bytes and merged later still yields exactly the old answer.
        let held = Held::default();
        let mut c = Collector { limit: 5, ..Collector::default() };
        let lines = |n: usize| (0..n).map(|i| format!("f:{i}: x")).collect::<Vec<_>>();
        c.add(1, "b".into(), FileResult::Searched { lines: lines(2), bytes: 0, cut: true }, &held);
        assert!(c.matches.is_empty(), "merged out of order");
        c.add(0, "a".into(), FileResult::Searched { lines: lines(3), bytes: 0, cut: false }, &held);
        assert_eq!(c.matches.len(), 5);
        assert!(c.over_limit);
        let mut c = Collector { limit: 100, ..Collector::default() };
        c.add(0, "a".into(), FileResult::Searched { lines: lines(2), bytes: 0, cut: true }, &held);
        assert_eq!(c.matches.len(), 2);
        assert!(c.over_bytes && !c.over_limit);
        // A file not searched because the search stopped ends the merge there.
        let mut c = Collector { limit: 100, ..Collector::default() };
        c.add(1, "b".into(), FileResult::Searched { lines: lines(1), bytes: 0, cut: false }, &held);
        c.add(0, "a".into(), FileResult::Stopped, &held);
        assert!(c.stopped_short);
        assert!(c.matches.is_empty());
    }

    #[test]
    fn huge_patterns_are_refused_by_the_compile_size_limit() {
        // Each of these compiled under the former 16 MiB limit (or spent up to it before being
        // refused); the limit bounds the work a compile may do.
        for p in [r"[\p{L}]{1000}", r"(\w{1,100}){1,100}", r"\w{5000}", r"(?i)[\p{L}\p{N}]{300}"] {
            let err = compile(p, false, false).unwrap_err();
            assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"), "{p}");
            let hint = err.hint.clone().unwrap();
            assert!(hint.contains("compiles to more than 4194304 bytes"), "{p}: {hint}");
            assert!(hint.contains("literal: true"), "{p}");
        }
        // One of them fitted the old limit: the new one is what refuses it.
        assert!(compile_with_limit(r"\w{200}", false, false, 16 << 20).is_ok());
        assert!(compile(r"\w{200}", false, false).is_err());
        // Ordinary patterns are fine.
        for p in [r"fn\s+\w+\(", r"(?i)todo|fixme", r"\bimport\s+.*from\s+['\x22]", r"[\p{L}]{20}", r"\w{30}"] {
            compile(p, false, false).unwrap_or_else(|e| panic!("{p}: {e:?}"));
        }
    }

    #[test]
    fn validation_parses_without_compiling() {
        // Syntax errors are found by the parse, with the parser's message...
        let err = check_arguments("foo(bar", None, false, false).unwrap_err();
        assert!(err.hint.unwrap().contains("unclosed group"));
        assert!(check_arguments("x", Some("a{b"), false, false).is_err());
        // ...while a pattern too large to compile passes the cheap check and is refused by the
        // search (the compile is off the caller's thread).
        check_arguments(r"[\p{L}]{1000}", Some("*.rs"), false, false).unwrap();
        let deep = "(".repeat(200) + &")".repeat(200);
        assert!(check_arguments(&deep, None, false, false).is_err(), "nesting is bounded");
        assert!(check_arguments(&"x".repeat(MAX_PATTERN_BYTES + 1), None, false, false).is_err());
    }

    /// Endless text that cancels the call during its first read.
    struct CancelsWhileRead<'a> {
        cancel: &'a Cancel,
        reads: usize,
    }

    impl Read for CancelsWhileRead<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            assert!(self.reads < 100, "the search kept reading after the cancellation");
            self.cancel.cancel();
            for chunk in buf.chunks_mut(5) {
                chunk.copy_from_slice(&b"line\n"[..chunk.len()]);
            }
            Ok(buf.len())
        }
    }

    #[test]
    fn a_cancellation_during_a_read_stops_the_file() {
        let cancel = Cancel::new();
        let matcher = compile("never", false, false).unwrap();
        let mut reader = CancelsWhileRead { cancel: &cancel, reads: 0 };
        let limits = limits_for(&cancel);
        let result =
            search_reader(&mut searcher(), &matcher, &mut reader, u64::MAX, "f", (10, 1000), &limits, &Held::default());
        assert!(matches!(result, FileResult::Stopped));
        assert_eq!(reader.reads, 1);
    }

    #[test]
    fn a_cancellation_before_the_first_read_never_spins() {
        // Readers retry on ErrorKind::Interrupted; a cancelled read must not look like one.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let cancel = Cancel::new();
            cancel.cancel();
            let matcher = compile("never", false, false).unwrap();
            let limits = limits_for(&cancel);
            let result =
                search_reader(&mut searcher(), &matcher, &b"line\n"[..], 5, "f", (10, 1000), &limits, &Held::default());
            let _ = tx.send(matches!(result, FileResult::Stopped));
        });
        let skipped =
            rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the search spun after a cancellation");
        assert!(skipped);
    }

    #[test]
    fn the_reader_stops_at_the_reported_size() {
        let cancel = Cancel::new();
        let limits = limits_for(&cancel);
        let mut r = FileRead { inner: &b"abcdef"[..], remaining: 4, limits: &limits };
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
    }

    #[test]
    fn lines_are_cut_at_500_characters() {
        assert_eq!(cut_line(b"abc\r\n"), "abc");
        let exact = "é".repeat(MAX_LINE_CHARS);
        assert_eq!(cut_line(exact.as_bytes()), exact);
        let long = "é".repeat(MAX_LINE_CHARS + 1);
        assert_eq!(cut_line(long.as_bytes()), format!("{}…", "é".repeat(MAX_LINE_CHARS)));
        // Invalid UTF-8 becomes U+FFFD.
        assert_eq!(cut_line(b"a\xffb\n"), "a\u{fffd}b");
    }
}
