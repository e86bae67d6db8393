use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Utf16String};
use napi::{Env, Task};
use napi_derive::napi;
use workcell_core::search::{SearchOptions, SearchOutput};
use workcell_core::{Cancel, Workspace};

use crate::convert::{strict_string, NativeError};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi(object)]
pub struct SearchResult {
    pub matches: Option<Vec<String>>,
    pub truncated: Option<bool>,
    pub files_searched: Option<f64>,
    pub note: Option<String>,
    pub error: Option<NativeError>,
}

/// The arguments of one search, as plain data (strings checked for lone surrogates in Rust).
#[napi(object)]
pub struct SearchArgs {
    pub ignore_case: Option<bool>,
    pub literal: Option<bool>,
    pub limit: Option<u32>,
    pub gitignore: Option<bool>,
}

pub struct SearchTask {
    ws: Arc<Workspace>,
    pattern: workcell_core::Result<String>,
    path: Option<workcell_core::Result<String>>,
    glob: Option<workcell_core::Result<String>>,
    args: SearchArgs,
    cancel: Cancel,
}

impl SearchTask {
    fn run(&self) -> workcell_core::Result<SearchOutput> {
        let mut opts = SearchOptions::new(self.pattern.clone()?);
        if let Some(p) = &self.path {
            opts.path = workcell_core::walk::parse_start(p.as_ref().map_err(Clone::clone)?)?;
        }
        if let Some(g) = &self.glob {
            opts.glob = Some(g.clone()?);
        }
        opts.ignore_case = self.args.ignore_case.unwrap_or(false);
        opts.literal = self.args.literal.unwrap_or(false);
        opts.limit = self.args.limit.unwrap_or(opts.limit);
        opts.gitignore = self.args.gitignore.unwrap_or(true);
        workcell_core::search::search_files(&self.ws, &opts, &self.cancel)
    }
}

impl Task for SearchTask {
    type Output = workcell_core::Result<SearchOutput>;
    type JsValue = SearchResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.run())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<SearchResult> {
        Ok(match output {
            Ok(o) => SearchResult {
                matches: Some(o.matches),
                truncated: Some(o.truncated),
                files_searched: Some(o.files_searched as f64),
                note: o.note,
                error: None,
            },
            Err(e) => SearchResult { matches: None, truncated: None, files_searched: None, note: None, error: Some(e.into()) },
        })
    }
}

#[napi]
impl NativeWorkspace {
    /// search_files: resolves to the matches or to `{ error }`; never rejects.
    #[napi(ts_return_type = "Promise<SearchResult>")]
    pub fn search_files(
        &self,
        pattern: Utf16String,
        path: Option<Utf16String>,
        glob: Option<Utf16String>,
        args: SearchArgs,
        cancel: Option<&CancelHandle>,
    ) -> AsyncTask<SearchTask> {
        AsyncTask::new(SearchTask {
            ws: self.ws.clone(),
            pattern: strict_string(pattern),
            path: path.map(strict_string),
            glob: glob.map(strict_string),
            args,
            cancel: cancel_of(cancel),
        })
    }
}

/// Compiles a search pattern (and glob) without searching; throws (message: the tool error's
/// JSON) with `TOOL_ARGUMENTS_INVALID` when either does not compile, the parser's message in
/// the hint.
#[napi]
pub fn check_search_pattern(
    pattern: Utf16String,
    glob: Option<Utf16String>,
    ignore_case: Option<bool>,
    literal: Option<bool>,
) -> napi::Result<()> {
    let run = || -> workcell_core::Result<()> {
        let pattern = strict_string(pattern)?;
        let glob = glob.map(strict_string).transpose()?;
        workcell_core::search::check_arguments(&pattern, glob.as_deref(), ignore_case.unwrap_or(false), literal.unwrap_or(false))
    };
    run().map_err(crate::convert::throw)
}
