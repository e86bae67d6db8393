//! A session's output: the first [`HEAD`] and last [`TAIL`] bytes of everything the process
//! wrote, with byte cursors counted from its start, and the `watch` keywords' alerts.
//!
//! Memory is bounded whatever the process prints: the head, a ring of the tail, one line being
//! assembled for the keywords (at most [`LINE_MAX`] bytes) and at most [`ALERTS_MAX`] alerts.

use std::collections::VecDeque;

/// Bytes kept from the start of the output.
pub const HEAD: usize = 8 * 1024;
/// Bytes kept from the end of the output.
pub const TAIL: usize = 64 * 1024;
/// Alerts kept until the next read; more are counted.
pub const ALERTS_MAX: usize = 20;
/// Longest line checked against the keywords at once (a longer one is checked in pieces).
pub const LINE_MAX: usize = 4096;
/// Bytes of a line shown in an alert.
pub const ALERT_LINE_MAX: usize = 512;

/// One keyword seen in a line.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(inline)]
pub struct Alert {
    pub keyword: String,
    pub line: String,
}

/// What a read returns of the buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Slice {
    /// The output after the cursor, `[N bytes omitted]` where bytes were not kept.
    pub text: String,
    /// Where the next read starts (bytes since the start of the output).
    pub cursor: u64,
    /// Bytes after the cursor that were not kept.
    pub omitted: u64,
}

#[derive(Debug)]
pub struct OutputBuffer {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    head_max: usize,
    tail_max: usize,
    keywords: Vec<String>,
    line: Vec<u8>,
    alerts: Vec<Alert>,
    alerts_omitted: u64,
}

impl OutputBuffer {
    pub fn new(keywords: Vec<String>) -> Self {
        Self::with_limits(HEAD, TAIL, keywords)
    }

    pub fn with_limits(head_max: usize, tail_max: usize, keywords: Vec<String>) -> Self {
        OutputBuffer {
            head: Vec::new(),
            tail: VecDeque::new(),
            total: 0,
            head_max,
            tail_max,
            keywords,
            line: Vec::new(),
            alerts: Vec::new(),
            alerts_omitted: 0,
        }
    }

    /// Bytes written so far.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Where the kept tail starts.
    fn tail_start(&self) -> u64 {
        self.total - self.tail.len() as u64
    }

    pub fn push(&mut self, mut data: &[u8]) {
        if !self.keywords.is_empty() {
            self.scan_lines(data);
        }
        self.total += data.len() as u64;
        if self.head.len() < self.head_max {
            let n = (self.head_max - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if self.tail_max == 0 {
            return;
        }
        if data.len() >= self.tail_max {
            self.tail.clear();
            self.tail.extend(&data[data.len() - self.tail_max..]);
        } else {
            let over = (self.tail.len() + data.len()).saturating_sub(self.tail_max);
            self.tail.drain(..over);
            self.tail.extend(data);
        }
    }

    fn scan_lines(&mut self, data: &[u8]) {
        for part in data.split_inclusive(|b| *b == b'\n') {
            let done = part.last() == Some(&b'\n');
            let body = if done { &part[..part.len() - 1] } else { part };
            let mut rest = body;
            while !rest.is_empty() {
                let room = LINE_MAX - self.line.len();
                let n = room.min(rest.len());
                self.line.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                if self.line.len() == LINE_MAX {
                    self.check_line();
                }
            }
            if done {
                self.check_line();
            }
        }
    }

    fn check_line(&mut self) {
        let line = std::mem::take(&mut self.line);
        for k in &self.keywords {
            if memchr::memmem::find(&line, k.as_bytes()).is_some() {
                if self.alerts.len() < ALERTS_MAX {
                    let shown = &line[..line.len().min(ALERT_LINE_MAX)];
                    let text = String::from_utf8_lossy(shown).trim_end_matches('\r').to_string();
                    self.alerts.push(Alert { keyword: k.clone(), line: text });
                } else {
                    self.alerts_omitted += 1;
                }
            }
        }
        self.line = line;
        self.line.clear();
    }

    /// Checks what is left of the last line (at the end of the output).
    pub fn finish_line(&mut self) {
        if !self.line.is_empty() {
            self.check_line();
        }
    }

    /// The alerts since the last call, and how many more there were.
    pub fn take_alerts(&mut self) -> (Vec<Alert>, u64) {
        (std::mem::take(&mut self.alerts), std::mem::take(&mut self.alerts_omitted))
    }

    /// The bytes kept from `from` (absolute) to the end, with the first absolute offset they
    /// start at (later than `from` when bytes in between were not kept).
    pub fn bytes_from(&self, from: u64) -> (u64, Vec<u8>) {
        let from = from.min(self.total);
        let mut out = Vec::new();
        let head_len = self.head.len() as u64;
        let tail_start = self.tail_start();
        let mut start = from;
        if from < head_len {
            out.extend_from_slice(&self.head[from as usize..]);
            if tail_start > head_len {
                // A gap follows the head: only the head part is contiguous.
                return (start, out);
            }
            let skip = (head_len - tail_start) as usize;
            out.extend(self.tail.iter().skip(skip));
            return (start, out);
        }
        if from < tail_start {
            start = tail_start;
        }
        let skip = (start - tail_start) as usize;
        out.extend(self.tail.iter().skip(skip));
        (start, out)
    }

    /// The output after `cursor`. While the process runs, an incomplete UTF-8 character at the
    /// end is held back for the next read (the cursor stops before it).
    pub fn read(&self, cursor: u64, complete: bool) -> Slice {
        let cursor = cursor.min(self.total);
        let head_len = self.head.len() as u64;
        let tail_start = self.tail_start().max(head_len);
        let mut bytes: Vec<u8> = Vec::new();
        let mut omitted = 0;
        let mut marker_at = None;
        if cursor < head_len {
            bytes.extend_from_slice(&self.head[cursor as usize..]);
        }
        let gap_from = cursor.max(head_len);
        if gap_from < tail_start {
            omitted = tail_start - gap_from;
            marker_at = Some(bytes.len());
        }
        let from = cursor.max(tail_start);
        let skip = (from - self.tail_start()) as usize;
        bytes.extend(self.tail.iter().skip(skip));
        let mut end = self.total;
        if !complete {
            let keep = incomplete_suffix(&bytes);
            if keep > 0 && marker_at.is_none_or(|m| bytes.len() - keep >= m) {
                bytes.truncate(bytes.len() - keep);
                end -= keep as u64;
            }
        }
        let text = match marker_at {
            Some(m) => {
                let mut t = String::from_utf8_lossy(&bytes[..m]).into_owned();
                t.push_str(&format!("[{omitted} bytes omitted]"));
                t.push_str(&String::from_utf8_lossy(&bytes[m..]));
                t
            }
            None => String::from_utf8_lossy(&bytes).into_owned(),
        };
        Slice { text, cursor: end, omitted }
    }
}

/// How many bytes at the end of `b` start a UTF-8 character that is not complete yet.
fn incomplete_suffix(b: &[u8]) -> usize {
    for back in 1..=3.min(b.len()) {
        let c = b[b.len() - back];
        if c & 0xC0 == 0x80 {
            continue;
        }
        let need = if c >= 0xF0 { 4 } else if c >= 0xE0 { 3 } else if c >= 0xC0 { 2 } else { 1 };
        return if need > back { back } else { 0 };
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_and_omitted_arithmetic() {
        let mut b = OutputBuffer::with_limits(4, 6, vec![]);
        b.push(b"0123456789abcdefghij");
        assert_eq!(b.total(), 20);
        let s = b.read(0, true);
        assert_eq!(s.text, "0123[10 bytes omitted]efghij");
        assert_eq!((s.cursor, s.omitted), (20, 10));
        let s = b.read(2, true);
        assert_eq!(s.text, "23[10 bytes omitted]efghij");
        let s = b.read(7, true);
        assert_eq!((s.text.as_str(), s.omitted), ("[7 bytes omitted]efghij", 7));
        let s = b.read(16, true);
        assert_eq!((s.text.as_str(), s.omitted, s.cursor), ("ghij", 0, 20));
        assert_eq!(b.read(20, true).text, "");
        assert_eq!(b.read(99, true).cursor, 20);
        // Nothing omitted while everything fits.
        let mut b = OutputBuffer::with_limits(4, 6, vec![]);
        b.push(b"01234");
        b.push(b"56789");
        assert_eq!(b.read(0, true).text, "0123456789");
        assert_eq!(b.read(3, true).text, "3456789");
        assert_eq!(b.bytes_from(2), (2, b"23456789".to_vec()));
        b.push(b"X");
        assert_eq!(b.read(0, true).text, "0123[1 bytes omitted]56789X");
        assert_eq!(b.bytes_from(2), (2, b"23".to_vec()));
        assert_eq!(b.bytes_from(4), (5, b"56789X".to_vec()));
    }

    #[test]
    fn a_character_cut_by_a_chunk_is_held_back() {
        let mut b = OutputBuffer::new(vec![]);
        let e = "é".as_bytes();
        b.push(&[b'a', e[0]]);
        let s = b.read(0, false);
        assert_eq!((s.text.as_str(), s.cursor), ("a", 1));
        b.push(&e[1..]);
        let s = b.read(s.cursor, false);
        assert_eq!((s.text.as_str(), s.cursor), ("é", 3));
    }

    #[test]
    fn alerts_from_lines_across_chunks_bounded() {
        let mut b = OutputBuffer::new(vec!["ERROR".into(), "warn".into()]);
        b.push(b"ok\nan ER");
        b.push(b"ROR here\nwarn");
        b.push(b"ing\n");
        let (a, n) = b.take_alerts();
        assert_eq!(a, vec![Alert { keyword: "ERROR".into(), line: "an ERROR here".into() }, Alert { keyword: "warn".into(), line: "warning".into() }]);
        assert_eq!(n, 0);
        for _ in 0..30 {
            b.push(b"ERROR\n");
        }
        let (a, n) = b.take_alerts();
        assert_eq!((a.len(), n), (ALERTS_MAX, 10));
        assert_eq!(b.take_alerts(), (vec![], 0));
        b.push(b"last warn");
        b.finish_line();
        assert_eq!(b.take_alerts().0.len(), 1);
    }
}
