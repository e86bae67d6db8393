//! One result value per call, passed through from the core's own types: `{ ok: T }` or
//! `{ error: { code, message, hint?, details? } }`, built by serde straight into JS values (no
//! mirror structs; `crate::js` does the conversion), and the start of a call on workcell's own
//! threads (never libuv's pool).

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::{sys, Env};
use serde::Serialize;
use workcell_core::api::pool::{self, Lane};
use workcell_core::api::{Code, Error};

/// What a call resolves to.
#[derive(Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome<T> {
    Ok(T),
    Error(Error),
}

impl<T> From<workcell_core::api::Result<T>> for Outcome<T> {
    fn from(r: workcell_core::api::Result<T>) -> Self {
        match r {
            Ok(v) => Outcome::Ok(v),
            Err(e) => Outcome::Error(e),
        }
    }
}

/// A serde value converted to JS when it is returned.
pub struct Json<T>(pub T);

impl<T: Serialize> ToNapiValue for Json<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        crate::js::to_js(env, &val.0)
    }
}

/// A promise and the function that settles it, from any thread, with a call's outcome (for the
/// calls that take their queue places synchronously and then run on the core's own tasks);
/// settled through the shared queue (crate::settle), as `on_pool` is.
pub fn settled_by<'env, T: Serialize + Send + 'static>(
    env: &'env Env,
) -> napi::Result<(Object<'env>, impl FnOnce(workcell_core::api::Result<T>) + Send + 'static)> {
    let (deferred, promise) = crate::settle::deferred::<Json<Outcome<T>>>(env)?;
    Ok((promise, move |out: workcell_core::api::Result<T>| deferred.resolve(move |_env| Ok(Json(Outcome::from(out))))))
}

/// How a call started by [`start_checked`] is settled.
pub type Settle<T> = Box<dyn FnOnce(workcell_core::api::Result<T>) + Send + 'static>;

/// A call whose request was checked synchronously: a refused request settles the promise with
/// its error at once; otherwise `start` runs now, within the runtime (so the queue places it
/// takes are taken in call order), and hands `settle` to the core's task.
pub fn start_checked<'env, R: Send + 'static, T: Serialize + Send + 'static>(
    env: &'env Env,
    checked: workcell_core::api::Result<R>,
    start: impl FnOnce(R, Settle<T>) + Send + 'static,
) -> napi::Result<Object<'env>> {
    let (promise, settle) = settled_by::<T>(env)?;
    match checked {
        Err(e) => settle(Err(e)),
        Ok(req) => {
            let settle: Settle<T> = Box::new(settle);
            napi::bindgen_prelude::within_runtime_if_available(move || start(req, settle));
        }
    }
    Ok(promise)
}

/// Runs `f` on `lane`'s threads and resolves to its outcome; never rejects for a tool error
/// (a panic in `f` is an internal `IO_ERROR`).
pub fn on_pool<'env, T: Serialize + Send + 'static>(
    env: &'env Env,
    lane: Lane,
    f: impl FnOnce() -> workcell_core::api::Result<T> + Send + 'static,
) -> napi::Result<Object<'env>> {
    // Settled through the shared queue (crate::settle): one loop wake-up for every call that
    // finished since the last, not a threadsafe function per call.
    let (deferred, promise) = crate::settle::deferred::<Json<Outcome<T>>>(env)?;
    if lane == Lane::File {
        // A read or a hash: done in microseconds, so the loop watches for it (crate::settle).
        crate::settle::poll_briefly(env.raw());
    }
    pool::spawn(lane, move || {
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|_| {
            Err(Error::new(Code::IoError, "the call stopped unexpectedly").with_hint("an internal error stopped the call; retry it"))
        });
        deferred.resolve(move |_env| Ok(Json(Outcome::from(out))));
    });
    Ok(promise)
}
