use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Utf16String};
use napi::{Env, Task};
use napi_derive::napi;
use workcell_core::list::{ListOptions, ListOutput};
use workcell_core::{Cancel, Workspace};

use crate::convert::{strict_string, NativeError};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi(object)]
pub struct ListResult {
    pub path: Option<String>,
    pub entries: Option<Vec<String>>,
    pub truncated: Option<bool>,
    pub not_shown: Option<f64>,
    pub note: Option<String>,
    pub error: Option<NativeError>,
}

pub struct ListTask {
    ws: Arc<Workspace>,
    path: Option<workcell_core::Result<String>>,
    depth: Option<u32>,
    limit: Option<u32>,
    gitignore: Option<bool>,
    cancel: Cancel,
}

impl ListTask {
    fn run(&self) -> workcell_core::Result<ListOutput> {
        let path = match &self.path {
            None => None,
            Some(p) => workcell_core::walk::parse_start(p.as_ref().map_err(Clone::clone)?)?,
        };
        let defaults = ListOptions::default();
        let opts = ListOptions {
            path,
            depth: self.depth.unwrap_or(defaults.depth),
            limit: self.limit.unwrap_or(defaults.limit),
            gitignore: self.gitignore.unwrap_or(defaults.gitignore),
        };
        workcell_core::list::list_files(&self.ws, &opts, &self.cancel)
    }
}

impl Task for ListTask {
    type Output = workcell_core::Result<ListOutput>;
    type JsValue = ListResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        Ok(self.run())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<ListResult> {
        Ok(match output {
            Ok(o) => ListResult {
                path: Some(o.path),
                entries: Some(o.entries),
                truncated: Some(o.truncated),
                not_shown: Some(o.not_shown as f64),
                note: o.note,
                error: None,
            },
            Err(e) => ListResult { path: None, entries: None, truncated: None, not_shown: None, note: None, error: Some(e.into()) },
        })
    }
}

#[napi]
impl NativeWorkspace {
    /// list_files: resolves to the listing or to `{ error }`; never rejects.
    #[napi(ts_return_type = "Promise<ListResult>")]
    pub fn list_files(
        &self,
        path: Option<Utf16String>,
        depth: Option<u32>,
        limit: Option<u32>,
        gitignore: Option<bool>,
        cancel: Option<&CancelHandle>,
    ) -> AsyncTask<ListTask> {
        AsyncTask::new(ListTask {
            ws: self.ws.clone(),
            path: path.map(strict_string),
            depth,
            limit,
            gitignore,
            cancel: cancel_of(cancel),
        })
    }
}
