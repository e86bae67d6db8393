//! The process table: the sessions of one tool set, their ids (`p1`, `p2`...), the limit on
//! running ones, the retention of finished ones, the waits of read_process and start_process,
//! and close.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::buffer::Alert;
use super::run::{self, Ender, Shared, Start};
use super::wait::Matcher;
use super::{check_cursor, check_id, check_input, check_signal, check_start, check_wait_ms, wait, ReadRequest, SessionOptions, StartRequest, KEEP_FINISHED, KEEP_FOR};
use crate::cancel::Cancel;
use crate::command::{self, Prepared};
use crate::error::{Code, Error, Result};
use crate::host_config::misconfigured;
use crate::root::Workspace;
use crate::sandbox::ports::SharedPorts;
use crate::sandbox::{Processes, Report};

pub(crate) fn not_found(id: &str) -> Error {
    let shown: String = id.chars().take(24).collect();
    Error::new(Code::ProcessNotFound, format!("no process has the id {shown:?}"))
        .with_hint("ids look like p1; call list_processes to see the running and recently finished processes (finished ones are removed after 10 minutes)")
}

struct Entry {
    id: String,
    argv: Vec<String>,
    started_at: SystemTime,
    started: Instant,
    shared: Arc<Shared>,
    report: Report,
    note: Option<String>,
}

#[derive(Default)]
struct Inner {
    next: u64,
    entries: Vec<Entry>,
    closed: bool,
}

/// The sessions of one tool set.
pub struct ProcessTable {
    ws: Arc<Workspace>,
    opts: SessionOptions,
    ports: SharedPorts,
    inner: Mutex<Inner>,
}

/// What start_process, read_process and stop_process return.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProcessOutput {
    pub id: String,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub output: String,
    #[serde(serialize_with = "crate::json::number")]
    pub cursor: u64,
    #[serde(serialize_with = "crate::json::number")]
    pub omitted_bytes: u64,
    pub matched: bool,
    pub alerts: Vec<Alert>,
    #[serde(serialize_with = "crate::json::number")]
    pub alerts_omitted: u64,
    #[serde(serialize_with = "crate::json::number")]
    pub duration_ms: u64,
    /// What was in force for this session (its grants included).
    pub sandbox: Report,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What write_process returns.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "WriteProcessOutput")]
pub struct Written {
    pub id: String,
    /// Bytes written to the process's stdin.
    #[serde(serialize_with = "crate::json::number")]
    pub bytes: u64,
}

/// What list_processes returns.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "ListProcessesOutput")]
pub struct ProcessList {
    pub processes: Vec<ProcessInfo>,
}

/// One row of list_processes.
#[derive(Clone, Debug, PartialEq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "ProcessInfo")]
pub struct ProcessInfo {
    pub id: String,
    pub argv: Vec<String>,
    pub running: bool,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    /// ISO 8601, UTC.
    pub started_at: String,
    #[serde(serialize_with = "crate::json::number")]
    pub duration_ms: u64,
}

/// `2026-12-01T12:00:00.000Z` for `t`.
fn iso8601(t: SystemTime) -> String {
    let ms = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0);
    let (days, rem) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    // Civil from days (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z", rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000)
}

impl ProcessTable {
    /// A table for `ws`; `opts` are checked (a misconfiguration is a message for the host).
    pub fn new(ws: Arc<Workspace>, opts: SessionOptions) -> std::result::Result<Self, String> {
        opts.validate()?;
        command::scratch::check_parent(&opts.command.scratch_parent, ws.canonical())?;
        let ports = opts.command.sandbox.connect_ports.clone();
        Ok(ProcessTable { ws, opts, ports, inner: Mutex::new(Inner::default()) })
    }

    /// The ports this table's sessions open to the tool set (pass it as the `connect_ports` of
    /// the tool set's other tools).
    pub fn ports(&self) -> &SharedPorts {
        &self.ports
    }

    pub fn options(&self) -> &SessionOptions {
        &self.opts
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Drops finished entries older than [`KEEP_FOR`], then the oldest beyond [`KEEP_FINISHED`].
    fn prune(inner: &mut Inner) {
        let now = Instant::now();
        inner.entries.retain(|e| {
            let st = e.shared.lock();
            !(st.done && st.ended_at.is_some_and(|t| now.duration_since(t) > KEEP_FOR))
        });
        let finished: Vec<usize> = (0..inner.entries.len()).filter(|i| inner.entries[*i].shared.lock().done).collect();
        if finished.len() > KEEP_FINISHED {
            let drop_n = finished.len() - KEEP_FINISHED;
            let gone: Vec<String> = finished[..drop_n].iter().map(|i| inner.entries[*i].id.clone()).collect();
            inner.entries.retain(|e| !gone.contains(&e.id));
        }
    }

    fn find(&self, id: &str) -> Result<(Arc<Shared>, Instant, Report, Option<String>)> {
        check_id(id)?;
        let mut inner = self.lock();
        Self::prune(&mut inner);
        inner.entries.iter().find(|e| e.id == id).map(|e| (Arc::clone(&e.shared), e.started, e.report, e.note.clone())).ok_or_else(|| not_found(id))
    }

    /// Checks a start request without any effect (the table's limit included).
    pub fn check_start(&self, req: &StartRequest) -> Result<super::CheckedStart> {
        let checked = check_start(req, &self.opts)?;
        self.check_room()?;
        Ok(checked)
    }

    fn check_room(&self) -> Result<()> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(Error::new(Code::ProcessLimit, "the process tools were closed").with_hint("the host closed these tools; no more processes can start here"));
        }
        Self::prune(&mut inner);
        let running = inner.entries.iter().filter(|e| !e.shared.lock().done).count();
        if running >= self.opts.max_processes {
            return Err(Error::new(Code::ProcessLimit, format!("{running} processes are running, the most this tool set allows at once"))
                .with_hint("stop a process you no longer need with stop_process (list_processes shows them), then start this one"));
        }
        Ok(())
    }

    /// start_process.
    pub async fn start(&self, req: &StartRequest, cancel: &Cancel) -> Result<ProcessOutput> {
        cancel.check()?;
        self.opts.validate().map_err(misconfigured)?;
        let checked = self.check_start(req)?;
        let mut copts = self.opts.command.clone();
        // This session's sandbox: the table's options widened by its approved grants (for this
        // one start; the table's own options never change).
        copts.sandbox = copts.sandbox.granted(&checked.grants);
        copts.sandbox.bind_ports = checked.ports.clone();
        let lease = self.ports.open(&checked.ports);
        let Prepared { spec, report, scratch, workdir, net, .. } = command::prepare_start(&self.ws, &req.argv, checked.command.cwd.as_ref(), &copts)?;
        cancel.check()?;
        let start = Start {
            spec,
            tty: req.tty,
            namespace: report.processes == Processes::Namespace,
            timeout: checked.command.timeout,
            keywords: req.watch.clone(),
            scratch,
            lease,
            net,
        };
        let (id, shared, started) = self.launch(req, start, report, checked.command.note.clone())?;
        drop(workdir);
        cancel.progress().message(|| {
            let until = if checked.wait_for.is_some() { "its output matches waitFor, it exits or waitMs passes" } else { "it exits or waitMs passes" };
            format!("{id}: {} started; waiting until {until}", req.argv[0])
        });
        let matcher = checked.wait_for.map(Matcher::new);
        match self.wait(&id, &shared, started, report, checked.command.note, Some(0), matcher, checked.wait, false, cancel).await {
            Err(e) if e.is_cancelled() => {
                // The model never learns the id: nothing of it may stay.
                shared.stop(libc::SIGKILL, Ender::Stop);
                Err(e)
            }
            r => r,
        }
    }

    /// Starts `start` and enters it in the table, the limit checked again under the lock.
    fn launch(&self, req: &StartRequest, start: Start, report: Report, note: Option<String>) -> Result<(String, Arc<Shared>, Instant)> {
        let mut inner = self.lock();
        if inner.closed {
            return Err(Error::new(Code::ProcessLimit, "the process tools were closed").with_hint("the host closed these tools; no more processes can start here"));
        }
        let running = inner.entries.iter().filter(|e| !e.shared.lock().done).count();
        if running >= self.opts.max_processes {
            return Err(Error::new(Code::ProcessLimit, format!("{running} processes are running, the most this tool set allows at once"))
                .with_hint("stop a process you no longer need with stop_process (list_processes shows them), then start this one"));
        }
        let shared = run::start(start).map_err(|e| match e.raw_os_error() {
            Some(libc::ENOENT) => Error::new(Code::CommandNotFound, format!("{} could not be started: the program no longer exists", req.argv[0]))
                .with_hint("the program was removed while the call started; check that it is installed and try again"),
            Some(errno) => Error::io_errno(errno, &req.argv[0]).with_hint("the program could not be started; check that it is an executable program for this machine, or report this to the user"),
            None => Error::new(Code::IoError, format!("could not start {}: {e}", req.argv[0])).with_hint("report this to the user"),
        })?;
        inner.next += 1;
        let id = format!("p{}", inner.next);
        let started = Instant::now();
        inner.entries.push(Entry { id: id.clone(), argv: req.argv.clone(), started_at: SystemTime::now(), started, shared: Arc::clone(&shared), report, note });
        Ok((id, shared, started))
    }

    /// read_process.
    pub async fn read(&self, req: &ReadRequest, cancel: &Cancel) -> Result<ProcessOutput> {
        cancel.check()?;
        let cursor = check_cursor(req.cursor)?;
        let matcher = req.wait_for.as_deref().map(wait::compile).transpose()?.map(Matcher::new);
        let wait = check_wait_ms(req.wait_ms)?;
        let (shared, started, report, note) = self.find(&req.id)?;
        self.wait(&req.id, &shared, started, report, note, cursor, matcher, wait, true, cancel).await
    }

    /// Waits as start_process and read_process do, then reads from `cursor` (the last one when
    /// `None`). Without a pattern, `early` returns as soon as output after the cursor is there.
    #[allow(clippy::too_many_arguments)]
    async fn wait(
        &self,
        id: &str,
        shared: &Arc<Shared>,
        started: Instant,
        report: Report,
        note: Option<String>,
        cursor: Option<u64>,
        mut matcher: Option<Matcher>,
        wait: Duration,
        early: bool,
        cancel: &Cancel,
    ) -> Result<ProcessOutput> {
        let deadline = tokio::time::Instant::now() + wait;
        let from = cursor.unwrap_or_else(|| shared.lock().last_cursor);
        // What a watched call's progress has been given of the output.
        let mut shown = from;
        loop {
            let notified = shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = shared.lock();
                if cancel.progress().is_watched() && st.buffer.total() > shown {
                    let (at, bytes) = st.buffer.bytes_from(shown);
                    cancel.progress().output(&bytes);
                    shown = at + bytes.len() as u64;
                }
                if let Some(m) = &mut matcher {
                    // Everything kept after the cursor that was not searched yet (the head, then
                    // the tail after a gap): bounded by what is kept.
                    loop {
                        let next = m.position().unwrap_or(from).max(from);
                        if st.buffer.total() <= next || m.matched() {
                            break;
                        }
                        let (at, bytes) = st.buffer.bytes_from(next);
                        if bytes.is_empty() {
                            break;
                        }
                        m.feed(at, &bytes);
                    }
                }
                let matched = matcher.as_ref().is_some_and(Matcher::matched);
                let arrived = early && matcher.is_none() && st.buffer.total() > from;
                if st.done || matched || arrived {
                    break;
                }
            }
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(Error::cancelled()),
                _ = &mut notified => {}
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
        let matched = matcher.as_ref().is_some_and(Matcher::matched);
        Ok(Self::snapshot(id, shared, started, report, note, from, matched))
    }

    fn snapshot(id: &str, shared: &Shared, started: Instant, report: Report, note: Option<String>, from: u64, matched: bool) -> ProcessOutput {
        let mut st = shared.lock();
        let slice = st.buffer.read(from, st.done);
        let (alerts, alerts_omitted) = st.buffer.take_alerts();
        st.last_cursor = slice.cursor;
        let end = if st.done { st.ended_at.unwrap_or_else(Instant::now) } else { Instant::now() };
        let exit = if st.done { st.exit } else { None };
        ProcessOutput {
            id: id.to_string(),
            running: !st.done,
            exit_code: exit.and_then(|e| e.code),
            signal: exit.and_then(|e| e.signal_name()),
            output: slice.text,
            cursor: slice.cursor,
            omitted_bytes: slice.omitted,
            matched,
            alerts,
            alerts_omitted,
            duration_ms: end.duration_since(started).as_millis() as u64,
            sandbox: report,
            note,
        }
    }

    /// write_process: returns the bytes written.
    pub async fn write(&self, id: &str, input: &str, close_stdin: bool, cancel: &Cancel) -> Result<u64> {
        cancel.check()?;
        check_input(input)?;
        let (shared, ..) = self.find(id)?;
        let fd = {
            let st = shared.lock();
            if st.done || st.exit.is_some() {
                return Err(Error::new(Code::ProcessNotFound, format!("process {id} has finished and takes no input"))
                    .with_hint("read_process shows its final output; start it again with start_process if needed"));
            }
            match &st.stdin {
                Some(fd) => fd.try_clone().map_err(|e| Error::from_io(&e, id))?,
                None => {
                    return Err(Error::new(Code::ProcessNotFound, format!("the stdin of process {id} was closed"))
                        .with_hint("stdin was closed with closeStdin; stop the process and start it again to send more input"))
                }
            }
        };
        let mut data = input.as_bytes();
        let mut written = 0u64;
        // A process that does not read: at most this long, then what went in is reported.
        let until = tokio::time::Instant::now() + Duration::from_secs(2);
        while !data.is_empty() {
            match rustix::io::write(&fd, data) {
                Ok(n) => {
                    written += n as u64;
                    data = &data[n..];
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {
                    if tokio::time::Instant::now() >= until {
                        break;
                    }
                    tokio::select! {
                        _ = cancel.cancelled() => return Err(Error::cancelled()),
                        _ = tokio::time::sleep(Duration::from_millis(5)) => {}
                    }
                }
                Err(e) => return Err(Error::io_errno(e.raw_os_error(), id).with_hint("the process no longer reads its input; read_process shows whether it is still running")),
            }
        }
        drop(fd);
        if close_stdin {
            shared.lock().stdin = None;
        }
        Ok(written)
    }

    /// stop_process: ends the whole tree and returns the final output once everything is gone.
    pub async fn stop(&self, id: &str, signal: Option<&str>, cancel: &Cancel) -> Result<ProcessOutput> {
        cancel.check()?;
        let sig = check_signal(signal)?;
        let (shared, started, report, note) = self.find(id)?;
        shared.stop(sig, Ender::Stop);
        // The grace, then SIGKILL, then the output and the scratch directory: bounded.
        let r = self.wait(id, &shared, started, report, note, None, None, run::STOP_GRACE + Duration::from_secs(3), false, cancel).await;
        if let Err(e) = &r {
            if e.is_cancelled() {
                shared.stop(libc::SIGKILL, Ender::Stop);
            }
        }
        r
    }

    /// list_processes.
    pub fn list(&self) -> Vec<ProcessInfo> {
        let mut inner = self.lock();
        Self::prune(&mut inner);
        inner
            .entries
            .iter()
            .map(|e| {
                let st = e.shared.lock();
                let end = if st.done { st.ended_at.unwrap_or_else(Instant::now) } else { Instant::now() };
                let exit = if st.done { st.exit } else { None };
                ProcessInfo {
                    id: e.id.clone(),
                    argv: e.argv.clone(),
                    running: !st.done,
                    exit_code: exit.and_then(|x| x.code),
                    signal: exit.and_then(|x| x.signal_name()),
                    started_at: iso8601(e.started_at),
                    duration_ms: end.duration_since(e.started).as_millis() as u64,
                }
            })
            .collect()
    }

    /// Ends every process (SIGKILL to each whole tree) and refuses new ones; resolves once
    /// each whole tree is gone (every process of its namespace or group, not only the one
    /// started) with its scratch directory, or after a bound of a few seconds: then with the
    /// ids of the processes whose tree was still ending.
    pub async fn close(&self) -> Vec<String> {
        let ids: Vec<String> = self.lock().entries.iter().map(|e| e.id.clone()).collect();
        let shared = self.close_now();
        let until = tokio::time::Instant::now() + super::run::TREE_GONE_WAIT + Duration::from_secs(2);
        let mut left = Vec::new();
        for (id, s) in ids.into_iter().zip(shared) {
            loop {
                let notified = s.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if s.lock().done {
                    break;
                }
                if tokio::time::timeout_at(until, notified).await.is_err() {
                    left.push(id);
                    break;
                }
            }
        }
        left
    }

    /// Kills every process now (without waiting) and refuses new ones.
    pub fn close_now(&self) -> Vec<Arc<Shared>> {
        let mut inner = self.lock();
        inner.closed = true;
        self.ports.close();
        let all: Vec<Arc<Shared>> = inner.entries.iter().map(|e| Arc::clone(&e.shared)).collect();
        drop(inner);
        for s in &all {
            s.stop(libc::SIGKILL, Ender::Close);
        }
        all
    }
}

impl Drop for ProcessTable {
    fn drop(&mut self) {
        self.close_now();
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn iso_dates() {
        let t = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_764_590_400_123);
        assert_eq!(super::iso8601(t), "2025-12-01T12:00:00.123Z");
    }
}

#[cfg(test)]
mod shape_tests {
    use super::*;
    use crate::sandbox::{Filesystem, LimitsReport, Network};

    #[test]
    fn process_output_serializes_in_the_result_shape_with_numbers_not_bigints() {
        let limits = LimitsReport::NONE;
        let sandbox = Report { landlock_abi: Some(6), filesystem: Filesystem::Confined, network: Network::Blocked, processes: Processes::Namespace, node_permission: false, limits, protect: crate::sandbox::Protection::ReadOnly };
        let out = ProcessOutput {
            id: "p1".into(),
            running: false,
            exit_code: Some(1),
            signal: None,
            output: "x".into(),
            cursor: 5 << 32,
            omitted_bytes: 0,
            matched: false,
            alerts: vec![Alert { keyword: "error".into(), line: "an error".into() }],
            alerts_omitted: 0,
            duration_ms: 3,
            sandbox,
            note: None,
        };
        let v = serde_json::to_value(&out).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        let mut want = ["id", "running", "exitCode", "signal", "output", "cursor", "omittedBytes", "matched", "alerts", "alertsOmitted", "durationMs", "sandbox"];
        want.sort();
        let mut got = keys.clone();
        got.sort();
        assert_eq!(got, want);
        // Every count is a signed integer (a JS number), never a u64 (which napi turns into a
        // BigInt): crate::json::number.
        assert!(v["cursor"].is_i64() && v["cursor"].as_i64() == Some(5i64 << 32));
        assert!(v["sandbox"]["limits"]["fileBytes"]["max"].is_i64());
        assert_eq!(v["sandbox"]["filesystem"], "confined");
        assert_eq!(v["alerts"][0]["keyword"], "error");
        assert_eq!(serde_json::to_value(&ProcessOutput { note: Some("n".into()), ..out }).unwrap()["note"], "n");
    }
}
