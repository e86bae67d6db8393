use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::list::ListOptions;
use workcell_core::api::pool::Lane;

use crate::convert::strict_string;
use crate::outcome::on_pool;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi]
impl NativeWorkspace {
    /// list_files: resolves to `{ ok: { path, entries, truncated, notShown, note? } }` or to
    /// `{ error }`; never rejects.
    #[napi(
        ts_return_type = "Promise<C.Outcome<C.ListFilesOutput>>"
    )]
    pub fn list_files<'env>(
        &self,
        env: &'env Env,
        path: Option<Utf16String>,
        depth: Option<u32>,
        limit: Option<u32>,
        gitignore: Option<bool>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<Object<'env>> {
        let (ws, path, cancel) = (self.ws.clone(), path.map(strict_string), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || {
            let path = match path {
                None => None,
                Some(p) => workcell_core::api::list::parse_start(&p?)?,
            };
            let defaults = ListOptions::default();
            let opts = ListOptions {
                path,
                depth: depth.unwrap_or(defaults.depth),
                limit: limit.unwrap_or(defaults.limit),
                gitignore: gitignore.unwrap_or(defaults.gitignore),
            };
            workcell_core::api::list::list_files(&ws, &opts, &cancel)
        })
    }
}
