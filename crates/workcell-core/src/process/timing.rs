//! The time bounds of a run: its timeout and how long the host waits for output pipes after the
//! child is gone.

use std::time::Duration;

use super::reap::Reaper;

/// After the leader exits (or is killed), how long the pipes may stay open before the host looks
/// for descendants holding them.
pub const DEFAULT_EXIT_GRACE: Duration = Duration::from_millis(100);

/// After killing the processes that still held a pipe, how long to wait for the end of the
/// output before closing the pipes anyway.
pub const DEFAULT_HOLDER_GRACE: Duration = Duration::from_millis(100);

/// On cancellation, the same two waits are at most this long each (an abort settles fast).
pub const CANCEL_GRACE: Duration = Duration::from_millis(40);

/// How long a child may take to exit after SIGKILL before it is left to a background thread.
pub const KILL_WAIT: Duration = Duration::from_millis(500);

/// When the host stops reading a pipe, it still takes up to this many bytes already in it (a
/// pipe holds 64 KiB by default and at most 1 MiB unprivileged), so nothing written before the
/// end is lost.
pub const FINAL_READ: usize = 2 * 1024 * 1024;

/// Bytes read from a pipe at once.
pub const READ_CHUNK: usize = 128 * 1024;

/// How a run is bounded in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Counted from the spawn. `None`: no timeout (cancellation still works).
    pub timeout: Option<Duration>,
    /// See [`DEFAULT_EXIT_GRACE`].
    pub exit_grace: Duration,
    /// See [`DEFAULT_HOLDER_GRACE`].
    pub holder_grace: Duration,
    /// How the child's exit is observed.
    pub reaper: Reaper,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions { timeout: None, exit_grace: DEFAULT_EXIT_GRACE, holder_grace: DEFAULT_HOLDER_GRACE, reaper: Reaper::Auto }
    }
}

impl RunOptions {
    pub fn with_timeout(timeout: Duration) -> Self {
        RunOptions { timeout: Some(timeout), ..RunOptions::default() }
    }
}
