//! A [`Sink`] that hands a runner's merged output to its parser line by line, as it arrives, so
//! that nothing but the parser's bounded state is kept, whatever the tests print.

use crate::process::{HeadTail, Sink};

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
}

pub struct LineSink<P> {
    pub parser: P,
    partial: Vec<u8>,
    overlong: bool,
    /// The raw output's first and last bytes, for messages when nothing else is known.
    pub raw: HeadTail,
}

impl<P: Parser> LineSink<P> {
    pub fn new(parser: P) -> Self {
        LineSink { parser, partial: Vec::new(), overlong: false, raw: HeadTail::new(2 * 1024, 6 * 1024) }
    }

    fn emit(&mut self) {
        let line = String::from_utf8_lossy(&self.partial);
        let line = line.strip_suffix('\r').unwrap_or(&line).to_string();
        self.parser.line(&line);
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
