//! run_command.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::command::{self, CommandOptions, CommandOutput, CommandRequest};

use crate::convert::{strict_string, throw, NativeError};
use crate::process::EnvVar;
use crate::process_tool::{env_of, policy_of, reaper_of, set_bytes, set_ms, spawn_call, validated};
use crate::sandbox::{SandboxFeatureLimit, SandboxReport};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// The host's configuration of run_command.
#[napi(object)]
pub struct RunCommandOptions {
    /// Replaces the default deny-list.
    pub deny_commands: Option<Vec<String>>,
    /// When set, the only programs that may run.
    pub allow_commands: Option<Vec<String>>,
    /// The child's PATH (also where `argv[0]` is looked up).
    pub path: String,
    /// Variables passed from the host (names listed in `inheritEnv`, with their values).
    pub env: Option<Vec<EnvVar>>,
    pub timeout_ms: Option<u32>,
    pub max_timeout_ms: Option<u32>,
    pub output_head_bytes: Option<u32>,
    pub output_tail_bytes: Option<u32>,
    /// Where the per-call scratch directories go (the host's temporary directory).
    pub scratch_dir: String,
    /// `"auto"` (default), `"pidfd"` or `"thread"`.
    pub reaper: Option<String>,
    /// `"auto"` (default), `"required"` or `"off"`.
    pub sandbox: Option<String>,
    /// Let the command use the network.
    pub network: Option<bool>,
    /// `network: { allow }`: the allowlist's entries (checked with `sandboxNetworkAllow`).
    pub network_allow: Option<Vec<String>>,
    /// Canonical absolute paths the command may also read.
    pub read_paths: Option<Vec<String>>,
    /// Canonical absolute paths the command may also read and write.
    pub write_paths: Option<Vec<String>>,
    /// Simulate a system with fewer sandbox features.
    pub sandbox_limit: Option<SandboxFeatureLimit>,
    /// The process table whose sessions' ports this tool's processes may connect to.
    pub port_group: Option<u32>,
    /// The resource caps of the tree (defaults filled in by `sandboxLimits`).
    pub limits: Option<crate::sandbox::SandboxLimits>,
}

#[napi(object)]
#[derive(Default)]
pub struct RunCommandResult {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub output: Option<String>,
    pub truncated: Option<bool>,
    pub omitted_bytes: Option<f64>,
    pub timed_out: Option<bool>,
    pub duration_ms: Option<f64>,
    pub timeout_ms: Option<f64>,
    pub note: Option<String>,
    pub sandbox: Option<SandboxReport>,
    /// With `network: { allow }`: the connections through the proxy.
    pub network: Option<crate::sandbox::NetworkCounts>,
    pub error: Option<NativeError>,
}

impl From<workcell_core::Result<CommandOutput>> for RunCommandResult {
    fn from(r: workcell_core::Result<CommandOutput>) -> Self {
        match r {
            Ok(o) => RunCommandResult {
                exit_code: o.exit_code,
                signal: o.signal,
                output: Some(o.output),
                truncated: Some(o.truncated),
                omitted_bytes: Some(o.omitted_bytes as f64),
                timed_out: Some(o.timed_out),
                duration_ms: Some(o.duration_ms as f64),
                timeout_ms: Some(o.timeout_ms as f64),
                note: o.note,
                sandbox: Some(o.sandbox.into()),
                network: o.network.map(Into::into),
                error: None,
            },
            Err(e) => RunCommandResult { error: Some(e.into()), ..Default::default() },
        }
    }
}

fn options(o: RunCommandOptions) -> napi::Result<CommandOptions> {
    let mut opts = CommandOptions::new(o.path);
    opts.policy = policy_of(o.deny_commands, o.allow_commands);
    opts.env = env_of(o.env);
    set_ms(&mut opts.timeout, o.timeout_ms);
    set_ms(&mut opts.max_timeout, o.max_timeout_ms);
    set_bytes(&mut opts.head_bytes, o.output_head_bytes);
    set_bytes(&mut opts.tail_bytes, o.output_tail_bytes);
    opts.scratch_parent = o.scratch_dir.into();
    opts.reaper = reaper_of(o.reaper)?;
    opts.sandbox = crate::sandbox::options(o.sandbox, o.network, o.network_allow, o.read_paths, o.write_paths, o.sandbox_limit, o.limits)?;
    crate::sandbox::connect_to_group(&mut opts.sandbox, o.port_group);
    validated(opts, CommandOptions::validate)
}

fn request(argv: Vec<Utf16String>, cwd: Option<Utf16String>, timeout_ms: Option<f64>) -> workcell_core::Result<CommandRequest> {
    let argv = argv.into_iter().map(strict_string).collect::<workcell_core::Result<Vec<_>>>()?;
    let cwd = cwd.map(strict_string).transpose()?;
    Ok(CommandRequest { argv, cwd, timeout_ms })
}

#[napi]
impl NativeWorkspace {
    /// Checks run_command's input (policy, cwd grammar, timeout) without any effect. Throws
    /// (message: the tool error's JSON) with `TOOL_ARGUMENTS_INVALID`.
    #[napi]
    pub fn check_run_command(
        &self,
        argv: Vec<Utf16String>,
        cwd: Option<Utf16String>,
        timeout_ms: Option<f64>,
        options: RunCommandOptions,
    ) -> napi::Result<()> {
        let opts = self::options(options)?;
        request(argv, cwd, timeout_ms).and_then(|req| command::check_request(&req, &opts)).map(|_| ()).map_err(throw)
    }

    /// run_command: resolves to the output or to `{ error }` (timeout, cancellation, refusals);
    /// never rejects for a tool error. Throws synchronously when `options` are unusable.
    #[napi(ts_return_type = "Promise<RunCommandResult>")]
    pub fn run_command<'env>(
        &self,
        env: &'env Env,
        argv: Vec<Utf16String>,
        cwd: Option<Utf16String>,
        timeout_ms: Option<f64>,
        options: RunCommandOptions,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, RunCommandResult>> {
        let opts = self::options(options)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(argv, cwd, timeout_ms), move |req| async move {
            command::run_command(&ws, &req, &opts, &cancel).await
        })
    }
}
