//! One running session: its start through run_command's launch path, the thread that reads
//! its output and watches its exit, its stop, and the end of everything it had.
//!
//! The supervisor thread (one per session, never the event loop or a shared pool) polls the
//! output (pipe or terminal), a pidfd of the process and a wake-up pipe. It ends the process
//! at its timeout or when a stop asks (SIGKILL after the grace), collects its real exit status,
//! drains the output (killing what still holds it after a bounded wait), then removes the
//! scratch directory, closes the ports, dismisses the janitor and marks the session done.

use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::ansi::Stripper;
use super::buffer::OutputBuffer;
use super::janitor::Janitor;
use crate::command::Scratch;
use crate::process::{ExitInfo, SpawnSpec};
use crate::sandbox::ports::PortLease;

/// After SIGTERM or SIGINT, how long before SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// After the process exits, how long the output may stay open before its holders are killed.
const EXIT_GRACE: Duration = Duration::from_millis(100);
/// How long a session that ended waits for the rest of its tree to be gone (the namespace's
/// init collected, or no process left in its group) before it is reported done anyway.
pub const TREE_GONE_WAIT: Duration = Duration::from_secs(5);
/// Bytes read at once.
const CHUNK: usize = 64 * 1024;

/// Who ended a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ender {
    Timeout,
    Stop,
    Close,
}

#[derive(Debug)]
pub struct State {
    pub buffer: OutputBuffer,
    /// The exit status, once collected.
    pub exit: Option<ExitInfo>,
    /// Everything is over: output drained, scratch removed.
    pub done: bool,
    pub ended_at: Option<Instant>,
    reaped: bool,
    pub ended_by: Option<Ender>,
    /// When to send SIGKILL (a stop's grace).
    kill_at: Option<Instant>,
    /// The process's stdin: a pipe's write end or the terminal.
    pub stdin: Option<OwnedFd>,
    /// The cursor after the last read.
    pub last_cursor: u64,
}

/// What a session's callers and its supervisor share.
#[derive(Debug)]
pub struct Shared {
    state: Mutex<State>,
    pub changed: Notify,
    wake: OwnedFd,
    /// The process's pid (its process group id); in the namespace case, the process that
    /// leads the group holding the namespace's init.
    pub pgid: i32,
    pub namespace: bool,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wake(&self) {
        let _ = rustix::io::write(&self.wake, &[1]);
    }

    /// Ends the process: `sig` now (to the program; SIGKILL to the whole tree), then SIGKILL
    /// after [`STOP_GRACE`] unless it is already SIGKILL.
    pub fn stop(&self, sig: i32, by: Ender) {
        let mut st = self.lock();
        if st.reaped || st.done {
            return;
        }
        st.ended_by.get_or_insert(by);
        if sig == libc::SIGKILL {
            crate::process::kill::kill_group(self.pgid);
        } else {
            if !signal_program(self.pgid, self.namespace, sig) {
                crate::process::kill::kill_group(self.pgid);
            }
            let at = Instant::now() + STOP_GRACE;
            st.kill_at = Some(st.kill_at.map_or(at, |k| k.min(at)));
        }
        drop(st);
        self.wake();
    }
}

/// Sends `sig` to the program's process group: the group itself where there is no namespace;
/// with one, the group of the namespace's PID 2 (the program), found through `/proc`. False
/// when the program could not be found.
fn signal_program(pgid: i32, namespace: bool, sig: i32) -> bool {
    if !namespace {
        // SAFETY: kill(2) on our own child's group; the leader is not collected yet.
        return unsafe { libc::kill(-pgid, sig) } == 0;
    }
    for init in children(pgid) {
        for pid in children(init) {
            if ns_pid(pid) == Some(2) {
                // SAFETY: kill(2); the program is alive (listed as a child just now).
                unsafe {
                    libc::kill(-pid, sig);
                    libc::kill(pid, sig);
                }
                return true;
            }
        }
    }
    false
}

/// Waits at most `bound` until the session's tree is gone: with a namespace, until its init has
/// exited (the kernel empties the namespace first); without one, until no process is left in
/// its process group (SIGKILLed again meanwhile). True when it is gone.
pub fn wait_tree_gone(pgid: i32, init: Option<&OwnedFd>, bound: Duration) -> bool {
    let until = Instant::now() + bound;
    loop {
        let gone = match init {
            Some(fd) => {
                let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
                let ms = until.saturating_duration_since(Instant::now()).as_millis().min(i32::MAX as u128) as i32;
                // SAFETY: poll on a pidfd this thread owns; readable once the process exited.
                unsafe { libc::poll(&mut p, 1, ms) > 0 && p.revents != 0 }
            }
            None => {
                crate::process::kill::kill_group(pgid);
                // SAFETY: kill(2) with signal 0 only asks whether a process of the group exists.
                let empty = pgid <= 1 || unsafe { libc::kill(-pgid, 0) } != 0;
                if !empty && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(5));
                    continue;
                }
                empty
            }
        };
        if gone || Instant::now() >= until {
            return gone;
        }
    }
}

fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .map(|s| s.split_whitespace().filter_map(|p| p.parse().ok()).collect())
        .unwrap_or_default()
}

/// The innermost pid of `pid` (the last `NSpid` field).
fn ns_pid(pid: i32) -> Option<i32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|l| l.strip_prefix("NSpid:")).and_then(|l| l.split_whitespace().last()).and_then(|p| p.parse().ok())
}

/// How to start one session.
pub struct Start {
    pub spec: SpawnSpec,
    pub tty: bool,
    pub namespace: bool,
    pub timeout: Duration,
    pub keywords: Vec<String>,
    pub scratch: Scratch,
    pub lease: PortLease,
    /// With `network: { allow }`: the process's proxy session (it serves until the namespace's
    /// processes are gone; held here for as long as the session is).
    pub net: Option<crate::proxy::Session>,
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `f` on the one thread that starts every session. The namespace's first process dies
/// with the thread that started it (`PR_SET_PDEATHSIG`): this thread lives as long as the
/// host, so a session lives until it ends or the host does, never until some pool thread
/// retires.
fn on_launcher_thread<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> std::io::Result<R> {
    static TX: std::sync::OnceLock<Mutex<std::sync::mpsc::Sender<Job>>> = std::sync::OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("workcell-session-launcher".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .expect("the session launcher thread");
        Mutex::new(tx)
    });
    let (rtx, rrx) = std::sync::mpsc::sync_channel(1);
    tx.lock()
        .unwrap_or_else(|e| e.into_inner())
        .send(Box::new(move || {
            let _ = rtx.send(f());
        }))
        .map_err(|_| std::io::Error::other("the session launcher thread is gone"))?;
    rrx.recv().map_err(|_| std::io::Error::other("the session launcher thread failed"))
}

/// Starts the process and its supervisor. The process runs when this returns.
pub fn start(s: Start) -> std::io::Result<Arc<Shared>> {
    let Start { spec, tty, namespace, timeout, keywords, scratch, lease, net } = s;
    // stdin, and the one output both stdout and stderr go to (their order kept).
    let (input, child_in, output, child_out) = if tty {
        let (master, slave) = super::tty::open()?;
        let input = master.try_clone()?;
        let child_out = slave.try_clone()?;
        (input, slave, master, child_out)
    } else {
        let (in_r, in_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let (out_r, out_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        set_nonblocking(in_w.as_fd());
        (in_w, in_r, out_r, out_w)
    };
    let (pid, resources) = on_launcher_thread(move || {
        let r = crate::process::spawn_with_stdio(spec, child_in.as_fd(), child_out.as_fd(), child_out.as_fd());
        drop((child_in, child_out));
        r
    })??;
    let started = Instant::now();
    let pidfd = rustix::process::Pid::from_raw(pid)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::NONBLOCK).ok());
    let Some(pidfd) = pidfd else {
        crate::process::kill::kill_group(pid);
        crate::process::reap::reap_in_background(pid);
        return Err(std::io::Error::other("pidfd_open failed"));
    };
    let (wake_r, wake_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC | rustix::pipe::PipeFlags::NONBLOCK)?;
    // The namespace's init (C's child, started before the program ran): its exit comes after the
    // kernel emptied the namespace, so the session is done only once it is readable.
    let init = if namespace {
        children(pid).into_iter().next().and_then(|i| rustix::process::Pid::from_raw(i)).and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::NONBLOCK).ok())
    } else {
        None
    };
    let janitor = Janitor::start(if namespace { 0 } else { pid }, scratch.path());
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            buffer: OutputBuffer::new(keywords),
            exit: None,
            done: false,
            ended_at: None,
            reaped: false,
            ended_by: None,
            kill_at: None,
            stdin: Some(input),
            last_cursor: 0,
        }),
        changed: Notify::new(),
        wake: wake_w,
        pgid: pid,
        namespace,
    });
    let sup = Supervisor { shared: Arc::clone(&shared), output, pidfd, init, wake: wake_r, deadline: started + timeout, tty, scratch, lease, janitor, _net: net, _resources: resources };
    let spawned = std::thread::Builder::new().name("workcell-session".into()).stack_size(256 * 1024).spawn(move || sup.run());
    if let Err(e) = spawned {
        // The supervisor (moved into the closure) was dropped: end the process here.
        crate::process::kill::kill_group(pid);
        crate::process::reap::reap_in_background(pid);
        return Err(e);
    }
    Ok(shared)
}

fn set_nonblocking(fd: BorrowedFd<'_>) {
    if let Ok(flags) = rustix::fs::fcntl_getfl(fd) {
        let _ = rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK);
    }
}

struct Supervisor {
    shared: Arc<Shared>,
    output: OwnedFd,
    pidfd: OwnedFd,
    /// The namespace's init, where there is one.
    init: Option<OwnedFd>,
    wake: OwnedFd,
    deadline: Instant,
    tty: bool,
    scratch: Scratch,
    lease: PortLease,
    janitor: Option<Janitor>,
    /// Kept until the supervisor ends (the proxy session of `network: { allow }`).
    _net: Option<crate::proxy::Session>,
    /// The launcher's resources (the limits' cgroups), dropped once the tree is gone.
    _resources: Option<Box<dyn std::any::Any + Send>>,
}

impl Supervisor {
    fn run(self) {
        let Supervisor { shared, output, pidfd, init, wake, deadline, tty, scratch, lease, janitor, _net, _resources } = self;
        let mut output = Some(output);
        let inode = output.as_ref().and_then(crate::process::kill::pipe_inode);
        let mut strip = tty.then(Stripper::default);
        let mut exited = false;
        let mut grace_until: Option<Instant> = None;
        let mut holders_killed = false;
        let mut buf = vec![0u8; CHUNK];
        let mut clean = Vec::new();
        loop {
            let now = Instant::now();
            let kill_at = shared.lock().kill_at;
            if !exited {
                let due = now >= deadline || kill_at.is_some_and(|k| now >= k);
                if due {
                    let mut st = shared.lock();
                    if now >= deadline {
                        st.ended_by.get_or_insert(Ender::Timeout);
                    }
                    crate::process::kill::kill_group(shared.pgid);
                    st.kill_at = None;
                }
            }
            if exited && (output.is_none() || grace_until.is_some_and(|g| now >= g)) {
                if output.is_some() && !holders_killed && !tty {
                    holders_killed = true;
                    if let Some(i) = inode {
                        crate::process::kill::kill_pipe_holders(&[i]);
                    }
                    grace_until = Some(Instant::now() + EXIT_GRACE);
                    continue;
                }
                break;
            }
            // What to wait for, and until when.
            let mut until = if exited { grace_until.unwrap_or(now + EXIT_GRACE) } else { deadline };
            if let Some(k) = kill_at.filter(|_| !exited) {
                until = until.min(k);
            }
            let ms = until.saturating_duration_since(now).as_millis().min(60_000) as i32;
            let mut fds = vec![libc::pollfd { fd: wake.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
            if !exited {
                fds.push(libc::pollfd { fd: pidfd.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            }
            if let Some(o) = &output {
                fds.push(libc::pollfd { fd: o.as_raw_fd(), events: libc::POLLIN, revents: 0 });
            }
            // SAFETY: poll on descriptors this thread owns.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms.max(0)) };
            if n <= 0 {
                continue;
            }
            if fds[0].revents != 0 {
                let mut b = [0u8; 64];
                while matches!(rustix::io::read(&wake, &mut b), Ok(n) if n > 0) {}
            }
            if let Some(o) = &output {
                let pf = fds.last().unwrap();
                if pf.revents != 0 {
                    match rustix::io::read(o, &mut buf) {
                        Ok(0) => output = None,
                        Ok(n) => {
                            let data: &[u8] = match &mut strip {
                                Some(s) => {
                                    clean.clear();
                                    s.push(&buf[..n], &mut clean);
                                    &clean
                                }
                                None => &buf[..n],
                            };
                            if !data.is_empty() {
                                shared.lock().buffer.push(data);
                                shared.changed.notify_waiters();
                            }
                        }
                        Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                        // EIO: the terminal's last program side closed.
                        Err(_) => output = None,
                    }
                }
            }
            if !exited && fds[1].revents != 0 {
                exited = true;
                {
                    let mut st = shared.lock();
                    // The leader is not collected yet: its group id is still ours.
                    crate::process::kill::kill_group(shared.pgid);
                    let mut status = 0;
                    // SAFETY: waitpid on our own exited child.
                    let r = unsafe { libc::waitpid(shared.pgid, &mut status, 0) };
                    st.exit = Some(if r == shared.pgid { ExitInfo::from_wait_status(status) } else { ExitInfo::default() });
                    st.reaped = true;
                    st.kill_at = None;
                    st.stdin = None;
                }
                grace_until = Some(Instant::now() + EXIT_GRACE);
            }
        }
        drop(output);
        // Done means the whole tree is gone, not only the process the host started: wait
        // (bounded) for the namespace's init, or for the process group to be empty.
        wait_tree_gone(shared.pgid, init.as_ref(), TREE_GONE_WAIT);
        drop(scratch);
        drop(lease);
        drop(janitor);
        let mut st = shared.lock();
        st.buffer.finish_line();
        if let Some(e) = &mut st.exit {
            // Ended by us without a status of its own: say how.
            if e.code.is_none() && e.signal.is_none() {
                e.signal = Some(libc::SIGKILL);
            }
        }
        st.done = true;
        st.ended_at = Some(Instant::now());
        drop(st);
        shared.changed.notify_waiters();
    }
}
