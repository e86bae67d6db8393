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

use super::at::{changed, check_writable, id_of, identity_at, io_err, lstat_at, Existing};
use super::resolve::Resolved;

pub use super::sweep::TEMP_PREFIX;
/// Mode of a newly created file.
pub const NEW_FILE_MODE: u32 = 0o644;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "WriteFileOutput")]
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
        /// Stage named temps only (as where `O_TMPFILE` is not supported).
        pub static NAMED_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
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
    crate::temp_name::owned_name(TEMP_PREFIX, 12)
}

/// Whether temps are staged unnamed (`O_TMPFILE`). Turned off for the process when the file
/// system refuses it or an unnamed file cannot be linked (no `/proc` and no privilege).
static UNNAMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

fn unnamed_ok() -> bool {
    #[cfg(test)]
    if hooks::NAMED_ONLY.with(|n| n.get()) {
        return false;
    }
    UNNAMED.load(std::sync::atomic::Ordering::Relaxed)
}

/// The temp file this call created. It is staged unnamed (`O_TMPFILE`) where the file system
/// allows, and gets its `.workcell-tmp-*` name ([`Temp::link`]) only right before it is
/// installed, so a host killed while writing it leaves nothing; elsewhere it is created under
/// its name (`O_CREAT|O_EXCL|O_NOFOLLOW`). Either way the name carries the creating process
/// (see [`crate::temp_name::owned_name`]), so a name a killed host left is swept by the next
/// call in that directory ([`super::sweep`]). Removed on drop unless installed, and only
/// while the name still names the file we opened.
pub(crate) struct Temp<'a> {
    pub(crate) dir: &'a Dir,
    name: Option<OsString>,
    pub(crate) file: File,
    pub(crate) id: Identity,
    pub(crate) installed: bool,
}

impl Temp<'_> {
    pub(crate) fn create<'a>(dir: &'a Dir, shown: &str) -> Result<Temp<'a>> {
        if unnamed_ok() {
            let flags = OFlags::WRONLY | OFlags::TMPFILE | OFlags::CLOEXEC | OFlags::NOCTTY;
            match rustix::fs::openat(dir, ".", flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io(&io_err(e), shown))?;
                    return Ok(Temp { dir, name: None, id: id_of(&st), file: File::from(fd), installed: false });
                }
                // Not supported by this kernel or file system: named temps from now on.
                Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::ISDIR | rustix::io::Errno::INVAL) => {
                    UNNAMED.store(false, std::sync::atomic::Ordering::Relaxed)
                }
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
        }
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NOCTTY;
        let mut last = None;
        for _ in 0..16 {
            let name = OsString::from(temp_name());
            match rustix::fs::openat(dir, &name, flags, Mode::from_raw_mode(0o600)) {
                Ok(fd) => {
                    let fd: OwnedFd = fd;
                    let st = rustix::fs::fstat(&fd).map_err(|e| Error::from_io(&io_err(e), shown))?;
                    let id = id_of(&st);
                    return Ok(Temp { dir, name: Some(name), file: File::from(fd), id, installed: false });
                }
                // Something (a planted file or symlink) already has this name: never follow or
                // reuse it, pick another.
                Err(rustix::io::Errno::EXIST) => last = Some(rustix::io::Errno::EXIST),
                Err(e) => return Err(Error::from_io(&io_err(e), shown)),
            }
        }
        Err(Error::from_io(&io_err(last.unwrap_or(rustix::io::Errno::EXIST)), shown))
    }

    /// The temp's name, linking the unnamed file under a fresh `.workcell-tmp-*` name first
    /// (`linkat` never replaces: a name someone planted is skipped).
    pub(crate) fn link(&mut self) -> std::io::Result<&OsStr> {
        if self.name.is_none() {
            let mut last = rustix::io::Errno::EXIST;
            for _ in 0..16 {
                let name = OsString::from(temp_name());
                match link_unnamed(&self.file, self.dir, &name) {
                    Ok(()) => {
                        self.name = Some(name);
                        break;
                    }
                    Err(rustix::io::Errno::EXIST) => last = rustix::io::Errno::EXIST,
                    Err(e) => {
                        if matches!(e, rustix::io::Errno::NOENT | rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) {
                            // No way to name an unnamed file here: stage named from now on.
                            UNNAMED.store(false, std::sync::atomic::Ordering::Relaxed);
                        }
                        return Err(io_err(e));
                    }
                }
            }
            if self.name.is_none() {
                return Err(io_err(last));
            }
        }
        Ok(self.name.as_deref().expect("named above"))
    }

    /// Gives up the name to a new owner (it is no longer removed on drop).
    pub(crate) fn take_name(&mut self) -> Option<OsString> {
        self.installed = true;
        self.name.take()
    }

    /// Whether the temp's name still names the file we wrote (an unnamed temp cannot be
    /// swapped).
    pub(crate) fn still_named(&self) -> bool {
        match &self.name {
            None => true,
            Some(name) => matches!(identity_at(self.dir, name), Ok(Some(id)) if id == self.id),
        }
    }
}

/// Links an `O_TMPFILE` file at `name` beneath `dir`: by its descriptor where the process may
/// (`AT_EMPTY_PATH`), else through `/proc/self/fd`.
fn link_unnamed(file: &File, dir: &Dir, name: &OsStr) -> rustix::io::Result<()> {
    match rustix::fs::linkat(file, "", dir, name, AtFlags::EMPTY_PATH) {
        Err(rustix::io::Errno::NOENT | rustix::io::Errno::PERM | rustix::io::Errno::ACCESS) => {
            use std::os::fd::AsRawFd as _;
            let via = format!("/proc/self/fd/{}", file.as_raw_fd());
            rustix::fs::linkat(rustix::fs::CWD, via.as_str(), dir, name, AtFlags::SYMLINK_FOLLOW)
        }
        other => other,
    }
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if let Some(name) = &self.name {
            if !self.installed && self.still_named() {
                let _ = rustix::fs::unlinkat(self.dir, name, AtFlags::empty());
            }
        }
    }
}

/// Gives the staged replacement of an existing file that file's owner and group where the
/// process may: a privileged host keeps both; an unprivileged one (which may replace only a file
/// it could open for writing, see [`check_writable`]) keeps the group when it belongs to it, and
/// the file becomes its own otherwise, with the same permission bits.
#[allow(clippy::unnecessary_cast)]
pub(crate) fn keep_owner(file: &File, uid: u32, gid: u32, mode: u32) -> std::io::Result<()> {
    let st = rustix::fs::fstat(file).map_err(io_err)?;
    if st.st_uid as u32 == uid && st.st_gid as u32 == gid {
        return Ok(());
    }
    let (u, g) = (rustix::process::Uid::from_raw(uid), rustix::process::Gid::from_raw(gid));
    if rustix::fs::fchown(file, Some(u), Some(g)).is_err() && st.st_gid as u32 != gid {
        let _ = rustix::fs::fchown(file, None, Some(g));
    }
    // chown may clear set-id bits; the permission bits are set again to be exact.
    rustix::fs::fchmod(file, Mode::from_raw_mode(mode)).map_err(io_err)
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
        Existing::Regular { mode, .. } => {
            // Before any effect: a file the caller could not open for writing is not replaced.
            check_writable(&target.dir, &target.name, shown)?;
            mode
        }
        _ => NEW_FILE_MODE,
    };

    super::sweep::sweep(&target.dir);
    let mut temp = Temp::create(&target.dir, shown)?;
    let io = |e: std::io::Error| Error::from_io(&e, shown);
    temp.file.write_all(content).map_err(io)?;
    rustix::fs::fchmod(&temp.file, Mode::from_raw_mode(mode)).map_err(|e| io(io_err(e)))?;
    if let Existing::Regular { uid, gid, .. } = before {
        keep_owner(&temp.file, uid, gid, mode).map_err(io)?;
    }
    // On the write lane, other writes may go on while this one waits for the device.
    crate::pool::blocking(|| temp.file.sync_all()).map_err(io)?;
    // Named from here to the rename: a few checks, no data written.
    let temp_name = temp.link().map_err(io)?.to_os_string();
    step(Step::TempWritten, &temp_name);

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
    step(Step::BeforeRename, &temp_name);

    // On failure the old target is intact; `temp`'s drop removes only our file.
    rename_at(&target.dir, &temp_name, &target.name).map_err(io)?;
    temp.installed = true;
    step(Step::AfterRename, &temp_name);
    match identity_at(&target.dir, &target.name) {
        Ok(Some(id)) if id == temp.id => {}
        _ => return Err(changed(shown, "installed file")),
    }
    // The rename made durable: a flush of the directory that started after it, shared with
    // the writes into the same directory at the same time (`super::flush`).
    super::flush::flush_dir(&target.dir, target.dir_id, shown)?;
    Ok(WriteOutput { path: shown.to_string(), bytes: content.len(), created: before == Existing::Absent })
}
