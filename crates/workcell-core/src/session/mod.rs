//! Process sessions (`start_process`, `read_process`, `write_process`, `stop_process`,
//! `list_processes`): long-running and interactive processes that outlive one call.
//!
//! A session starts the way run_command does ([`crate::command::prepare_start`]: the command
//! policy on argv and `sh -c` scripts, PATH lookup, an environment built from nothing, a
//! private HOME and TMPDIR, the sandbox and its report), but the call returns while it runs.
//!
//! | concern | module |
//! |---|---|
//! | the table: ids, limits, retention, close | [`table`] |
//! | requests checked before any effect, results | this module |
//! | one running process: start, supervisor thread, stop, end | [`run`] |
//! | output kept (first 8 KiB, last 64 KiB), cursors, alerts | [`buffer`] |
//! | `waitFor`, matched incrementally | [`wait`] |
//! | the terminal of `tty: true`, and the escapes removed from it | [`tty`], [`ansi`] |
//! | the end of a session when the host dies | [`janitor`] |
//!
//! Lifetime: a session ends at its timeout, at `stop_process`, when the table is closed or
//! dropped, and when the host exits or is killed (the namespace's init dies with the host's
//! launcher thread, the janitor kills the group where there is no namespace and removes the
//! scratch directory).

pub mod ansi;
pub mod buffer;
pub mod janitor;
pub mod run;
pub mod table;
pub mod tty;
pub mod wait;

use std::time::Duration;

use crate::command::CommandOptions;
use crate::error::{Error, Reason, Result};
use crate::policy;

pub use table::ProcessTable;

/// Default life of a process.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(1_800_000);
/// Default largest life a call may ask for.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_millis(3_600_000);
/// Default number of processes running at once per table.
pub const DEFAULT_MAX_PROCESSES: usize = 8;
/// Finished processes kept listed, at most.
pub const KEEP_FINISHED: usize = 32;
/// How long a finished process stays listed.
pub const KEEP_FOR: Duration = Duration::from_secs(600);
/// `waitMs` default and maximum.
pub const DEFAULT_WAIT_MS: u64 = 1_000;
pub const MAX_WAIT_MS: u64 = 30_000;
/// Longest `input` of write_process, in UTF-8 bytes.
pub const MAX_INPUT: usize = 8_192;
/// Most `watch` keywords, and the longest one.
pub const MAX_WATCH: usize = 16;
pub const MAX_KEYWORD: usize = 256;
/// Most `ports`.
pub const MAX_PORTS: usize = 8;

/// What the host configures.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    /// run_command's options (policy, PATH, environment, scratch parent, sandbox), with the
    /// sessions' timeout and maximum.
    pub command: CommandOptions,
    pub max_processes: usize,
    /// Ports a session may ask for.
    pub allowed_ports: Vec<u16>,
}

impl SessionOptions {
    pub fn new(path: impl Into<std::ffi::OsString>) -> Self {
        let mut command = CommandOptions::new(path);
        command.timeout = DEFAULT_TIMEOUT;
        command.max_timeout = DEFAULT_MAX_TIMEOUT;
        SessionOptions { command, max_processes: DEFAULT_MAX_PROCESSES, allowed_ports: Vec::new() }
    }

    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.command.timeout > self.command.max_timeout {
            return Err(format!("timeoutMs ({}) is above maxTimeoutMs ({})", self.command.timeout.as_millis(), self.command.max_timeout.as_millis()));
        }
        if self.command.timeout.is_zero() {
            return Err("timeoutMs must be at least 1".into());
        }
        if self.max_processes == 0 || self.max_processes > 1024 {
            return Err("maxProcesses must be from 1 to 1024".into());
        }
        if self.allowed_ports.contains(&0) {
            return Err("ports must be TCP ports from 1 to 65535".into());
        }
        crate::host_config::check_launch(&self.command.path, &self.command.sandbox, &self.command.env)
    }
}

/// start_process's input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StartRequest {
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    pub tty: bool,
    pub timeout_ms: Option<f64>,
    pub wait_for: Option<String>,
    pub wait_ms: Option<f64>,
    pub ports: Vec<f64>,
    pub watch: Vec<String>,
    /// The approved grants of this start (contract §12): they widen the table's sandbox options
    /// for this session only.
    pub grants: crate::sandbox::GrantRequest,
}

/// read_process's input.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadRequest {
    pub id: String,
    pub cursor: Option<f64>,
    pub wait_for: Option<String>,
    pub wait_ms: Option<f64>,
}

fn shape(at: &str, hint: impl Into<String>) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint).with_details(serde_json::json!({ "at": format!("arguments.{at}") }))
}

/// `waitMs`: default 1,000, at most 30,000.
pub fn check_wait_ms(ms: Option<f64>) -> Result<Duration> {
    let Some(ms) = ms else { return Ok(Duration::from_millis(DEFAULT_WAIT_MS)) };
    if !ms.is_finite() || ms < 0.0 || ms.fract() != 0.0 || ms > MAX_WAIT_MS as f64 {
        return Err(shape("waitMs", format!("waitMs must be a whole number of milliseconds from 0 to {MAX_WAIT_MS}; to wait longer, call read_process again")));
    }
    Ok(Duration::from_millis(ms as u64))
}

pub(crate) fn check_id(id: &str) -> Result<()> {
    let ok = id.len() <= 24 && id.strip_prefix('p').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if ok {
        Ok(())
    } else {
        Err(table::not_found(id))
    }
}

/// A start request after its checks: what the call will do.
#[derive(Debug)]
pub struct CheckedStart {
    pub command: crate::command::CheckedRequest,
    pub wait_for: Option<regex_automata::meta::Regex>,
    pub wait: Duration,
    pub ports: Vec<u16>,
    /// The grants, checked (canonical existing paths).
    pub grants: crate::sandbox::Grants,
}

/// Checks start_process's input without any effect.
pub fn check_start(req: &StartRequest, opts: &SessionOptions) -> Result<CheckedStart> {
    let command = crate::command::check_request(
        &crate::command::CommandRequest { argv: req.argv.clone(), cwd: req.cwd.clone(), timeout_ms: req.timeout_ms },
        &opts.command,
    )?;
    let wait_for = req.wait_for.as_deref().map(wait::compile).transpose()?;
    let wait = check_wait_ms(req.wait_ms)?;
    if req.watch.len() > MAX_WATCH {
        return Err(shape("watch", format!("watch takes at most {MAX_WATCH} keywords")));
    }
    for k in &req.watch {
        if k.is_empty() || k.len() > MAX_KEYWORD || k.contains('\n') {
            return Err(shape("watch", format!("each watch keyword must be 1 to {MAX_KEYWORD} bytes on one line, such as \"error\"")));
        }
    }
    if req.ports.len() > MAX_PORTS {
        return Err(shape("ports", format!("ports takes at most {MAX_PORTS} ports")));
    }
    let mut ports = Vec::new();
    for p in &req.ports {
        if !p.is_finite() || p.fract() != 0.0 || *p < 1.0 || *p > 65535.0 {
            return Err(shape("ports", "ports are TCP port numbers from 1 to 65535"));
        }
        let p = *p as u16;
        if !opts.allowed_ports.contains(&p) {
            let allowed = if opts.allowed_ports.is_empty() {
                "this host allows no ports: run the server without ports (it cannot listen on TCP), or ask the user to allow one".to_string()
            } else {
                format!("use one of the ports the host allows: {:?}", opts.allowed_ports)
            };
            return Err(Error::invalid(Reason::PortNotAllowed, allowed).with_details(serde_json::json!({ "port": p, "allowed": opts.allowed_ports })));
        }
        if !ports.contains(&p) {
            ports.push(p);
        }
    }
    let grants = req.grants.check()?;
    let _ = policy::check_command; // the policy runs in check_request above
    Ok(CheckedStart { command, wait_for, wait, ports, grants })
}

/// Checks write_process's input.
pub fn check_input(input: &str) -> Result<()> {
    if input.len() > MAX_INPUT {
        return Err(Error::invalid(Reason::ContentTooLarge, format!("input is {} UTF-8 bytes; at most {MAX_INPUT} go in one write_process call: split it", input.len()))
            .with_details(serde_json::json!({ "at": "arguments.input", "bytes": input.len(), "max": MAX_INPUT })));
    }
    Ok(())
}

/// stop_process's `signal`.
pub fn check_signal(s: Option<&str>) -> Result<i32> {
    match s {
        None | Some("SIGTERM") => Ok(libc::SIGTERM),
        Some("SIGINT") => Ok(libc::SIGINT),
        Some("SIGKILL") => Ok(libc::SIGKILL),
        Some(_) => Err(shape("signal", "signal is \"SIGTERM\" (the default; SIGKILL follows after 2 s), \"SIGINT\" or \"SIGKILL\"")),
    }
}

/// `cursor`: a byte offset, a whole number from 0.
pub fn check_cursor(c: Option<f64>) -> Result<Option<u64>> {
    match c {
        None => Ok(None),
        Some(c) if c.is_finite() && c >= 0.0 && c.fract() == 0.0 && c <= 9_007_199_254_740_991.0 => Ok(Some(c as u64)),
        Some(_) => Err(shape("cursor", "cursor is a byte offset from a previous result's cursor (a whole number from 0)")),
    }
}
