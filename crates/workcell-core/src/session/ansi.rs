//! What a terminal program writes, as the model reads it: ANSI escape sequences (CSI, OSC,
//! DCS and two-byte escapes) and control characters other than newline and tab removed, `\r\n`
//! made `\n`. A streaming state machine: a sequence cut between two reads is still removed.

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    #[default]
    Text,
    Esc,
    Csi,
    /// OSC, DCS, SOS, PM, APC: until BEL or ESC \.
    Str,
    StrEsc,
}

#[derive(Debug, Default)]
pub struct Stripper {
    state: State,
}

impl Stripper {
    pub fn push(&mut self, input: &[u8], out: &mut Vec<u8>) {
        for &b in input {
            self.state = match self.state {
                State::Text => match b {
                    0x1b => State::Esc,
                    b'\n' | b'\t' => {
                        out.push(b);
                        State::Text
                    }
                    0..=0x1f | 0x7f => State::Text,
                    _ => {
                        out.push(b);
                        State::Text
                    }
                },
                State::Esc => match b {
                    b'[' => State::Csi,
                    b']' | b'P' | b'X' | b'^' | b'_' => State::Str,
                    // Intermediate bytes (ESC ( B...): the next byte ends it.
                    0x20..=0x2f => State::Esc,
                    _ => State::Text,
                },
                State::Csi => match b {
                    0x40..=0x7e => State::Text,
                    _ => State::Csi,
                },
                State::Str => match b {
                    0x07 => State::Text,
                    0x1b => State::StrEsc,
                    _ => State::Str,
                },
                State::StrEsc => match b {
                    b'\\' => State::Text,
                    _ => State::Str,
                },
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_removed_even_when_cut() {
        let raw = b"\x1b[1G\x1b[0J> \x1b[3G1+1\r\n\x1b[33m2\x1b[39m\r\n\x1b]0;title\x07ok\x1b(B\x1bPq\x1b\\!\n";
        for cut in 1..raw.len() {
            let mut s = Stripper::default();
            let mut out = Vec::new();
            s.push(&raw[..cut], &mut out);
            s.push(&raw[cut..], &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), "> 1+1\n2\nok!\n", "cut at {cut}");
        }
    }
}
