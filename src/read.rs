use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::pool::Lane;

use crate::convert::strict_string;
use crate::outcome::on_pool;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi]
impl NativeWorkspace {
    /// read_file: resolves to `{ ok: { path, content, bytes, hash } }` (an image:
    /// `{ ok: { path, mimeType, data, bytes, hash } }`) or to `{ error }`; never rejects.
    #[napi(
        ts_return_type = "Promise<C.Outcome<C.ReadResult>>"
    )]
    pub fn read_file<'env>(&self, env: &'env Env, path: Utf16String, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (ws, path, cancel) = (self.ws.clone(), strict_string(path), cancel_of(cancel));
        on_pool(env, Lane::File, move || {
            let rel = workcell_core::api::parse_path(&path?)?;
            workcell_core::api::read::read_file_or_image(&ws, &rel, &cancel)
        })
    }

    /// read_file with `offset` / `limit`: a window of lines; resolves to `{ ok }` or `{ error }`.
    #[napi(
        ts_return_type = "Promise<C.Outcome<C.ReadFileWindow>>"
    )]
    pub fn read_file_window<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        offset: Option<i64>,
        limit: Option<i64>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<Object<'env>> {
        let (ws, path, cancel) = (self.ws.clone(), strict_string(path), cancel_of(cancel));
        on_pool(env, Lane::File, move || {
            // Out-of-range numbers (negative, zero, too large) are refused by the core.
            let n = |v: Option<i64>| v.map(|v| u64::try_from(v).unwrap_or(0));
            let rel = workcell_core::api::parse_path(&path?)?;
            workcell_core::api::read::read_window(&ws, &rel, n(offset), n(limit), &cancel)
        })
    }
}
