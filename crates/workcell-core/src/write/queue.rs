//! The job queue: a write's phases on the blocking pool (at most [`BLOCKING_SLOTS`] at once),
//! the per-target lock between resolution and the job's work, and the callbacks that settle a
//! host's promise exactly once.

use std::sync::{Arc, LazyLock};

use tokio::sync::Semaphore;

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::guard::Guard;
use crate::path::RelPath;
use crate::root::Workspace;
use crate::target_lock::{self, Registration, Ticket};

use super::checks::{check_expected_hash, WriteRequest, MAX_WRITE_BYTES};
use super::install::{install, WriteOutput};
use super::resolve::{resolve_guarded, Resolved};

/// Filesystem phases running at once (resolution or install), across all writes.
const BLOCKING_SLOTS: usize = 16;

static BLOCKING: LazyLock<Arc<Semaphore>> = LazyLock::new(|| Arc::new(Semaphore::new(BLOCKING_SLOTS)));

/// Counts filesystem phases running at once (tests check the bound).
#[cfg(test)]
pub(super) mod gauge {
    use std::sync::atomic::{AtomicUsize, Ordering};
    pub static ACTIVE: AtomicUsize = AtomicUsize::new(0);
    pub static PEAK: AtomicUsize = AtomicUsize::new(0);
    pub struct Running;
    impl Running {
        pub fn new() -> Self {
            let now = ACTIVE.fetch_add(1, Ordering::SeqCst) + 1;
            PEAK.fetch_max(now, Ordering::SeqCst);
            Running
        }
    }
    impl Drop for Running {
        fn drop(&mut self) {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
}

/// Marks a filesystem phase (a no-op outside tests).
#[inline(always)]
fn running() -> impl Drop {
    #[cfg(test)]
    return gauge::Running::new();
    #[cfg(not(test))]
    return Noop;
}

#[cfg(not(test))]
struct Noop;
#[cfg(not(test))]
impl Drop for Noop {
    fn drop(&mut self) {}
}

/// Takes this call's place in the per-target queues. Call it synchronously, when the call is
/// made, so writes run in call order.
pub fn ticket() -> Ticket {
    target_lock::ticket()
}

/// One writing operation run by the shared machinery: `write_file` ([`WriteRequest`]) or
/// `edit_file` (`crate::edit::EditRequest`). The machinery checks the write guard, resolves the
/// target, takes its lock and calls [`Job::run`] while holding it; `run` ends with [`install`].
pub trait Job: Send + 'static {
    type Output: Send + 'static;
    /// The normalized path the call names.
    fn path(&self) -> &RelPath;
    /// The write guard of the tool that made the call.
    fn guard(&self) -> Option<&Guard>;
    /// The work done under the target's lock.
    fn run(self, ws: &Workspace, target: &Resolved, cancel: &Cancel) -> Result<Self::Output>;
}

impl Job for WriteRequest {
    type Output = WriteOutput;
    fn path(&self) -> &RelPath {
        &self.path
    }
    fn guard(&self) -> Option<&Guard> {
        self.guard.as_deref()
    }
    fn run(self, ws: &Workspace, target: &Resolved, cancel: &Cancel) -> Result<WriteOutput> {
        if let Some(expected) = &self.expected_hash {
            check_expected_hash(target, &self.path, expected, cancel)?;
        }
        install(ws, &self.path, target, self.content.as_bytes(), cancel)
    }
}

/// How far [`start`] got.
#[derive(Debug)]
pub enum Started<J: Job> {
    /// The write ended (the target's lock was free, or the call failed before needing it).
    Done(Result<J::Output>),
    /// Resolved and queued behind other writes of the same target: finish it with
    /// [`Queued::finish`], which waits asynchronously.
    Queued(Queued<J>),
}

/// A resolved write waiting for its target's lock.
#[derive(Debug)]
pub struct Queued<J: Job> {
    ws: Arc<Workspace>,
    job: J,
    resolved: Resolved,
    registration: Registration,
    cancel: Cancel,
}

impl<J: Job> Queued<J> {
    /// Waits for the lock without blocking a thread, then runs the job on the blocking pool.
    pub async fn finish(self) -> Result<J::Output> {
        let Queued { ws, job, resolved, registration, cancel } = self;
        let guard = registration.wait(&cancel).await?;
        let out = {
            let cancel = cancel.clone();
            blocking(&cancel.clone(), move || job.run(&ws, &resolved, &cancel)).await
        };
        drop(guard);
        out
    }
}

/// The blocking part of a write, for a worker thread: checks the guard, resolves the target
/// and, when its lock is free right away, runs the job too, all on this thread. Otherwise
/// returns the queued write.
pub fn start<J: Job>(ws: Arc<Workspace>, job: J, ticket: Ticket, cancel: Cancel) -> Started<J> {
    let resolved = match guarded_resolve(&ws, &job, &cancel) {
        Ok(r) => r,
        Err(e) => return Started::Done(Err(e)),
    };
    match ticket.register(resolved.key()).try_take() {
        Ok(guard) => {
            let out = job.run(&ws, &resolved, &cancel);
            drop(guard);
            Started::Done(out)
        }
        Err(registration) => Started::Queued(Queued { ws, job, resolved, registration, cancel }),
    }
}

/// The guard's checks around resolution: the path as named and the links on the way (before
/// any directory is created), then the file the write really lands on.
fn guarded_resolve<J: Job>(ws: &Workspace, job: &J, cancel: &Cancel) -> Result<Resolved> {
    if let Some(guard) = job.guard() {
        cancel.check()?;
        ws.check()?;
        guard.check_before(ws, job.path())?;
    }
    let resolved = resolve_guarded(ws, job.path(), cancel, job.guard())?;
    if let Some(guard) = job.guard() {
        guard.check_landing(ws, job.path(), &resolved.dir, &resolved.name)?;
    }
    Ok(resolved)
}

/// Runs `job` (resolution, lock, the job's work). `ticket` must have been taken when the call
/// was made.
pub async fn run_job<J: Job>(ws: Arc<Workspace>, job: J, ticket: Ticket, cancel: Cancel) -> Result<J::Output> {
    cancel.check()?;
    let started = {
        let cancel = cancel.clone();
        blocking(&cancel.clone(), move || Ok(start(ws, job, ticket, cancel))).await?
    };
    match started {
        Started::Done(out) => out,
        Started::Queued(queued) => queued.finish().await,
    }
}

/// Writes `request` into the workspace (resolution, lock, install). `ticket` must have been
/// taken when the call was made.
pub async fn write_file(ws: Arc<Workspace>, request: WriteRequest, ticket: Ticket, cancel: Cancel) -> Result<WriteOutput> {
    run_job(ws, request, ticket, cancel).await
}

/// Calls its callback exactly once: with the outcome, or with an internal error if the write
/// was dropped without one (a panic in a worker), so a host's promise always settles.
pub(super) struct Settle<T, F: FnOnce(Result<T>)>(Option<F>, std::marker::PhantomData<fn(T)>);

impl<T, F: FnOnce(Result<T>)> Settle<T, F> {
    pub(super) fn new(f: F) -> Self {
        Settle(Some(f), std::marker::PhantomData)
    }
    pub(super) fn done(mut self, out: Result<T>) {
        if let Some(f) = self.0.take() {
            f(out)
        }
    }
}

impl<T, F: FnOnce(Result<T>)> Drop for Settle<T, F> {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f(Err(internal("the write stopped unexpectedly")))
        }
    }
}

/// Starts a job from a thread outside the runtime's workers (a host's main thread), inside
/// the runtime's context. `done` gets the outcome, exactly once, on a worker thread. When a
/// blocking slot is free, the whole job usually runs on one thread of the write lane
/// ([`crate::pool::Lane::Write`]): no hop through an async worker, no thread ever blocked
/// waiting for a lock, and the calling thread only sends it over a channel (tokio's blocking
/// pool would have it take the pool's lock, which its threads also take, and often start a
/// thread).
pub fn spawn_job<J: Job>(
    ws: Arc<Workspace>,
    job: J,
    ticket: Ticket,
    cancel: Cancel,
    done: impl FnOnce(Result<J::Output>) + Send + 'static,
) {
    let settle = Settle::new(done);
    match BLOCKING.clone().try_acquire_owned() {
        Ok(permit) => {
            let runtime = tokio::runtime::Handle::current();
            crate::pool::spawn(crate::pool::Lane::Write, move || {
                let running = running();
                if let Err(e) = cancel.check() {
                    drop(permit);
                    return settle.done(Err(e));
                }
                // The directory flush is left to the flush lane, which settles the call after
                // it; this thread goes on with the next write meanwhile.
                let (started, flush) = super::flush::deferring(|| start(ws, job, ticket, cancel));
                drop(running);
                drop(permit);
                match started {
                    Started::Done(Ok(out)) => match flush {
                        #[cfg(test)]
                        Some(flush) if super::flush::hooks::protection_off() => {
                            settle.done(Ok(out));
                            flush.then(|_| {})
                        }
                        Some(flush) => flush.then(move |r| settle.done(r.map(|()| out))),
                        None => settle.done(Ok(out)),
                    },
                    Started::Done(out) => settle.done(out),
                    Started::Queued(queued) => {
                        runtime.spawn(async move { settle.done(queued.finish().await) });
                    }
                }
            });
        }
        Err(_) => {
            tokio::spawn(async move { settle.done(run_job(ws, job, ticket, cancel).await) });
        }
    }
}

/// [`spawn_job`] for `write_file`.
pub fn spawn_write(
    ws: Arc<Workspace>,
    request: WriteRequest,
    ticket: Ticket,
    cancel: Cancel,
    done: impl FnOnce(Result<WriteOutput>) + Send + 'static,
) {
    spawn_job(ws, request, ticket, cancel, done)
}

/// Convenience for Rust callers: checks, takes a ticket now and writes.
pub async fn write(ws: Arc<Workspace>, path: &str, content: impl Into<String>, cancel: Cancel) -> Result<WriteOutput> {
    let request = WriteRequest::new(path, content.into(), MAX_WRITE_BYTES)?;
    let ticket = ticket();
    write_file(ws, request, ticket, cancel).await
}

/// Runs `f` on tokio's blocking pool, at most [`BLOCKING_SLOTS`] at once.
pub(crate) async fn blocking<T: Send + 'static>(cancel: &Cancel, f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let permit = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(Error::cancelled()),
        p = BLOCKING.acquire() => p.map_err(|_| internal("the worker pool is closed"))?,
    };
    let out = tokio::task::spawn_blocking(move || {
        let _running = running();
        f()
    })
    .await.map_err(|e| internal(&format!("a write worker failed: {e}")))?;
    drop(permit);
    out
}

fn internal(what: &str) -> Error {
    Error::new(Code::IoError, what.to_string()).with_hint("an internal error stopped the write; retry the call")
}

