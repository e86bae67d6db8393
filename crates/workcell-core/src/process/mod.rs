//! Running child processes: the machinery shared by `node_process`, `run_command` and
//! `run_tests`.
//!
//! One path for every tool that starts a program:
//! 1. describe the child in a [`SpawnSpec`]: program path, explicit argv (never a shell), working
//!    directory, the whole environment (nothing is inherited), merged or separate output pipes,
//!    and confinement steps to run between fork and exec ([`SpawnSpec::pre_exec`]);
//! 2. pick what to keep of the output with a [`Sink`]: [`Head`] (first N bytes, per stream) or
//!    [`HeadTail`] (first N and last M bytes of one merged stream);
//! 3. [`run`] it with [`RunOptions`] (timeout, grace delays, reaper) and a [`Cancel`]:
//!    - stdin is the null device, the child leads a new process group;
//!    - output is drained concurrently to the end, so the child never blocks on a full pipe;
//!    - on timeout or cancellation the whole group gets SIGKILL; after a normal exit what is
//!      left of the group gets it too;
//!    - the host then waits a bounded time for the pipes to close, kills any process outside the
//!      group that still holds one ([`kill_pipe_holders`]), and closes them;
//!    - exits are observed with a pidfd or a waiting thread, never through SIGCHLD
//!      ([`Reaper`]), so Node's own `child_process` can run alongside;
//! 4. read the [`Finished`] result: why it ended, the exit status, the sinks, the duration.
//!
//! [`Cancel`]: crate::cancel::Cancel

pub mod capture;
pub mod cmdline;
pub mod kill;
pub mod timing;
pub mod reap;
pub mod spawn;
pub mod supervise;

pub use capture::{Head, HeadTail, HeadTailText, HeadText, Sink};
pub use cmdline::{quote_windows_arg, windows_command_line_units};
pub use kill::kill_pipe_holders;
pub use timing::RunOptions;
pub use reap::{pidfd_available, signal_name, ExitInfo, Reaper};
pub use spawn::{spawn_with_stdio, LaunchIo, Launcher, OutputPipes, PreExec, SpawnSpec};
pub use supervise::{run, End, Finished};

/// Edits the spawn of a child before it starts: the place where confinement adds flags
/// (inserted at the front of `args`, before the script or program arguments) and pre-exec
/// steps. Given the spec and the child's working directory.
pub type Prepare = std::sync::Arc<dyn Fn(&mut SpawnSpec, &std::path::Path) -> crate::error::Result<()> + Send + Sync>;
