import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { SANDBOX_OPTIONS, listenPorts, SANDBOX_SAID_BY, describeSandbox, describeSandboxCompact, type SandboxSaid, nodePermissionSupport, sandboxOptions, type NativeSandboxOptions, type NodePermissionSupport, type NetworkCounts, type SandboxReport, type SandboxToolOptions } from "./sandbox.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { Gate, attachHooks, withGrants, withGrantsParameter, type ApprovalOptions, type Grants, type ProcessSpec } from "./approval.js";
import type { NodeProcessInput, NodeProcessOutput } from "./generated/contract.js";
import { STAGE_OPTIONS, STAGE_SET, Staging, describeStage, type NativeStageOptions, type StageSet, type StageToolOptions } from "./stage.js";
export type { NodeProcessInput, NodeProcessOutput } from "./generated/contract.js";

/**
 * Options of `createNodeProcessTool` (and `nodeProcess` of `createCodingTools`): timeout, output
 * caps, environment, the sandbox, approval.
 */
export interface NodeProcessToolOptions extends SandboxToolOptions, StageToolOptions, CommonToolOptions {
  /** Time the script may run, from its spawn, when the call names none (default 500 ms). */
  timeoutMs?: number;
  /**
   * Largest timeout a call may ask for (default: `timeoutMs`, so a call can shorten the timeout
   * but not lengthen it).
   */
  maxTimeoutMs?: number;
  /** Bytes kept of stdout and of stderr, each (default 32,768). */
  maxOutputBytes?: number;
  /** Bytes kept of stdout (default: `maxOutputBytes`). */
  maxStdoutBytes?: number;
  /** Bytes kept of stderr (default: `maxOutputBytes`). */
  maxStderrBytes?: number;
  /**
   * Environment for the script besides PATH: names to copy from the host's environment at call
   * time (absent names are skipped), or name -> value pairs. Nothing else is inherited.
   */
  env?: readonly string[] | Readonly<Record<string, string>>;
  /**
   * How child exits are observed: `"auto"` (a pidfd where the kernel has it, else a waiting
   * thread), `"pidfd"` or `"thread"`. For tests and diagnostics; SIGCHLD is never used.
   */
  reaper?: "auto" | "pidfd" | "thread";
}

export const NODE_PROCESS_DEFAULTS = {
  timeoutMs: 500,
  maxOutputBytes: 32_768,
} as const;

const MAX_TIMEOUT_MS = 2 ** 31 - 1;
const MAX_OUTPUT_CAP = binding.MAX_OUTPUT_CAP;

/** The options of createNodeProcessTool (see ts/options.ts). */
export const NODE_PROCESS_OPTIONS = declareOptions("createNodeProcessTool", {
  ...COMMON_TOOL_OPTIONS,
  ...SANDBOX_OPTIONS,
  ...STAGE_OPTIONS,
  timeoutMs: option.integer(1, MAX_TIMEOUT_MS, "time the script may run when the call names none, in milliseconds"),
  maxTimeoutMs: option.integer(1, MAX_TIMEOUT_MS, "largest timeout a call may ask for, in milliseconds"),
  maxOutputBytes: option.integer(1, MAX_OUTPUT_CAP, "bytes kept of stdout and of stderr, each"),
  maxStdoutBytes: option.integer(1, MAX_OUTPUT_CAP, "bytes kept of stdout"),
  maxStderrBytes: option.integer(1, MAX_OUTPUT_CAP, "bytes kept of stderr"),
  env: option.oneOf(
    [{ type: "strings" }, { type: "record", values: { type: "string" } }],
    "names to copy from the host's environment, or name -> value pairs",
  ),
  reaper: option.enum(["auto", "pidfd", "thread"], "how child exits are observed"),
} as const satisfies OptionSpecOf<NodeProcessToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.node_process.input, {
  source: "The JavaScript to run, as a CommonJS module (use require). At most 32,768 UTF-8 bytes.",
  arguments: "Strings the script receives as process.argv.slice(1), exactly as given. At most 32, each at most 2,048 UTF-8 bytes, 8,192 together; no NUL characters.",
  timeoutMs: "Timeout in milliseconds for this script (default and maximum are the tool's; a larger value is clamped).",
  stage: "Run staged: the workspace stays unchanged and the result's staged { id, summary, diff, files, hash } is the change, for apply_staged or discard_staged.",
});

const compactParameters = withDescriptions(parameters, {
  source: "CommonJS source (require; no top-level await).",
  arguments: "What the script gets as process.argv.slice(1).",
  timeoutMs: "Timeout in ms.",
  stage: "Keep the writes apart (apply_staged applies them).",
});

/** How long a script may run: the default, and what a call may ask for when the host allows more. */
function within(timeoutMs: number, maxTimeoutMs: number): string {
  return maxTimeoutMs > timeoutMs ? `${timeoutMs} ms unless timeoutMs asks otherwise (at most ${maxTimeoutMs} ms)` : `${timeoutMs} ms`;
}

function describeCompact(timeoutMs: number, maxTimeoutMs: number, sandbox: string): string {
  return `Run a short JavaScript program with Node.js in the workspace root; returns exitCode, stdout, stderr. It must end within ${within(timeoutMs, maxTimeoutMs)}. ${sandbox}`;
}

function describe(timeoutMs: number, maxTimeoutMs: number, maxStdout: number, maxStderr: number, sandbox: string): string {
  return [
    "Run a short JavaScript program with the host's own Node.js and return its exit code and output.",
    "The source runs as a CommonJS file (require, module.exports; wrap top-level await in an async function) in the workspace root, which is its working directory; process.argv.slice(1) is exactly `arguments`.",
    `It gets an empty stdin and an environment with PATH only. It must finish within ${within(timeoutMs, maxTimeoutMs)}: then it and everything it started is killed and the call fails with NODE_PROCESS_TIMEOUT (the partial output is in the error's details).`,
    `Background processes it leaves are killed when it exits. Of stdout the first ${maxStdout} bytes are kept and of stderr the first ${maxStderr}; stdoutTruncated / stderrTruncated say when more was printed.`,
    "A non-zero exit code is a normal result. Limits: source 32,768 UTF-8 bytes; at most 32 arguments of 2,048 bytes each, 8,192 together.",
    sandbox,
    "Returns { exitCode, signal, stdout, stderr, stdoutTruncated, stderrTruncated, timedOut, durationMs, note?, sandbox }.",
  ].join(" ");
}

function envSpec(env: NodeProcessToolOptions["env"]): { names: string[]; pairs: [string, string][] } {
  const names: string[] = [];
  const pairs: [string, string][] = [];
  if (env === undefined) return { names, pairs };
  const validName = (n: unknown): n is string => typeof n === "string" && n.length > 0 && !/[=\0]/.test(n);
  if (Array.isArray(env)) {
    for (const n of env) {
      if (!validName(n)) throw new TypeError(`workcell: env name ${JSON.stringify(n)} is not a valid variable name`);
      names.push(n);
    }
  } else {
    for (const [n, v] of Object.entries(env)) {
      if (!validName(n)) throw new TypeError(`workcell: env name ${JSON.stringify(n)} is not a valid variable name`);
      if (typeof v !== "string" || v.includes("\0")) {
        throw new TypeError(`workcell: env value of ${n} must be a string without NUL characters`);
      }
      pairs.push([n, v]);
    }
  }
  return { names, pairs };
}

/** The core's `NodeOptions` as the binding takes them (JSON; an unknown key is refused). */
interface NativeNodeProcessOptions {
  execPath: string;
  timeoutMs: number;
  maxTimeoutMs: number;
  maxStdoutBytes: number;
  maxStderrBytes: number;
  path?: string;
  env: { name: string; value: string }[];
  reaper: string;
  sandbox: NativeSandboxOptions;
  nodePermission?: NodePermissionSupport;
  stage: NativeStageOptions;
}

/** The `node_process` tool. */
export type NodeProcessTool = WorkcellTool<"node_process", NodeProcessInput, NodeProcessOutput, "process">;

/** Creates the `node_process` tool for one workspace root. */
export function createNodeProcessTool(
  root: string,
  options: NodeProcessToolOptions = {},
): NodeProcessTool {
  checkOptions("createNodeProcessTool", NODE_PROCESS_OPTIONS, options);
  const ws = openWorkspace(root);
  const timeoutMs = options.timeoutMs ?? NODE_PROCESS_DEFAULTS.timeoutMs;
  // By default a call may shorten the timeout but not lengthen it (the core clamps).
  const maxTimeoutMs = options.maxTimeoutMs ?? timeoutMs;
  if (timeoutMs > maxTimeoutMs) {
    throw new TypeError(`workcell: createNodeProcessTool: timeoutMs (${timeoutMs}) is above maxTimeoutMs (${maxTimeoutMs})`);
  }
  const maxOutput = options.maxOutputBytes ?? NODE_PROCESS_DEFAULTS.maxOutputBytes;
  const maxStdout = options.maxStdoutBytes ?? maxOutput;
  const maxStderr = options.maxStderrBytes ?? maxOutput;
  const env = envSpec(options.env);
  const sandbox = sandboxOptions("createNodeProcessTool", options);
  const nodePermission = nodePermissionSupport();
  const reaper = options.reaper ?? "auto";
  const staging = new Staging(ws, options as NodeProcessToolOptions & { [STAGE_SET]?: StageSet });

  const nativeOptions = (staged = false): NativeNodeProcessOptions => {
    const vars: { name: string; value: string }[] = [];
    for (const name of env.names) {
      const value = process.env[name];
      if (value !== undefined && !value.includes("\0")) vars.push({ name, value });
    }
    for (const [name, value] of env.pairs) vars.push({ name, value });
    return {
      execPath: process.execPath,
      timeoutMs,
      maxTimeoutMs,
      maxStdoutBytes: maxStdout,
      maxStderrBytes: maxStderr,
      path: process.env.PATH,
      env: vars,
      reaper,
      sandbox,
      nodePermission,
      stage: staging.native(staged),
    };
  };

  const gate = new Gate("createNodeProcessTool", options, ws.canonical);
  const spec: ProcessSpec<NodeProcessInput, NodeProcessOutput> = {
    effect: "process",
    describe: (input) => {
      const args = input.arguments ?? [];
      const lines = input.source.split("\n").length;
      return {
        argv: ["node", ...args],
        source: input.source,
        summary: `node_process: ${lines} line${lines === 1 ? "" : "s"} of JavaScript${args.length ? `, arguments ${JSON.stringify(args)}` : ""}`,
      };
    },
    grants: (input) => input.grants,
    stage: staging.review<NodeProcessInput, NodeProcessOutput>(),
    async run(input, context, grants) {
      const out: NodeProcessOutput = await callCore(context?.signal, (cancel) =>
        ws.nodeProcess(input.source, input.arguments ?? [], input.timeoutMs, { ...nativeOptions(input.stage === true), sandbox: withGrants(sandbox, grants) }, cancel),
        context?.onProgress,
      );
      staging.track(out.staged);
      const hint = gate.denials([out.stderr, out.stdout], out.exitCode === 0, out.sandbox, listenPorts(options));
      if (hint) {
        out.denials = hint.denials;
        out.note = out.note == null ? hint.note : `${out.note} ${hint.note}`;
      }
      return out;
    },
  };
  const params = withGrantsParameter(parameters, gate);

  const tool: NodeProcessTool = attachHooks({
    name: "node_process",
    effect: "process",
    description:
      (options.descriptions === "full"
        ? describe(timeoutMs, maxTimeoutMs, maxStdout, maxStderr, describeSandbox(sandbox))
        : describeCompact(timeoutMs, maxTimeoutMs, describeSandboxCompact(sandbox, (options as { [SANDBOX_SAID_BY]?: SandboxSaid })[SANDBOX_SAID_BY]))) +
      describeStage(staging.mode, options.descriptions === "full"),
    parameters: options.descriptions === "full" ? params : withGrantsParameter(compactParameters, gate),
    outputSchema: TOOL_SCHEMAS.node_process.output,
    validate(raw: unknown): NodeProcessInput {
      const { rest: input, grants } = gate.splitGrants(raw);
      checkSchema(parameters, input);
      const { source, arguments: args = [], timeoutMs: t, stage } = input as NodeProcessInput;
      try {
        ws.checkNodeProcess(process.execPath, source, args);
      } catch (err) {
        throw fromThrown(err);
      }
      staging.check(stage);
      const out: NodeProcessInput = { source, arguments: [...args] };
      if (t !== undefined) out.timeoutMs = t;
      if (stage !== undefined) out.stage = stage;
      if (grants) out.grants = grants;
      return out;
    },
    execute(input: NodeProcessInput, context: ToolContext): Promise<NodeProcessOutput> {
      return gate.execute("node_process", spec, input, context);
    },
  }, gate.hooks("node_process", spec));
  return staging.attach(tool);
}
