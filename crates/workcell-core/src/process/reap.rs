//! Knowing when a child exits and collecting its status, without depending on SIGCHLD.
//!
//! Node.js (libuv) owns the process's SIGCHLD handler, and a Rust runtime that relies on that
//! signal to learn about exits would hang whenever Node's own `child_process` is in use. So the
//! exit of a child is observed in one of two ways that need no signal:
//! - [`Reaper::Pidfd`]: a pidfd for the child (Linux 5.3+), registered with tokio's reactor; it
//!   becomes readable when the child exits. Chosen when `pidfd_open` works, which is checked
//!   once per process ([`pidfd_available`]).
//! - [`Reaper::Thread`]: a dedicated thread blocked in `waitid(P_PID, pid, WEXITED | WNOWAIT)`
//!   (any Unix).
//!
//! Both observe the exit without collecting it (`WNOWAIT`): the exited child stays a zombie, so
//! its pid, which is also its process group id, cannot be reused while the rest of the group is
//! killed. Only then is the status collected ([`ChildHandle::reap`]). A handle dropped before
//! that kills the group and collects the child on a background thread.

use std::io;
use std::sync::OnceLock;
use std::time::Duration;

/// How a child's exit is observed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Reaper {
    /// [`Reaper::Pidfd`] where it works, [`Reaper::Thread`] otherwise.
    #[default]
    Auto,
    /// A pidfd on tokio's reactor (falls back to a thread where pidfds do not work).
    Pidfd,
    /// A thread blocked in `waitid` per child.
    Thread,
}

impl Reaper {
    /// The method actually used: `Auto` and an unavailable `Pidfd` resolve to what works here.
    pub fn resolve(self) -> Reaper {
        match self {
            Reaper::Thread => Reaper::Thread,
            Reaper::Auto | Reaper::Pidfd if pidfd_available() => Reaper::Pidfd,
            _ => Reaper::Thread,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Reaper::Auto => "auto",
            Reaper::Pidfd => "pidfd",
            Reaper::Thread => "thread",
        }
    }

    pub fn parse(s: &str) -> Option<Reaper> {
        match s {
            "auto" => Some(Reaper::Auto),
            "pidfd" => Some(Reaper::Pidfd),
            "thread" => Some(Reaper::Thread),
            _ => None,
        }
    }
}

impl<'de> serde::Deserialize<'de> for Reaper {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::json::named(d, "reaper", Reaper::parse)
    }
}

static PIDFD: OnceLock<bool> = OnceLock::new();

/// Whether `pidfd_open` works in this process (checked once, on our own pid).
pub fn pidfd_available() -> bool {
    *PIDFD.get_or_init(probe_pidfd)
}

#[cfg(target_os = "linux")]
fn probe_pidfd() -> bool {
    rustix::process::pidfd_open(rustix::process::getpid(), rustix::process::PidfdFlags::NONBLOCK).is_ok()
}

#[cfg(not(target_os = "linux"))]
fn probe_pidfd() -> bool {
    false
}

/// How a child ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExitInfo {
    /// The exit code, when it exited.
    pub code: Option<i32>,
    /// The signal number, when a signal ended it.
    pub signal: Option<i32>,
}

impl ExitInfo {
    pub fn from_wait_status(status: i32) -> Self {
        if libc::WIFEXITED(status) {
            ExitInfo { code: Some(libc::WEXITSTATUS(status)), signal: None }
        } else if libc::WIFSIGNALED(status) {
            ExitInfo { code: None, signal: Some(libc::WTERMSIG(status)) }
        } else {
            ExitInfo::default()
        }
    }

    /// The signal's name, such as `SIGKILL`.
    pub fn signal_name(&self) -> Option<String> {
        self.signal.map(signal_name)
    }
}

/// `SIGKILL` for 9, `SIG<n>` for numbers without a name.
pub fn signal_name(signo: i32) -> String {
    nix::sys::signal::Signal::try_from(signo)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| format!("SIG{signo}"))
}

enum Watch {
    #[cfg(target_os = "linux")]
    Pidfd(tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>),
    Thread(tokio::sync::oneshot::Receiver<()>),
    Exited,
}

/// A child that has not been collected yet. Its pid is its process group id.
pub struct ChildHandle {
    pid: i32,
    watch: Watch,
    reaped: bool,
}

impl std::fmt::Debug for ChildHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChildHandle").field("pid", &self.pid).field("reaped", &self.reaped).finish()
    }
}

impl ChildHandle {
    /// Starts observing `pid`, a child of this process that leads its own process group.
    /// Must be called within a tokio runtime with I/O enabled.
    pub fn new(pid: i32, reaper: Reaper) -> io::Result<Self> {
        let watch = match reaper.resolve() {
            #[cfg(target_os = "linux")]
            Reaper::Pidfd => match open_pidfd(pid) {
                Ok(w) => w,
                Err(_) => thread_watch(pid)?,
            },
            _ => thread_watch(pid)?,
        };
        Ok(ChildHandle { pid, watch, reaped: false })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Resolves once the child has exited (it is not collected: see [`ChildHandle::reap`]).
    /// Cancel-safe.
    pub async fn exited(&mut self) {
        match &mut self.watch {
            #[cfg(target_os = "linux")]
            Watch::Pidfd(fd) => loop {
                let Ok(mut guard) = fd.readable().await else { break };
                if pidfd_exited(guard.get_inner()) {
                    break;
                }
                guard.clear_ready();
            },
            Watch::Thread(rx) => {
                let _ = rx.await;
            }
            Watch::Exited => return,
        }
        self.watch = Watch::Exited;
    }

    /// Sends SIGKILL to the child's whole process group. Safe against pid reuse: the leader
    /// has not been collected, so the group id is still the child's.
    pub fn kill_group(&self) {
        if !self.reaped {
            super::kill::kill_group(self.pid);
        }
    }

    /// Collects the exit status of a child that has exited. If the child has not exited, waits
    /// at most `limit` (a SIGKILLed child exits promptly); past that it is left to a background
    /// thread and `None` is returned.
    pub async fn reap(mut self, limit: Duration) -> Option<ExitInfo> {
        if tokio::time::timeout(limit, self.exited()).await.is_err() {
            return None; // Drop kills the group and collects the child in the background.
        }
        self.reaped = true;
        Some(wait_blocking(self.pid))
    }
}

impl Drop for ChildHandle {
    fn drop(&mut self) {
        if !self.reaped {
            super::kill::kill_group(self.pid);
            reap_in_background(self.pid);
        }
    }
}

#[cfg(target_os = "linux")]
fn open_pidfd(pid: i32) -> io::Result<Watch> {
    use rustix::process::{pidfd_open, Pid, PidfdFlags};
    let pid = Pid::from_raw(pid).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    let fd = pidfd_open(pid, PidfdFlags::NONBLOCK)?;
    // SAFETY: the AsyncFd owns the pidfd, which stays open and unchanged until it is dropped.
    let fd = unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }?;
    Ok(Watch::Pidfd(fd))
}

/// Whether the process behind `fd` has exited (without collecting it). An error (the child
/// was collected elsewhere) counts as exited: there is nothing left to wait for.
#[cfg(target_os = "linux")]
fn pidfd_exited(fd: &std::os::fd::OwnedFd) -> bool {
    use rustix::process::{waitid, WaitId, WaitIdOptions};
    use std::os::fd::AsFd as _;
    !matches!(
        waitid(WaitId::PidFd(fd.as_fd()), WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT),
        Ok(None)
    )
}

fn thread_watch(pid: i32) -> io::Result<Watch> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("workcell-waitid".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            wait_exited_blocking(pid);
            let _ = tx.send(());
        })?;
    Ok(Watch::Thread(rx))
}

/// Blocks until `pid` has exited, without collecting it.
fn wait_exited_blocking(pid: i32) {
    loop {
        // SAFETY: plain waitid on our own child; `info` is a valid out-parameter.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let r = unsafe { libc::waitid(libc::P_PID, pid as libc::id_t, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if r == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

/// Collects `pid`, blocking until it exits.
fn wait_blocking(pid: i32) -> ExitInfo {
    let mut status = 0;
    loop {
        // SAFETY: waitpid on our own child with a valid out-parameter.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return ExitInfo::from_wait_status(status);
        }
        if r < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) {
            continue;
        }
        // ECHILD: collected elsewhere (SIGCHLD ignored by the host); the status is lost.
        return ExitInfo::default();
    }
}

/// Collects `pid` on a background thread (after its group was killed).
pub(crate) fn reap_in_background(pid: i32) {
    let spawned = std::thread::Builder::new()
        .name("workcell-reap".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            wait_blocking(pid);
        });
    if spawned.is_err() {
        // No thread to spare: try once now; a zombie left behind is collected by init when
        // the host exits.
        let mut status = 0;
        // SAFETY: non-blocking waitpid on our own child.
        unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    }
}
