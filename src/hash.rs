use napi::bindgen_prelude::{AsyncTask, Utf16String};
use napi::{Env, Task};
use napi_derive::napi;
use workcell_core::{Cancel, Workspace};

use crate::convert::{strict_string, NativeError};
use crate::workspace::{cancel_of, CancelHandle};

#[napi(object)]
pub struct HashResult {
    /// `"absent"`, `"not a regular file: <type>"` or the hex SHA-256 of the content.
    pub hash: Option<String>,
    pub error: Option<NativeError>,
}

/// Opens the root, hashes, and closes the root again within the task, so that a host hashing
/// many paths never accumulates open descriptors waiting for garbage collection.
pub struct HashTask {
    root: String,
    path: workcell_core::Result<String>,
    cancel: Cancel,
}

impl Task for HashTask {
    type Output = workcell_core::Result<String>;
    type JsValue = HashResult;

    fn compute(&mut self) -> napi::Result<Self::Output> {
        let path = match &self.path {
            Ok(p) => p,
            Err(e) => return Ok(Err(e.clone())),
        };
        let run = || {
            let rel = workcell_core::parse_path(path)?;
            self.cancel.check()?;
            let ws = Workspace::open(&self.root)?;
            workcell_core::hash::hash_file(&ws, &rel, &self.cancel)
        };
        Ok(run())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> napi::Result<HashResult> {
        Ok(match output {
            Ok(hash) => HashResult { hash: Some(hash), error: None },
            Err(e) => HashResult { hash: None, error: Some(e.into()) },
        })
    }
}

/// hashFile(root, path): resolves to the approval hash or to `{ error }`; never rejects.
#[napi(ts_return_type = "Promise<HashResult>")]
pub fn hash_file(root: String, path: Utf16String, cancel: Option<&CancelHandle>) -> AsyncTask<HashTask> {
    AsyncTask::new(HashTask { root, path: strict_string(path), cancel: cancel_of(cancel) })
}
