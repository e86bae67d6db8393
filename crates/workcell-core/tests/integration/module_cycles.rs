//! The core's modules depend on each other one way: the `crate::` and `super::` paths in
//! `src/` (comments and unit tests left out) form no cycle between top-level modules, nor between the files
//! of one folder, except the command policy's recursive descent (a wrapper's argument is a
//! command, checked by the checker that called the wrapper's rule).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The cycles allowed: the files of one strongly connected group, sorted. The policy's checker
/// (argv) and the rules it applies (builtins, the shell grammar, wrappers) call each other: a
/// wrapper's or a script's argument is a command.
const ALLOWED: &[&[&str]] = &[
    &["policy::argv", "policy::builtins", "policy::grammar", "policy::wrappers"],
];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `policy/argv.rs` -> `["policy", "argv"]`; `policy/mod.rs` -> `["policy"]`; `lib.rs` -> `[]`.
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text without `//` comments (doc comments included) and without string literals' contents.
fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let mut in_str = false;
        let mut prev = '\0';
        let mut kept = String::new();
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if !in_str && c == '/' && chars.get(i + 1) == Some(&'/') {
                break;
            }
            if c == '"' && prev != '\\' && !(prev == '\'' && chars.get(i + 1) == Some(&'\'')) {
                in_str = !in_str;
            }
            if !in_str {
                kept.push(c);
            }
            prev = if prev == '\\' && c == '\\' { '\0' } else { c };
            i += 1;
        }
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> Option<&str> {
    let end = s.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(s.len());
    (end > 0).then(|| &s[..end])
}

/// Every path written after `prefix` (`crate::`, `super::`), as its segments; a group
/// (`crate::{a::b, c}`) gives each member.
fn paths_after(code: &str, prefix: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find(prefix) {
        let before = rest[..i].chars().last();
        rest = &rest[i + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let mut segs = Vec::new();
        let mut s = rest;
        loop {
            if let Some(group) = s.strip_prefix('{') {
                let close = group.find('}').unwrap_or(group.len());
                for member in group[..close].split(',') {
                    let mut m: Vec<String> = segs.clone();
                    m.extend(member.trim().split("::").map(|x| x.trim().to_string()).filter(|x| !x.is_empty() && x != "{"));
                    out.push(m);
                }
                segs.clear();
                break;
            }
            match ident_at(s) {
                Some(id) => {
                    segs.push(id.to_string());
                    s = &s[id.len()..];
                    match s.strip_prefix("::") {
                        Some(t) => s = t,
                        None => break,
                    }
                }
                None => break,
            }
        }
        if !segs.is_empty() {
            out.push(segs);
        }
    }
    out
}

/// The longest prefix of `path` that is a module.
fn resolve(modules: &BTreeSet<Vec<String>>, path: &[String]) -> Option<Vec<String>> {
    (1..=path.len()).rev().map(|n| path[..n].to_vec()).find(|p| modules.contains(p))
}

/// Strongly connected groups of more than one node (Tarjan).
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        if let Some(next) = t.g.get(v) {
            for w in next {
                let w = w.as_str();
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut group = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                group.sort();
                t.out.push(group);
            }
        }
    }
    let mut t = T { g: graph, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), on: BTreeSet::new(), out: Vec::new() };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

/// The edges of `src`: between top-level modules, and between sibling files of one folder.
fn graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut list = Vec::new();
    files(src, &mut list);
    let modules: BTreeSet<Vec<String>> = list.iter().map(|f| module_of(src, f)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &list {
        let from = module_of(src, f);
        if from.is_empty() {
            continue; // lib.rs declares every module
        }
        if f.file_name().is_some_and(|n| n == "tests.rs") {
            continue; // unit tests may use any module
        }
        let mut text = std::fs::read_to_string(f).unwrap();
        if let Some(i) = text.find("#[cfg(test)]\nmod tests") {
            text.truncate(i); // a file's unit tests, at its end
        }
        let text = code(&text);
        let mut targets: Vec<Vec<String>> = paths_after(&text, "crate::");
        for p in paths_after(&text, "super::") {
            // The parent module (of a file's inline `mod tests`, the file's folder instead: its
            // paths then name no sibling and add no edge).
            let mut full = from[..from.len() - 1].to_vec();
            full.extend(p);
            targets.push(full);
        }
        for t in targets {
            let Some(to) = resolve(&modules, &t) else { continue };
            // Top-level edge.
            if from[0] != to[0] {
                g.entry(from[0].clone()).or_default().insert(to[0].clone());
                continue;
            }
            // Sibling edge: both files directly in the same folder (not the folder's mod.rs,
            // which declares them).
            if from.len() == to.len() && from.len() >= 2 && from[..from.len() - 1] == to[..to.len() - 1] && from != to {
                g.entry(from.join("::")).or_default().insert(to.join("::"));
            }
        }
    }
    g
}

#[test]
fn core_modules_have_no_import_cycles_but_the_policys_recursive_descent() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let found = cycles(&graph(&src));
    let unexpected: Vec<&Vec<String>> = found.iter().filter(|c| !ALLOWED.iter().any(|a| a.iter().copied().eq(c.iter().map(String::as_str)))).collect();
    assert!(unexpected.is_empty(), "import cycles between core modules: {unexpected:?}");
}

#[test]
fn the_cycle_check_finds_a_cycle() {
    // Two modules naming each other, and a group import.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::write(src.join("lib.rs"), "pub mod a; pub mod b; pub mod c;").unwrap();
    std::fs::write(src.join("a.rs"), "use crate::b::thing; // crate::c::not_this\n").unwrap();
    std::fs::write(src.join("b.rs"), "use crate::{c::x, error};").unwrap();
    std::fs::write(src.join("c.rs"), "fn f() { crate::a::g(); let s = \"crate::b\"; }").unwrap();
    assert_eq!(cycles(&graph(src)), vec![vec!["a".to_string(), "b".to_string(), "c".to_string()]]);
    std::fs::write(src.join("c.rs"), "fn f() { let s = \"crate::a\"; }").unwrap();
    assert!(cycles(&graph(src)).is_empty());
}
