//! The sweep of stale temporary names: the `.workcell-tmp-*` entries a host killed in the middle
//! of a write or a patch left in a directory (contract §9: none remains after any outcome).
//!
//! Before a write, an edit or a patch stages anything in a directory, it looks at the names in
//! that directory (beneath the root, through the directory's handle) and removes each
//! `.workcell-tmp-*` entry whose creator has provably exited ([`crate::temp_name::owner_is_gone`]:
//! same boot, same PID namespace, that pid free, a zombie or another process). Only regular files
//! and symlinks are removed, by name (`unlinkat`, never followed); a directory, a name of
//! another form, a live writer's temp (this process's included) and a name of another machine or
//! namespace are left alone. Only names are read (one directory listing), and a file is looked
//! at only when its name has the prefix.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt as _;

use cap_std::fs::Dir;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};

/// Prefix of the temporary files a write creates beside its target (the names swept here).
pub const TEMP_PREFIX: &str = ".workcell-tmp-";


#[cfg(test)]
thread_local! {
    /// Turns the sweep off (to show what a killed host leaves without it).
    pub(crate) static OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Removes the stale temporary names in `dir`; returns how many. Errors are ignored: the sweep
/// is cleanup, never a reason for the call to fail.
pub(crate) fn sweep(dir: &Dir) -> usize {
    #[cfg(test)]
    if OFF.with(|o| o.get()) {
        return 0;
    }
    if crate::temp_name::this_process().is_none() {
        return 0;
    }
    let Ok(fd) = rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) else {
        return 0;
    };
    let Ok(mut entries) = rustix::fs::Dir::read_from(&fd) else { return 0 };
    let mut removed = 0;
    while let Some(Ok(entry)) = entries.next() {
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        let Some(text) = name.to_str() else { continue };
        if !text.starts_with(TEMP_PREFIX) || !crate::temp_name::owner_is_gone(text, TEMP_PREFIX) {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else { continue };
        if matches!(FileType::from_raw_mode(st.st_mode as _), FileType::RegularFile | FileType::Symlink)
            && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
        {
            removed += 1;
        }
    }
    removed
}
