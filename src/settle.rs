//! Settling the promises of calls that finish on workcell's threads: one libuv async handle per
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
//! The wake-up is libuv's own `uv_async_send` on a handle of this addon, not a threadsafe
//! function: Node's `napi_call_threadsafe_function` writes the loop's eventfd while it holds the
//! function's mutex, so the loop's thread, woken at once on the other core, blocks on that mutex
//! and has to be woken a second time by a futex when the worker lets go (a `read_file` of 4 KiB
//! spent some 4 µs of its 28 in that). `uv_async_send` takes no lock. The callback runs the
//! settlements inside a callback scope (`napi_open_callback_scope`), so the microtasks they
//! queue run when it closes, as after any other callback from the loop.
//!
//! While a quick call (a `read_file`, a hash: a job of the file lane) is in flight, the loop
//! polls instead of sleeping, for at most [`POLL`] after the call started: an idle handle of this
//! addon keeps libuv's poll timeout at zero, so the finished call is seen at once instead of
//! after the loop's thread is woken from sleep (5-7 µs of a 4 KiB `read_file`'s 27 on two cores
//! here). The loop stays free for everything else meanwhile (it runs its turns, only without
//! sleeping between them); the polling stops as soon as no call is pending, or at the deadline,
//! so a slow call (a file on a slow disk) costs at most [`POLL`] of it.
//!
//! The handle is unreferenced while no call is pending, so an idle addon never keeps the process
//! alive, and referenced while any is, as napi's deferred is. At the environment's teardown (a
//! worker thread ending) it is forgotten before it is closed (an async cleanup hook, which
//! Node waits for before it closes the loop): a call finishing later is dropped, never sent to
//! a closed handle.

use std::cell::{Cell, RefCell};
use std::ffi::{c_int, c_void, CStr};
use std::marker::PhantomData;
use std::ptr;
use std::sync::{Arc, Mutex, OnceLock, RwLock};

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
    /// The async handle that wakes the loop (null once the environment is torn down);
    /// read-locked while it is sent, so the teardown cannot close it in between.
    handle: RwLock<usize>,
}

/// libuv's functions this module uses, looked up once in the running process (Node exports
/// libuv's symbols to addons).
struct Uv {
    async_init: unsafe extern "C" fn(*mut c_void, *mut c_void, unsafe extern "C" fn(*mut c_void)) -> c_int,
    async_send: unsafe extern "C" fn(*mut c_void) -> c_int,
    close: unsafe extern "C" fn(*mut c_void, Option<unsafe extern "C" fn(*mut c_void)>),
    r#ref: unsafe extern "C" fn(*mut c_void),
    unref: unsafe extern "C" fn(*mut c_void),
    idle_init: unsafe extern "C" fn(*mut c_void, *mut c_void) -> c_int,
    idle_start: unsafe extern "C" fn(*mut c_void, unsafe extern "C" fn(*mut c_void)) -> c_int,
    idle_stop: unsafe extern "C" fn(*mut c_void) -> c_int,
}

fn uv() -> napi::Result<&'static Uv> {
    static UV: OnceLock<Option<Uv>> = OnceLock::new();
    UV.get_or_init(|| {
        let sym = |name: &CStr| {
            let f = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
            (!f.is_null()).then_some(f)
        };
        Some(unsafe {
            Uv {
                async_init: std::mem::transmute::<*mut c_void, _>(sym(c"uv_async_init")?),
                async_send: std::mem::transmute::<*mut c_void, _>(sym(c"uv_async_send")?),
                close: std::mem::transmute::<*mut c_void, _>(sym(c"uv_close")?),
                r#ref: std::mem::transmute::<*mut c_void, _>(sym(c"uv_ref")?),
                unref: std::mem::transmute::<*mut c_void, _>(sym(c"uv_unref")?),
                idle_init: std::mem::transmute::<*mut c_void, _>(sym(c"uv_idle_init")?),
                idle_start: std::mem::transmute::<*mut c_void, _>(sym(c"uv_idle_start")?),
                idle_stop: std::mem::transmute::<*mut c_void, _>(sym(c"uv_idle_stop")?),
            }
        })
    })
    .as_ref()
    .ok_or_else(|| napi::Error::from_reason("workcell: libuv's async handles are not available in this process"))
}

/// A `uv_async_t` (128 bytes in libuv 1.x; room is left for more) and what its callbacks need.
/// `handle` comes first: libuv hands back a pointer to it, which is a pointer to this.
#[repr(C)]
struct AsyncHandle {
    handle: [u64; 64],
    /// The queue (one strong reference, released when the handle is closed).
    queue: *const Queue,
    /// The async cleanup hook to remove once the handle is closed.
    cleanup: sys::napi_async_cleanup_hook_handle,
}

/// A `uv_idle_t` (120 bytes in libuv 1.x; room is left for more), freed when it is closed.
#[repr(C)]
struct IdleHandle {
    handle: [u64; 32],
}

/// Longest the loop polls instead of sleeping after a quick call started (see the module's
/// documentation): long enough for a read of a few hundred KiB here, short enough that a call
/// stuck on a slow disk wastes little of the loop's thread.
const POLL: std::time::Duration = std::time::Duration::from_micros(100);

struct Local {
    queue: Arc<Queue>,
    handle: *mut AsyncHandle,
    /// The idle handle that keeps the loop polling (null where it could not be made).
    idle: *mut IdleHandle,
    /// Until when the loop polls; `None` while the idle handle is stopped.
    poll_until: Cell<Option<std::time::Instant>>,
    /// For the callback scope the settlements run in.
    context: sys::napi_async_context,
    /// Calls started on this thread and not yet settled.
    pending: Cell<usize>,
    env: sys::napi_env,
    /// `Array.of` as it was when the addon was first used on this thread (see `crate::js`).
    array_of: sys::napi_ref,
}

/// `Array.of` of this thread's environment, for making long arrays in one call.
pub fn array_of(env: sys::napi_env) -> Option<sys::napi_value> {
    LOCAL.with(|l| {
        let l = l.borrow();
        let local = l.as_ref().filter(|local| local.env == env && !local.array_of.is_null())?;
        let mut f = ptr::null_mut();
        (unsafe { sys::napi_get_reference_value(env, local.array_of, &mut f) } == sys::Status::napi_ok && !f.is_null()).then_some(f)
    })
}

/// A reference to the global `Array.of` (null when it is not a function).
fn take_array_of(env: sys::napi_env) -> sys::napi_ref {
    unsafe {
        let (mut global, mut array, mut of) = (ptr::null_mut(), ptr::null_mut(), ptr::null_mut());
        let mut kind = sys::ValueType::napi_undefined;
        let mut r = ptr::null_mut();
        let ok = sys::napi_get_global(env, &mut global) == sys::Status::napi_ok
            && sys::napi_get_named_property(env, global, c"Array".as_ptr(), &mut array) == sys::Status::napi_ok
            && sys::napi_get_named_property(env, array, c"of".as_ptr(), &mut of) == sys::Status::napi_ok
            && sys::napi_typeof(env, of, &mut kind) == sys::Status::napi_ok
            && kind == sys::ValueType::napi_function
            && sys::napi_create_reference(env, of, 1, &mut r) == sys::Status::napi_ok;
        if ok {
            r
        } else {
            let mut pending = false;
            sys::napi_is_exception_pending(env, &mut pending);
            if pending {
                let mut ignored = ptr::null_mut();
                sys::napi_get_and_clear_last_exception(env, &mut ignored);
            }
            ptr::null_mut()
        }
    }
}

thread_local! {
    static LOCAL: RefCell<Option<Local>> = const { RefCell::new(None) };
}

unsafe extern "C" fn drain(handle: *mut c_void) {
    // `handle` is the first field of a live `AsyncHandle` (freed only after its close), whose
    // queue is held by it.
    let queue = unsafe { &*(*(handle as *const AsyncHandle)).queue };
    let Some((env, context)) = LOCAL.with(|l| l.borrow().as_ref().map(|l| (l.env, l.context))) else { return };
    let jobs = std::mem::take(&mut *queue.jobs.lock().unwrap_or_else(|e| e.into_inner())).jobs;
    let done = jobs.len();
    let mut outer = ptr::null_mut();
    let outer_opened = unsafe { sys::napi_open_handle_scope(env, &mut outer) } == sys::Status::napi_ok;
    // The microtasks the settlements queue (the callers' continuations) run when the scope closes.
    let mut resource = ptr::null_mut();
    unsafe { sys::napi_create_object(env, &mut resource) };
    let mut scope = ptr::null_mut();
    let scoped = unsafe { sys::napi_open_callback_scope(env, resource, context, &mut scope) } == sys::Status::napi_ok;
    for job in jobs {
        let mut inner = ptr::null_mut();
        let opened = unsafe { sys::napi_open_handle_scope(env, &mut inner) } == sys::Status::napi_ok;
        job(env);
        if opened {
            unsafe { sys::napi_close_handle_scope(env, inner) };
        }
    }
    LOCAL.with(|l| {
        if let Some(local) = l.borrow().as_ref() {
            let left = local.pending.get().saturating_sub(done);
            local.pending.set(left);
            if left == 0 {
                if let Ok(uv) = uv() {
                    unsafe { (uv.unref)(local.handle.cast()) };
                }
                stop_polling(local);
            }
        }
    });
    if scoped {
        unsafe { sys::napi_close_callback_scope(env, scope) };
    }
    if outer_opened {
        unsafe { sys::napi_close_handle_scope(env, outer) };
    }
}

/// Each turn of the loop while it polls: stops once no call is pending or the deadline passed.
unsafe extern "C" fn poll_tick(_idle: *mut c_void) {
    LOCAL.with(|l| {
        if let Ok(l) = l.try_borrow() {
            if let Some(local) = l.as_ref() {
                let over = local.poll_until.get().is_none_or(|until| std::time::Instant::now() >= until);
                if local.pending.get() == 0 || over {
                    stop_polling(local);
                }
            }
        }
    });
}

fn stop_polling(local: &Local) {
    if local.poll_until.take().is_some() && !local.idle.is_null() {
        if let Ok(uv) = uv() {
            unsafe { (uv.idle_stop)(local.idle.cast()) };
        }
    }
}

/// Has the loop of `env`'s thread poll, rather than sleep, for the next [`POLL`]: a quick call
/// has just started there.
pub fn poll_briefly(env: sys::napi_env) {
    LOCAL.with(|l| {
        let Ok(l) = l.try_borrow() else { return };
        let Some(local) = l.as_ref().filter(|local| local.env == env && !local.idle.is_null()) else { return };
        let Ok(uv) = uv() else { return };
        let until = std::time::Instant::now() + POLL;
        if local.poll_until.replace(Some(until)).is_none() && unsafe { (uv.idle_start)(local.idle.cast(), poll_tick) } != 0 {
            local.poll_until.set(None);
        }
    });
}

unsafe extern "C" fn idle_closed(handle: *mut c_void) {
    drop(unsafe { Box::from_raw(handle as *mut IdleHandle) });
}

unsafe extern "C" fn closed(handle: *mut c_void) {
    // The handle is closed: nothing refers to it any more.
    let handle = unsafe { Box::from_raw(handle as *mut AsyncHandle) };
    unsafe { drop(Arc::from_raw(handle.queue)) };
    unsafe { sys::napi_remove_async_cleanup_hook(handle.cleanup) };
}

unsafe extern "C" fn teardown(cleanup: sys::napi_async_cleanup_hook_handle, data: *mut c_void) {
    let handle = data as *mut AsyncHandle;
    let queue = unsafe { &*(*handle).queue };
    // Forgotten first, so no finishing call sends to it once it is closing.
    *queue.handle.write().unwrap_or_else(|e| e.into_inner()) = 0;
    queue.jobs.lock().unwrap_or_else(|e| e.into_inner()).jobs.clear();
    LOCAL.with(|l| {
        if let Ok(mut l) = l.try_borrow_mut() {
            if let Some(local) = l.take() {
                if !local.idle.is_null() {
                    if let Ok(uv) = uv() {
                        // Closing stops it; its memory is freed once libuv is done with it.
                        unsafe { (uv.close)(local.idle.cast(), Some(idle_closed)) };
                    }
                }
                unsafe { sys::napi_async_destroy(local.env, local.context) };
                if !local.array_of.is_null() {
                    unsafe { sys::napi_delete_reference(local.env, local.array_of) };
                }
            }
        }
    });
    unsafe { (*handle).cleanup = cleanup };
    match uv() {
        Ok(uv) => unsafe { (uv.close)(handle.cast(), Some(closed)) },
        // Not reached: the handle exists only once libuv's functions were found.
        Err(_) => unsafe {
            sys::napi_remove_async_cleanup_hook(cleanup);
        },
    }
}

fn local_queue(env: sys::napi_env) -> napi::Result<(Arc<Queue>, *mut AsyncHandle)> {
    LOCAL.with(|l| {
        let mut l = l.borrow_mut();
        if let Some(local) = l.as_ref() {
            if local.env == env {
                return Ok((local.queue.clone(), local.handle));
            }
        }
        let uv = uv()?;
        let queue = Arc::new(Queue { jobs: Mutex::new(Waiting::default()), handle: RwLock::new(0) });
        workcell_core::api::pool::set_idle_hook(wake_owed);
        let mut name = ptr::null_mut();
        check_status!(
            unsafe { sys::napi_create_string_utf8(env, c"workcell.settle".as_ptr(), 15, &mut name) },
            "workcell: cannot name the settle callback"
        )?;
        let mut context = ptr::null_mut();
        check_status!(
            unsafe { sys::napi_async_init(env, ptr::null_mut(), name, &mut context) },
            "workcell: cannot create the settle callback's async context"
        )?;
        let mut event_loop = ptr::null_mut();
        check_status!(unsafe { sys::napi_get_uv_event_loop(env, &mut event_loop) }, "workcell: cannot get the event loop")?;
        // The handle holds one reference to the queue until it is closed, so `drain` never sees
        // a freed queue.
        let handle = Box::into_raw(Box::new(AsyncHandle { handle: [0; 64], queue: Arc::into_raw(queue.clone()), cleanup: ptr::null_mut() }));
        if unsafe { (uv.async_init)(event_loop.cast(), handle.cast(), drain) } != 0 {
            unsafe {
                drop(Arc::from_raw((*handle).queue));
                drop(Box::from_raw(handle));
                sys::napi_async_destroy(env, context);
            }
            return Err(napi::Error::from_reason("workcell: cannot create the settle handle"));
        }
        unsafe { (uv.unref)(handle.cast()) };
        let mut hook = ptr::null_mut();
        check_status!(
            unsafe { sys::napi_add_async_cleanup_hook(env, Some(teardown), handle.cast(), &mut hook) },
            "workcell: cannot register the settle handle's teardown"
        )?;
        *queue.handle.write().unwrap_or_else(|e| e.into_inner()) = handle as usize;
        let array_of = take_array_of(env);
        // The idle handle never keeps the process alive (unreferenced); without one the loop
        // only sleeps as it would anyway.
        let mut idle = Box::into_raw(Box::new(IdleHandle { handle: [0; 32] }));
        if unsafe { (uv.idle_init)(event_loop.cast(), idle.cast()) } == 0 {
            unsafe { (uv.unref)(idle.cast()) };
        } else {
            drop(unsafe { Box::from_raw(idle) });
            idle = ptr::null_mut();
        }
        *l = Some(Local { queue: queue.clone(), handle, idle, poll_until: Cell::new(None), context, pending: Cell::new(0), env, array_of });
        Ok((queue, handle))
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
    let (queue, handle) = local_queue(raw)?;
    let mut deferred = ptr::null_mut();
    let mut promise = ptr::null_mut();
    check_status!(unsafe { sys::napi_create_promise(raw, &mut deferred, &mut promise) }, "workcell: cannot create a promise")?;
    LOCAL.with(|l| {
        if let Some(local) = l.borrow().as_ref() {
            let n = local.pending.get();
            if n == 0 {
                if let Ok(uv) = uv() {
                    unsafe { (uv.r#ref)(handle.cast()) };
                }
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
    let handle = queue.handle.read().unwrap_or_else(|e| e.into_inner());
    if *handle != 0 {
        if let Ok(uv) = uv() {
            unsafe { (uv.async_send)(*handle as *mut c_void) };
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
