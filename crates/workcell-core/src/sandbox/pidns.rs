//! Containment: every process a call starts lives in a PID namespace of its own, whose init is
//! killed as soon as the call's main process ends, so the kernel kills whatever is left
//! (`setsid`, double forks and nested namespaces included) before the call returns.
//!
//! `unshare(CLONE_NEWPID)` only places the caller's *children* in the new namespace, and the
//! first one becomes its init, so the spawned child does not exec itself. Three processes come
//! out of one spawn:
//!
//! ```text
//! host ── C  (spawned; leads the call's process group; in the host's PID namespace)
//!         ├─ I  (PID 1 of the new namespace: the init; reaps orphans)
//!         └─ G  (PID 2: execs the program)
//! ```
//!
//! - C (a fork of the host made by the spawn machinery) unshares a user namespace (when one is
//!   used), a PID namespace and a mount namespace, maps its own user and group id to
//!   themselves, blanks its copy of the host's command line and environment, and makes itself
//!   non-dumpable (nothing can trace it or read its memory, which is a copy of the host's).
//!   It then starts I and G with `clone(CLONE_VM)`: they share C's memory instead of copying
//!   it (a copy of a large host costs milliseconds per process). C waits (`CLONE_VFORK`) until
//!   G has exec'd, closes every descriptor it holds (the spawn's status pipe: the host's spawn
//!   returns), waits for G, kills I, waits for I (by then the kernel has killed and collected
//!   every other process of the namespace), and exits the way G did: the same code, or the same
//!   signal. The host waits on C as on any child.
//! - I dies with C (`PR_SET_PDEATHSIG`) and otherwise collects whatever is reparented to it.
//! - G mounts a private `/proc` (only the namespace's processes; mount events flow from the
//!   host to the namespace, never back), applies Landlock and execs the program itself, with
//!   the argv and environment prepared in the parent. Being PID 2, not 1, it gets signals as
//!   any process does (`process.kill(process.pid, "SIGTERM")` kills it).
//!
//! The host's SIGKILL to the process group (timeout, cancellation) reaches C, I and G; I's
//! death takes the namespace with it.
//!
//! What runs in C before exec is async-signal-safe C library calls and system calls on data
//! prepared in the parent; I and G, which share C's memory and thread-local storage and run
//! at the same time as C, only make raw system calls ([`super::sys`]) and never allocate.

use std::ffi::{CString, OsString};
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;

use super::sys;

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

/// What G execs, prepared in the parent: NUL-terminated strings and pointer arrays into them.
pub struct Exec {
    _strings: Vec<CString>,
    program: *const libc::c_char,
    argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
}

// SAFETY: the pointers point into `_strings`, owned by the same value and never changed.
unsafe impl Send for Exec {}
unsafe impl Sync for Exec {}

impl std::fmt::Debug for Exec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exec").field("argc", &(self.argv.len() - 1)).finish_non_exhaustive()
    }
}

impl Exec {
    /// `program` with `argv[0]` = `arg0` (or the program), `args`, and exactly `env`.
    pub fn new(program: &Path, arg0: Option<&OsString>, args: &[OsString], env: &[(OsString, OsString)]) -> io::Result<Self> {
        let c = |b: &[u8]| CString::new(b).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "nul byte found in provided data"));
        let mut strings = Vec::with_capacity(args.len() + env.len() + 2);
        strings.push(c(program.as_os_str().as_bytes())?);
        strings.push(c(arg0.map_or(program.as_os_str(), |a| a.as_os_str()).as_bytes())?);
        for a in args {
            strings.push(c(a.as_bytes())?);
        }
        let argc = strings.len() - 1;
        for (k, v) in env {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            strings.push(c(&kv)?);
        }
        let program = strings[0].as_ptr();
        let mut argv: Vec<*const libc::c_char> = strings[1..=argc].iter().map(|s| s.as_ptr()).collect();
        argv.push(std::ptr::null());
        let mut envp: Vec<*const libc::c_char> = strings[argc + 1..].iter().map(|s| s.as_ptr()).collect();
        envp.push(std::ptr::null());
        Ok(Exec { _strings: strings, program, argv, envp })
    }
}

/// Exit codes of the probe's G.
const PROBE_WITH_PROC: i32 = 70;
const PROBE_WITHOUT_PROC: i32 = 71;
/// Stack of I and of G (with a guard page below).
const STACK: usize = 128 * 1024;

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// What G needs and reports; lives on C's stack, which G shares.
struct GArgs<'a> {
    plan: &'a NsPlan,
    ruleset: RawFd,
    exec: Option<&'a Exec>,
    /// Set by G when it fails before exec.
    errno: i32,
}

/// In the spawned child (C): enters the namespaces, runs the program in them as G and never
/// returns, except with the error that kept G from running (which the spawn then reports).
/// `ruleset` is the Landlock ruleset's descriptor, or -1.
///
/// # Safety
/// Only between fork and exec, in a single-threaded copy of the parent.
pub unsafe fn run(plan: &NsPlan, ruleset: RawFd, exec: &Exec) -> io::Error {
    io::Error::from_raw_os_error(enter(plan, ruleset, Some(exec)))
}

/// C's part; returns an errno only when nothing was started (or G failed before exec).
unsafe fn enter(plan: &NsPlan, ruleset: RawFd, exec: Option<&Exec>) -> i32 {
    // C never execs: the host's signal handlers (libuv's) must not run in it.
    reset_signals();
    let mut flags = libc::CLONE_NEWPID;
    if plan.mount_proc {
        flags |= libc::CLONE_NEWNS;
    }
    if plan.user {
        flags |= libc::CLONE_NEWUSER;
    }
    if libc::unshare(flags) != 0 {
        return errno();
    }
    if plan.user {
        if let Err(e) = write_maps(plan) {
            return e;
        }
    }
    // C's memory is a copy of the host's and I shares it; I is visible in the namespace's
    // /proc, where a command line (unlike an environment) can be read by anyone.
    scrub_args_and_environment();
    // Only now: a non-dumpable process's /proc/self files belong to root, and the maps above
    // could not have been written.
    libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong, 0 as libc::c_ulong);

    let Some(init_stack) = stack() else { return errno() };
    let Some(main_stack) = stack() else { return errno() };
    let init = libc::clone(init_main, init_stack, libc::CLONE_VM | libc::SIGCHLD, std::ptr::null_mut());
    if init < 0 {
        return errno();
    }
    let mut args = GArgs { plan, ruleset, exec, errno: 0 };
    // Returns once G has exec'd or exited.
    let main = libc::clone(main_entry, main_stack, libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD, (&mut args as *mut GArgs).cast());
    if main < 0 || args.errno != 0 {
        let e = if main < 0 { errno() } else { args.errno };
        if main > 0 {
            wait(main);
        }
        libc::kill(init, libc::SIGKILL);
        wait(init);
        return e;
    }
    // Above all the spawn's close-on-exec status pipe: the host's spawn returns once every
    // copy of it is closed.
    sys::close_from(0);
    let status = wait(main);
    libc::kill(init, libc::SIGKILL);
    // The init's exit kills the rest of the namespace and waits for it.
    wait(init);
    exit_like(status)
}

/// Waits for child `pid`; its wait status.
unsafe fn wait(pid: libc::pid_t) -> libc::c_int {
    let mut status: libc::c_int = 0;
    loop {
        let r = libc::waitpid(pid, &mut status, libc::__WALL);
        if r == pid {
            return status;
        }
        if r < 0 && errno() != libc::EINTR {
            return 0;
        }
    }
}

/// A stack for a `CLONE_VM` child: its top (stacks grow down), with a guard page below.
unsafe fn stack() -> Option<*mut libc::c_void> {
    let page = 4096;
    let base = libc::mmap(
        std::ptr::null_mut(),
        STACK + page,
        libc::PROT_READ | libc::PROT_WRITE,
        libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
        -1,
        0,
    );
    if base == libc::MAP_FAILED {
        return None;
    }
    libc::mprotect(base, page, libc::PROT_NONE);
    Some(base.cast::<u8>().add(STACK + page).cast())
}

/// I: PID 1 of the namespace. Raw system calls only (it runs beside C, in C's memory).
extern "C" fn init_main(_: *mut libc::c_void) -> libc::c_int {
    // SAFETY: raw system calls on stack data.
    unsafe {
        // Its copies of C's descriptors (the output pipes, the spawn's status pipe) would keep
        // the host waiting.
        sys::close_from(0);
        let _ = sys::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as usize);
        // SIGCHLD is blocked and waited for: a pending child exit wakes the loop.
        let chld = sys::sigset(&[libc::SIGCHLD]);
        sys::sigprocmask(libc::SIG_BLOCK, chld);
        loop {
            while let Ok(Some(_)) = sys::wait4(-1, libc::WNOHANG | libc::__WALL) {}
            sys::sigwait(chld);
        }
    }
}

/// G: mounts the private /proc, applies Landlock, execs. Raw system calls only.
extern "C" fn main_entry(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the GArgs on C's stack; C is suspended (CLONE_VFORK) until this
    // process execs or exits.
    unsafe {
        let args = &mut *arg.cast::<GArgs>();
        let mounted = args.plan.mount_proc && mount_private_proc();
        let Some(exec) = args.exec else {
            // The probe: report how far it got.
            sys::exit(if mounted { PROBE_WITH_PROC } else { PROBE_WITHOUT_PROC });
        };
        if args.ruleset >= 0 {
            let rule = if mounted { super::landlock::add_proc_rule(args.ruleset) } else { super::landlock::add_self_rule(args.ruleset) };
            if let Err(e) = rule.and_then(|()| super::landlock::restrict(args.ruleset)) {
                args.errno = e;
                sys::exit(127);
            }
        }
        args.errno = sys::execve(exec.program, exec.argv.as_ptr(), exec.envp.as_ptr());
        sys::exit(127)
    }
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
/// stays). Raw system calls.
unsafe fn mount_private_proc() -> bool {
    sys::mount(None, c"/", None, libc::MS_REC | libc::MS_SLAVE).is_ok()
        && sys::mount(Some(c"proc"), c"/proc", Some(c"proc"), libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC).is_ok()
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

/// What the namespace probe found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsSupport {
    pub pid: bool,
    pub user: bool,
    pub proc_mount: bool,
}

/// Tries the namespace steps in a throwaway child: with a user namespace first, then without
/// (which needs `CAP_SYS_ADMIN`). Only on the architectures [`super::sys`] supports.
pub fn probe() -> NsSupport {
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        for user in [true, false] {
            if let Some(proc_mount) = probe_once(user) {
                return NsSupport { pid: true, user, proc_mount };
            }
        }
    }
    NsSupport { pid: false, user: false, proc_mount: false }
}

fn probe_once(user: bool) -> Option<bool> {
    use std::os::unix::process::CommandExt as _;
    use std::process::{Command, Stdio};
    let plan = NsPlan::new(user, true);
    // The child never execs: its G reports how far it got through its exit code, and C exits
    // the same way.
    let mut cmd = Command::new("/");
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    // SAFETY: the step is async-signal-safe (see `enter`).
    unsafe {
        cmd.pre_exec(move || Err(io::Error::from_raw_os_error(enter(&plan, -1, None))));
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

    #[test]
    fn exec_arrays_are_null_terminated() {
        let e = Exec::new(Path::new("/bin/x"), None, &["a".into(), "".into()], &[("K".into(), "v=w".into())]).unwrap();
        assert_eq!(e.argv.len(), 4);
        assert!(e.argv[3].is_null() && e.envp[1].is_null());
        // SAFETY: pointers into e's strings.
        unsafe {
            assert_eq!(std::ffi::CStr::from_ptr(e.argv[0]).to_bytes(), b"/bin/x");
            assert_eq!(std::ffi::CStr::from_ptr(e.argv[2]).to_bytes(), b"");
            assert_eq!(std::ffi::CStr::from_ptr(e.envp[0]).to_bytes(), b"K=v=w");
        }
        assert!(Exec::new(Path::new("/bin/x"), None, &["a\0b".into()], &[]).is_err());
    }
}
