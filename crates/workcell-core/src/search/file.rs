//! Searching one file: read through a reader that stops with the search and counts against its
//! budget, matched line by line, keeping only the lines that can still fit the output.

use std::io::{self, Read};

use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::budget::{Held, Limits};
use super::{MAX_LINE_BYTES, MAX_LINE_CHARS};

/// What searching one file gave.
pub(super) enum FileResult {
    /// Not searched: gone, or no longer a regular file, since the walk saw it.
    Skipped,
    /// Not (fully) searched: the search is stopping (cancelled, the deadline, the read budget).
    Stopped,
    Binary,
    Unreadable(String),
    LineTooLong,
    /// The lines kept, their bytes, and whether more matched than could still fit the output
    /// when the file was searched.
    Searched {
        lines: Vec<String>,
        bytes: usize,
        cut: bool,
    },
}



struct Collect<'a> {
    rel: &'a str,
    /// Most lines kept: the matches the output can still take.
    max_lines: usize,
    /// Most bytes kept: the output bytes still free.
    max_bytes: usize,
    lines: Vec<String>,
    bytes: usize,
    cut: bool,
    binary: bool,
    held: &'a Held,
}

/// `text` cut at [`MAX_LINE_CHARS`] characters, `…` marking a cut.
pub fn cut_line(bytes: &[u8]) -> String {
    let mut line = bytes;
    if let Some(l) = line.strip_suffix(b"\n") {
        line = l;
    }
    if let Some(l) = line.strip_suffix(b"\r") {
        line = l;
    }
    // Enough bytes for MAX_LINE_CHARS + 1 characters whatever their width.
    let head = &line[..line.len().min(4 * MAX_LINE_CHARS + 4)];
    let text = String::from_utf8_lossy(head);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.into_owned(),
    }
}

impl Sink for Collect<'_> {
    type Error = io::Error;

    fn matched(&mut self, _s: &Searcher, m: &SinkMatch<'_>) -> io::Result<bool> {
        for (number, line) in (m.line_number().unwrap_or(0)..).zip(m.lines()) {
            if self.lines.len() >= self.max_lines {
                self.cut = true;
                return Ok(false);
            }
            let line = format!("{}:{}: {}", self.rel, number, cut_line(line));
            if self.bytes + line.len() > self.max_bytes {
                self.cut = true;
                return Ok(false);
            }
            self.bytes += line.len();
            self.held.add(line.len());
            self.lines.push(line);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _s: &Searcher, _offset: u64) -> io::Result<bool> {
        self.binary = true;
        Ok(false)
    }
}

/// The reader a file is searched through: fails once the search is stopping (cancelled, past
/// its deadline or its read budget), so a huge file never delays any of them; counts what it
/// reads against the budget; and ends after the size `fstat` reported, which spares the read
/// that would only confirm the end (a file that grows meanwhile is searched as it was).
struct FileRead<'a, R> {
    inner: R,
    remaining: u64,
    limits: &'a Limits,
}

impl<R: Read> Read for FileRead<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.limits.stopping() {
            // Not ErrorKind::Interrupted: readers retry on that, forever.
            return Err(io::Error::other("the search is stopping"));
        }
        if self.remaining == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(self.remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.remaining -= n as u64;
        self.limits.count_read(n as u64);
        Ok(n)
    }
}

/// Read size per file: small files take one read.

pub(super) const READ_CHUNK: usize = 64 * 1024;

pub(super) fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .heap_limit(Some(MAX_LINE_BYTES))
        .build()
}


#[allow(clippy::too_many_arguments)]
pub(super) fn search_reader(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: impl Read,
    size: u64,
    rel: &str,
    room: (usize, usize),
    limits: &Limits,
    held: &Held,
) -> FileResult {
    let mut sink = Collect {
        rel,
        max_lines: room.0,
        max_bytes: room.1,
        lines: Vec::new(),
        bytes: 0,
        cut: false,
        binary: false,
        held,
    };
    // Buffered so that the searcher's 3-byte BOM peek does not cost a read of its own.
    let reader = io::BufReader::with_capacity(READ_CHUNK, FileRead { inner: file, remaining: size, limits });
    let outcome = searcher.search_reader(matcher, reader, &mut sink);
    let result = match outcome {
        Ok(()) if sink.binary => FileResult::Binary,
        Ok(()) => return FileResult::Searched { lines: sink.lines, bytes: sink.bytes, cut: sink.cut },
        Err(_) if limits.stopping() => FileResult::Stopped,
        Err(e) if e.raw_os_error().is_none() && e.to_string().contains("allocation limit") => FileResult::LineTooLong,
        Err(_) if sink.binary => FileResult::Binary,
        Err(e) => FileResult::Unreadable(match e.raw_os_error() {
            Some(n) => crate::error::errno_name(n),
            None => e.to_string(),
        }),
    };
    held.release(sink.bytes);
    result
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Cancel;
    use crate::search::pattern::compile;
    use crate::search::{SearchOptions, MAX_OUTPUT_BYTES};
    use std::sync::atomic::Ordering;

    fn limits_for(cancel: &Cancel) -> Limits {
        Limits::new(cancel, &SearchOptions::new("x"))
    }

    #[test]
    fn a_file_keeps_only_what_can_still_fit_the_output() {
        // 10,000 matching lines, 40 KiB already taken: the file keeps what fits the other 24
        // KiB and says that more matched.
        let text = "needle ".repeat(10) + "\n";
        let body = text.repeat(10_000);
        let cancel = Cancel::new();
        let limits = limits_for(&cancel);
        let held = Held::default();
        let matcher = compile("needle", false, false).unwrap();
        let room = (1000, MAX_OUTPUT_BYTES - 40 * 1024);
        let r = search_reader(&mut searcher(), &matcher, body.as_bytes(), body.len() as u64, "f", room, &limits, &held);
        let FileResult::Searched { lines, bytes, cut } = r else { panic!("not searched") };
        assert!(cut);
        assert!(bytes <= room.1, "{bytes}");
        assert!(bytes + lines[0].len() > room.1);
        assert_eq!(held.now.load(Ordering::Relaxed), bytes);
        // The line count left is honoured too.
        let r = search_reader(
            &mut searcher(),
            &matcher,
            body.as_bytes(),
            body.len() as u64,
            "f",
            (3, 1 << 20),
            &limits,
            &held,
        );
        let FileResult::Searched { lines, cut, .. } = r else { panic!("not searched") };
        assert_eq!((lines.len(), cut), (3, true));
    }

    /// Endless text that cancels the call during its first read.
    struct CancelsWhileRead<'a> {
        cancel: &'a Cancel,
        reads: usize,
    }

    impl Read for CancelsWhileRead<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.reads += 1;
            assert!(self.reads < 100, "the search kept reading after the cancellation");
            self.cancel.cancel();
            for chunk in buf.chunks_mut(5) {
                chunk.copy_from_slice(&b"line\n"[..chunk.len()]);
            }
            Ok(buf.len())
        }
    }

    #[test]
    fn a_cancellation_during_a_read_stops_the_file() {
        let cancel = Cancel::new();
        let matcher = compile("never", false, false).unwrap();
        let mut reader = CancelsWhileRead { cancel: &cancel, reads: 0 };
        let limits = limits_for(&cancel);
        let result =
            search_reader(&mut searcher(), &matcher, &mut reader, u64::MAX, "f", (10, 1000), &limits, &Held::default());
        assert!(matches!(result, FileResult::Stopped));
        assert_eq!(reader.reads, 1);
    }

    #[test]
    fn a_cancellation_before_the_first_read_never_spins() {
        // Readers retry on ErrorKind::Interrupted; a cancelled read must not look like one.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let cancel = Cancel::new();
            cancel.cancel();
            let matcher = compile("never", false, false).unwrap();
            let limits = limits_for(&cancel);
            let result =
                search_reader(&mut searcher(), &matcher, &b"line\n"[..], 5, "f", (10, 1000), &limits, &Held::default());
            let _ = tx.send(matches!(result, FileResult::Stopped));
        });
        let skipped =
            rx.recv_timeout(std::time::Duration::from_secs(20)).expect("the search spun after a cancellation");
        assert!(skipped);
    }

    #[test]
    fn the_reader_stops_at_the_reported_size() {
        let cancel = Cancel::new();
        let limits = limits_for(&cancel);
        let mut r = FileRead { inner: &b"abcdef"[..], remaining: 4, limits: &limits };
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, b"abcd");
    }

    #[test]
    fn lines_are_cut_at_500_characters() {
        assert_eq!(cut_line(b"abc\r\n"), "abc");
        let exact = "é".repeat(MAX_LINE_CHARS);
        assert_eq!(cut_line(exact.as_bytes()), exact);
        let long = "é".repeat(MAX_LINE_CHARS + 1);
        assert_eq!(cut_line(long.as_bytes()), format!("{}…", "é".repeat(MAX_LINE_CHARS)));
        // Invalid UTF-8 becomes U+FFFD.
        assert_eq!(cut_line(b"a\xffb\n"), "a\u{fffd}b");
    }
}
