//! Shell words: what a word is after quote removal when nothing in it expands, and whether it
//! is safe where bash evaluates text as arithmetic.
//!
//! A word is *static* when its value is fixed by the text: literal text, quotes, escapes.
//! `r''m`, `\rm` and `"rm"` are the static word `rm`. Anything that expands (a variable, a
//! substitution, arithmetic, a tilde, a glob, a brace expansion, `$'\x..'` escapes, `$"..."`
//! translation) makes the word dynamic: its value is known only when the shell runs it.

use brush_parser::word::{Parameter, ParameterExpr, SpecialParameter, WordPiece, WordPieceWithSource};
use brush_parser::ParserOptions;

use super::{Check, RefuseReason, Refusal};

/// Parser options for scripts and words: bash grammar with extended globbing, a superset of
/// what sh, dash and zsh accept for the constructs the policy looks at.
pub(crate) fn options() -> ParserOptions {
    ParserOptions::default()
}

/// Why a word is not static.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dynamic {
    Variable,
    Substitution,
    Arithmetic,
    Glob,
    Brace,
    Tilde,
    AnsiEscape,
    Locale,
    /// Replaced by a wrapper's input at run time (`xargs -I {}`, `find -exec ... {}`).
    Input,
}

impl Dynamic {
    pub fn describe(self) -> &'static str {
        match self {
            Dynamic::Variable => "a variable",
            Dynamic::Substitution => "a command substitution",
            Dynamic::Arithmetic => "an arithmetic expansion",
            Dynamic::Glob => "a glob pattern",
            Dynamic::Brace => "a brace expansion",
            Dynamic::Tilde => "a tilde expansion",
            Dynamic::AnsiEscape => "a $'...' escape",
            Dynamic::Locale => "a $\"...\" translation",
            Dynamic::Input => "input substituted at run time (xargs -I, find's {})",
        }
    }
}

/// What the policy knows about one word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WordInfo {
    /// The value after quote removal, or why it has none until run time.
    pub value: Result<String, Dynamic>,
    /// The word becomes exactly one field (it is static, or every expansion in it is quoted, or
    /// it only expands to digits).
    pub single_field: bool,
    /// Bash may evaluate this word as arithmetic without running code: its text is numbers and
    /// operators, and its expansions are only `$?`, `$#`, `$$`, `$!`, `${#x}` or safe `$((...))`.
    pub numeric_safe: bool,
    /// The literal text before the first expansion.
    pub static_prefix: String,
}

impl WordInfo {
    /// A word known only by its value (an argv item: no shell ever sees it).
    pub fn literal(value: &str) -> Self {
        WordInfo {
            value: Ok(value.to_string()),
            single_field: true,
            numeric_safe: arith_text_safe(value),
            static_prefix: value.to_string(),
        }
    }

    pub fn static_value(&self) -> Option<&str> {
        self.value.as_deref().ok()
    }
}

/// Inputs that make brush-parser panic (integer overflow in `~+N` / `~-N`), refused first.
fn tilde_number_too_long(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| {
        if b != b'~' {
            return false;
        }
        let mut j = i + 1;
        if matches!(bytes.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        bytes[j.min(bytes.len())..].iter().take_while(|c| c.is_ascii_digit()).count() > 15
    })
}

fn word_parse_error(raw: &str, err: impl std::fmt::Display) -> Refusal {
    Refusal::new(
        raw,
        RefuseReason::ParseError,
        format!("this word does not parse ({err}); quote it plainly, for example with single quotes"),
    )
}

/// Splits a word into its pieces.
pub(crate) fn parse(raw: &str) -> Check<Vec<WordPieceWithSource>> {
    if tilde_number_too_long(raw) {
        return Err(word_parse_error(raw, "a ~+N directory-stack number is too long"));
    }
    brush_parser::word::parse(raw, &options()).map_err(|e| word_parse_error(raw, e))
}

/// Splits a here-document body that undergoes expansion into its pieces.
pub(crate) fn parse_heredoc(raw: &str) -> Check<Vec<WordPieceWithSource>> {
    if tilde_number_too_long(raw) {
        return Err(word_parse_error(raw, "a ~+N directory-stack number is too long"));
    }
    brush_parser::word::parse_heredoc(raw, &options()).map_err(|e| word_parse_error(raw, e))
}

/// Whether a parameter expansion only ever yields digits.
pub(crate) fn is_numeric_parameter(expr: &ParameterExpr) -> bool {
    match expr {
        ParameterExpr::Parameter { parameter: Parameter::Special(special), indirect: false } => matches!(
            special,
            SpecialParameter::LastExitStatus
                | SpecialParameter::PositionalParameterCount
                | SpecialParameter::ProcessId
                | SpecialParameter::LastBackgroundProcessId
        ),
        ParameterExpr::ParameterLength { indirect: false, .. } => true,
        _ => false,
    }
}

/// Whether a parameter expansion yields several fields even inside double quotes (`"$@"`).
fn is_multi_field(expr: &ParameterExpr) -> bool {
    match expr {
        ParameterExpr::Parameter { parameter, .. } => matches!(
            parameter,
            Parameter::Special(SpecialParameter::AllPositionalParameters { concatenate: false })
                | Parameter::NamedWithAllIndices { concatenate: false, .. }
        ),
        ParameterExpr::MemberKeys { concatenate: false, .. } | ParameterExpr::VariableNames { concatenate: false, .. } => true,
        // `"${@:1}"`, `"${a[@]/x/y}"` and friends keep the fields of their parameter.
        ParameterExpr::Substring { parameter, .. }
        | ParameterExpr::Transform { parameter, .. }
        | ParameterExpr::ReplaceSubstring { parameter, .. }
        | ParameterExpr::RemoveLargestPrefixPattern { parameter, .. }
        | ParameterExpr::RemoveLargestSuffixPattern { parameter, .. }
        | ParameterExpr::RemoveSmallestPrefixPattern { parameter, .. }
        | ParameterExpr::RemoveSmallestSuffixPattern { parameter, .. }
        | ParameterExpr::UppercaseFirstChar { parameter, .. }
        | ParameterExpr::UppercasePattern { parameter, .. }
        | ParameterExpr::LowercaseFirstChar { parameter, .. }
        | ParameterExpr::LowercasePattern { parameter, .. }
        | ParameterExpr::UseDefaultValues { parameter, .. }
        | ParameterExpr::AssignDefaultValues { parameter, .. }
        | ParameterExpr::UseAlternativeValue { parameter, .. }
        | ParameterExpr::IndicateErrorIfNullOrUnset { parameter, .. } => matches!(
            parameter,
            Parameter::Special(SpecialParameter::AllPositionalParameters { .. }) | Parameter::NamedWithAllIndices { .. }
        ),
        _ => false,
    }
}

#[derive(Default)]
struct State {
    value: String,
    dynamic: Option<Dynamic>,
    single_field: bool,
    numeric: String,
    numeric_ok: bool,
    prefix: String,
    /// An unquoted `{` is open; `true` once something stands between it and a `}`.
    brace_open: Option<bool>,
    /// An unquoted `[` was seen; a later `]` makes it a bracket glob.
    bracket_open: bool,
}

impl State {
    fn dynamic(&mut self, kind: Dynamic) {
        if self.dynamic.is_none() {
            self.dynamic = Some(kind);
        }
        if let Some(content) = self.brace_open.as_mut() {
            *content = true;
        }
    }

    fn literal(&mut self, text: &str) {
        self.value.push_str(text);
        self.numeric.push_str(text);
        if self.dynamic.is_none() {
            self.prefix.push_str(text);
        }
        if !text.is_empty() {
            if let Some(content) = self.brace_open.as_mut() {
                *content = true;
            }
        }
        if self.bracket_open && text.contains(']') {
            self.dynamic(Dynamic::Glob);
        }
    }

    fn unquoted_text(&mut self, text: &str) {
        for c in text.chars() {
            match c {
                '*' | '?' | '(' | ')' => self.dynamic(Dynamic::Glob),
                '[' => self.bracket_open = true,
                ']' if self.bracket_open => self.dynamic(Dynamic::Glob),
                '{' if self.brace_open.is_none() => {
                    self.brace_open = Some(false);
                    continue;
                }
                '}' => {
                    if let Some(content) = self.brace_open.take() {
                        if content {
                            self.dynamic(Dynamic::Brace);
                        }
                    }
                    continue;
                }
                _ => {}
            }
            if let Some(content) = self.brace_open.as_mut() {
                *content = true;
            }
        }
        self.value.push_str(text);
        self.numeric.push_str(text);
        if self.dynamic.is_none() {
            self.prefix.push_str(text);
        }
    }

    fn visit(&mut self, piece: &WordPiece, quoted: bool) {
        match piece {
            WordPiece::Text(s) if quoted => self.literal(s),
            WordPiece::Text(s) => self.unquoted_text(s),
            WordPiece::SingleQuotedText(s) => self.literal(s),
            WordPiece::AnsiCQuotedText(s) => {
                if s.contains('\\') {
                    self.dynamic(Dynamic::AnsiEscape);
                    self.numeric_ok = false;
                } else {
                    self.literal(s);
                }
            }
            WordPiece::DoubleQuotedSequence(inner) => {
                if let Some(content) = self.brace_open.as_mut() {
                    *content = true;
                }
                for p in inner {
                    self.visit(&p.piece, true);
                }
            }
            WordPiece::GettextDoubleQuotedSequence(inner) => {
                self.dynamic(Dynamic::Locale);
                self.numeric_ok = false;
                for p in inner {
                    self.visit(&p.piece, true);
                }
            }
            WordPiece::EscapeSequence(e) => {
                // `\<newline>` is a line continuation: it disappears.
                let decoded: String = e.chars().skip(1).filter(|&c| c != '\n').collect();
                self.literal(&decoded);
            }
            WordPiece::TildeExpansion(_) => {
                self.dynamic(Dynamic::Tilde);
                self.numeric_ok = false;
            }
            WordPiece::ParameterExpansion(expr) => {
                self.dynamic(Dynamic::Variable);
                if is_numeric_parameter(expr) {
                    self.numeric.push('0');
                } else {
                    self.numeric_ok = false;
                    if !quoted || is_multi_field(expr) {
                        self.single_field = false;
                    }
                }
            }
            WordPiece::CommandSubstitution(_) | WordPiece::BackquotedCommandSubstitution(_) => {
                self.dynamic(Dynamic::Substitution);
                self.numeric_ok = false;
                if !quoted {
                    self.single_field = false;
                }
            }
            WordPiece::ArithmeticExpression(expr) => {
                self.dynamic(Dynamic::Arithmetic);
                if arith_text_safe(&expr.value) {
                    self.numeric.push('0');
                } else {
                    self.numeric_ok = false;
                    if !quoted {
                        self.single_field = false;
                    }
                }
            }
        }
    }
}

/// Analyses a parsed word.
pub(crate) fn analyse(pieces: &[WordPieceWithSource]) -> WordInfo {
    let mut state = State { single_field: true, numeric_ok: true, ..State::default() };
    for p in pieces {
        state.visit(&p.piece, false);
    }
    let numeric_safe = state.numeric_ok && arith_text_safe(&state.numeric);
    WordInfo {
        value: match state.dynamic {
            None => Ok(state.value),
            Some(kind) => Err(kind),
        },
        single_field: state.single_field,
        numeric_safe,
        static_prefix: state.prefix,
    }
}

/// Whether bash can evaluate `text` as arithmetic without running code or reading a variable.
///
/// Bash evaluates a variable's value as an arithmetic expression, and array subscripts in it
/// undergo command substitution: `x='a[$(cmd)]'; echo $((x))` runs `cmd`. So arithmetic may
/// hold numbers (`10`, `0x1f`, `16#ff`), operators, parentheses, `$?`, `$#`, `$$`, `$!` and
/// nested `$((...))`, and no names.
pub(crate) fn arith_text_safe(text: &str) -> bool {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() || b"+-*/%<>=!&|^~?:,()".contains(&c) {
            i += 1;
        } else if c.is_ascii_digit() {
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || matches!(b[i], b'#' | b'_' | b'@')) {
                i += 1;
            }
        } else if c == b'$' {
            match (b.get(i + 1), b.get(i + 2)) {
                (Some(b'?' | b'#' | b'$' | b'!'), _) => i += 2,
                (Some(b'('), Some(b'(')) => i += 1,
                _ => return false,
            }
        } else {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod unit {
    use super::*;

    fn info(raw: &str) -> WordInfo {
        analyse(&parse(raw).unwrap())
    }

    #[test]
    fn quote_removal_gives_the_static_value() {
        for (raw, value) in [
            ("rm", "rm"),
            ("r''m", "rm"),
            ("\\rm", "rm"),
            ("\"rm\"", "rm"),
            ("'r'\"m\"", "rm"),
            ("$'rm'", "rm"),
            ("r\\\nm", "rm"),
            ("\"a\\\"b\"", "a\"b"),
            ("'*'", "*"),
            ("\"*.txt\"", "*.txt"),
            ("{}", "{}"),
            ("[", "["),
            ("a$", "a$"),
            ("a~b", "a~b"),
        ] {
            assert_eq!(info(raw).value, Ok(value.to_string()), "{raw:?}");
        }
    }

    #[test]
    fn expansions_make_a_word_dynamic() {
        for (raw, kind) in [
            ("$x", Dynamic::Variable),
            ("\"$x\"", Dynamic::Variable),
            ("${x}y", Dynamic::Variable),
            ("$(echo rm)", Dynamic::Substitution),
            ("`echo rm`", Dynamic::Substitution),
            ("$((1+2))", Dynamic::Arithmetic),
            ("*.txt", Dynamic::Glob),
            ("r?", Dynamic::Glob),
            ("[ab]", Dynamic::Glob),
            ("@(a|b)", Dynamic::Glob),
            ("{a,b}", Dynamic::Brace),
            ("{1..3}", Dynamic::Brace),
            ("{a,\"b\"}", Dynamic::Brace),
            ("~/x", Dynamic::Tilde),
            ("$'\\x72m'", Dynamic::AnsiEscape),
            ("$\"rm\"", Dynamic::Locale),
        ] {
            assert_eq!(info(raw).value, Err(kind), "{raw:?}");
        }
    }

    #[test]
    fn fields_and_numbers() {
        assert!(info("\"$x\"").single_field);
        assert!(!info("$x").single_field);
        assert!(!info("\"$@\"").single_field);
        assert!(!info("$(x)").single_field);
        assert!(info("$?").single_field);
        assert!(info("$?").numeric_safe);
        assert!(info("\"${#x}\"").numeric_safe);
        assert!(info("42").numeric_safe);
        assert!(!info("\"$x\"").numeric_safe);
        assert!(!info("'a[$(id)]'").numeric_safe);
        assert_eq!(info("\"Hello $name\"").static_prefix, "Hello ");
    }

    #[test]
    fn arithmetic_text() {
        for ok in ["1+2", " (3 * 4) % 5 ", "0x1f", "16#ff", "$?", "$# > 1", "$((1+2))*3", "-1", "1 ? 2 : 3"] {
            assert!(arith_text_safe(ok), "{ok:?}");
        }
        for bad in ["x", "i++", "a[1]", "$x", "$1", "${#x}", "$(id)", "`id`", "\"1\"", "$-", "1;2"] {
            assert!(!arith_text_safe(bad), "{bad:?}");
        }
    }

    #[test]
    fn huge_directory_stack_numbers_are_refused_not_panicking() {
        assert!(parse("~+99999999999999999999999").is_err());
        assert!(parse("~-99999999999999999999999").is_err());
        assert!(parse("~+12").is_ok());
    }
}
