//! What stops a search and what it holds: cancellation, the deadline, the read budget, a
//! complete output ([`Limits`]), and the bytes of match lines waiting to be merged ([`Held`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use super::SearchOptions;
use crate::cancel::Cancel;

/// Bytes of match lines kept but not yet merged into the output.
#[derive(Default)]
pub(super) struct Held {
    pub(super) now: AtomicUsize,
    pub(super) peak: AtomicUsize,
}

impl Held {
    pub(super) fn add(&self, n: usize) {
        let now = self.now.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    pub(super) fn release(&self, n: usize) {
        self.now.fetch_sub(n, Ordering::Relaxed);
    }
}

/// When a search must stop whatever it is doing: cancelled, past its deadline, past its read
/// budget, or because the output is complete.
pub(super) struct Limits {
    pub(super) cancel: Cancel,
    deadline: Instant,
    max_read: u64,
    pub(super) read: AtomicU64,
    /// The output is complete (limit or byte cap) or a budget ran out.
    pub(super) stop: AtomicBool,
    pub(super) out_of_time: AtomicBool,
    pub(super) out_of_bytes: AtomicBool,
}

impl Limits {
    pub(super) fn new(cancel: &Cancel, opts: &SearchOptions) -> Limits {
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

    pub(super) fn stopping(&self) -> bool {
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

    pub(super) fn count_read(&self, n: u64) {
        self.read.fetch_add(n, Ordering::Relaxed);
    }
}

