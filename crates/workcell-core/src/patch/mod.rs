//! `apply_patch`: a multi-file patch in the format OpenAI's models write, all or nothing.
//!
//! - [`parse`]: the format, effect-free, every error with its line number;
//! - [`locate`]: finding each hunk (four passes, from exact to Unicode-normalized) and
//!   computing a file's new content;
//! - [`plan`]: the transaction: every target resolved beneath the root and checked by the write
//!   guard, every lock taken in one global order, every new content computed and staged as an
//!   fsynced `.workcell-tmp-*` sibling, `expectedHashes` compared, then the installs by rename,
//!   put back in reverse if one fails.
//!
//! The call takes one ticket per path the patch names, all at once, when it is made
//! ([`tickets_for`]): two patches touching the same files in different orders meet in the same
//! order on every file, so they never deadlock, and a patch runs after the writes called
//! before it.

pub mod locate;
pub mod parse;
pub mod plan;

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cancel::Cancel;
use crate::error::{Error, Reason, Result};
use crate::guard::Guard;
use crate::path::RelPath;
use crate::root::Workspace;
use crate::target_lock::{self, Ticket};

pub use parse::{MAX_PATCH_BYTES, MAX_PATCH_FILES, MAX_PATCH_HUNKS};

/// What happened to one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(inline)]
pub struct FileResult {
    /// The path as the patch names it (normalized).
    pub path: String,
    /// `"add"`, `"delete"` or `"update"`.
    #[schemars(extend("enum" = ["add", "delete", "update"]))]
    pub action: &'static str,
    /// An Update's `*** Move to` path.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<String>,
    /// UTF-8 byte length of the file after the patch (absent for a delete).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ApplyPatchOutput")]
pub struct PatchOutput {
    pub files: Vec<FileResult>,
    /// Unified diff of every file (bounded, see [`crate::diff`]).
    pub diff: String,
    /// Set when a hunk matched only in a tolerant pass (which file, which pass).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The arguments of one apply_patch call, checked without touching the filesystem.
#[derive(Debug)]
pub struct PatchRequest {
    pub(crate) patch: parse::Patch,
    /// `expectedHashes`, by normalized path.
    pub(crate) expected: BTreeMap<String, String>,
    pub(crate) max_bytes: usize,
    pub(crate) guard: Option<Arc<Guard>>,
}

impl PatchRequest {
    /// Parses the patch and checks `expectedHashes` (each key a path the patch names).
    /// `max_bytes` bounds every resulting file (write_file's limit).
    /// No absolute path is accepted; [`PatchRequest::new_in`] accepts those beneath a root.
    pub fn new(text: &str, expected: Vec<(String, String)>, max_bytes: usize) -> Result<Self> {
        Self::new_in(None, text, expected, max_bytes)
    }

    /// As [`PatchRequest::new`]; `root`, the workspace's canonical path, lets the patch (and
    /// `expectedHashes`) name a file by an absolute path beneath it followed by `/`, made
    /// relative ([`crate::path::beneath_root`], the rule the provider adapters apply).
    pub fn new_in(root: Option<&str>, text: &str, expected: Vec<(String, String)>, max_bytes: usize) -> Result<Self> {
        let patch = parse::parse_in(text, max_bytes, root)?;
        let named: Vec<String> = patch.targets().iter().map(|p| p.as_str().to_string()).collect();
        let mut map = BTreeMap::new();
        for (raw, hash) in expected {
            let path = crate::path::parse(root.and_then(|r| crate::path::beneath_root(&raw, r)).unwrap_or(&raw))?;
            if !named.iter().any(|n| n == path.as_str()) {
                return Err(Error::invalid(
                    Reason::InvalidArgumentsShape,
                    format!("expectedHashes names {}, which the patch does not touch; give hashes only for the patch's files", path.as_str()),
                )
                .with_details(serde_json::json!({ "path": path.as_str() })));
            }
            map.insert(path.as_str().to_string(), hash);
        }
        Ok(PatchRequest { patch, expected: map, max_bytes, guard: None })
    }

    /// Applies a write guard (every path the patch names is checked).
    pub fn with_guard(mut self, guard: Option<Arc<Guard>>) -> Self {
        self.guard = guard;
        self
    }

    /// Every path the patch names (an Update's Move to after its source).
    pub fn targets(&self) -> Vec<&RelPath> {
        self.patch.targets()
    }
}

/// The workspace's canonical path as the root absolute paths in a patch may start with (none
/// when it is not UTF-8).
pub fn root_of(ws: &Workspace) -> Option<String> {
    ws.canonical().to_str().map(str::to_string)
}

/// The call's places in the per-target queues: one per path, taken at once. Call it
/// synchronously, when the call is made.
pub fn tickets_for(request: &PatchRequest) -> Vec<Ticket> {
    target_lock::tickets(request.targets().len())
}

/// Applies `request` (resolution, locks, staging, install).
pub async fn apply_patch(ws: Arc<Workspace>, request: PatchRequest, tickets: Vec<Ticket>, cancel: Cancel) -> Result<PatchOutput> {
    cancel.check()?;
    let request = Arc::new(request);
    let resolution = {
        let (ws, request, cancel) = (ws.clone(), request.clone(), cancel.clone());
        crate::write::blocking(&cancel.clone(), move || plan::resolve(&ws, &request, &cancel)).await?
    };
    let guards = target_lock::acquire_all(tickets, resolution.keys(), &cancel).await?;
    let out = {
        let cancel2 = cancel.clone();
        crate::write::blocking(&cancel, move || plan::run(&ws, &request, resolution, &cancel2)).await
    };
    drop(guards);
    out
}

/// Starts a patch from a host thread (inside the runtime's context); `done` gets the outcome
/// exactly once.
pub fn spawn_patch(
    ws: Arc<Workspace>,
    request: PatchRequest,
    tickets: Vec<Ticket>,
    cancel: Cancel,
    done: impl FnOnce(Result<PatchOutput>) + Send + 'static,
) {
    let settle = Once::new(done);
    tokio::spawn(async move { settle.done(apply_patch(ws, request, tickets, cancel).await) });
}

/// Convenience for Rust callers: checks, takes the tickets now and applies.
pub async fn apply(ws: Arc<Workspace>, patch: &str, cancel: Cancel) -> Result<PatchOutput> {
    let request = PatchRequest::new_in(root_of(&ws).as_deref(), patch, vec![], crate::write::MAX_WRITE_BYTES)?;
    let tickets = tickets_for(&request);
    apply_patch(ws, request, tickets, cancel).await
}

/// Calls its callback exactly once: with the outcome, or with an internal error if the task
/// was dropped without one, so a host's promise always settles.
pub(crate) struct Once<T, F: FnOnce(Result<T>)>(Option<F>, std::marker::PhantomData<fn(T)>);

impl<T, F: FnOnce(Result<T>)> Once<T, F> {
    pub(crate) fn new(f: F) -> Self {
        Once(Some(f), std::marker::PhantomData)
    }
    pub(crate) fn done(mut self, out: Result<T>) {
        if let Some(f) = self.0.take() {
            f(out)
        }
    }
}

impl<T, F: FnOnce(Result<T>)> Drop for Once<T, F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Err(Error::new(crate::error::Code::IoError, "the call stopped unexpectedly").with_hint("retry the call")))
        }
    }
}

#[cfg(test)]
mod tests;
