//! `search_files`: a regex search over the files beneath a directory, with ripgrep's crates.
//!
//! The walk is [`crate::walk`]'s (descriptors only, `O_NOFOLLOW`, `.gitignore` honoured,
//! symlinks never followed, FIFOs and devices never opened). Each regular file is opened
//! beneath its directory's descriptor with `O_NOFOLLOW | O_NONBLOCK`, checked with `fstat`, and
//! searched with `grep-searcher` (line by line, binary files skipped: a NUL byte anywhere makes
//! the file's matches disappear). Files are searched in parallel, but matches are reported in
//! tree order (depth-first, names sorted bytewise), so a result cut by the limit is always the
//! first `limit` matches in that order.
//!
//! Bounds: at most `limit` matches (max [`MAX_LIMIT`]), each line cut at [`MAX_LINE_CHARS`]
//! characters, at most [`MAX_OUTPUT_BYTES`] of match text, a line longer than
//! [`MAX_LINE_BYTES`] skips its file. Cancellation is checked between files and during every
//! read.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use ignore::overrides::{Override, OverrideBuilder};

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::path::RelPath;
use crate::root::Workspace;
use crate::walk::{self, DirHandle, IgnoreStack, Kind, Start};

pub const DEFAULT_LIMIT: u32 = 100;
pub const MAX_LIMIT: u32 = 1_000;
/// A matching line is cut after this many characters (and `…` appended).
pub const MAX_LINE_CHARS: usize = 500;
/// Most bytes of match text returned.
pub const MAX_OUTPUT_BYTES: usize = 65_536;
/// Longest pattern or glob accepted, in UTF-8 bytes.
pub const MAX_PATTERN_BYTES: usize = 4_096;
/// Longest line searched; a file with a longer line is skipped (and reported).
pub const MAX_LINE_BYTES: usize = 16 << 20;
/// Limits on the compiled regex (bytes).
const REGEX_SIZE_LIMIT: usize = 16 << 20;

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
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SearchOutput {
    /// `path:line: text`, in tree order.
    pub matches: Vec<String>,
    /// True when matches were left out (limit or output cap).
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

/// Compiles the pattern. A pattern that does not compile is `TOOL_ARGUMENTS_INVALID` whose
/// hint carries the parser's message.
pub fn compile(pattern: &str, ignore_case: bool, literal: bool) -> Result<RegexMatcher> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(bad_argument(
            "pattern",
            format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes; search for a shorter, more specific pattern"),
            "too long",
        ));
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            let msg = e.to_string();
            bad_argument(
                "pattern",
                format!(
                    "the pattern is not a valid regular expression (Rust regex syntax): {msg}; fix it, or pass literal: true to search for the text as written"
                ),
                &msg,
            )
        })
}

/// Checks that the pattern and the glob compile, without searching anything.
pub fn check_arguments(pattern: &str, glob: Option<&str>, ignore_case: bool, literal: bool) -> Result<()> {
    compile(pattern, ignore_case, literal)?;
    glob.map(compile_glob).transpose()?;
    Ok(())
}

fn compile_glob(glob: &str) -> Result<Override> {
    if glob.len() > MAX_PATTERN_BYTES {
        return Err(bad_argument("glob", format!("the glob is longer than {MAX_PATTERN_BYTES} bytes"), "too long"));
    }
    let mut b = OverrideBuilder::new(".");
    let bad = |e: ignore::Error| {
        let msg = e.to_string();
        bad_argument(
            "glob",
            format!("the glob is not valid: {msg}; use a glob such as *.ts, src/**/*.rs or !*.min.js"),
            &msg,
        )
    };
    b.add(glob).map_err(bad)?;
    b.build().map_err(bad)
}

/// What searching one file gave.
enum FileResult {
    /// Not searched (stopping, or no longer a regular file).
    Skipped,
    Binary,
    Unreadable(String),
    LineTooLong,
    Searched(Vec<String>),
}

struct Collect<'a> {
    rel: &'a str,
    cap: usize,
    lines: Vec<String>,
    binary: bool,
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
            self.lines.push(format!("{}:{}: {}", self.rel, number, cut_line(line)));
            if self.lines.len() >= self.cap {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// The reader a file is searched through: fails once the call is cancelled (so a huge file
/// never delays cancellation), and ends after the size `fstat` reported, which spares the
/// read that would only confirm the end (a file that grows meanwhile is searched as it was).
struct FileRead<'a, R> {
    inner: R,
    remaining: u64,
    cancel: &'a Cancel,
}

impl<R: Read> Read for FileRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            // Not ErrorKind::Interrupted: readers retry on that, forever.
            return Err(io::Error::other("the search was cancelled"));
        }
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
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

fn search_reader(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: impl Read,
    size: u64,
    rel: &str,
    cap: usize,
    cancel: &Cancel,
) -> FileResult {
    let mut sink = Collect { rel, cap, lines: Vec::new(), binary: false };
    // Buffered so that the searcher's 3-byte BOM peek does not cost a read of its own.
    let reader = io::BufReader::with_capacity(READ_CHUNK, FileRead { inner: file, remaining: size, cancel });
    match searcher.search_reader(matcher, reader, &mut sink) {
        Ok(()) if sink.binary => FileResult::Binary,
        Ok(()) => FileResult::Searched(sink.lines),
        Err(_) if cancel.is_cancelled() => FileResult::Skipped,
        Err(e) if e.raw_os_error().is_none() && e.to_string().contains("allocation limit") => FileResult::LineTooLong,
        Err(e) if sink.binary => {
            let _ = e;
            FileResult::Binary
        }
        Err(e) => FileResult::Unreadable(match e.raw_os_error() {
            Some(n) => crate::error::errno_name(n),
            None => e.to_string(),
        }),
    }
}

/// Gathers per-file results (arriving in any order) into matches in tree order.
struct Collector {
    limit: usize,
    next: u64,
    pending: BTreeMap<u64, (String, FileResult)>,
    matches: Vec<String>,
    bytes: usize,
    /// More matches exist than were returned.
    over_limit: bool,
    over_bytes: bool,
    files_searched: u64,
    binary: u64,
    unreadable: u64,
    unreadable_examples: Vec<String>,
    too_long: Vec<String>,
}

impl Collector {
    fn done(&self) -> bool {
        self.over_limit || self.over_bytes
    }

    fn add(&mut self, index: u64, rel: &str, result: FileResult) {
        self.pending.insert(index, (rel.to_string(), result));
        while !self.done() {
            let Some((rel, result)) = self.pending.remove(&self.next) else { break };
            self.next += 1;
            match result {
                FileResult::Skipped => {}
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
                FileResult::Searched(lines) => {
                    self.files_searched += 1;
                    for line in lines {
                        if self.matches.len() >= self.limit {
                            self.over_limit = true;
                            break;
                        }
                        if self.bytes + line.len() > MAX_OUTPUT_BYTES {
                            self.over_bytes = true;
                            break;
                        }
                        self.bytes += line.len();
                        self.matches.push(line);
                    }
                }
            }
        }
    }
}

struct Item {
    index: u64,
    dir: Arc<DirHandle>,
    name: OsString,
    rel: String,
}

struct Shared<'a> {
    matcher: &'a RegexMatcher,
    cancel: &'a Cancel,
    stop: AtomicBool,
    collector: Mutex<Collector>,
    cap: usize,
}

impl Shared<'_> {
    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed) || self.cancel.is_cancelled()
    }

    fn report(&self, index: u64, rel: &str, result: FileResult) {
        let mut c = self.collector.lock().unwrap_or_else(|p| p.into_inner());
        c.add(index, rel, result);
        if c.done() {
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    fn search_one(&self, searcher: &mut Searcher, item: &Item) -> FileResult {
        if self.stopping() {
            return FileResult::Skipped;
        }
        match item.dir.open_regular(&item.name) {
            Ok(Ok((file, size))) => search_reader(searcher, self.matcher, file, size, &item.rel, self.cap, self.cancel),
            // Swapped for something else since readdir: a FIFO, a symlink (ELOOP), gone.
            Ok(Err(_)) => FileResult::Skipped,
            Err(e) if walk::is_swapped(&e) => FileResult::Skipped,
            Err(e) => FileResult::Unreadable(crate::error::errno_name(e.raw_os_error().unwrap_or(libc::EIO))),
        }
    }

    fn worker(&self, rx: &Mutex<mpsc::Receiver<Vec<Item>>>) {
        let mut searcher = searcher();
        let mut results = Vec::new();
        loop {
            let batch = {
                let rx = rx.lock().unwrap_or_else(|p| p.into_inner());
                match rx.recv() {
                    Ok(batch) => batch,
                    Err(_) => return,
                }
            };
            for item in batch {
                let result = self.search_one(&mut searcher, &item);
                results.push((item.index, item.rel, result));
            }
            // One lock per batch.
            let mut c = self.collector.lock().unwrap_or_else(|p| p.into_inner());
            for (index, rel, result) in results.drain(..) {
                c.add(index, &rel, result);
            }
            if c.done() {
                self.stop.store(true, Ordering::Relaxed);
            }
        }
    }
}

struct Walk<'a, 'b> {
    shared: &'a Shared<'b>,
    tx: mpsc::SyncSender<Vec<Item>>,
    batch: Vec<Item>,
    on_file: &'a (dyn Fn(u64, &str) + Sync),
    ignores: IgnoreStack,
    gitignore: bool,
    glob: Option<Override>,
    next_index: u64,
    too_deep: u64,
    crowded: Vec<String>,
    unreadable_dirs: Vec<String>,
}

/// Files handed to a worker at a time, and batches queued: few wake-ups per file, and a
/// bounded number of directory descriptors kept alive by queued files.
const BATCH: usize = 32;
const QUEUED_BATCHES: usize = 4;

impl Walk<'_, '_> {
    /// Hands the pending files to the workers; false when they are gone.
    fn flush(&mut self) -> bool {
        if self.batch.is_empty() {
            return true;
        }
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.tx.send(batch).is_ok()
    }

    fn filtered(&self, rel: &Path, name: &std::ffi::OsStr, is_dir: bool) -> bool {
        if self.gitignore && (walk::is_git_dir(name) || self.ignores.is_ignored(rel, is_dir)) {
            return true;
        }
        self.glob.as_ref().is_some_and(|g| g.matched(rel, is_dir).is_ignore())
    }

    fn walk(&mut self, dir: Arc<DirHandle>, rel: &Path, depth: usize) {
        if self.shared.stopping() {
            return;
        }
        let (entries, cut) = match dir.entries() {
            Ok(e) => e,
            Err(e) => {
                if self.unreadable_dirs.len() < 5 {
                    self.unreadable_dirs.push(format!(
                        "{}/ ({})",
                        walk::display(rel),
                        crate::error::errno_name(e.raw_os_error().unwrap_or(libc::EIO))
                    ));
                }
                return;
            }
        };
        if cut && self.crowded.len() < 5 {
            self.crowded.push(walk::display(rel));
        }
        let layers = self.ignores.len();
        if self.gitignore {
            if let Some(gi) = dir.gitignore() {
                self.ignores.push(rel.to_path_buf(), gi);
            }
        }
        for entry in entries {
            if self.shared.stopping() {
                break;
            }
            let child = walk::join(rel, &entry.name);
            match entry.kind {
                Kind::File => {
                    if self.filtered(&child, &entry.name, false) {
                        continue;
                    }
                    let item = Item { index: self.next_index, dir: dir.clone(), name: entry.name, rel: walk::display(&child) };
                    (self.on_file)(item.index, &item.rel);
                    self.next_index += 1;
                    self.batch.push(item);
                    if self.batch.len() >= BATCH && !self.flush() {
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
                        Err(e) => {
                            if self.unreadable_dirs.len() < 5 {
                                self.unreadable_dirs.push(format!(
                                    "{}/ ({})",
                                    walk::display(&child),
                                    crate::error::errno_name(e.raw_os_error().unwrap_or(libc::EIO))
                                ));
                            }
                        }
                    }
                }
                // Symlinks are never followed; FIFOs, sockets and devices are never opened.
                _ => {}
            }
        }
        self.ignores.truncate(layers);
    }
}

fn check_limit(limit: u32) -> Result<()> {
    if limit == 0 || limit > MAX_LIMIT {
        return Err(Error::invalid(Reason::InvalidArgumentsShape, format!("limit must be an integer from 1 to {MAX_LIMIT}"))
            .with_details(serde_json::json!({ "at": "arguments.limit" })));
    }
    Ok(())
}

/// Searches the files beneath `opts.path` (the root when `None`; a file searches that file).
pub fn search_files(ws: &Workspace, opts: &SearchOptions, cancel: &Cancel) -> Result<SearchOutput> {
    search_files_observed(ws, opts, cancel, &|_, _| {})
}

/// [`search_files`], calling `on_file(index, path)` on the walking thread as each file is
/// handed to the searchers (in tree order), for progress reports.
pub fn search_files_observed(
    ws: &Workspace,
    opts: &SearchOptions,
    cancel: &Cancel,
    on_file: &(dyn Fn(u64, &str) + Sync),
) -> Result<SearchOutput> {
    check_limit(opts.limit)?;
    let matcher = compile(&opts.pattern, opts.ignore_case, opts.literal)?;
    let glob = opts.glob.as_deref().map(compile_glob).transpose()?;
    cancel.check()?;
    ws.check()?;
    let limit = opts.limit as usize;
    let collector = Collector {
        limit,
        next: 0,
        pending: BTreeMap::new(),
        matches: Vec::new(),
        bytes: 0,
        over_limit: false,
        over_bytes: false,
        files_searched: 0,
        binary: 0,
        unreadable: 0,
        unreadable_examples: Vec::new(),
        too_long: Vec::new(),
    };
    let shared = Shared { matcher: &matcher, cancel, stop: AtomicBool::new(false), collector: Mutex::new(collector), cap: limit + 1 };
    let mut notes = Vec::new();

    match walk::open_start(ws, opts.path.as_ref())? {
        Start::NotDir(Kind::File) => {
            // One named file: opened beneath the root (inside symlinks followed), without blocking.
            let path = opts.path.as_ref().expect("a file start has a path");
            let (file, _, size) = crate::read::open_regular(ws, path)?;
            let mut searcher = searcher();
            let result = search_reader(&mut searcher, &matcher, file, size, path.as_str(), shared.cap, cancel);
            shared.report(0, path.as_str(), result);
        }
        Start::NotDir(kind) => {
            let path = opts.path.as_ref().map_or(".", |p| p.as_str());
            return Err(Error::not_regular(path, kind.describe())
                .with_hint("search_files searches a directory or a regular file; pass a directory such as src, or omit path"));
        }
        Start::Dir(dir) => {
            let threads = if opts.threads > 0 {
                opts.threads
            } else {
                std::thread::available_parallelism().map_or(1, |n| n.get()).min(8)
            };
            let (tx, rx) = mpsc::sync_channel::<Vec<Item>>(QUEUED_BATCHES);
            // Only the workers hold the receiver: should they all die, the walker's send fails
            // instead of waiting forever.
            let rx = Arc::new(Mutex::new(rx));
            let ignores =
                if opts.gitignore { IgnoreStack::for_start(ws, opts.path.as_ref()) } else { IgnoreStack::default() };
            let rel = opts.path.as_ref().map_or_else(PathBuf::new, |p| PathBuf::from(p.as_str()));
            let (too_deep, crowded, unreadable_dirs) = std::thread::scope(|scope| {
                for _ in 0..threads {
                    let rx = rx.clone();
                    let shared = &shared;
                    scope.spawn(move || shared.worker(&rx));
                }
                drop(rx);
                let mut w = Walk {
                    shared: &shared,
                    tx,
                    batch: Vec::with_capacity(BATCH),
                    on_file,
                    ignores,
                    gitignore: opts.gitignore,
                    glob,
                    next_index: 0,
                    too_deep: 0,
                    crowded: Vec::new(),
                    unreadable_dirs: Vec::new(),
                };
                w.walk(Arc::new(dir), &rel, 1);
                if !w.shared.stopping() {
                    w.flush();
                }
                // Dropping the sender ends the workers once the queue is drained.
                (w.too_deep, w.crowded, w.unreadable_dirs)
            });
            if too_deep > 0 {
                notes.push(format!(
                    "{too_deep} directories nested deeper than {} levels were not searched",
                    walk::MAX_WALK_DEPTH
                ));
            }
            if !crowded.is_empty() {
                notes.push(format!(
                    "directories with more than {} entries were only partly searched: {}",
                    walk::MAX_DIR_ENTRIES,
                    crowded.join(", ")
                ));
            }
            if !unreadable_dirs.is_empty() {
                notes.push(format!("directories that could not be read: {}", unreadable_dirs.join(", ")));
            }
        }
    }
    cancel.check()?;
    ws.check()?;

    let c = shared.collector.into_inner().unwrap_or_else(|p| p.into_inner());
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
    Ok(SearchOutput {
        truncated: c.over_limit || c.over_bytes,
        matches: c.matches,
        files_searched: c.files_searched,
        note: (!head.is_empty()).then(|| head.join("; ")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let result = search_reader(&mut searcher(), &matcher, &mut reader, u64::MAX, "f", 10, &cancel);
        assert!(matches!(result, FileResult::Skipped));
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
            let result = search_reader(&mut searcher(), &matcher, &b"line\n"[..], 5, "f", 10, &cancel);
            let _ = tx.send(matches!(result, FileResult::Skipped));
        });
        let skipped = rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the search spun after a cancellation");
        assert!(skipped);
    }

    #[test]
    fn the_reader_stops_at_the_reported_size() {
        let cancel = Cancel::new();
        let mut r = FileRead { inner: &b"abcdef"[..], remaining: 4, cancel: &cancel };
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
