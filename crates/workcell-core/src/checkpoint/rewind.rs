//! `rewind`: puts every path a checkpoint's diff lists back, all or nothing.
//!
//! Under the store's shared lock (no object is collected meanwhile):
//! 1. the diff is computed again ([`super::diff::changes`]); its hash must be the one the
//!    caller approved (`TARGET_CHANGED` otherwise); a listed path the write guard protects
//!    refuses the whole rewind (`PATH_PROTECTED`); every content to restore must be in the
//!    store. Nothing has changed yet; this is the last point where cancellation is free.
//! 2. removals, deepest path first: each listed path that exists now (added, modified, mode,
//!    type) is rechecked against what the diff saw (device, inode, size, mtime, ctime, type)
//!    and renamed away, beneath its directory, onto a `.workcell-tmp-*` name.
//! 3. restores, shallowest first: missing parent directories are created; an empty directory
//!    left where a file was is renamed away (a directory holding anything else, such as ignored
//!    files, stops the rewind: it is not recorded and is never removed); the content is copied
//!    from the store into an unnamed temp beside the target (checked against its hash, the
//!    recorded permission bits, fsynced), or a symlink made with its recorded text, and renamed
//!    onto the free name (`RENAME_NOREPLACE`).
//! 4. the names renamed away are removed and the directories fsynced.
//!
//! Every step is one rename (or `mkdir`) beneath a directory opened from the root handle
//! component by component with `O_NOFOLLOW`: no symlink is ever followed, so restoring a link
//! to outside makes a link and touches nothing outside. If a step fails (or the call is
//! cancelled), the steps done are undone in reverse: installed names removed, created
//! directories removed, the names renamed away renamed back. A host killed in the middle
//! leaves every file whole (each step is a rename) but the rewind possibly half done, and the
//! old files under `.workcell-tmp-*` names, swept by a later write in their directory once the
//! host has provably exited.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::rc::Rc;

use cap_std::fs::Dir;
use rustix::fs::Mode;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::walk::Kind;
use crate::write::Temp;

use super::diff::{self, Change, Changed};
use super::journal::{changed, copy_hashed, empty_but, io, open_child, Journal};
use super::scan::{self, Stat, State};
use super::store::{hex, unhex};
use super::Checkpoints;

/// What `rewind` did: every path it put back.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "CheckpointRewound")]
pub struct RewindOutput {
    pub id: String,
    /// One line for a person.
    pub summary: String,
    /// The paths the rewind changed, with what it did to each.
    pub files: Vec<Changed>,
}

fn stale(expected: &str, now: &str) -> Error {
    Error::new(Code::TargetChanged, "the workspace changed since the diff was shown; nothing was rewound")
        .with_hint("call diff_checkpoint again, review the new diff, and rewind with its hash")
        .with_details(serde_json::json!({ "expectedHash": expected, "hash": now }))
}

fn in_the_way(shown: &str, what: &str) -> Error {
    Error::new(Code::FileExists, format!("{shown} cannot be restored: {what}"))
        .with_hint(format!("{what}, which the checkpoint does not record; move it away (or delete it), then diff and rewind again"))
        .with_details(serde_json::json!({ "path": shown }))
}

pub(crate) fn rewind(cp: &Checkpoints, id: &str, expected: &str, cancel: &Cancel) -> Result<RewindOutput> {
    let diff::Compared { manifest, changes, hash, _lock } = diff::compare(cp, id, cancel)?;
    if hash != expected {
        return Err(stale(expected, &hash));
    }
    for c in &changes {
        let shown = scan::shown(&c.path);
        let lossy = String::from_utf8_lossy(&c.path);
        if let Some(pattern) = cp.guard.matched(&lossy) {
            return Err(crate::guard::protected(&shown, pattern, &shown));
        }
        if let Some(State::File { hash, .. }) = &c.old {
            if !cp.store.has_object(hash) {
                return Err(Error::new(Code::IoError, format!("the stored content of {shown} is missing from the checkpoint store"))
                    .with_hint("the checkpoint store was damaged; create a new checkpoint, or report the problem to the user")
                    .with_details(serde_json::json!({ "path": shown, "object": hex(hash) })));
            }
        }
    }
    cancel.check()?;
    cp.ws.check()?;
    let mut tx = Tx { cp, dirs: HashMap::new(), journal: Journal::default() };
    match tx.run(&changes, cancel) {
        Ok(()) => {
            tx.journal.commit();
            Ok(RewindOutput {
                id: id.to_string(),
                summary: diff::summary(id, manifest.summary.label.as_deref(), &changes, true),
                files: diff::listed(&changes, true),
            })
        }
        Err(err) => Err(tx.journal.failed(err, "nothing was rewound")),
    }
}

struct Tx<'a> {
    cp: &'a Checkpoints,
    /// Directories opened so far, by workspace-relative path (`""` is the root).
    dirs: HashMap<Vec<u8>, Rc<Dir>>,
    journal: Journal,
}

impl Tx<'_> {
    /// The directory at `rel`, opened from the root without following links; with `create`,
    /// missing directories are made (and logged).
    fn dir(&mut self, rel: &[u8], create: bool) -> Result<Rc<Dir>> {
        if let Some(d) = self.dirs.get(rel) {
            return Ok(d.clone());
        }
        let shown = scan::shown(rel);
        let d = if rel.is_empty() {
            Rc::new(self.cp.ws.dir().try_clone().map_err(io("."))?)
        } else {
            let (parent, name) = scan::split(rel);
            let p = self.dir(parent, create)?;
            match open_child(&p, name) {
                Ok(d) => Rc::new(d),
                Err(e) if create && e.raw_os_error() == Some(libc::ENOENT) => {
                    rustix::fs::mkdirat(&*p, name, Mode::from_raw_mode(0o777)).map_err(|e| io(&shown)(e.into()))?;
                    let st = scan::lstat(&*p, name).map_err(io(&shown))?.ok_or_else(|| changed(&shown))?;
                    self.journal.installed(&p, name, st.id(), true, &shown);
                    Rc::new(open_child(&p, name).map_err(|_| changed(&shown))?)
                }
                Err(e) if create && matches!(e.raw_os_error(), Some(libc::ENOTDIR) | Some(libc::ELOOP)) => {
                    return Err(in_the_way(&shown, &format!("{shown} is not a directory")));
                }
                // Gone or swapped for something else since the diff.
                Err(_) => return Err(changed(&shown)),
            }
        };
        self.dirs.insert(rel.to_vec(), d.clone());
        Ok(d)
    }

    fn remove(&mut self, c: &Change, stat: &Stat, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        let shown = scan::shown(&c.path);
        let (parent, name) = scan::split(&c.path);
        let dir = self.dir(parent, false)?;
        let now = scan::lstat(&*dir, name).map_err(io(&shown))?;
        if now.as_ref() != Some(stat) {
            return Err(changed(&shown));
        }
        self.journal.away(&dir, name, stat.id(), false, &shown)
    }

    fn restore(&mut self, c: &Change, old: &State, cancel: &Cancel) -> Result<()> {
        cancel.check()?;
        let shown = scan::shown(&c.path);
        let (parent, name) = scan::split(&c.path);
        let dir = self.dir(parent, true)?;
        match scan::lstat(&*dir, name).map_err(io(&shown))? {
            None => {}
            Some(st) if st.kind() == Kind::Dir => {
                let ours = self.journal.kept(None);
                if !open_child(&dir, name).and_then(|d| empty_but(&d, &ours)).map_err(io(&shown))? {
                    return Err(in_the_way(&shown, &format!("the directory {shown} holds files that are not recorded (ignored, excluded, or not regular files)")));
                }
                self.journal.away(&dir, name, st.id(), true, &shown)?;
                let mut slash = c.path.clone();
                slash.push(b'/');
                self.dirs.retain(|k, _| k != &c.path && !k.starts_with(&slash));
            }
            // Something appeared since the diff.
            Some(_) => return Err(changed(&shown)),
        }
        match old {
            State::File { mode, hash, .. } => self.install_file(&dir, name, &shown, *mode, hash, cancel),
            State::Link { target } => self.journal.install_link(&dir, name, &shown, target),
        }
    }

    fn install_file(&mut self, dir: &Rc<Dir>, name: &OsStr, shown: &str, mode: u32, hash: &[u8; 32], cancel: &Cancel) -> Result<()> {
        let mut temp = Temp::create(dir, shown)?;
        let mut src = self.cp.store.open_object(hash)?;
        let written = copy_hashed(&mut src, &mut temp, shown, cancel)?;
        if unhex(&written).as_ref() != Some(hash) {
            return Err(Error::new(Code::IoError, format!("the stored content of {shown} is damaged"))
                .with_hint("the checkpoint store was damaged; create a new checkpoint, or report the problem to the user"));
        }
        rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode & 0o777)).map_err(|e| io(shown)(e.into()))?;
        self.journal.install_temp(dir, name, shown, temp)
    }

    fn run(&mut self, changes: &[Change], cancel: &Cancel) -> Result<()> {
        let total = changes.len();
        let progress = cancel.progress();
        progress.message(|| format!("rewinding {total} paths: moving the changed ones away"));
        for c in changes.iter().rev() {
            if let Some((_, stat)) = &c.now {
                self.remove(c, stat, cancel)?;
            }
        }
        for (i, c) in changes.iter().enumerate() {
            if let Some(old) = &c.old {
                self.restore(c, old, cancel)?;
            }
            progress.message(|| format!("rewinding {total} paths: {} put back", i + 1));
        }
        Ok(())
    }
}
