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

#[napi(object)]
pub struct ReadWindowResult {
    pub path: Option<String>,
    pub content: Option<String>,
    /// UTF-8 byte length of `content`.
    pub bytes: Option<u32>,
    /// Size of the file in bytes.
    pub file_bytes: Option<f64>,
    pub offset: Option<f64>,
    pub lines: Option<f64>,
    pub next_offset: Option<f64>,
    pub total_lines: Option<f64>,
    pub error: Option<NativeError>,
}

pub struct ReadWindowTask {
    ws: Arc<Workspace>,
    path: workcell_core::Result<String>,
    offset: Option<i64>,
    limit: Option<i64>,
    cancel: Cancel,
}

impl Task for ReadWindowTask {
    type Output = workcell_core::Result<workcell_core::page::WindowOutput>;
    type JsValue = ReadWindowResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let path = match &self.path {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.clone())),
        };
        // Out-of-range numbers (negative, zero, too large) are refused by the core.
        let n = |v: Option<i64>| v.map(|v| u64::try_from(v).unwrap_or(0));
        let (offset, limit) = (n(self.offset), n(self.limit));
        Ok(workcell_core::parse_path(path)
            .and_then(|rel| workcell_core::page::read_window(&self.ws, &rel, offset, limit, &self.cancel)))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<ReadWindowResult> {
        Ok(match output {
            Ok(o) => ReadWindowResult {
                path: Some(o.path),
                content: Some(o.content),
                bytes: Some(o.bytes as u32),
                file_bytes: Some(o.file_bytes as f64),
                offset: Some(o.offset as f64),
                lines: Some(o.lines as f64),
                next_offset: o.next_offset.map(|v| v as f64),
                total_lines: o.total_lines.map(|v| v as f64),
                error: None,
            },
            Err(e) => ReadWindowResult {
                path: None,
                content: None,
                bytes: None,
                file_bytes: None,
                offset: None,
                lines: None,
                next_offset: None,
                total_lines: None,
                error: Some(e.into()),
            },
        })
    }
}

#[napi]
impl NativeWorkspace {
    /// read_file with `offset` / `limit`: a window of lines; resolves to it or to `{ error }`.
    #[napi(ts_return_type = "Promise<ReadWindowResult>")]
    pub fn read_file_window(
        &self,
        path: Utf16String,
        offset: Option<i64>,
        limit: Option<i64>,
        cancel: Option<&CancelHandle>,
    ) -> AsyncTask<ReadWindowTask> {
        AsyncTask::new(ReadWindowTask { ws: self.ws.clone(), path: strict_string(path), offset, limit, cancel: cancel_of(cancel) })
    }
}
