//! apply_patch: argument conversion only.

use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::patch::{self, PatchRequest};
use workcell_core::api::write::MAX_WRITE_BYTES;

use crate::convert::{expected_of, strict_string, throw, PathHash};
use crate::outcome::start_checked;
use crate::guard::{guard_of, WriteGuard};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// `root`: the workspace's canonical path (absolute paths beneath it are accepted, made relative).
pub(crate) fn patch_request(root: Option<&str>, patch: Utf16String, expected: Option<Vec<PathHash>>, max_bytes: Option<u32>) -> workcell_core::api::Result<PatchRequest> {
    PatchRequest::new_in(root, &strict_string(patch)?, expected_of(expected)?, max_bytes.map_or(MAX_WRITE_BYTES, |m| m as usize))
}

/// Applies apply_patch's effect-free checks (the whole format, paths, limits) and returns the
/// number of files the patch touches; throws (message: the tool error's JSON). `root`: the
/// workspace's canonical path, beneath which an absolute path is accepted.
#[napi]
pub fn check_patch_arguments(patch: Utf16String, expected_hashes: Option<Vec<PathHash>>, max_bytes: Option<u32>, root: Option<String>) -> napi::Result<u32> {
    patch_request(root.as_deref(), patch, expected_hashes, max_bytes).map(|r| r.targets().len() as u32).map_err(throw)
}

/// Every path a (valid) patch touches, normalized (relative) and in order: an Update's Move to
/// right after its source (what rules, the audit and the write guard see); throws like
/// `checkPatchArguments` for an invalid patch. `root` as there.
#[napi]
pub fn patch_paths(patch: Utf16String, root: Option<String>) -> napi::Result<Vec<String>> {
    (|| workcell_core::api::patch::parse_in(&strict_string(patch)?, workcell_core::api::write::MAX_WRITE_BYTES_CEILING, root.as_deref()))()
        .map(|p| p.targets().iter().map(|t| t.as_str().to_string()).collect())
        .map_err(throw)
}

#[napi]
impl NativeWorkspace {
    /// apply_patch: resolves to `{ ok: { files, diff, note? } }` or to `{ error }`; never rejects. Its
    /// places in the targets' write queues are taken synchronously, here.
    #[napi(
        ts_return_type = "Promise<C.Outcome<C.ApplyPatchOutput>>"
    )]
    pub fn apply_patch<'env>(
        &self,
        env: &'env Env,
        patch: Utf16String,
        expected_hashes: Option<Vec<PathHash>>,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let (ws, cancel) = (self.ws.clone(), cancel_of(cancel));
        let checked = patch_request(patch::root_of(&ws).as_deref(), patch, expected_hashes, max_bytes).map(|r| r.with_guard(guard_of(guard)));
        start_checked(env, checked, move |req, settle| {
            let tickets = patch::tickets_for(&req);
            patch::spawn_patch(ws, req, tickets, cancel, settle)
        })
    }
}
