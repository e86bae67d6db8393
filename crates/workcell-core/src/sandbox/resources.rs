//! Resource limits on every confined process tree: how many processes, how much memory, how
//! large a file. Each is enforced by the strongest mechanism this system gives the host, and the
//! report names it ([`By`]):
//!
//! | limit | mechanism, in order of preference |
//! |---|---|
//! | processes (and threads) | `RLIMIT_NPROC` in the sandbox's own user namespace (counted there, not against the user's other processes; the kernel does not enforce it for uid 0), else a pids cgroup the tree is put in before exec ([`super::cgroup`]: a v2 leaf where one is delegated, else v1) |
//! | memory | a memory cgroup (v2 leaf, else v1): the whole tree together; else `RLIMIT_DATA` on each process (see docs/sandbox-limits.md for why not `RLIMIT_AS`) |
//! | file size | `RLIMIT_FSIZE` on each process; `SIGXFSZ` is ignored, so a write past it fails with `EFBIG` instead of killing the writer |
//!
//! A tree that reaches a cap fails the way the kernel says (`EAGAIN` from `fork`, the memory
//! cgroup's OOM kill or `ENOMEM`, `EFBIG`); the host is never in the cgroup and every confined
//! process has `oom_score_adj` 1000. In `required` mode a limit that cannot be enforced here is
//! `SANDBOX_UNAVAILABLE`; in `auto` mode it is reported as `by: "none"`.

/// Default process cap of a confined tree.
pub const DEFAULT_PROCESSES: u64 = 512;
/// Default per-file size cap: 4 GiB.
pub const DEFAULT_FILE_BYTES: u64 = 4 << 30;
/// Smallest memory cap a host may configure (Node.js does not start in much less).
pub const MIN_MEMORY_BYTES: u64 = 64 << 20;
/// Largest process cap a host may configure (Linux's largest pid_max).
pub const MAX_PROCESSES: u64 = 4_194_304;
/// Largest byte cap (2^53 - 1: exact as a JavaScript number).
pub const MAX_BYTES: u64 = (1 << 53) - 1;

const MIB: u64 = 1 << 20;

/// The machine's physical memory in bytes (`os.totalmem()`).
pub fn physical_memory() -> u64 {
    // SAFETY: sysconf with constant names.
    let (pages, page) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    if pages <= 0 || page <= 0 {
        return 0;
    }
    (pages as u64).saturating_mul(page as u64)
}

/// Default memory cap of a confined tree: half the physical memory, rounded down to a whole MiB.
pub fn default_memory_bytes() -> u64 {
    (physical_memory() / 2 / MIB * MIB).max(MIN_MEMORY_BYTES)
}

/// The caps the host asked for (every one always applies; the defaults when not given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Processes and threads of the tree at once.
    pub processes: u64,
    /// Memory of the tree (a cgroup), or of each process (`RLIMIT_DATA`).
    pub memory_bytes: u64,
    /// Size of any one file the tree writes.
    pub file_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { processes: DEFAULT_PROCESSES, memory_bytes: default_memory_bytes(), file_bytes: DEFAULT_FILE_BYTES }
    }
}

impl Limits {
    /// Checks the host's configuration; a message for the host when it is unusable.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !(1..=MAX_PROCESSES).contains(&self.processes) {
            return Err(format!("limits.processes must be an integer from 1 to {MAX_PROCESSES}, got {}", self.processes));
        }
        if !(MIN_MEMORY_BYTES..=MAX_BYTES).contains(&self.memory_bytes) {
            return Err(format!("limits.memoryBytes must be an integer from {MIN_MEMORY_BYTES} (64 MiB) to {MAX_BYTES}, got {}", self.memory_bytes));
        }
        if !(1..=MAX_BYTES).contains(&self.file_bytes) {
            return Err(format!("limits.fileBytes must be an integer from 1 to {MAX_BYTES}, got {}", self.file_bytes));
        }
        Ok(())
    }
}

/// How a limit is enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum By {
    /// A resource limit (`setrlimit`) on each process.
    Rlimit,
    /// A cgroup v2 leaf holding the whole tree.
    CgroupV2,
    /// A cgroup v1 group holding the whole tree.
    CgroupV1,
    /// Not enforced (`auto` mode on a system without the mechanism, or `sandbox: "off"`).
    None,
}

impl By {
    pub fn as_str(self) -> &'static str {
        match self {
            By::Rlimit => "rlimit",
            By::CgroupV2 => "cgroup-v2",
            By::CgroupV1 => "cgroup-v1",
            By::None => "none",
        }
    }
}

/// One limit as enforced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "SandboxLimitReport")]
pub struct Enforced {
    #[serde(serialize_with = "crate::json::number")]
    pub max: u64,
    pub by: By,
}

/// The `sandbox.limits` field of a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SandboxLimitsReport")]
pub struct LimitsReport {
    pub processes: Enforced,
    pub memory_bytes: Enforced,
    pub file_bytes: Enforced,
}

impl LimitsReport {
    /// Nothing enforced, nothing configured.
    pub const NONE: LimitsReport = LimitsReport {
        processes: Enforced { max: 0, by: By::None },
        memory_bytes: Enforced { max: 0, by: By::None },
        file_bytes: Enforced { max: 0, by: By::None },
    };

    /// Nothing enforced (`sandbox: "off"`); `max` says what was configured.
    pub fn none(limits: &Limits) -> Self {
        let none = |max| Enforced { max, by: By::None };
        LimitsReport { processes: none(limits.processes), memory_bytes: none(limits.memory_bytes), file_bytes: none(limits.file_bytes) }
    }

    /// The caps that were asked for.
    pub fn configured(&self) -> Limits {
        Limits { processes: self.processes.max, memory_bytes: self.memory_bytes.max, file_bytes: self.file_bytes.max }
    }

    /// The limits `required` mode lacks here, by name.
    pub fn missing(&self) -> Vec<&'static str> {
        let mut missing = Vec::new();
        if self.processes.by == By::None {
            missing.push("limit-processes");
        }
        if self.memory_bytes.by == By::None {
            missing.push("limit-memory");
        }
        if self.file_bytes.by == By::None {
            missing.push("limit-file-size");
        }
        missing
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }
}

/// What the system offers for the limits of one tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mechanisms {
    /// The tree gets a user namespace of its own (where `RLIMIT_NPROC` counts only its processes).
    pub user_namespace: bool,
    /// The tree runs as uid 0 (for which the kernel does not enforce `RLIMIT_NPROC`).
    pub root: bool,
    /// A pids cgroup the host may create, and its version.
    pub pids: Option<By>,
    /// A memory cgroup the host may create, and its version.
    pub memory: Option<By>,
}

/// How each limit is enforced with `mech`.
pub fn decide(limits: &Limits, mech: &Mechanisms) -> LimitsReport {
    let processes = if mech.user_namespace && !mech.root {
        By::Rlimit
    } else {
        mech.pids.unwrap_or(By::None)
    };
    let memory = mech.memory.unwrap_or(By::Rlimit);
    LimitsReport {
        processes: Enforced { max: limits.processes, by: processes },
        memory_bytes: Enforced { max: limits.memory_bytes, by: memory },
        file_bytes: Enforced { max: limits.file_bytes, by: By::Rlimit },
    }
}

/// What the child applies to itself just before exec, prepared by the host: resource limits
/// (soft and hard: a confined process cannot raise them again) and the cgroups to join
/// (descriptors of their `tasks` or `cgroup.procs`, open for writing).
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
#[derive(Debug, Default)]
pub struct ChildLimits {
    rlimits: [(libc::c_int, u64); 3],
    n_rlimits: usize,
    procs: [libc::c_int; 2],
    n_procs: usize,
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
impl ChildLimits {
    /// The rlimits and cgroup descriptors for `report` (`procs` from [`super::cgroup::Leaf`]).
    pub fn new(report: &LimitsReport, procs: &[libc::c_int]) -> Self {
        let mut c = ChildLimits::default();
        let mut push = |resource: libc::c_int, value: u64| {
            c.rlimits[c.n_rlimits] = (resource, value);
            c.n_rlimits += 1;
        };
        if report.processes.by == By::Rlimit {
            push(libc::RLIMIT_NPROC as libc::c_int, report.processes.max);
        }
        if report.memory_bytes.by == By::Rlimit {
            push(libc::RLIMIT_DATA as libc::c_int, report.memory_bytes.max);
        }
        if report.file_bytes.by == By::Rlimit {
            push(libc::RLIMIT_FSIZE as libc::c_int, report.file_bytes.max);
        }
        for fd in procs.iter().take(2) {
            c.procs[c.n_procs] = *fd;
            c.n_procs += 1;
        }
        c
    }

    /// In the child, right before exec (and before Landlock): joins the cgroups, sets the
    /// limits (never above the inherited hard limit) and ignores `SIGXFSZ` (kept across exec:
    /// a write past the file cap fails with `EFBIG`).
    ///
    /// # Safety
    /// Raw system calls only (between clone and exec).
    pub unsafe fn apply(&self) -> Result<(), i32> {
        for fd in &self.procs[..self.n_procs] {
            super::sys::write(*fd, b"0")?;
        }
        for (resource, value) in &self.rlimits[..self.n_rlimits] {
            let hard = super::sys::get_rlimit(*resource)[1];
            let v = (*value).min(hard);
            super::sys::set_rlimit(*resource, [v, v]);
        }
        if self.n_rlimits > 0 {
            super::sys::ignore_signal(libc::SIGXFSZ);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_the_machine() {
        let d = Limits::default();
        assert_eq!(d.processes, 512);
        assert_eq!(d.file_bytes, 4 << 30);
        assert_eq!(d.memory_bytes % MIB, 0);
        assert!(d.memory_bytes <= physical_memory() / 2 || d.memory_bytes == MIN_MEMORY_BYTES);
        assert!(d.validate().is_ok());
    }

    #[test]
    fn unusable_limits_are_refused() {
        for bad in [
            Limits { processes: 0, ..Limits::default() },
            Limits { processes: MAX_PROCESSES + 1, ..Limits::default() },
            Limits { memory_bytes: MIN_MEMORY_BYTES - 1, ..Limits::default() },
            Limits { file_bytes: 0, ..Limits::default() },
            Limits { file_bytes: u64::MAX, ..Limits::default() },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }

    #[test]
    fn decisions_follow_the_mechanisms() {
        let l = Limits { processes: 64, memory_bytes: 256 << 20, file_bytes: 16 << 20 };
        // Unprivileged in a namespace, no cgroup: rlimits for all three.
        let r = decide(&l, &Mechanisms { user_namespace: true, ..Mechanisms::default() });
        assert_eq!((r.processes.by, r.memory_bytes.by, r.file_bytes.by), (By::Rlimit, By::Rlimit, By::Rlimit));
        // Root: RLIMIT_NPROC is not enforced, the pids cgroup is.
        let root = Mechanisms { user_namespace: true, root: true, pids: Some(By::CgroupV1), memory: Some(By::CgroupV1) };
        let r = decide(&l, &root);
        assert_eq!((r.processes.by, r.memory_bytes.by), (By::CgroupV1, By::CgroupV1));
        assert_eq!(r.processes.max, 64);
        // Root without a pids cgroup: nothing counts its processes.
        let r = decide(&l, &Mechanisms { pids: None, ..root });
        assert_eq!(r.processes.by, By::None);
        assert_eq!(r.missing(), ["limit-processes"]);
        // No namespace: RLIMIT_NPROC would count the user's other processes.
        let r = decide(&l, &Mechanisms::default());
        assert_eq!(r.processes.by, By::None);
    }

    #[test]
    fn report_json_shape() {
        let l = Limits { processes: 64, memory_bytes: 256 << 20, file_bytes: 16 << 20 };
        let r = decide(&l, &Mechanisms { user_namespace: true, memory: Some(By::CgroupV2), ..Mechanisms::default() });
        assert_eq!(
            r.to_json(),
            serde_json::json!({
                "processes": { "max": 64, "by": "rlimit" },
                "memoryBytes": { "max": 268435456u64, "by": "cgroup-v2" },
                "fileBytes": { "max": 16777216u64, "by": "rlimit" },
            })
        );
        assert_eq!(LimitsReport::none(&l).to_json()["fileBytes"]["by"], "none");
    }
}
