//! The one statement put in front of the model's source so that `process.argv.slice(1)` is
//! exactly `arguments` inside the child.
//!
//! The child runs as `node <script> <arguments...>`, the fastest way Node starts a file, so Node
//! puts the script's path at `process.argv[1]`. The script file therefore starts with
//! [`PRELUDE`], which removes it, before any of the model's code runs. The prelude adds no line
//! (line numbers in stack traces stay the model's) and is placed so that it changes nothing
//! else:
//! - after the directive prologue, so a leading `"use strict"` still makes the module strict;
//! - a leading hashbang line (which Node ignores anyway) becomes a comment of the same length.
//!
//! The alternatives cost more or leak: `node -e <loader> -- <arguments>` keeps the script out of
//! argv but adds several milliseconds of start-up to every call, and a `--require` preload would
//! stay in `process.execArgv`, which `child_process.fork` passes on to the script's children.

/// Removes the script's own path from `process.argv`.
pub const PRELUDE: &str = "process.argv.splice(1,1);";

/// The content of the script file: `source` with [`PRELUDE`] inserted (no line added).
pub fn with_prelude(source: &str) -> String {
    let mut out = String::with_capacity(source.len() + PRELUDE.len() + 3);
    // Node strips a byte order mark before anything else: keep it first.
    let body = match source.strip_prefix('\u{feff}') {
        Some(rest) => {
            out.push('\u{feff}');
            rest
        }
        None => source,
    };
    // A hashbang line (ignored by Node) becomes a comment of the same length, so that the
    // prelude can follow the directives below it.
    let body = match body.strip_prefix("#!") {
        Some(rest) => format!("//{rest}"),
        None => body.to_string(),
    };
    match after_directives(&body) {
        Insert::At(pos) => {
            out.push_str(&body[..pos]);
            out.push_str(PRELUDE);
            out.push_str(&body[pos..]);
        }
        Insert::AfterLiteral(pos) => {
            // A directive ended by automatic semicolon insertion: end it explicitly.
            out.push_str(&body[..pos]);
            out.push(';');
            out.push_str(PRELUDE);
            out.push_str(&body[pos..]);
        }
    }
    out
}

enum Insert {
    /// Insert at this byte offset.
    At(usize),
    /// Insert after the string literal ending at this offset, adding its `;`.
    AfterLiteral(usize),
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Skips whitespace and comments from `pos`; returns the new position and whether a line
/// terminator was crossed. `None` for an unterminated block comment (a syntax error anyway).
fn skip_trivia(s: &str, mut pos: usize) -> Option<(usize, bool)> {
    let mut newline = false;
    loop {
        let rest = &s[pos..];
        let Some(c) = rest.chars().next() else { return Some((pos, newline)) };
        if is_line_terminator(c) {
            newline = true;
            pos += c.len_utf8();
        } else if c.is_whitespace() || c == '\u{feff}' {
            pos += c.len_utf8();
        } else if rest.starts_with("//") {
            let end = rest.char_indices().find(|(_, c)| is_line_terminator(*c)).map_or(rest.len(), |(i, _)| i);
            pos += end;
        } else if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/")? + 4;
            newline |= rest[..end].chars().any(is_line_terminator);
            pos += end;
        } else {
            return Some((pos, newline));
        }
    }
}

/// The end of the string literal starting at `pos` (a quote), or `None` when it is not
/// terminated on its line.
fn string_end(s: &str, pos: usize) -> Option<usize> {
    let quote = s[pos..].chars().next()?;
    let mut chars = s[pos + 1..].char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                // An escape, or a line continuation (\ CR LF counts as one).
                if let Some((_, '\r')) = chars.next() {
                    if s[pos + 1 + i + 2..].starts_with('\n') {
                        chars.next();
                    }
                }
            }
            '\n' | '\r' => return None,
            c if c == quote => return Some(pos + 1 + i + 1),
            _ => {}
        }
    }
    None
}

/// Whether a token starting with `c` can continue an expression that ends a line (then no
/// semicolon is inserted after the previous line).
fn continues_expression(rest: &str) -> bool {
    let Some(c) = rest.chars().next() else { return false };
    if matches!(c, '(' | '[' | '.' | '+' | '-' | '*' | '/' | '%' | ',' | '?' | '=' | '<' | '>' | '&' | '|' | '^' | '`' | '!') {
        // `!` cannot start a continuation except in `!=` / `!==`.
        return c != '!' || rest.starts_with("!=");
    }
    let word: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
    word == "in" || word == "instanceof"
}

/// Where the prelude goes: after the last directive of the prologue, or at the start.
fn after_directives(s: &str) -> Insert {
    let mut insert = Insert::At(0);
    let mut pos = 0;
    loop {
        let Some((start, _)) = skip_trivia(s, pos) else { return insert };
        if !s[start..].starts_with(['"', '\'']) {
            return insert;
        }
        let Some(end) = string_end(s, start) else { return insert };
        let Some((next, newline)) = skip_trivia(s, end) else { return insert };
        let rest = &s[next..];
        if rest.starts_with(';') {
            insert = Insert::At(next + 1);
            pos = next + 1;
        } else if rest.is_empty() || rest.starts_with('}') || (newline && !continues_expression(rest)) {
            insert = Insert::AfterLiteral(end);
            pos = end;
        } else {
            // A string that starts an expression (`"a".length`): not a directive.
            return insert;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> usize {
        s.split('\n').count()
    }

    #[test]
    fn plain_sources_get_the_prelude_first() {
        assert_eq!(with_prelude(""), PRELUDE);
        assert_eq!(with_prelude("console.log(1)"), format!("{PRELUDE}console.log(1)"));
        assert_eq!(with_prelude("// c\nx()"), format!("{PRELUDE}// c\nx()"));
        assert_eq!(with_prelude("(function(){})()"), format!("{PRELUDE}(function(){{}})()"));
    }

    #[test]
    fn directives_stay_first() {
        assert_eq!(with_prelude("'use strict';x()"), format!("'use strict';{PRELUDE}x()"));
        assert_eq!(with_prelude("\"use strict\"\nx()"), format!("\"use strict\";{PRELUDE}\nx()"));
        assert_eq!(
            with_prelude("// header\n/* c */ 'use strict' /* d */ ;\n\"other\";\nx()"),
            format!("// header\n/* c */ 'use strict' /* d */ ;\n\"other\";{PRELUDE}\nx()")
        );
        assert_eq!(with_prelude("'use strict'"), format!("'use strict';{PRELUDE}"));
        assert_eq!(with_prelude("'use\\'strict';x"), format!("'use\\'strict';{PRELUDE}x"));
    }

    #[test]
    fn a_string_that_starts_an_expression_is_not_a_directive() {
        assert_eq!(with_prelude("'abc'.length"), format!("{PRELUDE}'abc'.length"));
        assert_eq!(with_prelude("'use strict'\n+ 1"), format!("{PRELUDE}'use strict'\n+ 1"));
        assert_eq!(with_prelude("'use strict'\n.trim()"), format!("{PRELUDE}'use strict'\n.trim()"));
        assert_eq!(with_prelude("'a' in o"), format!("{PRELUDE}'a' in o"));
        assert_eq!(with_prelude("'use strict'\n!x"), format!("'use strict';{PRELUDE}\n!x"));
    }

    #[test]
    fn a_hashbang_becomes_a_comment() {
        assert_eq!(with_prelude("#!/usr/bin/env node\nconsole.log(1)"), format!("{PRELUDE}///usr/bin/env node\nconsole.log(1)"));
        assert_eq!(
            with_prelude("#!/usr/bin/env node\n'use strict';\nx()"),
            format!("///usr/bin/env node\n'use strict';{PRELUDE}\nx()")
        );
    }

    #[test]
    fn a_byte_order_mark_stays_first() {
        assert_eq!(with_prelude("\u{feff}'use strict';x"), format!("\u{feff}'use strict';{PRELUDE}x"));
        assert_eq!(with_prelude("\u{feff}#!/x\ny"), format!("\u{feff}{PRELUDE}///x\ny"));
    }

    #[test]
    fn no_line_is_ever_added() {
        for src in ["", "x", "'use strict'\nx", "#!/x\ny", "/* a\nb */ 'u'\n'v'\nw", "'unterminated\nx", "/* open"] {
            assert_eq!(lines(&with_prelude(src)), lines(src), "{src:?}");
        }
    }

    #[test]
    fn broken_sources_stay_broken_without_panicking() {
        for src in ["'unterminated", "/* open", "'a\\", "\"\\\r\n", "'é\\😀", "\u{feff}'use strict';x"] {
            let out = with_prelude(src);
            assert!(out.contains(PRELUDE), "{src:?}");
        }
    }
}
