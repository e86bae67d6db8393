//! Containment: every process a call starts lives in a PID namespace of its own, whose init is
//! killed as soon as the call's main process ends, so the kernel kills whatever is left
//! (`setsid`, double forks and nested namespaces included) before the call returns.
//!
//! `unshare(CLONE_NEWPID)` only places the caller's *children* in the new namespace (the first
//! one becomes its init), so the process the host starts does not run the program itself.
//! Three processes come out of one spawn ([`super::launch`]):
//!
//! ```text
//! host ── C  (leads the call's process group; in the host's PID namespace)
//!         └─ I  (PID 1 of the new namespace: the init)
//!            └─ G  (PID 2: runs the program)
//! ```
//!
//! - C unshares a user, a PID and a mount namespace and maps its user and group id to
//!   themselves, starts I, closes every descriptor and waits for I.
//! - I ([`init_main`]) dies with C (`PR_SET_PDEATHSIG`), starts G, tells the host whether the
//!   program runs, closes every descriptor and collects its children (G and whatever is
//!   reparented to it) until G ends; it then exits, and the kernel kills the rest of the
//!   namespace, which I collects before it is gone. Nothing in the namespace ever waits for a
//!   process outside it.
//! - G ([`main_entry`]) mounts a `/proc` for the namespace with `hidepid=ptraceable` (mount events
//!   flow from the host to the namespace, never back), enters a user namespace nested in C's
//!   (same ids), leads a process group of its own, gives itself `oom_score_adj` 1000 (still I's
//!   vfork child, so the host's score is untouched), applies Landlock and execs the program. Being PID 2, not 1, it gets signals as
//!   any process does (`process.kill(process.pid, "SIGTERM")` kills it).
//!
//! C, I and G share the host's memory (`clone(CLONE_VM)`: copying a large host costs
//! milliseconds per process). I is visible in the namespace, and its command line and
//! environment are the host's: the nested user namespace denies the program and everything it
//! starts any `ptrace` access to I (it has no capability in I's namespace), and with
//! `hidepid=ptraceable` a process it cannot `ptrace` does not appear in `/proc` at all, whatever
//! the program's groups (`hidepid=invisible` exempts group 0, so a root child saw I's command
//! line and status, the host's). The same
//! holds for the host and its other processes, where `/proc` is the host's.
//!
//! When I is gone, C exits the way G did (the same code, or the same signal), which I left in
//! C's memory. The host's SIGKILL to the process group (timeout, cancellation) reaches C, I and
//! G; I's death takes the namespace with it.
//!
//! Everything here runs between clone and exec in processes that share the host's memory: raw
//! system calls (`sandbox::sys`) on data prepared by the host, no allocation, no `errno`.

use std::os::fd::RawFd;

use super::sys;

/// The namespaces' id maps, prepared (and allocated) by the host.
#[derive(Clone, Debug)]
pub struct NsPlan {
    /// Mount a private `/proc` in the namespace.
    pub mount_proc: bool,
    /// Whether `hidepid=invisible` (the fallback where `hidepid=ptraceable`, Linux 5.8+, is
    /// refused) hides what the program cannot `ptrace`: not when the host is in group 0, which
    /// that mode exempts (its default `gid=`), and no other group can be named in the namespace.
    invisible_is_enough: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NsPlan {
    /// The user and group ids are mapped to themselves, one each: inside, the child runs as the
    /// same user as the host (root stays root, with capabilities only over its own
    /// namespaces); files of other users show as owned by the overflow id.
    pub fn new(mount_proc: bool) -> Self {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let invisible_is_enough = gid != 0 && !in_group_zero();
        NsPlan { mount_proc, invisible_is_enough, uid_map: format!("{uid} {uid} 1\n").into_bytes(), gid_map: format!("{gid} {gid} 1\n").into_bytes() }
    }

    /// Writes this process's id maps (right after it unshared a user namespace).
    ///
    /// # Safety
    /// Raw system calls only.
    pub unsafe fn write_maps(&self) -> Result<(), i32> {
        // Required before an unprivileged gid map; absent before Linux 3.19.
        match sys::write_file(c"/proc/self/setgroups", b"deny") {
            Ok(()) | Err(libc::ENOENT) => {}
            Err(e) => return Err(e),
        }
        sys::write_file(c"/proc/self/uid_map", &self.uid_map)?;
        sys::write_file(c"/proc/self/gid_map", &self.gid_map)
    }
}

/// Whether group 0 is among this process's supplementary groups (kept in the namespace).
fn in_group_zero() -> bool {
    let mut groups = [0 as libc::gid_t; 256];
    // SAFETY: getgroups into a local array of the given size.
    let n = unsafe { libc::getgroups(groups.len() as libc::c_int, groups.as_mut_ptr()) };
    // More groups than that: assume the worst.
    n < 0 || groups[..n as usize].contains(&0)
}

/// Exit codes of a probe's G.
pub const PROBE_WITH_PROC: i32 = 70;
pub const PROBE_WITHOUT_PROC: i32 = 71;

/// What I needs, and what it reports back to C; lives in C's stack frame (shared memory) while
/// C waits for I.
pub struct IArgs<'a> {
    pub plan: &'a NsPlan,
    pub ruleset: RawFd,
    /// `None`: a probe (G reports how far it got instead of exec'ing).
    pub exec: Option<&'a super::exec::Exec>,
    /// The write end of the host's status pipe: I reports G's failure to start there.
    pub status: RawFd,
    pub main_stack: *mut libc::c_void,
    /// The host's core dump limit, for the program.
    pub core_limit: [u64; 2],
    /// Give the program (and so everything it starts) `oom_score_adj` 1000.
    pub oom: bool,
    /// The program's resource limits and cgroups.
    pub limits: Option<&'a super::resources::ChildLimits>,
    /// G's wait status, once I has collected it.
    pub main_status: libc::c_int,
    pub main_done: bool,
}

/// What G needs, and what it reports; lives in I's stack frame, which G shares while I waits
/// for it to exec.
pub struct GArgs<'a> {
    pub plan: &'a NsPlan,
    pub ruleset: RawFd,
    pub exec: Option<&'a super::exec::Exec>,
    pub core_limit: [u64; 2],
    pub limits: Option<&'a super::resources::ChildLimits>,
    /// Give the program `oom_score_adj` 1000.
    pub oom: bool,
    /// Set by G when it fails before exec.
    pub errno: i32,
}

/// I: PID 1 of the namespace. Starts G, tells the host whether it runs, collects every child
/// (G and whatever is reparented to it), and exits when G has: the kernel then kills the rest
/// of the namespace, which I collects too before it is gone.
pub extern "C" fn init_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the IArgs in C's frame; C waits for this process before leaving it.
    unsafe {
        let a = &mut *arg.cast::<IArgs>();
        let _ = sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as usize);
        let mut g = GArgs { plan: a.plan, ruleset: a.ruleset, exec: a.exec, core_limit: a.core_limit, limits: a.limits, oom: a.oom, errno: 0 };
        // Returns once G has exec'd or exited.
        let main = libc::clone(main_entry, a.main_stack, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, (&mut g as *mut GArgs).cast());
        let failed = if main < 0 { libc::EAGAIN } else { std::ptr::read_volatile(&g.errno) };
        if failed != 0 {
            let _ = sys::write(a.status, &failed.to_ne_bytes());
            sys::exit(127);
        }
        // The program runs. Its copies of the descriptors it got from C (the output pipes, the
        // status pipe) would keep the host waiting.
        sys::close_from(0);
        loop {
            match sys::wait4(-1, libc::__WALL) {
                Ok(Some((pid, st))) if pid == main => {
                    std::ptr::write_volatile(&mut a.main_status, st);
                    std::ptr::write_volatile(&mut a.main_done, true);
                    sys::exit(0);
                }
                Ok(_) | Err(libc::EINTR) => {}
                Err(_) => sys::exit(1),
            }
        }
    }
}

/// G: the private `/proc`, the nested user namespace, Landlock, exec. I is suspended
/// (`CLONE_VFORK`) until this process execs or exits.
pub extern "C" fn main_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the GArgs in I's frame, which stays put while I is suspended.
    unsafe {
        let args = &mut *arg.cast::<GArgs>();
        let mounted = args.plan.mount_proc && mount_private_proc(args.plan.invisible_is_enough);
        // A user namespace nested in C's: no capability over I (or the host).
        if let Err(e) = sys::unshare(libc::CLONE_NEWUSER).and_then(|()| args.plan.write_maps()) {
            args.errno = e;
            sys::exit(127);
        }
        let Some(exec) = args.exec else {
            sys::exit(if mounted { PROBE_WITH_PROC } else { PROBE_WITHOUT_PROC });
        };
        // The program leads a process group of its own, as an unconfined child does (`setsid`
        // and job-control shells look at that). The host's group kill still reaches C and I,
        // and I's death ends it.
        if let Err(e) = sys::setpgid_self() {
            args.errno = e;
            sys::exit(127);
        }
        // Still I's vfork child: the score is this process's alone (see the function).
        if args.oom {
            sys::score_for_oom_killer();
        }
        // Into the call's cgroups and under its limits: only this process and what it starts
        // (never I or C, which share the host's memory).
        if let Some(limits) = args.limits {
            if let Err(e) = limits.apply() {
                args.errno = e;
                sys::exit(127);
            }
        }
        if args.ruleset >= 0 {
            let rule = if mounted { super::landlock::add_proc_rule(args.ruleset) } else { super::landlock::add_self_rule(args.ruleset) };
            if let Err(e) = rule.and_then(|()| super::landlock::restrict(args.ruleset)) {
                args.errno = e;
                sys::exit(127);
            }
        }
        sys::set_rlimit(libc::RLIMIT_CORE as libc::c_int, args.core_limit);
        // Only stdio reaches the program: every other descriptor this process got from the
        // host (whatever the host left inheritable) closes at exec.
        sys::cloexec_from(3);
        args.errno = exec.exec();
        sys::exit(127)
    }
}

/// Makes mount events one-way (host to namespace), then mounts a `/proc` for this PID
/// namespace over the inherited one, showing only the processes this one may `ptrace`
/// (`hidepid=ptraceable`: whatever its groups; the init, which shares the host's memory and
/// command line, is not one of them). Before Linux 5.8, `hidepid=invisible` where that is the
/// same (see [`NsPlan`]). False when no such `/proc` can be mounted (the inherited one stays).
unsafe fn mount_private_proc(invisible_is_enough: bool) -> bool {
    if sys::mount(None, c"/", None, libc::MS_REC | libc::MS_SLAVE, None).is_err() {
        return false;
    }
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    match sys::mount(Some(c"proc"), c"/proc", Some(c"proc"), flags, Some(PROC_OPTIONS)) {
        Ok(()) => true,
        Err(libc::EINVAL) if invisible_is_enough => sys::mount(Some(c"proc"), c"/proc", Some(c"proc"), flags, Some(c"hidepid=invisible")).is_ok(),
        Err(_) => false,
    }
}

/// The private `/proc`'s options (`hidepid=4`, Linux 5.8+). `subset=pid` is not used: it would
/// also hide `/proc/meminfo`, `/proc/stat`, `/proc/sys`..., which programs (Node's `os.cpus()`,
/// `free`, build tools sizing their pools) read, and which say nothing of the host's processes.
pub const PROC_OPTIONS: &std::ffi::CStr = c"hidepid=ptraceable";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_name_the_current_ids() {
        let plan = NsPlan::new(false);
        let uid = unsafe { libc::geteuid() };
        assert_eq!(plan.uid_map, format!("{uid} {uid} 1\n").into_bytes());
    }
}
