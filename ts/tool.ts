import type { JsonSchema } from "./schema.js";

/** What a tool's `execute` gets besides its input. */
export interface ToolContext {
  signal: AbortSignal;
}

/** A tool an agent can call. */
export interface Tool<I = unknown, O = unknown> {
  /** The name the model calls it by, such as `read_file`. */
  readonly name: string;
  /** For the model: what it does, its limits, the path rules. */
  readonly description: string;
  /** JSON Schema of the input (type object, additionalProperties false). */
  readonly parameters: JsonSchema;
  /** Checks an untrusted input and returns it typed; throws `TOOL_ARGUMENTS_INVALID`; no effects. */
  validate(input: unknown): I;
  /** Runs the tool. Rejects with a `ToolError` for recoverable failures, an AbortError on cancellation. */
  execute(input: I, context: ToolContext): Promise<O>;
}

/** Any tool, whatever its input and output types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = Tool<any, any>;
