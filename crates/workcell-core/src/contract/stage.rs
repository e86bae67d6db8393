//! The staged-run tools' inputs (contract §20); their outputs are [`crate::stage`]'s.

use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApplyStagedInput {
    /// The staged change's id (the run's `staged.id`).
    pub id: String,
    /// The hash shown with it (`staged.hash`).
    pub expected_hash: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiscardStagedInput {
    pub id: String,
}
