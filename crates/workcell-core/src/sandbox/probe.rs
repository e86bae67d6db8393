//! What this kernel offers, found out once per process by trying it.
//!
//! - Landlock: the ABI version the kernel reports (`landlock_create_ruleset` with the version
//!   flag; no fork needed).
//! - Namespaces: a throwaway child runs the very steps a confined spawn runs (unshare a user,
//!   PID and mount namespace, write its id maps, fork the namespace's init, mount a private
//!   `/proc` there) and reports through its exit status how far it got. With no user namespace
//!   allowed, a host with `CAP_SYS_ADMIN` can still make a PID namespace without one; that is
//!   tried second.
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
    /// ... inside a new user namespace (always used when it works; without it the PID namespace
    /// needs `CAP_SYS_ADMIN`).
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
    #[cfg(target_os = "linux")]
    {
        let ns = super::pidns::probe();
        Features {
            landlock_abi: super::landlock::kernel_abi(),
            pid_namespace: ns.pid,
            user_namespace: ns.user,
            proc_mount: ns.proc_mount,
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        Features::NONE
    }
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
