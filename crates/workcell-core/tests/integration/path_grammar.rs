//! Property tests of the path grammar over generated hostile strings.
//!
//! Invariants, for every input: an accepted path never contains a `..` segment, `:`, a
//! backslash, NUL or another C0 control character, never starts with `/`, has no empty or `.`
//! segment, and normalizes idempotently. Inputs carrying a forbidden character are always
//! refused.

use proptest::prelude::*;
use workcell_core::path::{parse, MAX_PATH_BYTES, MAX_SEGMENT_BYTES};

/// Characters an attacker would try, mixed with ordinary ones.
fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec![
            'a', 'b', 'C', 'o', 'n', 'N', 'u', 'l', 'L', 'P', 'T', 'M', 'x', '1', '0', '9', '$', '~', '%',
            '.', '.', '/', '/', '/', ' ', '\\', ':', '\0', '\u{1}', '\n', '\u{1f}', '\u{7f}', '<', '>', '"',
            '|', '?', '*', 'é', '😀', '\u{b9}', '\u{feff}', '\u{2215}', '\u{ff0f}', '-', '_',
        ]),
        1 => any::<char>(),
    ]
}

fn hostile_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(hostile_char(), 0..40).prop_map(|v| v.into_iter().collect()),
        // Paths built from segments that look legitimate or nearly so.
        3 => prop::collection::vec(
            prop::sample::select(vec![
                "", ".", "..", "...", "src", "a.b", "foo.", "foo ", "CON", "nul.txt", "Com1.tar.gz", "COM10",
                "lpt\u{b2}", "c:", "a:b", "~", "$HOME", "%2f", "con ", "CONIN$", "x\\y", "\u{0}", " ", "node_modules",
            ]),
            0..8,
        )
        .prop_map(|v| v.join("/")),
        1 => (prop::collection::vec(prop::sample::select(vec!['a', 'é', '😀']), 200..300))
            .prop_map(|v| v.into_iter().collect::<String>()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 100_000, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn accepted_paths_hold_the_invariants(input in hostile_string()) {
        let forbidden = |c: char| c == ':' || c == '\\' || (c as u32) < 0x20 || "<>\"|?*".contains(c);
        match parse(&input) {
            Ok(p) => {
                let s = p.as_str();
                prop_assert!(!s.is_empty());
                prop_assert!(!s.starts_with('/'));
                prop_assert!(!s.ends_with('/'));
                prop_assert!(!s.chars().any(forbidden), "forbidden character accepted in {:?}", s);
                for seg in s.split('/') {
                    prop_assert!(!seg.is_empty() && seg != "." && seg != "..", "bad segment {:?} in {:?}", seg, s);
                    prop_assert!(!seg.ends_with('.') && !seg.ends_with(' '));
                    prop_assert!(seg.len() <= MAX_SEGMENT_BYTES);
                }
                prop_assert!(input.len() <= MAX_PATH_BYTES);
                prop_assert!(!input.starts_with('/'));
                // Idempotent: the normalized form is accepted and unchanged.
                let again = parse(s).expect("normalized form must be accepted");
                prop_assert_eq!(again.as_str(), s);
            }
            Err(e) => {
                prop_assert_eq!(e.reason(), Some("INVALID_RELATIVE_PATH"));
                prop_assert!(e.hint.is_some());
            }
        }
        if input.chars().any(forbidden) || input.split('/').any(|seg| seg == "..") {
            prop_assert!(parse(&input).is_err(), "{:?} should be refused", input);
        }
    }
}
