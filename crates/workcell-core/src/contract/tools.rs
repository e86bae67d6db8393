//! Every tool's name and shapes ([`TOOLS`]), and what a model sends to each: the parameters'
//! JSON Schemas are derived from these input types (the descriptions are added by the JS layer,
//! once per tool, compact or full). The limits here are the core's own constants; the core
//! checks every value again where it acts on it. A new tool adds its input type and its line in
//! `tools!` here; its output is its core module's result type.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{NodeProcessOutput, ProcessOutput, ReadFileOutput, RunCommandOutput, RunTestsOutput, ToolShapes};
use crate::{edit, list, policy, search, session};

/// Largest line number (`offset`, `limit`).
const MAX_LINE: u32 = u32::MAX;
/// Most paths in each of a call's `grants.writePaths` and `grants.readPaths`.
pub const MAX_CALL_GRANT_PATHS: usize = 16;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileInput {
    pub path: String,
    /// First line of a window, from 1. With `offset` or `limit`, a window of lines is read.
    #[schemars(range(min = 1, max = MAX_LINE))]
    pub offset: Option<u32>,
    /// Most lines in the window.
    #[schemars(range(min = 1, max = MAX_LINE))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListFilesInput {
    /// The directory to list (default: the root).
    pub path: Option<String>,
    #[schemars(range(min = 1, max = list::MAX_DEPTH))]
    pub depth: Option<u32>,
    #[schemars(range(min = 1, max = list::MAX_LIMIT))]
    pub limit: Option<u32>,
    /// Whether `.gitignore` rules apply (default true).
    pub gitignore: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SearchFilesInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    pub ignore_case: Option<bool>,
    pub literal: Option<bool>,
    #[schemars(range(min = 1, max = search::MAX_LIMIT))]
    pub limit: Option<u32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteFileInput {
    pub path: String,
    pub content: String,
    /// read_file's `hash` of the file: the write happens only if the file still has it.
    pub expected_hash: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(inline)]
pub struct Edit {
    #[schemars(length(min = 1))]
    pub old_text: String,
    pub new_text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EditFileInput {
    pub path: String,
    #[schemars(length(min = 1, max = edit::MAX_EDITS))]
    pub edits: Vec<Edit>,
    pub expected_hash: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApplyPatchInput {
    pub patch: String,
    /// `{ path: hash }` from read_file (`"absent"`: the file must not exist).
    pub expected_hashes: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveFileInput {
    pub from: String,
    pub to: String,
    pub overwrite: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteFileInput {
    pub path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MakeDirectoryInput {
    pub path: String,
}

/// The sandbox a call may ask to turn off (the only value).
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
pub enum SandboxOff {
    #[serde(rename = "off")]
    Off,
}

/// What a process call may ask the person for (only where the host lets calls ask): absolute
/// paths to write or read, the network, or the sandbox off.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Grants {
    #[schemars(length(max = MAX_CALL_GRANT_PATHS))]
    pub write_paths: Option<Vec<String>>,
    #[schemars(length(max = MAX_CALL_GRANT_PATHS))]
    pub read_paths: Option<Vec<String>>,
    pub network: Option<bool>,
    pub sandbox: Option<SandboxOff>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[serde(rename_all = "camelCase")]
pub struct NodeProcessInput {
    pub source: String,
    pub arguments: Option<Vec<String>>,
    /// Clamped to the tool's maximum.
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    pub grants: Option<Grants>,
    /// Run staged: the workspace is unchanged and the result carries the change (apply_staged).
    pub stage: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunCommandInput {
    #[schemars(length(min = 1, max = policy::MAX_ARGV_ITEMS))]
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// Clamped to the tool's maximum.
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    pub grants: Option<Grants>,
    /// Run staged: the workspace is unchanged and the result carries the change (apply_staged).
    pub stage: Option<bool>,
}

/// The test runners run_tests knows.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum TestRunner {
    Vitest,
    Node,
    Go,
    Cargo,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunTestsInput {
    pub runner: TestRunner,
    pub args: Option<Vec<String>>,
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    pub grants: Option<Grants>,
    /// Run staged: the workspace is unchanged and the result carries the change (apply_staged).
    pub stage: Option<bool>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StartProcessInput {
    #[schemars(length(min = 1, max = policy::MAX_ARGV_ITEMS))]
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub tty: Option<bool>,
    #[schemars(range(min = 1))]
    pub timeout_ms: Option<u64>,
    pub wait_for: Option<String>,
    #[schemars(range(max = session::MAX_WAIT_MS))]
    pub wait_ms: Option<u64>,
    #[schemars(length(max = session::MAX_PORTS), inner(range(min = 1)))]
    pub ports: Option<Vec<u16>>,
    #[schemars(length(max = session::MAX_WATCH))]
    pub watch: Option<Vec<String>>,
    pub grants: Option<Grants>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReadProcessInput {
    pub id: String,
    pub cursor: Option<u64>,
    pub wait_for: Option<String>,
    #[schemars(range(max = session::MAX_WAIT_MS))]
    pub wait_ms: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WriteProcessInput {
    pub id: String,
    pub input: String,
    pub close_stdin: Option<bool>,
}

/// The signals stop_process sends.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(inline)]
pub enum StopSignal {
    #[serde(rename = "SIGTERM")]
    Term,
    #[serde(rename = "SIGINT")]
    Int,
    #[serde(rename = "SIGKILL")]
    Kill,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopProcessInput {
    pub id: String,
    pub signal: Option<StopSignal>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListProcessesInput {}

macro_rules! tools {
    ($($name:literal $ty:literal $input:ty => $output:ty;)*) => {
        /// Every tool, in the order `createCodingTools` lists them.
        pub const TOOLS: &[ToolShapes] = &[$(ToolShapes {
            name: $name,
            type_name: $ty,
            input: |g| g.subschema_for::<$input>(),
            output: |g| g.subschema_for::<$output>(),
        },)*];
    };
}

tools! {
    "read_file" "ReadFile" ReadFileInput => ReadFileOutput;
    "list_files" "ListFiles" ListFilesInput => crate::list::ListOutput;
    "search_files" "SearchFiles" SearchFilesInput => crate::search::SearchOutput;
    "write_file" "WriteFile" WriteFileInput => crate::write::install::WriteOutput;
    "edit_file" "EditFile" EditFileInput => crate::edit::EditOutput;
    "apply_patch" "ApplyPatch" ApplyPatchInput => crate::patch::PatchOutput;
    "move_file" "MoveFile" MoveFileInput => crate::fileops::MoveOutput;
    "delete_file" "DeleteFile" DeleteFileInput => crate::fileops::DeleteOutput;
    "make_directory" "MakeDirectory" MakeDirectoryInput => crate::fileops::MkdirOutput;
    "node_process" "NodeProcess" NodeProcessInput => NodeProcessOutput;
    "run_command" "RunCommand" RunCommandInput => RunCommandOutput;
    "run_tests" "RunTests" RunTestsInput => RunTestsOutput;
    "start_process" "StartProcess" StartProcessInput => ProcessOutput;
    "read_process" "ReadProcess" ReadProcessInput => ProcessOutput;
    "write_process" "WriteProcess" WriteProcessInput => crate::session::table::Written;
    "stop_process" "StopProcess" StopProcessInput => ProcessOutput;
    "list_processes" "ListProcesses" ListProcessesInput => crate::session::table::ProcessList;
    "checkpoint" "Checkpoint" super::checkpoints::CheckpointInput => crate::checkpoint::Created;
    "list_checkpoints" "ListCheckpoints" super::checkpoints::ListCheckpointsInput => super::checkpoints::ListCheckpointsOutput;
    "diff_checkpoint" "DiffCheckpoint" super::checkpoints::DiffCheckpointInput => crate::checkpoint::DiffOutput;
    "rewind_checkpoint" "RewindCheckpoint" super::checkpoints::RewindCheckpointInput => crate::checkpoint::RewindOutput;
    "apply_staged" "ApplyStaged" super::stage::ApplyStagedInput => crate::stage::AppliedOutput;
    "discard_staged" "DiscardStaged" super::stage::DiscardStagedInput => crate::stage::DiscardedOutput;
}
