//! node_process and the process machinery's diagnostics.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::node::{self, NodeOptions, NodeOutput, NodeRequest};
use workcell_core::process::Reaper;

use crate::convert::{strict_string, throw, NativeError};
use crate::process_tool::{env_of, reaper_of, set_bytes, set_ms, spawn_call, validated};
use crate::sandbox::{NodePermissionSupport, SandboxFeatureLimit, SandboxReport};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// Checks at load that pidfds work, so the first call does not pay for it and the reaper in use
/// is known from the start.
#[napi_derive::module_init]
fn probe_process_support() {
    workcell_core::process::pidfd_available();
}

/// How this process observes child exits: `"pidfd"` or `"thread"` (never SIGCHLD).
#[napi]
pub fn process_reaper() -> String {
    Reaper::Auto.resolve().as_str().to_string()
}

/// One environment variable for the child.
#[napi(object)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// The host's configuration of node_process.
#[napi(object)]
pub struct NodeProcessOptions {
    /// The host's `process.execPath`.
    pub exec_path: String,
    pub timeout_ms: Option<u32>,
    pub max_stdout_bytes: Option<u32>,
    pub max_stderr_bytes: Option<u32>,
    /// The host's PATH (the child's only variable by default).
    pub path: Option<String>,
    /// Further variables.
    pub env: Option<Vec<EnvVar>>,
    /// `"auto"` (default), `"pidfd"` or `"thread"`.
    pub reaper: Option<String>,
    /// `"auto"` (default), `"required"` or `"off"`.
    pub sandbox: Option<String>,
    /// Let the child use the network.
    pub network: Option<bool>,
    /// `network: { allow }`: the allowlist's entries (checked with `sandboxNetworkAllow`).
    pub network_allow: Option<Vec<String>>,
    /// Canonical absolute paths the child may also read.
    pub read_paths: Option<Vec<String>>,
    /// Canonical absolute paths the child may also read and write.
    pub write_paths: Option<Vec<String>>,
    /// Simulate a system with fewer sandbox features.
    pub sandbox_limit: Option<SandboxFeatureLimit>,
    /// The process table whose sessions' ports this tool's processes may connect to.
    pub port_group: Option<u32>,
    /// The resource caps of the tree (defaults filled in by `sandboxLimits`).
    pub limits: Option<crate::sandbox::SandboxLimits>,
    /// The host's Node.js permission model, when it has one.
    pub node_permission: Option<NodePermissionSupport>,
}

#[napi(object)]
#[derive(Default)]
pub struct NodeProcessResult {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub stdout_truncated: Option<bool>,
    pub stderr_truncated: Option<bool>,
    pub timed_out: Option<bool>,
    pub duration_ms: Option<u32>,
    pub sandbox: Option<SandboxReport>,
    /// With `network: { allow }`: the connections through the proxy.
    pub network: Option<crate::sandbox::NetworkCounts>,
    pub error: Option<NativeError>,
}

impl From<workcell_core::Result<NodeOutput>> for NodeProcessResult {
    fn from(r: workcell_core::Result<NodeOutput>) -> Self {
        match r {
            Ok(o) => NodeProcessResult {
                exit_code: o.exit_code,
                signal: o.signal,
                stdout: Some(o.stdout),
                stderr: Some(o.stderr),
                stdout_truncated: Some(o.stdout_truncated),
                stderr_truncated: Some(o.stderr_truncated),
                timed_out: Some(o.timed_out),
                duration_ms: Some(o.duration_ms.min(u32::MAX as u64) as u32),
                sandbox: Some(o.sandbox.into()),
                network: o.network.map(Into::into),
                error: None,
            },
            Err(e) => NodeProcessResult { error: Some(e.into()), ..Default::default() },
        }
    }
}

fn request(source: Utf16String, arguments: Vec<Utf16String>) -> workcell_core::Result<NodeRequest> {
    let source = strict_string(source)?;
    let arguments = arguments.into_iter().map(strict_string).collect::<workcell_core::Result<Vec<_>>>()?;
    Ok(NodeRequest { source, arguments })
}

fn options(o: NodeProcessOptions) -> napi::Result<NodeOptions> {
    let mut opts = NodeOptions::new(o.exec_path);
    set_ms(&mut opts.timeout, o.timeout_ms);
    set_bytes(&mut opts.max_stdout_bytes, o.max_stdout_bytes);
    set_bytes(&mut opts.max_stderr_bytes, o.max_stderr_bytes);
    opts.path = o.path.map(Into::into);
    opts.env = env_of(o.env);
    opts.reaper = reaper_of(o.reaper)?;
    opts.sandbox = crate::sandbox::options(o.sandbox, o.network, o.network_allow, o.read_paths, o.write_paths, o.sandbox_limit, o.limits)?;
    crate::sandbox::connect_to_group(&mut opts.sandbox, o.port_group);
    opts.node_permission = crate::sandbox::node_permission(o.node_permission);
    validated(opts, NodeOptions::validate)
}

#[napi]
impl NativeWorkspace {
    /// Checks node_process's input against every limit without any effect. Throws (message:
    /// the tool error's JSON) with `TOOL_ARGUMENTS_INVALID`.
    #[napi]
    pub fn check_node_process(&self, exec_path: String, source: Utf16String, arguments: Vec<Utf16String>) -> napi::Result<()> {
        request(source, arguments)
            .and_then(|req| node::check_request(&req, exec_path.as_ref(), self.ws.canonical()))
            .map_err(throw)
    }

    /// node_process: resolves to the output or to `{ error }` (timeout, cancellation, limits);
    /// never rejects for a tool error. Throws synchronously when `options` are unusable.
    #[napi(ts_return_type = "Promise<NodeProcessResult>")]
    pub fn node_process<'env>(
        &self,
        env: &'env Env,
        source: Utf16String,
        arguments: Vec<Utf16String>,
        options: NodeProcessOptions,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, NodeProcessResult>> {
        let opts = self::options(options)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(source, arguments), move |req| async move {
            node::node_process(&ws, &req, &opts, &cancel).await
        })
    }
}
