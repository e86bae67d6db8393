//! Bounded output capture.
//!
//! A child may print without end; the host keeps a fixed amount and counts the rest. A [`Sink`]
//! receives every byte read from a pipe and decides what to keep:
//! - [`Head`] keeps the first `cap` bytes (node_process: stdout and stderr, one each);
//! - [`HeadTail`] keeps the first `head` and the last `tail` bytes and reports how many were
//!   omitted between them (run_command: one merged pipe, so the end of a failing build stays
//!   visible).
//!
//! Either way memory is bounded by the caps plus one read buffer, whatever the child prints, and
//! reading goes on to the end of the pipe so the child never blocks on a full pipe. Text is cut
//! on UTF-8 character boundaries and decoded lossily (invalid bytes become U+FFFD).

use std::collections::VecDeque;

/// Receives every byte a pipe delivers, in order.
pub trait Sink: Send + 'static {
    fn push(&mut self, bytes: &[u8]);
}

/// Keeps the first `cap` bytes.
#[derive(Clone, Debug)]
pub struct Head {
    cap: usize,
    buf: Vec<u8>,
    total: u64,
}

/// What a [`Head`] kept, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadText {
    /// The kept bytes, cut on a character boundary when the output was truncated, decoded
    /// lossily.
    pub text: String,
    /// Whether the stream had more than `cap` bytes.
    pub truncated: bool,
    /// Every byte the stream delivered, kept or not.
    pub total_bytes: u64,
}

impl Head {
    pub fn new(cap: usize) -> Self {
        Head { cap, buf: Vec::with_capacity(cap.min(64 * 1024)), total: 0 }
    }

    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    pub fn finish(self) -> HeadText {
        let truncated = self.total > self.cap as u64;
        let mut buf = self.buf;
        if truncated {
            buf.truncate(complete_prefix_len(&buf));
        }
        HeadText { text: decode_lossy(buf), truncated, total_bytes: self.total }
    }
}

impl Sink for Head {
    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.cap - self.buf.len();
        if room > 0 {
            self.buf.extend_from_slice(&bytes[..room.min(bytes.len())]);
        }
    }
}

/// Keeps the first `head` and the last `tail` bytes.
#[derive(Clone, Debug)]
pub struct HeadTail {
    head_cap: usize,
    tail_cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
}

/// What a [`HeadTail`] kept, as text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeadTailText {
    /// Head, then (when bytes were dropped) `\n[N bytes omitted]\n`, then tail.
    pub text: String,
    pub truncated: bool,
    /// Bytes of the stream not in `text` (0 when nothing was dropped).
    pub omitted_bytes: u64,
    pub total_bytes: u64,
}

impl HeadTail {
    pub fn new(head: usize, tail: usize) -> Self {
        HeadTail {
            head_cap: head,
            tail_cap: tail,
            head: Vec::with_capacity(head.min(64 * 1024)),
            tail: VecDeque::with_capacity(tail.min(64 * 1024)),
            total: 0,
        }
    }

    pub fn total_bytes(&self) -> u64 {
        self.total
    }

    pub fn finish(self) -> HeadTailText {
        let HeadTail { head_cap, tail_cap, mut head, tail, total } = self;
        let mut tail: Vec<u8> = tail.into();
        if total <= (head_cap + tail_cap) as u64 {
            // Nothing was dropped: head and tail are contiguous.
            head.extend_from_slice(&tail);
            return HeadTailText { text: decode_lossy(head), truncated: false, omitted_bytes: 0, total_bytes: total };
        }
        head.truncate(complete_prefix_len(&head));
        let skip = tail.iter().take(3).take_while(|b| is_continuation(**b)).count();
        tail.drain(..skip);
        let omitted = total - head.len() as u64 - tail.len() as u64;
        let mut text = decode_lossy(head);
        text.push_str(&format!("\n[{omitted} bytes omitted]\n"));
        text.push_str(&decode_lossy(tail));
        HeadTailText { text, truncated: true, omitted_bytes: omitted, total_bytes: total }
    }
}

impl Sink for HeadTail {
    fn push(&mut self, mut bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = self.head_cap - self.head.len();
        if room > 0 {
            let n = room.min(bytes.len());
            self.head.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
        }
        if bytes.is_empty() || self.tail_cap == 0 {
            return;
        }
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }
}

fn is_continuation(b: u8) -> bool {
    b & 0xC0 == 0x80
}

/// The length of the longest prefix of `buf` that does not end inside a character: a valid but
/// incomplete sequence at the end is cut off (invalid bytes are left for lossy decoding).
pub fn complete_prefix_len(buf: &[u8]) -> usize {
    let len = buf.len();
    // The last byte that is not a continuation byte, among the last four.
    let Some(start) = (len.saturating_sub(4)..len).rev().find(|&i| !is_continuation(buf[i])) else {
        return len;
    };
    match std::str::from_utf8(&buf[start..]) {
        Err(e) if e.error_len().is_none() => start + e.valid_up_to(),
        _ => len,
    }
}

/// UTF-8 text from bytes, with each invalid sequence replaced by U+FFFD.
pub fn decode_lossy(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head_of(chunks: &[&[u8]], cap: usize) -> HeadText {
        let mut h = Head::new(cap);
        for c in chunks {
            h.push(c);
        }
        h.finish()
    }

    #[test]
    fn head_keeps_the_first_bytes_and_counts_all() {
        let out = head_of(&[b"hello ", b"world"], 5);
        assert_eq!(out, HeadText { text: "hello".into(), truncated: true, total_bytes: 11 });
        let out = head_of(&[b"hello"], 5);
        assert_eq!(out, HeadText { text: "hello".into(), truncated: false, total_bytes: 5 });
    }

    #[test]
    fn a_character_straddling_the_cap_is_cut_whole() {
        // "aé" is 61 C3 A9: a cap of 2 would split é.
        let out = head_of(&["aé".as_bytes(), b"tail"], 2);
        assert_eq!(out.text, "a");
        assert!(out.truncated);
        // A 4-byte character straddling at every offset.
        for cap in 1..=4 {
            let out = head_of(&["😀x".as_bytes()], cap);
            assert_eq!(out.text, if cap == 4 { "😀" } else { "" }, "cap {cap}");
            assert!(out.truncated);
        }
        // Exactly at the cap, whole: kept.
        let out = head_of(&["😀".as_bytes()], 4);
        assert_eq!((out.text.as_str(), out.truncated), ("😀", false));
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let out = head_of(&[&[b'a', 0xFF, b'b', 0xC3, 0x28]], 100);
        assert_eq!(out.text, "a\u{FFFD}b\u{FFFD}(");
        // An incomplete character at the very end of an untruncated stream is invalid output.
        let out = head_of(&[&[b'a', 0xE2, 0x82]], 100);
        assert_eq!(out.text, "a\u{FFFD}");
    }

    #[test]
    fn complete_prefix_leaves_invalid_bytes_alone() {
        assert_eq!(complete_prefix_len(b""), 0);
        assert_eq!(complete_prefix_len(b"abc"), 3);
        assert_eq!(complete_prefix_len(&[b'a', 0xF0, 0x9F, 0x98]), 1);
        assert_eq!(complete_prefix_len(&[b'a', 0x80, 0x80]), 3);
        assert_eq!(complete_prefix_len(&[b'a', 0xFF]), 2);
        assert_eq!(complete_prefix_len(&[0x80, 0x80, 0x80, 0x80, 0x80]), 5);
    }

    #[test]
    fn memory_stays_bounded_while_counting() {
        let mut h = Head::new(10);
        let chunk = vec![b'x'; 65_536];
        for _ in 0..1000 {
            h.push(&chunk);
        }
        assert_eq!(h.total_bytes(), 65_536_000);
        assert!(h.buf.capacity() < 65_536);
        let mut ht = HeadTail::new(8, 16);
        for _ in 0..1000 {
            ht.push(&chunk);
        }
        assert!(ht.tail.len() <= 16 && ht.head.len() <= 8);
    }

    #[test]
    fn head_tail_without_truncation_is_the_whole_stream() {
        let mut ht = HeadTail::new(4, 4);
        for c in [b"ab".as_slice(), b"cdef", b"gh"] {
            ht.push(c);
        }
        let out = ht.finish();
        assert_eq!(out, HeadTailText { text: "abcdefgh".into(), truncated: false, omitted_bytes: 0, total_bytes: 8 });
    }

    #[test]
    fn head_tail_marks_the_omission() {
        let mut ht = HeadTail::new(3, 4);
        ht.push(b"0123456789");
        let out = ht.finish();
        assert_eq!(out.text, "012\n[3 bytes omitted]\n6789");
        assert_eq!((out.truncated, out.omitted_bytes, out.total_bytes), (true, 3, 10));
        // Small pushes roll the tail.
        let mut ht = HeadTail::new(2, 3);
        for b in b"abcdefghij" {
            ht.push(&[*b]);
        }
        assert_eq!(ht.finish().text, "ab\n[5 bytes omitted]\nhij");
    }

    #[test]
    fn head_tail_cuts_on_character_boundaries() {
        // head cap 2 splits é (C3 A9) after "a"; tail cap 3 starts inside 😀 (F0 9F 98 80).
        let mut ht = HeadTail::new(2, 3);
        ht.push("aé-----😀".as_bytes());
        let out = ht.finish();
        assert_eq!(out.text, format!("a\n[{} bytes omitted]\n", "aé-----😀".len() - 1));
        assert_eq!(out.omitted_bytes as usize, "aé-----😀".len() - 1);
        let mut ht = HeadTail::new(1, 5);
        ht.push("a-----é😀".as_bytes());
        assert_eq!(ht.finish().text, "a\n[7 bytes omitted]\n😀");
    }
}
