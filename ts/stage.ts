// Staged runs (contract §20): run_command, run_tests and node_process with `stage: true` run
// for real, but their writes to the workspace land in a private overlay (the core's
// crates/workcell-core/src/stage/); the result carries the change, and `applyStaged` /
// `apply_staged` apply it all or nothing, `discardStaged` / `discard_staged` drop it. Every
// decision is the core's; this module holds the tool set's group of staged changes, the host's
// options, and the two tools.
import { Gate, attachHooks, gateReadTool, type ApprovalOptions, type ReviewHooks, type WriteSpec } from "./approval.js";
import { ArgumentsReason, ToolError, invalidArguments } from "./errors.js";
import { binding, callCore, fromNative, type NativeWorkspace } from "./native.js";
import { option } from "./options.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { ApplyStagedInput, ApplyStagedOutput, DiscardStagedInput, DiscardStagedOutput, RunCommandOutput } from "./generated/contract.js";
import type { DescriptionStyle } from "./common-options.js";
import type { ToolContext, WorkcellTool } from "./tool.js";
export type { ApplyStagedInput, ApplyStagedOutput, DiscardStagedInput, DiscardStagedOutput } from "./generated/contract.js";

/** A staged run's change: `staged` of run_command's, run_tests' and node_process's result. */
export type StagedChange = NonNullable<RunCommandOutput["staged"]>;

/** Whether calls may run staged: `"never"`, `"allowed"` (with `stage: true`, the default) or `"always"`. */
export type StageMode = "never" | "allowed" | "always";

/** The staging options of node_process, run_command and run_tests (and of `processes`). */
export interface StageToolOptions {
  /** Whether calls may run staged (default `"allowed"`: a call asks with `stage: true`). */
  stage?: StageMode;
  /** Bytes one staged run may write to the workspace, all files together (default 1 GiB). */
  maxStagedBytes?: number;
  /** How long a staged change waits to be applied before it is discarded, in ms (default 30 minutes). */
  stagedTtlMs?: number;
}

export const STAGE_DEFAULTS = { maxStagedBytes: 2 ** 30, stagedTtlMs: 30 * 60 * 1000 } as const;

/** The spec entries of {@link StageToolOptions} (see ts/options.ts). */
export const STAGE_OPTIONS = {
  stage: option.enum(["never", "allowed", "always"], "whether calls may run staged (their writes kept apart until applied)"),
  maxStagedBytes: option.integer(4096, Number.MAX_SAFE_INTEGER, "bytes one staged run may write to the workspace"),
  stagedTtlMs: option.integer(1, 2 ** 31 - 1, "how long a staged change waits to be applied, in milliseconds"),
} as const;

/** The tool set's group of staged changes, shared through the options (createCodingTools). */
export const STAGE_SET: unique symbol = Symbol("workcell.stageSet");

/**
 * The staged changes of one tool set: kept in the core until applied, discarded, expired or
 * closed. `close` is one function for every tool of the set (closeTools calls it once).
 */
export class StageSet {
  readonly group: number;
  readonly #ws: NativeWorkspace;
  readonly #protect: string[];
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #closed = false;

  constructor(ws: NativeWorkspace, protect: readonly string[] | undefined) {
    this.group = binding.stageGroupNew();
    this.#ws = ws;
    this.#protect = [...(protect ?? ["**/.git/**"])];
  }

  /** After a staged run: the change is discarded when its time is up (nothing is left of it). */
  expireAfter(id: string, ttlMs: number): void {
    const t = setTimeout(() => {
      this.#timers.delete(t);
      binding.stageDiscard(this.group, id);
    }, ttlMs);
    t.unref?.();
    this.#timers.add(t);
  }

  /** The change as the run showed it. */
  preview(id: string): StagedChange {
    const r = binding.stagePreview(this.group, id);
    if ("error" in r) throw fromNative(r.error);
    return r.ok;
  }

  apply(id: string, expectedHash: string, signal?: AbortSignal): Promise<ApplyStagedOutput> {
    return callCore(signal, (cancel) => this.#ws.applyStaged(this.group, id, expectedHash, this.#protect, cancel));
  }

  discard(id: string): DiscardStagedOutput {
    const r = binding.stageDiscard(this.group, id);
    if ("error" in r) throw fromNative(r.error);
    return r.ok;
  }

  readonly close = async (): Promise<void> => {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of this.#timers) clearTimeout(t);
    this.#timers.clear();
    binding.stageGroupClose(this.group);
  };
}

/** The stage options the core takes (`CommandOptions.stage` and the others'). */
export interface NativeStageOptions {
  mode: StageMode;
  maxStagedBytes: number;
  stagedTtlMs: number;
  group: number;
  asked: boolean;
}

/** A process tool's staging: the host's options and the set its changes go to. */
export class Staging {
  readonly mode: StageMode;
  readonly maxStagedBytes: number;
  readonly ttlMs: number;
  readonly set: StageSet | undefined;

  /** `protect`: the globs the apply refuses (the write guard's; for a tool made alone, its own). */
  constructor(ws: NativeWorkspace, options: StageToolOptions & { [STAGE_SET]?: StageSet; protect?: readonly string[] }) {
    this.mode = options.stage ?? "allowed";
    this.maxStagedBytes = options.maxStagedBytes ?? STAGE_DEFAULTS.maxStagedBytes;
    this.ttlMs = options.stagedTtlMs ?? STAGE_DEFAULTS.stagedTtlMs;
    this.set = this.mode === "never" ? undefined : (options[STAGE_SET] ?? new StageSet(ws, options.protect));
  }

  /** A call's `stage: true` where the host set "never": refused before any effect (the core checks it again). */
  check(asked: boolean | undefined): void {
    if (asked === true && this.mode === "never") {
      throw invalidArguments(ArgumentsReason.STAGE_NOT_ALLOWED, 'this tool does not stage runs: the host set stage to "never"', { at: "arguments.stage" });
    }
  }

  /** The core's options for a call (`asked`: the call's `stage: true`). */
  native(asked: boolean): NativeStageOptions {
    return { mode: this.mode, maxStagedBytes: this.maxStagedBytes, stagedTtlMs: this.ttlMs, group: this.set?.group ?? 0, asked };
  }

  /** Marks `tool` as one of the set's (applyStaged finds the set through it) and closes the set with it. */
  attach<T extends object>(tool: T): T {
    if (this.set) {
      Object.defineProperty(tool, STAGE_SET, { value: this.set, enumerable: false });
      if (!("close" in tool)) Object.defineProperty(tool, "close", { value: this.set.close, enumerable: false });
    }
    return tool;
  }

  /** How the gate reviews a call of this tool (`approvalFor.process: "review"`); none with "never". */
  review<I extends { stage?: boolean }, O extends { staged?: StagedChange; note?: string | null }>(): ReviewHooks<I, O> | undefined {
    const set = this.set;
    if (!set) return undefined;
    return {
      staged: (input) => ({ ...input, stage: true }),
      take: (output) => {
        const s = output.staged;
        delete output.staged;
        return s;
      },
      apply: (id, hash, signal) => set.apply(id, hash, signal),
      discard: (id) => {
        try {
          set.discard(id);
        } catch {
          // expired already: nothing is left either way
        }
      },
      note: (output, note) => {
        output.note = output.note == null ? note : `${output.note} ${note}`;
      },
    };
  }

  /** After a run: a staged change expires on time. */
  track(staged: StagedChange | undefined): void {
    if (staged && this.set) this.set.expireAfter(staged.id, this.ttlMs);
  }
}

/** The `staged` description line of a process tool (compact and full). */
export function describeStage(mode: StageMode, full: boolean): string {
  if (mode === "never") return "";
  if (mode === "always") {
    return full
      ? " Runs are staged: the workspace is unchanged afterwards and the result's staged { id, summary, diff, files, hash } is the change, applied with apply_staged { id, expectedHash: hash } or dropped with discard_staged."
      : " Runs are staged: apply_staged applies the result's staged change.";
  }
  return full
    ? " With stage: true the run is staged: the workspace is unchanged afterwards and the result's staged { id, summary, diff, files, hash } is the change, applied with apply_staged { id, expectedHash: hash } or dropped with discard_staged."
    : " stage: true keeps its writes apart (apply_staged).";
}

function stageSetOf(tools: Iterable<object>): StageSet {
  for (const t of tools) {
    const s = (t as { [STAGE_SET]?: unknown })[STAGE_SET];
    if (s instanceof StageSet) return s;
  }
  throw new TypeError("workcell: applyStaged/discardStaged: these tools make no staged runs (no process tool with stage allowed)");
}

/**
 * Applies a staged change of `tools` (the tool set that made the run) to the workspace, all or
 * nothing, only while every target still has the content it had when the run started
 * (`TARGET_CHANGED` otherwise) and only with the hash shown (`expectedHash`). The write guard's
 * protected paths are never applied (`PATH_PROTECTED`). An unknown, applied, discarded or expired
 * id is `STAGED_NOT_FOUND`. No approval is asked: the host calls this for the person.
 */
export async function applyStaged(tools: Iterable<object>, id: string, options: { expectedHash: string }, context: { signal?: AbortSignal } = {}): Promise<ApplyStagedOutput> {
  if (typeof options?.expectedHash !== "string") throw new TypeError("workcell: applyStaged: options.expectedHash must be the staged change's hash");
  return stageSetOf(tools).apply(id, options.expectedHash, context.signal);
}

/** Discards a staged change of `tools`: nothing of it is left. */
export async function discardStaged(tools: Iterable<object>, id: string): Promise<DiscardStagedOutput> {
  return stageSetOf(tools).discard(id);
}

/** The `apply_staged` tool. */
export type ApplyStagedTool = WorkcellTool<"apply_staged", ApplyStagedInput, ApplyStagedOutput, "write">;
/** The `discard_staged` tool. */
export type DiscardStagedTool = WorkcellTool<"discard_staged", DiscardStagedInput, DiscardStagedOutput, "read">;
/** One of the staged-run tools of `createCodingTools`. */
export type StagedTool = ApplyStagedTool | DiscardStagedTool;

const applyParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.apply_staged.input, {
  id: "The staged change's id (staged.id of the run's result).",
  expectedHash: "The staged change's hash (staged.hash), after reviewing its diff.",
});
const discardParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.discard_staged.input, {
  id: "The staged change's id (staged.id of the run's result).",
});

/** The two tools of a tool set's staged changes (in createCodingTools unless stage is "never"). */
export function createStagedTools(set: StageSet, options: ApprovalOptions & { descriptions?: DescriptionStyle }, root: string): StagedTool[] {
  const gate = new Gate("createCodingTools", options, root);
  const full = options.descriptions === "full";
  const spec: WriteSpec<ApplyStagedInput, ApplyStagedOutput> = {
    effect: "write",
    paths(input) {
      try {
        return set.preview(input.id).files.map((f) => f.path);
      } catch {
        return ["."];
      }
    },
    async preview(input) {
      // The whole change, as the run showed it; each listed path maps to the change set's hash.
      const p = set.preview(input.id);
      const files: Record<string, string> = {};
      for (const f of p.files) Object.defineProperty(files, f.path, { value: p.hash, enumerable: true, writable: true, configurable: true });
      return { summary: `apply_staged ${input.id}: ${p.summary}`, diff: p.diff, files };
    },
    async run(input, context, files) {
      if (files !== undefined && Object.values(files).some((h) => h !== input.expectedHash)) {
        throw new ToolError("TARGET_CHANGED", "the change approved is not the one expectedHash names; nothing was applied", {
          hint: "pass the hash of the staged change you reviewed (staged.hash)",
        });
      }
      return set.apply(input.id, input.expectedHash, context?.signal);
    },
  };
  const apply: ApplyStagedTool = attachHooks(
    {
      name: "apply_staged",
      effect: "write",
      [STAGE_SET]: set,
      description: full
        ? "Apply a staged run's change to the workspace (every path its staged.files lists: content, mode, symlinks, deletions), all or nothing, only while every target still has the content it had when the run started (TARGET_CHANGED otherwise) and only with the hash shown (expectedHash). Protected paths (.git) are never applied. Returns { id, summary, files }."
        : "Apply a staged run's change (staged.id, expectedHash: staged.hash), all or nothing.",
      parameters: applyParameters,
      outputSchema: TOOL_SCHEMAS.apply_staged.output,
      validate(input: unknown): ApplyStagedInput {
        checkSchema(applyParameters, input);
        const { id, expectedHash } = input as ApplyStagedInput;
        return { id, expectedHash };
      },
      execute(input: ApplyStagedInput, context: ToolContext) {
        return gate.execute("apply_staged", spec, input, context);
      },
    } as ApplyStagedTool,
    gate.hooks("apply_staged", spec),
  );
  const checkDiscard = (input: unknown): DiscardStagedInput => {
    checkSchema(discardParameters, input);
    return { id: (input as DiscardStagedInput).id };
  };
  // Dropping a change changes nothing in the workspace: a reading tool (audited, never asked).
  const discard = gateReadTool<DiscardStagedInput, DiscardStagedOutput, DiscardStagedTool>(
    {
      name: "discard_staged",
      effect: "read",
      [STAGE_SET]: set,
      description: full
        ? "Drop a staged run's change (staged.id of a run_command, run_tests or node_process result): nothing of it is applied, and nothing of it is kept. An unknown, applied, discarded or expired id is STAGED_NOT_FOUND. Returns { id, discarded }."
        : "Drop a staged run's change (staged.id): nothing of it is applied or kept.",
      parameters: discardParameters,
      outputSchema: TOOL_SCHEMAS.discard_staged.output,
      validate: checkDiscard,
      // A host may call execute without validate: the input is checked here too, so a wrong
      // type is TOOL_ARGUMENTS_INVALID, never a conversion error of the binding.
      execute: async (input: DiscardStagedInput) => set.discard(checkDiscard(input).id),
    } as DiscardStagedTool,
    gate,
    () => [],
  );
  for (const t of [apply, discard]) Object.defineProperty(t, "close", { value: set.close, enumerable: false });
  return [apply, discard];
}

