// `workcell/ai`: workcell's tools as Vercel AI SDK tools (`generateText`, `streamText`, agents).
// Needs the optional peer dependency `ai` (6 or 7); the main entry never loads it.
import { jsonSchema, tool, type JSONSchema7, type Tool as AITool } from "ai";
import { ToolCallError, runToolCall, toRegistry, type ToolsInput } from "./common.js";
import { checkOptions, option, type OptionSpecOf } from "../options.js";

export { ToolCallError };
export type { ToolsInput };

/** Options of `toAISDKTools`. */
export interface AISDKToolsOptions {
  /**
   * How a recoverable failure (a `ToolError`: refused path, missing file, timeout...) reaches
   * the SDK.
   * - `"throw"` (default): `execute` throws a `ToolCallError` whose message is the
   *   `{"error":{"code","message","hint"}}` JSON. The SDK records a `tool-error` part (your app
   *   and `useChat` see a failed call) and sends that message to the model as the error result
   *   of the call, so the model reads the code and the hint and can try again.
   * - `"result"`: `execute` returns the `{ error: { code, message, hint } }` object as an
   *   ordinary tool result (a `tool-result` part), for apps that treat every answered call as a
   *   result.
   * Cancellation is never converted: an aborted call rejects with an AbortError either way.
   */
  errors?: "throw" | "result";
}

/** The options of `toAISDKTools` (see ts/options.ts). */
export const AI_SDK_TOOLS_OPTIONS = {
  errors: option.enum(["throw", "result"], "how a recoverable failure reaches the SDK"),
} as const satisfies OptionSpecOf<AISDKToolsOptions>;

/**
 * Converts tools (or a registry) into the record `generateText({ tools })` takes, keyed by tool
 * name. Each tool keeps its description and JSON Schema; `execute` validates the input with
 * the tool's own checks, runs it with the SDK's `abortSignal`, and returns the tool's output
 * object.
 */
export function toAISDKTools(tools: ToolsInput, options: AISDKToolsOptions = {}): Record<string, AITool<unknown, unknown>> {
  checkOptions("toAISDKTools", AI_SDK_TOOLS_OPTIONS, options);
  const registry = toRegistry(tools);
  const errors = options.errors ?? "throw";
  const out: Record<string, AITool<unknown, unknown>> = {};
  for (const t of registry.list()) {
    out[t.name] = tool<unknown, unknown>({
      description: t.description,
      // No `validate` here: the tool's own `validate` runs inside `execute`, so a bad input gets
      // workcell's TOOL_ARGUMENTS_INVALID with its reason code and hint.
      inputSchema: jsonSchema<unknown>(t.parameters as JSONSchema7),
      execute: async (input, { abortSignal, toolCallId }) => {
        const result = await runToolCall(registry, t.name, toolCallId, input, abortSignal);
        if (result.isError && errors === "throw") throw new ToolCallError(result);
        return JSON.parse(result.content) as unknown;
      },
    });
  }
  return out;
}
