import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { ToolError } from "./errors.js";
import { callCore, fromThrown, openWorkspace } from "./native.js";
import { DEFAULT_PATH, inheritedEnv, scratchParent } from "./run-command.js";
import { POLICY_OPTIONS, type CommandPolicy } from "./policy.js";
import { SANDBOX_OPTIONS, listenPorts, SANDBOX_SAID_BY, describeSandbox, describeSandboxCompact, type SandboxSaid, sandboxOptions, type NativeSandboxOptions, type NetworkCounts, type SandboxReport, type SandboxToolOptions } from "./sandbox.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { factoryName, checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { Gate, attachHooks, withGrants, withGrantsParameter, type ApprovalOptions, type Grants, type ProcessSpec } from "./approval.js";
import type { RunTestsInput, RunTestsOutput } from "./generated/contract.js";
import { STAGE_OPTIONS, STAGE_SET, Staging, describeStage, type NativeStageOptions, type StageSet, type StageToolOptions } from "./stage.js";
export type { RunTestsInput, RunTestsOutput } from "./generated/contract.js";

/** `TestRunner`: the same as `RunTestsInput["runner"]` (generated from the core). */
export type TestRunner = RunTestsInput["runner"];

/** `TestFailure`: the same as `RunTestsOutput["failures"][number]` (generated from the core). */
export type TestFailure = RunTestsOutput["failures"][number];

/**
 * Options of run_tests. The sandbox options are run_command's; a confined runner may also read
 * its toolchain: the Node.js that runs node and vitest, the Go installation and the host's Go
 * caches, `rustupHome`, and `bin`, `registry`, `git` and the configuration of `cargoHome` (not
 * its credentials).
 */
export interface RunTestsToolOptions extends CommandPolicy, SandboxToolOptions, StageToolOptions, CommonToolOptions {
  /** Names of host environment variables the tests may see (read at call time). */
  inheritEnv?: readonly string[];
  /** The runners' PATH (default: the host's PATH when the tool is created). */
  path?: string;
  /** The call's deadline when it names none, in milliseconds (default 120,000). */
  timeoutMs?: number;
  /** Largest deadline a call may ask for (default 1,800,000, or `timeoutMs` when larger). */
  maxTimeoutMs?: number;
  /** The Node.js that runs `node --test` and vitest (default: `process.execPath`). */
  nodePath?: string;
  /** CARGO_HOME for cargo (default: the host's, `$CARGO_HOME` or `~/.cargo`, when it exists). */
  cargoHome?: string;
  /** RUSTUP_HOME for cargo (default: the host's, `$RUSTUP_HOME` or `~/.rustup`, when it exists). */
  rustupHome?: string;
  /** GOCACHE (default: in the per-call scratch directory, empty each call). */
  goCache?: string;
  /** GOMODCACHE (default: in the scratch directory; the run is offline either way). */
  goModCache?: string;
  /** Where the per-call scratch directories are created (default `os.tmpdir()`); outside the workspace. */
  scratchDir?: string;
  /**
   * How child exits are observed: a pidfd (Linux 5.3+), a thread blocked in `waitid`, or `"auto"`
   * (default: pidfd where there is one).
   */
  reaper?: "auto" | "pidfd" | "thread";
}

export const RUN_TESTS_DEFAULTS = { timeoutMs: 120_000, maxTimeoutMs: 1_800_000 } as const;

const MAX_MS = 2 ** 32 - 1;

/** The options of createRunTestsTool (see ts/options.ts). */
export const RUN_TESTS_OPTIONS = declareOptions("createRunTestsTool", {
  ...COMMON_TOOL_OPTIONS,
  ...POLICY_OPTIONS,
  ...SANDBOX_OPTIONS,
  ...STAGE_OPTIONS,
  inheritEnv: option.strings("host environment variables the tests may see"),
  path: option.string("the runners' PATH"),
  timeoutMs: option.integer(1, MAX_MS, "the deadline when the call names none, in milliseconds"),
  maxTimeoutMs: option.integer(1, MAX_MS, "largest deadline a call may ask for, in milliseconds"),
  nodePath: option.path("the Node.js that runs node --test and vitest"),
  cargoHome: option.path("CARGO_HOME for cargo"),
  rustupHome: option.path("RUSTUP_HOME for cargo"),
  goCache: option.path("GOCACHE"),
  goModCache: option.path("GOMODCACHE"),
  scratchDir: option.string("where the per-call HOME and TMPDIR are created", true),
  reaper: option.enum(["auto", "pidfd", "thread"], "how child exits are observed"),
} as const satisfies OptionSpecOf<RunTestsToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.run_tests.input, {
  runner: "vitest (the workspace's node_modules/.bin/vitest), node (node --test), go (go test, module in the workspace root) or cargo (cargo test, Cargo.toml in the workspace root).",
  args: 'What to run: go package patterns and -run/-skip/-v/-short/-race ("./pkg/...", "-run", "TestX"); vitest file filters and -t ("src/utils", "-t", "adds"); node test files and --test-name-pattern; cargo a test name filter, -p/--lib/--test/--features, and after "--" libtest\'s --exact/--skip/--ignored. Reporter, output-format and timeout options are set by the tool and refused. At most 32.',
  timeoutMs: "Deadline for the whole run in milliseconds (default and maximum are the tool's; a larger value is clamped).",
  stage: "Run staged: the workspace stays unchanged and the result's staged { id, summary, diff, files, hash } is the change, for apply_staged or discard_staged.",
});

const compactParameters = withDescriptions(parameters, {
  runner: "vitest, node (node --test), go or cargo.",
  args: 'Files, packages, test name filters, such as ["src/a.test.ts", "-t", "adds"] or ["./...", "-run", "TestX"].',
  timeoutMs: "Deadline in ms.",
  stage: "Keep the writes apart (apply_staged applies them).",
});

function describeCompact(timeoutMs: number, sandbox: string): string {
  return `Run the workspace's tests; returns status, counts, and each failure's name and message (passing output left out). Ends within ${timeoutMs} ms unless timeoutMs says. ${sandbox}`;
}

function describe(timeoutMs: number, maxTimeoutMs: number, sandbox: string): string {
  return [
    "Run the workspace's tests and get a short report: counts, build errors, each failing test's name and message, one result line per package or file.",
    "Passing tests' output is left out; the report is at most 8 KiB.",
    "runner picks the tool: vitest, node (node:test), go or cargo; the command is built by the tool with a machine-readable reporter, so args only select packages, files and tests.",
    `The run must end within ${timeoutMs} ms unless timeoutMs asks otherwise (at most ${maxTimeoutMs} ms); the runner itself gets a per-test timeout of three quarters of that, so a hanging test is usually reported by name as a failure. Past the deadline everything is killed and the call fails with TESTS_TIMED_OUT.`,
    "A runner that cannot start (not installed, broken configuration) fails with TEST_RUNNER_FAILED (or COMMAND_NOT_FOUND) and the runner's own error lines.",
    "Tests run offline with a private HOME and TMPDIR and only PATH plus the variables the host allows.",
    sandbox,
    "Failing tests are a normal result. status is passed only when the runner exited 0, nothing failed and its own summary agreed, else failed or incomplete. Returns { status, report, passed, failed, skipped, failures, buildErrors, exitCode, durationMs, timeoutMs, note?, sandbox }.",
  ].join(" ");
}

function existing(path: string): string | undefined {
  return existsSync(path) ? path : undefined;
}

/** The core's `TestsOptions` as the binding takes them (JSON; an unknown key is refused). */
interface NativeRunTestsOptions {
  policy: { denyCommands?: string[]; allowCommands?: string[] };
  path: string;
  env: { name: string; value: string }[];
  timeoutMs: number;
  maxTimeoutMs: number;
  nodePath: string;
  cargoHome?: string;
  rustupHome?: string;
  goCache?: string;
  goModCache?: string;
  scratchDir: string;
  reaper: string;
  sandbox: NativeSandboxOptions;
  stage: NativeStageOptions;
}

/** The `run_tests` tool. */
export type RunTestsTool = WorkcellTool<"run_tests", RunTestsInput, RunTestsOutput, "process">;

/** Creates the `run_tests` tool for one workspace root. */
export function createRunTestsTool(root: string, options: RunTestsToolOptions = {}): RunTestsTool {
  const T = factoryName("createRunTestsTool");
  checkOptions(T, RUN_TESTS_OPTIONS, options);
  const ws = openWorkspace(root);
  const timeoutMs = options.timeoutMs ?? RUN_TESTS_DEFAULTS.timeoutMs;
  const maxTimeoutMs = options.maxTimeoutMs ?? Math.max(RUN_TESTS_DEFAULTS.maxTimeoutMs, timeoutMs);
  if (timeoutMs > maxTimeoutMs) throw new TypeError(`workcell: ${T}: timeoutMs (${timeoutMs}) is above maxTimeoutMs (${maxTimeoutMs})`);
  const env = inheritedEnv(T, options.inheritEnv);
  const path = options.path ?? process.env.PATH ?? DEFAULT_PATH;
  const nodePath = options.nodePath ?? process.execPath;
  const cargoHome = options.cargoHome ?? existing(process.env.CARGO_HOME ?? join(homedir(), ".cargo"));
  const rustupHome = options.rustupHome ?? existing(process.env.RUSTUP_HOME ?? join(homedir(), ".rustup"));
  const goCache = options.goCache;
  const goModCache = options.goModCache;
  const scratchDir = scratchParent(T, options.scratchDir, ws.canonical);
  const sandbox = sandboxOptions(T, options);
  const reaper = options.reaper ?? "auto";
  const denyCommands = options.denyCommands === undefined ? undefined : [...options.denyCommands];
  const allowCommands = options.allowCommands === undefined ? undefined : [...options.allowCommands];
  const staging = new Staging(ws, options as RunTestsToolOptions & { [STAGE_SET]?: StageSet });
  const nativeOptions = (staged = false): NativeRunTestsOptions => ({
    policy: { denyCommands, allowCommands },
    path,
    env: env(),
    timeoutMs,
    maxTimeoutMs,
    nodePath,
    cargoHome,
    rustupHome,
    goCache,
    goModCache,
    scratchDir,
    reaper,
    sandbox,
    stage: staging.native(staged),
  });
  // The option checks Rust makes on every call, so a misconfiguration shows at creation (a
  // refusal of the probe itself, by the host's own lists, is not a misconfiguration).
  try {
    ws.checkRunTests("node", [], undefined, nativeOptions());
  } catch (err) {
    const e = fromThrown(err);
    if (!(e instanceof ToolError)) throw new TypeError(e.message);
  }

  const gate = new Gate(T, options, ws.canonical);
  const spec: ProcessSpec<RunTestsInput, RunTestsOutput> = {
    effect: "process",
    describe: (input) => {
      const argv = [input.runner, ...(input.args ?? [])];
      return { argv, summary: `run_tests ${argv.join(" ")}` };
    },
    grants: (input) => input.grants,
    stage: staging.review<RunTestsInput, RunTestsOutput>(),
    async run(input, context, grants) {
      const out: RunTestsOutput = await callCore(context?.signal, (cancel) =>
        ws.runTests(input.runner, input.args ?? [], input.timeoutMs, { ...nativeOptions(input.stage === true), sandbox: withGrants(sandbox, grants) }, cancel),
        context?.onProgress,
      );
      staging.track(out.staged);
      const notes: string[] = out.note != null ? [out.note] : [];
      const hint = gate.denials([out.report, ...out.failures.map((f) => f.output), ...out.buildErrors], out.status === "passed", out.sandbox, listenPorts(options));
      if (hint) {
        out.denials = hint.denials;
        notes.push(hint.note);
      }
      if (notes.length) out.note = notes.join(" ");
      return out;
    },
  };
  const params = withGrantsParameter(parameters, gate);

  const tool: RunTestsTool = attachHooks({
    name: "run_tests",
    effect: "process",
    description:
      (options.descriptions === "full"
        ? describe(timeoutMs, maxTimeoutMs, describeSandbox(sandbox))
        : describeCompact(timeoutMs, describeSandboxCompact(sandbox, (options as { [SANDBOX_SAID_BY]?: SandboxSaid })[SANDBOX_SAID_BY]))) +
      describeStage(staging.mode, options.descriptions === "full"),
    parameters: options.descriptions === "full" ? params : withGrantsParameter(compactParameters, gate),
    outputSchema: TOOL_SCHEMAS.run_tests.output,
    taskSupport: "optional",
    validate(raw: unknown): RunTestsInput {
      const { rest: input, grants } = gate.splitGrants(raw);
      checkSchema(parameters, input);
      const { runner, args = [], timeoutMs: t, stage } = input as RunTestsInput;
      try {
        ws.checkRunTests(runner, args, t, nativeOptions(stage === true));
      } catch (err) {
        throw fromThrown(err);
      }
      const out: RunTestsInput = { runner, args: [...args] };
      if (t !== undefined) out.timeoutMs = t;
      if (stage !== undefined) out.stage = stage;
      if (grants) out.grants = grants;
      return out;
    },
    execute(input: RunTestsInput, context: ToolContext): Promise<RunTestsOutput> {
      return gate.execute("run_tests", spec, input, context);
    },
  }, gate.hooks("run_tests", spec));
  return staging.attach(tool);
}
