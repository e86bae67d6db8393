//! The process sessions' table (start_process, read_process, write_process, stop_process,
//! list_processes): conversion only.

use std::sync::Arc;

use std::future::Future;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use serde::Serialize;
use workcell_core::api::sandbox::GrantRequest;
use workcell_core::api::session::{ProcessList, Written};
use workcell_core::api::session::{ProcessTable, ReadRequest, SessionOptions, StartRequest};
use workcell_core::api::{Error, Reason};

use crate::convert::{strict_string, throw};
use crate::outcome::{Json, Outcome};
use crate::process_tool::{env_of, EnvVar, host_error, policy_of, reaper_of, set_ms};
use crate::sandbox::SandboxFeatureLimit;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// The host's configuration of the process tools.
#[napi(object)]
pub struct ProcessToolsOptions {
    pub deny_commands: Option<Vec<String>>,
    pub allow_commands: Option<Vec<String>>,
    pub path: String,
    pub env: Option<Vec<EnvVar>>,
    pub timeout_ms: Option<u32>,
    pub max_timeout_ms: Option<u32>,
    pub scratch_dir: String,
    pub reaper: Option<String>,
    pub sandbox: Option<String>,
    pub network: Option<bool>,
    pub read_paths: Option<Vec<String>>,
    pub write_paths: Option<Vec<String>>,
    /// `network: { allow }`: the hosts the processes may reach through the filtering proxy.
    pub network_allow: Option<Vec<String>>,
    pub sandbox_limit: Option<SandboxFeatureLimit>,
    /// The resource caps of each process tree (defaults filled in by `sandboxLimits`).
    pub limits: Option<crate::sandbox::SandboxLimits>,
    /// TCP ports a session may ask for.
    pub ports: Option<Vec<u32>>,
    pub max_processes: Option<u32>,
    /// Globs read-only for the processes (absent: the write guard's default).
    pub protect: Option<Vec<String>>,
}

/// Runs a session call on tokio and resolves to the core's outcome (`{ ok } | { error }`,
/// a request refused by the conversion included): never rejects for a tool error.
fn spawn_json<'env, Req, T, Fut>(
    env: &'env Env,
    req: workcell_core::api::Result<Req>,
    run: impl FnOnce(Req) -> Fut,
) -> napi::Result<PromiseRaw<'env, Json<Outcome<T>>>>
where
    Fut: Future<Output = workcell_core::api::Result<T>> + Send + 'static,
    T: Serialize + Send + 'static,
{
    let call = req.map(run);
    env.spawn_future(async move {
        let result = match call {
            Ok(call) => call.await,
            Err(e) => Err(e),
        };
        Ok(Json(Outcome::from(result)))
    })
}

fn options(o: ProcessToolsOptions) -> napi::Result<SessionOptions> {
    let mut opts = SessionOptions::new(o.path);
    opts.command.policy = policy_of(o.deny_commands, o.allow_commands);
    opts.command.env = env_of(o.env);
    set_ms(&mut opts.command.timeout, o.timeout_ms);
    set_ms(&mut opts.command.max_timeout, o.max_timeout_ms);
    opts.command.scratch_parent = o.scratch_dir.into();
    opts.command.reaper = reaper_of(o.reaper)?;
    opts.command.sandbox = crate::sandbox::options(o.sandbox, o.network, o.network_allow, o.read_paths, o.write_paths, o.sandbox_limit, o.limits, o.protect)?;
    let mut ports = Vec::new();
    for p in o.ports.unwrap_or_default() {
        if p == 0 || p > 65535 {
            return Err(host_error(format_args!("ports must be TCP ports from 1 to 65535, not {p}")));
        }
        ports.push(p as u16);
    }
    opts.allowed_ports = ports;
    if let Some(m) = o.max_processes {
        opts.max_processes = m as usize;
    }
    Ok(opts)
}

fn strings(v: Vec<Utf16String>) -> workcell_core::api::Result<Vec<String>> {
    v.into_iter().map(strict_string).collect()
}

/// start_process's input from JS.
#[allow(clippy::too_many_arguments)]
fn start_request(
    argv: Vec<Utf16String>,
    cwd: Option<Utf16String>,
    tty: Option<bool>,
    timeout_ms: Option<f64>,
    wait_for: Option<Utf16String>,
    wait_ms: Option<f64>,
    ports: Option<Vec<f64>>,
    watch: Option<Vec<Utf16String>>,
    grants: Option<serde_json::Value>,
) -> workcell_core::api::Result<StartRequest> {
    let grants = match grants {
        None | Some(serde_json::Value::Null) => GrantRequest::default(),
        Some(v) => serde_json::from_value(v).map_err(|e| {
            Error::invalid(Reason::InvalidArgumentsShape, format!("grants must be {{ writePaths?, readPaths?, network?, sandbox?: \"off\" }}: {e}"))
                .with_details(serde_json::json!({ "at": "arguments.grants" }))
        })?,
    };
    Ok(StartRequest {
        argv: strings(argv)?,
        cwd: cwd.map(strict_string).transpose()?,
        tty: tty.unwrap_or(false),
        timeout_ms,
        wait_for: wait_for.map(strict_string).transpose()?,
        wait_ms,
        ports: ports.unwrap_or_default(),
        watch: strings(watch.unwrap_or_default())?,
        grants,
    })
}

/// The process table of one tool set.
#[napi]
pub struct NativeProcessTable {
    table: Arc<ProcessTable>,
    group: u32,
}

#[napi]
impl NativeProcessTable {
    /// Throws (a host error) when `options` are unusable.
    #[napi(constructor)]
    pub fn new(workspace: &NativeWorkspace, options: ProcessToolsOptions) -> napi::Result<Self> {
        let opts = self::options(options)?;
        let table = ProcessTable::new(Arc::clone(&workspace.ws), opts).map_err(host_error)?;
        let group = workcell_core::api::sandbox::ports::register(table.ports());
        Ok(NativeProcessTable { table: Arc::new(table), group })
    }

    /// The number the tool set's other tools pass as `portGroup`.
    #[napi(getter)]
    pub fn port_group(&self) -> u32 {
        self.group
    }

    /// Checks start_process's input without any effect; throws the tool error's JSON.
    #[napi]
    #[allow(clippy::too_many_arguments)]
    pub fn check_start(
        &self,
        argv: Vec<Utf16String>,
        cwd: Option<Utf16String>,
        tty: Option<bool>,
        timeout_ms: Option<f64>,
        wait_for: Option<Utf16String>,
        wait_ms: Option<f64>,
        ports: Option<Vec<f64>>,
        watch: Option<Vec<Utf16String>>,
        #[napi(ts_arg_type = "{ writePaths?: string[]; readPaths?: string[]; network?: boolean; sandbox?: \"off\"; handles?: number[] } | undefined | null")] grants: Option<serde_json::Value>,
    ) -> napi::Result<()> {
        start_request(argv, cwd, tty, timeout_ms, wait_for, wait_ms, ports, watch, grants)
            .and_then(|r| workcell_core::api::session::check_start(&r, self.table.options()))
            .map(|_| ())
            .map_err(throw)
    }

    /// start_process; `grants` (approved) widen the table's sandbox options for this session.
    #[napi(ts_return_type = "Promise<C.Outcome<Omit<C.ProcessOutput, \"denials\">>>")]
    #[allow(clippy::too_many_arguments)]
    pub fn start<'env>(
        &self,
        env: &'env Env,
        argv: Vec<Utf16String>,
        cwd: Option<Utf16String>,
        tty: Option<bool>,
        timeout_ms: Option<f64>,
        wait_for: Option<Utf16String>,
        wait_ms: Option<f64>,
        ports: Option<Vec<f64>>,
        watch: Option<Vec<Utf16String>>,
        cancel: Option<&CancelHandle>,
        #[napi(ts_arg_type = "{ writePaths?: string[]; readPaths?: string[]; network?: boolean; sandbox?: \"off\"; handles?: number[] } | undefined | null")] grants: Option<serde_json::Value>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<workcell_core::api::session::ProcessOutput>>>> {
        let (t, cancel) = (Arc::clone(&self.table), cancel_of(cancel));
        spawn_json(env, start_request(argv, cwd, tty, timeout_ms, wait_for, wait_ms, ports, watch, grants), move |req| async move {
            t.start(&req, &cancel).await
        })
    }

    #[napi(ts_return_type = "Promise<C.Outcome<Omit<C.ProcessOutput, \"denials\">>>")]
    pub fn read<'env>(
        &self,
        env: &'env Env,
        id: String,
        cursor: Option<f64>,
        wait_for: Option<Utf16String>,
        wait_ms: Option<f64>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<workcell_core::api::session::ProcessOutput>>>> {
        let (t, cancel) = (Arc::clone(&self.table), cancel_of(cancel));
        let req = wait_for.map(strict_string).transpose().map(|wait_for| ReadRequest { id, cursor, wait_for, wait_ms });
        spawn_json(env, req, move |req| async move { t.read(&req, &cancel).await })
    }

    #[napi(ts_return_type = "Promise<C.Outcome<C.WriteProcessOutput>>")]
    pub fn write<'env>(
        &self,
        env: &'env Env,
        id: String,
        input: Utf16String,
        close_stdin: Option<bool>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<Written>>>> {
        let (t, cancel) = (Arc::clone(&self.table), cancel_of(cancel));
        spawn_json(env, strict_string(input), move |input| async move {
            let bytes = t.write(&id, &input, close_stdin.unwrap_or(false), &cancel).await?;
            Ok(Written { id, bytes })
        })
    }

    #[napi(ts_return_type = "Promise<C.Outcome<Omit<C.ProcessOutput, \"denials\">>>")]
    pub fn stop<'env>(
        &self,
        env: &'env Env,
        id: String,
        signal: Option<String>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<workcell_core::api::session::ProcessOutput>>>> {
        let (t, cancel) = (Arc::clone(&self.table), cancel_of(cancel));
        spawn_json(env, Ok(()), move |()| async move { t.stop(&id, signal.as_deref(), &cancel).await })
    }

    #[napi(ts_return_type = "C.ListProcessesOutput")]
    pub fn list(&self) -> Json<ProcessList> {
        Json(ProcessList { processes: self.table.list() })
    }

    /// Ends every process and refuses new ones; resolves once every tree is gone, with the ids
    /// of the processes still ending after the bound (normally none).
    #[napi(ts_return_type = "Promise<C.Outcome<string[]>>")]
    pub fn close<'env>(&self, env: &'env Env) -> napi::Result<PromiseRaw<'env, Json<Outcome<Vec<String>>>>> {
        let t = Arc::clone(&self.table);
        spawn_json(env, Ok(()), move |()| async move { Ok(t.close().await) })
    }
}
