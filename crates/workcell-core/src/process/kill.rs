//! Ending what a call started.
//!
//! Every child leads a process group of its own, so one `kill(-pgid, SIGKILL)` ends it and every
//! descendant that stayed in the group (background jobs, `&` in a script, forks). A descendant
//! can leave the group (`setsid`, `setpgid`) and keep the output pipes open; the host never
//! waits on it past a bounded delay: it finds the processes that still hold one of the call's
//! pipes (through `/proc/<pid>/fd` on Linux) and kills them, then closes its read ends anyway.
//! Only a holder of one of the call's own pipes is ever signalled, and each is addressed by a
//! pidfd checked to still hold the pipe, so a recycled pid cannot be hit.

use std::os::fd::AsFd;

/// SIGKILL to process group `pgid`. A group that no longer exists is not an error.
pub fn kill_group(pgid: i32) {
    if pgid > 1 {
        // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// The inode that identifies a pipe (what `/proc/<pid>/fd/<n>` shows as `pipe:[inode]`).
pub fn pipe_inode(fd: impl AsFd) -> Option<u64> {
    rustix::fs::fstat(fd).ok().map(|st| st.st_ino)
}

/// Kills every process other than this one that holds one of the pipes in `inodes` open for
/// writing. Returns how many were signalled. Only on Linux (elsewhere: 0).
pub fn kill_pipe_holders(inodes: &[u64]) -> usize {
    #[cfg(target_os = "linux")]
    {
        linux::kill_pipe_holders(inodes)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = inodes;
        0
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::fs;

    /// Whether `pid` has one of the pipes open for writing. Read ends do not count: a process
    /// forked by the host (Node's own `child_process`, between fork and exec) briefly holds
    /// copies of the host's read ends and must not be mistaken for a holder.
    fn holds(pid: i32, names: &[String]) -> bool {
        let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
        dir.flatten().any(|entry| {
            let is_ours = fs::read_link(entry.path())
                .map(|target| names.iter().any(|n| target.as_os_str() == n.as_str()))
                .unwrap_or(false);
            is_ours && writable(pid, &entry.file_name().to_string_lossy())
        })
    }

    /// Whether descriptor `fd` of `pid` was opened for writing (the `flags:` line of fdinfo,
    /// in octal; O_WRONLY = 1, O_RDWR = 2).
    fn writable(pid: i32, fd: &str) -> bool {
        let Ok(info) = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")) else { return false };
        info.lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
            .is_some_and(|flags| flags & 0o3 != 0)
    }

    pub(super) fn kill_pipe_holders(inodes: &[u64]) -> usize {
        if inodes.is_empty() {
            return 0;
        }
        let names: Vec<String> = inodes.iter().map(|i| format!("pipe:[{i}]")).collect();
        let me = std::process::id() as i32;
        let Ok(proc_dir) = fs::read_dir("/proc") else { return 0 };
        let mut killed = 0;
        for entry in proc_dir.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
            if pid == me || !holds(pid, &names) {
                continue;
            }
            let Some(p) = rustix::process::Pid::from_raw(pid) else { continue };
            match rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()) {
                Ok(pidfd) => {
                    // The pidfd pins this process: check again that it is the holder.
                    if holds(pid, &names) && rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL).is_ok() {
                        killed += 1;
                    }
                }
                Err(_) => {
                    // No pidfd support: the window between the check and the signal is tiny.
                    // SAFETY: kill(2) on a process just seen holding our pipe.
                    if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                        killed += 1;
                    }
                }
            }
        }
        killed
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::process::{Command, Stdio};

    #[test]
    fn only_write_end_holders_are_killed() {
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        let inode = pipe_inode(&r).unwrap();
        // One child holds the read end as its stdin, another the write end as its stdout.
        let mut reader = Command::new("sleep").arg("30").stdin(Stdio::from(r)).stdout(Stdio::null()).spawn().unwrap();
        let mut writer = Command::new("sleep").arg("30").stdout(Stdio::from(w)).spawn().unwrap();
        assert_eq!(kill_pipe_holders(&[inode]), 1);
        let status = writer.wait().unwrap();
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), Some(libc::SIGKILL));
        assert!(reader.try_wait().unwrap().is_none(), "the reader is left alone");
        reader.kill().unwrap();
        reader.wait().unwrap();
        assert_eq!(kill_pipe_holders(&[inode]), 0);
    }
}
