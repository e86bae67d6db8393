use std::sync::Arc;

use napi::bindgen_prelude::{AsyncTask, Utf16String};
use napi::{Env, Task};
use napi_derive::napi;
use workcell_core::read::ReadOutput;
use workcell_core::{Cancel, Workspace};

use crate::convert::{strict_string, NativeError};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

#[napi(object)]
pub struct ReadResult {
    pub path: Option<String>,
    pub content: Option<String>,
    pub bytes: Option<u32>,
    pub error: Option<NativeError>,
}

pub struct ReadTask {
    ws: Arc<Workspace>,
    path: workcell_core::Result<String>,
    cancel: Cancel,
}

impl Task for ReadTask {
    type Output = workcell_core::Result<ReadOutput>;
    type JsValue = ReadResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let path = match &self.path {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.clone())),
        };
        Ok(workcell_core::parse_path(path).and_then(|rel| workcell_core::read::read_file(&self.ws, &rel, &self.cancel)))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<ReadResult> {
        Ok(match output {
            Ok(o) => ReadResult { path: Some(o.path), content: Some(o.content), bytes: Some(o.bytes as u32), error: None },
            Err(e) => ReadResult { path: None, content: None, bytes: None, error: Some(e.into()) },
        })
    }
}

#[napi]
impl NativeWorkspace {
    /// read_file: resolves to the content or to `{ error }`; never rejects.
    #[napi(ts_return_type = "Promise<ReadResult>")]
    pub fn read_file(&self, path: Utf16String, cancel: Option<&CancelHandle>) -> AsyncTask<ReadTask> {
        AsyncTask::new(ReadTask { ws: self.ws.clone(), path: strict_string(path), cancel: cancel_of(cancel) })
    }
}
