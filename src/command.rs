//! run_command: conversion only. The host's options are the core's `CommandOptions` (serde),
//! the result the core's `CommandOutput`, passed through as `{ ok } | { error }`.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::command::{self, CommandOptions, CommandOutput, CommandRequest};

use crate::convert::{strict_string, strict_strings, throw};
use crate::outcome::{Json, Outcome};
use crate::process_tool::{host_options, spawn_call};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

fn request(argv: Vec<Utf16String>, cwd: Option<Utf16String>, timeout_ms: Option<f64>) -> workcell_core::api::Result<CommandRequest> {
    Ok(CommandRequest { argv: strict_strings(argv)?, cwd: cwd.map(strict_string).transpose()?, timeout_ms })
}

#[napi]
impl NativeWorkspace {
    /// Checks run_command's input (policy, cwd grammar, timeout) without any effect. Throws
    /// (message: the tool error's JSON) with `TOOL_ARGUMENTS_INVALID`; throws a host error when
    /// `options` (the core's `CommandOptions` as JSON) are unusable.
    #[napi(ts_args_type = "argv: Array<string>, cwd: string | undefined | null, timeoutMs: number | undefined | null, options: object")]
    pub fn check_run_command(&self, argv: Vec<Utf16String>, cwd: Option<Utf16String>, timeout_ms: Option<f64>, options: serde_json::Value) -> napi::Result<()> {
        let opts = host_options(options, CommandOptions::validate)?;
        request(argv, cwd, timeout_ms).and_then(|req| command::check_request(&req, &opts)).map(|_| ()).map_err(throw)
    }

    /// run_command: resolves to `{ ok }` (the output) or to `{ error }` (timeout, cancellation,
    /// refusals); never rejects for a tool error. Throws synchronously when `options` are
    /// unusable.
    #[napi(
        ts_args_type = "argv: Array<string>, cwd: string | undefined | null, timeoutMs: number | undefined | null, options: object, cancel?: CancelHandle | undefined | null",
        ts_return_type = "Promise<C.Outcome<Omit<C.RunCommandOutput, \"denials\">>>"
    )]
    pub fn run_command<'env>(
        &self,
        env: &'env Env,
        argv: Vec<Utf16String>,
        cwd: Option<Utf16String>,
        timeout_ms: Option<f64>,
        options: serde_json::Value,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<CommandOutput>>>> {
        let opts = host_options(options, CommandOptions::validate)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(argv, cwd, timeout_ms), move |req| async move {
            command::run_command(&ws, &req, &opts, &cancel).await
        })
    }
}
