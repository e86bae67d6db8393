//! `run_command`: runs an argv (never a command string) inside the workspace, bounded in time,
//! output and environment.
//!
//! In order, for one call:
//! 1. the request is checked before any effect ([`check_request`]): the command policy
//!    ([`crate::policy::check_command`]: shape, sizes, deny- and allow-lists, parsed `sh -c`
//!    scripts), the `cwd` grammar, the timeout (clamped to the host's maximum, and said so);
//! 2. the root is rechecked and `cwd` opened beneath it (a directory inside; the child runs in
//!    its canonical path, entered through the open handle);
//! 3. `argv[0]` is looked up on the PATH the child gets ([`resolve`]); a missing program is the
//!    recoverable `COMMAND_NOT_FOUND`;
//! 4. a private scratch directory is created outside the workspace ([`scratch`]): the child's
//!    HOME and TMPDIR, removed in every outcome;
//! 5. the child starts through [`launch`] and the process machinery ([`crate::process`]): no
//!    shell, stdin from the null device, its own process group, an environment of PATH, HOME,
//!    TMPDIR and the names the host passes, stdout and stderr through one pipe (their order
//!    kept), the first and last bytes kept ([`HeadTail`]);
//! 6. a normal exit of any code is the result; a timeout is `COMMAND_TIMEOUT` with the partial
//!    output in its details; cancellation is the cancelled error.

pub mod launch;
pub mod resolve;
pub mod scratch;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::host_config::{self, debug_options, misconfigured, EnvNames};
use crate::json;
use crate::process::{self, Prepare};
use crate::path::RelPath;
use crate::policy::{self, Policy};
use crate::process::{End, HeadTail, Reaper, RunOptions};
use crate::root::Workspace;
use crate::sandbox::{self, Access, Grant, Report, SandboxOptions};

pub use launch::{Launch, WorkDir};
pub use scratch::Scratch;

/// Default timeout of a command, from its spawn.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default largest timeout a call may ask for.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Default bytes kept from the start of the output.
pub const DEFAULT_HEAD_BYTES: usize = 8 * 1024;
/// Default bytes kept from the end of the output.
pub const DEFAULT_TAIL_BYTES: usize = 24 * 1024;
pub use crate::host_config::MAX_OUTPUT_CAP;

/// What the model sends.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandRequest {
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// Milliseconds; `None`: the host's default.
    pub timeout_ms: Option<f64>,
}

/// What the host configures. Its JSON form (what the binding passes): `path`, `scratchDir`,
/// `policy: { denyCommands?, allowCommands? }`, `sandbox` (its own object), `env: [{ name, value }]`, `timeoutMs`, `maxTimeoutMs`,
/// `outputHeadBytes`, `outputTailBytes`, `reaper`.
#[derive(Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommandOptions {
    #[serde(default)]
    pub policy: Policy,
    /// The PATH the child gets, and the one `argv[0]` is looked up on.
    #[serde(deserialize_with = "json::os_string")]
    pub path: OsString,
    /// Variables passed from the host, by name and value (never PATH, HOME or TMPDIR).
    #[serde(default, deserialize_with = "json::env")]
    pub env: Vec<(String, String)>,
    /// Timeout when the request names none.
    #[serde(rename = "timeoutMs", default = "default_timeout", deserialize_with = "json::millis")]
    pub timeout: Duration,
    /// Largest timeout; longer requests are clamped to it.
    #[serde(rename = "maxTimeoutMs", default = "default_max_timeout", deserialize_with = "json::millis")]
    pub max_timeout: Duration,
    #[serde(rename = "outputHeadBytes", default = "default_head_bytes", deserialize_with = "json::bytes")]
    pub head_bytes: usize,
    #[serde(rename = "outputTailBytes", default = "default_tail_bytes", deserialize_with = "json::bytes")]
    pub tail_bytes: usize,
    /// Where scratch directories are created (the host's temporary directory): must be outside
    /// the workspace.
    #[serde(rename = "scratchDir")]
    pub scratch_parent: PathBuf,
    #[serde(default)]
    pub reaper: Reaper,
    /// Called with the spec and the canonical root just before the spawn (confinement).
    #[serde(skip)]
    pub prepare: Option<Prepare>,
    /// OS confinement of the command ([`crate::sandbox`]); `auto` by default.
    pub sandbox: SandboxOptions,
    /// Staged runs ([`crate::stage`]).
    #[serde(default)]
    pub stage: crate::stage::StageOptions,
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}
fn default_max_timeout() -> Duration {
    DEFAULT_MAX_TIMEOUT
}
fn default_head_bytes() -> usize {
    DEFAULT_HEAD_BYTES
}
fn default_tail_bytes() -> usize {
    DEFAULT_TAIL_BYTES
}

debug_options!(CommandOptions {
    policy, path, env => EnvNames, timeout, max_timeout, head_bytes, tail_bytes, scratch_parent, reaper, sandbox, stage,
});

impl CommandOptions {
    /// The defaults, with the child's PATH.
    pub fn new(path: impl Into<OsString>) -> Self {
        CommandOptions {
            policy: Policy::default(),
            path: path.into(),
            env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_timeout: DEFAULT_MAX_TIMEOUT,
            head_bytes: DEFAULT_HEAD_BYTES,
            tail_bytes: DEFAULT_TAIL_BYTES,
            scratch_parent: std::env::temp_dir(),
            reaper: Reaper::Auto,
            prepare: None,
            sandbox: SandboxOptions::default(),
            stage: crate::stage::StageOptions::default(),
        }
    }

    /// Checks the host's configuration (not the model's input).
    pub fn validate(&self) -> std::result::Result<(), String> {
        host_config::check_timeouts(self.timeout, self.max_timeout)?;
        host_config::check_output_caps(&[("output head", self.head_bytes), ("output tail", self.tail_bytes)], MAX_OUTPUT_CAP)?;
        if self.head_bytes + self.tail_bytes == 0 {
            return Err("the output head and tail cannot both be 0 bytes".into());
        }
        self.stage.validate()?;
        host_config::check_launch(&self.path, &self.sandbox, &self.env)
    }
}

/// The request after [`check_request`]: what the call will do.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedRequest {
    pub cwd: Option<RelPath>,
    /// The timeout in force.
    pub timeout: Duration,
    /// Set when the requested timeout was clamped.
    pub note: Option<String>,
}

/// The timeout in force for a request, and a note when it was clamped. `requested` must be a
/// positive number of milliseconds.
pub fn effective_timeout(requested: Option<f64>, default: Duration, max: Duration) -> Result<(Duration, Option<String>)> {
    let Some(ms) = requested else { return Ok((default.min(max), None)) };
    if !ms.is_finite() || ms < 1.0 || ms.fract() != 0.0 {
        return Err(Error::invalid(
            Reason::InvalidArgumentsShape,
            format!("timeoutMs must be a whole number of milliseconds, at least 1 (at most {} is used)", max.as_millis()),
        )
        .with_details(serde_json::json!({ "at": "arguments.timeoutMs" })));
    }
    let max_ms = max.as_millis() as f64;
    if ms > max_ms {
        let note = format!(
            "timeoutMs {ms} is above this tool's maximum of {max_ms} ms and was clamped to {max_ms} ms"
        );
        return Ok((max, Some(note)));
    }
    Ok((Duration::from_millis(ms as u64), None))
}

/// Checks the model's input without any effect: the policy, `cwd`, the timeout.
pub fn check_request(req: &CommandRequest, opts: &CommandOptions) -> Result<CheckedRequest> {
    policy::check_command(&req.argv, &opts.policy)?;
    opts.stage.wanted()?;
    let cwd = launch::parse_cwd(req.cwd.as_deref())?;
    let (timeout, note) = effective_timeout(req.timeout_ms, opts.timeout, opts.max_timeout)?;
    Ok(CheckedRequest { cwd, timeout, note })
}

/// What a run that ended by itself returns (run_command's result, and the details of its
/// `COMMAND_TIMEOUT` error).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CommandOutput {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// stdout and stderr as written, head and tail kept.
    pub output: String,
    pub truncated: bool,
    #[serde(serialize_with = "crate::json::number")]
    pub omitted_bytes: u64,
    /// Always false in a result: a timeout is the `COMMAND_TIMEOUT` error.
    pub timed_out: bool,
    #[serde(serialize_with = "crate::json::number")]
    pub duration_ms: u64,
    /// The timeout in force, in milliseconds.
    #[serde(serialize_with = "crate::json::number")]
    pub timeout_ms: u64,
    /// Said when the requested timeout was clamped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What confined the command.
    pub sandbox: Report,
    /// With `network: { allow }`: the connections through the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::proxy::Counts>,
    /// A staged run's change (contract §20): the workspace is unchanged until it is applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged: Option<crate::stage::StagedOutput>,
}

impl CommandOutput {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("an output serializes")
    }
}

/// `argv[0]` on the child's PATH, or `COMMAND_NOT_FOUND`.
pub fn find_command(name: &str, path: &std::ffi::OsStr) -> Result<PathBuf> {
    resolve::find_program(name, path).ok_or_else(|| resolve::not_found(name, path))
}

/// A command ready to start: what run_command and start_process share.
pub struct Prepared {
    /// The spawn, confined (its launcher set).
    pub spec: process::SpawnSpec,
    /// What confines it.
    pub report: Report,
    /// Its private HOME and TMPDIR: removed when dropped.
    pub scratch: Scratch,
    /// Must live until the child has started.
    pub workdir: WorkDir,
    /// With `network: { allow }`: the call's proxy session (its counts go in the result).
    pub net: Option<crate::proxy::Session>,
    /// A staged run ([`crate::stage`]).
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    pub stage: Option<crate::stage::Run>,
}

/// Steps 2 to 5 of a checked request (see the module's documentation): the root rechecked,
/// `cwd` opened beneath it, `argv[0]` found on the PATH, the sandbox decided (`required`
/// refuses here, before the scratch directory exists), the scratch directory created and the
/// spawn confined with `opts.sandbox`.
pub fn prepare_start(ws: &Workspace, argv: &[String], cwd: Option<&RelPath>, opts: &CommandOptions) -> Result<Prepared> {
    prepare_start_staged(ws, argv, cwd, opts, false)
}

/// [`prepare_start`], staged when `staged` ([`crate::stage`]): `SANDBOX_UNAVAILABLE` where the
/// sandbox cannot make a staged run.
pub fn prepare_start_staged(ws: &Workspace, argv: &[String], cwd: Option<&RelPath>, opts: &CommandOptions, staged: bool) -> Result<Prepared> {
    ws.check()?;
    let scratch_parent = scratch::check_parent(&opts.scratch_parent, ws.canonical()).map_err(misconfigured)?;
    let workdir = launch::open_workdir(ws, cwd)?;
    let name = &argv[0];
    let program = find_command(name, &opts.path)?;
    let sandbox_opts = SandboxOptions { stage: staged, ..opts.sandbox.clone() };
    sandbox::require(&sandbox_opts)?;
    let scratch = Scratch::create(&scratch_parent)?;
    // The program's directories, and the call's private HOME and TMPDIR.
    let mut grants = sandbox::program_grants(&program);
    grants.push(Grant::new(scratch.home(), Access::ReadWrite));
    grants.push(Grant::new(scratch.tmp(), Access::ReadWrite));
    let confinement = sandbox::prepare(&sandbox_opts, ws, &grants)?;
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let (confinement, stage) = if staged {
        let mut run = crate::stage::Run::begin(ws, &workdir.shown, &opts.stage)?;
        run.start(ws);
        (confinement.with_stage(Some(run.layer())), Some(run))
    } else {
        (confinement, None)
    };
    let launch = Launch {
        program,
        arg0: name.into(),
        args: argv[1..].iter().map(OsString::from).collect(),
        env: launch::base_environment(&opts.path, &scratch, &opts.env),
    };
    let mut spec = launch::spawn_spec(launch, &workdir);
    let net = confinement.network();
    let report = confinement.apply(&mut spec);
    Ok(Prepared {
        spec,
        report,
        scratch,
        workdir,
        net,
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        stage,
    })
}

/// Runs `req` to the end. A normal exit (any code) is `Ok`; a timeout is `COMMAND_TIMEOUT`
/// with the partial output in its details; cancellation is the cancelled error.
pub async fn run_command(ws: &Workspace, req: &CommandRequest, opts: &CommandOptions, cancel: &Cancel) -> Result<CommandOutput> {
    cancel.check()?;
    opts.validate().map_err(misconfigured)?;
    let checked = check_request(req, opts)?;
    ws.check()?;
    let staged = opts.stage.wanted()?;
    let prepared = prepare_start_staged(ws, &req.argv, checked.cwd.as_ref(), opts, staged)?;
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let Prepared { spec, report, scratch, workdir, net, stage } = prepared;
    #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    let Prepared { spec, report, scratch, workdir, net } = prepared;
    let name = &req.argv[0];
    cancel.check()?;
    let run = RunOptions { timeout: Some(checked.timeout), reaper: opts.reaper, ..RunOptions::default() };
    let sink = HeadTail::new(opts.head_bytes, opts.tail_bytes);
    cancel.progress().message(|| format!("{name}: running"));
    let finished = launch::start(spec, opts.prepare.as_ref(), ws.canonical(), &run, cancel, sink).await;
    drop(workdir);
    drop(scratch);
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let finished = finished.map_err(|e| match &stage {
        Some(run) => run.launch_error(e),
        None => e,
    });
    let finished = finished?;

    let out = finished.stdout.finish();
    let status = finished.status.unwrap_or_default();
    let timeout_ms = checked.timeout.as_millis() as u64;
    let mut output = CommandOutput {
        exit_code: status.code,
        signal: status.signal_name(),
        output: out.text,
        truncated: out.truncated,
        omitted_bytes: out.omitted_bytes,
        timed_out: false,
        duration_ms: finished.duration.as_millis() as u64,
        timeout_ms,
        note: checked.note,
        sandbox: report,
        network: net.map(|n| n.counts()),
        staged: None,
    };
    match finished.end {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        End::Exited if stage.is_some() => {
            let run = stage.expect("checked");
            output.staged = Some(run.finish(ws, cancel)?);
            Ok(output)
        }
        End::Exited => Ok(output),
        End::Cancelled => Err(Error::cancelled()),
        End::TimedOut => {
            output.timed_out = true;
            if output.signal.is_none() && output.exit_code.is_none() {
                output.signal = Some("SIGKILL".into());
            }
            let max = opts.max_timeout.as_millis();
            Err(Error::new(Code::CommandTimeout, format!("{name} did not finish within {timeout_ms} ms and was stopped with everything it started"))
                .with_hint(format!(
                    "make the command finish sooner (no servers, watchers or prompts; pass flags that disable interactive input), run a smaller part of the work, or pass a larger timeoutMs (at most {max})"
                ))
                .with_details(output.to_json()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_default_and_clamp() {
        let d = Duration::from_secs(30);
        let max = Duration::from_secs(60);
        assert_eq!(effective_timeout(None, d, max).unwrap(), (d, None));
        assert_eq!(effective_timeout(Some(1500.0), d, max).unwrap(), (Duration::from_millis(1500), None));
        assert_eq!(effective_timeout(Some(60_000.0), d, max).unwrap(), (max, None));
        let (t, note) = effective_timeout(Some(60_001.0), d, max).unwrap();
        assert_eq!(t, max);
        assert!(note.unwrap().contains("clamped to 60000 ms"));
        for bad in [0.0, -1.0, 0.5, 1.5, f64::NAN, f64::INFINITY] {
            assert_eq!(effective_timeout(Some(bad), d, max).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"), "{bad}");
        }
    }

    #[test]
    fn requests_are_checked_before_any_effect() {
        let opts = CommandOptions::new("/usr/bin:/bin");
        let req = |argv: &[&str], cwd: Option<&str>| CommandRequest {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: cwd.map(Into::into),
            timeout_ms: None,
        };
        assert!(check_request(&req(&["ls"], None), &opts).is_ok());
        assert_eq!(check_request(&req(&[], None), &opts).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert_eq!(check_request(&req(&["sudo", "ls"], None), &opts).unwrap_err().reason(), Some("COMMAND_REFUSED"));
        assert_eq!(check_request(&req(&["/bin/ls"], None), &opts).unwrap_err().reason(), Some("COMMAND_REFUSED"));
        assert_eq!(check_request(&req(&["ls"], Some("../x")), &opts).unwrap_err().reason(), Some("INVALID_RELATIVE_PATH"));
        assert_eq!(check_request(&req(&["ls"], Some(".")), &opts).unwrap().cwd, None);
    }

    #[test]
    fn options_are_validated() {
        let mut o = CommandOptions::new("/usr/bin");
        assert!(o.validate().is_ok());
        o.timeout = Duration::from_secs(700);
        assert!(o.validate().is_err());
        let mut o = CommandOptions::new("/usr/bin");
        o.env = vec![("PATH".into(), "/x".into())];
        assert!(o.validate().is_err());
        let mut o = CommandOptions::new("/usr/bin");
        o.head_bytes = 0;
        o.tail_bytes = 0;
        assert!(o.validate().is_err());
    }

    #[test]
    fn a_missing_program_is_recoverable_with_a_hint() {
        let err = find_command("no-such-program-here", std::ffi::OsStr::new("/usr/bin:/bin")).unwrap_err();
        assert_eq!(err.code, Code::CommandNotFound);
        assert!(err.hint.unwrap().contains("/usr/bin"));
        assert!(find_command("sh", std::ffi::OsStr::new("/usr/bin:/bin")).is_ok());
    }
}
