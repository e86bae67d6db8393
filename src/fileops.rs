//! move_file, delete_file, make_directory: argument conversion only.

use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::fileops::{self, DeleteRequest, MoveRequest, NameRequest};

use crate::convert::{expected_of, strict_string, throw, PathHash};
use crate::guard::{guard_of, WriteGuard};
use crate::outcome::start_checked;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

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
                .with_expected(expected_of(expected)?)
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
fn name_request(path: Utf16String, guard: Option<&WriteGuard>, expected: Option<Vec<PathHash>>) -> workcell_core::api::Result<NameRequest> {
    NameRequest::new(&strict_string(path)?)?.with_guard(guard_of(guard)).with_expected(expected_of(expected)?)
}
