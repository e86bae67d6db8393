//! run_tests.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::testrun::{self, TestsOptions, TestsOutput, TestsRequest};

use crate::convert::{strict_string, throw, NativeError};
use crate::process::EnvVar;
use crate::process_tool::{env_of, policy_of, reaper_of, set_ms, spawn_call, validated};
use crate::sandbox::{SandboxFeatureLimit, SandboxReport};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// The host's configuration of run_tests.
#[napi(object)]
pub struct RunTestsOptions {
    /// Replaces the default deny-list (applied to `[runner, ...args]`).
    pub deny_commands: Option<Vec<String>>,
    /// When set, the only programs (runners) that may run.
    pub allow_commands: Option<Vec<String>>,
    /// The runners' PATH.
    pub path: String,
    /// Variables passed from the host (names listed in `inheritEnv`, with their values).
    pub env: Option<Vec<EnvVar>>,
    pub timeout_ms: Option<u32>,
    pub max_timeout_ms: Option<u32>,
    /// The Node.js for `node --test` and vitest (the host's `process.execPath`).
    pub node_path: String,
    pub cargo_home: Option<String>,
    pub rustup_home: Option<String>,
    pub go_cache: Option<String>,
    pub go_mod_cache: Option<String>,
    /// Where the per-call scratch directories go.
    pub scratch_dir: String,
    pub reaper: Option<String>,
    /// `"auto"` (default), `"required"` or `"off"`.
    pub sandbox: Option<String>,
    /// Let the tests use the network.
    pub network: Option<bool>,
    /// `network: { allow }`: the allowlist's entries (checked with `sandboxNetworkAllow`).
    pub network_allow: Option<Vec<String>>,
    /// Canonical absolute paths the tests may also read.
    pub read_paths: Option<Vec<String>>,
    /// Canonical absolute paths the tests may also read and write.
    pub write_paths: Option<Vec<String>>,
    /// Simulate a system with fewer sandbox features.
    pub sandbox_limit: Option<SandboxFeatureLimit>,
    /// The process table whose sessions' ports this tool's processes may connect to.
    pub port_group: Option<u32>,
    /// The resource caps of the tree (defaults filled in by `sandboxLimits`).
    pub limits: Option<crate::sandbox::SandboxLimits>,
}

#[napi(object)]
pub struct TestFailure {
    pub name: String,
    pub file: Option<String>,
    pub output: String,
}

#[napi(object)]
#[derive(Default)]
pub struct RunTestsResult {
    /// `"passed"`, `"failed"` or `"incomplete"`.
    pub status: Option<String>,
    pub report: Option<String>,
    pub passed: Option<f64>,
    pub failed: Option<f64>,
    pub skipped: Option<f64>,
    pub failures: Option<Vec<TestFailure>>,
    pub build_errors: Option<Vec<String>>,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<f64>,
    pub timeout_ms: Option<f64>,
    pub note: Option<String>,
    pub sandbox: Option<SandboxReport>,
    /// With `network: { allow }`: the connections through the proxy.
    pub network: Option<crate::sandbox::NetworkCounts>,
    pub error: Option<NativeError>,
}

impl From<workcell_core::Result<TestsOutput>> for RunTestsResult {
    fn from(r: workcell_core::Result<TestsOutput>) -> Self {
        match r {
            Ok(o) => RunTestsResult {
                status: Some(o.status.as_str().to_string()),
                report: Some(o.report),
                passed: Some(o.passed as f64),
                failed: Some(o.failed as f64),
                skipped: Some(o.skipped as f64),
                failures: Some(o.failures.into_iter().map(|f| TestFailure { name: f.name, file: f.file, output: f.output }).collect()),
                build_errors: Some(o.build_errors),
                exit_code: o.exit_code,
                duration_ms: Some(o.duration_ms as f64),
                timeout_ms: Some(o.timeout_ms as f64),
                note: o.note,
                sandbox: Some(o.sandbox.into()),
                network: o.network.map(Into::into),
                error: None,
            },
            Err(e) => RunTestsResult { error: Some(e.into()), ..Default::default() },
        }
    }
}

fn options(o: RunTestsOptions) -> napi::Result<TestsOptions> {
    let mut opts = TestsOptions::new(o.path, o.node_path);
    opts.policy = policy_of(o.deny_commands, o.allow_commands);
    opts.env = env_of(o.env);
    set_ms(&mut opts.timeout, o.timeout_ms);
    set_ms(&mut opts.max_timeout, o.max_timeout_ms);
    opts.cargo_home = o.cargo_home.map(Into::into);
    opts.rustup_home = o.rustup_home.map(Into::into);
    opts.go_cache = o.go_cache.map(Into::into);
    opts.go_mod_cache = o.go_mod_cache.map(Into::into);
    opts.scratch_parent = o.scratch_dir.into();
    opts.reaper = reaper_of(o.reaper)?;
    opts.sandbox = crate::sandbox::options(o.sandbox, o.network, o.network_allow, o.read_paths, o.write_paths, o.sandbox_limit, o.limits)?;
    crate::sandbox::connect_to_group(&mut opts.sandbox, o.port_group);
    validated(opts, TestsOptions::validate)
}

fn request(runner: Utf16String, args: Vec<Utf16String>, timeout_ms: Option<f64>) -> workcell_core::Result<TestsRequest> {
    let runner = strict_string(runner)?;
    let args = args.into_iter().map(strict_string).collect::<workcell_core::Result<Vec<_>>>()?;
    Ok(TestsRequest { runner, args, timeout_ms })
}

#[napi]
impl NativeWorkspace {
    /// Checks run_tests's input (runner, args, timeout) without any effect. Throws (message: the
    /// tool error's JSON) with `TOOL_ARGUMENTS_INVALID`.
    #[napi]
    pub fn check_run_tests(&self, runner: Utf16String, args: Vec<Utf16String>, timeout_ms: Option<f64>, options: RunTestsOptions) -> napi::Result<()> {
        let opts = self::options(options)?;
        request(runner, args, timeout_ms).and_then(|req| testrun::check_request(&req, &opts)).map(|_| ()).map_err(throw)
    }

    /// run_tests: resolves to the report or to `{ error }`; never rejects for a tool error.
    #[napi(ts_return_type = "Promise<RunTestsResult>")]
    pub fn run_tests<'env>(
        &self,
        env: &'env Env,
        runner: Utf16String,
        args: Vec<Utf16String>,
        timeout_ms: Option<f64>,
        options: RunTestsOptions,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, RunTestsResult>> {
        let opts = self::options(options)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(runner, args, timeout_ms), move |req| async move {
            testrun::run_tests(&ws, &req, &opts, &cancel).await
        })
    }
}
