import { ErrorCode, ToolError, abortError, isAbortError } from "./errors.js";
import type { JsonSchema } from "./schema.js";
import { closeTools, type AnyTool, type Progress } from "./tool.js";

/** A tool call as a model emits it. `arguments` may be an object or its JSON text. */
export interface ToolCall {
  type: "toolCall";
  id: string;
  name: string;
  arguments: unknown;
}

/** The serialized outcome of a call: `content` is JSON (the output, or `{ error }`). */
export interface ToolResult {
  type: "toolResult";
  id: string;
  name: string;
  isError: boolean;
  content: string;
}

/** What a model is told about a tool. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** A set of tools with unique names. */
export class ToolRegistry {
  readonly #tools = new Map<string, AnyTool>();

  constructor(tools: readonly AnyTool[]) {
    for (const tool of tools) {
      if (this.#tools.has(tool.name)) throw new Error(`workcell: duplicate tool name ${JSON.stringify(tool.name)}`);
      this.#tools.set(tool.name, tool);
    }
  }

  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  list(): AnyTool[] {
    return [...this.#tools.values()];
  }

  /** Closes the tools that keep processes running (see `closeTools`). */
  close(): Promise<void> {
    return closeTools(this.#tools.values());
  }

  definitions(): ToolDefinition[] {
    return this.list().map((t) => ({ name: t.name, description: t.description, parameters: t.parameters }));
  }
}

function errorContent(error: ToolError): string {
  return JSON.stringify({ error: error.toJSON() });
}

/**
 * Looks the tool up, validates the arguments, executes and serializes. Resolves with an
 * error result for every recoverable failure; rejects only on cancellation, with an Error whose
 * `name` is `"AbortError"` (a signal already aborted rejects before any effect). `onProgress`
 * gets the call's progress updates (see `ToolContext`).
 */
export async function executeToolCall(
  registry: ToolRegistry,
  call: ToolCall,
  signal: AbortSignal,
  onProgress?: (update: Progress) => void,
): Promise<ToolResult> {
  if (signal.aborted) throw abortError(signal);
  const base = { type: "toolResult" as const, id: call.id, name: call.name };
  const tool = registry.get(call.name);
  if (!tool) {
    const names = registry.list().map((t) => t.name);
    return {
      ...base,
      isError: true,
      content: errorContent(
        new ToolError(ErrorCode.TOOL_NOT_FOUND, `no tool is named ${JSON.stringify(call.name)}`, {
          hint: `call one of: ${names.join(", ")}`,
        }),
      ),
    };
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
    const output: unknown = await tool.execute(input, onProgress ? { signal, onProgress } : { signal });
    return { ...base, isError: false, content: JSON.stringify(output) };
  } catch (err) {
    if (isAbortError(err)) throw err;
    if (signal.aborted) throw abortError(signal);
    const toolError =
      err instanceof ToolError
        ? err
        : new ToolError(ErrorCode.IO_ERROR, `unexpected failure: ${err instanceof Error ? err.message : String(err)}`, {
            hint: "the tool failed unexpectedly; try again or report the problem to the user",
          });
    return { ...base, isError: true, content: errorContent(toolError) };
  }
}
