//! Staged runs (contract §20): conversions only; every decision is the core's
//! (`workcell_core::stage`).

use std::sync::Arc;

use napi::bindgen_prelude::Object;
use napi::Env;
use napi_derive::napi;
use workcell_core::api::pool::Lane;
use workcell_core::api::stage;

use crate::outcome::{on_pool, Json, Outcome};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// A new tool set's group of staged changes.
#[napi]
pub fn stage_group_new() -> u32 {
    stage::group_new()
}

/// Discards every staged change of the group (the tools closed).
#[napi]
pub fn stage_group_close(group: u32) {
    stage::group_close(group)
}

/// How many staged changes the group holds.
#[napi]
pub fn stage_group_len(group: u32) -> u32 {
    stage::group_len(group) as u32
}

/// Discards a staged change.
#[napi(ts_return_type = "C.Outcome<C.DiscardStagedOutput>")]
pub fn stage_discard(group: u32, id: String) -> Json<Outcome<stage::DiscardedOutput>> {
    Json(stage::discard(group, &id).into())
}

/// The change as the run showed it.
#[napi(ts_return_type = "C.Outcome<NonNullable<C.RunCommandOutput[\"staged\"]>>")]
pub fn stage_preview(group: u32, id: String) -> Json<Outcome<stage::StagedOutput>> {
    Json(stage::preview(group, &id).into())
}

#[napi]
impl NativeWorkspace {
    /// Applies a staged change of `group` to this workspace, all or nothing, under the write
    /// guard's `protect` globs.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApplyStagedOutput>>")]
    pub fn apply_staged<'env>(
        &self,
        env: &'env Env,
        group: u32,
        id: String,
        expected_hash: String,
        protect: Vec<String>,
        cancel: Option<&CancelHandle>,
    ) -> napi::Result<Object<'env>> {
        let guard = workcell_core::api::guard::Guard::new(&protect, false).map_err(|e| napi::Error::new(napi::Status::InvalidArg, e))?;
        let (ws, cancel) = (Arc::clone(&self.ws), cancel_of(cancel));
        on_pool(env, Lane::Walk, move || stage::apply_staged(&ws, group, &id, &expected_hash, &guard, &cancel))
    }
}
