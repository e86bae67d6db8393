//! Settling the promises of calls that finish on workcell's threads: one threadsafe function per
//! JavaScript thread, shared by every call, and one event-loop callback for all the calls that
//! finished since the last one.
//!
//! napi's own deferred creates a threadsafe function (a libuv async handle, a cleanup hook) for
//! every promise and wakes the loop once per call; with 64 callers that is 64 handle creations,
//! 64 wake-ups and 64 handle closes per round on the loop's thread. Here a finished call pushes
//! its settlement on a queue and wakes the loop only when the queue was empty; the loop's
//! callback settles everything queued (the awaiting callers then run in one microtask pass).
//! While more quick jobs wait in the finishing worker's lane, that wake-up is left to the
//! worker's next settlement or to the moment its lane runs dry (see [`push`]).
//!
//! The threadsafe function is unreferenced while no call is pending, so an idle addon never keeps
//! the process alive, and referenced while any is, as napi's deferred is. At the environment's
//! teardown (a worker thread ending) it is forgotten before Node frees it: a call finishing later
//! is dropped, never delivered to a freed function.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::marker::PhantomData;
use std::ptr;
use std::sync::{Arc, Mutex, RwLock};

use napi::bindgen_prelude::{Object, ToNapiValue};
use napi::{check_status, sys, Env, JsError};

type Settle = Box<dyn FnOnce(sys::napi_env) + Send>;

/// What waits for the loop's callback.
#[derive(Default)]
struct Waiting {
    jobs: Vec<Settle>,
    /// The loop has been woken for these (its callback has not taken them yet).
    woken: bool,
    /// When the oldest of them was queued without a wake-up.
    since: Option<std::time::Instant>,
}

struct Queue {
    /// The settlements waiting for the loop. Held only to push or to take them all, never
    /// across a system call, so the loop's thread does not wait on a finishing call.
    jobs: Mutex<Waiting>,
    /// The function that wakes the loop (null once the environment is torn down); read-locked
    /// while it is called, so the teardown cannot forget it in between.
    tsfn: RwLock<usize>,
}

struct Local {
    queue: Arc<Queue>,
    tsfn: sys::napi_threadsafe_function,
    /// Calls started on this thread and not yet settled.
    pending: Cell<usize>,
    env: sys::napi_env,
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

unsafe extern "C" fn drain(env: sys::napi_env, _js_cb: sys::napi_value, context: *mut c_void, _data: *mut c_void) {
    if env.is_null() || context.is_null() {
        return;
    }
    // `context` is the queue, kept alive by the thread-local `Local` (never dropped before the
    // environment's teardown, after which this is not called).
    let queue = unsafe { &*(context as *const Queue) };
    let jobs = std::mem::take(&mut *queue.jobs.lock().unwrap_or_else(|e| e.into_inner())).jobs;
    let done = jobs.len();
    for job in jobs {
        let mut scope = ptr::null_mut();
        let opened = unsafe { sys::napi_open_handle_scope(env, &mut scope) } == sys::Status::napi_ok;
        job(env);
        if opened {
            unsafe { sys::napi_close_handle_scope(env, scope) };
        }
    }
    LOCAL.with(|l| {
        if let Some(local) = l.borrow().as_ref() {
            let left = local.pending.get().saturating_sub(done);
            local.pending.set(left);
            if left == 0 {
                unsafe { sys::napi_unref_threadsafe_function(env, local.tsfn) };
            }
        }
    });
}

unsafe extern "C" fn teardown(data: *mut c_void) {
    // Runs before Node finalizes the threadsafe function (cleanup hooks run in reverse order of
    // registration, and the function registered its own first).
    let queue = unsafe { &*(data as *const Queue) };
    *queue.tsfn.write().unwrap_or_else(|e| e.into_inner()) = 0;
    queue.jobs.lock().unwrap_or_else(|e| e.into_inner()).jobs.clear();
    LOCAL.with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            *l = None;
        }
    });
}

fn local_queue(env: sys::napi_env) -> napi::Result<(Arc<Queue>, sys::napi_threadsafe_function)> {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if let Some(local) = l.as_ref() {
            if local.env == env {
                return Ok((local.queue.clone(), local.tsfn));
            }
        }
        let queue = Arc::new(Queue { jobs: Mutex::new(Waiting::default()), tsfn: RwLock::new(0) });
        workcell_core::api::pool::set_idle_hook(wake_owed);
        // The function's context holds one reference for good (one small queue per JavaScript
        // thread that ever used the addon), so `drain` and `teardown` never see a freed queue.
        let context = Arc::into_raw(queue.clone()) as *mut c_void;
        let mut name = ptr::null_mut();
        check_status!(
            unsafe { sys::napi_create_string_utf8(env, c"workcell.settle".as_ptr(), 15, &mut name) },
            "workcell: cannot name the settle function"
        )?;
        let mut tsfn = ptr::null_mut();
        check_status!(
            unsafe {
                sys::napi_create_threadsafe_function(
                    env,
                    ptr::null_mut(),
                    ptr::null_mut(),
                    name,
                    0,
                    1,
                    ptr::null_mut(),
                    None,
                    context,
                    Some(drain),
                    &mut tsfn,
                )
            },
            "workcell: cannot create the settle function"
        )?;
        unsafe { sys::napi_unref_threadsafe_function(env, tsfn) };
        check_status!(
            unsafe { sys::napi_add_env_cleanup_hook(env, Some(teardown), context) },
            "workcell: cannot register the settle function's teardown"
        )?;
        *queue.tsfn.write().unwrap_or_else(|e| e.into_inner()) = tsfn as usize;
        *l = Some(Local { queue: queue.clone(), tsfn, pending: Cell::new(0), env });
        Ok((queue, tsfn))
    })
}

/// A promise to settle from any thread, through the shared queue. Dropped unsettled (a job that
/// never ran), it rejects, so no caller waits for ever and the loop is not held.
pub struct Pending<T> {
    queue: Arc<Queue>,
    deferred: Option<usize>,
    _value: PhantomData<fn() -> T>,
}

/// Creates a promise (on the JavaScript thread) and its [`Pending`] settlement.
pub fn deferred<'env, T: ToNapiValue + 'static>(env: &'env Env) -> napi::Result<(Pending<T>, Object<'env>)> {
    let raw = env.raw();
    let (queue, tsfn) = local_queue(raw)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "workcell: cannot create a promise")?;
    LOCAL.with(|l| {
        if let Some(local) = l.borrow().as_ref() {
            let n = local.pending.get();
            if n == 0 {
                unsafe { sys::napi_ref_threadsafe_function(raw, tsfn) };
            }
            local.pending.set(n + 1);
        }
    });
    Ok((Pending { queue, deferred: Some(deferred as usize), _value: PhantomData }, Object::from_raw(raw, promise)))
}

/// Most settlements one wake-up leaves waiting for a later one.
const BATCH: usize = 16;

/// Longest a settlement is left waiting for a later wake-up: a few quick jobs' worth, so that a
/// batch stays small (and the loop's turn that settles it short) and only lanes whose jobs
/// take microseconds, where a wake-up per call costs most, batch at all.
const HOLD: std::time::Duration = std::time::Duration::from_micros(50);

thread_local! {
    /// On a worker thread: the queues it left without a wake-up (see [`push`]).
    static OWED: RefCell<Vec<Arc<Queue>>> = const { RefCell::new(Vec::new()) };
}

/// Queues a settlement. The first one after a drain wakes the loop (that drain takes the later
/// ones), unless a worker thread pushes it while more quick jobs wait in its lane
/// (`pool::more_work_soon`): then the wake-up is left to the worker's next settlement or to the
/// moment it runs out of jobs (the pool's idle hook, [`wake_owed`]), at most [`BATCH`] deep
/// and [`HOLD`] long.
/// Under load the loop then wakes once for several calls instead of once a call, each wake-up
/// costing the worker a system call and the loop a turn; a single call, or the last of a
/// burst, wakes it at once. A settlement so left waits for the worker's next job (expected to
/// be quick as the one that left it was: a job that has run 200 µs leaves nothing), and is not
/// left again once it has waited 50 µs.
fn push(queue: &Arc<Queue>, job: Settle) {
    let later = workcell_core::api::pool::more_work_soon();
    let wake = {
        let mut waiting = queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
        waiting.jobs.push(job);
        if waiting.woken {
            Some(false)
        } else if later && waiting.jobs.len() < BATCH && waiting.since.get_or_insert_with(std::time::Instant::now).elapsed() < HOLD {
            None
        } else {
            waiting.woken = true;
            Some(true)
        }
    };
    match wake {
        None => OWED.with(|o| {
            let mut o = o.borrow_mut();
            if !o.iter().any(|q| Arc::ptr_eq(q, queue)) {
                o.push(queue.clone());
            }
        }),
        Some(now) => {
            if now {
                call(queue);
            }
            // Whatever this thread left for later goes with it.
            wake_owed();
        }
    }
}

/// Wakes the loop for every queue this thread left waiting.
fn wake_owed() {
    let owed = OWED.with(|o| std::mem::take(&mut *o.borrow_mut()));
    for queue in owed {
        let wake = {
            let mut waiting = queue.jobs.lock().unwrap_or_else(|e| e.into_inner());
            let wake = !waiting.woken && !waiting.jobs.is_empty();
            waiting.woken |= wake;
            wake
        };
        if wake {
            call(&queue);
        }
    }
}

fn call(queue: &Queue) {
    let tsfn = queue.tsfn.read().unwrap_or_else(|e| e.into_inner());
    if *tsfn != 0 {
        unsafe {
            sys::napi_call_threadsafe_function(*tsfn as sys::napi_threadsafe_function, ptr::null_mut(), sys::ThreadsafeFunctionCallMode::nonblocking);
        }
    }
}

/// Rejects `deferred` with `error`, or with the JavaScript exception pending.
unsafe fn reject(env: sys::napi_env, deferred: sys::napi_deferred, error: napi::Error) {
    let mut pending = false;
    let mut value = ptr::null_mut();
    unsafe {
        sys::napi_is_exception_pending(env, &mut pending);
        if pending {
            sys::napi_get_and_clear_last_exception(env, &mut value);
        } else {
            value = JsError::from(error).into_value(env);
        }
        sys::napi_reject_deferred(env, deferred, value);
    }
}

impl<T> Drop for Pending<T> {
    fn drop(&mut self) {
        if let Some(deferred) = self.deferred.take() {
            let job: Settle = Box::new(move |env| unsafe {
                reject(env, deferred as sys::napi_deferred, napi::Error::from_reason("workcell: the call ended without a result"));
            });
            push(&self.queue, job);
        }
    }
}

impl<T: ToNapiValue + 'static> Pending<T> {
    /// Settles the promise with what `resolver` gives on the JavaScript thread (a rejection for
    /// its error). Callable from any thread.
    pub fn resolve(mut self, resolver: impl FnOnce(Env) -> napi::Result<T> + Send + 'static) {
        let Some(deferred) = self.deferred.take() else { return };
        let job: Settle = Box::new(move |env| {
            let deferred = deferred as sys::napi_deferred;
            let value = resolver(Env::from_raw(env)).and_then(|v| unsafe { T::to_napi_value(env, v) });
            match value {
                Ok(v) => unsafe {
                    sys::napi_resolve_deferred(env, deferred, v);
                },
                Err(e) => unsafe { reject(env, deferred, e) },
            }
        });
        push(&self.queue, job);
    }
}
