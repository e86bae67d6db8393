//! OS confinement for every process a tool starts.
//!
//! The path checks keep the tools' own file operations inside the workspace; a child process
//! runs as the user and could otherwise read `~/.ssh`, write anywhere, connect anywhere and
//! leave processes behind. These layers close that, each applied where the system offers it and
//! reported in every result ([`Report`]):
//!
//! | layer | module | stops |
//! |---|---|---|
//! | Landlock (Linux 5.13+) | [`landlock`] | file access outside the workspace, the system directories and the tool's grants (its program's directory, run_command's and run_tests' scratch HOME/TMPDIR, run_tests' toolchain: [`crate::testrun::confine`]); TCP connect/bind (ABI 4+); signals and abstract UNIX sockets leaving the sandbox (ABI 6+); `ptrace` attach to outside processes; other processes' `/proc` entries |
//! | PID namespace in user namespaces | [`pidns`], [`launch`] | any process outliving the call (`setsid`, double fork); seeing, signalling or reading the memory and environment of the host's processes (a nested user namespace and a `hidepid` `/proc`) |
//! | Node.js permission model (node_process) | [`node_permission`] | the script's own `fs` calls outside the workspace, on any OS |
//! | read-only mounts in the mount namespace | [`protect`] | writing the protected paths inside the workspace (`.git` at any depth, and creating the top-level `.git`), unless an approved grant names them |
//!
//! Grants approved by a person are pinned when approved ([`grants::pin`]): the Landlock rules are
//! made from the descriptors opened then, never from the path again.
//!
//! Without a PID namespace the process machinery still kills the call's process group and
//! whatever holds its output pipes ([`Processes::Group`]).
//!
//! The mode ([`Mode`]): `auto` applies what the kernel offers, `required` refuses to run
//! (`SANDBOX_UNAVAILABLE`, before any effect) unless the file system can be confined, the
//! network blocked (or allowed by the host) and the processes contained in a namespace; `off`
//! applies nothing. What the kernel offers is probed once per process ([`Features::detect`]);
//! [`SandboxOptions::limit`] simulates a kernel with less.
//!
//! # Applying the sandbox to a tool's `SpawnSpec`
//!
//! ```no_run
//! # use workcell_core::{sandbox, process::SpawnSpec, Workspace};
//! # fn f(ws: &Workspace, opts: &sandbox::SandboxOptions) -> workcell_core::Result<()> {
//! let program = std::path::Path::new("/usr/bin/git");
//! // 1. Before any effect: decide, build the Landlock ruleset (refuses in "required" mode).
//! let confinement = sandbox::prepare(opts, ws, &sandbox::paths::program_grants(program))?;
//! // 2. Describe the child as usual (no pre-exec steps), then apply the confinement: it sets the
//! //    spec's launcher, the sandbox's clone-based spawn.
//! let mut spec = SpawnSpec::new(program, ws.canonical()).arg("status");
//! let report = confinement.apply(&mut spec);
//! // 3. Run it with process::run as usual; put `report.to_json()` in the result as `sandbox`.
//! # Ok(()) }
//! ```
//!
//! The child is started by [`launch`], a clone-based spawn that shares the host's memory instead
//! of copying it; everything it runs before exec is raw system calls on data prepared here in
//! the parent.

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod cgroup;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod exec;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod landlock;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod launch;
pub mod grants;
pub mod resources;
pub mod node_permission;
pub mod paths;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod netns;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod overlay;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod pidns;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub(crate) mod sys;
pub mod ports;
pub mod probe;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod protect;
pub mod report;

pub use grants::{GrantRequest, Grants};
pub use node_permission::NodePermission;
pub use paths::{canonical_grant, program_grants, Access, Grant};
pub use probe::Features;
pub use resources::{By, Enforced, Limits, LimitsReport};
pub use report::{Filesystem, Network, Processes, Protection, Report};

use std::path::PathBuf;

use crate::error::{Code, Error, Result};
use crate::process::SpawnSpec;
use crate::root::Workspace;

/// How much confinement a tool asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// Apply what this system offers and report it.
    #[default]
    Auto,
    /// Refuse to run unless files, network and processes can all be confined.
    Required,
    /// Apply nothing.
    Off,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Auto => "auto",
            Mode::Required => "required",
            Mode::Off => "off",
        }
    }

    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "auto" => Some(Mode::Auto),
            "required" => Some(Mode::Required),
            "off" => Some(Mode::Off),
            _ => None,
        }
    }
}

/// The host's sandbox configuration for a tool. Its JSON form ([`HostSandbox`]):
/// `{ sandbox?: mode, network?, networkAllow?, readPaths?, writePaths?, sandboxLimit?, limits?,
/// portGroup? }`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(try_from = "HostSandbox")]
pub struct SandboxOptions {
    pub mode: Mode,
    /// Let the child use the network (TCP is blocked otherwise, where Landlock can).
    pub network: bool,
    /// `network: { allow }`: a network namespace of the child's own whose only way out is the
    /// filtering proxy ([`crate::proxy`]), which lets through what this allows.
    pub network_allow: Option<std::sync::Arc<crate::proxy::Allowlist>>,
    /// More directories or files the child may read (absolute; canonical: see
    /// [`canonical_grant`]).
    pub read_paths: Vec<PathBuf>,
    /// More directories or files the child may read and write.
    pub write_paths: Vec<PathBuf>,
    /// Simulate a system with at most these features (tests, diagnostics).
    pub limit: Option<Features>,
    /// TCP ports the child may bind (a process session's `ports`) while the network is
    /// blocked; it may connect to them too.
    pub bind_ports: Vec<u16>,
    /// TCP ports the child may connect to while the network is blocked: those the tool set's
    /// running sessions opened ([`ports`]).
    pub connect_ports: ports::SharedPorts,
    /// The resource caps of the tree ([`limits`]).
    pub limits: Limits,
    /// Simulate a system where the host can create no cgroup (tests, diagnostics).
    pub no_cgroups: bool,
    /// Grants pinned when a person approved them ([`grants::pin`]): the sandbox's rules are
    /// built from their open descriptors (JSON: `grantHandles`, their ids).
    pub pinned: Vec<std::sync::Arc<grants::Pinned>>,
    /// The globs read-only for the processes (contract §21; JSON `protect`, default
    /// [`crate::guard::DEFAULT_PROTECT`]; [`protect`]).
    pub protect: Vec<String>,
    /// A staged run (contract §20; set by the tool, never from JSON): refused with
    /// `SANDBOX_UNAVAILABLE` where the sandbox cannot make one.
    pub stage: bool,
}

impl<'de> serde::Deserialize<'de> for Mode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        crate::json::named(d, "sandbox mode", Mode::parse)
    }
}

/// `sandboxLimit`: a system with fewer features than the probe found (tests, diagnostics);
/// each given value can only take away.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FeatureLimit {
    /// The highest Landlock ABI to use; 0 for none.
    pub landlock_abi: Option<u32>,
    pub pid_namespace: Option<bool>,
    pub user_namespace: Option<bool>,
    pub proc_mount: Option<bool>,
    /// `false`: a system where the host can create no cgroup.
    pub cgroups: Option<bool>,
}

/// `limits`: the caps of the tree; a missing one takes its default.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsOption {
    #[serde(default, deserialize_with = "whole_opt")]
    pub processes: Option<u64>,
    #[serde(default, deserialize_with = "whole_opt")]
    pub memory_bytes: Option<u64>,
    #[serde(default, deserialize_with = "whole_opt")]
    pub file_bytes: Option<u64>,
}

fn whole_opt<'de, D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Option<u64>, D::Error> {
    crate::json::whole(d).map(Some)
}

impl LimitsOption {
    /// The caps asked for, the defaults filled in, checked.
    pub fn limits(&self) -> std::result::Result<Limits, String> {
        let d = Limits::default();
        let limits = Limits {
            processes: self.processes.unwrap_or(d.processes),
            memory_bytes: self.memory_bytes.unwrap_or(d.memory_bytes),
            file_bytes: self.file_bytes.unwrap_or(d.file_bytes),
        };
        limits.validate()?;
        Ok(limits)
    }
}

/// The JSON form of [`SandboxOptions`].
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostSandbox {
    #[serde(default, rename = "sandbox")]
    mode: Mode,
    #[serde(default)]
    network: bool,
    network_allow: Option<Vec<String>>,
    #[serde(default)]
    read_paths: Vec<PathBuf>,
    #[serde(default)]
    write_paths: Vec<PathBuf>,
    sandbox_limit: Option<FeatureLimit>,
    limits: Option<LimitsOption>,
    /// The process table whose sessions' ports the processes may connect to.
    port_group: Option<u32>,
    /// Pinned grants by id ([`grants::pin`]).
    #[serde(default)]
    grant_handles: Vec<u64>,
    /// Read-only globs for the processes (absent: the write guard's default).
    protect: Option<Vec<String>>,
}

impl TryFrom<HostSandbox> for SandboxOptions {
    type Error = String;

    fn try_from(h: HostSandbox) -> std::result::Result<Self, String> {
        let no_cgroups = h.sandbox_limit.as_ref().is_some_and(|l| l.cgroups == Some(false));
        let limit = h.sandbox_limit.map(|l| Features {
            landlock_abi: Some(l.landlock_abi.unwrap_or(u32::MAX)),
            pid_namespace: l.pid_namespace.unwrap_or(true),
            user_namespace: l.user_namespace.unwrap_or(true),
            proc_mount: l.proc_mount.unwrap_or(true),
        });
        let network_allow = match h.network_allow {
            Some(entries) => Some(std::sync::Arc::new(crate::proxy::Allowlist::parse(&entries)?)),
            None => None,
        };
        let limits = match h.limits {
            Some(l) => l.limits()?,
            None => Limits::default(),
        };
        let mut opts = SandboxOptions {
            mode: h.mode,
            network: h.network,
            network_allow,
            read_paths: h.read_paths,
            write_paths: h.write_paths,
            limit,
            limits,
            no_cgroups,
            pinned: grants::pinned_all(&h.grant_handles)?,
            protect: h.protect.unwrap_or_else(|| crate::guard::DEFAULT_PROTECT.iter().map(|s| s.to_string()).collect()),
            ..SandboxOptions::default()
        };
        if let Some(set) = h.port_group.and_then(ports::group) {
            opts.connect_ports = set;
        }
        Ok(opts)
    }
}

impl SandboxOptions {
    /// Checks the host's configuration; a message for the host when it is unusable.
    pub fn validate(&self) -> std::result::Result<(), String> {
        for p in self.read_paths.iter().chain(&self.write_paths) {
            if !p.is_absolute() || p.as_os_str().as_encoded_bytes().contains(&0) {
                return Err(format!("sandbox path {} must be absolute, without NUL", p.display()));
            }
        }
        crate::guard::Guard::new(&self.protect, false).map_err(|e| format!("protect: {e}"))?;
        if self.network_allow.is_some() && self.network {
            return Err("network is either true or { allow: [...] }, not both".into());
        }
        if self.network_allow.is_some() && self.mode == Mode::Off {
            return Err("network.allow needs the sandbox: with sandbox \"off\" nothing could enforce it".into());
        }
        self.limits.validate()
    }

    /// The features this configuration gets on this system.
    pub fn features(&self) -> Features {
        let detected = if self.mode == Mode::Off { Features::NONE } else { Features::detect() };
        match &self.limit {
            Some(limit) => detected.limited(limit),
            None => detected,
        }
    }
}

/// The confinement of one child, decided and prepared in the parent: apply it to the spawn.
#[derive(Debug)]
pub struct Confinement {
    report: Report,
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    ruleset: Option<std::os::fd::OwnedFd>,
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    namespaces: Option<pidns::NsPlan>,
    /// Whether the child is confined at all (not `off`): then it gets `oom_score_adj` 1000.
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    confined: bool,
    /// `network: { allow }`: the namespace's plan and the call's proxy session.
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    net: Option<netns::Net>,
    /// Sessions' `ports` in use: the tool set's network namespace, which the child joins.
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    shared_net: Option<std::sync::Arc<netns::Keeper>>,
    session: Option<crate::proxy::Session>,
    /// The call's cgroups, if any (removed when the call's run ends).
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    cgroups: Option<cgroup::Leaf>,
    /// The read-only mounts of the protected paths, if any.
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    protect: Option<protect::Protect>,
    /// A staged run's overlay ([`overlay`]).
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    stage: Option<std::sync::Arc<overlay::Layer>>,
}

/// What `features` allows under `opts`: the report of a run.
pub fn plan(opts: &SandboxOptions, features: &Features) -> Report {
    if opts.mode == Mode::Off {
        return Report { limits: LimitsReport::none(&opts.limits), ..Report::OFF };
    }
    let filesystem = if features.landlock_abi.is_some() { Filesystem::Confined } else { Filesystem::Open };
    let network = if opts.network_allow.is_some() {
        Network::Filtered
    } else if opts.network {
        Network::Allowed
    } else if features.landlock_abi.is_some_and(|abi| abi >= 4) {
        Network::Blocked
    } else {
        Network::Open
    };
    let processes = if features.pid_namespace { Processes::Namespace } else { Processes::Group };
    let limits = resources::decide(&opts.limits, &mechanisms(opts, features));
    let protect = if opts.protect.is_empty() { Protection::None } else { Protection::ReadOnly };
    Report { landlock_abi: features.landlock_abi, filesystem, network, processes, node_permission: false, limits, protect }
}

/// What this system offers for the limits of a tree confined with `features`.
fn mechanisms(opts: &SandboxOptions, features: &Features) -> resources::Mechanisms {
    // SAFETY: a plain getter.
    let root = unsafe { libc::geteuid() } == 0;
    let user_namespace = features.pid_namespace && features.user_namespace;
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    if !opts.no_cgroups {
        let s = cgroup::Support::detect();
        return resources::Mechanisms { user_namespace, root, pids: s.pids.as_ref().map(|p| p.version), memory: s.memory.as_ref().map(|p| p.version) };
    }
    let _ = opts;
    resources::Mechanisms { user_namespace, root, pids: None, memory: None }
}

/// What `required` mode lacks here, by name.
fn missing(report: &Report) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if report.filesystem == Filesystem::Open {
        missing.push("landlock");
    }
    if report.network == Network::Open {
        missing.push("landlock-network");
    }
    if report.processes == Processes::Group {
        missing.push("pid-namespace");
    }
    missing.extend(report.limits.missing());
    missing
}

fn unavailable(missing: &[&str], features: &Features) -> Error {
    let what: Vec<&str> = missing
        .iter()
        .map(|m| match *m {
            "landlock" => "Landlock, to confine file access (Linux 5.13+)",
            "landlock-network" => "Landlock ABI 4, to block the network (Linux 6.7+)",
            "limit-processes" => "a process cap (RLIMIT_NPROC in a user namespace, which is not enforced for uid 0, or a pids cgroup the host may create)",
            "limit-memory" => "a memory cap (a memory cgroup the host may create, or RLIMIT_DATA)",
            "limit-file-size" => "a file size cap (RLIMIT_FSIZE)",
            _ => "PID and user namespaces, to contain the processes",
        })
        .collect();
    Error::new(Code::SandboxUnavailable, format!("the required sandbox is not available on this system: it lacks {}", what.join("; ")))
        .with_hint("this tool cannot run here because the user requires a sandbox the system cannot provide; tell the user what is missing (see details) and do the work with the file tools instead")
        .with_details(serde_json::json!({
            "missing": missing,
            "landlockAbi": features.landlock_abi,
            "pidNamespace": features.pid_namespace,
            "userNamespace": features.user_namespace,
        }))
}

/// `SANDBOX_UNAVAILABLE` for a staged run where the sandbox cannot make one (`missing`: the
/// name in `details.missing`; the command never runs).
pub fn stage_refused(missing: &str, what: &str) -> Error {
    Error::new(Code::SandboxUnavailable, format!("the staged run could not be made: it needs {what}"))
        .with_hint("the command did not run (a staged run never runs unstaged); tell the user what is missing (see details), or run it without stage if the host allows unstaged runs")
        .with_details(serde_json::json!({ "missing": [missing] }))
}

/// A staged run needs the sandbox's user, PID and mount namespaces: `SANDBOX_UNAVAILABLE`
/// otherwise (never run unstaged).
fn stage_unavailable(opts: &SandboxOptions, features: &Features) -> Result<()> {
    if !opts.stage {
        return Ok(());
    }
    if opts.mode == Mode::Off {
        return Err(stage_refused("sandbox", "the sandbox, which the host turned off (sandbox: \"off\")"));
    }
    if !(features.pid_namespace && features.user_namespace) {
        return Err(stage_refused("mount-namespace", "user, PID and mount namespaces, which this system (or the host's sandboxLimit) does not give"));
    }
    Ok(())
}

/// Whether the allowlist of `network: { allow }` can be enforced with `features`: a network
/// namespace, made with the user and PID namespaces.
fn filter_available(features: &Features) -> bool {
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        features.pid_namespace && features.user_namespace && probe::network_namespace()
    }
    #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        let _ = features;
        false
    }
}

/// `network: { allow }` where no network namespace can be made: refused in every mode, never
/// run with an open network.
fn filter_unavailable(opts: &SandboxOptions, features: &Features) -> Result<()> {
    if opts.network_allow.is_none() || filter_available(features) {
        return Ok(());
    }
    Err(Error::new(
        Code::SandboxUnavailable,
        "the network allowlist cannot be enforced on this system: it lacks network namespaces (with user and PID namespaces), and the processes are never run with an open network instead",
    )
    .with_hint("this tool cannot run here because the user allows only some hosts and the system cannot filter the network; tell the user, and do the work with the file tools instead")
    .with_details(serde_json::json!({
        "missing": ["network-namespace"],
        "pidNamespace": features.pid_namespace,
        "userNamespace": features.user_namespace,
    })))
}

/// Protected globs where the processes get no mount namespace to make them read-only in:
/// refused in every mode but `off`, unless the host protects nothing for processes.
fn protect_unavailable(opts: &SandboxOptions, features: &Features) -> Result<()> {
    if opts.protect.is_empty() || (features.pid_namespace && features.user_namespace) {
        return Ok(());
    }
    Err(Error::new(
        Code::SandboxUnavailable,
        "the protected paths (such as .git) cannot be made read-only for commands on this system: it lacks user and PID namespaces (with a mount namespace)",
    )
    .with_hint("this tool cannot run here because the user protects paths the system cannot protect from commands; tell the user (the host can set protect: [] for the process tools to run without it), and do the work with the file tools instead")
    .with_details(serde_json::json!({
        "missing": ["mount-namespace"],
        "pidNamespace": features.pid_namespace,
        "userNamespace": features.user_namespace,
    })))
}

/// In `required` mode, refuses with `SANDBOX_UNAVAILABLE` when a layer is missing here (what
/// [`prepare`] also checks), for a tool that has an effect to avoid between the two; in every
/// mode, when a network allowlist cannot be enforced.
pub fn require(opts: &SandboxOptions) -> Result<()> {
    if opts.mode == Mode::Off {
        return Ok(());
    }
    let features = opts.features();
    filter_unavailable(opts, &features)?;
    if opts.mode == Mode::Required {
        let missing = missing(&plan(opts, &features));
        if !missing.is_empty() {
            return Err(unavailable(&missing, &features));
        }
    }
    protect_unavailable(opts, &features)
}

/// Decides and prepares the confinement of one child of `ws`. `extra` are grants of the tool
/// (its program's directories, a scratch directory...). In `required` mode, refuses with
/// `SANDBOX_UNAVAILABLE` when a layer is missing. No effect on the workspace.
pub fn prepare(opts: &SandboxOptions, ws: &Workspace, extra: &[Grant]) -> Result<Confinement> {
    opts.validate().map_err(crate::error::misconfigured)?;
    let features = opts.features();
    let report = plan(opts, &features);
    if opts.mode != Mode::Off {
        filter_unavailable(opts, &features)?;
    }
    if opts.mode == Mode::Required {
        let missing = missing(&report);
        if !missing.is_empty() {
            return Err(unavailable(&missing, &features));
        }
    }
    if opts.mode != Mode::Off {
        protect_unavailable(opts, &features)?;
    }
    stage_unavailable(opts, &features)?;
    build(opts, ws, extra, &features, report)
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn build(opts: &SandboxOptions, ws: &Workspace, extra: &[Grant], features: &Features, report: Report) -> Result<Confinement> {
    use std::os::fd::AsFd as _;
    if opts.mode == Mode::Off {
        return Ok(Confinement { report, ruleset: None, namespaces: None, confined: false, cgroups: None, net: None, shared_net: None, session: None, protect: None, stage: None });
    }
    let mut report = report;
    let cgroups = make_cgroups(opts, &mut report)?;
    let namespaces = (features.pid_namespace && features.user_namespace).then(|| pidns::NsPlan::new(features.proc_mount));
    let mut shared_net = None;
    let ruleset = match features.landlock_abi {
        Some(abi) => {
            let mut grants = paths::system_grants();
            grants.extend(extra.iter().cloned());
            grants.extend(opts.read_paths.iter().map(|p| Grant { path: p.clone(), access: Access::ReadExecute, no_follow: true }));
            grants.extend(opts.write_paths.iter().map(|p| Grant { path: p.clone(), access: Access::ReadWrite, no_follow: true }));
            let filtered = opts.network_allow.is_some();
            let mut connect = opts.connect_ports.current();
            connect.extend(&opts.bind_ports);
            let block = filtered || !opts.network;
            if block && abi >= 4 && !filtered && !connect.is_empty() {
                // A port rule names no address: only in the tool set's own namespace does it
                // reach the tool set's listeners and nothing else ([`ports`]).
                if namespaces.is_some() {
                    shared_net = Some(opts.connect_ports.namespace().map_err(|e| {
                        Error::new(Code::IoError, format!("could not prepare the tool set's network namespace: {e}"))
                            .with_hint("try the call again; if it keeps failing, report it to the user")
                    })?);
                } else {
                    connect.clear();
                }
            }
            if filtered {
                connect.push(crate::proxy::PROXY_PORT);
            }
            let net = landlock::NetRules { block, bind: &opts.bind_ports, connect: &connect };
            let pinned: Vec<(std::os::fd::BorrowedFd<'_>, Access)> = opts
                .pinned
                .iter()
                .flat_map(|p| p.paths.iter())
                .map(|p| (p.fd.as_fd(), if p.write { Access::ReadWrite } else { Access::ReadExecute }))
                .collect();
            let fd = landlock::build(abi, ws.dir().as_fd(), &grants, &pinned, &net).map_err(|e| {
                Error::new(Code::IoError, format!("could not prepare the sandbox: {e}"))
                    .with_hint("try the call again; if it keeps failing, report it to the user")
            })?;
            Some(fd)
        }
        None => None,
    };
    let protect = match (&namespaces, opts.protect.is_empty()) {
        (Some(_), false) => {
            let guard = crate::guard::Guard::new(&opts.protect, false).map_err(crate::error::misconfigured)?;
            let p = protect::plan(ws, &guard, &writable_ids(opts)).map_err(|e| {
                Error::new(Code::IoError, format!("could not find the protected paths: {e}"))
                    .with_hint("try the call again; if it keeps failing, report it to the user")
            })?;
            if !p.complete {
                report.protect = Protection::Partial;
            }
            Some(p)
        }
        _ => None,
    };
    let (net, session) = match &opts.network_allow {
        Some(allow) => {
            let session = crate::proxy::Session::new(allow.clone(), opts.connect_ports.proxy_share());
            let net = netns::Net::new(session.server()).map_err(|e| {
                Error::new(Code::IoError, format!("could not prepare the network namespace: {e}"))
                    .with_hint("try the call again; if it keeps failing, report it to the user")
            })?;
            (Some(net), Some(session))
        }
        None => (None, None),
    };
    Ok(Confinement { report, ruleset, namespaces, confined: true, cgroups, net, shared_net, session, protect, stage: None })
}

/// The files the call's write grants and the host's `writePaths` name (device, inode): a
/// protected match among them stays writable.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn writable_ids(opts: &SandboxOptions) -> Vec<(u64, u64)> {
    let id = |fd: &std::os::fd::OwnedFd| rustix::fs::fstat(fd).ok().map(|st| (st.st_dev as u64, st.st_ino as u64));
    let pinned = opts.pinned.iter().flat_map(|p| p.paths.iter()).filter(|p| p.write).filter_map(|p| id(&p.fd));
    let host = opts.write_paths.iter().filter_map(|p| grants::open_no_symlinks(p).ok()).filter_map(|fd| id(&fd));
    pinned.chain(host).collect()
}

/// The call's cgroups for the limits `report` enforces by cgroup. Where one cannot be made
/// after all (the probe found it possible), `auto` falls back as [`resources::decide`] would
/// without it and `required` refuses if that leaves a limit unenforced.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn make_cgroups(opts: &SandboxOptions, report: &mut Report) -> Result<Option<cgroup::Leaf>> {
    let by_cgroup = |b: By| matches!(b, By::CgroupV1 | By::CgroupV2);
    let req = cgroup::Request {
        memory_bytes: by_cgroup(report.limits.memory_bytes.by).then_some(report.limits.memory_bytes.max),
        processes: by_cgroup(report.limits.processes.by).then_some(report.limits.processes.max),
    };
    if req.memory_bytes.is_none() && req.processes.is_none() {
        return Ok(None);
    }
    match cgroup::Leaf::create(cgroup::Support::detect(), &req) {
        Ok(leaf) => Ok(Some(leaf)),
        Err(_) => {
            let features = opts.features();
            report.limits = resources::decide(&opts.limits, &mechanisms(&SandboxOptions { no_cgroups: true, ..opts.clone() }, &features));
            let missing = report.limits.missing();
            if opts.mode == Mode::Required && !missing.is_empty() {
                return Err(unavailable(&missing, &features));
            }
            Ok(None)
        }
    }
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
fn build(_opts: &SandboxOptions, _ws: &Workspace, _extra: &[Grant], _features: &Features, report: Report) -> Result<Confinement> {
    Ok(Confinement { report, session: None })
}

impl Confinement {
    /// What will be enforced.
    pub fn report(&self) -> Report {
        self.report
    }

    /// Makes the run a staged one: its writes to the workspace land in `layer`'s overlay
    /// (the options must have had `stage` set, so [`prepare`] checked the namespaces).
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub fn with_stage(mut self, layer: Option<std::sync::Arc<overlay::Layer>>) -> Self {
        if let Some(l) = &layer {
            l.set_landlock(if self.ruleset.is_some() { self.report.landlock_abi } else { None });
        }
        self.stage = layer;
        self
    }

    /// The call's proxy session with `network: { allow }`: its counts go in the result
    /// (`network: { allowed, refused }`). It serves until the call's processes are gone.
    pub fn network(&self) -> Option<crate::proxy::Session> {
        self.session.clone()
    }

    /// Sets the spec's launcher and returns the report. With `network: { allow }`, also the
    /// proxy variables of the child's environment ([`crate::proxy::child_environment`]). The child is then started by the sandbox's clone-based spawn
    /// ([`launch`]): the spec must have no pre-exec steps (the spawn refuses them).
    pub fn apply(self, spec: &mut SpawnSpec) -> Report {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            let Confinement { report, ruleset, namespaces, confined, cgroups, net, shared_net, session: _, protect, stage } = self;
            if net.is_some() {
                for (name, value) in crate::proxy::child_environment() {
                    spec.env.retain(|(n, _)| n.as_os_str() != name);
                    spec.env.push((name.into(), value.into()));
                }
            }
            // Every confined process is the OOM killer's first choice, never the host.
            let oom = confined;
            // The sandbox's spawn, `off` included: it is as cheap as `posix_spawn` and gives the
            // program only its stdio, never another descriptor of the host. A spec with
            // pre-exec steps and nothing to confine keeps the process machinery's own spawn
            // (which closes the host's descriptors too).
            if ruleset.is_some() || namespaces.is_some() || spec.pre_exec_len() == 0 {
                // SAFETY: the launcher starts the child as `Launcher::launch` says.
                let limits = confined.then(|| resources::ChildLimits::new(&report.limits, &cgroups.as_ref().map(cgroup::Leaf::procs).unwrap_or_default()));
                unsafe { spec.set_launcher(Box::new(launch::Launch::new(ruleset, namespaces, oom).with_limits(limits, cgroups).with_net(net).with_shared_net(shared_net).with_protect(protect).with_stage(stage))) };
                report
            } else {
                // The process machinery's spawn applies no limit.
                Report { limits: LimitsReport::none(&report.limits.configured()), ..report }
            }
        }
        #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
        {
            let _ = spec;
            self.report
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FULL: Features = Features { landlock_abi: Some(7), pid_namespace: true, user_namespace: true, proc_mount: true };

    fn opts(mode: Mode, network: bool) -> SandboxOptions {
        SandboxOptions { mode, network, ..SandboxOptions::default() }
    }

    #[test]
    fn plans_follow_the_features() {
        let r = plan(&opts(Mode::Auto, false), &FULL);
        assert_eq!(r, Report { landlock_abi: Some(7), filesystem: Filesystem::Confined, network: Network::Blocked, processes: Processes::Namespace, node_permission: false, limits: r.limits, protect: Protection::None });
        assert_eq!(r.limits.file_bytes, Enforced { max: resources::DEFAULT_FILE_BYTES, by: By::Rlimit });
        assert_eq!(plan(&opts(Mode::Auto, true), &FULL).network, Network::Allowed);
        let v3 = Features { landlock_abi: Some(3), ..FULL };
        assert_eq!(plan(&opts(Mode::Auto, false), &v3).network, Network::Open);
        let none = plan(&opts(Mode::Auto, false), &Features::NONE);
        assert_eq!((none.filesystem, none.network, none.processes, none.landlock_abi), (Filesystem::Open, Network::Open, Processes::Group, None));
        let off = plan(&opts(Mode::Off, false), &FULL);
        assert_eq!(off, Report { limits: LimitsReport::none(&Limits::default()), ..Report::OFF });
    }

    #[test]
    fn required_names_what_is_missing() {
        assert!(missing(&plan(&opts(Mode::Required, false), &FULL)).is_empty());
        // (Without a namespace, the process cap also needs a pids cgroup.)
        assert!(missing(&plan(&opts(Mode::Required, false), &Features::NONE)).starts_with(&["landlock", "landlock-network", "pid-namespace"]));
        // An allowed network needs no Landlock network support.
        let v3 = Features { landlock_abi: Some(3), ..FULL };
        assert_eq!(missing(&plan(&opts(Mode::Required, false), &v3)), ["landlock-network"]);
        assert!(missing(&plan(&opts(Mode::Required, true), &v3)).is_empty());
    }

    #[test]
    fn required_refuses_before_any_effect_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        let o = SandboxOptions { mode: Mode::Required, limit: Some(Features { landlock_abi: None, ..FULL }), ..SandboxOptions::default() };
        let err = prepare(&o, &ws, &[]).unwrap_err();
        assert_eq!(err.code, Code::SandboxUnavailable);
        assert!(err.hint.is_some());
        assert_eq!(err.details.as_ref().unwrap()["missing"][0], "landlock");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // auto runs, and says the file system is open.
        let o = SandboxOptions { mode: Mode::Auto, ..o };
        assert_eq!(prepare(&o, &ws, &[]).unwrap().report().filesystem, Filesystem::Open);
    }

    #[test]
    fn an_allowlist_is_filtered_and_never_runs_without_a_namespace() {
        let allow = Some(std::sync::Arc::new(crate::proxy::Allowlist::parse(&["localhost:1"]).unwrap()));
        let o = SandboxOptions { network_allow: allow.clone(), ..SandboxOptions::default() };
        assert_eq!(plan(&o, &FULL).network, Network::Filtered);
        assert!(missing(&plan(&o, &Features { landlock_abi: Some(3), ..FULL })).is_empty());
        // No namespaces: refused in auto mode too, before any effect.
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::open(dir.path()).unwrap();
        for mode in [Mode::Auto, Mode::Required] {
            let o = SandboxOptions { mode, network_allow: allow.clone(), limit: Some(Features { pid_namespace: false, ..FULL }), ..SandboxOptions::default() };
            let err = prepare(&o, &ws, &[]).unwrap_err();
            assert_eq!(err.code, Code::SandboxUnavailable);
            assert_eq!(err.details.as_ref().unwrap()["missing"][0], "network-namespace");
            assert_eq!(require(&o).unwrap_err().code, Code::SandboxUnavailable);
        }
        // An allowlist with the sandbox off, or with network: true, is the host's mistake.
        assert!(SandboxOptions { mode: Mode::Off, network_allow: allow.clone(), ..SandboxOptions::default() }.validate().is_err());
        assert!(SandboxOptions { network: true, network_allow: allow, ..SandboxOptions::default() }.validate().is_err());
    }

    #[test]
    fn relative_grants_are_refused() {
        let o = SandboxOptions { read_paths: vec!["rel".into()], ..SandboxOptions::default() };
        assert!(o.validate().is_err());
    }
}
