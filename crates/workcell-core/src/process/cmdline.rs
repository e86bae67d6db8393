//! The Windows command line a list of arguments becomes.
//!
//! Windows passes a program one command-line string, not an argument vector, and caps it at
//! 32,767 UTF-16 units. To keep a workspace's behaviour the same on every platform, the tools
//! compute the command line they would produce on Windows everywhere and refuse one that is too
//! long. The quoting is libuv's (`quote_cmd_arg`, which Node.js uses to spawn), the inverse of
//! `CommandLineToArgvW`: an argument with no space, tab or `"` is copied as is, an empty one
//! becomes `""`, any other is wrapped in `"`, with each `"` preceded by a backslash and each run
//! of backslashes doubled where it precedes a `"` or the closing quote. Arguments are joined
//! with single spaces.

/// The quoted form of one argument.
pub fn quote_windows_arg(arg: &str) -> String {
    if arg.is_empty() {
        return "\"\"".to_string();
    }
    if !arg.contains([' ', '\t', '"']) {
        return arg.to_string();
    }
    if !arg.contains(['"', '\\']) {
        return format!("\"{arg}\"");
    }
    let mut out = String::with_capacity(arg.len() + 2);
    out.push('"');
    let mut backslashes = 0usize;
    for c in arg.chars() {
        match c {
            '\\' => backslashes += 1,
            '"' => {
                out.extend(std::iter::repeat_n('\\', backslashes * 2 + 1));
                out.push('"');
                backslashes = 0;
            }
            _ => {
                out.extend(std::iter::repeat_n('\\', backslashes));
                out.push(c);
                backslashes = 0;
            }
        }
    }
    out.extend(std::iter::repeat_n('\\', backslashes * 2));
    out.push('"');
    out
}

/// The length in UTF-16 units of the command line `args` (program first) would make.
pub fn windows_command_line_units<S: AsRef<str>>(args: &[S]) -> usize {
    let quoted: usize = args.iter().map(|a| utf16_units(&quote_windows_arg(a.as_ref()))).sum();
    quoted + args.len().saturating_sub(1)
}

/// The number of UTF-16 code units of `s`.
pub fn utf16_units(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `CommandLineToArgvW`'s parsing of one argument (the rules since 2008), used to check that
    /// quoting round-trips.
    fn parse_windows(line: &str) -> Vec<String> {
        let chars: Vec<char> = line.chars().collect();
        let mut args = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            while i < chars.len() && (chars[i] == ' ' || chars[i] == '\t') {
                i += 1;
            }
            if i >= chars.len() {
                break;
            }
            let mut arg = String::new();
            let mut quoted = false;
            while i < chars.len() {
                let c = chars[i];
                if c == '\\' {
                    let mut n = 0;
                    while i < chars.len() && chars[i] == '\\' {
                        n += 1;
                        i += 1;
                    }
                    if i < chars.len() && chars[i] == '"' {
                        arg.extend(std::iter::repeat_n('\\', n / 2));
                        if n % 2 == 1 {
                            arg.push('"');
                            i += 1;
                        }
                    } else {
                        arg.extend(std::iter::repeat_n('\\', n));
                    }
                    continue;
                }
                if c == '"' {
                    if quoted && i + 1 < chars.len() && chars[i + 1] == '"' {
                        arg.push('"');
                        i += 2;
                        continue;
                    }
                    quoted = !quoted;
                    i += 1;
                    continue;
                }
                if !quoted && (c == ' ' || c == '\t') {
                    break;
                }
                arg.push(c);
                i += 1;
            }
            args.push(arg);
        }
        args
    }

    #[test]
    fn quoting_matches_libuv() {
        assert_eq!(quote_windows_arg("plain"), "plain");
        assert_eq!(quote_windows_arg(""), "\"\"");
        assert_eq!(quote_windows_arg("two words"), "\"two words\"");
        assert_eq!(quote_windows_arg("a\\b"), "a\\b");
        assert_eq!(quote_windows_arg("a\"b"), "\"a\\\"b\"");
        assert_eq!(quote_windows_arg("a b\\"), "\"a b\\\\\"");
        assert_eq!(quote_windows_arg("a\\\"b"), "\"a\\\\\\\"b\"");
        assert_eq!(quote_windows_arg("C:\\Program Files\\node.exe"), "\"C:\\Program Files\\node.exe\"");
    }

    #[test]
    fn quoting_round_trips_through_command_line_to_argv() {
        let samples = [
            "", " ", "--", "-e", "two words", "a\"b", "\\", "\\\\", "a\\", "a b\\", "\\\"", "\"\"", "ünï 😀", "tab\there", "x\\\\\"y z",
        ];
        let args: Vec<String> = std::iter::once("node".to_string()).chain(samples.iter().map(|s| s.to_string())).collect();
        let line = args.iter().map(|a| quote_windows_arg(a)).collect::<Vec<_>>().join(" ");
        assert_eq!(parse_windows(&line), args);
        assert_eq!(windows_command_line_units(&args), utf16_units(&line));
    }

    #[test]
    fn units_count_utf16_not_bytes() {
        assert_eq!(utf16_units("😀"), 2);
        assert_eq!(utf16_units("é"), 1);
        assert_eq!(windows_command_line_units(&["a", "😀"]), 4);
        assert_eq!(windows_command_line_units::<&str>(&[]), 0);
    }
}
