//! The sandbox's probe and the host-side checks of its options, as JS functions (the options
//! and the report themselves are the core's, passed through by serde).

use napi_derive::napi;
use workcell_core::api::sandbox::{self, Features, Limits, SandboxOptions};

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

/// `limits` as the core reads it (`LimitsOption`): the defaults filled in, the ranges checked.
fn limits_of(l: Option<SandboxLimits>) -> napi::Result<Limits> {
    let Some(l) = l else { return Ok(Limits::default()) };
    let mut m = serde_json::Map::new();
    for (k, v) in [("processes", l.processes), ("memoryBytes", l.memory_bytes), ("fileBytes", l.file_bytes)] {
        if let Some(v) = v {
            m.insert(k.into(), serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into));
        }
    }
    let l: sandbox::LimitsOption = serde_json::from_value(m.into()).map_err(|e| crate::process_tool::host_error(format_args!("limits: {e}")))?;
    l.limits().map_err(crate::process_tool::host_error)
}

/// The caps `limits` asks for, with the defaults filled in (processes 512, half the physical
/// memory rounded down to a whole MiB, 4 GiB per file); throws with a message for the host when
/// one is unusable.
#[napi]
pub fn sandbox_limits(limits: Option<SandboxLimits>) -> napi::Result<SandboxLimits> {
    let l = limits_of(limits)?;
    Ok(SandboxLimits { processes: Some(l.processes as f64), memory_bytes: Some(l.memory_bytes as f64), file_bytes: Some(l.file_bytes as f64) })
}

/// Checks the entries of `network: { allow }`; throws with a message for the host naming the
/// first bad one. Returns what each entry allows (presets expanded).
#[napi]
pub fn sandbox_network_allow(entries: Vec<String>) -> napi::Result<Vec<String>> {
    let allow = workcell_core::api::sandbox::Allowlist::parse(&entries).map_err(crate::process_tool::host_error)?;
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

/// Builds the core's sandbox options from the host's (the core's JSON form, `HostSandbox`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn options(
    mode: Option<String>,
    network: Option<bool>,
    network_allow: Option<Vec<String>>,
    read_paths: Option<Vec<String>>,
    write_paths: Option<Vec<String>>,
    limit: Option<SandboxFeatureLimit>,
    limits: Option<SandboxLimits>,
    protect: Option<Vec<String>>,
) -> napi::Result<SandboxOptions> {
    let mut m = serde_json::Map::new();
    let mut put = |k: &str, v: Option<serde_json::Value>| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    put("sandbox", mode.map(Into::into));
    put("network", network.map(Into::into));
    put("networkAllow", network_allow.map(Into::into));
    put("readPaths", read_paths.map(Into::into));
    put("writePaths", write_paths.map(Into::into));
    put("protect", protect.map(Into::into));
    put(
        "sandboxLimit",
        limit.map(|l| {
            let mut f = serde_json::Map::new();
            for (k, v) in [("pidNamespace", l.pid_namespace), ("userNamespace", l.user_namespace), ("procMount", l.proc_mount), ("cgroups", l.cgroups)] {
                if let Some(v) = v {
                    f.insert(k.into(), v.into());
                }
            }
            if let Some(abi) = l.landlock_abi {
                f.insert("landlockAbi".into(), abi.into());
            }
            f.into()
        }),
    );
    let mut opts: SandboxOptions = crate::process_tool::host_options(m.into(), |_: &SandboxOptions| Ok(()))?;
    opts.limits = limits_of(limits)?;
    Ok(opts)
}

/// An approved grant's paths, opened once when the person said yes (no symlink followed in any
/// component) and held until released (or collected): the sandbox's rules are built from
/// these descriptors, named by `id` in the options' `grantHandles` (or a start's `grants.handles`).
#[napi]
pub struct GrantPin {
    id: u32,
}

#[napi]
impl GrantPin {
    #[napi(getter)]
    pub fn id(&self) -> u32 {
        self.id
    }

    /// Lets go of the descriptors (calls already started keep theirs).
    #[napi]
    pub fn release(&self) {
        sandbox::grants::release(self.id as u64);
    }
}

impl Drop for GrantPin {
    fn drop(&mut self) {
        sandbox::grants::release(self.id as u64);
    }
}

/// Pins an approved grant's paths (canonical, absolute); throws a tool error (its JSON as the
/// message) with `TARGET_CHANGED` when one is no longer what was approved.
#[napi]
pub fn sandbox_pin_grants(write_paths: Vec<String>, read_paths: Vec<String>) -> napi::Result<GrantPin> {
    let p = sandbox::grants::pin(&write_paths, &read_paths).map_err(crate::convert::throw)?;
    let id = u32::try_from(p.id).map_err(|_| crate::process_tool::host_error("too many grants pinned"))?;
    Ok(GrantPin { id })
}
