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

/// Kills every process other than this one that holds a descriptor for one of the pipes in
/// `inodes`. Returns how many were signalled. Only on Linux (elsewhere: 0).
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

    fn holds(pid: i32, names: &[String]) -> bool {
        let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else { return false };
        dir.flatten().any(|entry| {
            fs::read_link(entry.path())
                .map(|target| names.iter().any(|n| target.as_os_str() == n.as_str()))
                .unwrap_or(false)
        })
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
