//! Raw system calls for the processes that share memory between fork and exec.
//!
//! The namespace's init and the process that execs the program are `clone(CLONE_VM)` children
//! of the spawned child: they share its memory, its thread-local storage included, and run at
//! the same time as it. A C library wrapper would write `errno` there (a race with the others),
//! so they only make system calls through [`syscall6`], which returns `-errno` and touches no
//! memory. Linux on x86_64 and aarch64 (elsewhere the namespace layer is not offered).

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

pub unsafe fn close(fd: libc::c_int) {
    syscall6(libc::SYS_close, fd as usize, 0, 0, 0, 0, 0);
}

/// Closes every descriptor from `first` on (`close_range`, or one by one before Linux 5.9).
pub unsafe fn close_from(first: libc::c_int) {
    if check(syscall6(libc::SYS_close_range, first as usize, u32::MAX as usize, 0, 0, 0, 0)).is_ok() {
        return;
    }
    let mut limit = [0u64; 2];
    let top = match check(syscall6(libc::SYS_prlimit64, 0, libc::RLIMIT_NOFILE as usize, 0, limit.as_mut_ptr() as usize, 0, 0)) {
        Ok(_) => limit[0].min(65_536) as libc::c_int,
        Err(_) => 1_024,
    };
    for fd in first..top {
        close(fd);
    }
}

pub unsafe fn prctl(option: libc::c_int, arg: usize) -> Result<(), i32> {
    check(syscall6(libc::SYS_prctl, option as usize, arg, 0, 0, 0, 0)).map(drop)
}

pub unsafe fn mount(source: Option<&CStr>, target: &CStr, fstype: Option<&CStr>, flags: libc::c_ulong) -> Result<(), i32> {
    let p = |s: Option<&CStr>| s.map_or(0, |s| s.as_ptr() as usize);
    check(syscall6(libc::SYS_mount, p(source), target.as_ptr() as usize, p(fstype), flags as usize, 0, 0)).map(drop)
}

/// `wait4`: the pid and wait status, `Ok(None)` with `WNOHANG` and nothing to collect.
pub unsafe fn wait4(pid: libc::pid_t, options: libc::c_int) -> Result<Option<(libc::pid_t, libc::c_int)>, i32> {
    let mut status: libc::c_int = 0;
    let r = check(syscall6(libc::SYS_wait4, pid as isize as usize, &mut status as *mut libc::c_int as usize, options as usize, 0, 0, 0))?;
    Ok((r != 0).then_some((r as libc::pid_t, status)))
}

/// The kernel's signal set (64 bits on x86_64 and aarch64).
pub fn sigset(signals: &[libc::c_int]) -> u64 {
    signals.iter().fold(0u64, |set, s| set | (1u64 << (s - 1)))
}

pub unsafe fn sigprocmask(how: libc::c_int, set: u64) {
    syscall6(libc::SYS_rt_sigprocmask, how as usize, &set as *const u64 as usize, 0, 8, 0, 0);
}

/// Waits until one of `set` (blocked) is pending, and takes it.
pub unsafe fn sigwait(set: u64) {
    syscall6(libc::SYS_rt_sigtimedwait, &set as *const u64 as usize, 0, 0, 8, 0, 0);
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
