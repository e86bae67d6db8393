//! Which grammar a script is read with, and a linear pre-scan that refuses what the parser
//! (brush-parser, bash's grammar) and the shell that runs the script could read differently.
//!
//! The shell named in argv decides the grammar. `sh`, `dash`, `ash`, `posh`, `yash` and the ksh
//! family are read with POSIX rules: a token that only bash gives a meaning to (`$'`, `$"`,
//! `&>`, `|&`, `[[`, `((`, `<<<`, `function`, `coproc`, `select`, `<(`, `>(`) is refused
//! wherever a POSIX shell would read it as syntax or split words around it, because there the
//! parser and the shell disagree about which words are commands (`true &>/dev/null sudo id` is
//! `true &` then `sudo id` to dash). For every grammar, here-documents are refused where bash's
//! own reading is irregular: inside a command or process substitution (bash ends such a body at
//! a line such as `EOF)`), and wherever a body line starts with the closing word followed by
//! more characters.
//!
//! The scan is one pass over the bytes with a stack of contexts (quotes, substitutions,
//! parameter expansions, arithmetic, here-document bodies): its cost is linear in the script,
//! and the depth of that stack is capped ([`MAX_QUOTE_NESTING`]), which also bounds the work of
//! the parser on nested quoting (`"${x:-"${x:-...`).

use super::argv::refuse;
use super::{Check, RefuseReason};

/// How a shell reads its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grammar {
    /// bash (and rbash): brush-parser's grammar.
    Bash,
    /// POSIX shells: bash-only tokens are refused.
    Posix,
    /// zsh: bash's grammar plus the zsh checks (glob qualifiers).
    Zsh,
}

impl Grammar {
    /// The grammar of a shell named in argv (`lname` in ASCII lowercase).
    pub(crate) fn of_shell(lname: &str) -> Grammar {
        match lname {
            "bash" | "rbash" => Grammar::Bash,
            "zsh" => Grammar::Zsh,
            // sh is dash, ash (busybox) or bash in POSIX mode depending on the host: the POSIX
            // subset is what they agree on. The ksh family reads `&>` and `|&` differently
            // from bash, and its extensions are not what brush-parser implements.
            _ => Grammar::Posix,
        }
    }
}

/// Deepest nesting of quotes, substitutions and parameter expansions inside one another
/// (`"$(echo "${x:-"$(...)"}")"`). Past it the script is refused (`too_complex`): the parser's
/// work on nested quoting grows with the square of this depth.
pub const MAX_QUOTE_NESTING: usize = 24;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cx {
    /// Shell code: the script itself, `$(...)`, `<(...)`, backticks. `parens` counts open `(`,
    /// `cases` open `case` (whose patterns end with an unmatched `)`).
    Code { kind: CodeKind, parens: usize, cases: usize },
    /// Inside `"..."`.
    DQuote,
    /// Inside `${...}`; `dquoted` when the expansion itself is inside double quotes.
    Param { dquoted: bool },
    /// Inside `$((...))`; `parens` counts open `(`.
    Arith { parens: usize },
    /// The body of an expanding here-document.
    HereBody,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum CodeKind {
    Top,
    Substitution,
    Backtick,
}

struct Pending {
    delimiter: Vec<u8>,
    strip_tabs: bool,
    quoted: bool,
}

struct Scanner<'a> {
    text: &'a str,
    b: &'a [u8],
    grammar: Grammar,
    stack: Vec<Cx>,
    pending: Vec<Pending>,
}

fn grammar_refusal(token: &str, what: &str) -> super::Refusal {
    refuse(
        token,
        RefuseReason::ShellGrammar,
        format!(
            "`{token}` is bash syntax ({what}); a POSIX shell such as sh or dash reads it differently, so its commands cannot be checked; use POSIX syntax, or run the script with [\"bash\", \"-c\", script]"
        ),
    )
}

fn heredoc_refusal(node: &str, why: &str) -> super::Refusal {
    refuse(
        node,
        RefuseReason::HereDocument,
        format!("{why}, which shells read differently; write the text to a file with write_file and read it from there, or use a here-document at the top level of the script with a closing word alone on its line"),
    )
}

fn is_blank(c: u8) -> bool {
    c == b' ' || c == b'\t'
}

/// Bytes that end an unquoted word.
fn is_delimiter(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>')
}

/// Words bash reads as reserved words that a POSIX shell reads as plain words.
const BASH_ONLY_WORDS: &[(&str, &str)] = &[
    ("[[", "a conditional expression"),
    ("]]", "the end of a conditional expression"),
    ("function", "a function definition"),
    ("coproc", "a coprocess"),
    ("select", "a select loop"),
];

/// Checks `text`, to be run by a shell of `grammar`.
pub(crate) fn scan(text: &str, grammar: Grammar) -> Check {
    let mut scanner = Scanner { text, b: text.as_bytes(), grammar, stack: Vec::new(), pending: Vec::new() };
    scanner.run(0, text.len(), Cx::Code { kind: CodeKind::Top, parens: 0, cases: 0 })
}

impl Scanner<'_> {
    fn posix(&self) -> bool {
        self.grammar == Grammar::Posix
    }

    fn push(&mut self, cx: Cx) -> Check {
        if self.stack.len() > MAX_QUOTE_NESTING {
            return Err(refuse(
                self.text,
                RefuseReason::TooComplex,
                format!("quotes, substitutions and ${{...}} expansions are nested more than {MAX_QUOTE_NESTING} levels deep; write a flatter script (assign inner values to variables first)"),
            ));
        }
        self.stack.push(cx);
        Ok(())
    }

    /// Whether a command or process substitution (or backticks) is open.
    fn in_substitution(&self) -> bool {
        self.stack.iter().any(|cx| matches!(cx, Cx::Code { kind: CodeKind::Substitution | CodeKind::Backtick, .. }))
    }

    fn top(&mut self) -> &mut Cx {
        self.stack.last_mut().expect("the scanner's stack is never empty while running")
    }

    /// Scans `b[start..end]` starting in context `base`. Returns at `end`, or when `base` is
    /// closed.
    fn run(&mut self, start: usize, end: usize, base: Cx) -> Check {
        let floor = self.stack.len();
        self.stack.push(base);
        let mut i = start;
        let mut word_start = true;
        while i < end && self.stack.len() > floor {
            let c = self.b[i];
            let cx = *self.stack.last().expect("not empty");
            match cx {
                Cx::Code { kind, .. } => {
                    i = self.code_byte(i, end, kind, &mut word_start)?;
                }
                Cx::DQuote | Cx::HereBody => {
                    match c {
                        b'\\' => i += 2,
                        b'"' if cx == Cx::DQuote => {
                            self.stack.pop();
                            i += 1;
                        }
                        b'`' => {
                            self.push(Cx::Code { kind: CodeKind::Backtick, parens: 0, cases: 0 })?;
                            i += 1;
                            word_start = true;
                        }
                        b'$' => i = self.dollar(i, end, true, &mut word_start)?,
                        _ => i += 1,
                    }
                }
                Cx::Param { dquoted } => match c {
                    b'\\' => i += 2,
                    b'}' => {
                        self.stack.pop();
                        i += 1;
                    }
                    b'"' => {
                        self.push(Cx::DQuote)?;
                        i += 1;
                    }
                    b'\'' if dquoted => {
                        // bash and dash disagree about single quotes in "${x:-'...'}".
                        return Err(refuse(
                            "${...'...'}",
                            RefuseReason::ShellGrammar,
                            "single quotes inside a double-quoted ${...} expansion are read differently by different shells; assign the value to a variable first, or drop the inner quotes",
                        ));
                    }
                    b'\'' => i = self.single_quote(i, end),
                    b'`' => {
                        self.push(Cx::Code { kind: CodeKind::Backtick, parens: 0, cases: 0 })?;
                        i += 1;
                        word_start = true;
                    }
                    b'$' => i = self.dollar(i, end, true, &mut word_start)?,
                    _ => i += 1,
                },
                Cx::Arith { parens } => match c {
                    b'(' => {
                        *self.top() = Cx::Arith { parens: parens + 1 };
                        i += 1;
                    }
                    b')' if parens > 0 => {
                        *self.top() = Cx::Arith { parens: parens - 1 };
                        i += 1;
                    }
                    b')' => {
                        // `))` closes; a lone `)` is left to the parser.
                        self.stack.pop();
                        i += if self.b.get(i + 1) == Some(&b')') { 2 } else { 1 };
                    }
                    b'\\' => i += 2,
                    b'"' => {
                        self.push(Cx::DQuote)?;
                        i += 1;
                    }
                    b'\'' => i = self.single_quote(i, end),
                    b'`' => {
                        self.push(Cx::Code { kind: CodeKind::Backtick, parens: 0, cases: 0 })?;
                        i += 1;
                    }
                    b'$' => i = self.dollar(i, end, true, &mut word_start)?,
                    _ => i += 1,
                },
            }
        }
        self.stack.truncate(floor);
        Ok(())
    }

    /// Skips `'...'` starting at `i` (the quote); returns the index after the closing quote.
    fn single_quote(&self, i: usize, end: usize) -> usize {
        match self.b[i + 1..end].iter().position(|&c| c == b'\'') {
            Some(p) => i + 1 + p + 1,
            None => end,
        }
    }

    /// `$` at `i` in any context.
    fn dollar(&mut self, i: usize, end: usize, quoted: bool, word_start: &mut bool) -> Check<usize> {
        match self.b.get(i + 1) {
            Some(b'(') if self.b.get(i + 2) == Some(&b'(') => {
                self.push(Cx::Arith { parens: 0 })?;
                Ok(i + 3)
            }
            Some(b'(') => {
                self.push(Cx::Code { kind: CodeKind::Substitution, parens: 0, cases: 0 })?;
                *word_start = true;
                Ok(i + 2)
            }
            Some(b'{') => {
                let dquoted = quoted || self.stack.iter().any(|cx| matches!(cx, Cx::DQuote | Cx::HereBody));
                self.push(Cx::Param { dquoted })?;
                Ok(i + 2)
            }
            Some(b'\'') if !quoted => {
                if self.posix() {
                    return Err(grammar_refusal("$'", "ANSI-C quoting"));
                }
                // $'...': backslash escapes a quote.
                let mut j = i + 2;
                while j < end {
                    match self.b[j] {
                        b'\\' => j += 2,
                        b'\'' => return Ok(j + 1),
                        _ => j += 1,
                    }
                }
                Ok(end)
            }
            Some(b'"') if !quoted => {
                if self.posix() {
                    return Err(grammar_refusal("$\"", "locale translation"));
                }
                self.push(Cx::DQuote)?;
                Ok(i + 2)
            }
            _ => Ok(i + 1),
        }
    }

    /// One step in a code context. Returns the next index.
    fn code_byte(&mut self, i: usize, end: usize, kind: CodeKind, word_start: &mut bool) -> Check<usize> {
        let b = self.b;
        let c = b[i];
        let next = b.get(i + 1).copied();
        let at_word_start = *word_start;
        *word_start = false;
        match c {
            b'\\' => {
                if next == Some(b'\n') {
                    // A line continuation: the word goes on.
                    *word_start = at_word_start;
                }
                Ok(i + 2)
            }
            b'\'' => Ok(self.single_quote(i, end)),
            b'"' => {
                self.push(Cx::DQuote)?;
                Ok(i + 1)
            }
            b'`' => {
                if kind == CodeKind::Backtick {
                    self.stack.pop();
                } else {
                    self.push(Cx::Code { kind: CodeKind::Backtick, parens: 0, cases: 0 })?;
                    *word_start = true;
                }
                Ok(i + 1)
            }
            b'$' => self.dollar(i, end, false, word_start),
            b'#' if at_word_start => {
                let stop = b[i..end].iter().position(|&c| c == b'\n').map_or(end, |p| i + p);
                *word_start = true;
                Ok(stop)
            }
            b'\n' => {
                *word_start = true;
                if self.pending.is_empty() {
                    return Ok(i + 1);
                }
                self.here_bodies(i + 1, end)
            }
            b' ' | b'\t' | b';' => {
                *word_start = true;
                Ok(i + 1)
            }
            b'&' => {
                *word_start = true;
                if next == Some(b'>') && self.posix() {
                    return Err(grammar_refusal("&>", "a redirection of both output streams"));
                }
                Ok(i + 1)
            }
            b'|' => {
                *word_start = true;
                if next == Some(b'&') && self.posix() {
                    return Err(grammar_refusal("|&", "a pipe of both output streams"));
                }
                Ok(i + 1)
            }
            b'(' => {
                *word_start = true;
                if next == Some(b'(') && self.posix() {
                    return Err(grammar_refusal("((", "an arithmetic command"));
                }
                if let Cx::Code { kind, parens, cases } = *self.top() {
                    *self.top() = Cx::Code { kind, parens: parens + 1, cases };
                }
                Ok(i + 1)
            }
            b')' => {
                *word_start = true;
                if let Cx::Code { kind, parens, cases } = *self.top() {
                    if parens > 0 {
                        *self.top() = Cx::Code { kind, parens: parens - 1, cases };
                    } else if cases == 0 && kind == CodeKind::Substitution {
                        self.stack.pop();
                    }
                }
                Ok(i + 1)
            }
            b'<' | b'>' => {
                *word_start = true;
                if next == Some(b'(') {
                    if self.posix() {
                        return Err(grammar_refusal(if c == b'<' { "<(" } else { ">(" }, "a process substitution"));
                    }
                    self.push(Cx::Code { kind: CodeKind::Substitution, parens: 0, cases: 0 })?;
                    return Ok(i + 2);
                }
                if c == b'<' && next == Some(b'<') {
                    if b.get(i + 2) == Some(&b'<') {
                        if self.posix() {
                            return Err(grammar_refusal("<<<", "a here-string"));
                        }
                        return Ok(i + 3);
                    }
                    return self.here_operator(i, end);
                }
                if c == b'>' && next == Some(b'|') {
                    return Ok(i + 2);
                }
                Ok(i + 1)
            }
            _ => {
                if at_word_start {
                    let stop = b[i..end].iter().position(|&c| is_delimiter(c)).map_or(end, |p| i + p);
                    let word = &b[i..stop];
                    let plain = !word.iter().any(|c| matches!(c, b'\'' | b'"' | b'\\' | b'$' | b'`'));
                    if plain {
                        if word == b"coproc" {
                            // bash reads `coproc NAME` followed by a compound command on a later
                            // line differently from the parser (the name is then a command).
                            return Err(refuse(
                                "coproc",
                                RefuseReason::ShellGrammar,
                                "coprocesses are read differently by bash and the policy's parser; run the command in the background with & and use a file or a pipe instead",
                            ));
                        }
                        if self.posix() {
                            if let Some((w, what)) = BASH_ONLY_WORDS.iter().find(|(w, _)| w.as_bytes() == word) {
                                return Err(grammar_refusal(w, what));
                            }
                        }
                        if let Cx::Code { kind, parens, cases } = *self.top() {
                            if word == b"case" {
                                *self.top() = Cx::Code { kind, parens, cases: cases + 1 };
                            } else if word == b"esac" && cases > 0 {
                                *self.top() = Cx::Code { kind, parens, cases: cases - 1 };
                            }
                        }
                        return Ok(stop);
                    }
                }
                Ok(i + 1)
            }
        }
    }

    /// `<<` or `<<-` at `i`: records the here-document whose body starts after the next newline.
    fn here_operator(&mut self, i: usize, end: usize) -> Check<usize> {
        let b = self.b;
        if self.in_substitution() {
            return Err(heredoc_refusal("<<", "a here-document inside $(...), backticks or <(...) ends where bash's own reading of the substitution says"));
        }
        let mut j = i + 2;
        let strip_tabs = b.get(j) == Some(&b'-');
        if strip_tabs {
            j += 1;
        }
        while j < end && is_blank(b[j]) {
            j += 1;
        }
        let mut delimiter: Vec<u8> = Vec::new();
        let mut quoted = false;
        while j < end && !is_delimiter(b[j]) {
            match b[j] {
                b'\'' => {
                    quoted = true;
                    let close = self.single_quote(j, end);
                    delimiter.extend_from_slice(&b[j + 1..close.saturating_sub(1).max(j + 1)]);
                    j = close;
                }
                b'"' => {
                    quoted = true;
                    let mut k = j + 1;
                    while k < end && b[k] != b'"' {
                        if b[k] == b'\\' && k + 1 < end && matches!(b[k + 1], b'"' | b'\\' | b'$' | b'`') {
                            k += 1;
                        }
                        delimiter.push(b[k]);
                        k += 1;
                    }
                    j = k + 1;
                }
                b'\\' => {
                    quoted = true;
                    if j + 1 < end {
                        delimiter.push(b[j + 1]);
                    }
                    j += 2;
                }
                b'$' | b'`' => {
                    // A delimiter with an expansion in it: shells disagree about its value.
                    return Err(heredoc_refusal("<<", "a here-document's closing word contains $ or a backtick"));
                }
                c => {
                    delimiter.push(c);
                    j += 1;
                }
            }
        }
        if delimiter.iter().any(|c| c.is_ascii_control()) {
            // bash reads a carriage return as part of the word, the parser as a blank (and an
            // empty closing word followed by `&&` sent it into an endless loop that took all
            // memory): a closing word with a control character is no word both agree on.
            return Err(heredoc_refusal(
                "<<",
                "a here-document's closing word contains a control character (such as a carriage return: use \\n line ends and a plain word such as EOF)",
            ));
        }
        self.pending.push(Pending { delimiter, strip_tabs, quoted });
        Ok(j.min(end).max(i + 2))
    }

    /// Reads the bodies of the pending here-documents from `start`; returns where code resumes.
    fn here_bodies(&mut self, start: usize, end: usize) -> Check<usize> {
        let pending = std::mem::take(&mut self.pending);
        let mut pos = start;
        for doc in pending {
            let body_start = pos;
            let mut closed = false;
            while pos < end {
                let line_end = self.b[pos..end].iter().position(|&c| c == b'\n').map_or(end, |p| pos + p);
                let mut line = &self.b[pos..line_end];
                if doc.strip_tabs {
                    while let [b'\t', rest @ ..] = line {
                        line = rest;
                    }
                }
                let body_end = pos;
                pos = (line_end + 1).min(end);
                if line == doc.delimiter {
                    if !doc.quoted {
                        self.run(body_start, body_end, Cx::HereBody)?;
                    }
                    closed = true;
                    break;
                }
                if !doc.delimiter.is_empty() && line.starts_with(&doc.delimiter) {
                    return Err(heredoc_refusal(
                        &String::from_utf8_lossy(line),
                        "a here-document line starts with the closing word followed by more characters",
                    ));
                }
            }
            if !closed && !doc.quoted {
                self.run(body_start, end, Cx::HereBody)?;
            }
        }
        Ok(pos)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn reason(text: &str, grammar: Grammar) -> Option<&'static str> {
        scan(text, grammar).err().map(|r| r.reason.as_str())
    }

    #[test]
    fn bash_only_tokens_are_refused_for_posix_shells_only() {
        for text in [
            "echo $'x'",
            "echo $\"x\"",
            "true &>/dev/null",
            "a |& b",
            "[[ a ]]",
            "((1))",
            "cat <<< x",
            "function f { :; }",
            "diff <(a) b",
            "tee >(a)",
            "echo $(echo $'x')",
            "x=\"$(true &>f)\"",
        ] {
            assert_eq!(reason(text, Grammar::Posix), Some("shell_grammar"), "{text:?}");
            assert_eq!(reason(text, Grammar::Bash), None, "{text:?}");
        }
        for text in [
            "echo '$'\"'\"'x'",
            "echo \"$'x'\"",
            "echo '[[' \"&>\" \\&> f",
            "echo a#[[",
            "echo x # [[ a ]] $'",
            "echo $((1 << 2)) $(( (1) ))",
            "cmd >&2 2>&1 >| f",
            "( (true) )",
            "echo [[a",
            "echo function_name",
            "cat <<'EOF'\n[[ $' &>\nEOF\necho ok",
        ] {
            assert_eq!(reason(text, Grammar::Posix), None, "{text:?}");
        }
    }

    #[test]
    fn coproc_is_refused_for_every_grammar() {
        for grammar in [Grammar::Bash, Grammar::Posix, Grammar::Zsh] {
            assert_eq!(reason("coproc evil\n{ true; }", grammar), Some("shell_grammar"));
        }
        assert_eq!(reason("echo 'coproc'", Grammar::Bash), None);
    }

    #[test]
    fn a_here_document_closed_by_a_carriage_return_is_refused_before_the_parser_loops() {
        // `<<\r&& ` once sent the shell parser into an endless loop that allocated until the
        // host ran out of memory: the scan refuses it before the parser sees it.
        for text in ["<<\r&& ", "<< \r&& ", "cat <<\r&& echo", "cat <<'\r' && x", "cat <<E\rOF\nx\nE\rOF\n"] {
            for grammar in [Grammar::Bash, Grammar::Posix] {
                assert_eq!(reason(text, grammar), Some("here_document"), "{text:?}");
            }
        }
    }

    #[test]
    fn here_documents_inside_substitutions_or_with_odd_closing_lines_are_refused() {
        for text in [
            "echo $(cat <<EOF\nx\nEOF\n)",
            "echo `cat <<EOF\nx\nEOF\n`",
            "echo \"$(cat <<'EOF'\nx\nEOF\n)\"",
            "cat <<EOF\nx\nEOF)\nEOF",
            "cat <<-EOF\n\tx\n\tEOF)\nEOF",
            "cat <<\"EOF\"\nEOF \nEOF",
            "cat <<E$x\nE\n",
        ] {
            for grammar in [Grammar::Bash, Grammar::Posix] {
                assert_eq!(reason(text, grammar), Some("here_document"), "{text:?}");
            }
        }
        assert_eq!(reason("diff <(cat <<EOF\nx\nEOF\n) y", Grammar::Bash), Some("here_document"));
        for text in ["cat <<EOF\n$(date)\nEOF\necho ok", "cat <<-EOF\n\t\tx\n\tEOF\n", "echo $(case x in a) echo;; esac) ok"] {
            assert_eq!(reason(text, Grammar::Posix), None, "{text:?}");
        }
    }

    #[test]
    fn nesting_of_quotes_and_expansions_is_capped() {
        let deep = |n: usize| format!("echo {}x{}", "\"${x:-".repeat(n), "}\"".repeat(n));
        assert_eq!(reason(&deep(MAX_QUOTE_NESTING / 2), Grammar::Bash), None);
        assert_eq!(reason(&deep(MAX_QUOTE_NESTING / 2 + 1), Grammar::Bash), Some("too_complex"));
    }
}
