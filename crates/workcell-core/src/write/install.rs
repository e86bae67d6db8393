//! Install: the temp file beside the target, written, fsynced and renamed over it, with
//! every recheck in between.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write as _;
use std::os::fd::OwnedFd;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, Mode, OFlags};

use crate::cancel::Cancel;
use crate::error::{Error, Result};
use crate::path::RelPath;
use crate::root::{Identity, Workspace};

use super::at::{changed, fsync_dir, id_of, identity_at, io_err, lstat_at, Existing};
use super::resolve::Resolved;

/// Prefix of the temporary files a write creates beside its target.
pub const TEMP_PREFIX: &str = ".workcell-tmp-";
/// Mode of a newly created file.
pub const NEW_FILE_MODE: u32 = 0o644;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutput {
    /// The normalized path, as given (a symlink's name, not its target's).
    pub path: String,
    /// UTF-8 byte length of the content written.
    pub bytes: usize,
    /// Whether the file did not exist before.
    pub created: bool,
}

// ---------------------------------------------------------------------------------------------
// Install

/// Steps at which tests can interfere (a deterministic attacker).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// The temp is created and written, before its name is checked.
    TempWritten,
    /// Every recheck passed, right before the rename.
    BeforeRename,
    /// Right after the rename.
    AfterRename,
}

#[cfg(test)]
pub(crate) mod hooks {
    use std::cell::RefCell;
    use std::collections::VecDeque;

    type Hook = Box<dyn FnMut(super::Step, &std::ffi::OsStr)>;

    thread_local! {
        pub static NAMES: RefCell<VecDeque<String>> = const { RefCell::new(VecDeque::new()) };
        pub static STEP: RefCell<Option<Hook>> = const { RefCell::new(None) };
        pub static RENAME_ERRNO: RefCell<Option<i32>> = const { RefCell::new(None) };
    }
}

#[cfg(test)]
fn step(step: Step, temp: &OsStr) {
    hooks::STEP.with(|h| {
        if let Some(hook) = h.borrow_mut().as_mut() {
            hook(step, temp)
        }
    });
}

#[cfg(not(test))]
#[inline(always)]
fn step(_step: Step, _temp: &OsStr) {}

pub(crate) fn temp_name() -> String {
    #[cfg(test)]
    if let Some(name) = hooks::NAMES.with(|n| n.borrow_mut().pop_front()) {
        return name;
    }
    crate::temp_name::random_name(TEMP_PREFIX, 12)
}

/// The temp file this call created; removed on drop unless installed. Removal only happens
/// while the name still names the file we opened.
pub(crate) struct Temp<'a> {
    pub(crate) dir: &'a Dir,
    pub(crate) name: OsString,
    pub(crate) file: File,
    pub(crate) id: Identity,
    pub(crate) installed: bool,
}

impl Temp<'_> {
    pub(crate) fn create<'a>(dir: &'a Dir, shown: &str) -> Result<Temp<'a>> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
        let mut last = None;
        for _ in 0..16 {
            let name = OsString::from(temp_name());
            match rustix::fs::openat(dir, &name, flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    let fd: OwnedFd = fd;
                    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io(&io_err(e), shown))?;
                    let id = id_of(&st);
                    return Ok(Temp { dir, name, file: File::from(fd), id, installed: false });
                }
                // Something (a planted file or symlink) already has this name: never follow or
                // reuse it, pick another.
                Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
        }
        Err(Error::from_io(&io_err(last.unwrap_or(rustix::io::Errno::EXIST)), shown))
    }

    pub(crate) fn still_named(&self) -> bool {
        matches!(identity_at(self.dir, &self.name), Ok(Some(id)) if id == self.id)
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if !self.installed && self.still_named() {
            let _ = rustix::fs::unlinkat(self.dir, &self.name, AtFlags::empty());
        }
    }
}

fn rename_at(dir: &Dir, from: &OsStr, to: &OsStr) -> std::io::Result<()> {
    #[cfg(test)]
    if let Some(errno) = hooks::RENAME_ERRNO.with(|e| *e.borrow()) {
        return Err(std::io::Error::from_raw_os_error(errno));
    }
    rustix::fs::renameat(dir, from, dir, to).map_err(io_err)
}

/// Installs `content` at the resolved target. The caller holds the target's lock.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn install(ws: &Workspace, path: &RelPath, target: &Resolved, content: &[u8], cancel: &Cancel) -> Result<WriteOutput> {
    let shown = path.as_str();
    cancel.check()?;
    let before = match lstat_at(&target.dir, &target.name).map_err(|e| Error::from_io(&e, shown))? {
        Existing::Other(kind) => return Err(Error::not_regular(shown, kind)),
        // It was resolved to a file or a free name; a symlink now is someone else's swap.
        Existing::Symlink => return Err(changed(shown, "target")),
        other => other,
    };
    let mode = match before {
        Existing::Regular { mode, .. } => mode,
        _ => NEW_FILE_MODE,
    };

    let mut temp = Temp::create(&target.dir, shown)?;
    let io = |e: std::io::Error| Error::from_io(&e, shown);
    temp.file.write_all(content).map_err(io)?;
    rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode)).map_err(|e| io(io_err(e)))?;
    if let Existing::Regular { uid, gid, .. } = before {
        // Keep the owner when we may (a privileged host); an unprivileged one cannot and
        // keeps its own.
        let st = rustix::fs::fstat(&temp.file).map_err(|e| io(io_err(e)))?;
        if st.st_uid as u32 != uid || st.st_gid as u32 != gid {
            let _ = rustix::fs::fchown(
                &temp.file,
                Some(rustix::process::Uid::from_raw(uid)),
                Some(rustix::process::Gid::from_raw(gid)),
            );
            // chown may clear set-id bits; the permission bits are set again to be exact.
            let _ = rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode));
        }
    }
    temp.file.sync_all().map_err(io)?;
    step(Step::TempWritten, &temp.name);

    // The temp's name must still name the file we wrote.
    if !temp.still_named() {
        return Err(changed(shown, "temporary file"));
    }
    // Recheck cancellation, root, parent and target.
    cancel.check()?;
    ws.check()?;
    match ws.dir().metadata(&target.dir_spelling) {
        Ok(meta) if meta.is_dir() && Identity::of_cap(&meta) == target.dir_id => {}
        _ => return Err(changed(shown, "parent directory")),
    }
    let now = lstat_at(&target.dir, &target.name).map_err(io)?;
    match (before, now) {
        (Existing::Absent, Existing::Absent) => {}
        (Existing::Regular { id: a, .. }, Existing::Regular { id: b, mode: m, .. }) if a == b => {
            if m != mode {
                rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(m)).map_err(|e| io(io_err(e)))?;
            }
        }
        _ => return Err(changed(shown, "target")),
    }
    step(Step::BeforeRename, &temp.name);

    // On failure the old target is intact; `temp`'s drop removes only our file.
    rename_at(&target.dir, &temp.name, &target.name).map_err(io)?;
    temp.installed = true;
    step(Step::AfterRename, &temp.name);
    fsync_dir(&target.dir).map_err(io)?;
    match identity_at(&target.dir, &target.name) {
        Ok(Some(id)) if id == temp.id => {}
        _ => return Err(changed(shown, "installed file")),
    }
    Ok(WriteOutput { path: shown.to_string(), bytes: content.len(), created: before == Existing::Absent })
}
