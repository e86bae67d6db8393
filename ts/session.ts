// The process sessions: start_process, read_process, write_process, stop_process and
// list_processes, sharing one process table. Every limit and decision is made in Rust
// (crates/workcell-core/src/session/); this file checks shapes, converts and describes.
import type { ProcessToolsOptions as NativeProcessToolsOptions } from "../native/binding.js";
import { abortError } from "./errors.js";
import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { POLICY_OPTIONS, type CommandPolicy } from "./policy.js";
import { DEFAULT_PATH, inheritedEnv, scratchParent } from "./run-command.js";
import { SANDBOX_OPTIONS, sandboxOptions, type SandboxReport, type SandboxToolOptions } from "./sandbox.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { factoryName, checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { Gate, attachHooks, withGrantsParameter, type Grants, type ProcessSpec } from "./approval.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import { namedTools, type AnyTool, type NamedTools, type Tool, type ToolContext, type ToolEffect, type WorkcellTool } from "./tool.js";
import type { ListProcessesInput, ListProcessesOutput, ProcessInfo, ProcessOutput, ReadProcessInput, ReadProcessOutput, StartProcessInput, StartProcessOutput, StopProcessInput, StopProcessOutput, WriteProcessInput, WriteProcessOutput } from "./generated/contract.js";
export type { ListProcessesInput, ListProcessesOutput, ProcessInfo, ProcessOutput, ReadProcessInput, ReadProcessOutput, StartProcessInput, StartProcessOutput, StopProcessInput, StopProcessOutput, WriteProcessInput, WriteProcessOutput } from "./generated/contract.js";

/**
 * Options of `createProcessTools` (and `sessions` of `createCodingTools`): the command policy, the
 * sandbox, ports, how many processes and for how long, approval.
 */
export interface ProcessToolsOptions extends CommandPolicy, SandboxToolOptions, CommonToolOptions {
  /** Host variables the processes may see (as run_command's `inheritEnv`). */
  inheritEnv?: readonly string[];
  /** The processes' PATH, where `argv[0]` is looked up (default: the host's PATH). */
  path?: string;
  /** TCP ports a session may ask for in `ports` (default: none). */
  ports?: readonly number[];
  /** Processes running at once (default 8). */
  maxProcesses?: number;
  /** A process's life when the call names none, in milliseconds (default 1,800,000). */
  timeoutMs?: number;
  /** Longest life a call may ask for (default 3,600,000, or `timeoutMs` when larger). */
  maxTimeoutMs?: number;
  /** Where the per-process scratch directories go (default: `os.tmpdir()`), outside the workspace. */
  scratchDir?: string;
  /** How exits are observed (tests and diagnostics). */
  reaper?: "auto" | "pidfd" | "thread";
}

export const PROCESS_TOOLS_DEFAULTS = { timeoutMs: 1_800_000, maxTimeoutMs: 3_600_000, maxProcesses: 8 } as const;

/** `ProcessAlert`: the same as `ProcessOutput["alerts"][number]` (generated from the core). */
export type ProcessAlert = ProcessOutput["alerts"][number];

/** The `start_process` tool. */
export type StartProcessTool = WorkcellTool<"start_process", StartProcessInput, StartProcessOutput, "process">;
/** The `read_process` tool. */
export type ReadProcessTool = WorkcellTool<"read_process", ReadProcessInput, ReadProcessOutput, "read">;
/** The `write_process` tool. */
export type WriteProcessTool = WorkcellTool<"write_process", WriteProcessInput, WriteProcessOutput, "process">;
/** The `stop_process` tool. */
export type StopProcessTool = WorkcellTool<"stop_process", StopProcessInput, StopProcessOutput, "process">;
/** The `list_processes` tool. */
export type ListProcessesTool = WorkcellTool<"list_processes", ListProcessesInput, ListProcessesOutput, "read">;
/** The process-session tools, by name (`tools.start_process`) and as an array. */
export type ProcessTools = NamedTools<StartProcessTool | ReadProcessTool | WriteProcessTool | StopProcessTool | ListProcessesTool>;


const MAX_MS = 2 ** 32 - 1;
const id = "The id start_process returned, such as p1.";
const waitFor = "Return once this regex matches new output.";
const waitMs = "Longest wait in ms (default 1000).";

const startParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.start_process.input, {
  argv: 'As run_command: ["npm", "run", "dev"].',
  cwd: "Relative to the workspace root.",
  tty: "A terminal, for REPLs and prompts.",
  timeoutMs: "Its whole life in ms.",
  waitFor,
  waitMs,
  ports: "TCP ports it may listen on.",
  watch: "Keywords reported in alerts.",
});
const readParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.read_process.input, {
  id,
  cursor: "Byte offset (default: where the last read ended).",
  waitFor,
  waitMs,
});
const writeParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.write_process.input, {
  id,
  input: "Text for its stdin (at most 8192 bytes); end lines with \\n.",
  closeStdin: "Close stdin afterwards (end of input).",
});
const stopParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.stop_process.input, {
  id,
  signal: "Default SIGTERM, then SIGKILL after 2 s.",
});
const listParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.list_processes.input, {});

/** The options of createProcessTools (see ts/options.ts). */
export const PROCESS_TOOLS_OPTIONS = declareOptions("createProcessTools", {
  ...COMMON_TOOL_OPTIONS,
  ...POLICY_OPTIONS,
  ...SANDBOX_OPTIONS,
  inheritEnv: option.strings("host environment variables the processes may see"),
  path: option.string("the processes' PATH"),
  ports: option.integers(1, 65535, "TCP ports a session may ask for"),
  maxProcesses: option.integer(1, 1024, "processes running at once"),
  timeoutMs: option.integer(1, MAX_MS, "a process's life when the call names none, in milliseconds"),
  maxTimeoutMs: option.integer(1, MAX_MS, "the longest life a call may ask for, in milliseconds"),
  scratchDir: option.string("where the per-process HOME and TMPDIR are created", true),
  reaper: option.enum(["auto", "pidfd", "thread"], "how exits are observed"),
} as const satisfies OptionSpecOf<ProcessToolsOptions>);

function integer(name: string, value: unknown, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new TypeError(`workcell: createProcessTools option ${name} must be an integer from ${min} to ${max}`);
  }
  return value;
}

/** The core's result as the model gets it (the core's shape, passed through). */
type CoreProcessOutput = Omit<ProcessOutput, "sandbox" | "denials"> & { sandbox: unknown };

/** Creates the five process-session tools for one workspace root, sharing one process table. */
export function createProcessTools(root: string, options: ProcessToolsOptions = {}): ProcessTools {
  const T = factoryName("createProcessTools");
  checkOptions(T, PROCESS_TOOLS_OPTIONS, options);
  const ws = openWorkspace(root);
  const timeoutMs = integer("timeoutMs", options.timeoutMs, 1, MAX_MS) ?? PROCESS_TOOLS_DEFAULTS.timeoutMs;
  const maxTimeoutMs = integer("maxTimeoutMs", options.maxTimeoutMs, 1, MAX_MS) ?? Math.max(PROCESS_TOOLS_DEFAULTS.maxTimeoutMs, timeoutMs);
  if (timeoutMs > maxTimeoutMs) throw new TypeError(`workcell: ${T} option timeoutMs (${timeoutMs}) is above maxTimeoutMs (${maxTimeoutMs})`);
  const maxProcesses = integer("maxProcesses", options.maxProcesses, 1, 1024) ?? PROCESS_TOOLS_DEFAULTS.maxProcesses;
  const ports = options.ports ?? [];
  if (!Array.isArray(ports) || ports.some((p) => !Number.isSafeInteger(p) || p < 1 || p > 65535)) {
    throw new TypeError(`workcell: ${T} option ports must be an array of TCP ports (integers from 1 to 65535)`);
  }
  for (const [k, v] of [["denyCommands", options.denyCommands], ["allowCommands", options.allowCommands]] as const) {
    if (v !== undefined && (!Array.isArray(v) || v.some((x) => typeof x !== "string"))) {
      throw new TypeError(`workcell: ${T} option ${k} must be an array of strings`);
    }
  }
  if (options.path !== undefined && (typeof options.path !== "string" || options.path.includes("\0"))) {
    throw new TypeError(`workcell: ${T} option path must be a PATH string`);
  }
  const reaper = options.reaper ?? "auto";
  if (!["auto", "pidfd", "thread"].includes(reaper)) throw new TypeError(`workcell: ${T} option reaper must be "auto", "pidfd" or "thread"`);
  const env = inheritedEnv(T, options.inheritEnv);
  const native: NativeProcessToolsOptions = {
    denyCommands: options.denyCommands ? [...options.denyCommands] : undefined,
    allowCommands: options.allowCommands ? [...options.allowCommands] : undefined,
    path: options.path ?? process.env.PATH ?? DEFAULT_PATH,
    // The host's variables are read once, when the tools are created.
    env: env(),
    timeoutMs,
    maxTimeoutMs,
    scratchDir: scratchParent(T, options.scratchDir, ws.canonical),
    reaper,
    ...sandboxOptions(T, options),
    ports: [...ports],
    maxProcesses,
  };
  const table = (() => {
    try {
      return new binding.NativeProcessTable(ws, native);
    } catch (err) {
      throw new TypeError(fromThrown(err).message);
    }
  })();
  // Approval (contract §12): every call of the five tools goes through the gate (rules, audit);
  // start_process and write_process (input a shell or REPL runs) ask where the host's
  // approvalFor.process says so; read_process, stop_process and list_processes only follow
  // what those started, so only a rule makes them ask.
  const gate = new Gate(T, options, ws.canonical);
  const summary = (argv: readonly string[]) => argv.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : JSON.stringify(a))).join(" ");
  let closed: Promise<void> | undefined;
  // Resolves once every process tree is gone; one still ending after the core's bound (a few
  // seconds: a process stuck in the kernel) is named in a warning rather than waited for.
  const close = (): Promise<void> =>
    (closed ??= table.close().then((r) => {
      const left = "ok" in r ? r.ok : [];
      if (left.length) process.emitWarning(`workcell: closeTools: process ${left.join(", ")} was still ending after the wait; its tree was sent SIGKILL`, { code: "WORKCELL_CLOSE_LEFT" });
    }));
  // A process that exited non-zero on a sandbox refusal gets the denial hints, as the other
  // process tools' results do (decided in the core; none while it runs or after a clean exit).
  const output = (v: CoreProcessOutput): ProcessOutput => {
    const out = v as ProcessOutput;
    if (out.running || out.exitCode === null || out.exitCode === 0) return out;
    const hint = gate.denials([out.output], false, out.sandbox, ports);
    if (hint) {
      out.denials = hint.denials;
      out.note = out.note === undefined ? hint.note : `${out.note} ${hint.note}`;
    }
    return out;
  };
  const checked = <I>(schema: JsonSchema, input: unknown, more?: (i: I) => void): I => {
    checkSchema(schema, input);
    try {
      more?.(input as I);
    } catch (err) {
      throw fromThrown(err);
    }
    return structuredClone(input) as I;
  };
  const allowed = ports.length ? `ports the host allows: ${ports.join(", ")}` : "no ports are allowed here";
  // "full" adds the limits and output fields a model otherwise meets in results and hints.
  const full = (compact: string, more: string) => (options.descriptions === "full" ? `${compact} ${more}` : compact);

  const startSpec: ProcessSpec<StartProcessInput, ProcessOutput> = {
    effect: "process",
    describe: (i) => {
      const d: { argv: string[]; cwd?: string; summary: string } = { argv: [...i.argv], summary: `start_process ${summary(i.argv)}${i.cwd ? ` (in ${i.cwd})` : ""}` };
      if (i.cwd !== undefined) d.cwd = i.cwd;
      return d;
    },
    grants: (i) => i.grants,
    // The grants (this call's, approved, and the tool set's remembered ones) widen the tools'
    // sandbox options in the core for this process only.
    run: async (i, context, grants) =>
      output(await callCore(context?.signal, (c) => table.start(i.argv, i.cwd, i.tty, i.timeoutMs, i.waitFor, i.waitMs, i.ports, i.watch, c, grants), context?.onProgress)),
  };
  const writeSpec: ProcessSpec<WriteProcessInput, { id: string; bytes: number }> = {
    effect: "process",
    // The summary (also the audit's) counts the input; the request carries all of it (`stdin`).
    describe: (i) => {
      const bytes = Buffer.byteLength(i.input, "utf8");
      const lines = i.input === "" ? 0 : i.input.split("\n").length - (i.input.endsWith("\n") ? 1 : 0);
      return {
        argv: [],
        stdin: i.input,
        summary: `write_process ${i.id}: ${bytes} byte${bytes === 1 ? "" : "s"}, ${lines} line${lines === 1 ? "" : "s"}${i.closeStdin ? " (then closes stdin)" : ""}`,
      };
    },
    grants: () => undefined,
    run: (i, context) => callCore(context?.signal, (c) => table.write(i.id, i.input, i.closeStdin, c)),
  };
  const follow = <I, O>(summary: (i: I) => string, run: (i: I, context: ToolContext) => Promise<O>, declared: ToolEffect = "process"): ProcessSpec<I, O> => ({
    effect: "process",
    declared,
    follows: true,
    describe: (i) => ({ argv: [], summary: summary(i) }),
    grants: () => undefined,
    run: (i, context) => run(i, context),
  });
  const readSpec = follow<ReadProcessInput, ProcessOutput>(
    (i) => `read_process ${i.id}`,
    async (i, context) => output(await callCore(context?.signal, (c) => table.read(i.id, i.cursor, i.waitFor, i.waitMs, c))),
    "read",
  );
  const stopSpec = follow<StopProcessInput, ProcessOutput>(
    (i) => `stop_process ${i.id}${i.signal ? ` ${i.signal}` : ""}`,
    async (i, context) => output(await callCore(context?.signal, (c) => table.stop(i.id, i.signal, c))),
  );
  const listSpec = follow<Record<string, never>, { processes: ProcessInfo[] }>(
    () => "list_processes",
    async (_i, context) => {
      if (context?.signal?.aborted) throw abortError(context.signal);
      return table.list();
    },
    "read",
  );
  // Every session tool runs through the gate with its spec and carries its hooks.
  const make = <N extends keyof typeof TOOL_SCHEMAS, I, O, E extends ToolEffect>(
    name: N,
    effect: E,
    spec: ProcessSpec<I, O>,
    fields: { description: string; parameters: JsonSchema; validate(input: unknown): I; taskSupport?: "optional" },
  ): WorkcellTool<N, I, O, E> =>
    attachHooks(
      {
        name,
        effect,
        ...fields,
        outputSchema: TOOL_SCHEMAS[name].output,
        execute: (i: I, context: ToolContext) => gate.execute(name, spec, i, context),
        close,
      },
      gate.hooks(name, spec),
    );
  const start: StartProcessTool = make("start_process", "process", startSpec, {
    description: full(
      `Start a dev server, watcher, REPL or long build and return while it runs, with its id (argv and cwd as run_command). Pass waitFor (a regex such as "listening") to return once it appears. Then read_process to follow its output, write_process for stdin, stop_process when done. At most ${maxProcesses} run at once; ${allowed}; killed after timeoutMs (default ${timeoutMs}).`,
      `Returns { id, running, exitCode, signal, output, cursor, omittedBytes, matched, alerts, durationMs, sandbox }. waitMs is at most 30000 (default 1000); watch takes up to 16 keywords reported in alerts; tty: true gives an 80x24 terminal with escape sequences removed. The first 8 KiB and the last 64 KiB of output are kept; older bytes are counted in omittedBytes. It runs confined like run_command, with a private HOME and TMPDIR kept for its life.`,
    ),
    parameters: withGrantsParameter(startParameters, gate),
    // An MCP client may run it as a task (contract §16): it can wait up to 30 s for waitFor, and
    // tasks/cancel aborts it (an aborted start kills the process it started).
    taskSupport: "optional",
    validate: (raw) => {
      // `grants`: GRANT_NOT_ALLOWED unless the host lets calls ask; paths resolved in the core.
      const { rest, grants } = gate.splitGrants(raw);
      const i = checked<StartProcessInput>(startParameters, rest, (i) =>
        table.checkStart(i.argv, i.cwd, i.tty, i.timeoutMs, i.waitFor, i.waitMs, i.ports, i.watch, grants),
      );
      if (grants) i.grants = grants;
      return i;
    },
  });
  // Reading a process's output or the list changes nothing: effect "read" (MCP clients that
  // approve read-only tools on their own do not ask for them); stopping one is a process call.
  const read: ReadProcessTool = make("read_process", "read", readSpec, {
    description: full(
      "Read a process's output since your last read (or since cursor), with running and exit status. Returns on new output (or once waitFor matches), at exit, or after waitMs.",
      "cursor counts bytes since the start; output no longer kept is shown as [N bytes omitted]. An unknown id is PROCESS_NOT_FOUND; list_processes shows the ids.",
    ),
    parameters: readParameters,
    validate: (input) => checked<ReadProcessInput>(readParameters, input),
  });
  const write: WriteProcessTool = make("write_process", "process", writeSpec, {
    description: full(
      "Send input to a started process's stdin (its terminal with tty), such as \"1+1\\n\"; closeStdin: true ends its input. Then read_process for the answer.",
      "input is at most 8,192 UTF-8 bytes per call. Returns { id, bytes }.",
    ),
    parameters: writeParameters,
    validate: (input) => checked<WriteProcessInput>(writeParameters, input),
  });
  const stop: StopProcessTool = make("stop_process", "process", stopSpec, {
    description: full(
      "Stop a started process and everything it started (SIGTERM, then SIGKILL after 2 s; or SIGINT, SIGKILL) and return its final output and exit status. Stop what you no longer need.",
      "A process killed by a signal reports it in signal, with exitCode null. Returns the same fields as read_process.",
    ),
    parameters: stopParameters,
    validate: (input) => checked<StopProcessInput>(stopParameters, input),
  });
  const list: ListProcessesTool = make("list_processes", "read", listSpec, {
    description: full(
      "List the started processes, running and recently finished (kept 10 minutes), with id, argv, running, exitCode, signal, startedAt and durationMs.",
      "At most 32 finished ones are kept; startedAt is an ISO 8601 time.",
    ),
    parameters: listParameters,
    validate: (input) => checked<Record<string, never>>(listParameters, input),
  });
  const tools = namedTools([start, read, write, stop, list]);
  portGroups.set(tools, table.portGroup);
  return tools;
}

const portGroups = new WeakMap<object, number>();

/** Internal: the port group of a `createProcessTools` array (for the tool set's other tools). */
export function portGroupOf(tools: readonly object[]): number | undefined {
  return portGroups.get(tools);
}

