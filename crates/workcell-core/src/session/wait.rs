//! `waitFor`: a regular expression (Rust `regex` syntax) matched against output as it arrives.
//!
//! Each new piece of output is searched together with the last [`WINDOW`] bytes searched
//! before it, never the whole buffer again: a match of up to `WINDOW` bytes that straddles two
//! pieces is found, and the work per piece is bounded by its size plus `WINDOW`.

use regex_automata::meta::Regex;

use crate::error::{Error, Reason, Result};

/// Bytes of earlier output searched again with each new piece.
pub const WINDOW: usize = 4096;
/// Longest `waitFor` pattern, in bytes.
pub const PATTERN_MAX: usize = 1024;
/// Size limit of the compiled pattern.
const NFA_LIMIT: usize = 1 << 20;

/// Compiles a `waitFor` pattern (checked before any effect).
pub fn compile(pattern: &str) -> Result<Regex> {
    if pattern.is_empty() || pattern.len() > PATTERN_MAX {
        return Err(Error::invalid(Reason::InvalidArgumentsShape, format!("waitFor must be a regular expression of 1 to {PATTERN_MAX} bytes, such as \"listening on\""))
            .with_details(serde_json::json!({ "at": "arguments.waitFor" })));
    }
    Regex::builder()
        .configure(Regex::config().nfa_size_limit(Some(NFA_LIMIT)).hybrid_cache_capacity(1 << 20))
        .syntax(regex_automata::util::syntax::Config::new().utf8(false))
        .build(pattern)
        .map_err(|e| {
            Error::invalid(Reason::InvalidArgumentsShape, format!("waitFor is not a valid regular expression (Rust regex syntax): {e}; escape special characters such as ( or . with a backslash"))
                .with_details(serde_json::json!({ "at": "arguments.waitFor" }))
        })
}

/// An incremental search for one pattern.
#[derive(Debug)]
pub struct Matcher {
    regex: Regex,
    carry: Vec<u8>,
    /// Absolute offset just after the last byte fed.
    pos: Option<u64>,
    matched: bool,
    /// Bytes searched in total (the bound tests check).
    pub searched: u64,
}

impl Matcher {
    pub fn new(regex: Regex) -> Self {
        Matcher { regex, carry: Vec::new(), pos: None, matched: false, searched: 0 }
    }

    pub fn matched(&self) -> bool {
        self.matched
    }

    /// Where the next byte to feed starts (`None` before the first feed).
    pub fn position(&self) -> Option<u64> {
        self.pos
    }

    /// Feeds the bytes starting at absolute offset `at`; a gap since the last feed (bytes not
    /// kept) drops the carried window. Returns whether the pattern has matched.
    pub fn feed(&mut self, at: u64, bytes: &[u8]) -> bool {
        if self.matched || bytes.is_empty() {
            return self.matched;
        }
        if self.pos != Some(at) {
            self.carry.clear();
        }
        self.carry.extend_from_slice(bytes);
        self.searched += self.carry.len() as u64;
        if self.regex.is_match(&self.carry[..]) {
            self.matched = true;
            self.carry = Vec::new();
        } else if self.carry.len() > WINDOW {
            self.carry.drain(..self.carry.len() - WINDOW);
        }
        self.pos = Some(at + bytes.len() as u64);
        self.matched
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_across_chunk_boundaries_with_bounded_rescans() {
        let mut m = Matcher::new(compile("listening on port [0-9]+").unwrap());
        let text = "starting...\nlistening on port 8080\n";
        let mut at = 0;
        for chunk in text.as_bytes().chunks(3) {
            m.feed(at, chunk);
            at += chunk.len() as u64;
        }
        assert!(m.matched());
        // A thousand 1 KiB pieces: each search is its piece plus at most the window.
        let mut m = Matcher::new(compile("never-there").unwrap());
        let piece = vec![b'x'; 1024];
        for i in 0..1000u64 {
            assert!(!m.feed(i * 1024, &piece));
        }
        assert!(m.searched <= 1000 * (1024 + WINDOW as u64), "{}", m.searched);
        m.feed(1000 * 1024, b"never-");
        assert!(m.feed(1000 * 1024 + 6, b"there"));
    }

    #[test]
    fn a_gap_drops_the_window() {
        let mut m = Matcher::new(compile("ab").unwrap());
        m.feed(0, b"a");
        assert!(!m.feed(10, b"b"));
        assert!(m.feed(11, b"ab"));
    }

    #[test]
    fn bad_patterns_are_refused_before_any_effect() {
        assert_eq!(compile("(").unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert!(compile("").is_err());
        assert!(compile(&"a".repeat(PATTERN_MAX + 1)).is_err());
        assert!(compile("a{1000}{1000}").is_err());
    }
}
