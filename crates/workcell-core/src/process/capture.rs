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

    /// The kept bytes as text of at most `cap` UTF-8 bytes: invalid bytes become U+FFFD (three
    /// bytes each), so what is returned is cut again, on a character boundary, to the cap.
    pub fn finish(self) -> HeadText {
        let mut truncated = self.total > self.cap as u64;
        let mut text = decode(&self.buf, !truncated);
        if text.len() > self.cap {
            let mut end = self.cap;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text.truncate(end);
            truncated = true;
        }
        HeadText { text, truncated, total_bytes: self.total }
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
            return HeadTailText { text: decode(&head, true), truncated: false, omitted_bytes: 0, total_bytes: total };
        }
        let (mut text, head_used) = decode_prefix(&head);
        // The tail starts after the cut: skip the continuation bytes of a character it split.
        let skip = tail.iter().take(3).take_while(|b| **b & 0xC0 == 0x80).count();
        tail.drain(..skip);
        let omitted = total - head_used as u64 - tail.len() as u64;
        text.push_str(&format!("\n[{omitted} bytes omitted]\n"));
        text.push_str(&decode(&tail, true));
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

/// UTF-8 text from bytes through encoding_rs's decoder, each malformed sequence replaced by
/// U+FFFD (the same replacement whatever the chunk boundaries were). With `complete` false the
/// bytes are a prefix of a longer stream: a character cut at the end is left out, not replaced.
pub fn decode(bytes: &[u8], complete: bool) -> String {
    decode_with(bytes, complete).0
}

/// [`decode`] of a prefix of a longer stream, with how many of its bytes the text covers (a
/// character cut at the end is not covered).
pub fn decode_prefix(bytes: &[u8]) -> (String, usize) {
    decode_with(bytes, false)
}

fn decode_with(bytes: &[u8], complete: bool) -> (String, usize) {
    let mut decoder = encoding_rs::UTF_8.new_decoder_without_bom_handling();
    let room = decoder.max_utf8_buffer_length(bytes.len()).unwrap_or(bytes.len().saturating_mul(3) + 4);
    let mut text = String::with_capacity(room);
    let (_, read, _) = decoder.decode_to_string(bytes, &mut text, complete);
    // What the decoder holds back (an incomplete character at the end of a prefix) is not
    // covered by the text.
    let held = if complete { 0 } else { pending_len(bytes) };
    (text, read - held)
}

/// The length of an incomplete (but so far valid) character at the end of `bytes`.
fn pending_len(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=3.min(len) {
        let b = bytes[len - back];
        if b & 0xC0 == 0x80 {
            continue;
        }
        let need = match b {
            0xC2..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF4 => 4,
            _ => return 0,
        };
        return if need > back && std::str::from_utf8(&bytes[len - back..]).is_err_and(|e| e.error_len().is_none()) {
            back
        } else {
            0
        };
    }
    0
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
        assert_eq!(decode_prefix(b"").1, 0);
        assert_eq!(decode_prefix(b"abc").1, 3);
        assert_eq!(decode_prefix(&[b'a', 0xF0, 0x9F, 0x98]).1, 1);
        assert_eq!(decode_prefix(&[b'a', 0x80, 0x80]).1, 3);
        assert_eq!(decode_prefix(&[b'a', 0xFF]).1, 2);
        assert_eq!(decode_prefix(&[0x80, 0x80, 0x80, 0x80, 0x80]).1, 5);
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

    #[test]
    fn output_cap_counts_the_returned_bytes_not_the_raw_ones() {
        // 32 KiB of 0xff: each byte becomes U+FFFD (3 bytes); what is returned stays within the cap.
        let cap = 32 * 1024;
        let out = head_of(&[&vec![0xff; cap]], cap);
        assert!(out.text.len() <= cap, "{} bytes returned for a cap of {cap}", out.text.len());
        assert!(out.truncated);
        assert!(out.text.chars().all(|c| c == '\u{fffd}'));
        assert_eq!(out.total_bytes, cap as u64);
        // Valid text at the cap is returned whole and not marked truncated.
        let out = head_of(&["é".repeat(cap / 2).as_bytes()], cap);
        assert_eq!((out.text.len(), out.truncated), (cap, false));
    }

    #[test]
    fn replacement_is_the_same_whatever_the_chunk_boundaries() {
        let bytes: Vec<u8> = b"a\xf0\x9f\x98b\xe2\x82\xffc\xed\xa0\x80d\xc3".to_vec();
        let whole = decode(&bytes, true);
        assert_eq!(whole, String::from_utf8_lossy(&bytes));
        for split in 0..=bytes.len() {
            let mut h = HeadTail::new(64, 64);
            h.push(&bytes[..split]);
            h.push(&bytes[split..]);
            assert_eq!(h.finish().text, whole, "split at {split}");
        }
    }

}
