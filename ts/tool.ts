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

/**
 * A tool an agent can call: `Name` is its name as a literal type (`"read_file"`), `Input` what
 * `validate` returns and `execute` takes, `Output` what `execute` resolves with.
 */
export interface Tool<Name extends string = string, Input = unknown, Output = unknown> {
  /** The name the model calls it by, such as `read_file`. */
  readonly name: Name;
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
  validate(input: unknown): Input;
  /** Runs the tool. Rejects with a `ToolError` for recoverable failures, an AbortError on cancellation. */
  execute(input: Input, context: ToolContext): Promise<Output>;
  /**
   * Ends what the tool keeps running (the process sessions of `start_process`): after it
   * resolves, nothing the tool started is left. Optional; safe to call more than once.
   */
  close?(): Promise<void>;
}

/** A workcell tool: a `Tool` whose `effect` is known. */
export type WorkcellTool<Name extends string, Input, Output, Effect extends ToolEffect> = Tool<Name, Input, Output> & { readonly effect: Effect };

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

/** Any tool, whatever its name, input and output types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<string, any, any>;

/** What `validate` of the tool type `T` returns and `execute` takes (`unknown` for `AnyTool`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ToolInput<T> = T extends Tool<string, infer I, any> ? Known<I> : never;
/** What `execute` of the tool type `T` resolves with (`unknown` for `AnyTool`). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ToolOutput<T> = T extends Tool<string, any, infer O> ? Known<O> : never;
/** `unknown` for `any`, else `T`. */
type Known<T> = 0 extends 1 & T ? unknown : T;

/** The member of `T` named `N`. */
export type ToolNamed<T extends { readonly name: string }, N extends string> = Extract<T, { readonly name: N }>;

/**
 * Tools reachable by name with their types (`tools.read_file`, a misspelt name is a type
 * error) that are still an array of tools: they iterate as tools, and `new ToolRegistry(tools)`,
 * `closeTools(tools)` and every adapter take them. The names are the tools the factory made
 * (they are not updated when the array is changed). A set whose names are plain `string`s
 * (tools typed `AnyTool`) is a plain array.
 */
export type NamedTools<T extends { readonly name: string }> = T[] & ByName<T>;

/** `{ [name]: tool }` for literal names (the array's own members, `length`, `map`..., excepted). */
type ByName<T extends { readonly name: string }> = string extends T["name"]
  ? unknown
  : { readonly [K in Exclude<T["name"], keyof unknown[]>]: ToolNamed<T, K> };

const INDEX = /^(?:0|[1-9]\d*)$/;

/**
 * `items`, with each item also reachable under its name (a non-enumerable property of the
 * array). A name the array already answers (an index, `length`, `map`...) or a repeated one
 * is left as it is.
 */
export function namedTools<T extends { readonly name: string }>(items: T[]): NamedTools<T> {
  for (const item of items) {
    const name = item.name;
    if (typeof name !== "string" || INDEX.test(name) || name in items) continue;
    Object.defineProperty(items, name, { value: item, enumerable: false, configurable: true, writable: false });
  }
  return items as NamedTools<T>;
}

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
