//! `node_process`: runs model-written JavaScript with the host's own Node.js, bounded in every
//! direction.
//!
//! The source goes to an exclusive `.workcell-node-<random>.cjs` in the workspace root (removed
//! in every outcome) and runs as
//!
//! ```text
//! <execPath> [node flags] -e <loader> -- <arguments...>
//! ```
//!
//! where the loader resolves the script in the working directory (the root) and runs it as the
//! main module. Node keeps `--` out of `process.argv` and the script path never enters it, so
//! inside the child `process.argv.slice(1)` is exactly `arguments`, whatever they look like
//! (`--`, `-e`, empty strings). The process machinery of [`crate::process`] does the rest: no
//! shell, stdin from the null device, its own process group, an environment built from nothing,
//! output bounded per stream, a timeout and cancellation that kill the whole group.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt as _};
use cap_std::fs::{OpenOptions, OpenOptionsExt as _};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Reason, Result};
use crate::process::{self, End, Head, HeadText, Reaper, RunOptions, SpawnSpec};
use crate::root::Workspace;

/// Largest source, in UTF-8 bytes.
pub const MAX_SOURCE_BYTES: usize = 32_768;
/// Most arguments.
pub const MAX_ARGUMENTS: usize = 32;
/// Largest single argument, in UTF-8 bytes.
pub const MAX_ARGUMENT_BYTES: usize = 2_048;
/// Largest total of all arguments, in UTF-8 bytes.
pub const MAX_ARGUMENTS_BYTES: usize = 8_192;
/// Longest Windows command line (`[execPath, script, ...arguments]` quoted), in UTF-16 units.
pub const MAX_COMMAND_LINE_UNITS: usize = 30_000;
/// Default timeout, counted from the spawn.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(500);
/// Default number of bytes kept of stdout and of stderr, each.
pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 32_768;
/// Largest per-stream cap a host may configure (memory stays bounded).
pub const MAX_OUTPUT_CAP: usize = 64 * 1024 * 1024;
/// PATH given to the child when the host has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Prefix of the temporary script's name.
pub const SCRIPT_PREFIX: &str = ".workcell-node-";
const RANDOM_HEX: usize = 16;

/// What the model sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRequest {
    pub source: String,
    pub arguments: Vec<String>,
}

/// Edits the spawn of a node_process child before it starts: the place where confinement adds
/// node flags (inserted before `-e`) and pre-exec steps.
pub type Prepare = Arc<dyn Fn(&mut SpawnSpec, &Path) -> Result<()> + Send + Sync>;

/// What the host configures.
#[derive(Clone)]
pub struct NodeOptions {
    /// The host's `process.execPath`.
    pub exec_path: PathBuf,
    pub timeout: Duration,
    pub max_stdout_bytes: usize,
    pub max_stderr_bytes: usize,
    /// The PATH the child gets ([`DEFAULT_PATH`] when `None`).
    pub path: Option<OsString>,
    /// Further variables, by name and value (a name given twice: the last wins; PATH may be
    /// overridden).
    pub env: Vec<(String, String)>,
    /// How exits are observed.
    pub reaper: Reaper,
    /// Called with the spec and the canonical root just before the spawn.
    pub prepare: Option<Prepare>,
}

impl std::fmt::Debug for NodeOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeOptions")
            .field("exec_path", &self.exec_path)
            .field("timeout", &self.timeout)
            .field("max_stdout_bytes", &self.max_stdout_bytes)
            .field("max_stderr_bytes", &self.max_stderr_bytes)
            .field("env", &self.env.iter().map(|(k, _)| k).collect::<Vec<_>>())
            .field("reaper", &self.reaper)
            .finish_non_exhaustive()
    }
}

impl NodeOptions {
    /// The contract's defaults for `exec_path`.
    pub fn new(exec_path: impl Into<PathBuf>) -> Self {
        NodeOptions {
            exec_path: exec_path.into(),
            timeout: DEFAULT_TIMEOUT,
            max_stdout_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            max_stderr_bytes: DEFAULT_MAX_OUTPUT_BYTES,
            path: None,
            env: Vec::new(),
            reaper: Reaper::Auto,
            prepare: None,
        }
    }

    /// Checks the host's configuration (not the model's input): a message for the host when
    /// something is unusable.
    pub fn validate(&self) -> std::result::Result<(), String> {
        if !self.exec_path.is_absolute() {
            return Err(format!("execPath must be an absolute path, got {}", self.exec_path.display()));
        }
        if self.timeout.is_zero() {
            return Err("timeoutMs must be a positive number of milliseconds".into());
        }
        for (what, cap) in [("stdout", self.max_stdout_bytes), ("stderr", self.max_stderr_bytes)] {
            if cap > MAX_OUTPUT_CAP {
                return Err(format!("the {what} cap must be at most {MAX_OUTPUT_CAP} bytes, got {cap}"));
            }
        }
        for (name, value) in &self.env {
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!("environment variable name {name:?} is not valid (empty, or contains = or NUL)"));
            }
            if value.contains('\0') {
                return Err(format!("the value of environment variable {name} contains a NUL character"));
            }
        }
        if let Some(path) = &self.path {
            if path.as_encoded_bytes().contains(&0) {
                return Err("PATH contains a NUL character".into());
            }
        }
        Ok(())
    }
}

/// What a run that ended by itself returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeOutput {
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    /// Always false here: a timeout is the `NODE_PROCESS_TIMEOUT` error.
    pub timed_out: bool,
    pub duration_ms: u64,
}

impl NodeOutput {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "exitCode": self.exit_code,
            "signal": self.signal,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "stdoutTruncated": self.stdout_truncated,
            "stderrTruncated": self.stderr_truncated,
            "timedOut": self.timed_out,
            "durationMs": self.duration_ms,
        })
    }
}

fn script_name(random: &str) -> String {
    format!("{SCRIPT_PREFIX}{random}.cjs")
}

/// Checks the model's input against every limit. No effects; used by `validate` and again
/// before running.
pub fn check_request(req: &NodeRequest, exec_path: &Path, root: &Path) -> Result<()> {
    let source_bytes = req.source.len();
    if source_bytes > MAX_SOURCE_BYTES {
        return Err(Error::invalid(
            Reason::SourceTooLarge,
            format!("the source is {source_bytes} UTF-8 bytes; at most {MAX_SOURCE_BYTES} are accepted. Write longer code to a file in the workspace and require() it from a short script"),
        )
        .with_details(serde_json::json!({ "bytes": source_bytes, "limit": MAX_SOURCE_BYTES })));
    }
    let count = req.arguments.len();
    if count > MAX_ARGUMENTS {
        return Err(Error::invalid(
            Reason::TooManyArguments,
            format!("{count} arguments were given; at most {MAX_ARGUMENTS} are accepted. Pass data through a file in the workspace instead"),
        )
        .with_details(serde_json::json!({ "count": count, "limit": MAX_ARGUMENTS })));
    }
    let mut total = 0usize;
    for (index, arg) in req.arguments.iter().enumerate() {
        if arg.len() > MAX_ARGUMENT_BYTES {
            return Err(Error::invalid(
                Reason::ArgumentTooLarge,
                format!("argument {index} is {} UTF-8 bytes; each may have at most {MAX_ARGUMENT_BYTES}. Put large data in a file in the workspace and pass its path", arg.len()),
            )
            .with_details(serde_json::json!({ "index": index, "bytes": arg.len(), "limit": MAX_ARGUMENT_BYTES })));
        }
        if arg.contains('\0') {
            return Err(Error::invalid(
                Reason::InvalidArgumentsShape,
                format!("argument {index} contains a NUL character, which a command line cannot carry; remove it or pass the data through a file"),
            )
            .with_details(serde_json::json!({ "at": format!("arguments.arguments[{index}]"), "index": index })));
        }
        total += arg.len();
    }
    if total > MAX_ARGUMENTS_BYTES {
        return Err(Error::invalid(
            Reason::ArgumentsTooLarge,
            format!("the arguments add up to {total} UTF-8 bytes; at most {MAX_ARGUMENTS_BYTES} are accepted. Put large data in a file in the workspace and pass its path"),
        )
        .with_details(serde_json::json!({ "bytes": total, "limit": MAX_ARGUMENTS_BYTES })));
    }
    let units = command_line_units(req, exec_path, root);
    if units > MAX_COMMAND_LINE_UNITS {
        return Err(Error::invalid(
            Reason::CommandLineTooLong,
            format!("the command line would be {units} UTF-16 units on Windows; at most {MAX_COMMAND_LINE_UNITS} are accepted. Pass fewer or shorter arguments, or put the data in a file"),
        )
        .with_details(serde_json::json!({ "units": units, "limit": MAX_COMMAND_LINE_UNITS })));
    }
    Ok(())
}

/// The Windows command line of `[execPath, script path, ...arguments]`, in UTF-16 units.
pub fn command_line_units(req: &NodeRequest, exec_path: &Path, root: &Path) -> usize {
    let script = root.join(script_name(&"0".repeat(RANDOM_HEX)));
    let mut line = Vec::with_capacity(req.arguments.len() + 2);
    line.push(exec_path.to_string_lossy().into_owned());
    line.push(script.to_string_lossy().into_owned());
    line.extend(req.arguments.iter().cloned());
    process::windows_command_line_units(&line)
}

/// The temporary script: created exclusively beneath the root, removed when dropped.
struct Script<'a> {
    ws: &'a Workspace,
    name: String,
}

impl<'a> Script<'a> {
    fn create(ws: &'a Workspace, source: &str) -> Result<Self> {
        use std::io::Write as _;
        let mut attempts = 0;
        loop {
            let mut bytes = [0u8; RANDOM_HEX / 2];
            getrandom::fill(&mut bytes)
                .map_err(|e| Error::new(Code::IoError, format!("no randomness for a temporary name: {e}")).with_hint("try again"))?;
            let name = script_name(&bytes.iter().map(|b| format!("{b:02x}")).collect::<String>());
            let mut options = OpenOptions::new();
            options
                .write(true)
                .create_new(true)
                .follow(FollowSymlinks::No)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
            match ws.dir().open_with(&name, &options) {
                Ok(mut file) => {
                    let script = Script { ws, name };
                    file.write_all(source.as_bytes()).map_err(|e| script_error(&e))?;
                    return Ok(script);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 8 => attempts += 1,
                Err(e) => return Err(script_error(&e)),
            }
        }
    }
}

fn script_error(e: &std::io::Error) -> Error {
    let mut err = Error::from_io(e, "the workspace root");
    err.message = format!("could not write the temporary script into the workspace root: {}", err.message);
    err.with_hint("node_process needs to create a file in the workspace root; check that the directory is writable and the disk not full")
}

impl Drop for Script<'_> {
    fn drop(&mut self) {
        if self.ws.dir().remove_file(&self.name).is_err() {
            // The script may have replaced itself with a directory.
            let _ = self.ws.dir().remove_dir_all(&self.name);
        }
    }
}

/// The code `node -e` runs: the script, resolved in the working directory, as the main module.
fn loader(name: &str) -> String {
    let quoted = serde_json::to_string(name).expect("a string serializes");
    format!(
        "const m=require(\"module\"),p=require(\"path\").resolve({quoted});typeof m.runMain===\"function\"?m.runMain(p):require(p);"
    )
}

fn environment(opts: &NodeOptions) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![("PATH".into(), opts.path.clone().unwrap_or_else(|| DEFAULT_PATH.into()))];
    for (name, value) in &opts.env {
        env.retain(|(n, _)| n.as_os_str() != name.as_str());
        env.push((name.into(), value.into()));
    }
    env
}

/// Runs `req` to the end. A normal exit (any code) is `Ok`; a timeout is `NODE_PROCESS_TIMEOUT`
/// with the partial output in its details; cancellation is the cancelled error.
pub async fn node_process(ws: &Workspace, req: &NodeRequest, opts: &NodeOptions, cancel: &Cancel) -> Result<NodeOutput> {
    cancel.check()?;
    opts.validate().map_err(|m| Error::new(Code::IoError, m).with_hint("the tool is misconfigured; report this to the user"))?;
    check_request(req, &opts.exec_path, ws.canonical())?;
    ws.check()?;
    let script = Script::create(ws, &req.source)?;
    cancel.check()?;

    let mut spec = SpawnSpec::new(&opts.exec_path, ws.canonical());
    spec.env = environment(opts);
    spec.args = vec!["-e".into(), loader(&script.name).into(), "--".into()];
    spec.args.extend(req.arguments.iter().map(OsString::from));
    if let Some(prepare) = &opts.prepare {
        prepare(&mut spec, ws.canonical())?;
    }
    let run = RunOptions { timeout: Some(opts.timeout), reaper: opts.reaper, ..RunOptions::default() };
    let finished = process::run(spec, &run, cancel, Head::new(opts.max_stdout_bytes), Some(Head::new(opts.max_stderr_bytes)))
        .await
        .map_err(|e| spawn_error(&e, &opts.exec_path))?;
    drop(script);

    let stdout = finished.stdout.finish();
    let stderr = finished.stderr.map(Head::finish).unwrap_or(HeadText { text: String::new(), truncated: false, total_bytes: 0 });
    let status = finished.status.unwrap_or_default();
    let mut output = NodeOutput {
        exit_code: status.code,
        signal: status.signal_name(),
        stdout: stdout.text,
        stderr: stderr.text,
        stdout_truncated: stdout.truncated,
        stderr_truncated: stderr.truncated,
        timed_out: false,
        duration_ms: finished.duration.as_millis() as u64,
    };
    match finished.end {
        End::Exited => Ok(output),
        End::Cancelled => Err(Error::cancelled()),
        End::TimedOut => {
            output.timed_out = true;
            if output.signal.is_none() && output.exit_code.is_none() {
                output.signal = Some("SIGKILL".into());
            }
            let ms = opts.timeout.as_millis();
            let mut details = output.to_json();
            details["timeoutMs"] = serde_json::json!(ms);
            Err(Error::new(Code::NodeProcessTimeout, format!("the script did not finish within {ms} ms and was stopped"))
                .with_hint("make the script finish sooner: no servers, timers or watchers left running, no endless loops, no waiting for input; split long work into several calls")
                .with_details(details))
        }
    }
}

fn spawn_error(e: &std::io::Error, exec_path: &Path) -> Error {
    let shown = exec_path.display().to_string();
    match e.raw_os_error() {
        Some(errno) => Error::io_errno(errno, &shown)
            .with_hint("the host's Node.js executable could not be started; report this to the user"),
        None => Error::new(Code::IoError, format!("could not start {shown}: {e}"))
            .with_hint("the host's Node.js executable could not be started; report this to the user"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(source: &str, arguments: &[&str]) -> NodeRequest {
        NodeRequest { source: source.into(), arguments: arguments.iter().map(|s| s.to_string()).collect() }
    }

    fn reason(r: Result<()>) -> Option<String> {
        r.err().map(|e| e.reason().unwrap_or(e.code.as_str()).to_string())
    }

    const NODE: &str = "/usr/bin/node";
    const ROOT: &str = "/tmp/ws";

    fn check(r: &NodeRequest) -> Option<String> {
        reason(check_request(r, Path::new(NODE), Path::new(ROOT)))
    }

    #[test]
    fn source_limit_is_exact() {
        assert_eq!(check(&req(&"a".repeat(MAX_SOURCE_BYTES), &[])), None);
        assert_eq!(check(&req(&"a".repeat(MAX_SOURCE_BYTES + 1), &[])).as_deref(), Some("SOURCE_TOO_LARGE"));
        // Bytes, not characters: 10,923 × "é" (2 bytes) = 21,846 bytes is fine; 16,385 is not.
        assert_eq!(check(&req(&"é".repeat(16_384), &[])), None);
        assert_eq!(check(&req(&"é".repeat(16_385), &[])).as_deref(), Some("SOURCE_TOO_LARGE"));
    }

    #[test]
    fn argument_count_limit_is_exact() {
        let args: Vec<&str> = vec!["x"; MAX_ARGUMENTS];
        assert_eq!(check(&req("", &args)), None);
        let args: Vec<&str> = vec!["x"; MAX_ARGUMENTS + 1];
        assert_eq!(check(&req("", &args)).as_deref(), Some("TOO_MANY_ARGUMENTS"));
    }

    #[test]
    fn argument_size_limits_are_exact() {
        let max = "a".repeat(MAX_ARGUMENT_BYTES);
        let over = "a".repeat(MAX_ARGUMENT_BYTES + 1);
        assert_eq!(check(&req("", &[&max])), None);
        assert_eq!(check(&req("", &[&over])).as_deref(), Some("ARGUMENT_TOO_LARGE"));
        // Four of 2,048 make 8,192: accepted; one more byte anywhere is too much together.
        assert_eq!(check(&req("", &[&max, &max, &max, &max])), None);
        assert_eq!(check(&req("", &[&max, &max, &max, &max, "b"])).as_deref(), Some("ARGUMENTS_TOO_LARGE"));
        // UTF-8 bytes: 1,024 × "é" = 2,048 bytes.
        assert_eq!(check(&req("", &[&"é".repeat(1_024)])), None);
        assert_eq!(check(&req("", &[&format!("{}a", "é".repeat(1_024))])).as_deref(), Some("ARGUMENT_TOO_LARGE"));
    }

    #[test]
    fn nul_in_an_argument_is_refused() {
        let err = check_request(&req("", &["ok", "a\0b"]), Path::new(NODE), Path::new(ROOT)).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert_eq!(err.details.unwrap()["index"], 1);
        assert!(err.hint.is_some());
    }

    #[test]
    fn command_line_limit_is_exact() {
        // The fixed part: execPath, the script path and the separating spaces.
        let base = command_line_units(&req("", &[]), Path::new(NODE), Path::new(ROOT));
        assert_eq!(base, NODE.len() + 1 + format!("{ROOT}/.workcell-node-{}.cjs", "0".repeat(16)).len());
        // Fill the line with 32 arguments of quote characters; each `"` quotes to `\"` and the
        // argument is wrapped in quotes. Pad the exec path so the total lands on the limit.
        let arg = "\"".repeat(256); // 8,192 bytes total, 32 × (512 + 2) units + 32 spaces
        let args: Vec<&str> = vec![&arg; 32];
        let fixed = command_line_units(&req("", &args), Path::new("/n"), Path::new(ROOT));
        let pad = MAX_COMMAND_LINE_UNITS - fixed;
        let exec_at_limit = format!("/n{}", "x".repeat(pad));
        let exec_over = format!("/n{}", "x".repeat(pad + 1));
        let at = command_line_units(&req("", &args), Path::new(&exec_at_limit), Path::new(ROOT));
        assert_eq!(at, MAX_COMMAND_LINE_UNITS);
        assert_eq!(reason(check_request(&req("", &args), Path::new(&exec_at_limit), Path::new(ROOT))), None);
        assert_eq!(
            reason(check_request(&req("", &args), Path::new(&exec_over), Path::new(ROOT))).as_deref(),
            Some("COMMAND_LINE_TOO_LONG")
        );
    }

    #[test]
    fn command_line_counts_utf16_units() {
        // "😀" is 4 UTF-8 bytes but 2 UTF-16 units.
        let with = command_line_units(&req("", &["😀"]), Path::new(NODE), Path::new(ROOT));
        let without = command_line_units(&req("", &[]), Path::new(NODE), Path::new(ROOT));
        assert_eq!(with - without, 3);
    }

    #[test]
    fn limits_are_checked_in_order() {
        let big = "a".repeat(MAX_SOURCE_BYTES + 1);
        let args: Vec<&str> = vec!["x"; 40];
        assert_eq!(check(&req(&big, &args)).as_deref(), Some("SOURCE_TOO_LARGE"));
    }

    #[test]
    fn loader_quotes_the_name() {
        assert!(loader(".workcell-node-00.cjs").contains("resolve(\".workcell-node-00.cjs\")"));
    }

    #[test]
    fn environment_is_path_plus_additions() {
        let mut o = NodeOptions::new(NODE);
        assert_eq!(environment(&o), vec![("PATH".into(), DEFAULT_PATH.into())]);
        o.path = Some("/x".into());
        o.env = vec![("A".into(), "1".into()), ("PATH".into(), "/y".into()), ("A".into(), "2".into())];
        assert_eq!(environment(&o), vec![("PATH".into(), "/y".into()), ("A".into(), "2".into())]);
    }

    #[test]
    fn options_are_validated() {
        let mut o = NodeOptions::new(NODE);
        assert!(o.validate().is_ok());
        o.env = vec![("A=B".into(), "1".into())];
        assert!(o.validate().is_err());
        o.env = vec![("A".into(), "1\0".into())];
        assert!(o.validate().is_err());
        let mut o = NodeOptions::new("node");
        assert!(o.validate().is_err());
        o.exec_path = NODE.into();
        o.timeout = Duration::ZERO;
        assert!(o.validate().is_err());
    }
}
