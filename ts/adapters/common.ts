// What every framework adapter shares: one registry, one call path (executeToolCall, so every
// adapter validates, serializes and reports errors exactly as the registry does), and the error
// an adapter throws when its framework wants recoverable failures thrown.
import { ToolError, type ErrorCode, type ToolErrorJSON } from "../errors.js";
import { ToolRegistry, executeToolCall, type ToolResult, type ToolResultContent } from "../registry.js";
import type { AnyTool, Progress } from "../tool.js";

/** The tools an adapter takes: an array of tools (a tool set) or a registry. */
export type ToolsInput<T extends AnyTool = AnyTool> = readonly T[] | ToolRegistry<T>;

/** A registry over `tools` (the same object when it already is one). Duplicate names throw. */
export function toRegistry<T extends AnyTool>(tools: ToolsInput<T>): ToolRegistry<T> {
  return tools instanceof ToolRegistry ? tools : new ToolRegistry(tools);
}

/**
 * Runs one call through `executeToolCall`: resolves with the serialized result (an error
 * result for every recoverable failure), rejects only with an AbortError. A missing signal
 * means the call cannot be cancelled.
 */
export function runToolCall(
  registry: ToolRegistry,
  name: string,
  id: string,
  input: unknown,
  signal: AbortSignal | undefined,
  onProgress?: (update: Progress) => void,
): Promise<ToolResult> {
  return executeToolCall(registry, { type: "toolCall", id, name, arguments: input }, signal ?? new AbortController().signal, onProgress);
}

/** `read_file` -> `Read file`: a label for user interfaces. */
export function toolTitle(name: string): string {
  const words = name.split("_").filter((w) => w.length > 0);
  if (words.length === 0) return name;
  const text = words.join(" ");
  return text.charAt(0).toUpperCase() + text.slice(1);
}

interface ErrorBody {
  error: ToolErrorJSON;
}

/**
 * A recoverable tool failure, thrown by the adapters whose framework expects a failed tool to
 * throw (the AI SDK, Pi). Its `message` is exactly the JSON a model gets from
 * `executeToolCall` (`{"error":{"code","message","hint"?,"details"?}}`), because those
 * frameworks hand the thrown error's message to the model: the model sees the code and the
 * hint and can recover. `code`, `hint`, `details` and `toolError` are there for your code.
 */
export class ToolCallError extends Error {
  override name = "ToolCallError";
  readonly code: ErrorCode;
  readonly hint?: string;
  readonly details?: unknown;
  /** The failure as a ToolError, with its plain message. */
  readonly toolError: ToolError;
  /** The id of the failed call. */
  readonly toolCallId: string;
  /** The name of the tool that was called. */
  readonly toolName: string;

  constructor(result: ToolResultContent) {
    super(result.content);
    const body = JSON.parse(result.content) as ErrorBody;
    const { code, message, hint, details } = body.error;
    this.code = code;
    if (hint !== undefined) this.hint = hint;
    if (details !== undefined) this.details = details;
    this.toolError = new ToolError(code, message, { hint, details });
    this.toolCallId = result.id;
    this.toolName = result.name;
  }
}
