//! Merging per-file results, which arrive in any order, into matches in tree order, cut as if
//! every line had been kept.

use std::collections::BTreeMap;

use super::budget::Held;
use super::file::FileResult;
use super::MAX_OUTPUT_BYTES;

/// Gathers per-file results (arriving in any order) into matches in tree order.
#[derive(Default)]
pub(super) struct Collector {
    pub(super) limit: usize,
    pub(super) next: u64,
    pub(super) pending: BTreeMap<u64, (String, FileResult)>,
    pub(super) matches: Vec<String>,
    pub(super) bytes: usize,
    /// More matches exist than were returned.
    pub(super) over_limit: bool,
    pub(super) over_bytes: bool,
    /// A file before the end was not searched because the search stopped.
    pub(super) stopped_short: bool,
    pub(super) files_searched: u64,
    pub(super) binary: u64,
    pub(super) unreadable: u64,
    pub(super) unreadable_examples: Vec<String>,
    pub(super) too_long: Vec<String>,
}

pub(super) fn held_bytes(result: &FileResult) -> usize {
    match result {
        FileResult::Searched { bytes, .. } => *bytes,
        _ => 0,
    }
}

impl Collector {
    pub(super) fn done(&self) -> bool {
        self.over_limit || self.over_bytes || self.stopped_short
    }

    pub(super) fn add(&mut self, index: u64, rel: String, result: FileResult, held: &Held) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
