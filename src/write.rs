use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::write::{self, WriteRequest, MAX_WRITE_BYTES};

use crate::convert::throw;
use crate::outcome::settled_by;
use crate::guard::{guard_of, WriteGuard};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

fn request(path: &Utf16String, content: &Utf16String, max_bytes: Option<u32>) -> workcell_core::api::Result<WriteRequest> {
    WriteRequest::from_utf16(path, content, max_bytes.map_or(MAX_WRITE_BYTES, |m| m as usize))
}

/// Applies write_file's effect-free checks (path grammar, no trailing `/`, well-formed content
/// within the limit) and returns the normalized path; throws (message: the tool error's JSON).
#[napi]
pub fn check_write_arguments(path: Utf16String, content: Utf16String, max_bytes: Option<u32>) -> napi::Result<String> {
    request(&path, &content, max_bytes).map(|r| r.path().as_str().to_string()).map_err(throw)
}

#[napi]
impl NativeWorkspace {
    /// write_file: resolves to `{ ok: { path, bytes, created } }` or to `{ error }`; never rejects.
    /// The call's place in the per-target queue is taken synchronously, here, so writes run in
    /// call order; all filesystem work happens off the JS thread (usually on one blocking-pool
    /// thread, which settles the promise directly).
    #[napi(ts_return_type = "Promise<C.Outcome<C.WriteFileOutput>>")]
    #[allow(clippy::too_many_arguments)]
    pub fn write_file<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        content: Utf16String,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        expected_hash: Option<String>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let cancel = cancel_of(cancel);
        let checked =
            request(&path, &content, max_bytes).map(|r| r.with_expected_hash(expected_hash).with_guard(guard_of(guard)));
        drop((path, content));
        let (promise, settle) = settled_by(env)?;
        match checked {
            Err(e) => settle(Err(e)),
            Ok(req) => {
                let ticket = write::ticket();
                let ws = self.ws.clone();
                napi::bindgen_prelude::within_runtime_if_available(move || {
                    write::spawn_write(ws, req, ticket, cancel, settle)
                });
            }
        }
        Ok(promise)
    }
}
