//! Containment: every process a call starts lives in a PID namespace of its own, whose init
//! exits with the call's main process, so the kernel kills whatever is left (`setsid`,
//! double-forks and nested namespaces included) before the call returns.
//!
//! `unshare(CLONE_NEWPID)` only places the caller's *next child* in the new namespace, so the
//! spawned child does not exec at once. Three processes come out of one spawn:
//!
//! ```text
//! host ── C  (spawned; leads the call's process group; in the host's PID namespace)
//!         └─ I  (PID 1 of the new namespace: the init)
//!            └─ G  (PID 2: execs the program)
//! ```
//!
//! - C unshares a user namespace (when one is used), a PID namespace and a mount namespace,
//!   maps its own user and group id to themselves, makes itself non-dumpable (so nothing it
//!   forks can be traced or have its memory read), forks I, closes every descriptor but a
//!   status pipe from I, waits for I and exits the way G did: same code, or the same signal.
//!   The host waits on C as on any child.
//! - I makes the mount tree a slave of the host's (nothing propagates back), mounts a private
//!   `/proc` that shows only the namespace's processes, allows reading it in the Landlock
//!   ruleset, forks G, closes everything (the output pipes and the spawn's status pipe
//!   included), reaps whatever is reparented to it, and when G ends writes G's wait status to
//!   C and exits. The kernel then kills every other process in the namespace, and waits for
//!   them, before I is gone.
//! - G returns to the spawn machinery, which applies the remaining steps (Landlock) and execs.
//!   Being PID 2, not 1, it gets signals as any process does (`process.kill(process.pid,
//!   "SIGTERM")` kills it).
//!
//! The host's SIGKILL to the process group (timeout, cancellation) reaches C, I and G; I's
//! death takes the namespace with it. I also dies with C (`PR_SET_PDEATHSIG`).
//!
//! Everything that runs in C, I and G before exec is a raw system call on stack data: the id
//! maps are formatted in the parent, forks are `clone(SIGCHLD)` system calls (glibc's `fork`
//! would run `atfork` handlers in this copy of a multi-threaded process), and nothing
//! allocates.

use std::io;
use std::os::fd::RawFd;

/// The steps a confined child takes, prepared (and allocated) in the parent.
#[derive(Clone, Debug)]
pub struct NsPlan {
    /// Unshare a user namespace too (else the PID namespace needs `CAP_SYS_ADMIN`).
    pub user: bool,
    /// Mount a private `/proc` in the namespace.
    pub mount_proc: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl NsPlan {
    /// The user and group ids are mapped to themselves, one each: inside, the child runs as the
    /// same user as the host (root stays root, with capabilities only over its own
    /// namespaces); files of other users show as owned by the overflow id.
    pub fn new(user: bool, mount_proc: bool) -> Self {
        // SAFETY: plain getters.
        let (uid, gid) = unsafe { (libc::geteuid(), libc::getegid()) };
        NsPlan { user, mount_proc, uid_map: format!("{uid} {uid} 1\n").into_bytes(), gid_map: format!("{gid} {gid} 1\n").into_bytes() }
    }
}

/// Exit codes of the probe's init.
const PROBE_WITH_PROC: i32 = 70;
const PROBE_WITHOUT_PROC: i32 = 71;

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// In the spawned child (C): enters the namespaces and returns only in G, the process that
/// goes on to exec, telling whether its `/proc` is the namespace's own. C and I never return.
/// `ruleset` is the Landlock ruleset's descriptor (or -1): I adds the rule for the private
/// `/proc` to it.
///
/// # Safety
/// Async-signal-safe: to be called only between fork and exec.
pub unsafe fn enter(plan: &NsPlan, ruleset: RawFd) -> Result<bool, i32> {
    enter_inner(plan, ruleset, false)
}

unsafe fn enter_inner(plan: &NsPlan, ruleset: RawFd, probe: bool) -> Result<bool, i32> {
    // C and I never exec: the host's signal handlers (libuv's) must not run in them.
    reset_signals();
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if plan.user {
        flags |= libc::CLONE_NEWUSER;
    }
    if libc::unshare(flags) != 0 {
        return Err(errno());
    }
    if plan.user {
        write_maps(plan)?;
    }
    // C's and I's memory is a copy of the host's. I is visible in the namespace's /proc, where
    // its command line (unlike its environment) can be read by anyone: blank the host's
    // command line and environment in this copy first.
    scrub_args_and_environment();
    // Only now: a non-dumpable process's /proc/self files belong to root, and the maps above
    // could not be written.
    libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    let mut status = [-1 as libc::c_int; 2];
    if libc::pipe2(status.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
        return Err(errno());
    }
    let init = raw_fork();
    if init < 0 {
        let e = errno();
        libc::close(status[0]);
        libc::close(status[1]);
        return Err(e);
    }
    if init == 0 {
        libc::close(status[0]);
        return init_process(plan, ruleset, status[1], probe);
    }
    libc::close(status[1]);
    mirror(init, status[0])
}

/// I: PID 1 of the namespace.
unsafe fn init_process(plan: &NsPlan, ruleset: RawFd, status: RawFd, probe: bool) -> Result<bool, i32> {
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);
    let mounted = plan.mount_proc && mount_private_proc();
    if probe {
        libc::_exit(if mounted { PROBE_WITH_PROC } else { PROBE_WITHOUT_PROC });
    }
    if ruleset >= 0 && mounted {
        // An error here ends I through the spawn's own error path: the host's spawn fails.
        super::landlock::add_proc_rule(ruleset)?;
    }
    let main = raw_fork();
    if main < 0 {
        return Err(errno());
    }
    if main == 0 {
        libc::close(status);
        return Ok(mounted);
    }
    close_all_but(status);
    loop {
        let mut st: libc::c_int = 0;
        let pid = libc::waitpid(-1, &mut st, libc::__WALL);
        if pid == main {
            let bytes = st.to_ne_bytes();
            libc::write(status, bytes.as_ptr().cast(), bytes.len());
            libc::_exit(0);
        }
        if pid < 0 && errno() != libc::EINTR {
            libc::_exit(1);
        }
    }
}

/// C: waits for I, then ends as G ended.
unsafe fn mirror(init: libc::pid_t, status: RawFd) -> ! {
    // Above all the spawn's close-on-exec status pipe: the host's spawn returns when every
    // copy of it is closed, which must be when G execs.
    close_all_but(status);
    let mut own: libc::c_int = 0;
    loop {
        let r = libc::waitpid(init, &mut own, 0);
        if r == init {
            break;
        }
        if r < 0 && errno() != libc::EINTR {
            libc::_exit(1);
        }
    }
    let mut bytes = [0u8; 4];
    let n = libc::read(status, bytes.as_mut_ptr().cast(), bytes.len());
    // Without G's status (I was killed, or failed before G), end as I did.
    let st = if n == 4 { libc::c_int::from_ne_bytes(bytes) } else { own };
    exit_like(st)
}

/// Exits with wait status `st`: the same code, or death by the same signal (without a core
/// dump: this process's memory is a copy of the host's).
unsafe fn exit_like(st: libc::c_int) -> ! {
    if libc::WIFEXITED(st) {
        libc::_exit(libc::WEXITSTATUS(st));
    }
    if libc::WIFSIGNALED(st) {
        let sig = libc::WTERMSIG(st);
        let none = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        libc::setrlimit(libc::RLIMIT_CORE, &none);
        // Dispositions are the defaults and the mask is empty (reset_signals).
        libc::kill(libc::getpid(), sig);
        libc::_exit(128 + sig);
    }
    libc::_exit(1)
}

/// Zeroes this process's copy of the host's command line and environment strings (the areas
/// `/proc/<pid>/cmdline` and `environ` read), found in `/proc/self/stat`.
unsafe fn scrub_args_and_environment() {
    let fd = libc::open(c"/proc/self/stat".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 2048];
    let mut len = 0usize;
    while len < buf.len() {
        let n = libc::read(fd, buf.as_mut_ptr().add(len).cast(), buf.len() - len);
        if n <= 0 {
            break;
        }
        len += n as usize;
    }
    libc::close(fd);
    let Some(fields) = memory_areas(&buf[..len]) else { return };
    let [arg_start, arg_end, env_start, env_end] = fields;
    for (start, end) in [(arg_start, arg_end), (env_start, env_end)] {
        if start != 0 && end > start && end - start < (1 << 30) {
            std::ptr::write_bytes(start as *mut u8, 0, end - start);
        }
    }
}

/// Fields 48 to 51 of a `/proc/<pid>/stat` line: where the command line and the environment
/// strings start and end. The command name (field 2) ends at the last ')' and may contain
/// spaces; the tokens after it are fields 3, 4... No allocation.
fn memory_areas(stat: &[u8]) -> Option<[usize; 4]> {
    let close = stat.iter().rposition(|&b| b == b')')?;
    let mut fields = [0usize; 4];
    let mut found = 0;
    for (i, token) in stat[close + 1..].split(|&b| b == b' ' || b == b'\n').filter(|t| !t.is_empty()).enumerate() {
        let field = i + 3;
        if (48..=51).contains(&field) {
            let mut value = 0usize;
            for &b in token {
                if !b.is_ascii_digit() {
                    return None;
                }
                value = value.checked_mul(10)?.checked_add((b - b'0') as usize)?;
            }
            fields[field - 48] = value;
            found += 1;
        }
    }
    (found == 4).then_some(fields)
}

/// Default dispositions for every signal and an empty mask.
unsafe fn reset_signals() {
    let mut action: libc::sigaction = std::mem::zeroed();
    action.sa_sigaction = libc::SIG_DFL;
    libc::sigemptyset(&mut action.sa_mask);
    for sig in 1..65 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // The C library refuses its own reserved signals: ignored.
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
}

unsafe fn write_file(path: &std::ffi::CStr, data: &[u8]) -> Result<(), i32> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        return Err(errno());
    }
    // The id map files take one write.
    let n = libc::write(fd, data.as_ptr().cast(), data.len());
    let e = errno();
    libc::close(fd);
    if n != data.len() as isize {
        return Err(if n < 0 { e } else { libc::EIO });
    }
    Ok(())
}

unsafe fn write_maps(plan: &NsPlan) -> Result<(), i32> {
    // Required before an unprivileged gid map; absent before Linux 3.19.
    match write_file(c"/proc/self/setgroups", b"deny") {
        Ok(()) | Err(libc::ENOENT) => {}
        Err(e) => return Err(e),
    }
    write_file(c"/proc/self/uid_map", &plan.uid_map)?;
    write_file(c"/proc/self/gid_map", &plan.gid_map)
}

/// Makes mount events one-way (host to namespace), then mounts a `/proc` for this PID
/// namespace over the inherited one. False when either step fails (the inherited `/proc`
/// stays).
unsafe fn mount_private_proc() -> bool {
    let none: *const libc::c_char = std::ptr::null();
    if libc::mount(none, c"/".as_ptr(), none, libc::MS_REC | libc::MS_SLAVE, std::ptr::null()) != 0 {
        return false;
    }
    libc::mount(
        c"proc".as_ptr(),
        c"/proc".as_ptr(),
        c"proc".as_ptr(),
        libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        std::ptr::null(),
    ) == 0
}

/// `fork` as a bare `clone(SIGCHLD)` system call: no `atfork` handlers, no locks.
unsafe fn raw_fork() -> libc::pid_t {
    libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_ulong, 0usize, 0usize, 0usize, 0usize) as libc::pid_t
}

/// Closes every descriptor except `keep`.
unsafe fn close_all_but(keep: RawFd) {
    if keep > 0 {
        close_range(0, keep as u32 - 1);
    }
    close_range(keep as u32 + 1, u32::MAX);
}

unsafe fn close_range(first: u32, last: u32) {
    if libc::syscall(libc::SYS_close_range, first, last, 0u32) == 0 {
        return;
    }
    // Before Linux 5.9: one by one, up to the descriptor limit (at most 65,536).
    let mut limit: libc::rlimit = std::mem::zeroed();
    let top = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 { limit.rlim_cur.min(65_536) as u32 } else { 1_024 };
    let mut fd = first;
    while fd <= last && fd < top {
        libc::close(fd as libc::c_int);
        fd += 1;
    }
}

/// What the namespace probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsSupport {
    pub pid: bool,
    pub user: bool,
    pub proc_mount: bool,
}

/// Tries the namespace steps in a throwaway child: with a user namespace first, then without
/// (which needs `CAP_SYS_ADMIN`).
pub fn probe() -> NsSupport {
    for user in [true, false] {
        if let Some(proc_mount) = probe_once(user) {
            return NsSupport { pid: true, user, proc_mount };
        }
    }
    NsSupport { pid: false, user: false, proc_mount: false }
}

fn probe_once(user: bool) -> Option<bool> {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};
    let plan = NsPlan::new(user, true);
    // The child never execs: its init reports how far it got through its exit code, and C
    // exits the same way.
    let mut cmd = Command::new("/");
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: the step is async-signal-safe (see `enter_inner`).
    unsafe {
        cmd.pre_exec(move || {
            let _ = enter_inner(&plan, -1, true).map_err(io::Error::from_raw_os_error)?;
            // Not reached: the probe's init exits.
            libc::_exit(1)
        });
    }
    let mut child = cmd.spawn().ok()?;
    let status = child.wait().ok()?;
    match status.code() {
        Some(PROBE_WITH_PROC) => Some(true),
        Some(PROBE_WITHOUT_PROC) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_found_after_the_command_name() {
        let own = std::fs::read("/proc/self/stat").unwrap();
        let [arg_start, arg_end, env_start, env_end] = memory_areas(&own).unwrap();
        assert!(arg_start < arg_end && arg_end <= env_start && env_start < env_end);
        // A command name with spaces and parentheses does not shift the fields.
        let mut line = b"12 (a ) b) S".to_vec();
        for n in 4..=52 {
            line.extend_from_slice(format!(" {n}").as_bytes());
        }
        line.push(b'\n');
        assert_eq!(memory_areas(&line), Some([48, 49, 50, 51]));
        assert_eq!(memory_areas(b"12 (x) S 1 2"), None);
    }

    #[test]
    fn maps_name_the_current_ids() {
        let plan = NsPlan::new(true, false);
        let uid = unsafe { libc::geteuid() };
        assert_eq!(plan.uid_map, format!("{uid} {uid} 1\n").into_bytes());
    }
}
