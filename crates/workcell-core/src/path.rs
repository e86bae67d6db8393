//! The path grammar: the only way a string from the model becomes a path.
//!
//! A path is a string of segments separated by `/`. The grammar is deliberately stricter than
//! any one operating system so that a workspace behaves the same on Linux, macOS and Windows:
//! it refuses every spelling that means something special somewhere (`..`, drive letters, UNC
//! and device prefixes, NTFS streams, reserved device names, trailing dots and spaces). Empty
//! and `.` segments are dropped. Everything else is a literal name: `~`, `$HOME` and `%2f` are
//! not expanded by anything.
//!
//! The grammar is lexical only. Resolution beneath the root (symlinks, races) is the job of
//! [`crate::root`].

use crate::error::{Error, Reason, Result};

/// Longest accepted segment, in UTF-8 bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;
/// Longest accepted path, in UTF-8 bytes (of the string as given).
pub const MAX_PATH_BYTES: usize = 4096;

/// A path that passed the grammar, normalized: non-empty segments joined by `/`, none of them
/// `.` or `..`, no leading or trailing `/`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RelPath {
    normalized: String,
    dir_only: bool,
}

impl RelPath {
    /// The normalized form, as reported back in results.
    pub fn as_str(&self) -> &str {
        &self.normalized
    }

    /// True when the path as given ended in `/` or `/.` after its last name (`src/`, `a/.`):
    /// it then names a directory only, as it does for the kernel, so a file operation on it is
    /// refused even though the reported path drops the slash.
    pub fn dir_only(&self) -> bool {
        self.dir_only
    }

    pub fn segments(&self) -> impl DoubleEndedIterator<Item = &str> {
        self.normalized.split('/')
    }

    /// The last segment.
    pub fn file_name(&self) -> &str {
        self.normalized.rsplit('/').next().unwrap_or(&self.normalized)
    }

    /// The path of the parent directory, `None` when the parent is the root.
    pub fn parent(&self) -> Option<&str> {
        self.normalized.rfind('/').map(|i| &self.normalized[..i])
    }
}

impl std::fmt::Display for RelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.normalized)
    }
}

fn refuse(why: &str) -> Error {
    Error::invalid(
        Reason::InvalidRelativePath,
        format!(
            "{why}; paths are relative to the workspace and use / between names, such as src/index.ts (no .., no leading /, no backslash or drive letter)"
        ),
    )
}

/// Decodes a path (or any string) that arrived as UTF-16, refusing lone surrogates with
/// `INVALID_UNICODE`.
pub fn from_utf16(units: &[u16]) -> Result<String> {
    let lone = || {
        Error::invalid(
            Reason::InvalidUnicode,
            "the string contains a lone UTF-16 surrogate; send well-formed Unicode text",
        )
    };
    // Runs of ASCII (most source text) are narrowed a unit to a byte, which the compiler
    // vectorizes; only the runs between them are decoded character by character. A surrogate
    // pair is never split: both halves are outside ASCII, so in the same run.
    let mut out = Vec::with_capacity(units.len());
    let mut at = 0;
    while at < units.len() {
        let ascii = units[at..].iter().position(|&u| u >= 0x80).map_or(units.len(), |n| at + n);
        out.extend(units[at..ascii].iter().map(|&u| u as u8));
        let other = units[ascii..].iter().position(|&u| u < 0x80).map_or(units.len(), |n| ascii + n);
        for c in char::decode_utf16(units[ascii..other].iter().copied()) {
            out.extend_from_slice(c.map_err(|_| lone())?.encode_utf8(&mut [0; 4]).as_bytes());
        }
        at = other;
    }
    // Every byte came from an ASCII unit or a whole encoded character.
    String::from_utf8(out).map_err(|_| lone())
}

/// Windows device names, compared case-insensitively against a segment's stem.
const DEVICE_NAMES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];

fn is_device_stem(segment: &str) -> bool {
    // The stem is everything before the first dot, with trailing spaces removed
    // (`NUL .txt`, `nul.tar.gz` and `CON` all name the device on Windows).
    let stem = segment.split('.').next().unwrap_or(segment).trim_end_matches(' ');
    let upper = stem.to_uppercase();
    if DEVICE_NAMES.contains(&upper.as_str()) {
        return true;
    }
    for prefix in ["COM", "LPT"] {
        if let Some(rest) = upper.strip_prefix(prefix) {
            let mut chars = rest.chars();
            if let (Some(c), None) = (chars.next(), chars.next()) {
                if c.is_ascii_digit() || matches!(c, '\u{b9}' | '\u{b2}' | '\u{b3}') {
                    return true;
                }
            }
        }
    }
    false
}

/// Checks one segment (already known to be neither empty nor `.`).
fn check_segment(segment: &str) -> Result<()> {
    if segment == ".." {
        return Err(refuse("a .. segment is not allowed, even one that would stay inside"));
    }
    if segment.len() > MAX_SEGMENT_BYTES {
        return Err(refuse("a path segment is longer than 255 bytes"));
    }
    if segment.ends_with('.') || segment.ends_with(' ') {
        return Err(refuse("a path segment may not end with a dot or a space"));
    }
    if is_device_stem(segment) {
        return Err(refuse("a Windows device name (CON, PRN, AUX, NUL, COM0-9, LPT0-9, CONIN$, CONOUT$) is not allowed as a name"));
    }
    Ok(())
}

/// The part of an absolute `input` beneath `root` (the workspace's canonical path): `input` must
/// start with `root` followed by `/`, and the rest (`.` for the root itself) is returned, to go
/// through [`parse`] like any relative path. `None` for every other absolute path, and for a
/// relative one. The provider adapters apply the same rule (`ts/adapters/provider-tools.ts`).
pub fn beneath_root<'a>(input: &'a str, root: &str) -> Option<&'a str> {
    if !input.starts_with('/') || !root.starts_with('/') {
        return None;
    }
    let prefix_len = if root.ends_with('/') { root.len() } else { root.len() + 1 };
    if input == root {
        return Some(".");
    }
    if input.len() >= prefix_len && input.starts_with(root) && (root.ends_with('/') || input.as_bytes()[root.len()] == b'/') {
        let rest = &input[prefix_len..];
        return Some(if rest.is_empty() { "." } else { rest });
    }
    None
}

/// Applies the grammar to `input` and returns the normalized path.
pub fn parse(input: &str) -> Result<RelPath> {
    if input.len() > MAX_PATH_BYTES {
        return Err(refuse("the path is longer than 4096 bytes"));
    }
    for c in input.chars() {
        match c {
            '\0'..='\u{1f}' => return Err(refuse("control characters (including NUL) are not allowed")),
            '\\' => return Err(refuse("a backslash is not allowed; use /")),
            ':' => return Err(refuse("a colon is not allowed (no drive letters or streams)")),
            '<' | '>' | '"' | '|' | '?' | '*' => {
                return Err(refuse("the characters < > \" | ? * are not allowed"))
            }
            _ => {}
        }
    }
    if input.starts_with('/') {
        return Err(refuse("absolute paths are not allowed"));
    }
    let mut normalized = String::with_capacity(input.len());
    let mut dir_only = false;
    for segment in input.split('/') {
        if segment.is_empty() || segment == "." {
            dir_only = true;
            continue;
        }
        check_segment(segment)?;
        dir_only = false;
        if !normalized.is_empty() {
            normalized.push('/');
        }
        normalized.push_str(segment);
    }
    if normalized.is_empty() {
        return Err(refuse("the path is empty; name a file such as README.md"));
    }
    Ok(RelPath { normalized, dir_only })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// UTF-16 units biased towards what breaks a run-based decoder: ASCII next to non-ASCII,
    /// surrogate halves alone, in order and out of order, at either end.
    fn units() -> impl proptest::strategy::Strategy<Value = Vec<u16>> {
        use proptest::prelude::*;
        proptest::collection::vec(
            prop_oneof![
                4 => 0u16..0x80,
                1 => 0x80u16..0x800,
                1 => 0x800u16..0xD800,
                1 => 0xD800u16..0xDC00,
                1 => 0xDC00u16..0xE000,
                1 => 0xE000u16..=0xFFFF,
            ],
            0..64,
        )
    }

    proptest::proptest! {
        #[test]
        fn from_utf16_agrees_with_std_on_generated_units(units in units()) {
            let ours = from_utf16(&units).ok();
            let std = String::from_utf16(&units).ok();
            proptest::prop_assert_eq!(ours, std);
        }
    }

    #[test]
    fn from_utf16_refuses_lone_surrogates_between_ascii_runs() {
        let mut units: Vec<u16> = "abc".encode_utf16().collect();
        units.push(0xD800);
        units.extend("def".encode_utf16());
        assert_eq!(from_utf16(&units).unwrap_err().reason(), Some("INVALID_UNICODE"));
        let pair: Vec<u16> = "a\u{1F600}b".encode_utf16().collect();
        assert_eq!(from_utf16(&pair).unwrap(), "a\u{1F600}b");
        assert_eq!(from_utf16(&[0xDC00, 0x61]).unwrap_err().reason(), Some("INVALID_UNICODE"));
    }

    fn ok(input: &str) -> String {
        parse(input).unwrap_or_else(|e| panic!("{input:?} refused: {e}")).as_str().to_string()
    }

    fn refused(input: &str) {
        let err = parse(input).expect_err(input);
        assert_eq!(err.reason(), Some("INVALID_RELATIVE_PATH"), "{input:?}");
    }

    #[test]
    fn a_path_refusal_says_its_rule_once() {
        // The rule is in the hint; details would only repeat it.
        for input in ["../x", "/etc/passwd", "a\\b", "C:x", "nul.txt"] {
            let err = parse(input).expect_err(input);
            assert!(err.details.is_none(), "{input:?}: {:?}", err.details);
            assert!(err.hint.as_deref().unwrap().contains("paths are relative"), "{input:?}");
        }
    }

    #[test]
    fn accepts_and_normalizes() {
        assert_eq!(ok("a"), "a");
        assert_eq!(ok("./a//b/"), "a/b");
        assert_eq!(ok("a/./b/."), "a/b");
        assert_eq!(ok("src/index.ts"), "src/index.ts");
        assert_eq!(ok("~"), "~");
        assert_eq!(ok("$HOME/x"), "$HOME/x");
        assert_eq!(ok("%2f"), "%2f");
        assert_eq!(ok(".hidden"), ".hidden");
        assert_eq!(ok("a.b.c"), "a.b.c");
        assert_eq!(ok("con0x"), "con0x");
        assert_eq!(ok("COM10"), "COM10");
        assert_eq!(ok("console.log"), "console.log");
        assert_eq!(ok("ａ／ｂ"), "ａ／ｂ"); // full-width look-alikes are literal names
        assert_eq!(ok("a\u{7f}b"), "a\u{7f}b");
        assert_eq!(ok(&"x".repeat(255)), "x".repeat(255));
    }

    #[test]
    fn refuses_empty_and_dot_only() {
        for p in ["", ".", "./", "//", "/./", "./././"] {
            refused(p);
        }
    }

    #[test]
    fn refuses_dotdot_anywhere() {
        for p in ["..", "../a", "a/..", "a/../b", "a/b/../../c", "./..", "a//..//b"] {
            refused(p);
        }
    }

    #[test]
    fn an_absolute_path_counts_only_beneath_the_root_followed_by_a_slash() {
        let root = "/home/me/ws";
        assert_eq!(beneath_root("/home/me/ws/src/a.rs", root), Some("src/a.rs"));
        assert_eq!(beneath_root("/home/me/ws/", root), Some("."));
        assert_eq!(beneath_root("/home/me/ws", root), Some("."));
        // The rest still meets the grammar: `..` is refused there.
        assert_eq!(beneath_root("/home/me/ws/../etc/passwd", root), Some("../etc/passwd"));
        refused("../etc/passwd");
        for outside in ["/home/me/wsx/secret", "/home/me/w", "/etc/passwd", "src/a.rs", "home/me/ws/a"] {
            assert_eq!(beneath_root(outside, root), None, "{outside}");
        }
        assert_eq!(beneath_root("/a/b", "/"), Some("a/b"));
    }

    #[test]
    fn refuses_absolute_unc_and_windows_forms() {
        for p in [
            "/etc/passwd", "//server/share", "\\\\server\\share", "\\a", "a\\b", "C:", "C:\\a", "c:foo",
            "C:/a", "a:b", "file.txt:stream", "\\\\?\\C:\\x", "\\\\.\\pipe\\x", "..\\a",
        ] {
            refused(p);
        }
    }

    #[test]
    fn refuses_forbidden_characters() {
        for p in ["a<b", "a>b", "a\"b", "a|b", "a?b", "a*b", "a\0b", "a\nb", "\u{1f}", "a\tb", "\r"] {
            refused(p);
        }
    }

    #[test]
    fn refuses_trailing_dot_or_space() {
        for p in ["...", "foo.", "foo ", "a/b./c", "a/b /c", "a. ", " ."] {
            refused(p);
        }
    }

    #[test]
    fn refuses_device_names() {
        for p in [
            "CON", "con", "Con", "PRN", "aux", "NUL", "nul.txt", "Com1.tar.gz", "COM0", "com9", "LPT0", "lpt9",
            "COM\u{b9}", "LPT\u{b2}", "com\u{b3}.txt", "CONIN$", "conout$", "NUL .txt", "a/nul/b", "aux.c",
        ] {
            refused(p);
        }
    }

    #[test]
    fn refuses_long_segments_and_paths() {
        refused(&"x".repeat(256));
        refused(&"é".repeat(128)); // 256 bytes
        let long = vec!["abcdefgh"; 456].join("/"); // 4103 bytes
        refused(&long);
        let fits = vec!["abcdefg"; 512].join("/"); // 4095 bytes
        assert!(parse(&fits).is_ok());
    }

    #[test]
    fn lone_surrogates_are_invalid_unicode() {
        let err = from_utf16(&[0x61, 0xd800, 0x62]).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_UNICODE"));
        assert_eq!(from_utf16(&[0xd83d, 0xde00]).unwrap(), "😀");
    }

    #[test]
    fn trailing_slash_or_dot_names_a_directory_only() {
        for (p, dir_only) in [("a", false), ("a/", true), ("a/.", true), ("a//", true), ("./a", false), ("a/./b", false), ("a/b/./", true)] {
            assert_eq!(parse(p).unwrap().dir_only(), dir_only, "{p:?}");
        }
        assert_eq!(parse("a/").unwrap().as_str(), "a");
    }

    #[test]
    fn parent_and_file_name() {
        let p = parse("a/b/c.txt").unwrap();
        assert_eq!(p.parent(), Some("a/b"));
        assert_eq!(p.file_name(), "c.txt");
        let q = parse("c.txt").unwrap();
        assert_eq!(q.parent(), None);
        assert_eq!(q.file_name(), "c.txt");
    }
}
