//! Directory flushes shared by concurrent writes (group commit).
//!
//! A write is durable once its file was fsynced before the rename and its directory after it
//! (the rename itself is then on disk). Writes into one directory at the same time can share
//! that second flush: a writer registers after its rename and is answered by the first flush
//! of the directory that *started after it registered*, so whatever flush answers it covers its
//! rename. While one flush runs, every writer that registers meanwhile waits for the next one,
//! which then covers them all: 16 writers into one directory cost about two directory flushes
//! per round instead of 16.
//!
//! Flushes run on their own lane ([`Lane::Flush`]); a writer on the write lane hands its
//! result over to be settled after its flush ([`deferring`]), so the write lane goes on with
//! the next write meanwhile. Elsewhere (a write that waited for its target's lock, a patch)
//! the caller waits for the flush ([`flush_dir`]). A failed flush fails every writer it
//! answers, and any later writer of a failed generation or after it: an error is never
//! covered by a later success.

use std::cell::RefCell;
use std::collections::HashMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{mpsc, Arc, LazyLock, Mutex, MutexGuard};

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};
use crate::pool::{self, Lane};
use crate::root::Identity;

use super::at::io_err;

type Waiter = Box<dyn FnOnce(std::io::Result<()>) + Send>;

/// One directory's flushes.
#[derive(Default)]
struct Group {
    /// Number of the latest flush started.
    started: u64,
    /// The latest failed flush and its error number.
    failed: Option<(u64, i32)>,
    running: bool,
    /// Who waits, with the number of the first flush that answers them.
    waiters: Vec<(u64, Waiter)>,
}

static GROUPS: LazyLock<Mutex<HashMap<Identity, Arc<Mutex<Group>>>>> = LazyLock::new(Default::default);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Opens `dir` itself for reading (an `O_PATH` handle cannot be fsynced).
pub(crate) fn open_dir(dir: &impl AsFd) -> std::io::Result<OwnedFd> {
    rustix::fs::openat(dir, ".", OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(io_err)
}

/// Calls `then` once a flush of the directory `fd` (identity `id`) that started after this
/// call has ended, with its outcome. Never calls it on this thread.
fn after(fd: OwnedFd, id: Identity, then: Waiter) {
    let group = lock(&GROUPS).entry(id).or_default().clone();
    let mut g = lock(&group);
    let need = g.started + 1;
    #[cfg(test)]
    let need = if hooks::protection_off() && g.running { g.started } else { need };
    g.waiters.push((need, then));
    if g.running {
        return;
    }
    g.running = true;
    drop(g);
    pool::spawn(Lane::Flush, move || run(group, id, fd));
}

/// Flushes the directory until no writer waits for a later flush, answering each writer after
/// the first flush that started after it registered.
fn run(group: Arc<Mutex<Group>>, id: Identity, fd: OwnedFd) {
    loop {
        let number = {
            let mut g = lock(&group);
            g.started += 1;
            g.started
        };
        #[cfg(test)]
        hooks::before_flush(id);
        let outcome = rustix::fs::fsync(&fd);
        #[cfg(test)]
        hooks::FLUSHES.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let (ready, failed, more) = {
            let mut g = lock(&group);
            if let Err(e) = outcome {
                g.failed = Some((number, e.raw_os_error()));
            }
            let (ready, later): (Vec<_>, Vec<_>) = std::mem::take(&mut g.waiters).into_iter().partition(|(need, _)| *need <= number);
            g.waiters = later;
            let more = !g.waiters.is_empty();
            g.running = more;
            (ready, g.failed, more)
        };
        for (need, waiter) in ready {
            waiter(match failed {
                Some((at, errno)) if at >= need => Err(std::io::Error::from_raw_os_error(errno)),
                _ => Ok(()),
            });
        }
        if !more {
            break;
        }
    }
    // Forget an idle group nobody else holds (holders clone it under the map's lock).
    let mut groups = lock(&GROUPS);
    if groups.get(&id).is_some_and(|g| Arc::ptr_eq(g, &group) && Arc::strong_count(g) == 2 && !lock(g).running) {
        groups.remove(&id);
    }
}

/// Flushes the directory `dir` (identity `id`) after a rename into it: returns after a flush
/// that started after this call ended. `shown` names the write in an error.
pub(crate) fn flush_dir(dir: &impl AsFd, id: Identity, shown: &str) -> Result<()> {
    let mut fd = Some(open_dir(dir).map_err(|e| Error::from_io(&e, shown))?);
    let deferred = DEFERRED.with(|d| match d.borrow_mut().as_mut() {
        // Deferred: the caller settles after the flush (see `deferring`).
        Some(slot) => {
            *slot = Some(Pending { fd: fd.take(), id, shown: shown.to_string() });
            true
        }
        None => false,
    });
    let Some(fd) = fd.filter(|_| !deferred) else {
        return Ok(());
    };
    let (tx, rx) = mpsc::sync_channel(1);
    after(fd, id, Box::new(move |r| drop(tx.send(r))));
    rx.recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the directory flush stopped")))
        .map_err(|e| Error::from_io(&e, shown))
}

/// A directory flush a job left to its caller (see [`deferring`]).
pub(crate) struct Pending {
    fd: Option<OwnedFd>,
    id: Identity,
    shown: String,
}

impl Pending {
    /// Calls `then` after the flush, with its outcome (on the flush lane).
    pub(crate) fn then(self, then: impl FnOnce(Result<()>) + Send + 'static) {
        let Pending { fd, id, shown } = self;
        match fd {
            Some(fd) => after(fd, id, Box::new(move |r| then(r.map_err(|e| Error::from_io(&e, &shown))))),
            None => then(Ok(())),
        }
    }
}

thread_local! {
    /// Set while [`deferring`] runs a job on this thread: where the job's flush is left.
    static DEFERRED: RefCell<Option<Option<Pending>>> = const { RefCell::new(None) };
}

/// Runs `job`, leaving the directory flush it asks for (at most one) to the caller instead of
/// waiting for it: returns the job's result and the flush to wait for before settling it.
pub(crate) fn deferring<T>(job: impl FnOnce() -> T) -> (T, Option<Pending>) {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            DEFERRED.with(|d| *d.borrow_mut() = None);
        }
    }
    DEFERRED.with(|d| *d.borrow_mut() = Some(None));
    let reset = Reset;
    let out = job();
    let pending = DEFERRED.with(|d| d.borrow_mut().take().flatten());
    drop(reset);
    (out, pending)
}

#[cfg(test)]
pub(crate) mod hooks {
    use std::sync::atomic::AtomicUsize;
    use std::sync::{Arc, Mutex};

    use crate::root::Identity;

    /// Directory flushes done (all directories).
    pub static FLUSHES: AtomicUsize = AtomicUsize::new(0);
    type Hook = Arc<dyn Fn(Identity) + Send + Sync>;
    /// Called on the flush lane right before each directory flush.
    pub static BEFORE_FLUSH: Mutex<Option<Hook>> = Mutex::new(None);

    pub(super) fn before_flush(id: Identity) {
        let hook = BEFORE_FLUSH.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(hook) = hook {
            hook(id)
        }
    }

    /// The protection off, to show that the tests can fail (`WORKCELL_TEST_FLUSH_OFF=1`): a
    /// writer is answered before its flush, and one arriving during a flush by that flush.
    pub fn protection_off() -> bool {
        std::env::var_os("WORKCELL_TEST_FLUSH_OFF").is_some()
    }
}
