//! The corpus of patches and edits as models write them (`patch_corpus/*.txt`): each case's
//! files, the patch (or str_replace edit) and the expected result, the files after or the error
//! code, run through the public API on a fresh workspace. A refused case must leave every file
//! as it was (all or nothing).
//!
//! The case format (a line starting with `~~~ ` is a marker; every other line is content):
//!
//! ```text
//! ~~~ case NAME                  starts a case
//! ~~~ from WHERE                 where the behaviour is documented (free text)
//! ~~~ file PATH [noeol] [crlf]   a file before: the lines up to the next marker, each ending
//!                                in LF (CRLF with crlf; the last one without with noeol;
//!                                no lines and noeol: an empty file)
//! ~~~ dir PATH                   a directory before
//! ~~~ patch [crlf]               the patch text: the lines up to the next marker, each ending
//!                                in LF; {ROOT} stands for the workspace's canonical path
//! ~~~ edit PATH                  instead of a patch: one str_replace-style edit, followed by
//! ~~~ old / ~~~ new              its old and new text (the lines joined by LF, no final LF)
//! ~~~ after PATH [noeol] [crlf]  a file after (as for file)
//! ~~~ gone PATH                  a name that must not exist after
//! ~~~ error CODE [REASON]        the call fails with this code (and reason); nothing changed
//! ~~~ note TEXT                  the result's note contains TEXT
//! ~~~ hint TEXT                  the error's hint contains TEXT
//! ```
//! Files named by `file` and not by `after` or `gone` must be unchanged.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Arc;

use workcell_core::{Cancel, Workspace};

#[derive(Default, Debug)]
struct Case {
    name: String,
    from: String,
    files: Vec<(String, String)>,
    dirs: Vec<String>,
    patch: Option<String>,
    edit: Option<(String, String, String)>,
    after: Vec<(String, String)>,
    gone: Vec<String>,
    error: Option<(String, Option<String>)>,
    note: Option<String>,
    hint: Option<String>,
}

fn render(lines: &[&str], flags: &[&str]) -> String {
    let eol = if flags.contains(&"crlf") { "\r\n" } else { "\n" };
    let mut s = lines.iter().map(|l| format!("{l}{eol}")).collect::<String>();
    if flags.contains(&"noeol") && s.ends_with(eol) {
        s.truncate(s.len() - eol.len());
    }
    s
}

fn parse_corpus(text: &str) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut i = 0;
    while i < lines.len() {
        let Some(marker) = lines[i].strip_prefix("~~~ ") else {
            assert!(lines[i].trim().is_empty() || cases.is_empty(), "content outside a block at line {}: {:?}", i + 1, lines[i]);
            i += 1;
            continue;
        };
        let mut words = marker.split(' ');
        let kind = words.next().unwrap();
        let arg: Vec<&str> = words.collect();
        let start = i + 1;
        let mut j = start;
        while j < lines.len() && !lines[j].starts_with("~~~ ") {
            j += 1;
        }
        // A block's content ends at the next marker; one blank separator line before a marker
        // ("~~~ case") is not content.
        let mut body: Vec<&str> = lines[start..j].to_vec();
        if j < lines.len() && lines[j].starts_with("~~~ case") && body.last() == Some(&"") {
            body.pop();
        }
        if j == lines.len() && body.last() == Some(&"") {
            body.pop();
        }
        let c = cases.last_mut();
        match kind {
            "case" => cases.push(Case { name: arg.join(" "), ..Default::default() }),
            "from" => c.unwrap().from = arg.join(" "),
            "file" => c.unwrap().files.push((arg[0].to_string(), render(&body, &arg[1..]))),
            "dir" => c.unwrap().dirs.push(arg[0].to_string()),
            "patch" => c.unwrap().patch = Some(render(&body, &arg)),
            "edit" => c.unwrap().edit = Some((arg[0].to_string(), String::new(), String::new())),
            "old" => c.unwrap().edit.as_mut().unwrap().1 = body.join("\n"),
            "new" => c.unwrap().edit.as_mut().unwrap().2 = body.join("\n"),
            "after" => c.unwrap().after.push((arg[0].to_string(), render(&body, &arg[1..]))),
            "gone" => c.unwrap().gone.push(arg[0].to_string()),
            "error" => c.unwrap().error = Some((arg[0].to_string(), arg.get(1).map(|s| s.to_string()))),
            "note" => c.unwrap().note = Some(arg.join(" ")),
            "hint" => c.unwrap().hint = Some(arg.join(" ")),
            other => panic!("unknown marker {other:?} at line {}", i + 1),
        }
        if !matches!(kind, "file" | "patch" | "old" | "new" | "after") {
            assert!(body.iter().all(|l| l.trim().is_empty()), "marker {kind} takes no content (line {})", i + 1);
        }
        i = j;
    }
    cases
}

fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn go(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(base).unwrap().display().to_string();
            if fs::symlink_metadata(&p).unwrap().is_dir() {
                out.insert(format!("{rel}/"), vec![]);
                go(base, &p, out);
            } else {
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    go(root, root, &mut out);
    out
}

async fn run_case(case: &Case) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap().join("ws");
    fs::create_dir(&root).unwrap();
    for d in &case.dirs {
        fs::create_dir_all(root.join(d)).unwrap();
    }
    for (p, content) in &case.files {
        let path = root.join(p);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    let before = snapshot(&root);
    let ws = Arc::new(Workspace::open(&root).unwrap());
    let outcome = match (&case.patch, &case.edit) {
        (Some(patch), None) => {
            let patch = patch.replace("{ROOT}", root.to_str().unwrap());
            workcell_core::patch::apply(ws, &patch, Cancel::new()).await.map(|o| o.note)
        }
        (None, Some((path, old, new))) => workcell_core::edit::edit(ws, path, &[(old.as_str(), new.as_str())], Cancel::new()).await.map(|_| None),
        _ => return Err("a case has a patch or an edit".into()),
    };
    let after = snapshot(&root);
    match (&case.error, outcome) {
        (Some((code, reason)), Err(e)) => {
            if e.code.as_str() != code || (reason.is_some() && e.reason() != reason.as_deref()) {
                return Err(format!("expected {code} {reason:?}, got {e:?}"));
            }
            if let Some(h) = &case.hint {
                if !e.hint.as_deref().unwrap_or("").contains(h.as_str()) {
                    return Err(format!("the hint does not contain {h:?}: {e:?}"));
                }
            }
            if before != after {
                return Err(format!("a refused call changed files: before {:?}, after {:?}", before.keys(), after.keys()));
            }
        }
        (Some((code, _)), Ok(_)) => return Err(format!("expected {code}, the call succeeded: {:?}", after.keys())),
        (None, Err(e)) => return Err(format!("expected success, got {e:?}")),
        (None, Ok(note)) => {
            let mut want = before.clone();
            for g in &case.gone {
                want.remove(g);
                if root.join(g).exists() {
                    return Err(format!("{g} still exists"));
                }
            }
            for (p, content) in &case.after {
                want.insert(p.clone(), content.as_bytes().to_vec());
                let mut dir = Path::new(p).parent();
                while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                    want.insert(format!("{}/", d.display()), vec![]);
                    dir = d.parent();
                }
            }
            if want != after {
                let show = |m: &BTreeMap<String, Vec<u8>>| m.iter().map(|(k, v)| format!("{k}: {:?}", String::from_utf8_lossy(v))).collect::<Vec<_>>().join("\n  ");
                return Err(format!("files after:\n  {}\nexpected:\n  {}", show(&after), show(&want)));
            }
            match (&case.note, note) {
                (Some(n), Some(got)) if got.contains(n.as_str()) => {}
                (None, None) => {}
                (n, got) => return Err(format!("note: expected {n:?}, got {got:?}")),
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_corpus_of_model_written_patches_and_edits_applies_as_documented() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/patch_corpus");
    let mut names: Vec<_> = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|e| e == "txt")).collect();
    names.sort();
    let mut count = 0;
    let mut failures = Vec::new();
    for file in names {
        for case in parse_corpus(&fs::read_to_string(&file).unwrap()) {
            assert!(!case.from.is_empty(), "{}: case {} names no source", file.display(), case.name);
            count += 1;
            if let Err(e) = run_case(&case).await {
                failures.push(format!("{} / {} ({}): {e}", file.file_name().unwrap().to_string_lossy(), case.name, case.from));
            }
        }
    }
    eprintln!("patch corpus: {count} cases");
    assert!(failures.is_empty(), "{} of {count} cases failed:\n{}", failures.len(), failures.join("\n\n"));
    assert!(count >= 60, "the corpus has {count} cases");
}
