//! apply_patch, move_file, delete_file, make_directory: argument conversion only.

use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::fileops::{self, DeleteRequest, MoveRequest, NameRequest};
use workcell_core::patch::{self, PatchRequest};
use workcell_core::write::MAX_WRITE_BYTES;

use crate::convert::{strict_string, throw};
use crate::outcome::start_checked;
use crate::guard::{guard_of, WriteGuard};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// One entry of `expectedHashes`.
#[napi(object, object_to_js = false)]
pub struct PathHash {
    pub path: Utf16String,
    pub hash: String,
}

/// `root`: the workspace's canonical path (absolute paths beneath it are accepted, made relative).
pub(crate) fn patch_request(root: Option<&str>, patch: Utf16String, expected: Option<Vec<PathHash>>, max_bytes: Option<u32>) -> workcell_core::Result<PatchRequest> {
    PatchRequest::new_in(root, &strict_string(patch)?, crate::approval::expected_of(expected)?, max_bytes.map_or(MAX_WRITE_BYTES, |m| m as usize))
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
    (|| workcell_core::patch::parse::parse_in(&strict_string(patch)?, workcell_core::write::MAX_WRITE_BYTES_CEILING, root.as_deref()))()
        .map(|p| p.targets().iter().map(|t| t.as_str().to_string()).collect())
        .map_err(throw)
}

/// move_file's effect-free checks; returns the normalized `[from, to]`.
#[napi]
pub fn check_move_arguments(from: Utf16String, to: Utf16String) -> napi::Result<Vec<String>> {
    (|| MoveRequest::new(&strict_string(from)?, &strict_string(to)?, false))()
        .map(|r| vec![r.from().as_str().to_string(), r.to().as_str().to_string()])
        .map_err(throw)
}

/// delete_file's and make_directory's effect-free checks; returns the normalized path.
#[napi]
pub fn check_name_argument(path: Utf16String) -> napi::Result<String> {
    (|| DeleteRequest::new(&strict_string(path)?))().map(|r| r.path().as_str().to_string()).map_err(throw)
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

    /// move_file: resolves to `{ ok: { from, to, replaced } }` or to `{ error }`.
    #[napi(ts_return_type = "Promise<C.Outcome<C.MoveFileOutput>>")]
    pub fn move_file<'env>(
        &self,
        env: &'env Env,
        from: Utf16String,
        to: Utf16String,
        overwrite: Option<bool>,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
        expected: Option<Vec<PathHash>>,
    ) -> napi::Result<Object<'env>> {
        let (ws, cancel) = (self.ws.clone(), cancel_of(cancel));
        let checked = (|| {
            MoveRequest::new(&strict_string(from)?, &strict_string(to)?, overwrite.unwrap_or(false))?
                .with_guard(guard_of(guard))
                .with_expected(crate::approval::expected_of(expected)?)
        })();
        start_checked(env, checked, move |req, settle| fileops::spawn(fileops::move_file(ws, req, fileops::move_tickets(), cancel), settle))
    }

    /// delete_file: resolves to `{ ok: { path, kind } }` or to `{ error }`.
    #[napi(ts_return_type = "Promise<C.Outcome<C.DeleteFileOutput>>")]
    pub fn delete_file<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
        expected: Option<Vec<PathHash>>,
    ) -> napi::Result<Object<'env>> {
        let (ws, cancel) = (self.ws.clone(), cancel_of(cancel));
        start_checked(env, name_request(path, guard, expected), move |req, settle| {
            fileops::spawn(fileops::delete_file(ws, req, fileops::one_ticket(), cancel), settle)
        })
    }

    /// make_directory: resolves to `{ ok: { path, created } }` or to `{ error }`.
    #[napi(ts_return_type = "Promise<C.Outcome<C.MakeDirectoryOutput>>")]
    pub fn make_directory<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
        expected: Option<Vec<PathHash>>,
    ) -> napi::Result<Object<'env>> {
        let (ws, cancel) = (self.ws.clone(), cancel_of(cancel));
        start_checked(env, name_request(path, guard, expected), move |req, settle| {
            fileops::spawn(fileops::make_directory(ws, req, fileops::one_ticket(), cancel), settle)
        })
    }
}

/// delete_file's and make_directory's request: the path, the guard, the approved hashes.
fn name_request(path: Utf16String, guard: Option<&WriteGuard>, expected: Option<Vec<PathHash>>) -> workcell_core::Result<NameRequest> {
    NameRequest::new(&strict_string(path)?)?.with_guard(guard_of(guard)).with_expected(crate::approval::expected_of(expected)?)
}
