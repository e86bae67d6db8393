//! Bounded unified diffs for the writing tools (`edit_file`, `apply_patch`).
//!
//! A line diff (Myers) costs up to the square of the lines it compares, so one model call
//! replacing every line of a 64 KiB file could cost seconds. Here the work is bounded whatever
//! the input, without any clock:
//!
//! 1. the lines both texts share at the start and at the end are set aside (kept as context);
//! 2. in what remains, lines that occur exactly once in each text are paired up and the longest
//!    increasing run of such pairs becomes a set of anchors (patience diffing);
//! 3. Myers runs only in the gaps between anchors. A gap of `a` old and `b` new lines costs at
//!    most `(a + b)²` comparisons; the sum over every gap of one call is held to a budget
//!    ([`WORK_BUDGET`]). A diff that would need more is not computed: the result says
//!    `diff omitted` with the number of lines involved ([`OMITTED`]).
//!
//! Cancellation is checked between gaps, so an abort during a diff stops it (and, because every
//! writing tool computes its diff before it installs anything, the file is left unchanged).
//! The text is cut at [`MAX_DIFF_BYTES`] on a line end, with a note saying how much was left
//! out.

use std::collections::HashMap;
use std::ops::Range;

use similar::{DiffOp, DiffTag};

use crate::cancel::Cancel;
use crate::error::Result;

/// Longest diff returned, in UTF-8 bytes (then cut at a line end, with a note).
pub const MAX_DIFF_BYTES: usize = 8 * 1024;
/// Lines of context around each change.
pub const DIFF_CONTEXT: usize = 3;
/// Most line comparisons the diffs of one call may cost: the sum of `(a + b)²` over the gaps
/// Myers runs in. At most about 40 ms of work (a gap of 1,414 lines, none in common); a region
/// that large rewritten whole would not fit the 8 KiB output anyway.
pub const WORK_BUDGET: u64 = 2_000_000;
/// How an omitted diff starts.
pub const OMITTED: &str = "diff omitted";

/// The work left for one call's diffs (shared by the files of a patch).
#[derive(Debug)]
pub struct Budget {
    left: u64,
    /// Work spent (tests check the bound).
    pub spent: u64,
    /// A diff a person approves: past the budget a changed region is shown whole (every old
    /// line removed, every new line added) instead of omitted, so every changed line is in it.
    complete: bool,
}

impl Default for Budget {
    fn default() -> Self {
        Budget { left: WORK_BUDGET, spent: 0, complete: false }
    }
}

impl Budget {
    /// The budget of a diff that must show every changed line (an approval's): the same work
    /// bound, and a region that would cost more is shown removed and added whole (linear).
    pub fn complete() -> Self {
        Budget { complete: true, ..Budget::default() }
    }

    fn take(&mut self, cost: u64) -> bool {
        if cost > self.left {
            return false;
        }
        self.left -= cost;
        self.spent += cost;
        true
    }
}

#[cfg(test)]
pub(crate) mod hooks {
    use std::cell::RefCell;
    thread_local! {
        /// Called before each gap is diffed (a deterministic way to cancel mid-diff).
        pub static ON_GAP: RefCell<Option<Box<dyn FnMut()>>> = const { RefCell::new(None) };
    }
}

#[cfg(test)]
fn on_gap() {
    hooks::ON_GAP.with(|h| {
        if let Some(f) = h.borrow_mut().as_mut() {
            f()
        }
    });
}

#[cfg(not(test))]
#[inline(always)]
fn on_gap() {}

/// The unified diff of two LF texts, bounded by [`MAX_DIFF_BYTES`] and one call's budget.
pub fn unified(shown: &str, old: &str, new: &str, cancel: &Cancel) -> Result<String> {
    let mut budget = Budget::default();
    let mut out = String::new();
    file_diff(&mut out, &format!("a/{shown}"), &format!("b/{shown}"), old, new, &mut budget, cancel)?;
    Ok(bound(out))
}

/// The unified diff of two LF texts with every changed line in it: never cut, never omitted
/// (what an approval shows; its size is bounded by the texts').
pub fn unified_complete(shown: &str, old: &str, new: &str, cancel: &Cancel) -> Result<String> {
    let mut budget = Budget::complete();
    let mut out = String::new();
    file_diff(&mut out, &format!("a/{shown}"), &format!("b/{shown}"), old, new, &mut budget, cancel)?;
    Ok(out)
}

/// Appends the diff of one file to `out`: headers `--- {old_label}` / `+++ {new_label}` and
/// its hunks, or the omitted note. Nothing is appended when the texts are equal and the labels
/// are too.
pub fn file_diff(
    out: &mut String,
    old_label: &str,
    new_label: &str,
    old: &str,
    new: &str,
    budget: &mut Budget,
    cancel: &Cancel,
) -> Result<()> {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let ops = match line_ops(&a, &b, budget, cancel)? {
        Some(ops) => ops,
        None => {
            out.push_str(&format!("--- {old_label}\n+++ {new_label}\n"));
            out.push_str(&format!(
                "... {OMITTED}: the change spans {} old and {} new lines, more than a diff is computed for; read the file to see the result\n",
                a.len(),
                b.len()
            ));
            return Ok(());
        }
    };
    let groups = similar::group_diff_ops(ops, DIFF_CONTEXT);
    if groups.is_empty() {
        if old_label.trim_start_matches("a/") != new_label.trim_start_matches("b/") {
            out.push_str(&format!("--- {old_label}\n+++ {new_label}\n"));
        }
        return Ok(());
    }
    out.push_str(&format!("--- {old_label}\n+++ {new_label}\n"));
    let line = |out: &mut String, sign: char, text: &str| {
        out.push(sign);
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    };
    for group in groups {
        out.push_str(&format!("{}\n", similar::udiff::UnifiedHunkHeader::new(&group)));
        for op in group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => old_range.for_each(|i| line(out, ' ', a[i])),
                DiffTag::Delete => old_range.for_each(|i| line(out, '-', a[i])),
                DiffTag::Insert => new_range.for_each(|i| line(out, '+', b[i])),
                DiffTag::Replace => {
                    old_range.for_each(|i| line(out, '-', a[i]));
                    new_range.for_each(|i| line(out, '+', b[i]));
                }
            }
        }
    }
    Ok(())
}

/// The line operations turning `a` into `b`, or `None` when they would cost more than the
/// budget left.
pub(crate) fn line_ops(a: &[&str], b: &[&str], budget: &mut Budget, cancel: &Cancel) -> Result<Option<Vec<DiffOp>>> {
    let (n, m) = (a.len(), b.len());
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..].iter().rev().zip(b[prefix..].iter().rev()).take_while(|(x, y)| x == y).count();
    let mut ops = Vec::new();
    if prefix > 0 {
        ops.push(DiffOp::Equal { old_index: 0, new_index: 0, len: prefix });
    }
    let (ra, rb) = (prefix..n - suffix, prefix..m - suffix);
    // Gaps between anchors, each diffed on its own.
    let anchors = anchors(a, ra.clone(), b, rb.clone());
    let mut gaps: Vec<(Range<usize>, Range<usize>)> = Vec::with_capacity(anchors.len() + 1);
    let (mut at_a, mut at_b) = (ra.start, rb.start);
    for &(i, j) in &anchors {
        gaps.push((at_a..i, at_b..j));
        at_a = i + 1;
        at_b = j + 1;
    }
    gaps.push((at_a..ra.end, at_b..rb.end));
    // Charge the whole cost first: an over-budget diff costs nothing more than this check.
    let cost: u64 = gaps
        .iter()
        .filter(|(x, y)| !x.is_empty() && !y.is_empty())
        .map(|(x, y)| {
            let l = (x.len() + y.len()) as u64;
            l * l
        })
        .sum();
    if !budget.take(cost) {
        if !budget.complete {
            return Ok(None);
        }
        // The region between the common start and end, removed and added whole.
        if !ra.is_empty() {
            ops.push(DiffOp::Delete { old_index: ra.start, old_len: ra.len(), new_index: rb.start });
        }
        if !rb.is_empty() {
            ops.push(DiffOp::Insert { old_index: ra.end, new_index: rb.start, new_len: rb.len() });
        }
        if suffix > 0 {
            ops.push(DiffOp::Equal { old_index: n - suffix, new_index: m - suffix, len: suffix });
        }
        return Ok(Some(ops));
    }
    for (k, (ga, gb)) in gaps.into_iter().enumerate() {
        cancel.check()?;
        on_gap();
        if !ga.is_empty() && !gb.is_empty() {
            ops.extend(similar::capture_diff(similar::Algorithm::Myers, a, ga, b, gb));
        } else if !ga.is_empty() {
            ops.push(DiffOp::Delete { old_index: ga.start, old_len: ga.len(), new_index: gb.start });
        } else if !gb.is_empty() {
            ops.push(DiffOp::Insert { old_index: ga.start, new_index: gb.start, new_len: gb.len() });
        }
        if let Some(&(i, j)) = anchors.get(k) {
            ops.push(DiffOp::Equal { old_index: i, new_index: j, len: 1 });
        }
    }
    if suffix > 0 {
        ops.push(DiffOp::Equal { old_index: n - suffix, new_index: m - suffix, len: suffix });
    }
    Ok(Some(merge_equal(ops)))
}

/// Pairs of lines unique in both ranges, the longest run increasing in both (patience).
fn anchors(a: &[&str], ra: Range<usize>, b: &[&str], rb: Range<usize>) -> Vec<(usize, usize)> {
    if ra.is_empty() || rb.is_empty() {
        return Vec::new();
    }
    // line -> (count in a, index in a, count in b, index in b)
    let mut seen: HashMap<&str, (u32, usize, u32, usize)> = HashMap::with_capacity(ra.len());
    for i in ra.clone() {
        let e = seen.entry(a[i]).or_insert((0, i, 0, 0));
        e.0 += 1;
    }
    for j in rb {
        if let Some(e) = seen.get_mut(b[j]) {
            e.2 += 1;
            e.3 = j;
        }
    }
    let mut pairs: Vec<(usize, usize)> =
        seen.into_values().filter(|&(ca, _, cb, _)| ca == 1 && cb == 1).map(|(_, i, _, j)| (i, j)).collect();
    pairs.sort_unstable();
    // Longest increasing subsequence by the b index (patience sorting), O(k log k).
    let mut tails: Vec<usize> = Vec::new(); // index into pairs of the smallest tail per length
    let mut prev: Vec<Option<usize>> = vec![None; pairs.len()];
    for (k, &(_, j)) in pairs.iter().enumerate() {
        let pos = tails.partition_point(|&t| pairs[t].1 < j);
        if pos > 0 {
            prev[k] = Some(tails[pos - 1]);
        }
        if pos == tails.len() {
            tails.push(k);
        } else {
            tails[pos] = k;
        }
    }
    let mut out = Vec::with_capacity(tails.len());
    let mut cur = tails.last().copied();
    while let Some(k) = cur {
        out.push(pairs[k]);
        cur = prev[k];
    }
    out.reverse();
    out
}

/// Joins adjacent `Equal` operations (anchors next to each other or to Myers' own).
fn merge_equal(ops: Vec<DiffOp>) -> Vec<DiffOp> {
    let mut out: Vec<DiffOp> = Vec::with_capacity(ops.len());
    for op in ops {
        if let (Some(DiffOp::Equal { len, .. }), DiffOp::Equal { len: more, .. }) = (out.last_mut(), &op) {
            *len += *more;
            continue;
        }
        out.push(op);
    }
    out
}

/// Cuts `full` at [`MAX_DIFF_BYTES`] on a line end, with a note.
pub fn bound(full: String) -> String {
    if full.len() <= MAX_DIFF_BYTES {
        return full;
    }
    let mut cut = MAX_DIFF_BYTES;
    while !full.is_char_boundary(cut) {
        cut -= 1;
    }
    if let Some(nl) = full[..cut].rfind('\n') {
        cut = nl + 1;
    }
    let left = full.len() - cut;
    let lines_left = full[cut..].lines().count();
    let mut out = full[..cut].to_string();
    out.push_str(&format!(
        "... diff cut at {MAX_DIFF_BYTES} bytes: {lines_left} more lines ({left} bytes) not shown; read the file to see the result\n"
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole(a: &str, b: &str) -> String {
        similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(DIFF_CONTEXT)
            .missing_newline_hint(true)
            .header("a/f", "b/f")
            .to_string()
    }

    #[test]
    fn small_diffs_equal_a_whole_file_diff() {
        let base: String = (0..60).map(|i| format!("line {i}\n")).collect();
        let cases = [
            (base.clone(), base.replace("line 3\n", "three\n").replace("line 40\n", "")),
            (base.clone(), base.replace("line 0\n", "").replace("line 59\n", "end")),
            ("a\nb".to_string(), "a\nc".to_string()),
            ("a\nb\n".to_string(), "a\nb\nc".to_string()),
            (String::new(), "x\n".to_string()),
            ("x\n".to_string(), String::new()),
            ("same\n".to_string(), "same\n".to_string()),
            (base.clone(), base.replace("line 10\n", "line 10\nline 10\n")),
            (base.clone(), base.replace("line 5\n", "five\n").replace("line 50\n", "fifty\n")),
        ];
        for (a, b) in cases {
            assert_eq!(unified("f", &a, &b, &Cancel::new()).unwrap(), whole(&a, &b), "{a:?} -> {b:?}");
        }
    }

    #[test]
    fn diff_of_every_line_replaced_is_omitted_within_the_work_bound() {
        // The input of the finding: all 32,768 lines of a 64 KiB file replaced.
        let old: String = (0..32_768).map(|i| if i % 2 == 0 { "a\n" } else { "b\n" }).collect();
        let new = old.replace('a', "c").replace('b', "d");
        let mut budget = Budget::default();
        let mut out = String::new();
        file_diff(&mut out, "a/f", "b/f", &old, &new, &mut budget, &Cancel::new()).unwrap();
        assert!(out.contains("diff omitted: the change spans 32768 old and 32768 new lines"), "{out}");
        assert_eq!(budget.spent, 0, "an omitted diff does no Myers work");
    }

    #[test]
    fn a_complete_diff_of_every_line_replaced_shows_every_line_within_the_work_bound() {
        let old: String = (0..32_768).map(|i| if i % 2 == 0 { "a\n" } else { "b\n" }).collect();
        let new = old.replace('a', "c").replace('b', "d");
        let mut budget = Budget::complete();
        let mut out = String::new();
        file_diff(&mut out, "a/f", "b/f", &old, &new, &mut budget, &Cancel::new()).unwrap();
        assert_eq!(budget.spent, 0, "no Myers work past the budget");
        assert!(!out.contains(OMITTED));
        assert_eq!(out.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count(), 32_768);
        assert_eq!(out.lines().filter(|l| *l == "+c" || *l == "+d").count(), 32_768);
        // The complete diff applies: its + and context lines are the new text.
        let rebuilt: String = out.lines().skip(3).filter(|l| !l.starts_with('-')).map(|l| format!("{}\n", &l[1..])).collect();
        assert_eq!(rebuilt, new);
    }

    #[test]
    fn scattered_changes_in_a_large_file_stay_cheap_and_exact() {
        let old: String = (0..20_000).map(|i| format!("unique line {i}\n")).collect();
        let new = old.replace("unique line 7\n", "changed 7\n").replace("unique line 19000\n", "changed 19000\n");
        let mut budget = Budget::default();
        let mut out = String::new();
        file_diff(&mut out, "a/f", "b/f", &old, &new, &mut budget, &Cancel::new()).unwrap();
        assert_eq!(out, whole(&old, &new));
        assert!(budget.spent <= 16, "{} comparisons for two one-line changes", budget.spent);
    }

    #[test]
    fn work_never_exceeds_the_budget_for_generated_inputs() {
        // Repeated lines defeat anchoring: the budget still holds.
        for (lines, alphabet) in [(3000usize, 2u8), (9000, 3), (40_000, 4), (200, 1)] {
            let old: String = (0..lines).map(|i| format!("{}\n", (b'a' + (i * 7 % alphabet as usize) as u8) as char)).collect();
            let new: String = (0..lines).map(|i| format!("{}\n", (b'a' + (i * 5 % alphabet as usize) as u8) as char)).collect();
            let mut budget = Budget::default();
            let mut out = String::new();
            file_diff(&mut out, "a/f", "b/f", &old, &new, &mut budget, &Cancel::new()).unwrap();
            assert!(budget.spent <= WORK_BUDGET);
        }
    }

    #[test]
    fn cancellation_between_gaps_stops_the_diff() {
        let old: String = (0..400).map(|i| format!("keep {i}\nold {i}\n")).collect();
        let new: String = (0..400).map(|i| format!("keep {i}\nnew {i}\n")).collect();
        let cancel = Cancel::new();
        let c2 = cancel.clone();
        let mut gaps = 0;
        hooks::ON_GAP.with(|h| {
            *h.borrow_mut() = Some(Box::new(move || {
                gaps += 1;
                if gaps == 3 {
                    c2.cancel();
                }
            }))
        });
        let err = unified("f", &old, &new, &cancel).unwrap_err();
        hooks::ON_GAP.with(|h| *h.borrow_mut() = None);
        assert!(err.is_cancelled());
    }

    #[test]
    fn long_diffs_are_cut_with_a_note() {
        let old: String = (0..3000).map(|i| format!("line {i}\n")).collect();
        let d = unified("f", &old, &old.replace("line", "LINE"), &Cancel::new()).unwrap();
        assert!(d.len() <= MAX_DIFF_BYTES + 200);
        assert!(d.contains("diff cut at 8192 bytes") || d.contains(OMITTED), "{d}");
    }
}
