//! Workcell's own worker threads, for the calls that block on the filesystem (`read_file`,
//! `hashFile`, `list_files`, `search_files`, and the writes' filesystem phases).
//!
//! They never run on libuv's thread pool: that pool (four threads by default) also serves the
//! host's `fs`, `dns.lookup`, `zlib` and `crypto`, so four slow searches on it would stall the
//! host's own I/O. Lanes, so that a slow walk never queues a quick read behind it:
//! [`Lane::File`] (one file: reads, hashes) and [`Lane::Walk`] (directory walks: lists,
//! searches, which start their own scoped threads for matching) and [`Lane::Write`] (a
//! write's resolution and install, `crate::write`). Each lane has [`workers`] threads, started
//! on first use: the cores minus one (the event loop's), at least one, so the work of a busy
//! agent leaves the host's event loop a core. Writes have that many too: more threads writing
//! to memory-backed files would compete with the event loop for the cores (four write threads
//! put the loop's p99 delay 1 to 1.4 ms over the machine's floor with 16 writers, where one
//! keeps it within 0.3 to 0.9 ms). A write to a disk, though, mostly waits for `fsync`: while
//! every write thread waits there, helpers take the next writes ([`blocking`]), and their
//! flushes go to the disk's journal together (16 writers on a disk of this machine: 1,065 calls
//! per second with no helper, 1,750 with three, in alternating rounds of one process). Jobs wait
//! in a queue in call order; what waits holds only its arguments (each call's memory is bounded
//! by the tool).
//!
//! Handing a job over is a channel send: the calling thread (the event loop's) never takes a
//! lock a worker holds, and wakes a worker only when one is waiting. A running job can ask
//! whether quick work follows it in its lane ([`more_work_soon`]), and a worker calls the idle
//! hook ([`set_idle_hook`]) before it waits for a job: the binding uses both to wake the event
//! loop once for several finished calls while a lane is busy (64 concurrent `read_file` calls:
//! about a seventh of the wake-ups, and 10 to 35% more calls per second on two cores).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Which threads run a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// One file: `read_file` (whole or a window), `hashFile`.
    File,
    /// A directory walk: `list_files`, `search_files`.
    Walk,
    /// A write's filesystem phases: `write_file`, `edit_file`, `apply_patch` (`crate::write`).
    Write,
    /// Directory flushes shared by concurrent writes (`crate::write::flush`).
    Flush,
}

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Pool {
    lane: Lane,
    /// Its worker threads (helpers aside).
    threads: usize,
    queue: Mutex<Sender<Job>>,
    /// The lane's receiving end, shared by its workers and its helpers.
    rx: Arc<Mutex<Receiver<Job>>>,
    /// Jobs sent and not yet taken by a worker.
    queued: AtomicUsize,
    /// Threads of the lane (workers and helpers) inside a [`blocking`] section.
    blocked: AtomicUsize,
    /// Helper threads running (see [`blocking`]).
    helpers: AtomicUsize,
    /// Whether the lane's last [`blocking`] section took longer than [`SLOW_WAIT`].
    slow: AtomicBool,
    /// How long (µs) the worker next in line watches the lane before it sleeps (see
    /// [`next_soon`]): [`WATCH`] while watching pays, less after watches that caught nothing.
    watch_us: AtomicU32,
}

/// Called by a worker before it waits for a job (see [`set_idle_hook`]).
static IDLE_HOOK: OnceLock<fn()> = OnceLock::new();

/// A job that took longer than this says nothing of the next one's being quick.
const QUICK_JOB: Duration = Duration::from_micros(200);

thread_local! {
    /// On a worker: its lane's count of waiting jobs, and when the running job started.
    static CURRENT: Cell<Option<(&'static AtomicUsize, Instant)>> = const { Cell::new(None) };
    /// On a worker or a helper: its lane.
    static LANE: Cell<Option<Lane>> = const { Cell::new(None) };
}

/// Sets the function every worker calls before it waits for a job: the moment to deliver
/// whatever a finishing job left for later (the binding's batched wake-up of the event loop).
/// The first one set stays.
pub fn set_idle_hook(hook: fn()) {
    let _ = IDLE_HOOK.set(hook);
}

/// On a worker thread, while its job runs: whether another job will follow soon (some wait in
/// the lane, and this one has been quick so far, under 200 µs). Lets a finishing job leave its
/// wake-up of the event loop to the next one (or to the idle hook), so that a busy lane wakes
/// the loop once for several calls. False on any other thread.
pub fn more_work_soon() -> bool {
    CURRENT.with(|c| c.get().is_some_and(|(queued, started)| queued.load(Ordering::Acquire) > 0 && started.elapsed() < QUICK_JOB))
}

/// Threads per lane: the cores minus one, at least one.
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).saturating_sub(1).max(1)
}

fn pool(lane: Lane) -> &'static Pool {
    static FILE: OnceLock<Pool> = OnceLock::new();
    static WALK: OnceLock<Pool> = OnceLock::new();
    static WRITE: OnceLock<Pool> = OnceLock::new();
    static FLUSH: OnceLock<Pool> = OnceLock::new();
    let (cell, name) = match lane {
        Lane::File => (&FILE, "workcell-file"),
        Lane::Walk => (&WALK, "workcell-walk"),
        Lane::Write => (&WRITE, "workcell-write"),
        Lane::Flush => (&FLUSH, "workcell-flush"),
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
            // thread of their own. (Its `pool(lane)` waits for this initialisation to end.)
            let _ = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
                let pool = pool(lane);
                LANE.with(|l| l.set(Some(lane)));
                worker(&rx, &pool.queued, &pool.watch_us)
            });
        }
        Pool {
            lane,
            threads,
            queue: Mutex::new(tx),
            rx,
            queued: AtomicUsize::new(0),
            blocked: AtomicUsize::new(0),
            helpers: AtomicUsize::new(0),
            slow: AtomicBool::new(false),
            watch_us: AtomicU32::new(WATCH_US),
        }
    })
}

fn worker(rx: &Mutex<Receiver<Job>>, queued: &'static AtomicUsize, watch_us: &AtomicU32) {
    loop {
        if queued.load(Ordering::Acquire) == 0 {
            if let Some(hook) = IDLE_HOOK.get() {
                hook();
            }
        }
        let job = {
            let rx = rx.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let watch = Duration::from_micros(u64::from(watch_us.load(Ordering::Relaxed)));
            match next_soon(&rx, queued, watch) {
                Some(job) => {
                    watch_us.store(WATCH_US, Ordering::Relaxed);
                    Ok(job)
                }
                None => {
                    // Nothing came while it watched: watch half as long next time, so that a
                    // lane whose jobs come further apart than [`WATCH`] (a server answering
                    // requests from the network) stops spending a core on watching.
                    watch_us.store(watch_us.load(Ordering::Relaxed) / 2, Ordering::Relaxed);
                    let asleep = Instant::now();
                    let job = rx.recv();
                    // A job that came soon after all: watching would have caught it.
                    if asleep.elapsed() < WATCH {
                        watch_us.store(WATCH_US, Ordering::Relaxed);
                    }
                    job
                }
            }
        };
        match job {
            Ok(job) => run_job(job, queued),
            Err(_) => return,
        }
    }
}

fn run_job(job: Job, queued: &'static AtomicUsize) {
    queued.fetch_sub(1, Ordering::AcqRel);
    CURRENT.with(|c| c.set(Some((queued, Instant::now()))));
    // A panicking job must not take the thread with it (the job's own guard settles its
    // caller).
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
    CURRENT.with(|c| c.set(None));
}

/// Helper threads a lane may add while its threads wait in [`blocking`] sections: the write
/// lane's (see [`blocking`]); none for the others.
fn max_helpers(lane: Lane) -> usize {
    match lane {
        Lane::Write => 3,
        _ => 0,
    }
}

/// A wait longer than this (a flush to a disk, not to memory) lets the lane add helpers.
const SLOW_WAIT: Duration = Duration::from_micros(300);

/// Runs `wait` (a job's wait for the device: the write lane's `fsync` of a staged file),
/// letting other jobs of the lane run meanwhile when waits are slow.
///
/// The write lane has as many threads as the others (the cores minus one) so that writes to
/// memory never compete with the event loop for the cores. On a disk, though, a write spends
/// most of its time in `fsync`, and one thread flushing one file at a time leaves the disk's
/// journal committing one file per flush where it could commit many. So when the lane's last
/// wait was slow (over [`SLOW_WAIT`]), every thread of the lane waits here and a job is queued,
/// a helper thread (at most three per lane) takes the lane's next jobs, and goes away when
/// none is queued or no thread of the lane waits any more. Helpers never add to the
/// threads using the cores on memory-backed files, where a flush takes microseconds: each
/// starts only while another thread sleeps. Elsewhere than on a lane's thread, `wait` simply
/// runs.
pub fn blocking<T>(wait: impl FnOnce() -> T) -> T {
    let Some(lane) = LANE.with(|l| l.get()).filter(|&lane| max_helpers(lane) > 0) else {
        return wait();
    };
    let pool = pool(lane);
    // Whatever wake-up of the event loop this thread left for later goes before the wait.
    if let Some(hook) = IDLE_HOOK.get() {
        hook();
    }
    pool.blocked.fetch_add(1, Ordering::AcqRel);
    if pool.queued.load(Ordering::Acquire) > 0 {
        help_if_all_wait(pool);
    }
    let started = Instant::now();
    let out = wait();
    pool.slow.store(started.elapsed() > SLOW_WAIT, Ordering::Relaxed);
    pool.blocked.fetch_sub(1, Ordering::AcqRel);
    out
}

/// Starts a helper when the lane's last wait was slow and every thread of the lane (workers and
/// helpers) waits in [`blocking`] (the caller has queued a job or is about to wait).
fn help_if_all_wait(pool: &'static Pool) {
    if !pool.slow.load(Ordering::Relaxed) {
        return;
    }
    let max = max_helpers(pool.lane);
    let blocked = pool.blocked.load(Ordering::Acquire);
    let taken = pool.helpers.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| (n < max && blocked >= pool.threads + n).then_some(n + 1));
    if taken.is_err() {
        return;
    }
    let lane = pool.lane;
    let started = std::thread::Builder::new().name("workcell-write-helper".into()).spawn(move || {
        LANE.with(|l| l.set(Some(lane)));
        helper(pool);
        pool.helpers.fetch_sub(1, Ordering::AcqRel);
    });
    if started.is_err() {
        pool.helpers.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A helper: takes the lane's queued jobs while some thread of the lane waits in [`blocking`]
/// (its own waits count too: a helper flushing lets another help), never sleeping for a job.
fn helper(pool: &'static Pool) {
    #[cfg(test)]
    HELPERS_STARTED.fetch_add(1, Ordering::SeqCst);
    while pool.blocked.load(Ordering::Acquire) > 0 && pool.queued.load(Ordering::Acquire) > 0 {
        // A worker holding the receiver is idle (watching or asleep) and takes the next job
        // itself: no help needed.
        let job = match pool.rx.try_lock() {
            Ok(rx) => rx.try_recv(),
            Err(std::sync::TryLockError::Poisoned(poisoned)) => poisoned.into_inner().try_recv(),
            Err(std::sync::TryLockError::WouldBlock) => break,
        };
        match job {
            Ok(job) => run_job(job, &pool.queued),
            // Counted but not yet sent, or taken by a worker meanwhile: look again.
            Err(mpsc::TryRecvError::Empty) => std::thread::yield_now(),
            Err(mpsc::TryRecvError::Disconnected) => break,
        }
    }
    // What this thread's jobs left for a later wake-up of the event loop goes now.
    if let Some(hook) = IDLE_HOOK.get() {
        hook();
    }
}

#[cfg(test)]
static HELPERS_STARTED: AtomicUsize = AtomicUsize::new(0);

/// How long the worker next in line for a job watches its lane before it sleeps, at most.
const WATCH_US: u32 = 50;
const WATCH: Duration = Duration::from_micros(WATCH_US as u64);

/// The next job if one is sent within `watch` (at most [`WATCH`]), watching the lane's count
/// without a system call; `None` when none came (the caller then sleeps in `recv`).
///
/// A caller making calls one after another (an agent's loop awaiting each call) sends its next
/// job some 10 to 30 µs after the previous one finished: a worker asleep then costs the caller
/// a `futex` wake and the job the time the kernel takes to run the worker again (a wake-up and
/// a context switch, several µs on a virtual machine), more than the work of a small read.
/// Only the worker holding the receiver (the one that would take the next job) watches, so a
/// lane never has more than one thread spinning, and only for 50 µs after its last job. Each
/// watch that catches nothing halves the next one; a job caught, or one that came within 50 µs
/// of the worker's going to sleep, brings it back to 50 µs. Jobs that come 300 µs apart (a
/// server's calls over HTTP) then cost no watching, where 50 µs of it a call had been most of
/// the worker's CPU.
fn next_soon(rx: &Receiver<Job>, queued: &AtomicUsize, watch: Duration) -> Option<Job> {
    if watch.is_zero() {
        return None;
    }
    let start = Instant::now();
    loop {
        for _ in 0..32 {
            if queued.load(Ordering::Acquire) > 0 {
                // Counted before it is sent: wait for the send itself.
                loop {
                    match rx.try_recv() {
                        Ok(job) => return Some(job),
                        // A job counted is being sent: wait for it up to the full [`WATCH`].
                        Err(mpsc::TryRecvError::Empty) if start.elapsed() < WATCH => std::hint::spin_loop(),
                        Err(_) => return None,
                    }
                }
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= watch {
            return None;
        }
    }
}

/// Runs `job` on `lane`'s threads, after the jobs queued before it.
pub fn spawn(lane: Lane, job: impl FnOnce() + Send + 'static) {
    let job: Job = Box::new(job);
    let pool = pool(lane);
    pool.queued.fetch_add(1, Ordering::AcqRel);
    let sent = match pool.queue.lock() {
        Ok(tx) => tx.send(job),
        Err(poisoned) => poisoned.into_inner().send(job),
    };
    if sent.is_ok() && pool.blocked.load(Ordering::Acquire) > 0 {
        // Sent while the lane's threads wait for a slow device: a helper may take it.
        help_if_all_wait(pool);
    }
    if let Err(mpsc::SendError(job)) = sent {
        pool.queued.fetch_sub(1, Ordering::AcqRel);
        // No worker is left (none could start): a thread of its own, never the caller's.
        let _ = std::thread::Builder::new().name("workcell-job".into()).spawn(job);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_run_off_the_calling_thread_on_named_workers() {
        let _serial = serial();
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
        let _serial = serial();
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

    /// The lanes are shared by this module's tests: one at a time.
    static SERIAL: Mutex<()> = Mutex::new(());

    fn serial() -> std::sync::MutexGuard<'static, ()> {
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[test]
    fn a_job_knows_whether_quick_work_follows_it_and_the_idle_hook_runs_when_none_does() {
        let _serial = serial();
        static IDLE: AtomicUsize = AtomicUsize::new(0);
        fn idle() {
            IDLE.fetch_add(1, Ordering::SeqCst);
        }
        set_idle_hook(idle);
        assert!(!more_work_soon(), "not on a worker");
        let n = workers();
        // Every worker of the lane held, then two jobs behind them: the first looks at once
        // and then after 1 ms, the second looks at once.
        let (hold, held) = mpsc::channel::<()>();
        let held = Arc::new(Mutex::new(held));
        for _ in 0..n {
            let held = Arc::clone(&held);
            spawn(Lane::File, move || {
                let _ = held.lock().unwrap().recv();
            });
        }
        let (tx, rx) = mpsc::channel();
        {
            let tx = tx.clone();
            spawn(Lane::File, move || {
                let quick = more_work_soon();
                std::thread::sleep(Duration::from_millis(1));
                tx.send((quick, more_work_soon())).unwrap();
            });
        }
        spawn(Lane::File, move || tx.send((more_work_soon(), false)).unwrap());
        std::thread::sleep(Duration::from_millis(10));
        let idle_before = IDLE.load(Ordering::SeqCst);
        for _ in 0..n {
            hold.send(()).unwrap();
        }
        let (first, second) = (rx.recv().unwrap(), rx.recv().unwrap());
        // With one worker the second job waits behind the first, which is quick at first and
        // not once it has run 1 ms. (With more, another worker may take it at once.)
        if n == 1 {
            assert_eq!(first, (true, false));
        } else {
            assert!(!first.1);
        }
        // Nothing behind the second.
        assert!(!second.0);
        // The lane then empty, its workers call the hook before they wait.
        let deadline = Instant::now() + Duration::from_secs(5);
        while IDLE.load(Ordering::SeqCst) == idle_before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(IDLE.load(Ordering::SeqCst) > idle_before);
    }

    /// A lane whose jobs come further apart than [`WATCH`] stops watching for the next one (a
    /// server's calls over HTTP had its worker spend 50 µs of watching per call, most of its CPU);
    /// jobs that come one right after another bring the watch back.
    #[test]
    fn a_lane_whose_jobs_come_far_apart_stops_watching_and_quick_ones_bring_it_back() {
        let _serial = serial();
        let watch = || pool(Lane::Walk).watch_us.load(Ordering::Relaxed);
        let (tx, rx) = mpsc::channel();
        // Jobs 2 ms apart: each watch catches nothing and halves the next.
        for _ in 0..12 {
            let tx = tx.clone();
            spawn(Lane::Walk, move || tx.send(()).unwrap());
            rx.recv().unwrap();
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(watch(), 0, "the watch after 12 jobs 2 ms apart");
        // Each job sent as soon as the last one finished: one of them comes within 50 µs of the
        // worker's going to sleep (or is caught watching), and the watch is back.
        let deadline = Instant::now() + Duration::from_secs(30);
        while watch() < WATCH_US && Instant::now() < deadline {
            let tx = tx.clone();
            spawn(Lane::Walk, move || tx.send(()).unwrap());
            rx.recv().unwrap();
        }
        assert_eq!(watch(), WATCH_US);
    }

    /// While a write-lane thread waits long in [`blocking`] (a flush to a disk), the lane's next
    /// job runs on a helper; waits that were quick (memory) add no thread, and the next job
    /// runs after the waiting one.
    #[test]
    fn a_write_lane_thread_waiting_for_a_slow_device_lets_a_helper_take_the_next_job() {
        let _serial = serial();
        // Other tests' writes share the lane and may end a wait meanwhile; a few attempts.
        let mut helped = false;
        for _ in 0..3 {
            let (release, wait) = mpsc::channel::<()>();
            let (tx, rx) = mpsc::channel::<&str>();
            let before = HELPERS_STARTED.load(Ordering::SeqCst);
            {
                let tx = tx.clone();
                spawn(Lane::Write, move || {
                    // A slow wait, then a long one with the next job queued behind.
                    blocking(|| std::thread::sleep(Duration::from_millis(2)));
                    tx.send("waiting").unwrap();
                    blocking(|| wait.recv_timeout(Duration::from_secs(20)).ok());
                    tx.send("released").unwrap();
                });
            }
            assert_eq!(rx.recv().unwrap(), "waiting");
            spawn(Lane::Write, move || tx.send("next").unwrap());
            let first = rx.recv_timeout(Duration::from_secs(10));
            release.send(()).unwrap();
            let rest: Vec<_> = rx.iter().take(if first.is_ok() { 1 } else { 2 }).collect();
            if first == Ok("next") {
                assert_eq!(rest, ["released"]);
                assert!(HELPERS_STARTED.load(Ordering::SeqCst) > before);
                helped = true;
                break;
            }
        }
        assert!(helped, "the next job never ran while a write-lane thread waited");

        // Quick waits: the next job waits for the running one, and no helper starts.
        if workers() == 1 {
            let before = HELPERS_STARTED.load(Ordering::SeqCst);
            let (tx, rx) = mpsc::channel::<&str>();
            let (release, wait) = mpsc::channel::<()>();
            {
                let tx = tx.clone();
                spawn(Lane::Write, move || {
                    for _ in 0..100 {
                        blocking(|| ());
                    }
                    tx.send("quick").unwrap();
                    // A long wait, but the lane's last ones were quick: no helper.
                    blocking(|| wait.recv_timeout(Duration::from_secs(20)).ok());
                    tx.send("released").unwrap();
                });
            }
            assert_eq!(rx.recv().unwrap(), "quick");
            spawn(Lane::Write, move || tx.send("next").unwrap());
            std::thread::sleep(Duration::from_millis(50));
            release.send(()).unwrap();
            assert_eq!(rx.iter().take(2).collect::<Vec<_>>(), ["released", "next"]);
            assert_eq!(HELPERS_STARTED.load(Ordering::SeqCst), before);
        }
    }

    #[test]
    fn a_panicking_job_leaves_the_worker_running() {
        let _serial = serial();
        for _ in 0..workers() {
            spawn(Lane::File, || panic!("job panicked"));
        }
        let (tx, rx) = mpsc::channel();
        spawn(Lane::File, move || tx.send(()).unwrap());
        rx.recv().unwrap();
    }
}
