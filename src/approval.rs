//! Approval: previews of writing calls, the host's rules, sandbox-denial hints. Conversion
//! only; the decisions are workcell-core's (`workcell_core::approval`).

use std::path::Path;

use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::approval::{self, denial_hint, preview, Decision, Preview, Rule, Rules, SandboxState};
use workcell_core::api::edit::{Edit, EditRequest};
use workcell_core::api::fileops::{DeleteRequest, MkdirRequest, MoveRequest};
use workcell_core::api::write::{WriteRequest, MAX_WRITE_BYTES};

use crate::convert::{strict_string, PathHash};
use crate::outcome::start_checked;
use crate::edit::EditArg;
use crate::guard::{guard_of, WriteGuard};
use crate::workspace::{cancel_of, CancelHandle, NativeWorkspace};

/// Starts a preview whose request was checked: resolves to `{ ok: { summary, diff?, diffs?, files } }`
/// or to `{ error }` (the core's `Preview` passed through).
fn run<'env, R: Send + 'static>(
    env: &'env Env,
    ws: &NativeWorkspace,
    cancel: Option<&CancelHandle>,
    checked: workcell_core::api::Result<R>,
    f: fn(&std::sync::Arc<workcell_core::api::Workspace>, &R, &workcell_core::api::Cancel) -> workcell_core::api::Result<Preview>,
) -> napi::Result<Object<'env>> {
    let (ws, cancel) = (ws.ws.clone(), cancel_of(cancel));
    start_checked(env, checked, move |req, settle| preview::spawn(cancel, move |c| f(&ws, &req, c), settle))
}

fn max(m: Option<u32>) -> usize {
    m.map_or(MAX_WRITE_BYTES, |m| m as usize)
}

#[napi]
impl NativeWorkspace {
    /// write_file's change, computed without effects: `{ summary, diff, files }` or `{ error }`.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    #[allow(clippy::too_many_arguments)]
    pub fn preview_write<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        content: Utf16String,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        expected_hash: Option<String>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = WriteRequest::from_utf16(&path, &content, max(max_bytes))
            .map(|r| r.with_expected_hash(expected_hash).with_guard(guard_of(guard)));
        run(env, self, cancel, checked, |ws, r, c| preview::preview_write(ws, r, c))
    }

    /// edit_file's change, computed without effects.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    #[allow(clippy::too_many_arguments)]
    pub fn preview_edit<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        edits: Vec<EditArg>,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        expected_hash: Option<String>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = (|| {
            let path = strict_string(path)?;
            let edits = edits
                .into_iter()
                .map(|e| Ok(Edit { old_text: strict_string(e.old_text)?, new_text: strict_string(e.new_text)? }))
                .collect::<workcell_core::api::Result<Vec<_>>>()?;
            EditRequest::new(&path, edits, max(max_bytes))
        })()
        .map(|r| r.with_expected_hash(expected_hash).with_guard(guard_of(guard)));
        run(env, self, cancel, checked, |ws, r, c| preview::preview_edit(ws, r, c))
    }

    /// apply_patch's change, computed without effects (every file; a move's both names).
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    pub fn preview_patch<'env>(
        &self,
        env: &'env Env,
        patch: Utf16String,
        expected_hashes: Option<Vec<PathHash>>,
        max_bytes: Option<u32>,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = crate::patch::patch_request(workcell_core::api::patch::root_of(&self.ws).as_deref(), patch, expected_hashes, max_bytes).map(|r| r.with_guard(guard_of(guard)));
        run(env, self, cancel, checked, preview::preview_patch)
    }

    /// move_file's change, computed without effects.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    pub fn preview_move<'env>(
        &self,
        env: &'env Env,
        from: Utf16String,
        to: Utf16String,
        overwrite: Option<bool>,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = (|| MoveRequest::new(&strict_string(from)?, &strict_string(to)?, overwrite.unwrap_or(false)))()
            .map(|r| r.with_guard(guard_of(guard)));
        run(env, self, cancel, checked, |ws, r, c| preview::preview_move(ws, r, c))
    }

    /// delete_file's change, computed without effects.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    pub fn preview_delete<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = (|| DeleteRequest::new(&strict_string(path)?))().map(|r| r.with_guard(guard_of(guard)));
        run(env, self, cancel, checked, |ws, r, c| preview::preview_delete(ws, r, c))
    }

    /// make_directory's change, computed without effects.
    #[napi(ts_return_type = "Promise<C.Outcome<C.ApprovalPreview>>")]
    pub fn preview_make_directory<'env>(
        &self,
        env: &'env Env,
        path: Utf16String,
        cancel: Option<&CancelHandle>,
        guard: Option<&WriteGuard>,
    ) -> napi::Result<Object<'env>> {
        let checked = (|| MkdirRequest::new(&strict_string(path)?))().map(|r| r.with_guard(guard_of(guard)));
        run(env, self, cancel, checked, |ws, r, c| preview::preview_mkdir(ws, r, c))
    }
}

/// One host rule, as given.
#[napi(object, object_to_js = false)]
pub struct ApprovalRuleSpec {
    pub tool: Option<String>,
    pub argv: Option<Vec<String>>,
    pub path: Option<String>,
    pub decision: String,
}

#[napi(object)]
pub struct RuleMatch {
    pub index: u32,
    pub decision: String,
}

/// The host's approval rules, compiled once.
#[napi]
pub struct ApprovalRules {
    rules: Rules,
}

#[napi]
impl ApprovalRules {
    /// Throws with a message for the host's TypeError (an invalid glob, pattern or decision).
    #[napi(constructor)]
    pub fn new(rules: Vec<ApprovalRuleSpec>) -> napi::Result<Self> {
        let mut out = Vec::with_capacity(rules.len());
        for (i, r) in rules.into_iter().enumerate() {
            let decision = Decision::parse(&r.decision)
                .ok_or_else(|| napi::Error::from_reason(format!("rules[{i}].decision must be \"allow\", \"ask\" or \"deny\"")))?;
            out.push(
                Rule::new(r.tool, r.argv, r.path, decision).map_err(|m| napi::Error::from_reason(format!("rules[{i}]: {m}")))?,
            );
        }
        Ok(ApprovalRules { rules: Rules::new(out).map_err(napi::Error::from_reason)? })
    }

    /// The first rule matching a call, if any.
    #[napi]
    pub fn decide(&self, tool: String, argv: Option<Vec<String>>, paths: Vec<String>) -> Option<RuleMatch> {
        self.rules
            .decide(&tool, argv.as_deref(), &paths)
            .map(|(i, d)| RuleMatch { index: i as u32, decision: d.as_str().to_string() })
    }
}

#[napi(object)]
pub struct SandboxDenial {
    pub kind: String,
    pub path: Option<String>,
}

#[napi(object)]
pub struct SandboxDenialHint {
    pub denials: Vec<SandboxDenial>,
    pub note: String,
}

/// What the failed output of a confined process shows the sandbox refused, and the next
/// step: `null` for a success, an unconfined call or output without a denial.
#[napi]
pub fn sandbox_denials(
    outputs: Vec<String>,
    exit_ok: bool,
    root: String,
    filesystem_confined: bool,
    network_blocked: bool,
    grants: bool,
    ports: Option<Vec<u32>>,
    node_permission: Option<bool>,
) -> Option<SandboxDenialHint> {
    let refs: Vec<&str> = outputs.iter().map(String::as_str).collect();
    let state = SandboxState {
        filesystem_confined,
        network_blocked,
        grants,
        ports: ports.unwrap_or_default().into_iter().filter_map(|p| u16::try_from(p).ok()).collect(),
        node_permission: node_permission.unwrap_or(false),
    };
    denial_hint(&refs, exit_ok, Path::new(&root), state).map(|h| SandboxDenialHint {
        denials: h.denials.into_iter().map(|d| SandboxDenial { kind: d.kind.to_string(), path: d.path }).collect(),
        note: h.note,
    })
}

#[allow(dead_code)]
fn _uses(_: approval::DenialHint) {}
