//! What this kernel offers, found out once per process by trying it.
//!
//! - Landlock: the ABI version the kernel reports (`landlock_create_ruleset` with the version
//!   flag; no fork needed).
//! - Namespaces: a throwaway child runs the very steps a confined spawn runs (unshare a user,
//!   PID and mount namespace, write its id maps, start the namespace's init, mount a private
//!   `/proc`, enter a nested user namespace) and reports through its exit status how far it got.
//!   The PID namespace is only used with a user namespace: that is what keeps the program from
//!   the init, which shares the host's memory.
//!
//! [`Features::limited`] lets a host or a test simulate a kernel with fewer features (never
//! more than were found): that is how "no Landlock here" is tested on a kernel that has it.

use std::sync::OnceLock;

/// Kernel features the sandbox can use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// The Landlock ABI version, `None` without Landlock (not built, disabled, not Linux).
    pub landlock_abi: Option<u32>,
    /// A new PID namespace can be created for a child.
    pub pid_namespace: bool,
    /// ... inside new user namespaces (the PID namespace is only used with them).
    pub user_namespace: bool,
    /// A private `/proc` can be mounted in that namespace (it shows only the call's processes).
    pub proc_mount: bool,
}

impl Features {
    /// Nothing at all (a kernel without any of the features, or another OS).
    pub const NONE: Features = Features { landlock_abi: None, pid_namespace: false, user_namespace: false, proc_mount: false };

    /// What this kernel offers to this process (probed once, then cached).
    pub fn detect() -> Features {
        static DETECTED: OnceLock<Features> = OnceLock::new();
        *DETECTED.get_or_init(probe)
    }

    /// These features, reduced to at most `limit` in every respect (a simulated older kernel).
    pub fn limited(self, limit: &Features) -> Features {
        let landlock_abi = match (self.landlock_abi, limit.landlock_abi) {
            (Some(a), Some(b)) => Some(a.min(b)).filter(|v| *v > 0),
            _ => None,
        };
        let pid_namespace = self.pid_namespace && limit.pid_namespace;
        Features {
            landlock_abi,
            pid_namespace,
            user_namespace: pid_namespace && self.user_namespace && limit.user_namespace,
            proc_mount: pid_namespace && self.proc_mount && limit.proc_mount,
        }
    }
}

fn probe() -> Features {
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let ns = probe_namespaces();
        Features { landlock_abi: super::landlock::kernel_abi(), pid_namespace: ns.pid, user_namespace: ns.pid, proc_mount: ns.proc_mount }
    }
    #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        Features::NONE
    }
}

/// What the namespace probe found.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NsSupport {
    pub pid: bool,
    pub proc_mount: bool,
}

/// Launches a throwaway child with `launch` (its G exits with a probe code instead of
/// exec'ing, its stdio on `/dev/null`) and returns that exit code, or `None` when it could not
/// be launched or did not exit by itself.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe_exit(launch: super::launch::Launch) -> Option<i32> {
    use crate::process::Launcher as _;
    use std::os::fd::AsFd as _;
    let null = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null").ok()?;
    let io = crate::process::LaunchIo {
        program: std::path::Path::new("/"),
        arg0: None,
        args: &[],
        cwd: std::path::Path::new("/"),
        env: &[],
        stdin: null.as_fd(),
        stdout: null.as_fd(),
        stderr: null.as_fd(),
    };
    let pid = launch.launch(&io).ok()?;
    let mut status = 0;
    // SAFETY: waitpid on our own child.
    let r = unsafe { libc::waitpid(pid, &mut status, 0) };
    (r == pid && libc::WIFEXITED(status)).then(|| libc::WEXITSTATUS(status))
}

/// Tries the namespace steps with a throwaway child (whose G exits instead of exec'ing).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe_namespaces() -> NsSupport {
    match probe_exit(super::launch::Launch::probe()) {
        Some(super::pidns::PROBE_WITH_PROC) => NsSupport { pid: true, proc_mount: true },
        Some(super::pidns::PROBE_WITHOUT_PROC) => NsSupport { pid: true, proc_mount: false },
        _ => NsSupport { pid: false, proc_mount: false },
    }
}

/// Whether a network namespace with its loopback proxy listener can be made here (probed once
/// per process with a throwaway confined spawn, as a call would make it).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn network_namespace() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(probe_network_namespace)
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn probe_network_namespace() -> bool {
    let session = crate::proxy::Session::new(std::sync::Arc::new(crate::proxy::Allowlist::default()), crate::proxy::Share::default());
    let Ok(net) = super::netns::Net::new(session.server()) else { return false };
    let ok = matches!(
        probe_exit(super::launch::Launch::probe_network(net)),
        Some(super::pidns::PROBE_WITH_PROC | super::pidns::PROBE_WITHOUT_PROC)
    );
    session.stop();
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Features = Features { landlock_abi: Some(7), pid_namespace: true, user_namespace: true, proc_mount: true };

    #[test]
    fn a_limit_only_takes_away() {
        assert_eq!(FULL.limited(&FULL), FULL);
        let no_landlock = Features { landlock_abi: None, ..FULL };
        assert_eq!(FULL.limited(&no_landlock), no_landlock);
        // A higher ABI than the kernel's is not granted.
        let old = Features { landlock_abi: Some(3), ..FULL };
        assert_eq!(old.limited(&FULL).landlock_abi, Some(3));
        assert_eq!(FULL.limited(&Features { landlock_abi: Some(9), ..FULL }).landlock_abi, Some(7));
        // ABI 0 means none.
        assert_eq!(FULL.limited(&Features { landlock_abi: Some(0), ..FULL }).landlock_abi, None);
        // Without a PID namespace there is nothing for the others to belong to.
        let no_ns = FULL.limited(&Features { pid_namespace: false, ..FULL });
        assert_eq!(no_ns, Features { landlock_abi: Some(7), ..Features::NONE });
        assert_eq!(FULL.limited(&Features::NONE), Features::NONE);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn detection_is_cached_and_consistent() {
        let a = Features::detect();
        assert_eq!(a, Features::detect());
        assert!(!a.user_namespace || a.pid_namespace);
        assert!(!a.proc_mount || a.pid_namespace);
    }
}
