//! The checkpoint tools' shapes (contract §19): what a model sends to `checkpoint`,
//! `list_checkpoints`, `diff_checkpoint` and `rewind_checkpoint`. Their outputs are the
//! checkpoint module's own result types (and `list_checkpoints`'s wrapper here).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::checkpoint::{Summary, MAX_LABEL_BYTES};

/// Longest checkpoint id a model may send (the store's ids are 21 characters).
pub const MAX_CHECKPOINT_ID: usize = 64;
/// Longest `expectedHash` (a change set's hash is 64 hex digits).
pub const MAX_EXPECTED_HASH: usize = 128;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointInput {
    /// A short name for the checkpoint, such as `before refactoring`.
    #[schemars(length(max = MAX_LABEL_BYTES))]
    pub label: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListCheckpointsInput {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffCheckpointInput {
    /// A checkpoint id, as `checkpoint` or `list_checkpoints` returned it.
    #[schemars(length(min = 1, max = MAX_CHECKPOINT_ID))]
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RewindCheckpointInput {
    /// A checkpoint id, as `checkpoint` or `list_checkpoints` returned it.
    #[schemars(length(min = 1, max = MAX_CHECKPOINT_ID))]
    pub id: String,
    /// The `hash` `diff_checkpoint` returned for the change set reviewed.
    #[schemars(length(min = 1, max = MAX_EXPECTED_HASH))]
    pub expected_hash: String,
}

/// `list_checkpoints`'s result: the checkpoints of the workspace, oldest first.
#[derive(Clone, Debug, PartialEq, serde::Serialize, JsonSchema)]
#[schemars(rename = "ListCheckpointsOutput")]
pub struct ListCheckpointsOutput {
    pub checkpoints: Vec<Summary>,
}
