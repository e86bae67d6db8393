//! Progress of a running call, for a host that watches it (contract §18).
//!
//! A call's [`Progress`] is reached through its [`Cancel`](crate::cancel::Cancel): the host
//! asks for a watched one only when something listens, and every report on an unwatched one is
//! a branch on `None` (nothing is built, copied or locked). A watched one keeps, under a mutex
//! held only to copy bytes in or out (never while the host's code runs):
//! - the process output produced since the last update, at most [`OUTPUT_BYTES`] of it (the
//!   rest is counted and shown as `[N bytes omitted]`), decoded lossily as results are, a
//!   character cut by a read held back for the next update;
//! - one line for a person, and the count of what the tool counts (tests finished, files
//!   searched, patch files staged), which only grows.
//!
//! The host takes updates ([`Progress::take`]) from its own thread: at most one per
//! [`INTERVAL`], none once the call has [ended](Progress::end). Nothing here waits for the
//! host: an update the host does not take is merged into the next one, so a slow host sees
//! fewer, larger updates and the call runs as it would unwatched.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Least time between two updates.
pub const INTERVAL: Duration = Duration::from_millis(250);
/// Most bytes of output text in one update, the omission marker included.
pub const OUTPUT_BYTES: usize = 4096;
/// Room kept for the `\n[N bytes omitted]\n` marker.
const MARKER_ROOM: usize = 40;

/// One update, as the host delivers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Update {
    /// Since the call started.
    pub elapsed_ms: u64,
    /// One line for a person.
    pub message: String,
    /// What the tool counted so far (only grows).
    pub progress: Option<u64>,
    /// How many there are in all, when known.
    pub total: Option<u64>,
    /// Output since the previous update (at most [`OUTPUT_BYTES`]).
    pub output: Option<String>,
}

#[derive(Default)]
struct State {
    message: String,
    progress: Option<u64>,
    total: Option<u64>,
    /// Raw output not yet taken (at most `OUTPUT_BYTES - MARKER_ROOM` bytes).
    output: Vec<u8>,
    /// Output bytes dropped since the last update.
    omitted: u64,
    changed: bool,
    last: Option<Instant>,
    ended: bool,
}

struct Watch {
    started: Instant,
    state: Mutex<State>,
}

/// The progress of one call: a no-op unless the host watches it. Cloning shares it.
#[derive(Clone, Default)]
pub struct Progress(Option<Arc<Watch>>);

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Progress(watched)" } else { "Progress(none)" })
    }
}

impl Progress {
    /// A progress someone watches, its clock started now.
    pub fn watched() -> Self {
        Progress(Some(Arc::new(Watch { started: Instant::now(), state: Mutex::new(State::default()) })))
    }

    /// Whether someone watches (reports on an unwatched progress do nothing).
    pub fn is_watched(&self) -> bool {
        self.0.is_some()
    }

    fn with(&self, f: impl FnOnce(&mut State)) {
        if let Some(w) = &self.0 {
            let mut st = w.state.lock().unwrap_or_else(|e| e.into_inner());
            if !st.ended {
                f(&mut st);
            }
        }
    }

    /// Sets the line for a person (built only when watched).
    pub fn message(&self, message: impl FnOnce() -> String) {
        self.with(|st| {
            let m = message();
            if m != st.message {
                st.message = m;
                st.changed = true;
            }
        });
    }

    /// Reports what the tool has counted, and the line that says it. A count lower than the
    /// last one is ignored: progress only grows.
    pub fn count(&self, done: u64, total: Option<u64>, message: impl FnOnce() -> String) {
        self.with(|st| {
            if st.progress.is_some_and(|p| done < p) || (st.progress == Some(done) && st.total == total) {
                return;
            }
            st.progress = Some(done);
            if total.is_some() {
                st.total = total;
            }
            st.message = message();
            st.changed = true;
        });
    }

    /// Adds process output.
    pub fn output(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        self.with(|st| {
            let room = (OUTPUT_BYTES - MARKER_ROOM).saturating_sub(st.output.len());
            let n = room.min(bytes.len());
            st.output.extend_from_slice(&bytes[..n]);
            st.omitted += (bytes.len() - n) as u64;
            st.changed = true;
        });
    }

    /// The next update for the host: `None` when nothing changed, when the last one is less
    /// than [`INTERVAL`] old, or once the call has ended.
    pub fn take(&self) -> Option<Update> {
        let w = self.0.as_ref()?;
        let now = Instant::now();
        let mut st = w.state.lock().unwrap_or_else(|e| e.into_inner());
        if st.ended || !st.changed || st.last.is_some_and(|l| now.duration_since(l) < INTERVAL) {
            return None;
        }
        st.changed = false;
        st.last = Some(now);
        let output = take_output(&mut st);
        Some(Update {
            elapsed_ms: now.duration_since(w.started).as_millis() as u64,
            message: st.message.clone(),
            progress: st.progress,
            total: st.total,
            output,
        })
    }

    /// The call has settled: no update is given after this, and reports are ignored.
    pub fn end(&self) {
        if let Some(w) = &self.0 {
            let mut st = w.state.lock().unwrap_or_else(|e| e.into_inner());
            st.ended = true;
            st.output = Vec::new();
        }
    }
}

/// The output not yet taken, as text: a character cut at the end is kept for the next update
/// unless bytes were dropped after it.
fn take_output(st: &mut State) -> Option<String> {
    if st.output.is_empty() && st.omitted == 0 {
        return None;
    }
    let mut text = if st.omitted > 0 {
        let (t, _) = decode(&st.output);
        st.output.clear();
        t
    } else {
        let (t, used) = decode(&st.output);
        st.output.drain(..used);
        t
    };
    let mut omitted = std::mem::take(&mut st.omitted);
    // Invalid bytes become U+FFFD (three bytes each): cut again to the room.
    let room = OUTPUT_BYTES - MARKER_ROOM;
    if text.len() > room {
        let mut end = room;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        omitted += (text.len() - end) as u64;
        text.truncate(end);
    }
    if omitted > 0 {
        text.push_str(&format!("\n[{omitted} bytes omitted]\n"));
    }
    (!text.is_empty()).then_some(text)
}

/// `bytes` as text, each invalid sequence replaced by U+FFFD as results are (the standard's
/// "maximal subpart" rule, as `String::from_utf8_lossy`), with how many bytes the text covers:
/// a character cut at the end is left out (the process may still be writing it).
fn decode(bytes: &[u8]) -> (String, usize) {
    let mut text = String::with_capacity(bytes.len());
    let mut rest = bytes;
    loop {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                text.push_str(s);
                return (text, bytes.len());
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(n) => {
                        text.push('\u{FFFD}');
                        rest = &after[n..];
                    }
                    None => return (text, bytes.len() - after.len()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn force(p: &Progress) -> Option<Update> {
        // Lets the next take through at once (tests only).
        p.0.as_ref().unwrap().state.lock().unwrap().last = None;
        p.take()
    }

    #[test]
    fn an_unwatched_progress_keeps_nothing() {
        let p = Progress::default();
        p.output(b"hello");
        p.count(3, None, || unreachable!("the message is not built when nobody watches"));
        p.message(|| unreachable!());
        assert_eq!(p.take(), None);
    }

    #[test]
    fn updates_are_spaced_and_carry_the_output_since_the_last_one() {
        let p = Progress::watched();
        assert_eq!(p.take(), None, "nothing changed yet");
        p.output(b"one\n");
        let u = p.take().unwrap();
        assert_eq!(u.output.as_deref(), Some("one\n"));
        p.output(b"two\n");
        assert_eq!(p.take(), None, "within the interval");
        assert_eq!(force(&p).unwrap().output.as_deref(), Some("two\n"));
        p.end();
        p.output(b"three\n");
        assert_eq!(force(&p), None, "nothing after the end");
    }

    #[test]
    fn output_is_bounded_per_update_and_cut_on_characters() {
        let p = Progress::watched();
        p.output(&vec![b'x'; 10_000]);
        let out = p.take().unwrap().output.unwrap();
        assert!(out.len() <= OUTPUT_BYTES, "{}", out.len());
        assert!(out.ends_with(&format!("\n[{} bytes omitted]\n", 10_000 - (OUTPUT_BYTES - MARKER_ROOM))), "{out}");
        // A character split between two reads is given whole, in the later update.
        p.output(&"é".as_bytes()[..1]);
        assert_eq!(force(&p).unwrap().output, None);
        p.output(&"é".as_bytes()[1..]);
        assert_eq!(force(&p).unwrap().output.as_deref(), Some("é"));
        // Invalid bytes are replaced, and the text stays within the bound.
        p.output(&vec![0xff; OUTPUT_BYTES]);
        let out = force(&p).unwrap().output.unwrap();
        assert!(out.len() <= OUTPUT_BYTES && out.starts_with('\u{fffd}'), "{}", out.len());
    }

    #[test]
    fn decoding_replaces_as_results_do_and_holds_back_a_cut_character() {
        let bytes: &[u8] = b"a\xf0\x9f\x98b\xe2\x82\xffc\xed\xa0\x80d";
        assert_eq!(decode(bytes), (String::from_utf8_lossy(bytes).into_owned(), bytes.len()));
        assert_eq!(decode(&[b'a', 0xF0, 0x9F, 0x98]), ("a".to_string(), 1));
        assert_eq!(decode(&[b'a', 0xFF]), ("a\u{FFFD}".to_string(), 2));
    }

    #[test]
    fn counts_only_grow() {
        let p = Progress::watched();
        p.count(2, Some(5), || "2 of 5".into());
        p.count(1, Some(5), || "1 of 5".into());
        let u = p.take().unwrap();
        assert_eq!((u.progress, u.total, u.message.as_str()), (Some(2), Some(5), "2 of 5"));
        p.count(2, Some(5), || "again".into());
        assert_eq!(force(&p), None, "an unchanged count is no update");
    }
}
