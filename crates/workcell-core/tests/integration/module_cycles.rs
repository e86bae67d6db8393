//! The modules of every layer depend on each other one way:
//! - the core: the `crate::` and `super::` paths in `src/` (comments and unit tests left out)
//!   form no cycle between top-level modules, nor between the files of one folder, except the
//!   command policy's recursive descent (a wrapper's argument is a command, checked by the
//!   checker that called the wrapper's rule);
//! - the binding (the package's `src/`): the same, with no exception;
//! - the TypeScript layer (`ts/`): its relative imports form no cycle. `import type` counts too:
//!   a type-only cycle still ties two modules' declarations together (neither can be read or
//!   moved without the other), and it becomes a load-order cycle the day one of its edges
//!   carries a value.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The cycles allowed: the files of one strongly connected group, sorted. The policy's checker
/// (argv) and the rules it applies (builtins, the shell grammar, wrappers) call each other: a
/// wrapper's or a script's argument is a command.
const ALLOWED: &[&[&str]] = &[
    &["policy::argv", "policy::builtins", "policy::grammar", "policy::wrappers"],
];

/// The files beneath `dir` whose extension is `ext`.
fn files_with(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files_with(&p, ext, out);
        } else if p.extension().is_some_and(|x| x == ext) {
            out.push(p);
        }
    }
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    files_with(dir, "rs", out)
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

/// The package's root (the binding's `src/`, `ts/`).
fn package_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn binding_modules_have_no_import_cycles() {
    let src = package_root().join("src");
    let g = graph(&src);
    assert!(g.len() > 10, "the binding's modules were not found: {g:?}");
    let found = cycles(&g);
    assert!(found.is_empty(), "import cycles between the binding's modules: {found:?}");
}

#[test]
fn the_binding_names_the_core_only_through_its_facade() {
    let src = package_root().join("src");
    let mut list = Vec::new();
    files(&src, &mut list);
    let mut outside = Vec::new();
    for f in &list {
        let text = code(&std::fs::read_to_string(f).unwrap());
        for p in paths_after(&text, "workcell_core::") {
            if p.first().map(String::as_str) != Some("api") {
                outside.push(format!("{}: workcell_core::{}", f.file_name().unwrap().to_string_lossy(), p.join("::")));
            }
        }
    }
    assert!(!list.is_empty());
    assert!(outside.is_empty(), "the binding names core modules beside workcell_core::api (add what it needs to the api module of crates/workcell-core/src/lib.rs): {outside:?}");
}

/// The TypeScript text without comments (strings kept: they hold the specifiers).
fn ts_code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            out.push(c);
            if c == b'\\' && i + 1 < b.len() {
                out.push(b[i + 1]);
                i += 2;
                continue;
            }
            if c == q {
                quote = None;
            }
            i += 1;
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        if c == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
            continue;
        }
        if matches!(c, b'"' | b'\'' | b'`') {
            quote = Some(c);
        }
        out.push(c);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The relative specifiers a TypeScript module imports or re-exports: `import ... from "./x.js"`,
/// `import type`, `export ... from`, `import "./x.js"`, `import("./x.js")`.
fn ts_specifiers(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in ["from", "import"] {
        let mut at = 0;
        while let Some(i) = code[at..].find(word) {
            let start = at + i;
            at = start + word.len();
            let before = code[..start].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$' || c == '.') {
                continue;
            }
            let mut rest = code[at..].trim_start();
            if word == "import" {
                if let Some(r) = rest.strip_prefix('(') {
                    rest = r.trim_start();
                }
            } else if !code[at..].starts_with(char::is_whitespace) && !code[at..].starts_with(['"', '\'']) {
                continue;
            }
            let Some(q) = rest.chars().next().filter(|c| matches!(c, '"' | '\'')) else { continue };
            let Some(end) = rest[1..].find(q) else { continue };
            let spec = &rest[1..1 + end];
            if spec.starts_with("./") || spec.starts_with("../") {
                out.push(spec.to_string());
            }
        }
    }
    out
}

/// `p` with its `.` and `..` segments resolved lexically.
fn normal(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The import edges between the modules of a TypeScript folder, by path relative to it.
fn ts_graph(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut list = Vec::new();
    files_with(dir, "ts", &mut list);
    let dir = normal(dir);
    // A module's path in the folder (`None` outside it, such as `../native/binding.js`).
    let name = |p: &Path| normal(p).strip_prefix(&dir).ok().map(|r| r.to_string_lossy().into_owned());
    let known: BTreeSet<String> = list.iter().filter_map(|p| name(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &list {
        let code = ts_code(&std::fs::read_to_string(f).unwrap());
        let from = name(f).expect("a file of the folder");
        for spec in ts_specifiers(&code) {
            let Some(mut target) = name(&f.parent().unwrap().join(&spec)) else { continue };
            if let Some(stem) = target.strip_suffix(".js") {
                target = format!("{stem}.ts");
            } else if !target.ends_with(".ts") {
                target.push_str(".ts");
            }
            if known.contains(&target) {
                g.entry(from.clone()).or_default().insert(target);
            }
        }
    }
    g
}

#[test]
fn typescript_modules_have_no_import_cycles() {
    let ts = package_root().join("ts");
    let g = ts_graph(&ts);
    assert!(g.get("index.ts").is_some_and(|e| e.contains("coding.ts")), "the TypeScript modules were not read: {g:?}");
    let found = cycles(&g);
    assert!(found.is_empty(), "import cycles between TypeScript modules (type-only imports included): {found:?}");
}

#[test]
fn the_typescript_cycle_check_finds_a_cycle() {
    let dir = tempfile::tempdir().unwrap();
    let ts = dir.path();
    std::fs::create_dir(ts.join("adapters")).unwrap();
    std::fs::write(ts.join("a.ts"), "// import { x } from \"./c.js\";\nimport type { B } from \"./b.js\";\nconst s = \"https://x\";\n").unwrap();
    std::fs::write(ts.join("b.ts"), "export {\n  y,\n} from \"./adapters/c.js\";\n").unwrap();
    std::fs::write(ts.join("adapters/c.ts"), "/* from \"../b.js\" */ const m = await import(\"../a.js\");\n").unwrap();
    std::fs::write(ts.join("c.ts"), "import \"./a.js\";\n").unwrap();
    assert_eq!(cycles(&ts_graph(ts)), vec![vec!["a.ts".to_string(), "adapters/c.ts".to_string(), "b.ts".to_string()]]);
    std::fs::write(ts.join("adapters/c.ts"), "const fromA = 1; const m = \"../a.js\";\n").unwrap();
    assert!(cycles(&ts_graph(ts)).is_empty());
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
