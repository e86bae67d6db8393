//! Staged runs (contract §20): a command runs for real, but what it writes to the workspace
//! lands in a private overlay; the person sees the change as a diff, and it is applied all or
//! nothing only on a yes, bound to the hash of what was shown.
//!
//! One file per operation:
//! - [`crate::sandbox::overlay`] (a step of the sandbox's launch): the overlay, made in the
//!   sandbox's mount namespace before the program runs (a tmpfs bounded by `maxStagedBytes`
//!   holding the upper layer, sent to the host);
//! - [`collect`]: after the run, the upper layer read into a change set;
//! - [`render`]: the change set in §19's diff shape and its hash;
//! - [`apply`]: the change set applied to the workspace, all or nothing;
//! - this module: the host's options, a run's life ([`Run`]) and the staged changes of a
//!   tool set ([`Group`]) until they are applied, discarded, expire or the tools close.
//!
//! A staged change lives only in its tmpfs, held by one descriptor in the host: discarding it
//! (or its expiry, or closing the tools) closes that descriptor, and the kernel frees it. Nothing
//! is ever written to disk outside the workspace.

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod apply;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod collect;
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub mod render;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cancel::Cancel;
use crate::checkpoint::diff::{Changed, DiffOutput};
use crate::error::{Code, Error, Reason, Result};
use crate::root::Workspace;

/// Default bound of what one staged run may write (all files together).
pub const DEFAULT_MAX_STAGED_BYTES: u64 = 1 << 30;
/// Default life of a staged change not applied.
pub const DEFAULT_TTL_MS: u64 = 30 * 60 * 1000;
/// Most entries of one staged run's change.
pub const MAX_ENTRIES: usize = 100_000;

/// The host's choice (`stage` option).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StageMode {
    Never,
    #[default]
    Allowed,
    Always,
}

impl<'de> serde::Deserialize<'de> for StageMode {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        crate::json::named(d, "stage mode", |s| match s {
            "never" => Some(StageMode::Never),
            "allowed" => Some(StageMode::Allowed),
            "always" => Some(StageMode::Always),
            _ => None,
        })
    }
}

/// The host's staging options for a process tool (JSON `stage`: `{ mode?, maxStagedBytes?,
/// stagedTtlMs?, group? }`; `group` is the tool set's [`group_new`] id).
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StageOptions {
    #[serde(default)]
    pub mode: StageMode,
    #[serde(default = "default_max", deserialize_with = "crate::json::whole")]
    pub max_staged_bytes: u64,
    #[serde(default = "default_ttl", deserialize_with = "crate::json::whole")]
    pub staged_ttl_ms: u64,
    #[serde(default)]
    pub group: Option<u32>,
    /// The call's own `stage: true` (the TS layer sets it per call).
    #[serde(default)]
    pub asked: bool,
}

fn default_max() -> u64 {
    DEFAULT_MAX_STAGED_BYTES
}
fn default_ttl() -> u64 {
    DEFAULT_TTL_MS
}

impl Default for StageOptions {
    fn default() -> Self {
        StageOptions { mode: StageMode::Allowed, max_staged_bytes: DEFAULT_MAX_STAGED_BYTES, staged_ttl_ms: DEFAULT_TTL_MS, group: None, asked: false }
    }
}

impl StageOptions {
    /// Checks the host's values.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.max_staged_bytes < 4096 {
            return Err("stage.maxStagedBytes must be at least 4096".into());
        }
        if self.staged_ttl_ms == 0 {
            return Err("stage.stagedTtlMs must be at least 1".into());
        }
        Ok(())
    }

    /// Whether a call is staged: asked for (`stage: true`) where the host allows it, or always.
    pub fn wanted(&self) -> Result<bool> {
        match (self.mode, self.asked) {
            (StageMode::Always, _) => Ok(true),
            (StageMode::Never, true) => Err(Error::invalid(Reason::StageNotAllowed, "this tool does not stage runs: the host set stage to \"never\"")
                .with_hint("call it again without stage")
                .with_details(serde_json::json!({ "at": "arguments.stage" }))),
            (_, asked) => Ok(asked),
        }
    }
}

/// What a staged change does to one path (§19's actions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StagedAction {
    Added,
    Modified,
    Deleted,
    Mode,
    Type,
}

/// One path of a staged change (a directory's ends in `/`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct StagedFile {
    pub path: String,
    pub action: StagedAction,
}

fn files_of(changed: Vec<Changed>) -> Vec<StagedFile> {
    use crate::checkpoint::diff::Action;
    changed
        .into_iter()
        .map(|c| StagedFile {
            path: c.path,
            action: match c.action {
                Action::Added => StagedAction::Added,
                Action::Modified => StagedAction::Modified,
                Action::Deleted => StagedAction::Deleted,
                Action::Mode => StagedAction::Mode,
                Action::Type => StagedAction::Type,
            },
        })
        .collect()
}

/// What a staged run's result carries (§19's diff shape and the change's id).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StagedOutput {
    /// Pass it to apply_staged or discard_staged.
    pub id: String,
    pub summary: String,
    /// The unified diff of the change (at most 1 MiB).
    pub diff: String,
    /// Every path the change touches (a directory's ends in `/`).
    pub files: Vec<StagedFile>,
    /// Identifies this change set: apply_staged's `expectedHash`.
    pub hash: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<bool>,
}

impl StagedOutput {
    fn of(id: &str, d: DiffOutput) -> StagedOutput {
        StagedOutput { id: id.to_string(), summary: d.summary, diff: d.diff, files: files_of(d.files), hash: d.hash, truncated: d.truncated }
    }
}

/// apply_staged's result.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct AppliedOutput {
    pub id: String,
    pub summary: String,
    pub files: Vec<StagedFile>,
}

/// discard_staged's result.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct DiscardedOutput {
    pub id: String,
    pub discarded: bool,
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
struct Entry {
    changes: Vec<collect::Change>,
    changed_during_run: Vec<String>,
    upper: std::os::fd::OwnedFd,
    output: StagedOutput,
    root: (u64, u64),
    expires: Instant,
}

#[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
struct Entry {
    output: StagedOutput,
    expires: Instant,
}

/// The staged changes of one tool set.
#[derive(Default)]
struct Group {
    next: u64,
    entries: HashMap<String, Entry>,
}

static GROUPS: Mutex<Option<HashMap<u32, Group>>> = Mutex::new(None);
static NEXT_GROUP: AtomicU32 = AtomicU32::new(1);

fn with_groups<T>(f: impl FnOnce(&mut HashMap<u32, Group>) -> T) -> T {
    let mut g = GROUPS.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(HashMap::new);
    // Expired changes go first, whoever asks.
    let now = Instant::now();
    for group in map.values_mut() {
        group.entries.retain(|_, e| e.expires > now);
    }
    f(map)
}

/// A new tool set's group of staged changes.
pub fn group_new() -> u32 {
    let id = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
    with_groups(|m| m.insert(id, Group::default()));
    id
}

/// Discards every staged change of the group (the tools closed).
pub fn group_close(id: u32) {
    let dropped = with_groups(|m| m.remove(&id));
    drop(dropped);
}

/// How many staged changes the group holds (tests, diagnostics).
pub fn group_len(id: u32) -> usize {
    with_groups(|m| m.get(&id).map_or(0, |g| g.entries.len()))
}

/// Drops the changes past their time now (the expiry also happens on every use of any group).
pub fn sweep() {
    with_groups(|_| ());
}

pub(crate) fn not_found(id: &str) -> Error {
    Error::new(Code::StagedNotFound, format!("no staged change has the id {}", crate::error::shown_name(id)))
        .with_hint("a staged change can be applied or discarded once, and expires; run the command again with stage: true to get a new one")
}

/// The ids of the group's staged changes (tests, diagnostics).
pub fn group_ids(group: u32) -> Vec<String> {
    with_groups(|m| m.get(&group).map(|g| g.entries.keys().cloned().collect()).unwrap_or_default())
}

/// Discards a staged change: nothing of it is left.
pub fn discard(group: u32, id: &str) -> Result<DiscardedOutput> {
    let e = with_groups(|m| m.get_mut(&group).and_then(|g| g.entries.remove(id)));
    match e {
        Some(e) => {
            drop(e);
            Ok(DiscardedOutput { id: id.to_string(), discarded: true })
        }
        None => Err(not_found(id)),
    }
}

/// The change as shown (apply_staged's approval request).
pub fn preview(group: u32, id: &str) -> Result<StagedOutput> {
    with_groups(|m| m.get(&group).and_then(|g| g.entries.get(id)).map(|e| e.output.clone())).ok_or_else(|| not_found(id))
}

/// One staged run, from its start to its change set.
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub struct Run {
    layer: Arc<crate::sandbox::overlay::Layer>,
    started: i64,
    opts: StageOptions,
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
impl Run {
    /// Prepares a staged run in `ws` whose working directory is `cwd_rel` ("" or "." for
    /// the root).
    pub fn begin(ws: &Workspace, cwd_rel: &str, opts: &StageOptions) -> Result<Run> {
        let rel = if cwd_rel == "." { "" } else { cwd_rel };
        let layer = crate::sandbox::overlay::Layer::new(ws, rel.as_bytes(), opts.max_staged_bytes).map_err(|e| {
            Error::new(Code::IoError, format!("could not prepare the staged run: {e}")).with_hint("try the call again; if it keeps failing, report it to the user")
        })?;
        Ok(Run { layer: Arc::new(layer), started: 0, opts: opts.clone() })
    }

    /// The overlay, for the sandbox's launcher.
    pub fn layer(&self) -> Arc<crate::sandbox::overlay::Layer> {
        self.layer.clone()
    }

    /// Stamps the start, right before the spawn, on the workspace's own clock: the first tick
    /// after the one it reads (waiting for it, at most a few milliseconds), so a file changed
    /// before the stamp (even in the same tick) is never taken for one changed during the run,
    /// and one changed after it always has a ctime at or past the stamp.
    pub fn start(&mut self, ws: &Workspace) {
        let first = crate::checkpoint::statcache::fs_now(ws);
        let deadline = Instant::now() + Duration::from_millis(100);
        self.started = loop {
            let now = crate::checkpoint::statcache::fs_now(ws);
            if now > first {
                break now;
            }
            if Instant::now() > deadline {
                break first.saturating_add(1);
            }
            std::thread::sleep(Duration::from_millis(1));
        };
    }

    /// A launch that failed while making the overlay is `SANDBOX_UNAVAILABLE` (the program
    /// never ran); any other error stays as it is.
    pub fn launch_error(&self, err: Error) -> Error {
        match self.layer.failure() {
            Some((step, errno)) => unavailable_at(step, errno),
            None => err,
        }
    }

    /// After the run ended by itself: the change set, kept in the tool set's group.
    pub fn finish(self, ws: &Workspace, cancel: &Cancel) -> Result<StagedOutput> {
        if let Some((step, errno)) = self.layer.failure() {
            return Err(unavailable_at(step, errno));
        }
        let upper = self.layer.take_upper().map_err(|e| {
            Error::new(Code::IoError, format!("the staged run's overlay was not received: {e}")).with_hint("try the call again; if it keeps failing, report it to the user")
        })?;
        let collected = collect::collect(ws, &upper, self.started, cancel)?;
        let mut changes = collected.changes;
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        let group = self.opts.group.unwrap_or(0);
        let id = with_groups(|m| {
            let g = m.entry(group).or_default();
            g.next += 1;
            format!("s{}", g.next)
        });
        let root = rustix::fs::openat(ws.dir(), ".", rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())
            .map_err(|e| Error::from_io(&e.into(), "."))?;
        let d = render::output(&id, &changes, &root, &rustix::fs::openat(&upper, "upper", rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty()).map_err(|e| Error::from_io(&e.into(), "."))?, cancel)?;
        let output = StagedOutput::of(&id, d);
        let st = rustix::fs::fstat(ws.dir()).map_err(|e| Error::from_io(&e.into(), "."))?;
        let entry = Entry {
            changes,
            changed_during_run: collected.changed_during_run,
            upper,
            output: output.clone(),
            root: (st.st_dev as u64, st.st_ino as u64),
            expires: Instant::now() + Duration::from_millis(self.opts.staged_ttl_ms),
        };
        with_groups(|m| m.entry(group).or_default().entries.insert(id.clone(), entry));
        Ok(output)
    }
}

#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
fn unavailable_at(step: i32, errno: i32) -> Error {
    let (missing, what) = match step {
        crate::sandbox::overlay::STEP_TMPFS => ("tmpfs-in-user-namespace", "a tmpfs mounted in the sandbox's user namespace, for the overlay's upper layer"),
        crate::sandbox::overlay::STEP_OVERLAY => ("overlayfs-in-user-namespace", "overlayfs mounted in the sandbox's user namespace over this workspace (Linux 5.11+; the workspace's file system must be usable as a lower layer, and the upper needs user xattrs on tmpfs: Linux 6.6+)"),
        crate::sandbox::overlay::STEP_PROTECT => ("protected-paths", "read-only copies of the protected paths over the overlay"),
        crate::sandbox::overlay::STEP_CWD => ("working-directory", "the working directory inside the overlay"),
        crate::sandbox::overlay::STEP_LANDLOCK => ("landlock-overlay", "a Landlock rule for the overlay's root"),
        _ => ("workspace-root", "the workspace root, opened again in the sandbox's mount namespace"),
    };
    Error::new(Code::SandboxUnavailable, format!("the staged run could not be made: it needs {what}, which failed with {}", std::io::Error::from_raw_os_error(errno)))
        .with_hint("the command did not run (a staged run never runs unstaged); tell the user what is missing (see details), or run it without stage if the host allows unstaged runs")
        .with_details(serde_json::json!({ "missing": [missing], "errno": errno }))
}

/// `SANDBOX_UNAVAILABLE` for a staged run where the sandbox cannot make one.
pub fn unavailable(missing: &str, what: &str) -> Error {
    crate::sandbox::stage_refused(missing, what)
}

/// Applies a staged change (`expectedHash` the hash shown), all or nothing; see [`apply`].
#[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
pub fn apply_staged(ws: &Workspace, group: u32, id: &str, expected_hash: &str, guard: &crate::guard::Guard, cancel: &Cancel) -> Result<AppliedOutput> {
    cancel.check()?;
    ws.check()?;
    let st = rustix::fs::fstat(ws.dir()).map_err(|e| Error::from_io(&e.into(), "."))?;
    let root = (st.st_dev as u64, st.st_ino as u64);
    let entry = with_groups(|m| {
        let g = m.get_mut(&group)?;
        match g.entries.get(id) {
            Some(e) if e.root == root => g.entries.remove(id),
            _ => None,
        }
    })
    .ok_or_else(|| not_found(id))?;
    let put_back = |entry: Entry| with_groups(|m| m.entry(group).or_default().entries.insert(id.to_string(), entry));
    if entry.output.hash != expected_hash {
        let now = entry.output.hash.clone();
        put_back(entry);
        return Err(Error::new(Code::TargetChanged, "expectedHash is not the hash of this staged change; nothing was applied")
            .with_hint("pass the hash the staged run returned (staged.hash) after reviewing its diff")
            .with_details(serde_json::json!({ "expectedHash": expected_hash, "hash": now })));
    }
    if let Some(first) = entry.changed_during_run.first().cloned() {
        let all = entry.changed_during_run.clone();
        put_back(entry);
        return Err(Error::new(Code::TargetChanged, format!("{first} changed in the workspace while the staged run ran; nothing was applied"))
            .with_hint("discard this staged change (discard_staged) and run the command again with stage: true")
            .with_details(serde_json::json!({ "paths": all })));
    }
    match apply::apply(ws, &entry.upper, &entry.changes, guard, cancel) {
        Ok(()) => Ok(AppliedOutput { id: id.to_string(), summary: entry.output.summary.replacen("the staged run changes", "applied the staged run's change to", 1), files: entry.output.files.clone() }),
        Err(e) => {
            put_back(entry);
            Err(e)
        }
    }
}
