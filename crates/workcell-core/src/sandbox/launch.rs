//! The sandbox's spawn: a `clone(CLONE_VM)` child in place of `fork` + `exec`.
//!
//! A confinement step between `fork` and `exec` makes `std::process::Command` fork the host,
//! which copies its page tables: milliseconds for a host of a few hundred megabytes, on every
//! call, plus copy-on-write faults while the child lives. The launcher instead starts the child
//! the way `posix_spawn` does, sharing the host's memory, on a stack of its own:
//!
//! - without a PID namespace, the child (C) sets up its stdio, working directory and process
//!   group, applies Landlock and execs; the calling thread is suspended (`CLONE_VFORK`) until
//!   then, so it is as cheap as an unconfined spawn;
//! - with one, C stays: it enters the namespaces and starts the init, which starts the program's
//!   process ([`super::pidns`]); the calling thread goes on as soon as the program runs.
//!
//! The calling thread blocks every signal around the `clone`, so no handler of the host runs in
//! the child before it has reset them all. The child only makes raw system calls
//! (`sandbox::sys`) on data the host prepared, and tells the host through a close-on-exec pipe
//! either nothing (end of file: the program runs) or the errno that kept it from running.
//!
//! Stacks are kept in a small pool: one in use by a C that waits for its program is reused once
//! that C has exited (watched with a pidfd).

use std::io;
use std::os::fd::{AsRawFd as _, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::sync::Mutex;

use super::cgroup::Leaf;
use super::exec::{cstring, Exec};
use super::resources::ChildLimits;
use super::pidns::{self, IArgs, NsPlan};
use super::sys;
use crate::process::{LaunchIo, Launcher};

/// The launcher of one confined child.
pub struct Launch {
    /// The Landlock ruleset, if any (its descriptor is close-on-exec).
    ruleset: Option<OwnedFd>,
    /// The namespaces, if any.
    namespaces: Option<NsPlan>,
    /// `oom_score_adj` 1000 for the program (every confined process).
    oom: bool,
    /// The resource limits the program's process applies to itself before exec.
    limits: Option<ChildLimits>,
    /// The call's cgroups: handed to the process machinery after the launch.
    cgroups: Option<Leaf>,
    probe: bool,
    /// A network namespace whose loopback listener goes to the host's proxy ([`super::netns`]).
    net: Option<super::netns::Net>,
    /// The protected paths, mounted read-only in the namespace ([`super::protect`]).
    protect: Option<super::protect::Protect>,
    /// The tool set's network namespace (its sessions' `ports`), joined before the others
    /// are unshared (only with namespaces).
    shared_net: Option<std::sync::Arc<super::netns::Keeper>>,
    /// A staged run's overlay over the workspace ([`super::overlay`]; only with namespaces).
    stage: Option<std::sync::Arc<super::overlay::Layer>>,
}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch").field("landlock", &self.ruleset.is_some()).field("namespaces", &self.namespaces.is_some()).finish()
    }
}

impl Launch {
    pub fn new(ruleset: Option<OwnedFd>, namespaces: Option<NsPlan>, oom: bool) -> Self {
        Launch { ruleset, namespaces, oom, limits: None, cgroups: None, probe: false, net: None, protect: None, shared_net: None, stage: None }
    }

    /// The protected paths are mounted read-only in the child's namespace (only with namespaces).
    pub fn with_protect(mut self, protect: Option<super::protect::Protect>) -> Self {
        self.protect = protect;
        self
    }

    /// The child's writes to the workspace land in an overlay ([`super::overlay`]).
    pub fn with_stage(mut self, stage: Option<std::sync::Arc<super::overlay::Layer>>) -> Self {
        self.stage = stage;
        self
    }

    /// The child joins the tool set's network namespace ([`super::netns::Keeper`]).
    pub fn with_shared_net(mut self, keeper: Option<std::sync::Arc<super::netns::Keeper>>) -> Self {
        self.shared_net = keeper;
        self
    }

    /// The child gets a network namespace of its own, its proxy listener served by `net`
    /// (only with namespaces).
    pub fn with_net(mut self, net: Option<super::netns::Net>) -> Self {
        self.net = net;
        self
    }

    /// A probe of the network namespace ([`super::probe::network_namespace`]).
    pub(super) fn probe_network(net: super::netns::Net) -> Self {
        Launch { net: Some(net), ..Launch::probe() }

    }

    /// With resource limits, and the cgroups they join (kept until the tree is gone).
    pub fn with_limits(mut self, limits: Option<ChildLimits>, cgroups: Option<Leaf>) -> Self {
        self.limits = limits;
        self.cgroups = cgroups;
        self
    }

    /// A launcher whose program's process reports, through its exit code, how far it got in the
    /// namespace instead of exec'ing ([`super::probe`]).
    pub(super) fn probe() -> Self {
        Launch { ruleset: None, namespaces: Some(NsPlan::new(true)), oom: false, limits: None, cgroups: None, probe: true, net: None, protect: None, shared_net: None, stage: None }
    }
}

/// What C needs; in the host's memory, alive until the host has read the status pipe.
struct CArgs<'a> {
    stdio: [RawFd; 3],
    cwd: &'a std::ffi::CStr,
    status: RawFd,
    host: libc::pid_t,
    ruleset: RawFd,
    namespaces: Option<&'a NsPlan>,
    oom: bool,
    /// The Unix socket to send the network namespace's listener through; -1 for none.
    net: RawFd,
    /// The tool set's network namespace to join: its user and network namespaces'
    /// descriptors ([`super::netns::Keeper`]).
    join: Option<(RawFd, RawFd)>,
    limits: Option<&'a ChildLimits>,
    protect: Option<&'a super::protect::Protect>,
    stage: Option<&'a super::overlay::Layer>,
    exec: Option<&'a Exec>,
    init_stack: *mut libc::c_void,
    main_stack: *mut libc::c_void,
}

impl Launcher for Launch {
    fn launch(&self, io: &LaunchIo<'_>) -> io::Result<i32> {
        let exec = Exec::new(io.program, io.arg0, io.args, io.env)?;
        let cwd = cstring(io.cwd.as_os_str().as_bytes())?;
        let (status_r, status_w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        let stacks = Stacks::take()?;
        let raw = |fd: &BorrowedFd<'_>| fd.as_raw_fd();
        let args = CArgs {
            stdio: [raw(&io.stdin), raw(&io.stdout), raw(&io.stderr)],
            cwd: &cwd,
            status: status_w.as_raw_fd(),
            host: std::process::id() as libc::pid_t,
            ruleset: self.ruleset.as_ref().map_or(-1, |f| f.as_raw_fd()),
            namespaces: self.namespaces.as_ref(),
            oom: self.oom,
            net: match (&self.namespaces, &self.net) {
                (Some(_), Some(n)) => n.child_fd(),
                _ => -1,
            },
            join: match (&self.namespaces, &self.shared_net) {
                (Some(_), Some(k)) => Some(k.fds()),
                _ => None,
            },
            limits: self.limits.as_ref(),
            protect: self.namespaces.as_ref().and(self.protect.as_ref()),
            stage: self.namespaces.as_ref().and(self.stage.as_deref()),
            exec: (!self.probe).then_some(&exec),
            init_stack: stacks.top(1),
            main_stack: stacks.top(2),
        };
        let mut flags = libc::CLONE_VM | libc::SIGCHLD;
        if self.namespaces.is_none() {
            // C execs the program itself: suspend this thread until it has.
            flags |= libc::CLONE_VFORK;
        }
        // SAFETY: all signals are blocked in this thread around the clone (C starts with them
        // blocked and resets their dispositions before unblocking them); C runs on its own
        // stack and only reads `args`, which outlives its use (see below).
        let pid = unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let pid = libc::clone(c_main, stacks.top(0), flags, (&args as *const CArgs).cast_mut().cast());
            let err = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if pid < 0 {
                Stacks::give_back(stacks, None);
                return Err(err);
            }
            pid
        };
        drop(status_w);
        // End of file once the program runs (every copy of the write end is gone: C closed its
        // own, the init closed all, the program's closed on exec); four bytes of errno if not.
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match rustix::io::read(&status_r, &mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(rustix::io::Errno::INTR) => {}
                // Not expected on a pipe of our own; C reports any failure by its exit status.
                Err(_) => break,
            }
        }
        // From here on nobody reads `args`, `exec` or `cwd` (they live to the end of this
        // function all the same).
        if got == 4 {
            let errno = i32::from_ne_bytes(buf);
            // C exits right after writing it.
            let mut status = 0;
            // SAFETY: waitpid on our own child.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            Stacks::give_back(stacks, None);
            return Err(io::Error::from_raw_os_error(errno));
        }
        if let (Some(_), Some(net)) = (&self.namespaces, &self.net) {
            // The namespace's listener is in the socket already (C sent it before starting the
            // init); without it the program must not run at all.
            if let Err(e) = net.start(pid) {
                // SAFETY: C leads the call's process group; its death ends the namespace.
                unsafe {
                    libc::kill(-pid, libc::SIGKILL);
                    let mut status = 0;
                    libc::waitpid(pid, &mut status, 0);
                }
                Stacks::give_back(stacks, None);
                return Err(e);
            }
        }
        if self.namespaces.is_some() {
            // C lives on, on these stacks, until the program ends.
            Stacks::give_back(stacks, pidfd(pid));
        } else {
            Stacks::give_back(stacks, None);
        }
        Ok(pid)
    }

    fn resources(self: Box<Self>) -> Option<Box<dyn std::any::Any + Send>> {
        let mut this = *self;
        let stand_in = this.protect.as_mut().and_then(super::protect::Protect::take_stand_in);
        match (this.cgroups, stand_in) {
            (None, None) => None,
            (Some(c), None) => Some(Box::new(c)),
            (c, s) => Some(Box::new((c, s))),
        }
    }
}

fn pidfd(pid: libc::pid_t) -> Option<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(pid)?;
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()
}

/// C: the child the host started. Raw system calls only; never returns.
extern "C" fn c_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the host's CArgs, alive until the status pipe reports.
    unsafe {
        let a = &*arg.cast::<CArgs>();
        let fail = |errno: i32| -> ! {
            let _ = sys::write(a.status, &errno.to_ne_bytes());
            sys::exit(127)
        };
        // No handler of the host may run here; then the signals blocked by the host come back.
        sys::reset_signals();
        // This process and the init share the host's memory: never a core dump (a soft limit
        // of 1 also stops core_pattern pipes). The program gets the host's limit back before
        // exec (the hard limit is left alone: raising it again would need a privilege).
        let core = sys::get_rlimit(libc::RLIMIT_CORE as libc::c_int);
        sys::set_rlimit(libc::RLIMIT_CORE as libc::c_int, [1.min(core[1]), core[1]]);
        for (fd, to) in a.stdio.iter().zip(0..) {
            if let Err(e) = sys::dup_to(*fd, to) {
                fail(e);
            }
        }
        if let Err(e) = sys::chdir(a.cwd).and_then(|()| sys::setpgid_self()) {
            fail(e);
        }
        let Some(plan) = a.namespaces else {
            // No namespace: this process is the program. It is this thread's vfork child: the
            // score it sets is its own alone (before Landlock, which would refuse the write).
            if a.oom {
                sys::score_for_oom_killer();
            }
            if let Some(limits) = a.limits {
                if let Err(e) = limits.apply() {
                    fail(e);
                }
            }
            if a.ruleset >= 0 {
                if let Err(e) = super::landlock::add_self_rule(a.ruleset).and_then(|()| super::landlock::restrict(a.ruleset)) {
                    fail(e);
                }
            }
            let Some(exec) = a.exec else { fail(libc::EINVAL) };
            sys::set_rlimit(libc::RLIMIT_CORE as libc::c_int, core);
            // Nothing but stdio reaches the program: the host's other descriptors (whatever
            // it left inheritable) close at exec; the status pipe still reports until then.
            sys::cloexec_from(3);
            fail(exec.exec());
        };
        // Dies with the host (its parent thread is one of the host's runtime threads).
        let _ = sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as usize);
        if sys::getppid() != a.host {
            // The thread that started this process is already gone.
            fail(libc::ESRCH);
        }
        if let Some((user, net)) = a.join {
            // The tool set's network namespace; the namespaces below are made inside its
            // user namespace. The parent-death signal is set again in case it was cleared.
            if let Err(e) = super::netns::join(user, net) {
                fail(e);
            }
            let _ = sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as usize);
            if sys::getppid() != a.host {
                fail(libc::ESRCH);
            }
        }
        let newnet = if a.net >= 0 { libc::CLONE_NEWNET } else { 0 };
        if let Err(e) = sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNS | newnet).and_then(|()| plan.write_maps()) {
            fail(e);
        }
        if a.protect.is_some() || a.stage.is_some() {
            // Mount events one-way (host to namespace) before mounting anything.
            if let Err(e) = sys::mount(None, c"/", None, libc::MS_REC | libc::MS_SLAVE, None) {
                fail(e);
            }
        }
        let mounted = match (a.stage, a.protect) {
            (Some(stage), protect) => stage.mount(protect, a.ruleset),
            (None, Some(p)) => p.apply(),
            (None, None) => Ok(()),
        };
        if let Err(e) = mounted {
            fail(e);
        }
        if a.net >= 0 {
            if let Err(e) = super::netns::enter(a.net) {
                fail(e);
            }
        }
        let mut i = IArgs {
            plan,
            ruleset: a.ruleset,
            exec: a.exec,
            status: a.status,
            main_stack: a.main_stack,
            core_limit: core,
            oom: a.oom,
            limits: a.limits,
            main_status: 0,
            main_done: false,
        };
        let init = libc::clone(pidns::init_main, a.init_stack, libc::CLONE_VM | libc::SIGCHLD, (&mut i as *mut IArgs).cast());
        if init < 0 {
            fail(libc::EAGAIN);
        }
        // I reports to the host from now on; this process needs no descriptor.
        sys::close_from(0);
        let own = loop {
            match sys::wait4(init, libc::__WALL) {
                Ok(Some((_, st))) => break st,
                Err(libc::EINTR) => continue,
                _ => break 0,
            }
        };
        // G's status if I collected it; otherwise I's own (killed by the host, or failed).
        let status = if std::ptr::read_volatile(&i.main_done) { std::ptr::read_volatile(&i.main_status) } else { own };
        exit_like(status)
    }
}

/// Exits with wait status `st`: the same code, or death by the same signal, without a core
/// dump (this process's memory is the host's).
unsafe fn exit_like(st: libc::c_int) -> ! {
    if libc::WIFEXITED(st) {
        sys::exit(libc::WEXITSTATUS(st));
    }
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        // The core limit is 1 (see c_main). Dispositions are the defaults and the mask is empty (reset_signals).
        sys::kill(sys::getpid(), sig);
        sys::exit(128 + sig);
    }
    sys::exit(1)
}

/// Stack size of C, I and G each (below each, a guard page); only the pages touched are
/// ever allocated.
const STACK: usize = 256 * 1024;
const PAGE: usize = 4096;
const SET: usize = 3 * (STACK + PAGE);

/// Three stacks in one mapping (C, I, G).
struct Stacks {
    base: *mut libc::c_void,
}

// SAFETY: a mapping owned by one pool entry or one launch at a time.
unsafe impl Send for Stacks {}

/// Free sets, and sets in use by a C still waiting for its program (with C's pidfd).
static POOL: Mutex<Vec<(Stacks, Option<OwnedFd>)>> = Mutex::new(Vec::new());
/// Free sets kept for reuse.
const POOL_FREE_MAX: usize = 8;

impl Stacks {
    /// The top of stack `i` (stacks grow down).
    fn top(&self, i: usize) -> *mut libc::c_void {
        // SAFETY: within the mapping.
        unsafe { self.base.cast::<u8>().add((i + 1) * (STACK + PAGE)).cast() }
    }

    /// A free set: reused from the pool (reclaiming those whose C has exited) or mapped.
    fn take() -> io::Result<Stacks> {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        for entry in pool.iter_mut() {
            if entry.1.as_ref().is_some_and(exited) {
                entry.1 = None;
            }
        }
        if let Some(i) = pool.iter().position(|e| e.1.is_none()) {
            return Ok(pool.swap_remove(i).0);
        }
        drop(pool);
        // SAFETY: a fresh anonymous mapping; the guard pages are made inaccessible.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                SET,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            for i in 0..3 {
                libc::mprotect(base.cast::<u8>().add(i * (STACK + PAGE)).cast(), PAGE, libc::PROT_NONE);
            }
            Ok(Stacks { base })
        }
    }

    /// Back to the pool: free, or in use until the process behind `busy` exits. Without a
    /// pidfd for a busy set, the set is never reused (a small leak, only where pidfds fail).
    fn give_back(stacks: Stacks, busy: Option<OwnedFd>) {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let free = pool.iter().filter(|e| e.1.is_none()).count();
        match busy {
            Some(fd) => pool.push((stacks, Some(fd))),
            None if free < POOL_FREE_MAX => pool.push((stacks, None)),
            // SAFETY: nobody runs on a free set.
            None => unsafe {
                libc::munmap(stacks.base, SET);
            },
        }
    }
}

/// Whether the process behind a pidfd has exited.
fn exited(fd: &OwnedFd) -> bool {
    let mut p = libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: poll on one valid descriptor, no wait.
    unsafe { libc::poll(&mut p, 1, 0) == 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pidfd_tells_when_its_process_has_exited() {
        let mut child = std::process::Command::new("/bin/sleep").arg("5").spawn().unwrap();
        let fd = pidfd(child.id() as i32).unwrap();
        assert!(!exited(&fd));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(exited(&fd));
    }
}
