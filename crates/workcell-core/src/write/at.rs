//! Fd-relative helpers: what is at a name beneath a directory handle, looked at without
//! following or opening it; opening it without blocking; fsync of a directory.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::error::{Error, Result};
use crate::root::Identity;

/// Device and inode of a `stat` result (the field types differ between platforms).
#[allow(clippy::unnecessary_cast)]
pub(crate) fn id_of(st: &rustix::fs::Stat) -> Identity {
    Identity { dev: st.st_dev as u64, ino: st.st_ino as u64 }
}

pub(crate) fn io_err(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from(e)
}

/// Opens `dir` itself for reading (an `O_PATH` handle cannot be fsynced) and fsyncs it.
pub(crate) fn fsync_dir(dir: &impl AsFd) -> std::io::Result<()> {
    let fd = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(io_err)?;
    rustix::fs::fsync(&fd).map_err(io_err)
}
/// What is at a name, looked at without following or opening it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Existing {
    Absent,
    Regular { id: Identity, mode: u32, uid: u32, gid: u32 },
    Symlink,
    Other(&'static str),
}

fn kind_name(ft: FileType) -> &'static str {
    crate::walk::Kind::from_file_type(ft).describe()
}

#[allow(clippy::unnecessary_cast)]
pub(crate) fn lstat_at(dir: &impl AsFd, name: &OsStr) -> std::io::Result<Existing> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => {
            let ft = FileType::from_raw_mode(st.st_mode as _);
            Ok(match ft {
                FileType::RegularFile => Existing::Regular {
                    id: id_of(&st),
                    mode: st.st_mode as u32 & 0o777,
                    uid: st.st_uid as u32,
                    gid: st.st_gid as u32,
                },
                FileType::Symlink => Existing::Symlink,
                other => Existing::Other(kind_name(other)),
            })
        }
        Err(rustix::io::Errno::NOENT) => Ok(Existing::Absent),
        Err(e) => Err(io_err(e)),
    }
}

/// What is at a resolved target, for the work done under its lock (an edit's read, an
/// `expectedHash` check): nothing, something that is not a regular file, or the file, opened
/// without following a symlink and without blocking, checked to be the file the name names.
pub(crate) enum AtTarget {
    Absent,
    Other(&'static str),
    File(File),
}

pub(crate) fn open_at(dir: &impl AsFd, name: &OsStr, shown: &str) -> Result<AtTarget> {
    let io = |e: rustix::io::Errno| Error::from_io(&io_err(e), shown);
    let id = match lstat_at(dir, name).map_err(|e| Error::from_io(&e, shown))? {
        Existing::Absent => return Ok(AtTarget::Absent),
        Existing::Other(kind) => return Ok(AtTarget::Other(kind)),
        // Resolution followed every final symlink; one now is someone else's swap.
        Existing::Symlink => return Err(changed(shown, "target")),
        Existing::Regular { id, .. } => id,
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOENT) => return Err(changed(shown, "target")),
        Err(e) => return Err(io(e)),
    };
    let st = rustix::fs::fstat(&fd).map_err(io)?;
    if id_of(&st) != id || FileType::from_raw_mode(st.st_mode as _) != FileType::RegularFile {
        return Err(changed(shown, "target"));
    }
    Ok(AtTarget::File(File::from(fd)))
}

/// Refuses an existing file the caller could not open for writing: `faccessat(W_OK)` with the
/// effective ids (`AT_EACCESS`), which asks the kernel what `open(O_WRONLY)` would answer
/// (mode bits, ACLs, an immutable file, a read-only mount, and a privileged caller's override:
/// root may write a 0444 file, as its `open` would). The tools replace a file by rename, which
/// the directory's permission alone allows; without this a read-only file would be replaced.
/// `name` was just seen to be a regular file; a swap after this is caught by the identity
/// rechecks before the rename.
pub(crate) fn check_writable(dir: &impl AsFd, name: &OsStr, shown: &str) -> Result<()> {
    match rustix::fs::accessat(dir, name, rustix::fs::Access::WRITE_OK, AtFlags::EACCESS) {
        // A program running from the file: replacing it by rename is how builds and package
        // managers update one, and leaves the running program intact.
        Ok(()) | Err(rustix::io::Errno::TXTBSY) => Ok(()),
        Err(e @ (rustix::io::Errno::ACCESS | rustix::io::Errno::PERM | rustix::io::Errno::ROFS)) => {
            Err(Error::read_only(e.raw_os_error(), shown))
        }
        Err(rustix::io::Errno::NOENT) => Err(changed(shown, "target")),
        Err(e) => Err(Error::from_io(&io_err(e), shown)),
    }
}

pub(crate) fn identity_at(dir: &impl AsFd, name: &OsStr) -> std::io::Result<Option<Identity>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(id_of(&st))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(io_err(e)),
    }
}

pub(crate) fn changed(shown: &str, what: &str) -> Error {
    Error::target_changed(shown).with_details(serde_json::json!({ "changed": what }))
}
