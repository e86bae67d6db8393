//! Starting a child: explicit argv, no shell, an environment built from nothing, stdin from the
//! null device, stdout and stderr into pipes only the host reads, and a process group of its own.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::{AsFd as _, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A step run in the child between `fork` and `exec`, for confinement (Landlock, namespaces,
/// closing inherited descriptors...). It runs in a copy of a multi-threaded process: it may only
/// make async-signal-safe calls (raw syscalls; no allocation, no locks, no logging). An error
/// aborts the spawn and is returned by [`spawn`].
pub type PreExec = Box<dyn FnMut() -> io::Result<()> + Send + Sync + 'static>;

/// What a [`Launcher`] gets: the child as described by its [`SpawnSpec`], and the descriptors
/// to give it as stdin, stdout and stderr.
pub struct LaunchIo<'a> {
    pub program: &'a Path,
    /// `argv[0]`; the program path when `None`.
    pub arg0: Option<&'a OsStr>,
    pub args: &'a [OsString],
    pub cwd: &'a Path,
    /// The whole environment.
    pub env: &'a [(OsString, OsString)],
    /// The null device, opened for reading.
    pub stdin: BorrowedFd<'a>,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
}

/// Starts a child in place of `std::process::Command`: the sandbox's clone-based spawn, which
/// confines the child without copying the host's memory.
pub trait Launcher: Send + Sync {
    /// Starts the child: stdio as given, the working directory, exactly the environment, in a
    /// new process group it leads. Returns its pid once it runs the program (an error if it
    /// could not: nothing is left running then). The child is the caller's to collect.
    fn launch(&self, io: &LaunchIo<'_>) -> io::Result<i32>;

    /// What must live until the child's tree is gone (the sandbox's per-call cgroups), taken
    /// after a successful launch: the process machinery drops it once the run has killed and
    /// collected the tree, or when the run is dropped.
    fn resources(self: Box<Self>) -> Option<Box<dyn std::any::Any + Send>> {
        None
    }
}

/// Where stdout and stderr go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputPipes {
    /// Two pipes, read independently (node_process).
    Separate,
    /// One pipe for both, so their interleaving is kept (run_command).
    Merged,
}

/// Everything about a child that is decided before it starts.
pub struct SpawnSpec {
    /// The program, by path: no PATH search happens here.
    pub program: PathBuf,
    /// `argv[0]` as the child sees it; the program path when `None`.
    pub arg0: Option<OsString>,
    /// `argv[1..]`, passed as they are (no shell, no splitting, no globbing).
    pub args: Vec<OsString>,
    /// The working directory.
    pub cwd: PathBuf,
    /// The whole environment: nothing else is inherited.
    pub env: Vec<(OsString, OsString)>,
    pub output: OutputPipes,
    /// Confinement steps for the child, run in order after the working directory is set and
    /// the process group created, just before `exec`. Added only through the unsafe
    /// [`SpawnSpec::pre_exec`] / [`SpawnSpec::add_pre_exec`].
    pre_exec: Vec<PreExec>,
    /// Starts the child instead of `std::process::Command` (set by the sandbox).
    launcher: Option<Box<dyn Launcher>>,
}

impl SpawnSpec {
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Self {
        SpawnSpec {
            program: program.into(),
            arg0: None,
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            output: OutputPipes::Separate,
            pre_exec: Vec::new(),
            launcher: None,
        }
    }

    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    pub fn args<I: IntoIterator<Item = A>, A: Into<OsString>>(mut self, args: I) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    pub fn env(mut self, name: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn output(mut self, output: OutputPipes) -> Self {
        self.output = output;
        self
    }

    /// Adds a confinement step.
    ///
    /// # Safety
    /// `step` runs between `fork` and `exec` in a copy of a multi-threaded process and must only
    /// make async-signal-safe calls.
    pub unsafe fn pre_exec(mut self, step: PreExec) -> Self {
        self.pre_exec.push(step);
        self
    }

    /// [`SpawnSpec::pre_exec`] on a borrowed spec (for hooks such as node_process's `prepare`).
    ///
    /// # Safety
    /// As for [`SpawnSpec::pre_exec`].
    pub unsafe fn add_pre_exec(&mut self, step: PreExec) {
        self.pre_exec.push(step);
    }

    /// Starts the child with `launcher` instead of `std::process::Command`. A spec with a
    /// launcher cannot also have pre-exec steps (the spawn refuses it).
    ///
    /// # Safety
    /// The launcher must start the child as [`Launcher::launch`] says.
    pub unsafe fn set_launcher(&mut self, launcher: Box<dyn Launcher>) {
        self.launcher = Some(launcher);
    }

    /// Whether a launcher is set.
    pub fn has_launcher(&self) -> bool {
        self.launcher.is_some()
    }

    /// How many confinement steps are registered.
    pub fn pre_exec_len(&self) -> usize {
        self.pre_exec.len()
    }
}

/// A started child whose exit has not been collected yet. The process id stays reserved (and
/// with it the group id) until [`crate::process::reap`] collects it.
#[derive(Debug)]
pub struct Spawned {
    /// The child's pid, which is also its process group id.
    pub pid: i32,
    /// Read end of the stdout pipe (of the merged pipe with [`OutputPipes::Merged`]).
    pub stdout: OwnedFd,
    /// Read end of the stderr pipe; `None` with [`OutputPipes::Merged`].
    pub stderr: Option<OwnedFd>,
    /// What the launcher needs kept until the tree is gone ([`Launcher::resources`]).
    pub resources: Option<Box<dyn std::any::Any + Send>>,
}

/// A pipe whose ends are close-on-exec (the child gets its copy through `dup2`, which clears
/// the flag on the new descriptor only).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    #[cfg(not(target_vendor = "apple"))]
    let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
    // No pipe2 on macOS: a fork in another thread between these calls could copy the ends
    // without the flag into a child until it execs (std has the same window there).
    #[cfg(target_vendor = "apple")]
    let (r, w) = {
        let (r, w) = rustix::pipe::pipe()?;
        rustix::io::fcntl_setfd(&r, rustix::io::FdFlags::CLOEXEC)?;
        rustix::io::fcntl_setfd(&w, rustix::io::FdFlags::CLOEXEC)?;
        (r, w)
    };
    // The pipes keep the default size: a larger one is not faster here and is charged to the
    // user's pipe-buffer quota (fs.pipe-user-pages-soft), which other programs share.
    Ok((r, w))
}

/// Marks every descriptor above 2 close-on-exec: `close_range(CLOSE_RANGE_CLOEXEC)` (Linux
/// 5.11+), otherwise `fcntl` on every number up to the soft descriptor limit. Async-signal-safe.
fn cloexec_above_stdio() {
    #[cfg(target_os = "linux")]
    // SAFETY: a system call with plain integer arguments.
    unsafe {
        const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
        if libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, libc::c_uint::MAX, CLOSE_RANGE_CLOEXEC) == 0 {
            return;
        }
    }
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit into a local struct; fcntl on integers.
    unsafe {
        let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 && limit.rlim_cur != libc::RLIM_INFINITY {
            limit.rlim_cur.min(i32::MAX as libc::rlim_t) as libc::c_int
        } else {
            1 << 20
        };
        for fd in 3..top {
            libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
}

/// Starts the child described by `spec` with the given descriptors as its stdin, stdout and
/// stderr (a session's pipe or terminal) instead of the null device and output pipes. Returns
/// its pid (its process group id); the child is the caller's to collect.
/// Returns the child's pid and what its launcher needs kept until the tree is gone (its cgroups:
/// dropping them kills what is left in them).
pub fn spawn_with_stdio(
    spec: SpawnSpec,
    stdin: BorrowedFd<'_>,
    stdout: BorrowedFd<'_>,
    stderr: BorrowedFd<'_>,
) -> io::Result<(i32, Option<Box<dyn std::any::Any + Send>>)> {
    let SpawnSpec { program, arg0, args, cwd, env, output: _, pre_exec, launcher } = spec;
    if let Some(launcher) = launcher {
        if !pre_exec.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a spec with a launcher cannot have pre-exec steps"));
        }
        let io = LaunchIo { program: &program, arg0: arg0.as_deref(), args: &args, cwd: &cwd, env: &env, stdin, stdout, stderr };
        let pid = launcher.launch(&io)?;
        return Ok((pid, launcher.resources()));
    }
    let mut cmd = Command::new(&program);
    if let Some(arg0) = arg0 {
        cmd.arg0(arg0);
    }
    cmd.args(&args)
        .current_dir(&cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::from(stdin.try_clone_to_owned()?))
        .stdout(Stdio::from(stdout.try_clone_to_owned()?))
        .stderr(Stdio::from(stderr.try_clone_to_owned()?))
        .process_group(0);
    for step in pre_exec {
        // SAFETY: the contract of `SpawnSpec::pre_exec` (async-signal-safe steps only).
        unsafe {
            cmd.pre_exec(step);
        }
    }
    // SAFETY: as in `spawn`.
    unsafe {
        cmd.pre_exec(|| {
            cloexec_above_stdio();
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    drop(cmd);
    Ok((child.id() as i32, None))
}

/// Starts the child described by `spec`.
pub fn spawn(spec: SpawnSpec) -> io::Result<Spawned> {
    let SpawnSpec { program, arg0, args, cwd, env, output, pre_exec, launcher } = spec;
    let (out_r, out_w) = pipe()?;
    let (err_r, err_w) = match output {
        OutputPipes::Separate => {
            let (r, w) = pipe()?;
            (Some(r), w)
        }
        OutputPipes::Merged => (None, out_w.try_clone()?),
    };
    if let Some(launcher) = launcher {
        if !pre_exec.is_empty() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "a spec with a launcher cannot have pre-exec steps"));
        }
        let stdin = std::fs::File::open("/dev/null")?;
        let io = LaunchIo {
            program: &program,
            arg0: arg0.as_deref(),
            args: &args,
            cwd: &cwd,
            env: &env,
            stdin: stdin.as_fd(),
            stdout: out_w.as_fd(),
            stderr: err_w.as_fd(),
        };
        let pid = launcher.launch(&io)?;
        // The parent's copies of the write ends close here, as with Command below.
        drop((out_w, err_w));
        return Ok(Spawned { pid, stdout: out_r, stderr: err_r, resources: launcher.resources() });
    }
    let mut cmd = Command::new(&program);
    if let Some(arg0) = arg0 {
        cmd.arg0(arg0);
    }
    cmd.args(&args)
        .current_dir(&cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::from(out_w))
        .stderr(Stdio::from(err_w))
        .process_group(0);
    for step in pre_exec {
        // SAFETY: the contract of `SpawnSpec::pre_exec` (async-signal-safe steps only).
        unsafe {
            cmd.pre_exec(step);
        }
    }
    // Last: only stdio reaches the program. Every other descriptor (whatever the host left
    // inheritable) is marked close-on-exec, so std's own error pipe still works until exec.
    // SAFETY: system calls only (`close_range`, `getrlimit`, `fcntl`), in the forked child.
    unsafe {
        cmd.pre_exec(|| {
            cloexec_above_stdio();
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // The parent's copies of the write ends go with `cmd`: from now on only the child (and
    // whatever it starts) can hold them, so end of file means they are all gone.
    drop(cmd);
    let pid = child.id() as i32;
    // `std::process::Child` neither waits nor kills on drop: the pid is managed by the caller.
    drop(child);
    Ok(Spawned { pid, stdout: out_r, stderr: err_r, resources: None })
}
