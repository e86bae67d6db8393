//! The host's approval rules: `{ tool?, argv?, path?, decision }`, first match wins.
//!
//! - `tool`: the tool's name, exactly.
//! - `argv`: a pattern over the whole argv of a process call, word by word: a literal word
//!   matches itself, `"*"` any one word, and a final `"**"` the rest (none or more words).
//!   Without a final `"**"` the argv must have exactly as many words as the pattern, so
//!   `["git", "status"]` does not also allow `["git", "status", "--porcelain", ...]`: a
//!   prefix that continues is written `["git", "status", "**"]`.
//! - `path`: a glob of the write guard's kind (case-insensitive, `*` never crosses `/`,
//!   `P/**` also matches `P`) over the workspace-relative paths a call names. A call naming
//!   several paths (a patch, a move) matches an `allow` rule only when every path matches, and
//!   an `ask` or `deny` rule when any path does: a rule never lets an unlisted path through.
//!
//! A rule with no `tool`, `argv` or `path` matches every call. A rule with `argv` never
//! matches a call without one (a writing tool); one with `path` never matches a call that
//! names no path.

use crate::guard::Guard;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    Ask,
    Deny,
}

impl Decision {
    pub fn parse(s: &str) -> Option<Decision> {
        match s {
            "allow" => Some(Decision::Allow),
            "ask" => Some(Decision::Ask),
            "deny" => Some(Decision::Deny),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        }
    }
}

/// Most rules one tool set takes, and the longest argv pattern.
pub const MAX_RULES: usize = 1_000;
pub const MAX_RULE_WORDS: usize = 64;

#[derive(Debug)]
pub struct Rule {
    tool: Option<String>,
    argv: Option<Vec<String>>,
    path: Option<Guard>,
    decision: Decision,
}

impl Rule {
    /// A host's rule; an invalid glob or pattern is the message for the host's TypeError.
    pub fn new(tool: Option<String>, argv: Option<Vec<String>>, path: Option<String>, decision: Decision) -> Result<Rule, String> {
        if let Some(a) = &argv {
            if a.is_empty() || a.len() > MAX_RULE_WORDS {
                return Err(format!("argv must hold 1 to {MAX_RULE_WORDS} words"));
            }
            if let Some(i) = a.iter().position(|w| w == "**") {
                if i != a.len() - 1 {
                    return Err("\"**\" may only be the last word of an argv pattern".into());
                }
            }
        }
        let path = match path {
            None => None,
            Some(p) if p.is_empty() => return Err("path must be a non-empty glob".into()),
            Some(p) => Some(Guard::new(&[p], false)?),
        };
        Ok(Rule { tool, argv, path, decision })
    }

    fn argv_matches(pattern: &[String], argv: &[String]) -> bool {
        for (i, word) in pattern.iter().enumerate() {
            if word == "**" && i == pattern.len() - 1 {
                return true;
            }
            match argv.get(i) {
                None => return false,
                Some(a) if word == "*" || word == a => {}
                Some(_) => return false,
            }
        }
        argv.len() == pattern.len()
    }

    fn matches(&self, tool: &str, argv: Option<&[String]>, paths: &[String]) -> bool {
        if self.tool.as_deref().is_some_and(|t| t != tool) {
            return false;
        }
        if let Some(pattern) = &self.argv {
            match argv {
                Some(a) if Self::argv_matches(pattern, a) => {}
                _ => return false,
            }
        }
        if let Some(glob) = &self.path {
            if paths.is_empty() {
                return false;
            }
            let hit = |p: &String| glob.matched(p).is_some();
            let ok = match self.decision {
                Decision::Allow => paths.iter().all(hit),
                Decision::Ask | Decision::Deny => paths.iter().any(hit),
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

/// A host's rules, in order.
#[derive(Debug, Default)]
pub struct Rules(Vec<Rule>);

impl Rules {
    pub fn new(rules: Vec<Rule>) -> Result<Rules, String> {
        if rules.len() > MAX_RULES {
            return Err(format!("at most {MAX_RULES} rules"));
        }
        Ok(Rules(rules))
    }

    /// The first rule matching the call: its index and decision.
    pub fn decide(&self, tool: &str, argv: Option<&[String]>, paths: &[String]) -> Option<(usize, Decision)> {
        self.0.iter().enumerate().find(|(_, r)| r.matches(tool, argv, paths)).map(|(i, r)| (i, r.decision))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }
    fn rule(tool: Option<&str>, argv: Option<&[&str]>, path: Option<&str>, d: Decision) -> Rule {
        Rule::new(tool.map(String::from), argv.map(v), path.map(String::from), d).unwrap()
    }

    #[test]
    fn argv_patterns_literal_star_and_final_double_star() {
        let rules = Rules::new(vec![
            rule(None, Some(&["git", "status"]), None, Decision::Allow),
            rule(None, Some(&["git", "*", "--dry-run"]), None, Decision::Allow),
            rule(None, Some(&["npm", "run", "**"]), None, Decision::Allow),
            rule(None, Some(&["git", "**"]), None, Decision::Deny),
        ])
        .unwrap();
        let d = |argv: &[&str]| rules.decide("run_command", Some(&v(argv)), &[]).map(|(_, d)| d);
        assert_eq!(d(&["git", "status"]), Some(Decision::Allow));
        // Not a silent prefix: more words need a final "**".
        assert_eq!(d(&["git", "status", "--porcelain"]), Some(Decision::Deny));
        assert_eq!(d(&["git", "push", "--dry-run"]), Some(Decision::Allow));
        assert_eq!(d(&["git", "push", "--force"]), Some(Decision::Deny));
        assert_eq!(d(&["npm", "run"]), Some(Decision::Allow));
        assert_eq!(d(&["npm", "run", "build", "--", "x"]), Some(Decision::Allow));
        assert_eq!(d(&["npm", "install"]), None);
        assert_eq!(d(&["git"]), Some(Decision::Deny));
        // A writing call has no argv: argv rules never match it.
        assert_eq!(rules.decide("write_file", None, &v(&["a"])), None);
        assert!(Rule::new(None, Some(v(&["**", "x"])), None, Decision::Allow).is_err());
        assert!(Rule::new(None, Some(vec![]), None, Decision::Allow).is_err());
    }

    #[test]
    fn first_match_wins_and_tool_names_filter() {
        let rules = Rules::new(vec![
            rule(Some("write_file"), None, Some("docs/**"), Decision::Allow),
            rule(None, None, Some("**/*.lock"), Decision::Deny),
            rule(Some("write_file"), None, None, Decision::Ask),
        ])
        .unwrap();
        let d = |tool: &str, paths: &[&str]| rules.decide(tool, None, &v(paths));
        assert_eq!(d("write_file", &["docs/a.md"]), Some((0, Decision::Allow)));
        assert_eq!(d("write_file", &["DOCS/A.md"]), Some((0, Decision::Allow)), "case-insensitive like the guard");
        assert_eq!(d("write_file", &["docs"]), Some((0, Decision::Allow)), "P/** matches P");
        // docs/x.lock: the allow rule comes first.
        assert_eq!(d("write_file", &["docs/x.lock"]), Some((0, Decision::Allow)));
        assert_eq!(d("edit_file", &["Cargo.lock"]), Some((1, Decision::Deny)));
        assert_eq!(d("write_file", &["src/a.ts"]), Some((2, Decision::Ask)));
        assert_eq!(d("edit_file", &["src/a.ts"]), None);
        // `*` does not cross `/`.
        let one = Rules::new(vec![rule(None, None, Some("src/*.ts"), Decision::Allow)]).unwrap();
        assert!(one.decide("write_file", None, &v(&["src/a.ts"])).is_some());
        assert!(one.decide("write_file", None, &v(&["src/x/a.ts"])).is_none());
    }

    #[test]
    fn several_paths_allow_needs_all_deny_needs_any() {
        let rules = Rules::new(vec![rule(None, None, Some("src/**"), Decision::Allow)]).unwrap();
        assert!(rules.decide("apply_patch", None, &v(&["src/a", "src/b"])).is_some());
        assert!(rules.decide("apply_patch", None, &v(&["src/a", ".env"])).is_none(), "an unlisted path is never let through");
        let deny = Rules::new(vec![rule(None, None, Some(".env"), Decision::Deny)]).unwrap();
        assert_eq!(deny.decide("move_file", None, &v(&["src/a", ".env"])).map(|x| x.1), Some(Decision::Deny));
        assert!(deny.decide("run_command", Some(&v(&["ls"])), &[]).is_none(), "a path rule needs paths");
        assert!(Rule::new(None, None, Some("[".into()), Decision::Deny).is_err());
    }
}
