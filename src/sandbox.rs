//! The sandbox's options, report and probe, as JS values.

use napi_derive::napi;
use workcell_core::sandbox::{self, Enforced, Features, Limits, LimitsReport, Mode, NodePermission, Report, SandboxOptions};

/// Simulates a system with fewer sandbox features (tests, diagnostics): each given value can
/// only take away from what the probe found.
#[napi(object)]
pub struct SandboxFeatureLimit {
    /// The highest Landlock ABI to use; 0 for none.
    pub landlock_abi: Option<u32>,
    pub pid_namespace: Option<bool>,
    pub user_namespace: Option<bool>,
    pub proc_mount: Option<bool>,
    /// `false`: a system where the host can create no cgroup.
    pub cgroups: Option<bool>,
}

/// The resource caps of a confined tree (`limits`); a missing one takes its default.
#[napi(object)]
pub struct SandboxLimits {
    pub processes: Option<f64>,
    pub memory_bytes: Option<f64>,
    pub file_bytes: Option<f64>,
}

/// One cap as enforced.
#[napi(object)]
pub struct SandboxLimitReport {
    pub max: f64,
    /// `"rlimit"`, `"cgroup-v2"`, `"cgroup-v1"` or `"none"`.
    pub by: String,
}

/// The caps of a call and how each was enforced (`sandbox.limits`).
#[napi(object)]
pub struct SandboxLimitsReport {
    pub processes: SandboxLimitReport,
    pub memory_bytes: SandboxLimitReport,
    pub file_bytes: SandboxLimitReport,
}

impl From<LimitsReport> for SandboxLimitsReport {
    fn from(r: LimitsReport) -> Self {
        let one = |e: Enforced| SandboxLimitReport { max: e.max as f64, by: e.by.as_str().into() };
        SandboxLimitsReport { processes: one(r.processes), memory_bytes: one(r.memory_bytes), file_bytes: one(r.file_bytes) }
    }
}

fn limits_of(l: Option<SandboxLimits>) -> napi::Result<Limits> {
    let d = Limits::default();
    let Some(l) = l else { return Ok(d) };
    let whole = |name: &str, v: Option<f64>, default: u64| -> napi::Result<u64> {
        match v {
            None => Ok(default),
            Some(v) if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= sandbox::limits::MAX_BYTES as f64 => Ok(v as u64),
            Some(v) => Err(crate::process_tool::host_error(format_args!("limits.{name} must be a non-negative integer, got {v}"))),
        }
    };
    let limits = Limits {
        processes: whole("processes", l.processes, d.processes)?,
        memory_bytes: whole("memoryBytes", l.memory_bytes, d.memory_bytes)?,
        file_bytes: whole("fileBytes", l.file_bytes, d.file_bytes)?,
    };
    limits.validate().map_err(crate::process_tool::host_error)?;
    Ok(limits)
}

/// The caps `limits` asks for, with the defaults filled in (processes 512, half the physical
/// memory rounded down to a whole MiB, 4 GiB per file); throws with a message for the host when
/// one is unusable.
#[napi]
pub fn sandbox_limits(limits: Option<SandboxLimits>) -> napi::Result<SandboxLimits> {
    let l = limits_of(limits)?;
    Ok(SandboxLimits { processes: Some(l.processes as f64), memory_bytes: Some(l.memory_bytes as f64), file_bytes: Some(l.file_bytes as f64) })
}

/// What the host's Node.js offers for its permission model.
#[napi(object)]
pub struct NodePermissionSupport {
    /// `--permission` or `--experimental-permission`.
    pub flag: String,
    pub allow_addons: bool,
    pub allow_wasi: bool,
}

/// What confined a child: the `sandbox` field of a result.
#[napi(object)]
pub struct SandboxReport {
    pub landlock_abi: Option<u32>,
    /// `"confined"` or `"open"`.
    pub filesystem: String,
    /// `"blocked"`, `"allowed"`, `"filtered"` or `"open"`.
    pub network: String,
    /// `"namespace"` or `"group"`.
    pub processes: String,
    pub node_permission: bool,
    pub limits: SandboxLimitsReport,
}

impl From<Report> for SandboxReport {
    fn from(r: Report) -> Self {
        SandboxReport {
            landlock_abi: r.landlock_abi,
            filesystem: r.filesystem.as_str().into(),
            network: r.network.as_str().into(),
            processes: r.processes.as_str().into(),
            node_permission: r.node_permission,
            limits: r.limits.into(),
        }
    }
}

/// The connections of a call with `network: { allow }` through the proxy.
#[napi(object)]
pub struct NetworkCounts {
    /// Requests and tunnels the allowlist let through.
    pub allowed: f64,
    /// Requests refused (not listed, a non-public address, malformed, over a cap).
    pub refused: f64,
}

impl From<workcell_core::proxy::Counts> for NetworkCounts {
    fn from(c: workcell_core::proxy::Counts) -> Self {
        NetworkCounts { allowed: c.allowed as f64, refused: c.refused as f64 }
    }
}

/// Checks the entries of `network: { allow }`; throws with a message for the host naming the
/// first bad one. Returns what each entry allows (presets expanded).
#[napi]
pub fn sandbox_network_allow(entries: Vec<String>) -> napi::Result<Vec<String>> {
    let allow = workcell_core::proxy::Allowlist::parse(&entries).map_err(crate::process_tool::host_error)?;
    Ok(allow.entries().iter().map(|e| e.text.clone()).collect())
}

/// The sandbox features of this system, as probed.
#[napi(object)]
pub struct SandboxFeatures {
    pub landlock_abi: Option<u32>,
    pub pid_namespace: bool,
    pub user_namespace: bool,
    pub proc_mount: bool,
}

/// Probes (once per process) what the sandbox can use here.
#[napi]
pub fn sandbox_features() -> SandboxFeatures {
    let f = Features::detect();
    SandboxFeatures { landlock_abi: f.landlock_abi, pid_namespace: f.pid_namespace, user_namespace: f.user_namespace, proc_mount: f.proc_mount }
}

/// Validates and canonicalizes a path for `readPaths` / `writePaths`; throws with a message for
/// the host when it is not absolute or does not exist.
#[napi]
pub fn sandbox_grant_path(path: String) -> napi::Result<String> {
    sandbox::canonical_grant(&path)
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(crate::process_tool::host_error)
}

/// Builds the core's sandbox options from the host's.
pub(crate) fn options(
    mode: Option<String>,
    network: Option<bool>,
    network_allow: Option<Vec<String>>,
    read_paths: Option<Vec<String>>,
    write_paths: Option<Vec<String>>,
    limit: Option<SandboxFeatureLimit>,
    limits: Option<SandboxLimits>,
) -> napi::Result<SandboxOptions> {
    let mode = match mode {
        None => Mode::Auto,
        Some(m) => Mode::parse(&m).ok_or_else(|| crate::process_tool::host_error(format_args!("unknown sandbox mode {m:?}")))?,
    };
    let no_cgroups = limit.as_ref().is_some_and(|l| l.cgroups == Some(false));
    let limit = limit.map(|l| Features {
        landlock_abi: Some(l.landlock_abi.unwrap_or(u32::MAX)),
        pid_namespace: l.pid_namespace.unwrap_or(true),
        user_namespace: l.user_namespace.unwrap_or(true),
        proc_mount: l.proc_mount.unwrap_or(true),
    });
    let network_allow = match network_allow {
        Some(entries) => Some(std::sync::Arc::new(
            workcell_core::proxy::Allowlist::parse(&entries).map_err(crate::process_tool::host_error)?,
        )),
        None => None,
    };
    Ok(SandboxOptions {
        mode,
        network: network.unwrap_or(false),
        network_allow,
        read_paths: read_paths.unwrap_or_default().into_iter().map(Into::into).collect(),
        write_paths: write_paths.unwrap_or_default().into_iter().map(Into::into).collect(),
        limit,
        limits: limits_of(limits)?,
        no_cgroups,
        ..SandboxOptions::default()
    })
}

/// Lets the processes connect to the ports of the process table registered as `group`.
pub(crate) fn connect_to_group(sandbox: &mut SandboxOptions, group: Option<u32>) {
    if let Some(set) = group.and_then(sandbox::ports::group) {
        sandbox.connect_ports = set;
    }
}

pub(crate) fn node_permission(support: Option<NodePermissionSupport>) -> Option<NodePermission> {
    support.map(|s| NodePermission { flag: s.flag, allow_addons: s.allow_addons, allow_wasi: s.allow_wasi })
}
