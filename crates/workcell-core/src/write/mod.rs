//! `write_file`: atomic, durable, serialized per target, confined to the workspace.
//!
//! A write goes through three phases:
//!
//! 1. **Checks without effects** ([`WriteRequest::new`]): the path grammar (plus: a file path
//!    may not end in `/`), well-formed content of at most [`MAX_WRITE_BYTES`] UTF-8 bytes.
//! 2. **Resolution** (a worker thread): root check; missing parent directories are created one
//!    at a time, each step re-resolved beneath the root; a final-component symlink is followed
//!    (at most [`MAX_SYMLINK_HOPS`] hops) as long as it stays inside, so the write replaces the
//!    file the link names and the link stays. The result is an open handle to the target's
//!    directory and a final name: the lock key ([`TargetKey`]).
//! 3. **Install** (a worker thread, holding the target's lock, see [`crate::target_lock`]):
//!    `lstat` the target (never an open, so a FIFO or device cannot block); sweep the
//!    directory of the temps a killed host left ([`sweep`]); create the temp beside it unnamed
//!    (`O_TMPFILE`, or `.workcell-tmp-*` with `O_CREAT|O_EXCL|O_NOFOLLOW` where there is none),
//!    mode 0600; write everything; give it the old target's permission bits (0644 for a new
//!    file); fsync; link it under a `.workcell-tmp-*` name; check that the name still names
//!    the open file; recheck root, parent, target and
//!    cancellation; `renameat` over the target; check that the installed file is the temp;
//!    fsync the directory, sharing the flush with the writes into it at the same time
//!    ([`flush`]: the call returns after a flush that started after its rename). Any failure before the rename removes the temp (only if the name still
//!    names the file this call created) and leaves the old target untouched.
//!
//! The phases are shared with `edit_file` through [`Job`]: a job is checked against the write
//! guard ([`crate::guard`]) around resolution, and its [`Job::run`] (for `write_file`: the
//! `expectedHash` check, then the install) runs while the lock is held.
//!
//! Waiting for the lock is asynchronous; the filesystem work runs on tokio's blocking pool,
//! never on the caller's thread (Node's event loop).
//!
//! One file per concern: [`checks`] (the request and the `expectedHash` check), [`resolve`]
//! (phase 2), [`install`] (phase 3), [`queue`] (the blocking slots, the per-target lock, the
//! callbacks) and [`at`] (the fd-relative helpers the others share).

pub mod at;
pub mod checks;
pub(crate) mod flush;
pub mod install;
pub mod queue;
pub mod resolve;
pub(crate) mod sweep;

pub(crate) use at::{changed, check_writable, fsync_dir, identity_at, io_err, lstat_at, open_at, AtTarget, Existing};
pub use checks::{check_path, WriteRequest, MAX_WRITE_BYTES, MAX_WRITE_BYTES_CEILING};
pub(crate) use checks::{hash_mismatch, name_state};
pub use install::{WriteOutput, NEW_FILE_MODE, TEMP_PREFIX};
pub(crate) use install::{install, keep_owner, temp_name, Temp};
pub(crate) use sweep::sweep;
pub use queue::{run_job, spawn_job, spawn_write, start, ticket, write, write_file, Job, Queued, Started};
pub use resolve::{Resolved, MAX_SYMLINK_HOPS};
pub(crate) use queue::blocking;
pub(crate) use resolve::{dir_identity, ensure_parent, resolve_existing, resolve_guarded};

#[cfg(test)]
use install::{hooks, Step};
#[cfg(test)]
use queue::{gauge, Settle};
#[cfg(test)]
pub(crate) use resolve::resolve;
#[cfg(test)]
use crate::{cancel::Cancel, error::{Code, Result}, root::Workspace};
#[cfg(test)]
use std::{path::{Path, PathBuf}, sync::Arc};

#[cfg(test)]
mod tests;
