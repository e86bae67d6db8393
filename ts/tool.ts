import type { JsonSchema } from "./schema.js";

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  signal: AbortSignal;
  /**
   * Called while the call runs, at most every 250 ms and never after it settled (see
   * `Progress`). Optional: without it nothing is watched. What it throws or returns is ignored,
   * and it cannot delay or change the call (updates it is too slow for are merged).
   */
  onProgress?: (update: Progress) => void;
}

/**
 * One update of a running call. `message` is one line for a person; `progress`/`total` count
 * what the tool counts (tests finished, files searched, patch files staged) and only grow;
 * `output` is the process output since the previous update (node_process, run_command,
 * run_tests, start_process), at most 4 KiB, decoded and cut as the result's output is.
 */
export interface Progress {
  /** Milliseconds since the call started. */
  elapsedMs: number;
  message: string;
  progress?: number;
  total?: number;
  output?: string;
}

/**
 * What a call can change: `"read"` nothing (read_file, list_files, search_files), `"write"`
 * files inside the workspace (write_file, edit_file), `"process"` anything a confined process
 * may (node_process, run_command, run_tests). Adapters derive what they need from it; a tool
 * without `effect` is treated as `"process"`.
 */
export type ToolEffect = "read" | "write" | "process";

/** The effect of `tool`: its own, or `"process"` for a tool that does not say. */
export function effectOf(tool: { readonly effect?: ToolEffect }): ToolEffect {
  return tool.effect === "read" || tool.effect === "write" ? tool.effect : "process";
}

/** A tool an agent can call. */
export interface Tool<I = unknown, O = unknown> {
  /** The name the model calls it by, such as `read_file`. */
  readonly name: string;
  /** What a call can change (every workcell tool has one; a host's own tool may omit it). */
  readonly effect?: ToolEffect;
  /** For the model: what it does, its limits, the path rules. */
  readonly description: string;
  /** JSON Schema of the input (type object, additionalProperties false). */
  readonly parameters: JsonSchema;
  /**
   * JSON Schema of a successful result (type object). MCP lists it as the tool's
   * `outputSchema` and answers with the result as `structuredContent`; every workcell tool has
   * one, and a test checks the tools' real results against it.
   */
  readonly outputSchema?: JsonSchema;
  /**
   * `"optional"`: a client may run a call as a background task that it polls and can cancel
   * (MCP tasks, `execution.taskSupport`); for tools whose calls may take minutes, such as
   * run_tests. Absent: calls answer on the request.
   */
  readonly taskSupport?: "optional";
  /** Checks an untrusted input and returns it typed; throws `TOOL_ARGUMENTS_INVALID`; no effects. */
  validate(input: unknown): I;
  /** Runs the tool. Rejects with a `ToolError` for recoverable failures, an AbortError on cancellation. */
  execute(input: I, context: ToolContext): Promise<O>;
  /**
   * Ends what the tool keeps running (the process sessions of `start_process`): after it
   * resolves, nothing the tool started is left. Optional; safe to call more than once.
   */
  close?(): Promise<void>;
}

/** Closes every tool that has a `close()` (each shared resource once); never rejects. */
export async function closeTools(tools: Iterable<{ close?(): Promise<void> }>): Promise<void> {
  const seen = new Set<unknown>();
  const pending: Promise<void>[] = [];
  for (const t of tools) {
    if (typeof t.close !== "function" || seen.has(t.close)) continue;
    seen.add(t.close);
    pending.push(Promise.resolve().then(() => t.close!()).catch(() => undefined));
  }
  await Promise.all(pending);
}

/** Any tool, whatever its input and output types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, any>;

/**
 * The canonical path of a tool's workspace root, on the tools whose paths are workspace
 * paths (read_file, apply_patch). The provider helpers use it to accept an absolute path that
 * names a file beneath the root (the form some models are prompted with); without it every
 * absolute path is refused.
 */
export const WORKSPACE_ROOT: unique symbol = Symbol.for("workcell.workspaceRoot");

/** The canonical workspace root `tool` reports, if any. */
export function workspaceRootOf(tool: object | undefined): string | undefined {
  const root = (tool as { [WORKSPACE_ROOT]?: unknown } | undefined)?.[WORKSPACE_ROOT];
  return typeof root === "string" && root.startsWith("/") ? root : undefined;
}
