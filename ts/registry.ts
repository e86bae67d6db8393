import { ErrorCode, ToolError, abortError, isAbortError, type ToolErrorJSON } from "./errors.js";
import type { JsonSchema } from "./schema.js";
import { closeTools, type AnyTool, type Progress, type ToolNamed, type ToolOutput } from "./tool.js";

/**
 * A tool call as a model emits it. `arguments` may be an object or its JSON text; `type` may be
 * left out.
 */
export interface ToolCall<Name extends string = string> {
  type?: "toolCall";
  id: string;
  name: Name;
  arguments: unknown;
}

/**
 * The outcome of a call: `content` is JSON (the output, or `{ error }`), what a model gets;
 * beside it the same outcome as values, `output` on success and `error` on a recoverable
 * failure, for the host's code (`isError` tells which).
 */
export type ToolResult<Name extends string = string, Output = unknown> =
  | { type: "toolResult"; id: string; name: Name; isError: false; content: string; output: Output }
  | { type: "toolResult"; id: string; name: Name; isError: true; content: string; error: ToolErrorJSON };

/** What the provider helpers read of a result (`toOpenAIToolMessage`...): a result made by hand needs no more. */
export interface ToolResultContent {
  type?: "toolResult";
  id: string;
  name: string;
  isError: boolean;
  content: string;
}

/** What a model is told about a tool. */
export interface ToolDefinition<Name extends string = string> {
  name: Name;
  description: string;
  parameters: JsonSchema;
}

/**
 * `unknown` (no constraint) for a name that is a plain `string` or for a set whose names are;
 * otherwise the set's names, so a literal name that is not one of them is a type error.
 */
export type KnownName<T extends AnyTool, N extends string> = string extends N ? unknown : string extends T["name"] ? unknown : T["name"];

/** The tool of `T` named `N` (with `undefined` when `N` is not known to be one of its names). */
export type ToolByName<T extends AnyTool, N extends string> = string extends N
  ? T | undefined
  : string extends T["name"]
    ? T | undefined
    : ToolNamed<T, N>;

/** The result of calling the tool named `N` of `T` (every tool's output when `N` is a plain `string`). */
export type ToolResultOf<T extends AnyTool, N extends string> = ToolResult<N, ToolOutput<string extends N ? T : ToolNamed<T, N>>>;

/**
 * A set of tools with unique names. Built from a tool set (`createCodingTools`), it keeps the
 * tools' types: `get("read_file")` is the read_file tool, and a misspelt literal name is a type
 * error.
 */
export class ToolRegistry<T extends AnyTool = AnyTool> {
  readonly #tools = new Map<string, T>();

  constructor(tools: Iterable<T>) {
    for (const tool of tools) {
      if (this.#tools.has(tool.name)) throw new Error(`workcell: duplicate tool name ${JSON.stringify(tool.name)}`);
      this.#tools.set(tool.name, tool);
    }
  }

  get<N extends string>(name: N & KnownName<T, N>): ToolByName<T, N> {
    return this.#tools.get(name) as ToolByName<T, N>;
  }

  list(): T[] {
    return [...this.#tools.values()];
  }

  /** Closes the tools that keep processes running (see `closeTools`). */
  close(): Promise<void> {
    return closeTools(this.#tools.values());
  }

  definitions(): ToolDefinition<T["name"]>[] {
    return this.list().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }
}

function errorContent(error: ToolError): string {
  return JSON.stringify({ error: error.toJSON() });
}

/** The error result of a call. */
function errorResult<N extends string>(base: { type: "toolResult"; id: string; name: N }, error: ToolError): ToolResult<N, never> {
  return { ...base, isError: true, content: errorContent(error), error: error.toJSON() };
}

/**
 * Looks the tool up, validates the arguments, executes and serializes. Resolves with an
 * error result for every recoverable failure; rejects only on cancellation, with an Error whose
 * `name` is `"AbortError"` (a signal already aborted rejects before any effect). Without a
 * signal the call cannot be cancelled. With a typed registry and a literal name, the result's
 * `output` has that tool's type. `onProgress` gets the call's progress updates (see
 * `ToolContext`).
 */
export async function executeToolCall<T extends AnyTool, N extends string = string>(
  registry: ToolRegistry<T>,
  call: ToolCall<N & KnownName<T, N>>,
  signal?: AbortSignal,
  onProgress?: (update: Progress) => void,
): Promise<ToolResultOf<T, N>> {
  if (signal?.aborted) throw abortError(signal);
  const base = { type: "toolResult" as const, id: call.id, name: call.name as N };
  const tool = (registry as ToolRegistry).get(call.name);
  if (!tool) {
    const names = registry.list().map((t) => t.name);
    return errorResult(
      base,
      new ToolError(ErrorCode.TOOL_NOT_FOUND, `no tool is named ${JSON.stringify(call.name)}`, {
        hint: `call one of: ${names.join(", ")}`,
      }),
    );
  }
  try {
    let args = call.arguments;
    if (typeof args === "string") {
      try {
        args = JSON.parse(args) as unknown;
      } catch {
        // leave it a string: validation reports the wrong shape
      }
    }
    const input: unknown = tool.validate(args);
    const output = (await tool.execute(input, onProgress ? { signal: signal ?? new AbortController().signal, onProgress } : { signal: signal ?? new AbortController().signal })) as ToolOutput<ToolNamed<T, N>>;
    return { ...base, isError: false, content: JSON.stringify(output), output } as ToolResultOf<T, N>;
  } catch (err) {
    if (isAbortError(err)) throw err;
    if (signal?.aborted) throw abortError(signal);
    const toolError =
      err instanceof ToolError
        ? err
        : new ToolError(ErrorCode.IO_ERROR, `unexpected failure: ${err instanceof Error ? err.message : String(err)}`, {
            hint: "the tool failed unexpectedly; try again or report the problem to the user",
          });
    return errorResult(base, toolError);
  }
}
