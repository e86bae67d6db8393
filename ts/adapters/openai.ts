// `workcell/openai`: the tools OpenAI's models are trained on, answered by workcell's confined
// tools, in the shapes of the Responses API. `applyPatch(tools)` answers `apply_patch_call`
// items over the apply_patch tool (each operation becomes a one-file patch in that tool's
// format); `shell(tools)` answers `shell_call` items over run_command. No dependency.
import { constants } from "node:os";
import { ErrorCode, ToolError } from "../errors.js";
import { binding, fromThrown } from "../native.js";
import type { ApplyPatchOutput } from "../apply-patch.js";
import type { RunCommandOutput } from "../run-command.js";
import { validatePath } from "../paths.js";
import type { ToolsInput } from "./common.js";
import { callTool, cutMiddle, errorText, requireTools, rootOf, workspacePath } from "./provider-tools.js";

/** An `apply_patch_call` operation. */
export type ApplyPatchOperation =
  | { type: "create_file"; path: string; diff: string }
  | { type: "update_file"; path: string; diff: string }
  | { type: "delete_file"; path: string };

/** A Responses `apply_patch_call` output item. */
export interface ApplyPatchCall {
  type: "apply_patch_call";
  call_id: string;
  operation: ApplyPatchOperation;
  id?: string;
  status?: string;
}

/** The `apply_patch_call_output` input item answering it. */
export interface ApplyPatchCallOutput {
  type: "apply_patch_call_output";
  call_id: string;
  status: "completed" | "failed";
  output: string;
}

/** The outcome of one operation. */
export interface ApplyPatchResult {
  status: "completed" | "failed";
  output: string;
}

/** `apply_patch` answered by workcell. */
export interface ApplyPatch {
  /** The tool entry for `responses.create({ tools })`. */
  readonly definition: { type: "apply_patch" };
  /** Applies one operation; resolves with its outcome, rejects only with an AbortError. */
  run(operation: unknown, signal?: AbortSignal): Promise<ApplyPatchResult>;
  /** Answers an `apply_patch_call` item with its `apply_patch_call_output`. */
  handle(item: ApplyPatchCall, signal?: AbortSignal): Promise<ApplyPatchCallOutput>;
}

function failed(error: ToolError): ApplyPatchResult {
  return { status: "failed", output: errorText(error) };
}

function shapeError(message: string): ToolError {
  return new ToolError(ErrorCode.TOOL_ARGUMENTS_INVALID, "INVALID_ARGUMENTS_SHAPE", { hint: message });
}

const HEADERS = { create_file: "Add File", update_file: "Update File", delete_file: "Delete File" } as const;
const VERBS = { create_file: "Created", update_file: "Updated", delete_file: "Deleted" } as const;

/**
 * The one-file patch (apply_patch's format) an operation stands for. The path goes through
 * the path grammar first (so it cannot carry a line break); `applyPatch` then parses the
 * result with the core's patch parser and refuses it unless it touches the one file named
 * (no move, no other file), whatever the diff's lines hold.
 */
export function operationPatch(op: ApplyPatchOperation, path: string): string {
  const header = `*** ${HEADERS[op.type]}: ${path}\n`;
  if (op.type === "delete_file") return `*** Begin Patch\n${header}*** End Patch\n`;
  const diff = op.diff.length === 0 || op.diff.endsWith("\n") ? op.diff : `${op.diff}\n`;
  return `*** Begin Patch\n${header}${diff}*** End Patch\n`;
}

/** Creates the apply_patch helper over the apply_patch tool of `tools`. */
export function applyPatch(tools: ToolsInput): ApplyPatch {
  const registry = requireTools("applyPatch", tools, ["apply_patch"], "pass createCodingTools(root) or createApplyPatchTool(root)");
  const root = rootOf(registry, ["apply_patch", "read_file"]);

  const run = async (operation: unknown, signal?: AbortSignal): Promise<ApplyPatchResult> => {
    if (typeof operation !== "object" || operation === null) return failed(shapeError("operation must be an object { type, path, diff? }"));
    const op = operation as Record<string, unknown>;
    if (op.type !== "create_file" && op.type !== "update_file" && op.type !== "delete_file") {
      return failed(shapeError("operation.type must be create_file, update_file or delete_file"));
    }
    if (typeof op.path !== "string") return failed(shapeError("operation.path must be a string"));
    if (op.type !== "delete_file" && typeof op.diff !== "string") return failed(shapeError(`operation.diff must be a string for ${op.type}`));
    const p = workspacePath(op.path, root);
    if (!p.ok) return failed(p.error);
    let path: string;
    try {
      path = validatePath(p.path as string);
    } catch (err) {
      if (err instanceof ToolError) return failed(err);
      throw err;
    }
    const patch = operationPatch(op as ApplyPatchOperation, path);
    // The core's parser decides what the patch does (as apply_patch will read it): exactly one
    // operation, on the file named. A header line in the diff, however it is written (` *** Move
    // to: ...` is trimmed into a move by the parser), is refused.
    let targets: string[];
    try {
      targets = binding.patchPaths(patch);
    } catch (err) {
      const e = fromThrown(err);
      if (e instanceof ToolError) return failed(e);
      throw e;
    }
    if (targets.length !== 1 || targets[0] !== path) {
      const header = (op.diff as string).split("\n").findIndex((l) => l.trimStart().startsWith("***") && l.trim() !== "*** End of File");
      const at = header === -1 ? "the diff" : `line ${header + 1} of the diff`;
      return failed(
        new ToolError(ErrorCode.TOOL_ARGUMENTS_INVALID, "PATCH_INVALID", {
          hint: `${at} is a patch header (it would ${targets.length > 1 ? `touch ${targets.join(", ")}` : "change another file"}); an operation changes only the file it names, and its diff holds only that file's lines (+ added, - removed, space context, @@ anchors)`,
          details: { ...(header === -1 ? {} : { line: header + 1 }), paths: targets },
        }),
      );
    }
    const r = await callTool<ApplyPatchOutput>(registry, "apply_patch", { patch }, signal);
    if (!r.ok) return failed(r.error);
    const verb = VERBS[op.type];
    const lines = r.value.files.map((f) => `${verb} ${f.path}${f.movedTo ? ` (moved to ${f.movedTo})` : ""}`);
    if (r.value.note) lines.push(r.value.note);
    return { status: "completed", output: lines.join("\n") };
  };

  return {
    definition: Object.freeze({ type: "apply_patch" as const }),
    run,
    handle: async (item, signal) => {
      const result = await run(item?.operation, signal);
      return { type: "apply_patch_call_output", call_id: item?.call_id, ...result };
    },
  };
}

// ---- shell -----------------------------------------------------------------------------------

/** A `shell_call`'s action. */
export interface ShellAction {
  commands: string[];
  timeout_ms?: number | null;
  max_output_length?: number | null;
}

/** A Responses `shell_call` output item. */
export interface ShellCall {
  type: "shell_call";
  call_id: string;
  action: ShellAction;
  id?: string;
  status?: string;
}

/** How one command ended. */
export type ShellOutcome = { type: "exit"; exit_code: number } | { type: "timeout" };

/** One command's result. */
export interface ShellCommandOutput {
  stdout: string;
  stderr: string;
  outcome: ShellOutcome;
}

/** The `shell_call_output` input item answering a `shell_call`. */
export interface ShellCallOutput {
  type: "shell_call_output";
  call_id: string;
  max_output_length: number | null;
  output: ShellCommandOutput[];
}

/** `shell` answered by workcell. */
export interface Shell {
  /** The tool entry for `responses.create({ tools })`. */
  readonly definition: { type: "shell" };
  /** Runs an action's commands one after the other; rejects only with an AbortError. */
  run(action: unknown, signal?: AbortSignal): Promise<{ max_output_length: number | null; output: ShellCommandOutput[] }>;
  /** Answers a `shell_call` item with its `shell_call_output`. */
  handle(item: ShellCall, signal?: AbortSignal): Promise<ShellCallOutput>;
}

/** Most commands of one action. */
export const MAX_SHELL_COMMANDS = 32;

function exitCodeOf(out: RunCommandOutput): number {
  if (out.exitCode !== null) return out.exitCode;
  const n = out.signal === null ? undefined : (constants.signals as Record<string, number>)[out.signal];
  return n === undefined ? 1 : 128 + n;
}

/**
 * Creates the shell helper over the run_command tool of `tools`. Each command of an action
 * runs as `["bash", "-c", command]` (the command policy checks the script), in its own process
 * like every run_command call: nothing carries over between commands but the files. stdout
 * carries the command's output (stdout and stderr as written, in order: run_command merges
 * them); stderr carries workcell's own refusals.
 */
export function shell(tools: ToolsInput): Shell {
  const registry = requireTools("shell", tools, ["run_command"], "pass createCodingTools(root) or createRunCommandTool(root)");

  const one = async (command: string, timeoutMs: number | undefined, max: number | undefined, signal?: AbortSignal): Promise<ShellCommandOutput> => {
    const input: Record<string, unknown> = { argv: ["bash", "-c", command] };
    if (timeoutMs !== undefined) input.timeoutMs = timeoutMs;
    const cut = (s: string) => (max === undefined ? s : cutMiddle(s, max).text);
    const r = await callTool<RunCommandOutput>(registry, "run_command", input, signal);
    if (r.ok) {
      const stdout = r.value.note ? `${r.value.output}${r.value.output.endsWith("\n") || r.value.output === "" ? "" : "\n"}[${r.value.note}]` : r.value.output;
      return { stdout: cut(stdout), stderr: "", outcome: { type: "exit", exit_code: exitCodeOf(r.value) } };
    }
    const e = r.error;
    if (e.code === ErrorCode.COMMAND_TIMEOUT) {
      const partial = (e.details as { output?: unknown } | undefined)?.output;
      return { stdout: cut(typeof partial === "string" ? partial : ""), stderr: cut(errorText(e)), outcome: { type: "timeout" } };
    }
    // Not run: refused, not found, bad input. Exit codes as a shell gives them.
    const code = e.code === ErrorCode.COMMAND_NOT_FOUND ? 127 : 126;
    return { stdout: "", stderr: cut(errorText(e)), outcome: { type: "exit", exit_code: code } };
  };

  const run: Shell["run"] = async (action, signal) => {
    const a = (typeof action === "object" && action !== null ? action : {}) as Record<string, unknown>;
    const maxRaw = a.max_output_length ?? a.maxOutputLength;
    const max = Number.isSafeInteger(maxRaw) && (maxRaw as number) >= 0 ? (maxRaw as number) : undefined;
    const bad = (hint: string) => ({
      max_output_length: max ?? null,
      output: [{ stdout: "", stderr: errorText(shapeError(hint)), outcome: { type: "exit" as const, exit_code: 2 } }],
    });
    const commands = a.commands;
    if (!Array.isArray(commands) || commands.length === 0 || !commands.every((c) => typeof c === "string")) {
      return bad("action.commands must be a non-empty array of command strings");
    }
    if (commands.length > MAX_SHELL_COMMANDS) return bad(`at most ${MAX_SHELL_COMMANDS} commands per call`);
    const t = a.timeout_ms ?? a.timeoutMs;
    const timeoutMs = Number.isSafeInteger(t) && (t as number) >= 1 ? (t as number) : undefined;
    const output: ShellCommandOutput[] = [];
    for (const command of commands as string[]) output.push(await one(command, timeoutMs, max, signal));
    return { max_output_length: max ?? null, output };
  };

  return {
    definition: Object.freeze({ type: "shell" as const }),
    run,
    handle: async (item, signal) => ({ type: "shell_call_output", call_id: item?.call_id, ...(await run(item?.action, signal)) }),
  };
}
