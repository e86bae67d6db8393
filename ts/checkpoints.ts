// Checkpoints (contract §19): record the workspace, see everything that changed since, rewind
// it all or nothing. Every decision (the walk, the store, the diff, the rewind) is the Rust
// core's (crates/workcell-core/src/checkpoint/); this module checks the host's options and
// converts.
import { binding, callCore, openWorkspace } from "./native.js";
import { checkOptions, option, type OptionSpecOf } from "./options.js";
import type { Progress } from "./tool.js";
import type { ApprovalPreview, CheckpointAction, CheckpointCreated, CheckpointDiff, CheckpointRewound, CheckpointSummary } from "./generated/contract.js";

/** The options of `createCheckpoints` (contract §19). */
export interface CheckpointsOptions {
  /** The store's directory (absolute, outside the workspace, empty or a store already). Default: a 0700 directory under `$XDG_CACHE_HOME` or `~/.cache`, one per canonical root. */
  storeDir?: string;
  /** The store's bound in bytes; the oldest checkpoints are dropped past it. Default 1 GiB. */
  maxBytes?: number;
  /** Largest file kept; larger ones are listed in `notKept`. Default 64 MiB. */
  maxFileBytes?: number;
  /** Globs over workspace-relative paths not recorded (as `.gitignore` lines). */
  exclude?: string[];
  /** The write guard's globs: a rewind listing a protected path is refused whole. Default `["**\/.git/**"]`. */
  protect?: string[];
}

/** The last argument of every method. */
export interface CheckpointCallOptions {
  /** Cancels the call: it rejects with an AbortError and nothing is changed. */
  signal?: AbortSignal;
  /** Progress while the call runs on a large tree (contract §18): files recorded or compared, paths put back. */
  onProgress?: (update: Progress) => void;
}

// The shapes are the core's (crates/workcell-core/src/checkpoint, generated into
// native/contract.d.ts): `create`'s result, `list`'s items, `diff`'s and `rewind`'s.
export type { CheckpointAction, CheckpointCreated, CheckpointDiff, CheckpointRewound, CheckpointSummary };

/** The checkpoints of one workspace root, from `createCheckpoints`. */
export interface Checkpoints {
  /** Records the workspace as it is now. */
  create(input?: { label?: string }, options?: CheckpointCallOptions): Promise<CheckpointCreated>;
  /** The checkpoints in the store, oldest first. */
  list(options?: CheckpointCallOptions): Promise<CheckpointSummary[]>;
  /**
   * What changed since checkpoint `id`, whoever changed it. With `reverse: true`, the diff a
   * rewind would apply (from the workspace now to the checkpoint), with the same `hash`.
   */
  diff(id: string, options?: CheckpointCallOptions & { reverse?: boolean }): Promise<CheckpointDiff>;
  /** Puts every path the diff lists back, all or nothing, while its hash is `expectedHash`. */
  rewind(id: string, input: { expectedHash: string }, options?: CheckpointCallOptions): Promise<CheckpointRewound>;
  /** Removes a checkpoint. */
  drop(id: string, options?: CheckpointCallOptions): Promise<void>;
  /** Releases the store; later calls reject. */
  close(): void;
  /** The store's directory. */
  readonly storeDir: string;
}

const MAX_BYTES = Number.MAX_SAFE_INTEGER;

/** The options of createCheckpoints (see ts/options.ts). */
export const CHECKPOINTS_OPTIONS = {
  storeDir: option.path("the store's directory (outside the workspace; default: the user's cache directory)"),
  maxBytes: option.integer(1, MAX_BYTES, "the store's bound in bytes (default 1 GiB)"),
  maxFileBytes: option.integer(1, MAX_BYTES, "largest file kept (default 64 MiB)"),
  exclude: option.strings("globs of paths not recorded"),
  protect: option.strings("the write guard's globs: a rewind listing a protected path is refused"),
} as const satisfies OptionSpecOf<CheckpointsOptions>;

function string(value: unknown, what: string): string {
  if (typeof value !== "string") throw new TypeError(`workcell: checkpoints: ${what} must be a string`);
  return value;
}

/** Opens the checkpoints of `root` (creating the store when missing). */
export function createCheckpoints(root: string, options?: CheckpointsOptions): Checkpoints {
  checkOptions("createCheckpoints", CHECKPOINTS_OPTIONS, options);
  const o = options ?? {};
  const ws = openWorkspace(root);
  let native: InstanceType<typeof binding.NativeCheckpoints>;
  try {
    native = new binding.NativeCheckpoints(ws, o.storeDir, o.maxBytes, o.maxFileBytes, o.exclude, o.protect);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    let parsed: { option?: string; message?: string } = {};
    try {
      parsed = JSON.parse(message) as typeof parsed;
    } catch {
      // not a configuration error
    }
    if (typeof parsed.option === "string") {
      throw new TypeError(`workcell: createCheckpoints: ${parsed.option}: ${parsed.message ?? "invalid"}`);
    }
    throw err;
  }
  let closed = false;
  const open = (): typeof native => {
    if (closed) throw new Error("workcell: these checkpoints were closed; create them again with createCheckpoints");
    return native;
  };
  const run = <T>(opts: CheckpointCallOptions, f: (n: typeof native) => (cancel: never) => Promise<unknown>): Promise<T> => {
    let n: typeof native;
    try {
      n = open();
    } catch (err) {
      return Promise.reject(err);
    }
    return callCore(opts.signal, f(n) as never, opts.onProgress) as Promise<T>;
  };
  const checkpoints: Checkpoints = {
    storeDir: native.storeDir,
    create(input = {}, opts = {}) {
      const label = input.label === undefined ? undefined : string(input.label, "label");
      return run(opts, (n) => (cancel) => n.create(label, cancel));
    },
    list(opts = {}) {
      return run(opts, (n) => (cancel) => n.list(cancel));
    },
    diff(id, opts = {}) {
      const checked = string(id, "id");
      return run(opts, (n) => (cancel) => n.diff(checked, opts.reverse === true, cancel));
    },
    rewind(id, input, opts = {}) {
      const checked = string(id, "id");
      const expected = string(input?.expectedHash, "expectedHash");
      return run(opts, (n) => (cancel) => n.rewind(checked, expected, cancel));
    },
    async drop(id, opts = {}) {
      const checked = string(id, "id");
      await run(opts, (n) => (cancel) => n.dropCheckpoint(checked, cancel));
    },
    close() {
      closed = true;
    },
  };
  approvals.set(checkpoints, (id, opts) => run(opts, (n) => (cancel) => n.rewindApproval(string(id, "id"), cancel)));
  return checkpoints;
}

const approvals = new WeakMap<Checkpoints, (id: string, opts: CheckpointCallOptions) => Promise<ApprovalPreview>>();

/**
 * What a person approves before `rewind(id)`: the whole change it makes, every changed line of
 * every file (never cut; binary and large files named by their hashes and sizes), each file's
 * part on its own, and every path with the change set's hash (the core's, as the writing
 * tools' previews). For the rewind_checkpoint tool; not part of the public `Checkpoints`.
 */
export function rewindApproval(checkpoints: Checkpoints, id: string, opts: CheckpointCallOptions = {}): Promise<ApprovalPreview> {
  const f = approvals.get(checkpoints);
  if (!f) return Promise.reject(new TypeError("workcell: rewindApproval needs checkpoints from createCheckpoints"));
  return f(id, opts);
}
