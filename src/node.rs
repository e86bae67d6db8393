//! node_process and the process machinery's diagnostics: conversion only. The host's options
//! are the core's `NodeOptions` (serde), the result the core's `NodeOutput`, passed through as
//! `{ ok } | { error }`.

use std::sync::Arc;

use napi::bindgen_prelude::{PromiseRaw, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::node::{self, NodeOptions, NodeOutput, NodeRequest};
use workcell_core::api::process::Reaper;

use crate::convert::{strict_string, strict_strings, throw};
use crate::outcome::{Json, Outcome};
use crate::process_tool::{host_options, spawn_call};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// Checks at load that pidfds work, so the first call does not pay for it and the reaper in use
/// is known from the start.
#[napi_derive::module_init]
fn probe_process_support() {
    workcell_core::api::process::pidfd_available();
}

/// How this process observes child exits: `"pidfd"` or `"thread"` (never SIGCHLD).
#[napi]
pub fn process_reaper() -> String {
    Reaper::Auto.resolve().as_str().to_string()
}

fn request(source: Utf16String, arguments: Vec<Utf16String>, timeout_ms: Option<f64>) -> workcell_core::api::Result<NodeRequest> {
    Ok(NodeRequest { source: strict_string(source)?, arguments: strict_strings(arguments)?, timeout_ms })
}

#[napi]
impl NativeWorkspace {
    /// Checks node_process's input against every limit without any effect. Throws (message:
    /// the tool error's JSON) with `TOOL_ARGUMENTS_INVALID`.
    #[napi]
    pub fn check_node_process(&self, exec_path: String, source: Utf16String, arguments: Vec<Utf16String>) -> napi::Result<()> {
        request(source, arguments, None)
            .and_then(|req| node::check_request(&req, exec_path.as_ref(), self.ws.canonical()))
            .map_err(throw)
    }

    /// node_process: resolves to `{ ok }` (the output) or to `{ error }` (timeout,
    /// cancellation, limits); never rejects for a tool error. `timeoutMs` is the model's, clamped
    /// in the core to the host's `maxTimeoutMs`. Throws synchronously when `options` (the core's
    /// `NodeOptions` as JSON) are unusable.
    #[napi(
        ts_args_type = "source: string, arguments: Array<string>, timeoutMs: number | undefined | null, options: object, cancel?: CancelHandle | undefined | null",
        ts_return_type = "Promise<C.Outcome<Omit<C.NodeProcessOutput, \"denials\">>>"
    )]
    pub fn node_process<'env>(
        &self,
        env: &'env Env,
        source: Utf16String,
        arguments: Vec<Utf16String>,
        timeout_ms: Option<f64>,
        options: serde_json::Value,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<PromiseRaw<'env, Json<Outcome<NodeOutput>>>> {
        let opts = host_options(options, NodeOptions::validate)?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        spawn_call(env, request(source, arguments, timeout_ms), move |req| async move {
            node::node_process(&ws, &req, &opts, &cancel).await
        })
    }
}
