//! run_tests: conversion only. The host's options are the core's `TestsOptions` (serde), the
//! result the core's `TestsOutput`, passed through as `{ ok } | { error }`.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::testrun::{self, TestsOptions, TestsOutput, TestsRequest};

use crate::convert::{strict_string, strict_strings, throw};
use crate::outcome::{Json, Outcome};
use crate::process_tool::{host_options, spawn_call};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

fn request(runner: Utf16String, args: Vec<Utf16String>, timeout_ms: Option<f64>) -> workcell_core::api::Result<TestsRequest> {
    Ok(TestsRequest { runner: strict_string(runner)?, args: strict_strings(args)?, timeout_ms })
}

#[napi]
impl NativeWorkspace {
    /// Checks run_tests's input (runner, args, timeout) without any effect. Throws (message: the
    /// tool error's JSON) with `TOOL_ARGUMENTS_INVALID`; throws a host error when `options` (the
    /// core's `TestsOptions` as JSON) are unusable.
    #[napi(ts_args_type = "runner: string, args: Array<string>, timeoutMs: number | undefined | null, options: object")]
    pub fn check_run_tests(&self, runner: Utf16String, args: Vec<Utf16String>, timeout_ms: Option<f64>, options: serde_json::Value) -> napi::Result<()> {
        let opts = host_options(options, TestsOptions::validate)?;
        request(runner, args, timeout_ms).and_then(|req| testrun::check_request(&req, &opts)).map(|_| ()).map_err(throw)
    }

    /// run_tests: resolves to `{ ok }` (the report) or to `{ error }`; never rejects for a tool
    /// error.
    #[napi(
        ts_args_type = "runner: string, args: Array<string>, timeoutMs: number | undefined | null, options: object, cancel?: CancelHandle | undefined | null",
        ts_return_type = "Promise<C.Outcome<Omit<C.RunTestsOutput, \"denials\">>>"
    )]
    pub fn run_tests<'env>(
        &self,
        env: &'env Env,
        runner: Utf16String,
        args: Vec<Utf16String>,
        timeout_ms: Option<f64>,
        options: serde_json::Value,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<TestsOutput>>>> {
        let opts = host_options(options, TestsOptions::validate)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(runner, args, timeout_ms), move |req| async move {
            testrun::run_tests(&ws, &req, &opts, &cancel).await
        })
    }
}
