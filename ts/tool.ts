import type { JsonSchema } from "./schema.js";

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  signal: AbortSignal;
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
