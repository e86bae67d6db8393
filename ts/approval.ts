// A person in the loop: the approval gate every tool runs its calls through, per-call grants
// of the process tools, and the audit events. The decisions the core can make are made there
// (crates/workcell-core/src/approval/: previews, rule matching, denial hints; the hash checks
// under the targets' locks; grant paths resolved and enforced by the sandbox); this file asks
// the host's `approve`, keeps remembered grants and reports audit events.
import { GRANTS_SCHEMA as GENERATED_GRANTS_SCHEMA } from "./generated/contract.js";
import { ArgumentsReason, ErrorCode, ToolError, abortError, invalidArguments, isAbortError } from "./errors.js";
import { binding, fromThrown } from "./native.js";
import type { NativeSandboxOptions, SandboxReport } from "./sandbox.js";
import type { JsonSchema } from "./schema.js";
import type { Tool, ToolContext, ToolEffect } from "./tool.js";

/** Extra codes of the approval layer. */
export const APPROVAL_DENIED = "APPROVAL_DENIED";
export const GRANT_NOT_ALLOWED = "GRANT_NOT_ALLOWED";
/** An approval view could not show the whole effect of a call, so it did not ask: nothing ran. */
export const APPROVAL_VIEW_INCOMPLETE = "APPROVAL_VIEW_INCOMPLETE";

/** What a call may ask for beyond the tool's sandbox options, for that one call. */
export interface Grants {
  /** Absolute paths the call's processes may also read and write. */
  writePaths?: string[];
  /** Absolute paths the call's processes may also read. */
  readPaths?: string[];
  /** Let the call's processes use the network. */
  network?: boolean;
  /** Run the call without the sandbox: the last resort. */
  sandbox?: "off";
}

/**
 * The grants a process tool's call runs with: approved paths pinned in the core (opened once
 * when the person said yes, no symlink followed; see `GrantPin`), named by handle, never by
 * path again.
 */
export interface RunGrants {
  handles?: number[];
  network?: boolean;
  sandbox?: "off";
}

type GrantPin = InstanceType<typeof binding.GrantPin>;

/** Opens an approved grant's paths now (a ToolError `TARGET_CHANGED` when one is not what was approved any more). */
function pinGrants(writePaths: string[], readPaths: string[]): GrantPin | undefined {
  if (writePaths.length + readPaths.length === 0) return undefined;
  try {
    return binding.sandboxPinGrants(writePaths, readPaths);
  } catch (err) {
    throw fromThrown(err);
  }
}

/** One file's part of a writing call's change (see `ApprovalRequest.diffs`). */
export interface FileDiff {
  /** The path the call names (a move's source: its destination is in the `+++` line). */
  path: string;
  /** The file's whole unified diff: its `---`/`+++` header lines, then every hunk. */
  diff: string;
  added: number;
  removed: number;
}

/**
 * What `approve` is asked. It holds every byte of the call's effect: a "yes" authorizes
 * exactly this. A view that can show only part of it must say what it leaves out, and one
 * that cannot show an effect at all refuses (`approvalViewIncomplete`) instead of asking.
 */
export interface ApprovalRequest {
  tool: string;
  effect: ToolEffect;
  /** The validated input of the call. */
  input: unknown;
  /** One line for a person, such as `edit_file src/a.ts: +3 -1`. Never the whole effect. */
  summary: string;
  /**
   * Writing tools: the unified diff of the whole change, every changed line of every file,
   * never cut (its size is bounded by the call's own limits).
   */
  diff?: string;
  /** Writing tools with content changes: each file's part of `diff`, in call order. */
  diffs?: FileDiff[];
  /**
   * Writing tools: the approval hash (`hashFile`'s string; `"absent"` for a free name) of every
   * path the change was computed on. The change is applied only while each still has it.
   */
  files?: Record<string, string>;
  /** Process tools: the program and its arguments (node_process: `["node", ...arguments]`). */
  argv?: string[];
  /** Process tools: the working directory, relative to the workspace root. */
  cwd?: string;
  /** node_process: the whole script. */
  source?: string;
  /** write_process: the whole text sent to the process's input. */
  stdin?: string;
  /** Process tools: the grants the call asks for (paths resolved). */
  grants?: Grants;
}

/** What `approve` answers. `remember: "session"` keeps approved grants for the tool set. */
export type ApprovalAnswer = boolean | { allow: boolean; reason?: string; remember?: "session" };

/**
 * Asks a person about a call: resolves `true`, `false` or `{ allow, reason?, remember? }`; a throw
 * is a no. The signal aborts while waiting.
 */
export type Approve = (request: ApprovalRequest, context: { signal: AbortSignal }) => ApprovalAnswer | PromiseLike<ApprovalAnswer>;

/** Which calls ask `approve`. */
export interface ApprovalFor {
  /** Writing tools (default "allow"). */
  write?: "ask" | "allow";
  /**
   * Process tools (default "allow"). `"review"`: node_process, run_command and run_tests are not
   * asked about before they start; they run staged, and `approve` gets the change they made (the
   * request's `diff` and `files`) after they end: a yes applies it, a no discards it. The other
   * process tools (the sessions) ask before they start, as with `"ask"`.
   */
  process?: "ask" | "allow" | "review";
  /** Calls with `grants` (default "deny": refused with GRANT_NOT_ALLOWED). */
  grant?: "ask" | "deny";
}

/** A host rule, checked before asking; the first that matches decides. */
export interface ApprovalRule {
  /** A tool name. */
  tool?: string;
  /** The whole argv, word by word: `"*"` any one word, a final `"**"` the rest. */
  argv?: string[];
  /** A glob of the write guard's kind over the paths the call names. */
  path?: string;
  decision: "allow" | "ask" | "deny";
}

/** One audit event: after every call of every tool. Never the content of a file or script. */
export interface AuditEvent {
  /** ISO 8601 time the call started. */
  time: string;
  tool: string;
  effect: ToolEffect;
  summary: string;
  /**
   * `"allow"`: run without asking (by `approvalFor` or a rule); `"approved"` / `"denied"`: the
   * person's answer (`approve` throwing counts as denied); `"refused"`: a rule's `deny` or a
   * grant the host does not allow. Absent when the call failed before the gate.
   */
  decision?: "allow" | "approved" | "denied" | "refused";
  /** The approval hashes the call was held to (writing tools that asked). */
  hashes?: Record<string, string>;
  /** The error code of a failed call (absent on success; `"ABORTED"` for a cancellation). */
  code?: string;
  durationMs: number;
}

/** The approval options every factory (and `createCodingTools`) takes. */
export interface ApprovalOptions {
  /**
   * Asks a person about the calls `approvalFor` and `rules` say ask about (see {@link Approve});
   * required where anything asks.
   */
  approve?: Approve;
  /**
   * Which calls ask, by effect: `{ write?: "ask" | "allow", process?: "ask" | "allow", grant?:
   * "ask" | "deny" }` (default allow, allow, deny).
   */
  approvalFor?: ApprovalFor;
  /**
   * Rules matched before `approvalFor`, first match wins: `{ tool?, argv?, path?, decision: "allow"
   * | "ask" | "deny" }`.
   */
  rules?: readonly ApprovalRule[];
  /**
   * Called after every call of every tool with what happened (tool, effect, summary, decision,
   * code, duration), never any content; a throw changes nothing.
   */
  onAudit?: (event: AuditEvent) => void;
}

/** The option keys of `ApprovalOptions` (for the factories' option checks). */
export const APPROVAL_OPTION_KEYS = ["approve", "approvalFor", "rules", "onAudit"] as const;

/** Where `createCodingTools` passes the state its tools share (remembered grants). */
export const APPROVAL_SESSION: unique symbol = Symbol("workcell.approvalSession");

/** Grants remembered for a tool set (`remember: "session"`): their paths pinned when approved. */
export class ApprovalSession {
  readonly writePaths = new Set<string>();
  readonly readPaths = new Set<string>();
  /** The open directories of the remembered paths (held in the core while this holds them). */
  readonly pins: GrantPin[] = [];
  network = false;
  sandboxOff = false;

  /** The paths of `g` no remembered pin holds yet. */
  uncovered(g: Grants | undefined): { writePaths: string[]; readPaths: string[] } {
    return {
      writePaths: (g?.writePaths ?? []).filter((p) => !this.writePaths.has(p)),
      readPaths: (g?.readPaths ?? []).filter((p) => !this.readPaths.has(p) && !this.writePaths.has(p)),
    };
  }

  covers(g: Grants): boolean {
    return (
      (g.writePaths ?? []).every((p) => this.writePaths.has(p)) &&
      (g.readPaths ?? []).every((p) => this.readPaths.has(p) || this.writePaths.has(p)) &&
      (!g.network || this.network) &&
      (g.sandbox !== "off" || this.sandboxOff)
    );
  }

  remember(g: Grants, pin: GrantPin | undefined): void {
    if (pin) this.pins.push(pin);
    for (const p of g.writePaths ?? []) this.writePaths.add(p);
    for (const p of g.readPaths ?? []) this.readPaths.add(p);
    if (g.network) this.network = true;
    if (g.sandbox === "off") this.sandboxOff = true;
  }

  /** What a call runs with: the remembered grants, with `pin` (the call's own newly approved paths). */
  runGrants(own: Grants | undefined, pin: GrantPin | undefined): RunGrants | undefined {
    const handles = this.pins.map((p) => p.id);
    if (pin) handles.push(pin.id);
    const g: RunGrants = {};
    if (handles.length) g.handles = handles;
    if (this.network || own?.network) g.network = true;
    if (this.sandboxOff || own?.sandbox === "off") g.sandbox = "off";
    return Object.keys(g).length === 0 ? undefined : g;
  }
}

/** The change a writing tool's preview computed (see the core's `approval::preview`). */
export interface Preview {
  summary: string;
  diff?: string;
  diffs?: FileDiff[];
  files: Record<string, string>;
}

/** How a writing tool runs under the gate. */
export interface WriteSpec<I, O> {
  effect: "write";
  /** The paths the call names (for rules and the audit summary). */
  paths(input: I): string[];
  /** The change, computed without effects. */
  preview(input: I, signal: AbortSignal | undefined): Promise<Preview>;
  /** Runs the call; with `files`, only while every path still has its approval hash. */
  run(input: I, context: ToolContext, files: Record<string, string> | undefined): Promise<O>;
}

/** How a process tool runs under the gate. */
export interface ProcessSpec<I, O> {
  effect: "process";
  /** `summary` names argv and ids, never content (it is the audit's); `source` and `stdin` are shown whole. */
  describe(input: I): { argv: string[]; cwd?: string; source?: string; stdin?: string; summary: string };
  /**
   * A call that only reads or ends what an approved call started (read_process,
   * stop_process, list_processes): `approvalFor` never makes it ask; rules still decide it.
   */
  follows?: true;
  /**
   * The effect the tool itself declares when it is not "process": read_process and
   * list_processes only read what a process printed (audited and annotated as "read").
   */
  declared?: ToolEffect;
  grants(input: I): Grants | undefined;
  /** Runs the call with these grants (this call's and the remembered ones, merged and pinned). */
  run(input: I, context: ToolContext, grants: RunGrants | undefined): Promise<O>;
  /** A tool that can run staged (`approvalFor.process: "review"`; see ts/stage.ts). */
  stage?: ReviewHooks<I, O>;
}

/** How the gate runs a call staged and applies or discards its change (ts/stage.ts makes them). */
export interface ReviewHooks<I, O> {
  /** The input, staged. */
  staged(input: I): I;
  /** The change the staged run made, taken out of its result. */
  take(output: O): { id: string; summary: string; diff: string; files: { path: string }[]; hash: string } | undefined;
  apply(id: string, hash: string, signal: AbortSignal | undefined): Promise<unknown>;
  discard(id: string): void;
  /** Adds a note to the result. */
  note(output: O, note: string): void;
}

/** How a reading tool runs under the gate. */
export interface ReadSpec<I, O> {
  effect: "read";
  paths(input: I): string[];
  run(input: I, context: ToolContext): Promise<O>;
}

export type GateSpec<I, O> = WriteSpec<I, O> | ProcessSpec<I, O> | ReadSpec<I, O>;

/** What the AI SDK adapter needs from a gated tool (see `workcell/ai`). */
export interface GateHooks {
  /** The tool only follows what an approved call started (read_process...): never asked by effect. */
  readonly follows: boolean;
  /** Whether a call would ask (rules first, then `approvalFor`), or is denied outright. */
  decide(input: unknown): "allow" | "ask" | "deny";
  /** The request a person would be shown (writing tools: the preview). */
  request(input: unknown, signal: AbortSignal | undefined): Promise<ApprovalRequest>;
  /**
   * Runs a call the adapter's own flow approved, bound to what the request showed (its
   * `files`; its `grants`), and reports its audit event (`decision: "approved"`).
   */
  runApproved(input: unknown, context: ToolContext, request: ApprovalRequest): Promise<unknown>;
  /** Reports the audit event of a call the adapter refuses before running it, and rejects with `error`. */
  refuse(input: unknown, error: unknown): Promise<never>;
}

export const GATE_HOOKS: unique symbol = Symbol("workcell.gate");

const MAX_SUMMARY = 300;

function clip(s: string): string {
  return s.length <= MAX_SUMMARY ? s : `${s.slice(0, MAX_SUMMARY - 3)}...`;
}

function denied(message: string, details?: unknown): ToolError {
  return new ToolError(ErrorCode.APPROVAL_DENIED, message, {
    hint: "do not retry the same call: change the approach, or ask the user how they want to proceed",
    details,
  });
}

function isFunction(v: unknown): v is (...args: never[]) => unknown {
  return typeof v === "function";
}

const MAX_GRANT_PATHS = GENERATED_GRANTS_SCHEMA.properties.writePaths.maxItems;

/** The JSON Schema of `grants` (a process tool's parameters have it where the host allows asking). */
export const GRANTS_SCHEMA: JsonSchema = {
  ...GENERATED_GRANTS_SCHEMA,
  description:
    "Only if the sandbox refused something the task needs: ask the user for more for this call. Absolute paths; sandbox \"off\" is the last resort.",
};

/** `parameters` with the `grants` property when the host lets calls ask for grants, else without it. */
export function withGrantsParameter(parameters: JsonSchema, gate: Gate): JsonSchema {
  const { grants: _, ...rest } = (parameters.properties ?? {}) as Record<string, JsonSchema>;
  return { ...parameters, properties: gate.grantsAllowed ? { ...rest, grants: GRANTS_SCHEMA } : rest };
}

function grantPathList(value: unknown, name: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.length > MAX_GRANT_PATHS || !value.every((p) => typeof p === "string")) {
    throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, `grants.${name} must be an array of at most ${MAX_GRANT_PATHS} absolute paths`, {
      at: `arguments.grants.${name}`,
    });
  }
  return value.map((p: string) => {
    try {
      return binding.sandboxGrantPath(p);
    } catch (err) {
      throw invalidArguments(
        ArgumentsReason.INVALID_ARGUMENTS_SHAPE,
        `grants.${name}: ${(err as Error).message}; give absolute paths of existing files or directories, such as /home/user/.cache/tool`,
        { at: `arguments.grants.${name}`, path: p },
      );
    }
  });
}

/**
 * The approval gate of one tool: created by its factory from the approval options (a
 * misconfiguration is a TypeError here), it runs every call: validation has happened; then the
 * rules and `approvalFor` decide; "ask" builds the request (writing tools: the core's preview)
 * and waits for `approve` with no lock held; the approved call runs bound to the request (the
 * preview's hashes, checked in the core under the targets' locks; the grants, enforced by the
 * sandbox); and `onAudit` gets one event.
 */
export class Gate {
  readonly #factory: string;
  readonly #approve: Approve | undefined;
  readonly #write: "ask" | "allow";
  readonly #process: "ask" | "allow" | "review";
  readonly #grant: "ask" | "deny";
  readonly #rules: InstanceType<typeof binding.ApprovalRules> | undefined;
  readonly #onAudit: ((event: AuditEvent) => void) | undefined;
  readonly #session: ApprovalSession;
  readonly #root: string;

  constructor(factory: string, options: ApprovalOptions & { [APPROVAL_SESSION]?: ApprovalSession }, root: string) {
    this.#factory = factory;
    this.#root = root;
    const T = (m: string) => new TypeError(`workcell: ${factory} option ${m}`);
    if (options.approve !== undefined && !isFunction(options.approve)) throw T("approve must be a function");
    if (options.onAudit !== undefined && !isFunction(options.onAudit)) throw T("onAudit must be a function");
    this.#approve = options.approve;
    this.#onAudit = options.onAudit;
    const af = options.approvalFor ?? {};
    if (typeof af !== "object" || af === null || Array.isArray(af)) throw T("approvalFor must be an object");
    for (const key of Object.keys(af)) {
      if (!["write", "process", "grant"].includes(key)) throw T(`approvalFor.${key}: unknown option; known: write, process, grant`);
    }
    const pick = <V extends string>(key: string, value: unknown, allowed: readonly V[], dflt: V): V => {
      if (value === undefined) return dflt;
      if (typeof value !== "string" || !allowed.includes(value as V)) {
        throw T(`approvalFor.${key} must be ${allowed.map((a) => JSON.stringify(a)).join(" or ")}`);
      }
      return value as V;
    };
    this.#write = pick("write", af.write, ["ask", "allow"] as const, "allow");
    this.#process = pick("process", af.process, ["ask", "allow", "review"] as const, "allow");
    this.#grant = pick("grant", af.grant, ["ask", "deny"] as const, "deny");
    for (const [key, v] of [["write", this.#write], ["process", this.#process], ["grant", this.#grant]] as const) {
      if ((v === "ask" || v === "review") && this.#approve === undefined) throw T(`approvalFor.${key} is "${v}", which needs approve (a function that asks the user)`);
    }
    if (options.rules !== undefined) {
      if (!Array.isArray(options.rules)) throw T("rules must be an array");
      const specs = options.rules.map((r: unknown, i: number) => {
        if (typeof r !== "object" || r === null) throw T(`rules[${i}] must be an object`);
        const rule = r as Record<string, unknown>;
        for (const k of Object.keys(rule)) {
          if (!["tool", "argv", "path", "decision"].includes(k)) throw T(`rules[${i}].${k}: unknown option; known: tool, argv, path, decision`);
        }
        if (rule.tool !== undefined && typeof rule.tool !== "string") throw T(`rules[${i}].tool must be a tool name`);
        if (rule.path !== undefined && typeof rule.path !== "string") throw T(`rules[${i}].path must be a glob`);
        if (rule.argv !== undefined && (!Array.isArray(rule.argv) || !rule.argv.every((w) => typeof w === "string"))) {
          throw T(`rules[${i}].argv must be an array of strings`);
        }
        if (rule.decision === "ask" && this.#approve === undefined) throw T(`rules[${i}].decision is "ask", which needs approve`);
        return { tool: rule.tool, argv: rule.argv, path: rule.path, decision: rule.decision } as {
          tool?: string;
          argv?: string[];
          path?: string;
          decision: string;
        };
      });
      try {
        this.#rules = new binding.ApprovalRules(specs);
      } catch (err) {
        throw T((err as Error).message);
      }
    }
    this.#session = options[APPROVAL_SESSION] ?? new ApprovalSession();
  }

  /** Whether calls may carry `grants` (the host set `approvalFor.grant: "ask"`). */
  get grantsAllowed(): boolean {
    return this.#grant === "ask";
  }

  /**
   * Takes `grants` out of a process tool's raw input before the schema check: refused with
   * GRANT_NOT_ALLOWED unless the host lets calls ask; otherwise checked and resolved (in the
   * core, like the options). Returns the rest of the input and the grants.
   */
  splitGrants(input: unknown): { rest: unknown; grants: Grants | undefined } {
    if (typeof input !== "object" || input === null || Array.isArray(input) || !Object.prototype.hasOwnProperty.call(input, "grants")) {
      return { rest: input, grants: undefined };
    }
    const { grants: raw, ...rest } = input as { grants?: unknown };
    if (this.#grant !== "ask") {
      throw invalidArguments(
        ArgumentsReason.GRANT_NOT_ALLOWED,
        "this host does not let calls ask for grants; work inside the workspace and the sandbox, or tell the user what the task needs",
        { at: "arguments.grants" },
      );
    }
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, "grants must be an object such as { writePaths: [\"/abs/dir\"] }", { at: "arguments.grants" });
    }
    const g = raw as Record<string, unknown>;
    for (const k of Object.keys(g)) {
      if (!["writePaths", "readPaths", "network", "sandbox"].includes(k)) {
        throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, `grants.${k} is not a grant; use writePaths, readPaths, network or sandbox`, {
          at: `arguments.grants.${k}`,
        });
      }
    }
    if (g.network !== undefined && typeof g.network !== "boolean") {
      throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, "grants.network must be true or false", { at: "arguments.grants.network" });
    }
    if (g.sandbox !== undefined && g.sandbox !== "off") {
      throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, 'grants.sandbox can only be "off"', { at: "arguments.grants.sandbox" });
    }
    const out: Grants = {};
    const w = grantPathList(g.writePaths, "writePaths");
    const r = grantPathList(g.readPaths, "readPaths");
    if (w?.length) out.writePaths = w;
    if (r?.length) out.readPaths = r;
    if (g.network === true) out.network = true;
    if (g.sandbox === "off") out.sandbox = "off";
    return { rest, grants: Object.keys(out).length === 0 ? undefined : out };
  }

  #decide<I>(tool: string, spec: GateSpec<I, unknown>, argv: string[] | undefined, paths: string[], grants: Grants | undefined): "allow" | "ask" | "deny" | "review" {
    const rule = this.#rules?.decide(tool, argv, paths) ?? undefined;
    const effect = spec.effect;
    const follows = spec.effect === "process" && spec.follows === true;
    // "review": the tools that can run staged are asked after the run; the others before it.
    const process = this.#process === "review" ? (spec.effect === "process" && spec.stage ? "review" : "ask") : this.#process;
    const base = rule
      ? (rule.decision as "allow" | "ask" | "deny")
      : effect === "write"
        ? this.#write
        : effect === "process" && !follows
          ? process
          : "allow";
    if (base === "deny") return "deny";
    if (grants && !this.#session.covers(grants)) {
      // A grant is never allowed by a rule or by approvalFor.process: the person says yes to it.
      return this.#grant === "ask" ? "ask" : "deny";
    }
    return base;
  }

  async #ask(request: ApprovalRequest, signal: AbortSignal | undefined): Promise<{ allow: boolean; reason?: string; remember?: "session" }> {
    if (signal?.aborted) throw abortError(signal);
    const approve = this.#approve!;
    const inner = new AbortController();
    let onAbort: (() => void) | undefined;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        inner.abort(signal?.reason);
        reject(abortError(signal));
      };
      signal?.addEventListener("abort", onAbort, { once: true });
    });
    aborted.catch(() => {});
    let answer: unknown;
    try {
      answer = await Promise.race([Promise.resolve().then(() => approve(request, { signal: inner.signal })), aborted]);
    } catch (err) {
      if (signal?.aborted || (isAbortError(err) && inner.signal.aborted)) throw abortError(signal);
      // A view that could not show the whole effect: its own code, never a plain "no".
      if (err instanceof ToolError && err.code === APPROVAL_VIEW_INCOMPLETE) throw err;
      throw denied(`the approval failed, so the call was not run: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
    if (signal?.aborted) throw abortError(signal);
    if (answer === true) return { allow: true };
    if (answer === false) return { allow: false };
    if (typeof answer === "object" && answer !== null && typeof (answer as { allow?: unknown }).allow === "boolean") {
      const a = answer as { allow: boolean; reason?: unknown; remember?: unknown };
      const out: { allow: boolean; reason?: string; remember?: "session" } = { allow: a.allow };
      if (typeof a.reason === "string" && a.reason.length > 0) out.reason = a.reason.slice(0, 2000);
      if (a.remember === "session") out.remember = "session";
      return out;
    }
    throw denied("the approval gave no answer (approve must return true, false or { allow })");
  }

  #audit(event: AuditEvent): void {
    if (!this.#onAudit) return;
    try {
      const r = this.#onAudit(event) as unknown;
      if (r && typeof (r as Promise<unknown>).then === "function") (r as Promise<unknown>).then(undefined, () => {});
    } catch {
      // a failing audit hook never changes the call's result
    }
  }

  /** The request of a call (writing tools compute their preview here). */
  async request<I>(tool: string, spec: GateSpec<I, unknown>, input: I, signal: AbortSignal | undefined): Promise<ApprovalRequest> {
    if (spec.effect === "write") {
      const p = await spec.preview(input, signal);
      const req: ApprovalRequest = { tool, effect: "write", input, summary: p.summary, files: p.files };
      if (p.diff !== undefined) req.diff = p.diff;
      if (p.diffs !== undefined) req.diffs = p.diffs;
      return req;
    }
    if (spec.effect === "process") {
      const d = spec.describe(input);
      const req: ApprovalRequest = { tool, effect: "process", input, summary: clip(d.summary), argv: d.argv };
      if (d.cwd !== undefined) req.cwd = d.cwd;
      if (d.source !== undefined) req.source = d.source;
      if (d.stdin !== undefined) req.stdin = d.stdin;
      const g = spec.grants(input);
      if (g) req.grants = g;
      return req;
    }
    return { tool, effect: "read", input, summary: clip(`${tool} ${spec.paths(input).join(", ")}`) };
  }

  /**
   * Runs a process call: the paths of its own grants that no remembered pin holds were approved
   * just now (or the call would not run) and are pinned here, once; the call runs with the
   * remembered pins and this one. With `remember`, the tool set keeps the pin.
   */
  async #runProcess<I, O>(spec: ProcessSpec<I, O>, input: I, context: ToolContext, own: Grants | undefined, remember: boolean): Promise<O> {
    const fresh = this.#session.uncovered(own);
    const pin = pinGrants(fresh.writePaths, fresh.readPaths);
    if (remember && own) this.#session.remember(own, pin);
    try {
      return await spec.run(input, context, this.#session.runGrants(own, pin));
    } finally {
      if (pin && !remember) pin.release();
    }
  }

  #run<I, O>(spec: GateSpec<I, O>, input: I, context: ToolContext, request: ApprovalRequest | undefined, remember = false): Promise<O> {
    if (spec.effect === "write") return spec.run(input, context, request?.files);
    if (spec.effect === "process") return this.#runProcess(spec, input, context, request ? request.grants : spec.grants(input), remember);
    return spec.run(input, context);
  }

  #summary<I>(tool: string, spec: GateSpec<I, unknown>, input: I): string {
    if (spec.effect === "process") return clip(spec.describe(input).summary);
    return clip(`${tool} ${spec.paths(input).join(", ")}`);
  }

  /**
   * Runs `body` as one call of `tool` and reports its audit event, whatever happens: the
   * summary (paths, argv, ids: never content), the decision, the hashes and the error code
   * that `body` recorded.
   */
  async #audited<I, O>(tool: string, spec: GateSpec<I, O>, input: I, body: (event: Partial<AuditEvent>) => Promise<O>): Promise<O> {
    const started = Date.now();
    const event: Partial<AuditEvent> = {};
    try {
      return await body(event);
    } catch (err) {
      event.code = isAbortError(err) ? "ABORTED" : err instanceof ToolError ? err.code : ErrorCode.IO_ERROR;
      if (event.decision === undefined && err instanceof ToolError && err.message === ArgumentsReason.GRANT_NOT_ALLOWED) event.decision = "refused";
      throw err;
    } finally {
      let summary = event.summary;
      if (summary === undefined) {
        try {
          summary = this.#summary(tool, spec, input);
        } catch {
          summary = tool;
        }
      }
      const effect = spec.effect === "process" && spec.declared ? spec.declared : spec.effect;
      const out: AuditEvent = { time: new Date(started).toISOString(), tool, effect, summary, durationMs: Date.now() - started };
      if (event.decision !== undefined) out.decision = event.decision;
      if (event.hashes !== undefined) out.hashes = { ...event.hashes };
      if (event.code !== undefined) out.code = event.code;
      this.#audit(out);
    }
  }

  /** Runs one validated call through the gate. */
  execute<I, O>(tool: string, spec: GateSpec<I, O>, input: I, context: ToolContext): Promise<O> {
    const signal = context?.signal;
    // A file call that the rules (or their absence) allow, with no audit hook to tell: the
    // same checks as below, without an audit event nobody receives or the two async frames
    // around the call (a quarter of a 4 KiB read_file's time on the event loop's thread).
    if (this.#onAudit === undefined && spec.effect !== "process") {
      try {
        if (signal?.aborted) throw abortError(signal);
        let paths: string[];
        try {
          paths = spec.paths(input);
        } catch (err) {
          if (err instanceof ToolError) throw err;
          throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, "an argument has the wrong type; call the tool with the types of its parameters schema (validate the input first)");
        }
        if (this.#decide(tool, spec, undefined, paths, undefined) === "allow") return this.#run(spec, input, context, undefined);
      } catch (err) {
        return Promise.reject(err);
      }
    }
    return this.#audited(tool, spec, input, async (event) => {
      if (signal?.aborted) throw abortError(signal);
      let argv: string[] | undefined;
      let paths: string[];
      let grants: Grants | undefined;
      try {
        event.summary = this.#summary(tool, spec, input);
        argv = spec.effect === "process" ? spec.describe(input).argv : undefined;
        paths = spec.effect === "process" ? [] : spec.paths(input);
        grants = spec.effect === "process" ? spec.grants(input) : undefined;
      } catch (err) {
        // An input that skipped `validate` and has the wrong types.
        if (err instanceof ToolError) throw err;
        throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, "an argument has the wrong type; call the tool with the types of its parameters schema (validate the input first)");
      }
      const verdict = this.#decide(tool, spec, argv, paths, grants);
      if (verdict === "deny") {
        event.decision = "refused";
        if (grants && !this.#session.covers(grants) && this.#grant !== "ask") {
          throw invalidArguments(ArgumentsReason.GRANT_NOT_ALLOWED, "this host does not let calls ask for grants; work inside the workspace", {
            at: "arguments.grants",
          });
        }
        throw denied("a rule of the host denies this call, so it was not run");
      }
      if (verdict === "allow") {
        event.decision = "allow";
        return await this.#run(spec, input, context, undefined);
      }
      if (verdict === "review" && spec.effect === "process" && spec.stage) return await this.#review(tool, spec, spec.stage, input, context, event);
      const request = await this.request(tool, spec, input, signal);
      event.summary = request.summary;
      event.hashes = request.files;
      let answer: { allow: boolean; reason?: string; remember?: "session" };
      try {
        answer = await this.#ask(request, signal);
      } catch (err) {
        if (err instanceof ToolError && err.code === APPROVAL_VIEW_INCOMPLETE) event.decision = "refused";
        throw err;
      }
      if (!answer.allow) {
        event.decision = "denied";
        throw denied(answer.reason ? `the user denied this call: ${answer.reason}` : "the user denied this call", answer.reason ? { reason: answer.reason } : undefined);
      }
      event.decision = "approved";
      return await this.#run(spec, input, context, request, answer.remember === "session" && request.grants !== undefined);
    });
  }

  /**
   * `approvalFor.process: "review"`: runs the call staged (its writes kept apart), shows the
   * change it made to `approve`, then applies it (yes) or discards it (no: APPROVAL_DENIED with
   * the run's result in details). A run that changed nothing is returned without asking.
   */
  async #review<I, O>(tool: string, spec: ProcessSpec<I, O>, stage: ReviewHooks<I, O>, input: I, context: ToolContext, event: Partial<AuditEvent>): Promise<O> {
    const signal = context?.signal;
    const out = await this.#runProcess(spec, stage.staged(input), context, spec.grants(input), false);
    const change = stage.take(out);
    if (change === undefined) return out;
    if (change.files.length === 0) {
      stage.discard(change.id);
      event.decision = "allow";
      return out;
    }
    const d = spec.describe(input);
    const files: Record<string, string> = {};
    for (const f of change.files) Object.defineProperty(files, f.path, { value: change.hash, enumerable: true, writable: true, configurable: true });
    const request: ApprovalRequest = { tool, effect: "process", input, summary: clip(`${d.summary}: ${change.summary}`), argv: d.argv, diff: change.diff, files };
    if (d.cwd !== undefined) request.cwd = d.cwd;
    if (d.source !== undefined) request.source = d.source;
    const g = spec.grants(input);
    if (g) request.grants = g;
    event.summary = request.summary;
    event.hashes = files;
    let answer: { allow: boolean; reason?: string };
    try {
      answer = await this.#ask(request, signal);
    } catch (err) {
      stage.discard(change.id);
      if (err instanceof ToolError && (err.code === APPROVAL_VIEW_INCOMPLETE || err.code === ErrorCode.APPROVAL_DENIED)) event.decision = "refused";
      throw err;
    }
    if (!answer.allow) {
      stage.discard(change.id);
      event.decision = "denied";
      const message = answer.reason ? `the user denied the change this call made, which was discarded: ${answer.reason}` : "the user denied the change this call made, which was discarded";
      throw denied(message, answer.reason ? { reason: answer.reason, result: out } : { result: out });
    }
    event.decision = "approved";
    await stage.apply(change.id, change.hash, signal);
    stage.note(out, `The user reviewed the change this call made (${change.summary.replace(/^the staged run changes /, "")}) and it was applied.`);
    return out;
  }

  /** The hooks an adapter with its own approval flow uses (the AI SDK's `needsApproval`). */
  hooks<I, O>(tool: string, spec: GateSpec<I, O>): GateHooks {
    return {
      follows: spec.effect === "process" && spec.follows === true,
      decide: (input) => {
        const i = input as I;
        const argv = spec.effect === "process" ? spec.describe(i).argv : undefined;
        const paths = spec.effect === "process" ? [] : spec.paths(i);
        const d = this.#decide(tool, spec, argv, paths, spec.effect === "process" ? spec.grants(i) : undefined);
        // A reviewed call runs (staged) and asks afterwards, inside execute.
        return d === "review" ? "allow" : d;
      },
      request: (input, signal) => this.request(tool, spec as GateSpec<I, unknown>, input as I, signal),
      runApproved: (input, context, request) =>
        this.#audited(tool, spec, input as I, async (event) => {
          event.decision = "approved";
          event.summary = request.summary;
          event.hashes = request.files;
          return this.#run(spec, input as I, context, request);
        }),
      refuse: (input, error) =>
        this.#audited<I, never>(tool, spec as GateSpec<I, never>, input as I, async (event) => {
          if (error instanceof ToolError && error.code === ErrorCode.APPROVAL_DENIED) event.decision = "refused";
          throw error;
        }),
    };
  }

  /**
   * Sandbox-denial hints for a process result (decided in the core): `{ denials, note }` when
   * the confined process failed and its output shows a refusal, else undefined.
   */
  denials(
    outputs: string[],
    exitOk: boolean,
    sandbox: SandboxReport,
    ports: readonly number[] = [],
  ): { denials: { kind: "write" | "read" | "network"; path?: string }[]; note: string } | undefined {
    return sandboxDenials(outputs, exitOk, this.#root, sandbox, this.grantsAllowed, ports);
  }

  get factory(): string {
    return this.#factory;
  }
}

/** The denial hints of a confined process's result (one core call; for every process tool). */
export function sandboxDenials(
  outputs: string[],
  exitOk: boolean,
  root: string,
  sandbox: SandboxReport,
  grantsAllowed: boolean,
  ports: readonly number[] = [],
): { denials: { kind: "write" | "read" | "network"; path?: string }[]; note: string } | undefined {
  const h = binding.sandboxDenials(outputs, exitOk, root, sandbox.filesystem === "confined", sandbox.network === "blocked", grantsAllowed, [...ports], sandbox.nodePermission === true);
  if (!h) return undefined;
  return {
    denials: h.denials.map((d) => {
      const kind = d.kind as "write" | "read" | "network";
      return d.path == null ? { kind } : { kind, path: d.path };
    }),
    note: h.note,
  };
}

/**
 * The sandbox options of one call: the tool's, widened by the call's approved grants (their
 * paths pinned in the core when approved, named by handle: the sandbox's rules are built from
 * the open directories, never from the paths again).
 */
export function withGrants(options: NativeSandboxOptions, grants: RunGrants | undefined): NativeSandboxOptions {
  if (!grants) return options;
  const out: NativeSandboxOptions = {
    ...options,
    sandbox: grants.sandbox === "off" ? "off" : options.sandbox,
    network: options.network || grants.network === true,
  };
  if (grants.handles?.length) out.grantHandles = [...grants.handles];
  // A granted network (or no sandbox) replaces the host's allowlist, as the core's
  // `SandboxOptions::granted` does for sessions: the allowlist needs the sandbox and excludes
  // `network: true`.
  if (grants.network === true || grants.sandbox === "off") delete out.networkAllow;
  return out;
}

/** The gate hooks of a workcell tool, if it has them. */
export function gateHooksOf(tool: object): GateHooks | undefined {
  return (tool as { [GATE_HOOKS]?: GateHooks })[GATE_HOOKS];
}

/** Attaches the gate hooks to a tool object (non-enumerable). */
export function attachHooks<T extends object>(tool: T, hooks: GateHooks): T {
  Object.defineProperty(tool, GATE_HOOKS, { value: hooks, enumerable: false });
  return tool;
}

/** `{ path: hash }` to the core's list. */
export function hashList(files: Record<string, string> | undefined): { path: string; hash: string }[] | undefined {
  return files === undefined ? undefined : Object.entries(files).map(([path, hash]) => ({ path, hash }));
}

/** The core's preview result to a Preview. */
export function toPreview(r: {
  summary?: string | null;
  diff?: string | null;
  diffs?: FileDiff[] | null;
  files?: { path: string; hash: string }[] | null;
}): Preview {
  const files: Record<string, string> = {};
  for (const f of r.files ?? []) Object.defineProperty(files, f.path, { value: f.hash, enumerable: true, writable: true, configurable: true });
  const p: Preview = { summary: r.summary!, files };
  if (r.diff != null) p.diff = r.diff;
  if (r.diffs != null && r.diffs.length > 0) p.diffs = r.diffs.map((d) => ({ path: d.path, diff: d.diff, added: d.added, removed: d.removed }));
  return p;
}

/** Puts a reading tool's calls through `gate` (rules and the audit; reads never ask by default). */
export function gateReadTool<I, O, T extends Tool<string, I, O>>(tool: T, gate: Gate, paths: (input: I) => string[]): T {
  const run = tool.execute.bind(tool);
  const spec: ReadSpec<I, O> = { effect: "read", paths, run: (input, context) => run(input, context) };
  tool.execute = (input: I, context: ToolContext) => gate.execute(tool.name, spec, input, context);
  return attachHooks(tool, gate.hooks(tool.name, spec));
}
