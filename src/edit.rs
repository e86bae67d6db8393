use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::edit::{self, Edit, EditRequest};
use workcell_core::api::write::{self, MAX_WRITE_BYTES};

use crate::convert::{strict_string, throw};
use crate::outcome::settled_by;
use crate::guard::{guard_of, WriteGuard};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// One replacement, as the model sent it.
#[napi(object, object_to_js = false)]
pub struct EditArg {
    pub old_text: Utf16String,
    pub new_text: Utf16String,
}

fn request(path: Utf16String, edits: Vec<EditArg>, max_bytes: Option<u32>) -> workcell_core::api::Result<EditRequest> {
    let path = strict_string(path)?;
    let edits = edits
        .into_iter()
        .map(|e| Ok(Edit { old_text: strict_string(e.old_text)?, new_text: strict_string(e.new_text)? }))
        .collect::<workcell_core::api::Result<Vec<_>>>()?;
    EditRequest::new(&path, edits, max_bytes.map_or(MAX_WRITE_BYTES, |m| m as usize))
}

/// Applies edit_file's effect-free checks and returns the normalized path; throws (message:
/// the tool error's JSON).
#[napi]
pub fn check_edit_arguments(path: Utf16String, edits: Vec<EditArg>, max_bytes: Option<u32>) -> napi::Result<String> {
    request(path, edits, max_bytes).map(|r| r.path().as_str().to_string()).map_err(throw)
}

#[napi]
impl NativeWorkspace {
    /// edit_file: resolves to `{ ok: { path, edits, bytes, diff } }` or to `{ error }`; never rejects.
    /// Takes its place in the target's write queue synchronously (shared with write_file).
    #[napi(ts_return_type = "Promise<C.Outcome<C.EditFileOutput>>")]
    #[allow(clippy::too_many_arguments)]
    pub fn edit_file<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        edits: Vec<EditArg>,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        expected_hash: Option<String>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let cancel = cancel_of(cancel);
        let checked = request(path, edits, max_bytes).map(|r| r.with_expected_hash(expected_hash).with_guard(guard_of(guard)));
        let (promise, settle) = settled_by(env)?;
        match checked {
            Err(e) => settle(Err(e)),
            Ok(req) => {
                let ticket = write::ticket();
                let ws = self.ws.clone();
                napi::bindgen_prelude::within_runtime_if_available(move || edit::spawn_edit(ws, req, ticket, cancel, settle));
            }
        }
        Ok(promise)
    }
}
