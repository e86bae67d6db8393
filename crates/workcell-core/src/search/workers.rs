//! The searching threads: batches of files from the walk, searched in parallel, merged in tree
//! order; the walk is held back so that at most [`WINDOW`] files are ahead of the first one not
//! finished.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fs::File;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use super::budget::{Held, Limits};
use super::file::{search_reader, searcher, FileResult};
use super::merge::{held_bytes, Collector};
use super::{MAX_OUTPUT_BYTES, POLL, WINDOW};
use crate::walk::{self, DirHandle};


pub(super) enum Source {
    /// A name in a directory the walk opened.
    Entry(Arc<DirHandle>, OsString),
    /// A file already opened (the one named file of a search), with its size.
    Opened(File, u64),
}

pub(super) struct Item {
    pub(super) index: u64,
    pub(super) source: Source,
    pub(super) rel: String,
}

pub(super) struct State {
    queue: VecDeque<Vec<Item>>,
    /// No more items will come.
    closed: bool,
    /// Batches taken by workers and not yet reported.
    busy: usize,
    /// The caller took the results: later reports are dropped.
    finished: bool,
    pub(super) collector: Collector,
}

/// What the walker and the searching threads share. The threads are not scoped: a call that
/// is cancelled or past its deadline returns while a thread may still be inside one match; the
/// thread stops at its next read and exits.
pub(super) struct Shared {
    matcher: RegexMatcher,
    pub(super) limits: Limits,
    pub(super) held: Held,
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
    pub(super) fn new(matcher: RegexMatcher, limits: Limits, limit: usize) -> Shared {
        Shared {
            matcher,
            limits,
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
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(super) fn stopping(&self) -> bool {
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

    pub(super) fn worker(&self) {
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
    pub(super) fn queue(&self, batch: Vec<Item>) {
        self.lock().queue.push_back(batch);
        self.work.notify_one();
    }

    /// Waits until the file `index` may be handed out: fewer than [`WINDOW`] files ahead of
    /// the first unfinished one. False when the search is stopping.
    pub(super) fn wait_for_window(&self, index: u64) -> bool {
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
    pub(super) fn finish(&self, total: u64) -> Collector {
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
