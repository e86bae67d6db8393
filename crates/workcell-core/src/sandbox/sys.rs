//! Raw system calls for the processes that share memory between fork and exec.
//!
//! The confined child and the processes it starts share the host's memory (`clone(CLONE_VM)`),
//! its thread-local storage included, and run at the same time as the host's threads. A C
//! library wrapper would write `errno` there, so they only make system calls through
//! [`syscall6`], which returns `-errno` and touches no memory. Linux on x86_64 and aarch64
//! (elsewhere the sandbox's kernel layers are not offered).

use std::ffi::CStr;

/// A system call: the kernel's return value (negative: `-errno`).
///
/// # Safety
/// Whatever the call itself requires of its arguments.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub unsafe fn syscall6(n: libc::c_long, a1: usize, a2: usize, a3: usize, a4: usize, a5: usize, a6: usize) -> isize {
    let ret: isize;
    std::arch::asm!(
        "syscall",
        inlateout("rax") n as isize => ret,
        in("rdi") a1,
        in("rsi") a2,
        in("rdx") a3,
        in("r10") a4,
        in("r8") a5,
        in("r9") a6,
        lateout("rcx") _,
        lateout("r11") _,
        options(nostack),
    );
    ret
}

/// A system call: the kernel's return value (negative: `-errno`).
///
/// # Safety
/// Whatever the call itself requires of its arguments.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
pub unsafe fn syscall6(n: libc::c_long, a1: usize, a2: usize, a3: usize, a4: usize, a5: usize, a6: usize) -> isize {
    let ret: isize;
    std::arch::asm!(
        "svc 0",
        in("x8") n as usize,
        inlateout("x0") a1 as isize => ret,
        in("x1") a2,
        in("x2") a3,
        in("x3") a4,
        in("x4") a5,
        in("x5") a6,
        options(nostack),
    );
    ret
}

/// `Ok(value)` or `Err(errno)`.
#[inline(always)]
pub fn check(ret: isize) -> Result<usize, i32> {
    if ret < 0 && ret > -4096 {
        Err((-ret) as i32)
    } else {
        Ok(ret as usize)
    }
}

pub unsafe fn open(path: &CStr, flags: libc::c_int) -> Result<libc::c_int, i32> {
    check(syscall6(libc::SYS_openat, libc::AT_FDCWD as isize as usize, path.as_ptr() as usize, flags as usize, 0, 0, 0)).map(|fd| fd as libc::c_int)
}

pub unsafe fn write(fd: libc::c_int, buf: &[u8]) -> Result<usize, i32> {
    check(syscall6(libc::SYS_write, fd as usize, buf.as_ptr() as usize, buf.len(), 0, 0, 0))
}

/// Writes `data` to the file at `path` in one write (as /proc's id map files require).
pub unsafe fn write_file(path: &CStr, data: &[u8]) -> Result<(), i32> {
    let fd = open(path, libc::O_WRONLY | libc::O_CLOEXEC)?;
    let r = write(fd, data);
    close(fd);
    match r? {
        n if n == data.len() => Ok(()),
        _ => Err(libc::EIO),
    }
}

/// `dup2` (as `dup3`, which every architecture has); a descriptor already in place keeps its
/// number and loses close-on-exec.
pub unsafe fn dup_to(fd: libc::c_int, to: libc::c_int) -> Result<(), i32> {
    if fd == to {
        return check(syscall6(libc::SYS_fcntl, fd as usize, libc::F_SETFD as usize, 0, 0, 0, 0)).map(drop);
    }
    check(syscall6(libc::SYS_dup3, fd as usize, to as usize, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn chdir(path: &CStr) -> Result<(), i32> {
    check(syscall6(libc::SYS_chdir, path.as_ptr() as usize, 0, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn setpgid_self() -> Result<(), i32> {
    check(syscall6(libc::SYS_setpgid, 0, 0, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn getpid() -> libc::pid_t {
    syscall6(libc::SYS_getpid, 0, 0, 0, 0, 0, 0) as libc::pid_t
}

pub unsafe fn getppid() -> libc::pid_t {
    syscall6(libc::SYS_getppid, 0, 0, 0, 0, 0, 0) as libc::pid_t
}

pub unsafe fn unshare(flags: libc::c_int) -> Result<(), i32> {
    check(syscall6(libc::SYS_unshare, flags as usize, 0, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn setns(fd: libc::c_int, nstype: libc::c_int) -> Result<(), i32> {
    check(syscall6(libc::SYS_setns, fd as usize, nstype as usize, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn kill(pid: libc::pid_t, sig: libc::c_int) {
    syscall6(libc::SYS_kill, pid as isize as usize, sig as usize, 0, 0, 0, 0);
}

/// A resource limit of this process: `[soft, hard]`.
pub unsafe fn get_rlimit(resource: libc::c_int) -> [u64; 2] {
    let mut old = [0u64; 2];
    syscall6(libc::SYS_prlimit64, 0, resource as usize, 0, old.as_mut_ptr() as usize, 0, 0);
    old
}

/// Sets a resource limit of this process: `[soft, hard]`.
pub unsafe fn set_rlimit(resource: libc::c_int, limit: [u64; 2]) {
    syscall6(libc::SYS_prlimit64, 0, resource as usize, limit.as_ptr() as usize, 0, 0, 0);
}

/// Every signal to its default disposition (the kernel's `struct sigaction`, all zero, is
/// `SIG_DFL` with no flags and an empty mask on x86_64 and aarch64), and an empty mask.
pub unsafe fn reset_signals() {
    let default = [0u64; 4];
    for sig in 1..=64usize {
        if sig != libc::SIGKILL as usize && sig != libc::SIGSTOP as usize {
            syscall6(libc::SYS_rt_sigaction, sig, default.as_ptr() as usize, 0, 8, 0, 0);
        }
    }
    sigprocmask(libc::SIG_SETMASK, 0);
}

pub unsafe fn close(fd: libc::c_int) {
    syscall6(libc::SYS_close, fd as usize, 0, 0, 0, 0, 0);
}

/// `CLOSE_RANGE_CLOEXEC` (Linux 5.11+).
const CLOSE_RANGE_CLOEXEC: usize = 1 << 2;

/// Closes every descriptor from `first` on (`close_range`, or each open one before Linux 5.9).
pub unsafe fn close_from(first: libc::c_int) {
    if check(syscall6(libc::SYS_close_range, first as usize, u32::MAX as usize, 0, 0, 0, 0)).is_ok() {
        return;
    }
    // Closing while listing: the listing goes by descriptor number, so a second pass finds
    // nothing unless something was missed.
    for _ in 0..4 {
        let mut closed = false;
        let listed = each_open_fd(first, |fd| {
            close(fd);
            closed = true;
        });
        if !listed {
            every_possible_fd(first, |fd| close(fd));
            return;
        }
        if !closed {
            return;
        }
    }
}

/// Marks every descriptor from `first` on close-on-exec, so the program this process execs
/// gets none of them, while the steps before its exec can still use them (the status pipe,
/// the Landlock ruleset). `close_range(CLOSE_RANGE_CLOEXEC)`, or each open one as listed in
/// `/proc/self/fd` before Linux 5.11, or every number up to the descriptor limit.
pub unsafe fn cloexec_from(first: libc::c_int) {
    if check(syscall6(libc::SYS_close_range, first as usize, u32::MAX as usize, CLOSE_RANGE_CLOEXEC, 0, 0, 0)).is_ok() {
        return;
    }
    let set = |fd: libc::c_int| {
        syscall6(libc::SYS_fcntl, fd as usize, libc::F_SETFD as usize, libc::FD_CLOEXEC as usize, 0, 0, 0);
    };
    if !each_open_fd(first, set) {
        every_possible_fd(first, set);
    }
}

/// Calls `f` on every number from `first` up to the soft descriptor limit (where `/proc` is
/// missing: slow for a huge limit, but complete for every descriptor the limit allows).
unsafe fn every_possible_fd(first: libc::c_int, mut f: impl FnMut(libc::c_int)) {
    let mut limit = [0u64; 2];
    let top = match check(syscall6(libc::SYS_prlimit64, 0, libc::RLIMIT_NOFILE as usize, 0, limit.as_mut_ptr() as usize, 0, 0)) {
        Ok(_) => limit[0].min(i32::MAX as u64) as libc::c_int,
        Err(_) => 1 << 20,
    };
    for fd in first..top {
        f(fd);
    }
}

/// Calls `f` on every open descriptor from `first` on, as listed by `/proc/self/fd` (without
/// the one used to list them); false when it cannot be listed.
unsafe fn each_open_fd(first: libc::c_int, mut f: impl FnMut(libc::c_int)) -> bool {
    each_number_in(c"/proc/self/fd", |n, dir| {
        if n >= first && n != dir {
            f(n)
        }
    })
}

/// Calls `f(n, dir)` for every entry of directory `path` whose name is a decimal number `n`
/// (`dir`: the descriptor used to list it); false when it cannot be listed.
unsafe fn each_number_in(path: &CStr, mut f: impl FnMut(libc::c_int, libc::c_int)) -> bool {
    let Ok(dir) = open(path, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC) else { return false };
    // `struct linux_dirent64` records: u64 inode, i64 offset, u16 length, u8 type, name.
    let mut buf = [0u64; 256];
    loop {
        let n = match check(syscall6(libc::SYS_getdents64, dir as usize, buf.as_mut_ptr() as usize, std::mem::size_of_val(&buf), 0, 0, 0)) {
            Ok(0) => break,
            Ok(n) => n,
            Err(_) => {
                close(dir);
                return false;
            }
        };
        let bytes = buf.as_ptr().cast::<u8>();
        let mut off = 0usize;
        while off + 19 < n {
            let reclen = u16::from_ne_bytes([*bytes.add(off + 16), *bytes.add(off + 17)]) as usize;
            let mut fd: i64 = 0;
            let mut digits = 0;
            let mut p = off + 19;
            while p < off + reclen && *bytes.add(p) != 0 {
                let c = *bytes.add(p);
                if !c.is_ascii_digit() || fd > i32::MAX as i64 {
                    digits = 0;
                    break;
                }
                fd = fd * 10 + (c - b'0') as i64;
                digits += 1;
                p += 1;
            }
            if digits > 0 {
                f(fd as libc::c_int, dir);
            }
            if reclen == 0 {
                break;
            }
            off += reclen;
        }
    }
    close(dir);
    true
}

/// Gives the calling process `oom_score_adj` 1000: the OOM killer's first choice, a score
/// everything it starts inherits and which an exec keeps. Called by a process started with
/// `CLONE_VM | CLONE_VFORK` before it execs: the kernel keeps the score of processes that share
/// one memory equal, but leaves a vfork child (whose parent waits) out of that, so the host's
/// score stays its own. Written from outside after the exec it would not be safe: the parent
/// wakes just before the exec swaps in the program's memory, and a write in between reaches
/// every process still sharing the host's memory, the host included.
pub unsafe fn score_for_oom_killer() {
    let _ = write_file(c"/proc/self/oom_score_adj", b"1000");
}

pub unsafe fn prctl(option: libc::c_int, arg: usize) -> Result<(), i32> {
    check(syscall6(libc::SYS_prctl, option as usize, arg, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn mount(source: Option<&CStr>, target: &CStr, fstype: Option<&CStr>, flags: libc::c_ulong, data: Option<&CStr>) -> Result<(), i32> {
    let p = |s: Option<&CStr>| s.map_or(0, |s| s.as_ptr() as usize);
    check(syscall6(libc::SYS_mount, p(source), target.as_ptr() as usize, p(fstype), flags as usize, p(data), 0)).map(drop)
}

/// `wait4`: the pid and wait status, `Ok(None)` with `WNOHANG` and nothing to collect.
pub unsafe fn wait4(pid: libc::pid_t, options: libc::c_int) -> Result<Option<(libc::pid_t, libc::c_int)>, i32> {
    let mut status: libc::c_int = 0;
    let r = check(syscall6(libc::SYS_wait4, pid as isize as usize, &mut status as *mut libc::c_int as usize, options as usize, 0, 0, 0))?;
    Ok((r != 0).then_some((r as libc::pid_t, status)))
}

pub unsafe fn sigprocmask(how: libc::c_int, set: u64) {
    syscall6(libc::SYS_rt_sigprocmask, how as usize, &set as *const u64 as usize, 0, 8, 0, 0);
}

pub unsafe fn landlock_add_rule(ruleset: libc::c_int, rule_type: libc::c_int, attr: *const libc::c_void) -> Result<(), i32> {
    check(syscall6(libc::SYS_landlock_add_rule, ruleset as usize, rule_type as usize, attr as usize, 0, 0, 0)).map(drop)
}

pub unsafe fn landlock_restrict_self(ruleset: libc::c_int) -> Result<(), i32> {
    check(syscall6(libc::SYS_landlock_restrict_self, ruleset as usize, 0, 0, 0, 0, 0)).map(drop)
}

/// `execve`: returns only on failure, with the errno.
pub unsafe fn execve(path: *const libc::c_char, argv: *const *const libc::c_char, envp: *const *const libc::c_char) -> i32 {
    match check(syscall6(libc::SYS_execve, path as usize, argv as usize, envp as usize, 0, 0, 0)) {
        Err(e) => e,
        Ok(_) => libc::EINVAL,
    }
}

/// Ends this process (not only this thread: these processes have one).
pub unsafe fn exit(code: libc::c_int) -> ! {
    syscall6(libc::SYS_exit_group, code as usize, 0, 0, 0, 0, 0);
    // exit_group does not return.
    loop {
        std::hint::spin_loop();
    }
}

/// Ignores `sig` (`SIG_IGN`: kept across exec). The kernel's `struct sigaction` starts with the
/// handler on x86_64 and aarch64.
pub unsafe fn ignore_signal(sig: libc::c_int) {
    let ignore = [1u64, 0, 0, 0];
    syscall6(libc::SYS_rt_sigaction, sig as usize, ignore.as_ptr() as usize, 0, 8, 0, 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fallback_listing_finds_every_open_descriptor() {
        // What cloexec_from and close_from use where close_range lacks a flag (before 5.11).
        let files: Vec<std::fs::File> = (0..5).map(|_| std::fs::File::open("/dev/null").unwrap()).collect();
        let mut seen = Vec::new();
        // SAFETY: lists this process's descriptors.
        assert!(unsafe { each_open_fd(3, |fd| seen.push(fd)) });
        use std::os::fd::AsRawFd as _;
        for f in &files {
            assert!(seen.contains(&f.as_raw_fd()), "{seen:?}");
        }
        assert!(seen.iter().all(|fd| *fd >= 3));
    }
}


#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS`.
const RESOLVE_NO_LINKS: u64 = 0x02 | 0x04;
/// `RESOLVE_BENEATH`.
const RESOLVE_BENEATH: u64 = 0x08;

/// `openat2(dir, path, O_PATH | O_NOFOLLOW | O_CLOEXEC)` beneath `dir`, following no symlink.
pub unsafe fn open_beneath(dir: libc::c_int, path: &CStr) -> Result<libc::c_int, i32> {
    open_no_links(dir, path, RESOLVE_BENEATH)
}

/// `openat2(AT_FDCWD, path, O_PATH | O_NOFOLLOW | O_CLOEXEC)` of an absolute path, following no
/// symlink in any component.
pub unsafe fn open_absolute_no_links(path: &CStr) -> Result<libc::c_int, i32> {
    open_no_links(libc::AT_FDCWD, path, 0)
}

unsafe fn open_no_links(dir: libc::c_int, path: &CStr, resolve: u64) -> Result<libc::c_int, i32> {
    let how = OpenHow { flags: (libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC) as u64, mode: 0, resolve: RESOLVE_NO_LINKS | resolve };
    check(syscall6(libc::SYS_openat2, dir as usize, path.as_ptr() as usize, &how as *const OpenHow as usize, std::mem::size_of::<OpenHow>(), 0, 0))
        .map(|fd| fd as libc::c_int)
}

/// The device and inode of an open file.
pub unsafe fn identity(fd: libc::c_int) -> Result<(u64, u64), i32> {
    let mut st: libc::stat = std::mem::zeroed();
    check(syscall6(libc::SYS_fstat, fd as usize, &mut st as *mut libc::stat as usize, 0, 0, 0, 0))?;
    Ok((st.st_dev as u64, st.st_ino as u64))
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

const OPEN_TREE_CLONE: usize = 1;
const AT_EMPTY_PATH: usize = 0x1000;
const AT_RECURSIVE: usize = 0x8000;
const MOUNT_ATTR_RDONLY: u64 = 1;
const MOVE_MOUNT_F_EMPTY_PATH: usize = 0x04;
const MOVE_MOUNT_T_EMPTY_PATH: usize = 0x40;

/// Mounts the file or directory open as `fd` over itself (with everything mounted beneath it):
/// a detached copy made with `open_tree`, made read-only with `mount_setattr` when `read_only`,
/// moved onto `fd` with `move_mount` (Linux 5.12+). Either way it is then a mount point, which
/// cannot be renamed or removed (`EBUSY`). The caller must own its mount namespace.
pub unsafe fn bind_over_itself(fd: libc::c_int, read_only: bool) -> Result<(), i32> {
    let tree = clone_tree(fd, read_only)?;
    let r = move_onto(tree, fd);
    close(tree);
    r
}

/// A detached read-only copy of the file or directory open as `fd` (with everything mounted
/// beneath it): `open_tree(OPEN_TREE_CLONE)` and `mount_setattr(MOUNT_ATTR_RDONLY)`.
pub unsafe fn clone_read_only(fd: libc::c_int) -> Result<libc::c_int, i32> {
    clone_tree(fd, true)
}

/// A detached copy of the file or directory open as `fd` (with everything mounted beneath it),
/// `open_tree(OPEN_TREE_CLONE)`, made read-only with `mount_setattr` when `read_only`.
unsafe fn clone_tree(fd: libc::c_int, read_only: bool) -> Result<libc::c_int, i32> {
    let empty = c"";
    let tree = check(syscall6(
        libc::SYS_open_tree,
        fd as usize,
        empty.as_ptr() as usize,
        OPEN_TREE_CLONE | libc::O_CLOEXEC as usize | AT_EMPTY_PATH | AT_RECURSIVE,
        0,
        0,
        0,
    ))? as libc::c_int;
    if !read_only {
        return Ok(tree);
    }
    let attr = MountAttr { attr_set: MOUNT_ATTR_RDONLY, attr_clr: 0, propagation: 0, userns_fd: 0 };
    let r = check(syscall6(
        libc::SYS_mount_setattr,
        tree as usize,
        empty.as_ptr() as usize,
        AT_EMPTY_PATH | AT_RECURSIVE,
        &attr as *const MountAttr as usize,
        std::mem::size_of::<MountAttr>(),
        0,
    ));
    match r {
        Ok(_) => Ok(tree),
        Err(e) => {
            close(tree);
            Err(e)
        }
    }
}

/// Attaches the detached mount `tree` over the file or directory open as `fd` (`move_mount`).
pub unsafe fn move_onto(tree: libc::c_int, fd: libc::c_int) -> Result<(), i32> {
    let empty = c"";
    check(syscall6(
        libc::SYS_move_mount,
        tree as usize,
        empty.as_ptr() as usize,
        fd as usize,
        empty.as_ptr() as usize,
        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        0,
    ))
    .map(drop)
}
