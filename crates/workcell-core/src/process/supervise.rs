//! One run of a child, from spawn to the moment nothing of it is left: output drained
//! concurrently, a timeout and cancellation that kill the whole group, the group killed after a
//! normal exit too, and a bounded wait for pipes that a descendant keeps open.

use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt as _;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::capture::Sink;
use super::kill::{kill_pipe_holders, pipe_inode};
use super::timing::{RunOptions, CANCEL_GRACE, FINAL_READ, KILL_WAIT, READ_CHUNK};
use super::reap::{ChildHandle, ExitInfo};
use super::spawn::{spawn, OutputPipes, SpawnSpec};
use crate::cancel::Cancel;
use crate::progress::Progress;

/// Why the run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The child exited by itself (any code, or a signal it did not get from us).
    Exited,
    /// The timeout passed; the group was killed.
    TimedOut,
    /// Cancelled; the group was killed. Also returned, with nothing spawned, when the
    /// cancellation came first.
    Cancelled,
}

/// The result of [`run`].
#[derive(Debug)]
pub struct Finished<S> {
    pub end: End,
    /// How the child ended; `None` only if it was cancelled before the spawn or did not die
    /// within [`KILL_WAIT`] of SIGKILL (it is then collected in the background).
    pub status: Option<ExitInfo>,
    /// What stdout (or the merged pipe) delivered.
    pub stdout: S,
    /// What stderr delivered (`None` with merged pipes).
    pub stderr: Option<S>,
    /// From the spawn to the end of the run.
    pub duration: Duration,
    /// Whether a pipe was still open (held by an escaped descendant) when the host closed it.
    pub pipes_forced: bool,
    /// Processes outside the group that were killed because they held a pipe.
    pub holders_killed: usize,
}

/// Runs `spec` to the end. `stderr` must be `Some` for [`OutputPipes::Separate`] and `None` for
/// [`OutputPipes::Merged`]. Must be called within a tokio runtime (I/O and time enabled).
///
/// Errors are spawn failures (the program does not exist, a confinement step failed...);
/// everything after the spawn is reported in [`Finished`].
pub async fn run<S: Sink>(
    spec: SpawnSpec,
    opts: &RunOptions,
    cancel: &Cancel,
    stdout: S,
    stderr: Option<S>,
) -> std::io::Result<Finished<S>> {
    if (spec.output == OutputPipes::Separate) != stderr.is_some() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "stderr sink does not match the output pipes"));
    }
    if cancel.is_cancelled() {
        return Ok(Finished { end: End::Cancelled, status: None, stdout, stderr, duration: Duration::ZERO, pipes_forced: false, holders_killed: 0 });
    }
    let mut spawned = spawn(spec)?;
    let resources = spawned.resources.take();
    let started = Instant::now();
    let mut child = match ChildHandle::new(spawned.pid, opts.reaper) {
        Ok(c) => c,
        Err(e) => {
            super::kill::kill_group(spawned.pid);
            super::reap::reap_in_background(spawned.pid);
            return Err(e);
        }
    };

    let inodes: Vec<u64> = std::iter::once(&spawned.stdout).chain(spawned.stderr.as_ref()).filter_map(pipe_inode).collect();
    let stop = CancellationToken::new();
    // Readers stop when this run ends, however it ends (even if this future is dropped).
    let _stop_readers = stop.clone().drop_guard();
    let (eof_tx, mut eof_rx) = mpsc::channel::<()>(2);
    let mut pipes = 1;
    // A watched call's output goes to its progress too (run_tests passes an unwatched one and
    // reports through its parser instead, see `testrun::sink`).
    let progress = cancel.progress();
    let out_task = tokio::spawn(drain(spawned.stdout, stdout, stop.clone(), eof_tx.clone(), progress.clone()));
    let err_task = match (spawned.stderr, stderr) {
        (Some(fd), Some(sink)) => {
            pipes += 1;
            Some(tokio::spawn(drain(fd, sink, stop.clone(), eof_tx.clone(), progress.clone())))
        }
        _ => None,
    };
    drop(eof_tx);

    let deadline = opts.timeout.map(|t| tokio::time::Instant::from_std(started + t));
    // When several are ready at once: a cancellation wins (the caller has gone), then an exit
    // that came before the deadline was noticed.
    let end = tokio::select! {
        biased;
        _ = cancel.cancelled() => End::Cancelled,
        _ = child.exited() => End::Exited,
        _ = sleep_until(deadline) => End::TimedOut,
    };
    // The leader is not collected yet, so its pid still names this group: kill what is left.
    child.kill_group();
    let status = child.reap(KILL_WAIT).await;
    if let Some(resources) = resources {
        // The sandbox's cgroups: whatever is left in them is killed, then they are removed.
        let _ = tokio::task::spawn_blocking(move || drop(resources)).await;
    }

    // Wait for the end of output; what still holds a pipe after the grace is killed.
    let (exit_grace, holder_grace) = match end {
        End::Cancelled => (opts.exit_grace.min(CANCEL_GRACE), opts.holder_grace.min(CANCEL_GRACE)),
        _ => (opts.exit_grace, opts.holder_grace),
    };
    let mut eofs = 0;
    wait_eofs(&mut eof_rx, &mut eofs, pipes, exit_grace).await;
    let mut holders_killed = 0;
    if eofs < pipes {
        // Reading /proc is blocking work: keep it off the runtime's workers.
        holders_killed = tokio::task::spawn_blocking(move || kill_pipe_holders(&inodes)).await.unwrap_or(0);
        wait_eofs(&mut eof_rx, &mut eofs, pipes, holder_grace).await;
    }
    let pipes_forced = eofs < pipes;
    stop.cancel();
    let stdout = out_task.await.map_err(join_error)?;
    let stderr = match err_task {
        Some(t) => Some(t.await.map_err(join_error)?),
        None => None,
    };
    Ok(Finished { end, status, stdout, stderr, duration: started.elapsed(), pipes_forced, holders_killed })
}

fn join_error(e: tokio::task::JoinError) -> std::io::Error {
    std::io::Error::other(format!("output reader failed: {e}"))
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Counts end-of-file reports until all `pipes` are done or `limit` passes.
async fn wait_eofs(rx: &mut mpsc::Receiver<()>, eofs: &mut usize, pipes: usize, limit: Duration) {
    let _ = tokio::time::timeout(limit, async {
        while *eofs < pipes {
            if rx.recv().await.is_none() {
                break;
            }
            *eofs += 1;
        }
    })
    .await;
}

/// Reads `fd` into `sink` until end of file or `stop`, then hands the sink back. On `stop`, what
/// the pipe already holds is still read (at most [`FINAL_READ`] bytes), so output written before
/// the child exited is never lost to a busy runtime. What is read also goes to `progress`
/// (nothing when unwatched).
async fn drain<S: Sink>(fd: OwnedFd, mut sink: S, stop: CancellationToken, eof: mpsc::Sender<()>, progress: Progress) -> S {
    let Ok(mut pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        let _ = eof.send(()).await;
        return sink;
    };
    let mut buf = vec![0u8; READ_CHUNK];
    loop {
        tokio::select! {
            biased;
            _ = stop.cancelled() => {
                let mut left = FINAL_READ;
                while left > 0 {
                    // A direct read: the reactor may not have seen the data yet.
                    match rustix::io::read(&pipe, &mut buf[..READ_CHUNK.min(left)]) {
                        Ok(n) if n > 0 => {
                            sink.push(&buf[..n]);
                            progress.output(&buf[..n]);
                            left -= n;
                        }
                        _ => break,
                    }
                }
                return sink;
            }
            r = pipe.read(&mut buf) => match r {
                Ok(n) if n > 0 => {
                    sink.push(&buf[..n]);
                    progress.output(&buf[..n]);
                }
                _ => {
                    let _ = eof.send(()).await;
                    return sink;
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::process::Head;

    #[tokio::test]
    async fn a_stopped_reader_still_takes_what_the_pipe_holds() {
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap();
        rustix::io::write(&w, b"written before the end").unwrap();
        let stop = CancellationToken::new();
        stop.cancel();
        let (tx, _rx) = mpsc::channel(1);
        // The writer is still open (an escaped holder): no end of file, and the stop came first.
        let sink = drain(r, Head::new(100), stop, tx, Progress::default()).await;
        assert_eq!(sink.finish().text, "written before the end");
        drop(w);
    }
}
