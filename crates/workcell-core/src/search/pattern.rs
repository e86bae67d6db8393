//! The pattern and the glob of a search: parsed on the caller's thread (`check_arguments`,
//! linear in their length), compiled in the search itself within a size bound.

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use ignore::overrides::{Override, OverrideBuilder};

use super::{DFA_SIZE_LIMIT, MAX_PATTERN_BYTES, REGEX_SIZE_LIMIT};
use crate::error::{Error, Reason, Result};

const NEST_LIMIT: u32 = 64;

fn bad_argument(at: &str, hint: String, error: &str) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint)
        .with_details(serde_json::json!({ "at": format!("arguments.{at}"), "error": error }))
}

fn pattern_too_long() -> Error {
    bad_argument(
        "pattern",
        format!("the pattern is longer than {MAX_PATTERN_BYTES} bytes; search for a shorter, more specific pattern"),
        "too long",
    )
}

fn bad_pattern(msg: &str) -> Error {
    bad_argument(
        "pattern",
        format!(
            "the pattern is not a valid regular expression (Rust regex syntax): {msg}; fix it, or pass literal: true to search for the text as written"
        ),
        msg,
    )
}

/// Compiles the pattern. A pattern that does not compile is `TOOL_ARGUMENTS_INVALID` whose
/// hint carries the parser's message; one whose compiled form passes [`REGEX_SIZE_LIMIT`]
/// (`[\p{L}]{1000}`, `(\w{1,100}){1,100}`) is refused the same way, with the work to refuse it
/// bounded by that limit.
pub fn compile(pattern: &str, ignore_case: bool, literal: bool) -> Result<RegexMatcher> {
    compile_with_limit(pattern, ignore_case, literal, REGEX_SIZE_LIMIT)
}

pub(super) fn compile_with_limit(pattern: &str, ignore_case: bool, literal: bool, size_limit: usize) -> Result<RegexMatcher> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(pattern_too_long());
    }
    RegexMatcherBuilder::new()
        .case_insensitive(ignore_case)
        .fixed_strings(literal)
        .line_terminator(Some(b'\n'))
        .nest_limit(NEST_LIMIT)
        .size_limit(size_limit)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .build(pattern)
        .map_err(|e| {
            let msg = e.to_string();
            if msg.contains("size limit") {
                bad_argument(
                    "pattern",
                    format!(
                        "the pattern compiles to more than {size_limit} bytes (large counted repetitions such as {{1000}} of a class or \\w multiply its size): {msg}; use a smaller repetition count, an ASCII class such as [a-zA-Z], or literal: true"
                    ),
                    &msg,
                )
            } else {
                bad_pattern(&msg)
            }
        })
}

/// Checks the shape of the arguments without compiling anything: the lengths, the pattern's
/// syntax (a parse, linear in its length) and the glob's. Cheap enough for the caller's
/// thread; what only the compile finds (a pattern too large once compiled, an unknown Unicode
/// class) comes back from the search itself, with the same code.
pub fn check_arguments(pattern: &str, glob: Option<&str>, ignore_case: bool, literal: bool) -> Result<()> {
    let _ = ignore_case;
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(pattern_too_long());
    }
    if !literal {
        regex_syntax::ast::parse::ParserBuilder::new()
            .nest_limit(NEST_LIMIT)
            .build()
            .parse(pattern)
            .map_err(|e| bad_pattern(&e.to_string()))?;
    }
    if let Some(glob) = glob {
        glob_builder(glob)?;
    }
    Ok(())
}

fn bad_glob(e: ignore::Error) -> Error {
    let msg = e.to_string();
    bad_argument(
        "glob",
        format!("the glob is not valid: {msg}; use a glob such as *.ts, src/**/*.rs or !*.min.js"),
        &msg,
    )
}

/// The glob parsed (not compiled).
fn glob_builder(glob: &str) -> Result<OverrideBuilder> {
    if glob.len() > MAX_PATTERN_BYTES {
        return Err(bad_argument("glob", format!("the glob is longer than {MAX_PATTERN_BYTES} bytes"), "too long"));
    }
    let mut b = OverrideBuilder::new(".");
    b.add(glob).map_err(bad_glob)?;
    Ok(b)
}

pub(super) fn compile_glob(glob: &str) -> Result<Override> {
    glob_builder(glob)?.build().map_err(bad_glob)
}


#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_patterns_are_refused_by_the_compile_size_limit() {
        // Each of these compiled under the former 16 MiB limit (or spent up to it before being
        // refused); the limit bounds the work a compile may do.
        for p in [r"[\p{L}]{1000}", r"(\w{1,100}){1,100}", r"\w{5000}", r"(?i)[\p{L}\p{N}]{300}"] {
            let err = compile(p, false, false).unwrap_err();
            assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"), "{p}");
            let hint = err.hint.clone().unwrap();
            assert!(hint.contains("compiles to more than 4194304 bytes"), "{p}: {hint}");
            assert!(hint.contains("literal: true"), "{p}");
        }
        // One of them fitted the old limit: the new one is what refuses it.
        assert!(compile_with_limit(r"\w{200}", false, false, 16 << 20).is_ok());
        assert!(compile(r"\w{200}", false, false).is_err());
        // Ordinary patterns are fine.
        for p in [r"fn\s+\w+\(", r"(?i)todo|fixme", r"\bimport\s+.*from\s+['\x22]", r"[\p{L}]{20}", r"\w{30}"] {
            compile(p, false, false).unwrap_or_else(|e| panic!("{p}: {e:?}"));
        }
    }

    #[test]
    fn validation_parses_without_compiling() {
        // Syntax errors are found by the parse, with the parser's message...
        let err = check_arguments("foo(bar", None, false, false).unwrap_err();
        assert!(err.hint.unwrap().contains("unclosed group"));
        assert!(check_arguments("x", Some("a{b"), false, false).is_err());
        // ...while a pattern too large to compile passes the cheap check and is refused by the
        // search (the compile is off the caller's thread).
        check_arguments(r"[\p{L}]{1000}", Some("*.rs"), false, false).unwrap();
        let deep = "(".repeat(200) + &")".repeat(200);
        assert!(check_arguments(&deep, None, false, false).is_err(), "nesting is bounded");
        assert!(check_arguments(&"x".repeat(MAX_PATTERN_BYTES + 1), None, false, false).is_err());
    }
}
