import { realpathSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { sep } from "node:path";
import { ToolError } from "./errors.js";
import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { POLICY_OPTIONS, type CommandPolicy } from "./policy.js";
import { SANDBOX_OPTIONS, listenPorts, describeSandbox, describeSandboxCompact, sandboxOptions, type NativeSandboxOptions, type NetworkCounts, type SandboxReport, type SandboxToolOptions } from "./sandbox.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { factoryName, checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { Gate, attachHooks, withGrants, withGrantsParameter, type ApprovalOptions, type Grants, type ProcessSpec } from "./approval.js";
import type { RunCommandInput, RunCommandOutput } from "./generated/contract.js";
import { STAGE_OPTIONS, STAGE_SET, Staging, describeStage, type NativeStageOptions, type StageSet, type StageToolOptions } from "./stage.js";
export type { RunCommandInput, RunCommandOutput } from "./generated/contract.js";

/**
 * Options of `createRunCommandTool` (and `runCommand` of `createCodingTools`): the command policy,
 * environment, timeouts, output caps, the sandbox, approval.
 */
export interface RunCommandToolOptions extends CommandPolicy, SandboxToolOptions, StageToolOptions, CommonToolOptions {
  /**
   * Names of host environment variables the command may see (read at call time; absent names
   * are skipped). Nothing else is inherited: the command gets PATH, a private HOME and TMPDIR,
   * and these. PATH, HOME and TMPDIR cannot be named.
   */
  inheritEnv?: readonly string[];
  /** The command's PATH, where `argv[0]` is looked up (default: the host's PATH when the tool is created). */
  path?: string;
  /** Timeout when the call names none, in milliseconds (default 30,000). */
  timeoutMs?: number;
  /** Largest timeout a call may ask for (default 600,000, or `timeoutMs` when larger). */
  maxTimeoutMs?: number;
  /** Bytes kept from the start of the output (default 8,192). */
  outputHeadBytes?: number;
  /** Bytes kept from the end of the output (default 24,576). */
  outputTailBytes?: number;
  /**
   * Where the per-call scratch directories (the command's HOME and TMPDIR) are created
   * (default: `os.tmpdir()`). Must be outside the workspace.
   */
  scratchDir?: string;
  /** How child exits are observed (tests and diagnostics). */
  reaper?: "auto" | "pidfd" | "thread";
}

export const RUN_COMMAND_DEFAULTS = {
  timeoutMs: 30_000,
  maxTimeoutMs: 600_000,
  outputHeadBytes: 8_192,
  outputTailBytes: 24_576,
} as const;

const MAX_MS = 2 ** 32 - 1;
const MAX_OUTPUT_CAP = binding.MAX_OUTPUT_CAP;
const RESERVED_ENV: readonly string[] = binding.reservedEnv();

export const DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin";

/** The core's `CommandOptions` as the binding takes them (JSON; an unknown key is refused). */
interface NativeRunCommandOptions {
  policy: { denyCommands?: string[]; allowCommands?: string[] };
  path: string;
  env: { name: string; value: string }[];
  timeoutMs: number;
  maxTimeoutMs: number;
  outputHeadBytes: number;
  outputTailBytes: number;
  scratchDir: string;
  reaper: string;
  sandbox: NativeSandboxOptions;
  stage: NativeStageOptions;
}

/** The options of createRunCommandTool (see ts/options.ts). */
export const RUN_COMMAND_OPTIONS = declareOptions("createRunCommandTool", {
  ...COMMON_TOOL_OPTIONS,
  ...POLICY_OPTIONS,
  ...SANDBOX_OPTIONS,
  ...STAGE_OPTIONS,
  inheritEnv: option.strings("host environment variables the command may see"),
  path: option.string("the command's PATH"),
  timeoutMs: option.integer(1, MAX_MS, "timeout when the call names none, in milliseconds"),
  maxTimeoutMs: option.integer(1, MAX_MS, "largest timeout a call may ask for, in milliseconds"),
  outputHeadBytes: option.integer(0, MAX_OUTPUT_CAP, "bytes kept from the start of the output"),
  outputTailBytes: option.integer(0, MAX_OUTPUT_CAP, "bytes kept from the end of the output"),
  scratchDir: option.string("where the per-call HOME and TMPDIR are created", true),
  reaper: option.enum(["auto", "pidfd", "thread"], "how child exits are observed"),
} as const satisfies OptionSpecOf<RunCommandToolOptions>);

/** Validates `inheritEnv` (its type is checked by the spec) and returns a function reading the named variables at call time. */
export function inheritedEnv(_tool: string, value: readonly string[] | undefined): () => { name: string; value: string }[] {
  const list = [...(value ?? [])];
  for (const n of list) {
    if (n.length === 0 || /[=\0]/.test(n)) throw new TypeError(`workcell: inheritEnv name ${JSON.stringify(n)} is not a valid variable name`);
    if (RESERVED_ENV.includes(n)) {
      throw new TypeError(`workcell: inheritEnv cannot name ${n}: PATH is set with the path option, HOME and TMPDIR are private per call`);
    }
  }
  return () => {
    const vars: { name: string; value: string }[] = [];
    for (const name of list) {
      const v = process.env[name];
      if (v !== undefined && !v.includes("\0")) vars.push({ name, value: v });
    }
    return vars;
  };
}

function outside(real: string, canonicalRoot: string): boolean {
  return real !== canonicalRoot && !real.startsWith(canonicalRoot.endsWith(sep) ? canonicalRoot : canonicalRoot + sep);
}

/**
 * The parent of the per-call scratch directories: `dir` when given (it must exist and be outside
 * the workspace), otherwise the first of `os.tmpdir()`, /tmp, /var/tmp, /dev/shm that is a
 * directory outside the workspace. Returns its real path.
 */
export function scratchParent(tool: string, dir: string | undefined, canonicalRoot: string): string {
  if (dir === undefined) {
    for (const candidate of [tmpdir(), "/tmp", "/var/tmp", "/dev/shm"]) {
      try {
        const real = realpathSync(candidate);
        if (statSync(real).isDirectory() && outside(real, canonicalRoot)) return real;
      } catch {
        // not usable here
      }
    }
    throw new TypeError(`workcell: ${tool}: no temporary directory outside the workspace was found; pass scratchDir`);
  }
  let real: string;
  try {
    real = realpathSync(dir as string);
  } catch (err) {
    throw new TypeError(`workcell: ${tool}: the scratch directory's parent cannot be used: ${(err as Error).message}`);
  }
  if (!outside(real, canonicalRoot)) {
    throw new TypeError(
      `workcell: ${tool}: the scratch directory's parent ${real} is inside the workspace; pass scratchDir, a temporary directory outside it`,
    );
  }
  return real;
}

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.run_command.input, {
  argv: 'The program and its arguments, one string each, such as ["npm", "test"] or ["git", "status"]. Nothing is split or expanded. argv[0] is a bare program name found on PATH. For pipes, && or redirections use ["sh", "-c", "script"]; the script is parsed and checked.',
  cwd: "Working directory relative to the workspace root, such as packages/app (default: the root).",
  timeoutMs: "Timeout in milliseconds for this command (default and maximum are the tool's; a larger value is clamped).",
  stage: "Run staged: the workspace stays unchanged and the result's staged { id, summary, diff, files, hash } is the change, for apply_staged or discard_staged.",
});

const compactParameters = withDescriptions(parameters, {
  argv: 'The program (a bare name) and its arguments, such as ["npm", "test"]; ["sh", "-c", script] for pipes.',
  cwd: "Working directory in the workspace (default: the root).",
  timeoutMs: "Timeout in ms.",
  stage: "Keep the writes apart (apply_staged applies them).",
});

function describeCompact(timeoutMs: number, allow: string[] | undefined, sandbox: string): string {
  const only = allow ? ` Only these programs may run: ${allow.slice(0, 40).join(", ")}${allow.length > 40 ? "…" : ""}.` : "";
  return `Run a program in the workspace, no shell unless sh -c; returns exitCode and output (stdout and stderr, cut in the middle when long). It must end within ${timeoutMs} ms unless timeoutMs says.${only} ${sandbox}`;
}

function describe(
  timeoutMs: number,
  maxTimeoutMs: number,
  head: number,
  tail: number,
  allow: string[] | undefined,
  deny: string[] | undefined,
  sandbox: string,
): string {
  return [
    "Run a program inside the workspace and return its exit code and output.",
    "argv is the program and its arguments as separate strings: there is no shell unless you run one (sh -c), so nothing is split, globbed or expanded.",
    "argv[0] must be a bare program name on PATH (no /); a missing program is COMMAND_NOT_FOUND.",
    "For pipelines, && and redirections use [\"sh\", \"-c\", \"...\"]: the script is parsed and every command in it is checked; redirections may only target workspace-relative paths or /dev/null, and command names must be literal.",
    allow
      ? `Only these programs may run: ${allow.slice(0, 40).join(", ")}${allow.length > 40 ? "…" : ""} (plus shell builtins).`
      : deny === undefined
        ? "Privilege tools (sudo, su, doas, pkexec) are refused."
        : deny.length > 0
          ? `These programs are refused: ${deny.slice(0, 40).join(", ")}${deny.length > 40 ? "…" : ""}.`
          : "Programs that run other programs in ways the policy cannot check (sudo, strace...) are refused.",
    "A refused command is TOOL_ARGUMENTS_INVALID with COMMAND_REFUSED and a hint.",
    `The command gets an empty stdin, a private HOME and TMPDIR that are deleted afterwards, and only PATH plus the variables the host allows. It runs in its own process group; it must finish within ${timeoutMs} ms unless timeoutMs asks otherwise (at most ${maxTimeoutMs} ms): then everything it started is killed and the call fails with COMMAND_TIMEOUT (partial output in the error's details).`,
    `stdout and stderr arrive together in order in output; of long output the first ${head} and last ${tail} bytes are kept with "[N bytes omitted]" between (truncated, omittedBytes).`,
    sandbox,
    "A non-zero exit code is a normal result. Returns { exitCode, signal, output, truncated, omittedBytes, timedOut, durationMs, timeoutMs, note?, sandbox }.",
  ].join(" ");
}

/** The `run_command` tool. */
export type RunCommandTool = WorkcellTool<"run_command", RunCommandInput, RunCommandOutput, "process">;

/** Creates the `run_command` tool for one workspace root. */
export function createRunCommandTool(root: string, options: RunCommandToolOptions = {}): RunCommandTool {
  const T = factoryName("createRunCommandTool");
  checkOptions(T, RUN_COMMAND_OPTIONS, options);
  const ws = openWorkspace(root);
  const timeoutMs = options.timeoutMs ?? RUN_COMMAND_DEFAULTS.timeoutMs;
  const maxTimeoutMs = options.maxTimeoutMs ?? Math.max(RUN_COMMAND_DEFAULTS.maxTimeoutMs, timeoutMs);
  if (timeoutMs > maxTimeoutMs) throw new TypeError(`workcell: ${T}: timeoutMs (${timeoutMs}) is above maxTimeoutMs (${maxTimeoutMs})`);
  const head = options.outputHeadBytes ?? RUN_COMMAND_DEFAULTS.outputHeadBytes;
  const tail = options.outputTailBytes ?? RUN_COMMAND_DEFAULTS.outputTailBytes;
  if (head + tail === 0) throw new TypeError(`workcell: ${T}: outputHeadBytes and outputTailBytes cannot both be 0`);
  const deny = options.denyCommands === undefined ? undefined : [...options.denyCommands];
  const allow = options.allowCommands === undefined ? undefined : [...options.allowCommands];
  const env = inheritedEnv(T, options.inheritEnv);
  const path = options.path ?? process.env.PATH ?? DEFAULT_PATH;
  const scratchDir = scratchParent(T, options.scratchDir, ws.canonical);
  const reaper = options.reaper ?? "auto";
  const sandbox = sandboxOptions(T, options);
  const staging = new Staging(ws, options as RunCommandToolOptions & { [STAGE_SET]?: StageSet });

  const nativeOptions = (staged = false): NativeRunCommandOptions => ({
    policy: { denyCommands: deny, allowCommands: allow },
    path,
    env: env(),
    timeoutMs,
    maxTimeoutMs,
    outputHeadBytes: head,
    outputTailBytes: tail,
    scratchDir,
    reaper,
    sandbox,
    stage: staging.native(staged),
  });
  // The option checks Rust makes on every call, so a misconfiguration shows at creation (a
  // refusal of the probe itself, by the host's own lists, is not a misconfiguration).
  try {
    ws.checkRunCommand(["true"], undefined, undefined, nativeOptions());
  } catch (err) {
    const e = fromThrown(err);
    if (!(e instanceof ToolError)) throw new TypeError(e.message);
  }

  const gate = new Gate(T, options, ws.canonical);
  const spec: ProcessSpec<RunCommandInput, RunCommandOutput> = {
    effect: "process",
    describe: (input) => {
      const d: { argv: string[]; cwd?: string; summary: string } = {
        argv: input.argv,
        summary: `run_command ${input.argv.map((a) => (/^[\w./:=@%+-]+$/.test(a) ? a : JSON.stringify(a))).join(" ")}${input.cwd ? ` (in ${input.cwd})` : ""}`,
      };
      if (input.cwd !== undefined) d.cwd = input.cwd;
      return d;
    },
    grants: (input) => input.grants,
    stage: staging.review<RunCommandInput, RunCommandOutput>(),
    async run(input, context, grants) {
      const out: RunCommandOutput = await callCore(context?.signal, (cancel) =>
        ws.runCommand(input.argv, input.cwd, input.timeoutMs, { ...nativeOptions(input.stage === true), sandbox: withGrants(sandbox, grants) }, cancel),
        context?.onProgress,
      );
      staging.track(out.staged);
      const notes: string[] = out.note != null ? [out.note] : [];
      const hint = gate.denials([out.output], out.exitCode === 0, out.sandbox, listenPorts(options));
      if (hint) {
        out.denials = hint.denials;
        notes.push(hint.note);
      }
      if (notes.length) out.note = notes.join(" ");
      return out;
    },
  };
  const params = withGrantsParameter(parameters, gate);

  const tool: RunCommandTool = attachHooks({
    name: "run_command",
    effect: "process",
    description:
      (options.descriptions === "full"
        ? describe(timeoutMs, maxTimeoutMs, head, tail, allow, deny, describeSandbox(sandbox))
        : describeCompact(timeoutMs, allow, describeSandboxCompact(sandbox))) + describeStage(staging.mode, options.descriptions === "full"),
    parameters: options.descriptions === "full" ? params : withGrantsParameter(compactParameters, gate),
    outputSchema: TOOL_SCHEMAS.run_command.output,
    validate(raw: unknown): RunCommandInput {
      const { rest: input, grants } = gate.splitGrants(raw);
      checkSchema(parameters, input);
      const { argv, cwd, timeoutMs: t, stage } = input as RunCommandInput;
      try {
        ws.checkRunCommand(argv, cwd, t, nativeOptions(stage === true));
      } catch (err) {
        throw fromThrown(err);
      }
      const out: RunCommandInput = { argv: [...argv] };
      if (cwd !== undefined) out.cwd = cwd;
      if (t !== undefined) out.timeoutMs = t;
      if (stage !== undefined) out.stage = stage;
      if (grants) out.grants = grants;
      return out;
    },
    execute(input: RunCommandInput, context: ToolContext): Promise<RunCommandOutput> {
      return gate.execute("run_command", spec, input, context);
    },
  }, gate.hooks("run_command", spec));
  staging.attach(tool);
  return tool;
}
