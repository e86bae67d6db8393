//! Checkpoints (contract §19): conversions only; every decision is the core's
//! (`workcell_core::checkpoint`).

use std::path::PathBuf;
use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use workcell_core::api::checkpoint::{Checkpoints, Options};
use workcell_core::api::pool::Lane;

use crate::outcome::on_pool;
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// The checkpoints of one workspace root and its store.
#[napi]
pub struct NativeCheckpoints {
    inner: Arc<Checkpoints>,
}

fn bytes(v: Option<f64>, default: u64) -> u64 {
    match v {
        Some(x) if x.is_finite() && x >= 0.0 => x as u64,
        _ => default,
    }
}

#[napi]
impl NativeCheckpoints {
    /// Opens (creating it when missing) the store. A misconfiguration throws an Error whose
    /// message is the JSON `{ "option": "...", "message": "..." }`.
    #[napi(constructor)]
    pub fn new(
        workspace: &NativeWorkspace,
        store_dir: Option<String>,
        max_bytes: Option<f64>,
        max_file_bytes: Option<f64>,
        exclude: Option<Vec<String>>,
        protect: Option<Vec<String>>,
    ) -> napi::Result<Self> {
        let opts = Options {
            store_dir: store_dir.map(PathBuf::from),
            max_bytes: bytes(max_bytes, workcell_core::api::checkpoint::DEFAULT_MAX_BYTES),
            max_file_bytes: bytes(max_file_bytes, workcell_core::api::checkpoint::DEFAULT_MAX_FILE_BYTES),
            exclude: exclude.unwrap_or_default(),
            protect,
        };
        Checkpoints::open(workspace.ws.clone(), opts).map(|c| NativeCheckpoints { inner: Arc::new(c) }).map_err(|e| {
            napi::Error::new(napi::Status::InvalidArg, serde_json::json!({ "option": e.option, "message": e.message }).to_string())
        })
    }

    /// The store's directory.
    #[napi(getter)]
    pub fn store_dir(&self) -> String {
        self.inner.store_dir().to_string_lossy().into_owned()
    }

    #[napi(ts_return_type = "Promise<C.Outcome<C.CheckpointCreated>>")]
    pub fn create<'env>(&self, env: &'env Env, label: Option<String>, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || cp.create(label.as_deref(), &cancel))
    }

    #[napi(ts_return_type = "Promise<C.Outcome<Array<C.CheckpointSummary>>>")]
    pub fn list<'env>(&self, env: &'env Env, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || cp.list(&cancel))
    }

    /// The diff since checkpoint `id`; `reverse`: the change a rewind would make.
    #[napi(ts_return_type = "Promise<C.Outcome<C.CheckpointDiff>>")]
    pub fn diff<'env>(&self, env: &'env Env, id: String, reverse: Option<bool>, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || if reverse.unwrap_or(false) { cp.rewind_preview(&id, &cancel) } else { cp.diff(&id, &cancel) })
    }

    /// What a person approves before a rewind: the whole change, each file's diff never cut.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    pub fn rewind_approval<'env>(&self, env: &'env Env, id: String, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || cp.rewind_approval(&id, &cancel))
    }

    #[napi(ts_return_type = "Promise<C.Outcome<C.CheckpointRewound>>")]
    pub fn rewind<'env>(&self, env: &'env Env, id: String, expected_hash: String, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Write, move || cp.rewind(&id, &expected_hash, &cancel))
    }

    #[napi(ts_return_type = "Promise<C.Outcome<null>>")]
    pub fn drop_checkpoint<'env>(&self, env: &'env Env, id: String, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
        let (cp, cancel) = (self.inner.clone(), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || cp.drop_checkpoint(&id, &cancel))
    }
}
