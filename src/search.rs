use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::pool::Lane;
use workcell_core::api::search::SearchOptions;

use crate::convert::strict_string;
use crate::outcome::on_pool;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi(object)]
pub struct SearchArgs {
    pub ignore_case: Option<bool>,
    pub literal: Option<bool>,
    pub limit: Option<u32>,
    pub gitignore: Option<bool>,
}

#[napi]
impl NativeWorkspace {
    /// search_files: resolves to `{ ok: { matches, truncated, filesSearched, note? } }` or to
    /// `{ error }`; never rejects.
    #[napi(
        ts_return_type = "Promise<C.Outcome<C.SearchFilesOutput>>"
    )]
    pub fn search_files<'env>(
        &self,
        env: &'env Env,
        pattern: Utf16String,
        path: Option<Utf16String>,
        glob: Option<Utf16String>,
        args: SearchArgs,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<Object<'env>> {
        let ws = self.ws.clone();
        let (pattern, path, glob, cancel) =
            (strict_string(pattern), path.map(strict_string), glob.map(strict_string), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || {
            let mut opts = SearchOptions::new(pattern?);
            if let Some(p) = path {
                opts.path = workcell_core::api::search::parse_start(&p?)?;
            }
            if let Some(g) = glob {
                opts.glob = Some(g?);
            }
            opts.ignore_case = args.ignore_case.unwrap_or(false);
            opts.literal = args.literal.unwrap_or(false);
            opts.limit = args.limit.unwrap_or(opts.limit);
            opts.gitignore = args.gitignore.unwrap_or(true);
            workcell_core::api::search::search_files(&ws, &opts, &cancel)
        })
    }
}

#[napi]
pub fn check_search_pattern(
    pattern: Utf16String,
    glob: Option<Utf16String>,
    ignore_case: Option<bool>,
    literal: Option<bool>,
) -> napi::Result<()> {
    let run = || -> workcell_core::api::Result<()> {
        let pattern = strict_string(pattern)?;
        let glob = glob.map(strict_string).transpose()?;
        workcell_core::api::search::check_arguments(&pattern, glob.as_deref(), ignore_case.unwrap_or(false), literal.unwrap_or(false))
    };
    run().map_err(crate::convert::throw)
}
