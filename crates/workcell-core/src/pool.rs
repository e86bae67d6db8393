//! Workcell's own worker threads, for the calls that block on the filesystem (`read_file`,
//! `hashFile`, `list_files`, `search_files`, and the writes' filesystem phases).
//!
//! They never run on libuv's thread pool: that pool (four threads by default) also serves the
//! host's `fs`, `dns.lookup`, `zlib` and `crypto`, so four slow searches on it would stall the
//! host's own I/O. Two lanes, so that a slow walk never queues a quick read behind it:
//! [`Lane::File`] (one file: reads, hashes) and [`Lane::Walk`] (directory walks: lists,
//! searches, which start their own scoped threads for matching) and [`Lane::Write`] (a
//! write's resolution and install, `crate::write`). Each lane has [`workers`] threads, started
//! on first use: the cores minus one (the event loop's), at least one, so the work of a busy
//! agent leaves the host's event loop a core. Writes have that many too, though a write mostly
//! waits for `fsync` and more threads would keep a disk busier: measured on two cores with 16
//! writers (bench/write.mjs), four write threads did about 15% more disk writes per second than
//! one, but their competition with the event loop for the cores put its p99 delay 1 to 1.4 ms
//! over the machine's floor, where one thread keeps it within 0.3 to 0.9 ms. Jobs wait in a
//! queue in call order; what waits holds only its arguments
//! (each call's memory is bounded by the tool).
//!
//! Handing a job over is a channel send: the calling thread (the event loop's) never takes a
//! lock a worker holds, and wakes a worker only when one is waiting.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

/// Which threads run a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// One file: `read_file` (whole or a window), `hashFile`.
    File,
    /// A directory walk: `list_files`, `search_files`.
    Walk,
    /// A write's filesystem phases: `write_file`, `edit_file`, `apply_patch` (`crate::write`).
    Write,
}

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Pool {
    queue: Mutex<Sender<Job>>,
}

/// Threads per lane: the cores minus one, at least one.
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).max(1)
}

fn pool(lane: Lane) -> &'static Pool {
    static FILE: OnceLock<Pool> = OnceLock::new();
    static WALK: OnceLock<Pool> = OnceLock::new();
    static WRITE: OnceLock<Pool> = OnceLock::new();
    let (cell, name) = match lane {
        Lane::File => (&FILE, "workcell-file"),
        Lane::Walk => (&WALK, "workcell-walk"),
        Lane::Write => (&WRITE, "workcell-write"),
    };
    cell.get_or_init(|| {
        // Counted once per lane: `available_parallelism` reads the cgroup's CPU limits, which
        // costs tens of µs, far more than handing a job over.
        let threads = workers();
        let (tx, rx) = mpsc::channel::<Job>();
        let rx = Arc::new(Mutex::new(rx));
        for i in 0..threads {
            let rx = Arc::clone(&rx);
            // A thread that cannot start leaves the others; with none, `spawn` runs jobs on a
            // thread of their own.
            let _ = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || worker(&rx));
        }
        Pool { queue: Mutex::new(tx) }
    })
}

fn worker(rx: &Mutex<Receiver<Job>>) {
    loop {
        let job = match rx.lock() {
            Ok(rx) => rx.recv(),
            Err(poisoned) => poisoned.into_inner().recv(),
        };
        match job {
            // A panicking job must not take the thread with it (the job's own guard settles
            // its caller).
            Ok(job) => {
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            }
            Err(_) => return,
        }
    }
}

/// Runs `job` on `lane`'s threads, after the jobs queued before it.
pub fn spawn(lane: Lane, job: impl FnOnce() + Send + 'static) {
    let job: Job = Box::new(job);
    let sent = match pool(lane).queue.lock() {
        Ok(tx) => tx.send(job),
        Err(poisoned) => poisoned.into_inner().send(job),
    };
    if let Err(mpsc::SendError(job)) = sent {
        // No worker is left (none could start): a thread of its own, never the caller's.
        let _ = std::thread::Builder::new().name("workcell-job".into()).spawn(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_off_the_calling_thread_on_named_workers() {
        let (tx, rx) = mpsc::channel();
        for lane in [Lane::File, Lane::Walk, Lane::Write] {
            let tx = tx.clone();
            spawn(lane, move || tx.send(std::thread::current().name().map(str::to_string)).unwrap());
        }
        drop(tx);
        let mut names: Vec<_> = rx.iter().map(Option::unwrap).collect();
        names.sort();
        assert!(
            names[0].starts_with("workcell-file-") && names[1].starts_with("workcell-walk-") && names[2].starts_with("workcell-write-"),
            "{names:?}"
        );
    }

    #[test]
    fn a_slow_walk_does_not_hold_up_a_file_job() {
        let (release, wait) = mpsc::channel::<()>();
        let wait = Arc::new(Mutex::new(wait));
        for _ in 0..workers() + 2 {
            let wait = Arc::clone(&wait);
            spawn(Lane::Walk, move || {
                let _ = wait.lock().unwrap().recv();
            });
        }
        let (tx, rx) = mpsc::channel();
        spawn(Lane::File, move || tx.send(()).unwrap());
        rx.recv().unwrap();
        for _ in 0..workers() + 2 {
            let _ = release.send(());
        }
    }

    #[test]
    fn a_panicking_job_leaves_the_worker_running() {
        for _ in 0..workers() {
            spawn(Lane::File, || panic!("job panicked"));
        }
        let (tx, rx) = mpsc::channel();
        spawn(Lane::File, move || tx.send(()).unwrap());
        rx.recv().unwrap();
    }
}
