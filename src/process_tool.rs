//! What the bindings of the process tools share: the host's options from JS (the core's own
//! option structs, deserialized), and the start of a call that resolves to its result value.

use std::future::Future;
use std::time::Duration;

use napi::bindgen_prelude::{PromiseRaw, ToNapiValue};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::policy::Policy;
use workcell_core::api::process::Reaper;

use crate::outcome::{Json, Outcome};

/// One environment variable for the child.
#[napi(object)]
pub struct EnvVar {
    pub name: String,
    pub value: String,
}

/// An error for the host (a thrown `Error` whose message starts with `workcell: `).
pub(crate) fn host_error(message: impl std::fmt::Display) -> napi::Error {
    napi::Error::from_reason(format!("workcell: {message}"))
}

/// The host's options of a process tool: the core's options struct from its JSON form,
/// checked with its `validate`; a host error when unusable.
pub(crate) fn host_options<T: serde::de::DeserializeOwned>(value: serde_json::Value, validate: impl FnOnce(&T) -> Result<(), String>) -> napi::Result<T> {
    workcell_core::api::process::from_json(value, validate).map_err(host_error)
}

/// A call's outcome as the `{ ok } | { error }` value.
impl<T> From<workcell_core::api::Result<T>> for Json<Outcome<T>> {
    fn from(r: workcell_core::api::Result<T>) -> Self {
        Json(Outcome::from(r))
    }
}

pub(crate) fn policy_of(deny: Option<Vec<String>>, allow: Option<Vec<String>>) -> Policy {
    let mut policy = Policy::default();
    if let Some(deny) = deny {
        policy.deny_commands = deny;
    }
    policy.allow_commands = allow;
    policy
}

pub(crate) fn reaper_of(r: Option<String>) -> napi::Result<Reaper> {
    match r {
        None => Ok(Reaper::Auto),
        Some(r) => Reaper::parse(&r).ok_or_else(|| host_error(format_args!("unknown reaper {r:?}"))),
    }
}

/// The host's variables, by name and value, in their order.
pub(crate) fn env_of(env: Option<Vec<EnvVar>>) -> Vec<(String, String)> {
    env.unwrap_or_default().into_iter().map(|v| (v.name, v.value)).collect()
}

/// Sets `target` to `ms` milliseconds when the host gave a value.
pub(crate) fn set_ms(target: &mut Duration, ms: Option<u32>) {
    if let Some(ms) = ms {
        *target = Duration::from_millis(ms as u64);
    }
}

/// Runs a checked request on tokio and resolves to its result value (`{ error }` for a tool
/// error, a request refused by the conversion included): the promise never rejects for a tool
/// error.
pub(crate) fn spawn_call<'env, Req, Out, R, Fut>(
    env: &'env Env,
    req: workcell_core::api::Result<Req>,
    run: impl FnOnce(Req) -> Fut,
) -> napi::Result<PromiseRaw<'env, R>>
where
    Fut: Future<Output = workcell_core::api::Result<Out>> + Send + 'static,
    R: From<workcell_core::api::Result<Out>> + ToNapiValue + Send + 'static,
{
    let call = req.map(run);
    env.spawn_future(async move {
        let result = match call {
            Ok(call) => call.await,
            Err(e) => Err(e),
        };
        Ok(R::from(result))
    })
}
