// The native addon and the glue every tool shares: cancellation handles and error mapping.
import { createRequire } from "node:module";
import { clearInterval as timersClearInterval, setInterval as timersSetInterval } from "node:timers";
import type * as Binding from "../native/binding.js";
import type { NativeError } from "../native/binding.js";
import type { Progress } from "./tool.js";
import { ArgumentsReason, ToolError, abortError, invalidArguments, type ErrorCode } from "./errors.js";
import { addonLoadError } from "./platform.js";

/**
 * napi's generated loader (CommonJS, so that loading it can fail inside a try and the package
 * stays `require`-able: no top-level await). It picks `native/workcell.<platform>.node` or the
 * `workcell-<platform>` package; when neither loads, its generic message is replaced by ours.
 */
function loadBinding(): typeof Binding {
  const require = createRequire(import.meta.url);
  try {
    return require("../native/binding.cjs") as typeof Binding;
  } catch (err) {
    throw addonLoadError(err, require);
  }
}

export const binding = loadBinding();
export const { CancelHandle, NativeWorkspace } = binding;
export type CancelHandle = Binding.CancelHandle;
export type NativeWorkspace = Binding.NativeWorkspace;
export type { NativeError };

import type { CoreError, Outcome } from "./generated/contract.js";
export type { CoreError, Outcome } from "./generated/contract.js";

/** Converts a native error into a ToolError (or an AbortError for a cancellation). */
export function fromNative(error: NativeError | CoreError, signal?: AbortSignal): Error {
  if (error.code === "ABORTED") return abortError(signal);
  const details =
    error.details == null ? undefined : typeof error.details === "string" ? (JSON.parse(error.details) as unknown) : error.details;
  return new ToolError(error.code as ErrorCode, error.message, { hint: error.hint ?? undefined, details });
}

/** Converts an error thrown by a native constructor (its message is the tool error's JSON). */
export function fromThrown(err: unknown): Error {
  if (err instanceof Error) {
    try {
      const parsed = JSON.parse(err.message) as { code?: string; message?: string; hint?: string; details?: unknown };
      if (typeof parsed.code === "string" && typeof parsed.message === "string") {
        return new ToolError(parsed.code as ErrorCode, parsed.message, {
          hint: parsed.hint ?? undefined,
          details: parsed.details ?? undefined,
        });
      }
    } catch {
      // not one of ours
    }
  }
  return err instanceof Error ? err : new Error(String(err));
}

/**
 * A value of the wrong type reaching the addon (a host that calls `execute` without
 * `validate`): napi refuses it with a status such as `StringExpected` or `ArrayExpected`. That
 * is the model's bad input, so it becomes `TOOL_ARGUMENTS_INVALID` like `validate`'s refusals.
 */
export function fromConversion(err: unknown): unknown {
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && !(err instanceof ToolError) && typeof code === "string" && /^[A-Za-z]+Expected$/.test(code)) {
    return invalidArguments(
      ArgumentsReason.INVALID_ARGUMENTS_SHAPE,
      "an argument has the wrong type; call the tool with the types of its parameters schema (validate the input first)",
      { error: err.message },
    );
  }
  return err;
}

/**
 * Starts a native call: a napi conversion error thrown synchronously (a wrong-typed argument)
 * becomes a rejection, mapped by `fromConversion`. One promise per call (no async wrappers):
 * the completions of many calls are settled together and each costs the loop only its `then`.
 */
function start<R>(run: (cancel: CancelHandle | undefined) => Promise<R>, cancel: CancelHandle | undefined): Promise<R> {
  let pending: Promise<R>;
  try {
    pending = run(cancel);
  } catch (err) {
    return Promise.reject(fromConversion(err));
  }
  return pending.then(undefined, (err: unknown) => {
    throw fromConversion(err);
  });
}

/** Opens a workspace root; throws a ToolError when it is not an existing directory. */
export function openWorkspace(root: string): NativeWorkspace {
  if (typeof root !== "string" || root.length === 0) {
    throw new TypeError("workcell: the workspace root must be a non-empty path string");
  }
  try {
    return new NativeWorkspace(root);
  } catch (err) {
    throw fromThrown(err);
  }
}

/**
 * One cancellation handle per AbortSignal: calls that share a signal (an agent running tools in
 * parallel) share the handle.
 *
 * The `abort` listener that triggers it is added only to the signals of calls still running at
 * the next tick of one shared timer, a few milliseconds after they started; a signal aborted
 * before that is seen there. Most file calls end sooner, and adding a listener to Node's
 * EventTarget costs the loop more than a 4 KiB write's own share: with a fresh signal per call
 * (as an MCP server gives each request), 16 writers did 7,800 calls/s with a listener per call
 * and 11,000 with this. (Node's AbortSignal is costly to make at all: a signal per call still
 * doubles the GC's work, whatever is called with it, so the benches pass one signal per run.)
 * The timer is node:timers' own (a test's fake timers, which replace the global one, do not
 * hold it back), unreferenced, and runs only while calls are in flight.
 */
const handles = new WeakMap<AbortSignal, CancelHandle>();
const listening = new WeakSet<AbortSignal>();
/** Calls started since the last tick: their signal and whether they are still running. */
let young: { signal: AbortSignal; handle: CancelHandle; running: boolean }[] = [];
let ticker: ReturnType<typeof timersSetInterval> | undefined;
/** How long a call runs before its signal gets a listener (and the latest an abort is seen). */
const LISTEN_AFTER_MS = 4;

function listen(signal: AbortSignal, handle: CancelHandle): void {
  if (listening.has(signal)) return;
  listening.add(signal);
  if (signal.aborted) handle.cancel();
  else signal.addEventListener("abort", () => handle.cancel(), { once: true });
}

function tick(): void {
  const calls = young;
  young = [];
  for (const c of calls) if (c.running) listen(c.signal, c.handle);
  if (young.length === 0 && ticker !== undefined) {
    timersClearInterval(ticker);
    ticker = undefined;
  }
}

/** A call on a signal: its handle, and whether it is still running (for the next tick). */
interface Young {
  signal: AbortSignal;
  handle: CancelHandle;
  running: boolean;
}

/** The call record for a call on `signal` (its `running` is cleared when the call has ended). */
function handleFor(signal: AbortSignal): Pick<Young, "handle" | "running"> {
  let handle = handles.get(signal);
  if (!handle) {
    handle = new CancelHandle();
    handles.set(signal, handle);
  }
  if (listening.has(signal)) return { running: false, handle };
  const call = { signal, handle, running: true };
  young.push(call);
  if (ticker === undefined) {
    ticker = timersSetInterval(tick, LISTEN_AFTER_MS);
    ticker.unref();
  }
  return call;
}

/**
 * How often a watched call's updates are taken: a little over the core's 250 ms spacing, so
 * a tick is never refused for coming a fraction of a millisecond early.
 */
const PROGRESS_POLL_MS = 260;

/** An update as the host sees it: the fields the core left out are absent, not null. */
function progressOf(u: Binding.ProgressUpdate): Progress {
  const out: Progress = { elapsedMs: u.elapsedMs, message: u.message };
  if (u.progress != null) out.progress = u.progress;
  if (u.total != null) out.total = u.total;
  if (u.output != null) out.output = u.output;
  return out;
}

/**
 * A call someone watches: its own handle (the core's updates are kept there, never pushed),
 * taken by one unreferenced timer on this thread while the call runs. The timer stops and the
 * handle ends before the call's promise settles for the caller, so no update comes after it.
 * The listener runs on this thread only: what it throws (or rejects with) is dropped, and the
 * core never waits for it (while it blocks, the core merges updates instead).
 */
function startWatched<R>(
  signal: AbortSignal | undefined,
  run: (cancel: CancelHandle | undefined) => Promise<R>,
  onProgress: (update: Progress) => void,
): Promise<R> {
  const handle = CancelHandle.watching();
  const abort = (): void => handle.cancel();
  signal?.addEventListener("abort", abort, { once: true });
  const deliver = (): void => {
    const update = handle.takeProgress();
    if (!update) return;
    try {
      const r = onProgress(progressOf(update)) as unknown;
      if (r !== null && typeof r === "object" && typeof (r as PromiseLike<unknown>).then === "function") {
        (r as Promise<unknown>).then(undefined, () => undefined);
      }
    } catch {
      // The listener's failure is not the call's.
    }
  };
  const timer = timersSetInterval(deliver, PROGRESS_POLL_MS);
  timer.unref();
  const ended = (): void => {
    timersClearInterval(timer);
    handle.endProgress();
    signal?.removeEventListener("abort", abort);
  };
  const pending = start(run, handle);
  pending.then(ended, ended);
  return pending;
}

function startWith<R>(
  signal: AbortSignal | undefined,
  run: (cancel: CancelHandle | undefined) => Promise<R>,
  onProgress?: (update: Progress) => void,
): Promise<R> {
  if (typeof onProgress === "function") return startWatched(signal, run, onProgress);
  if (!signal) return start(run, undefined);
  const call = handleFor(signal);
  const pending = start(run, call.handle);
  const ended = (): void => void (call.running = false);
  pending.then(ended, ended);
  return pending;
}

/**
 * Runs a native call whose result the core passes through (`{ ok } | { error }`), with a
 * cancellation handle wired to `signal`: resolves to `ok`, rejects with the ToolError or
 * AbortError of `error`. A signal that is already aborted rejects before the call starts.
 */
export function callCore<T>(
  signal: AbortSignal | undefined,
  run: (cancel: CancelHandle | undefined) => Promise<Outcome<T>>,
  onProgress?: (update: Progress) => void,
): Promise<T> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (typeof onProgress === "function" || !signal) {
    return startWith(signal, run, onProgress).then((result) => {
      if ("error" in result) throw fromNative(result.error, signal);
      return result.ok;
    });
  }
  // The common call (a signal, no progress listener): one promise reaction on the native
  // promise for everything (the call's end, the outcome, a conversion error), not three.
  const call = handleFor(signal);
  let pending: Promise<Outcome<T>>;
  try {
    pending = run(call.handle);
  } catch (err) {
    call.running = false;
    return Promise.reject(fromConversion(err));
  }
  return pending.then(
    (result) => {
      call.running = false;
      if ("error" in result) throw fromNative(result.error, signal);
      return result.ok;
    },
    (err: unknown) => {
      call.running = false;
      throw fromConversion(err);
    },
  );
}
