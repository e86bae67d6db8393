//! `node_process`: runs model-written JavaScript with the host's own Node.js, bounded in every
//! direction.
//!
//! The source goes to an exclusive `.workcell-node-<random>.cjs` in the workspace root (removed
//! in every outcome), behind a one-statement prelude ([`prelude`]) that takes the script's own
//! path out of `process.argv`, and runs as
//!
//! ```text
//! <execPath> [node flags] ./.workcell-node-<random>.cjs <arguments...>
//! ```
//!
//! with the root as working directory. Node stops parsing its own options at the script, so the
//! arguments arrive as they are (`--`, `-e`, empty strings), and inside the child
//! `process.argv.slice(1)` is exactly `arguments`. The process machinery of [`crate::process`]
//! does the rest: no shell, stdin from the null device, its own process group, an environment
//! built from nothing, output bounded per stream, a timeout and cancellation that kill the whole
//! group. The input limits are in [`limits`].

pub mod input;
pub mod prelude;

pub use input::{
    check_request, command_line_units, MAX_ARGUMENTS, MAX_ARGUMENTS_BYTES, MAX_ARGUMENT_BYTES, MAX_COMMAND_LINE_UNITS,
    MAX_SOURCE_BYTES,
};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{OpenOptions, OpenOptionsExt as _};

use crate::cancel::Cancel;
use crate::command::effective_timeout;
use crate::error::{Code, Error, Result};
use crate::host_config::{self, debug_options, misconfigured, EnvNames};
use crate::json;
use crate::process::{self, End, Head, HeadText, Reaper, RunOptions, SpawnSpec};
use crate::root::Workspace;
use crate::sandbox::{self, NodePermission, Report, SandboxOptions};

/// Default timeout, counted from the spawn.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
/// Default number of bytes kept of stdout and of stderr, each.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32_768;
pub use crate::host_config::MAX_OUTPUT_CAP;
/// PATH given to the child when the host has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Prefix of the temporary script's name.
pub const SCRIPT_PREFIX: &str = ".workcell-node-";
pub(crate) const RANDOM_HEX: usize = 16;

/// What the model sends.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeRequest {
    pub source: String,
    pub arguments: Vec<String>,
    /// Milliseconds; `None`: the host's default. Clamped to the host's maximum, as run_command's.
    pub timeout_ms: Option<f64>,
}

pub use crate::process::Prepare;

/// What the host configures. Its JSON form (what the binding passes): `execPath`, `timeoutMs`,
/// `maxTimeoutMs`, `maxStdoutBytes`, `maxStderrBytes`, `path`, `env: [{ name, value }]`, `reaper`, `sandbox`
/// (its own object), `nodePermission`.
#[derive(Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeOptions {
    /// The host's `process.execPath`.
    pub exec_path: PathBuf,
    #[serde(rename = "timeoutMs", default = "default_timeout", deserialize_with = "json::millis")]
    pub timeout: Duration,
    /// Largest timeout a request may ask for; longer requests are clamped to it. `None`:
    /// `timeout`, so by default a request can lower the timeout but not raise it.
    #[serde(rename = "maxTimeoutMs", default, deserialize_with = "json::millis_opt")]
    pub max_timeout: Option<Duration>,
    #[serde(default = "default_max_output", deserialize_with = "json::bytes")]
    pub max_stdout_bytes: usize,
    #[serde(default = "default_max_output", deserialize_with = "json::bytes")]
    pub max_stderr_bytes: usize,
    /// The PATH the child gets ([`DEFAULT_PATH`] when `None`).
    #[serde(default, deserialize_with = "json::os_string_opt")]
    pub path: Option<OsString>,
    /// Further variables, by name and value (a name given twice: the last wins; PATH may be
    /// overridden).
    #[serde(default, deserialize_with = "json::env")]
    pub env: Vec<(String, String)>,
    /// How exits are observed.
    #[serde(default)]
    pub reaper: Reaper,
    /// Called with the spec and the canonical root just before the spawn.
    #[serde(skip)]
    pub prepare: Option<Prepare>,
    /// OS confinement of the child ([`crate::sandbox`]); `auto` by default.
    pub sandbox: SandboxOptions,
    /// What the host's Node.js offers for its permission model (the second layer); `None`
    /// runs without it.
    #[serde(default)]
    pub node_permission: Option<NodePermission>,
    /// Staged runs ([`crate::stage`]).
    #[serde(default)]
    pub stage: crate::stage::StageOptions,
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}
fn default_max_output() -> usize {
    DEFAULT_MAX_OUTPUT_BYTES
}

debug_options!(NodeOptions {
    exec_path, timeout, max_timeout, max_stdout_bytes, max_stderr_bytes, env => EnvNames, reaper, sandbox, node_permission, stage,
});

impl NodeOptions {
    /// The contract's defaults for `exec_path`.
    pub fn new(exec_path: impl Into<PathBuf>) -> Self {
        NodeOptions {
            exec_path: exec_path.into(),
            timeout: DEFAULT_TIMEOUT,
            max_timeout: None,
            max_stdout_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_stderr_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            path: None,
            env: Vec::new(),
            reaper: Reaper::Auto,
            prepare: None,
            sandbox: SandboxOptions::default(),
            node_permission: None,
            stage: crate::stage::StageOptions::default(),
        }
    }

    /// The largest timeout a request may ask for: `max_timeout`, or `timeout` when unset.
    pub fn max_timeout(&self) -> Duration {
        self.max_timeout.unwrap_or(self.timeout)
    }

    /// Checks the host's configuration (not the model's input): a message for the host when
    /// something is unusable.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !self.exec_path.is_absolute() {
            return Err(format!("execPath must be an absolute path, got {}", self.exec_path.display()));
        }
        host_config::check_timeouts(self.timeout, self.max_timeout())?;
        host_config::check_output_caps(&[("stdout cap", self.max_stdout_bytes), ("stderr cap", self.max_stderr_bytes)], MAX_OUTPUT_CAP)?;
        // PATH may be overridden here: no reserved names.
        host_config::check_env(&self.env, &[])?;
        if let Some(path) = &self.path {
            host_config::check_path(path)?;
        }
        self.sandbox.validate()?;
        self.stage.validate()?;
        if let Some(np) = &self.node_permission {
            np.validate()?;
        }
        Ok(())
    }
}

/// What a run that ended by itself returns (node_process's result, and the details of its
/// `NODE_PROCESS_TIMEOUT` error).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeOutput {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// Always false here: a timeout is the `NODE_PROCESS_TIMEOUT` error.
    pub timed_out: bool,
    #[serde(serialize_with = "crate::json::number")]
    pub duration_ms: u64,
    /// What confined the child.
    pub sandbox: Report,
    /// With `network: { allow }`: the connections through the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::proxy::Counts>,
    /// Set when the requested timeout was above the host's maximum and was clamped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A staged run's change (contract §20): the workspace is unchanged until it is applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged: Option<crate::stage::StagedOutput>,
}

impl NodeOutput {
    fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an output serializes")
    }
}

pub(crate) fn script_name(random: &str) -> String {
    format!("{SCRIPT_PREFIX}{random}.cjs")
}

/// The temporary script: created exclusively beneath the root, removed when dropped.
struct Script<'a> {
    ws: &'a Workspace,
    name: String,
}

impl<'a> Script<'a> {
    fn create(ws: &'a Workspace, source: &str) -> Result<Self> {
        use std::io::Write as _;
        let mut attempts = 0;
        loop {
            let name = script_name(&crate::temp_name::random_name("", RANDOM_HEX / 2));
            let mut options = OpenOptions::new();
            options
                .write(true)
                .create_new(true)
                .follow(FollowSymlinks::No)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
            match ws.dir().open_with(&name, &options) {
                Ok(mut file) => {
                    let script = Script { ws, name };
                    file.write_all(prelude::with_prelude(source).as_bytes()).map_err(|e| script_error(&e))?;
                    return Ok(script);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 8 => attempts += 1,
                Err(e) => return Err(script_error(&e)),
            }
        }
    }
}

fn script_error(e: &std::io::Error) -> Error {
    let mut err = Error::from_io(e, "the workspace root");
    err.message = format!("could not write the temporary script into the workspace root: {}", err.message);
    err.with_hint("node_process needs to create a file in the workspace root; check that the directory is writable and the disk not full")
}

impl Drop for Script<'_> {
    fn drop(&mut self) {
        if self.ws.dir().remove_file(&self.name).is_err() {
            // The script may have replaced itself with a directory.
            let _ = self.ws.dir().remove_dir_all(&self.name);
        }
    }
}

fn environment(opts: &NodeOptions) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![("PATH".into(), opts.path.clone().unwrap_or_else(|| DEFAULT_PATH.into()))];
    for (name, value) in &opts.env {
        env.retain(|(n, _)| n.as_os_str() != name.as_str());
        env.push((name.into(), value.into()));
    }
    env
}

/// Runs `req` to the end. A normal exit (any code) is `Ok`; a timeout is `NODE_PROCESS_TIMEOUT`
/// with the partial output in its details; cancellation is the cancelled error.
pub async fn node_process(ws: &Workspace, req: &NodeRequest, opts: &NodeOptions, cancel: &Cancel) -> Result<NodeOutput> {
    cancel.check()?;
    opts.validate().map_err(misconfigured)?;
    check_request(req, &opts.exec_path, ws.canonical())?;
    // The same clamp as run_command's: the host's maximum, said in a note.
    let (timeout, note) = effective_timeout(req.timeout_ms, opts.timeout, opts.max_timeout())?;
    ws.check()?;
    let staged = opts.stage.wanted()?;
    // Refuses ("required" mode, or a staged run the sandbox cannot make) before any effect.
    let sandbox_opts = SandboxOptions { stage: staged, ..opts.sandbox.clone() };
    let confinement = sandbox::prepare(&sandbox_opts, ws, &sandbox::program_grants(&opts.exec_path))?;
    let script = Script::create(ws, &req.source)?;
    cancel.check()?;
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let (confinement, stage) = if staged {
        let mut run = crate::stage::Run::begin(ws, "", &opts.stage)?;
        run.start(ws);
        (confinement.with_stage(Some(run.layer())), Some(run))
    } else {
        (confinement, None)
    };

    let mut spec = SpawnSpec::new(&opts.exec_path, ws.canonical());
    spec.env = environment(opts);
    spec.args = permission_flags(opts, ws.canonical(), confinement.report().landlock_abi.is_some()).unwrap_or_default();
    let node_permission = !spec.args.is_empty();
    spec.args.push(format!("./{}", script.name).into());
    spec.args.extend(req.arguments.iter().map(OsString::from));
    if let Some(prepare) = &opts.prepare {
        prepare(&mut spec, ws.canonical())?;
    }
    let net = confinement.network();
    let mut report = confinement.apply(&mut spec);
    report.node_permission = node_permission;
    let run = RunOptions { timeout: Some(timeout), reaper: opts.reaper, ..RunOptions::default() };
    cancel.progress().message(|| "node: running".into());
    let finished = process::run(spec, &run, cancel, Head::new(opts.max_stdout_bytes), Some(Head::new(opts.max_stderr_bytes)))
        .await
        .map_err(|e| spawn_error(&e, &opts.exec_path));
    drop(script);
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let finished = finished.map_err(|e| match &stage {
        Some(run) => run.launch_error(e),
        None => e,
    });
    let finished = finished?;

    let stdout = finished.stdout.finish();
    let stderr = finished.stderr.map(Head::finish).unwrap_or(HeadText { text: String::new(), truncated: false, total_bytes: 0 });
    let status = finished.status.unwrap_or_default();
    let mut output = NodeOutput {
        exit_code: status.code,
        signal: status.signal_name(),
        stdout: stdout.text,
        stderr: stderr.text,
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        timed_out: false,
        duration_ms: finished.duration.as_millis() as u64,
        sandbox: report,
        network: net.map(|n| n.counts()),
        note,
        staged: None,
    };
    match finished.end {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        End::Exited if stage.is_some() => {
            output.staged = Some(stage.expect("checked").finish(ws, cancel)?);
            Ok(output)
        }
        End::Exited => Ok(output),
        End::Cancelled => Err(Error::cancelled()),
        End::TimedOut => {
            output.timed_out = true;
            if output.signal.is_none() && output.exit_code.is_none() {
                output.signal = Some("SIGKILL".into());
            }
            let ms = timeout.as_millis();
            let mut details = output.to_json();
            details["timeoutMs"] = serde_json::json!(ms);
            Err(Error::new(Code::NodeProcessTimeout, format!("the script did not finish within {ms} ms and was stopped"))
                .with_hint("make the script finish sooner: no servers, timers or watchers left running, no endless loops, no waiting for input; split long work into several calls")
                .with_details(details))
        }
    }
}

/// Node's permission flags for this call (the second layer), when the sandbox is on and the
/// host's Node.js has the permission model: the workspace and the host's grants; where Landlock
/// confines the child too, also what Landlock lets every confined process read (the system
/// directories, the harmless `/proc` and `/sys` entries runtimes probe, the random devices), so
/// a package that probes the system (`/proc/sys/fs/binfmt_misc/...`) loads as it does under
/// run_command. Without Landlock this layer is the only one, and it stays the workspace alone.
fn permission_flags(opts: &NodeOptions, root: &Path, landlock: bool) -> Option<Vec<OsString>> {
    if opts.sandbox.mode == sandbox::Mode::Off {
        return None;
    }
    let np = opts.node_permission.as_ref()?;
    // Pinned grants by their approved paths: Node's own checks are by path; Landlock's rules are
    // on the pinned directories.
    let pinned = opts.sandbox.pinned.iter().flat_map(|p| p.paths.iter());
    let system: Vec<PathBuf> = if landlock { sandbox::paths::system_read_paths() } else { Vec::new() };
    let mut read: Vec<&Path> = system.iter().map(PathBuf::as_path).collect();
    read.extend(opts.sandbox.read_paths.iter().map(PathBuf::as_path));
    read.extend(pinned.clone().filter(|p| !p.write).map(|p| p.path.as_path()));
    let mut write: Vec<&Path> = vec![root];
    write.extend(opts.sandbox.write_paths.iter().map(PathBuf::as_path));
    write.extend(pinned.filter(|p| p.write).map(|p| p.path.as_path()));
    np.args(&read, &write, landlock)
}

fn spawn_error(e: &std::io::Error, exec_path: &Path) -> Error {
    let shown = exec_path.display().to_string();
    match e.raw_os_error() {
        Some(errno) => Error::io_errno(errno, &shown)
            .with_hint("the host's Node.js executable could not be started; report this to the user"),
        None => Error::new(Code::IoError, format!("could not start {shown}: {e}"))
            .with_hint("the host's Node.js executable could not be started; report this to the user"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODE: &str = "/usr/bin/node";

    #[test]
    fn environment_is_path_plus_additions() {
        let mut o = NodeOptions::new(NODE);
        assert_eq!(environment(&o), vec![("PATH".into(), DEFAULT_PATH.into())]);
        o.path = Some("/x".into());
        o.env = vec![("A".into(), "1".into()), ("PATH".into(), "/y".into()), ("A".into(), "2".into())];
        assert_eq!(environment(&o), vec![("PATH".into(), "/y".into()), ("A".into(), "2".into())]);
    }

    #[test]
    fn options_are_validated() {
        let mut o = NodeOptions::new(NODE);
        assert!(o.validate().is_ok());
        o.env = vec![("A=B".into(), "1".into())];
        assert!(o.validate().is_err());
        o.env = vec![("A".into(), "1\0".into())];
        assert!(o.validate().is_err());
        let mut o = NodeOptions::new("node");
        assert!(o.validate().is_err());
        o.exec_path = NODE.into();
        o.timeout = Duration::ZERO;
        assert!(o.validate().is_err());
    }
}
