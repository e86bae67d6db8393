//! A [`Sink`] that hands a runner's merged output to its parser line by line, as it arrives, so
//! that nothing but the parser's bounded state is kept, whatever the tests print. A watched
//! call's progress gets the counts as they grow and the lines that are not the runner's
//! structured events, cleaned as the result's text is.

use crate::process::{HeadTail, Sink};
use crate::progress::Progress;

use super::report::Summary;

/// Longest line handed to a parser; the rest of a longer line is dropped.
pub const MAX_LINE: usize = 256 * 1024;

/// Parses a runner's output, one line (without its newline) at a time.
pub trait Parser: Send + 'static {
    fn line(&mut self, line: &str);
    /// The result. `complete` is false when the run was cut short (outer deadline): tests
    /// without a result are then "still running", not failures.
    fn finish(&mut self, complete: bool) -> Summary;
    /// The runner's own lines that were not part of any result (its errors when it could not
    /// start), already cleaned.
    fn other(&self) -> String;
    /// The tests finished so far: passed, failed, skipped (`None`: counted only at the end).
    fn counts(&self) -> Option<(u64, u64, u64)> {
        None
    }
    /// Whether `line` is one of the runner's structured events (not shown as output).
    fn is_event(&self, _line: &str) -> bool {
        false
    }
}

pub struct LineSink<P> {
    pub parser: P,
    partial: Vec<u8>,
    overlong: bool,
    /// The raw output's first and last bytes, for messages when nothing else is known.
    pub raw: HeadTail,
    /// The call's progress and the cleaner of what it is shown (only when watched).
    watch: Option<(Progress, super::report::Cleaner)>,
}

impl<P: Parser> LineSink<P> {
    pub fn new(parser: P) -> Self {
        LineSink { parser, partial: Vec::new(), overlong: false, raw: HeadTail::new(2 * 1024, 6 * 1024), watch: None }
    }

    /// Reports to `progress` as lines arrive (nothing when it is unwatched).
    pub fn watched(mut self, progress: &Progress, cleaner: super::report::Cleaner) -> Self {
        if progress.is_watched() {
            self.watch = Some((progress.clone(), cleaner));
        }
        self
    }

    fn emit(&mut self) {
        let line = String::from_utf8_lossy(&self.partial);
        let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
        self.parser.line(&line);
        if let Some((progress, cleaner)) = &self.watch {
            if !self.parser.is_event(&line) {
                let mut shown = cleaner.clean(&line);
                shown.push('\n');
                progress.output(shown.as_bytes());
            }
            if let Some((passed, failed, skipped)) = self.parser.counts() {
                progress.count(passed + failed + skipped, None, || counts_line(passed, failed, skipped));
            }
        }
        self.partial.clear();
        self.overlong = false;
    }

    /// Hands over the last line if it had no newline.
    pub fn flush(&mut self) {
        if !self.partial.is_empty() {
            self.emit();
        }
    }
}

impl<P: Parser> Sink for LineSink<P> {
    fn push(&mut self, bytes: &[u8]) {
        self.raw.push(bytes);
        let mut rest = bytes;
        while !rest.is_empty() {
            match rest.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.take(&rest[..i]);
                    self.emit();
                    rest = &rest[i + 1..];
                }
                None => {
                    self.take(rest);
                    rest = &[];
                }
            }
        }
    }
}

/// `12 passed, 1 failed` (and `, 2 skipped` when there are).
pub fn counts_line(passed: u64, failed: u64, skipped: u64) -> String {
    let mut line = format!("{passed} passed, {failed} failed");
    if skipped > 0 {
        line.push_str(&format!(", {skipped} skipped"));
    }
    line
}

impl<P> LineSink<P> {
    fn take(&mut self, bytes: &[u8]) {
        if self.overlong {
            return;
        }
        let room = MAX_LINE - self.partial.len();
        if bytes.len() > room {
            self.partial.extend_from_slice(&bytes[..room]);
            self.overlong = true;
        } else {
            self.partial.extend_from_slice(bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Lines(Vec<String>);
    impl Parser for Lines {
        fn line(&mut self, line: &str) {
            self.0.push(line.to_string());
        }
        fn finish(&mut self, _: bool) -> Summary {
            Summary::default()
        }
        fn other(&self) -> String {
            String::new()
        }
    }

    #[test]
    fn lines_are_split_across_chunks_and_bounded() {
        let mut s = LineSink::new(Lines::default());
        s.push(b"one\ntw");
        s.push(b"o\r\n\nthree");
        s.flush();
        assert_eq!(s.parser.0, ["one", "two", "", "three"]);
        let mut s = LineSink::new(Lines::default());
        let long = vec![b'x'; MAX_LINE * 3];
        s.push(&long);
        s.push(b"tail\nnext\n");
        assert_eq!(s.parser.0.len(), 2);
        assert_eq!(s.parser.0[0].len(), MAX_LINE);
        assert_eq!(s.parser.0[1], "next");
    }
}
