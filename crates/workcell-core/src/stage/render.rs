//! The change set as a person reads it: §19's diff shape (`summary`, a unified diff bounded at
//! [`crate::checkpoint::MAX_DIFF_BYTES`], `files`, `hash`, `truncated`).

use std::ffi::OsStr;
use std::io::Read as _;
use std::os::fd::{AsFd, OwnedFd};

use rustix::fs::{Mode, OFlags};

use crate::cancel::Cancel;
use crate::checkpoint::diff::{Action, Changed, DiffOutput, MAX_DIFF_FILE_BYTES};
use crate::checkpoint::scan;
use crate::checkpoint::store::escape;
use crate::checkpoint::MAX_DIFF_BYTES;
use crate::error::Result;
use crate::hash::Hasher;

use super::collect::{Change, Node};

/// The change set's hash: its id, and for each listed path its state in the workspace and
/// staged.
pub(crate) fn change_hash(id: &str, changes: &[Change]) -> String {
    let mut h = Hasher::new();
    h.update(format!("workcell-staged 1\n{id}\n").as_bytes());
    for c in changes {
        let line = format!("{} {} {} {}\n", c.action.as_str(), escape(&c.path), Node::text(c.before.as_ref().map(|(n, _)| n)), Node::text(c.after.as_ref()));
        h.update(line.as_bytes());
    }
    h.finish()
}

/// Opens `path` beneath `dir` component by component, following no symlink; `None` when
/// anything is missing or not what it should be.
pub(crate) fn open_beneath(dir: impl AsFd, path: &[u8]) -> Option<std::fs::File> {
    let (parent, name) = scan::split(path);
    let mut d: OwnedFd = rustix::fs::openat(&dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    for seg in parent.split(|&b| b == b'/').filter(|s| !s.is_empty()) {
        use std::os::unix::ffi::OsStrExt as _;
        d = rustix::fs::openat(&d, OsStr::from_bytes(seg), OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
            .ok()?;
    }
    let fd = rustix::fs::openat(&d, name, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC, Mode::empty()).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    (rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile).then(|| std::fs::File::from(fd))
}

fn content(side: Option<&Node>, dir: &OwnedFd, path: &[u8]) -> Option<Vec<u8>> {
    match side {
        None | Some(Node::Dir { .. }) => Some(Vec::new()),
        Some(Node::Link { target }) => {
            let mut t = b"symlink -> ".to_vec();
            t.extend_from_slice(target);
            t.push(b'\n');
            Some(t)
        }
        Some(Node::Other { kind }) => Some(format!("{kind} (never applied)\n").into_bytes()),
        Some(Node::File { .. }) => {
            let mut out = Vec::new();
            open_beneath(dir, path)?.take(MAX_DIFF_FILE_BYTES + 1).read_to_end(&mut out).ok()?;
            Some(out)
        }
    }
}

fn is_text(b: &[u8]) -> bool {
    !b.contains(&0) && std::str::from_utf8(b).is_ok()
}

fn size(n: Option<&Node>) -> u64 {
    match n {
        Some(Node::File { size, .. }) => *size,
        _ => 0,
    }
}

/// One side-to-side diff.
#[allow(clippy::too_many_arguments)]
fn side_piece(out: &mut String, shown: &str, from: Option<&Node>, to: Option<&Node>, lower: &OwnedFd, upper: &OwnedFd, path: &[u8], cancel: &Cancel) -> Result<()> {
    let from_label = if from.is_some() { format!("a/{shown}") } else { "/dev/null".into() };
    let to_label = if to.is_some() { format!("b/{shown}") } else { "/dev/null".into() };
    match (content(from, lower, path), content(to, upper, path)) {
        (Some(a), Some(b)) if (a.len() as u64) <= MAX_DIFF_FILE_BYTES && (b.len() as u64) <= MAX_DIFF_FILE_BYTES => {
            if is_text(&a) && is_text(&b) {
                let (a, b) = (std::str::from_utf8(&a).unwrap_or(""), std::str::from_utf8(&b).unwrap_or(""));
                let mut budget = crate::diff::Budget::complete();
                if a == b {
                    out.push_str(&format!("--- {from_label}\n+++ {to_label}\n"));
                } else {
                    crate::diff::file_diff(out, &from_label, &to_label, a, b, &mut budget, cancel)?;
                }
            } else {
                out.push_str(&format!("Binary files {from_label} and {to_label} differ\n"));
            }
        }
        _ => out.push_str(&format!(
            "--- {from_label}\n+++ {to_label}\n... not diffed: {} bytes before, {} after (files over {MAX_DIFF_FILE_BYTES} bytes are named, not diffed)\n",
            size(from),
            size(to)
        )),
    }
    Ok(())
}

fn piece(c: &Change, lower: &OwnedFd, upper: &OwnedFd, cancel: &Cancel) -> Result<String> {
    let shown = c.shown();
    let mut out = String::new();
    let from = c.before.as_ref().map(|(n, _)| n);
    let to = c.after.as_ref();
    let mode = |n: Option<&Node>| match n {
        Some(Node::File { mode, .. }) => Some(*mode),
        _ => None,
    };
    match c.action {
        Action::Type => {
            side_piece(&mut out, &shown, from, None, lower, upper, &c.path, cancel)?;
            side_piece(&mut out, &shown, None, to, lower, upper, &c.path, cancel)?;
        }
        Action::Mode => {
            if let (Some(a), Some(b)) = (mode(from), mode(to)) {
                out.push_str(&format!("--- a/{shown}\n+++ b/{shown}\nold mode {a:o}\nnew mode {b:o}\n"));
            }
        }
        _ if from.is_some_and(Node::is_dir) || to.is_some_and(Node::is_dir) => {
            let (a, b) = if from.is_some() { (format!("a/{shown}"), "/dev/null".to_string()) } else { ("/dev/null".to_string(), format!("b/{shown}")) };
            out.push_str(&format!("--- {a}\n+++ {b}\n"));
        }
        _ => {
            side_piece(&mut out, &shown, from, to, lower, upper, &c.path, cancel)?;
            if let (Some(a), Some(b)) = (mode(from), mode(to)) {
                if a != b {
                    out.push_str(&format!("old mode {a:o}\nnew mode {b:o}\n"));
                }
            }
        }
    }
    Ok(out)
}

/// The bounded diff text, and whether it was cut.
pub(crate) fn render(changes: &[Change], lower: &OwnedFd, upper: &OwnedFd, cancel: &Cancel) -> Result<(String, bool)> {
    let mut text = String::new();
    let mut more: u64 = 0;
    for c in changes {
        cancel.check()?;
        if more > 0 {
            // Past the bound only the count grows (a size estimate, no reading).
            more += 64 + size(c.before.as_ref().map(|(n, _)| n)) + size(c.after.as_ref());
            continue;
        }
        let p = piece(c, lower, upper, cancel)?;
        if text.len() + p.len() <= MAX_DIFF_BYTES {
            text.push_str(&p);
            continue;
        }
        let room = MAX_DIFF_BYTES - text.len();
        let mut cut = 0;
        for line in p.split_inclusive('\n') {
            if cut + line.len() > room {
                break;
            }
            cut += line.len();
        }
        text.push_str(&p[..cut]);
        more = ((p.len() - cut) as u64).max(1);
    }
    if more > 0 {
        text.push_str(&format!("[{more} more bytes]\n"));
    }
    Ok((text, more > 0))
}

pub(crate) fn summary(changes: &[Change]) -> String {
    if changes.is_empty() {
        return "the staged run changed nothing".into();
    }
    let mut counts = Vec::new();
    for a in [Action::Added, Action::Modified, Action::Deleted, Action::Mode, Action::Type] {
        let n = changes.iter().filter(|c| c.action == a).count();
        if n > 0 {
            counts.push(format!("{n} {}", a.as_str()));
        }
    }
    let files = if changes.len() == 1 { "1 path".to_string() } else { format!("{} paths", changes.len()) };
    format!("the staged run changes {files}: {}", counts.join(", "))
}

pub(crate) fn listed(changes: &[Change]) -> Vec<Changed> {
    changes.iter().map(|c| Changed { path: c.shown(), action: c.action }).collect()
}

/// The whole §19-shaped output.
pub(crate) fn output(id: &str, changes: &[Change], lower: &OwnedFd, upper: &OwnedFd, cancel: &Cancel) -> Result<DiffOutput> {
    let (diff, truncated) = render(changes, lower, upper, cancel)?;
    Ok(DiffOutput { summary: summary(changes), diff, files: listed(changes), hash: change_hash(id, changes), truncated: truncated.then_some(true) })
}
