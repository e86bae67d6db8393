// `workcell/ai`: workcell's tools as Vercel AI SDK tools (`generateText`, `streamText`, agents).
// Needs the optional peer dependency `ai` (6 or 7); the main entry never loads it.
import { createRequire } from "node:module";
import { jsonSchema, tool, type JSONSchema7, type Tool as AITool } from "ai";
import { isImageOutput } from "../image.js";
import { ToolCallError, runToolCall, toRegistry, type ToolsInput } from "./common.js";
import { checkOptions, option, type OptionSpecOf } from "../options.js";
import { textEditor as anthropicTextEditor, bash as anthropicBash, type AnthropicToolAnswer, type BashOptions, type TextEditorOptions } from "./anthropic.js";
import { applyPatch as openaiApplyPatch, shell as openaiShell } from "./openai.js";
import { hasTools } from "./provider-tools.js";

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
      // An image read_file returned reaches the model as an image part, with its path and hash.
      toModelOutput: ({ output }) =>
        imageModelOutput(output) ??
        (typeof output === "string" ? { type: "text", value: output } : { type: "json", value: (output === undefined ? null : output) as never }),
    });
  }
  return out;
}

type ModelOutput = ReturnType<NonNullable<AITool<unknown, unknown>["toModelOutput"]>>;

/** An image read_file returned, as the content parts of a tool result (undefined for anything else). */
function imageModelOutput(output: unknown): Exclude<ModelOutput, PromiseLike<unknown>> | undefined {
  if (!isImageOutput(output)) return undefined;
  const { data, mimeType, ...rest } = output;
  return {
    type: "content",
    value: [
      { type: "image-data", data, mediaType: mimeType },
      { type: "text", text: JSON.stringify({ ...rest, mimeType }) },
    ],
  };
}

/** An Anthropic answer (text, or blocks with an image) as a tool result for the SDK. */
function anthropicModelOutput(output: unknown): Exclude<ModelOutput, PromiseLike<unknown>> {
  const a = output as AnthropicToolAnswer | string;
  if (typeof a === "string") return { type: "text", value: a };
  if (typeof a.content === "string") return a.is_error ? { type: "error-text", value: a.content } : { type: "text", value: a.content };
  return {
    type: "content",
    value: a.content.map((b) =>
      b.type === "image" ? { type: "image-data" as const, data: b.source.data, mediaType: b.source.media_type } : { type: "text" as const, text: b.text },
    ),
  };
}

/** Options of `toAISDKProviderTools`. */
export interface AISDKProviderToolsOptions {
  /** Options of the text editor (`maxCharacters`). */
  textEditor?: TextEditorOptions;
  /** Options of the bash tool (`timeoutMs`, `maxOutputChars`). */
  bash?: BashOptions;
}

/** The AI SDK provider tools workcell answers, by the names the providers give them. */
export interface AISDKProviderTools {
  /** `anthropic.tools.textEditor_20250728` over read_file, write_file, edit_file, list_files. */
  str_replace_based_edit_tool?: AITool;
  /** `openai.tools.applyPatch` over apply_patch. */
  apply_patch?: AITool;
  /** `openai.tools.shell` over run_command. */
  shell?: AITool;
  /** `anthropic.tools.bash_20250124` over one process session (start_process ...). */
  bash?: AITool;
}

const requireHere = createRequire(import.meta.url);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function provider(name: "@ai-sdk/anthropic" | "@ai-sdk/openai"): any {
  try {
    return requireHere(name);
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") {
      throw new Error(
        `workcell/ai: toAISDKProviderTools needs the optional peer dependency ${name} for these tools; install it (npm install ${name}) or leave those tools out of the set`,
      );
    }
    throw err;
  }
}

/**
 * The providers' own tools (the ones their models are trained on) for `generateText({ tools })`,
 * built with the AI SDK's provider tool factories and answered by workcell's confined tools:
 * `str_replace_based_edit_tool` (`anthropic.tools.textEditor_20250728`), `bash`
 * (`anthropic.tools.bash_20250124`), `apply_patch` (`openai.tools.applyPatch`) and `shell`
 * (`openai.tools.shell`). Each is included when `tools` holds the workcell tools it runs on.
 * Use the entries of the model's provider: Anthropic models take the first two, OpenAI
 * (Responses) models the last two. Needs `@ai-sdk/anthropic` / `@ai-sdk/openai` (optional peer
 * dependencies) for the entries built; a missing package is an error naming it.
 */
export function toAISDKProviderTools(tools: ToolsInput, options: AISDKProviderToolsOptions = {}): AISDKProviderTools {
  const registry = toRegistry(tools);
  const out: AISDKProviderTools = {};
  if (hasTools(registry, ["read_file", "write_file", "edit_file", "list_files"])) {
    const editor = anthropicTextEditor(registry, options.textEditor);
    const { anthropic } = provider("@ai-sdk/anthropic");
    out.str_replace_based_edit_tool = anthropic.tools.textEditor_20250728({
      ...(editor.definition.max_characters === undefined ? {} : { maxCharacters: editor.definition.max_characters }),
      execute: (input: unknown, { abortSignal }: { abortSignal?: AbortSignal }) => editor.handle(input, abortSignal),
      toModelOutput: ({ output }: { output: unknown }) => anthropicModelOutput(output),
    });
  }
  if (hasTools(registry, ["start_process", "read_process", "write_process", "stop_process"])) {
    const sh = anthropicBash(registry, options.bash);
    const { anthropic } = provider("@ai-sdk/anthropic");
    out.bash = anthropic.tools.bash_20250124({
      execute: (input: unknown, { abortSignal }: { abortSignal?: AbortSignal }) => sh.handle(input, abortSignal),
      toModelOutput: ({ output }: { output: unknown }) => anthropicModelOutput(output),
    });
  }
  if (hasTools(registry, ["apply_patch"])) {
    const patcher = openaiApplyPatch(registry);
    const { openai } = provider("@ai-sdk/openai");
    out.apply_patch = openai.tools.applyPatch({
      execute: (input: { operation?: unknown }, { abortSignal }: { abortSignal?: AbortSignal }) => patcher.run(input?.operation, abortSignal),
    });
  }
  if (hasTools(registry, ["run_command"])) {
    const sh = openaiShell(registry);
    const { openai } = provider("@ai-sdk/openai");
    out.shell = openai.tools.shell({
      execute: async (input: { action?: unknown }, { abortSignal }: { abortSignal?: AbortSignal }) => {
        const r = await sh.run(input?.action, abortSignal);
        return {
          output: r.output.map((o) => ({
            stdout: o.stdout,
            stderr: o.stderr,
            outcome: o.outcome.type === "timeout" ? { type: "timeout" as const } : { type: "exit" as const, exitCode: o.outcome.exit_code },
          })),
        };
      },
    });
  }
  return out;
}
