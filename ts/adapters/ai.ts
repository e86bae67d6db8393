// `workcell/ai`: workcell's tools as Vercel AI SDK tools (`generateText`, `streamText`, agents).
// Needs the optional peer dependency `ai` (6 or 7); the main entry never loads it.
import { createHash } from "node:crypto";
import type { JSONSchema7, Tool as AITool } from "ai";
import { isImageOutput } from "../image.js";
import { ToolCallError, runToolCall, toRegistry, type ToolsInput } from "./common.js";
import { progressive } from "./progressive.js";
import { checkOptions, option, type OptionSpecOf } from "../options.js";
import { textEditor as anthropicTextEditor, bash as anthropicBash, type AnthropicToolAnswer, type BashOptions, type TextEditorOptions } from "./anthropic.js";
import { applyPatch as openaiApplyPatch, shell as openaiShell } from "./openai.js";
import { hasTools } from "./provider-tools.js";
import { gateHooksOf, type ApprovalRequest } from "../approval.js";
import { ToolError, abortError, isAbortError, type ToolErrorJSON } from "../errors.js";
import { effectOf, type AnyTool, type ToolEffect, type ToolInput, type ToolNamed, type ToolOutput } from "../tool.js";
import { requirePeer } from "./peer.js";

// The AI SDK: a missing `ai` is an Error saying to install it, when this module loads.
const { jsonSchema, tool } = requirePeer<typeof import("ai")>("ai", "workcell/ai", "ai", " (the Vercel AI SDK, 6 or 7)");

export { ToolCallError };
export type { ToolsInput };

/** How a recoverable failure reaches the SDK (see {@link AISDKToolsOptions.errors}). */
export type AISDKErrors = "throw" | "result";

/** Options of `toAISDKTools`. */
export interface AISDKToolsOptions<Errors extends AISDKErrors = AISDKErrors> {
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
  errors?: Errors;
  /**
   * Ask through the AI SDK's own approval flow (`needsApproval`, a `tool-approval-request`
   * part, your app's `tool-approval-response`) for the calls of these effects, for example
   * `{ write: true, process: true }`. The change is computed when the SDK asks (the request with
   * its summary, diff and hashes goes to `onApprovalRequest`, for your UI), and the approved call
   * runs held to it: a file changed in between is `TARGET_CHANGED`, nothing written. A call a
   * rule denies is not asked (it fails with `APPROVAL_DENIED`). Grants need the tools' own
   * `approve` (the factories' `approvalFor.grant`).
   */
  needsApproval?: Partial<Record<ToolEffect, boolean>>;
  /** Called with each request the SDK is about to ask about (`toolCallId` included). */
  onApprovalRequest?: (request: ApprovalRequest & { toolCallId: string }) => void;
}

/** The options of `toAISDKTools` (see ts/options.ts). */
export const AI_SDK_TOOLS_OPTIONS = {
  errors: option.enum(["throw", "result"], "how a recoverable failure reaches the SDK"),
  needsApproval: option.object(
    {
      read: option.boolean("reading calls ask through the SDK"),
      write: option.boolean("writing calls ask through the SDK"),
      process: option.boolean("process calls ask through the SDK"),
    },
    "which effects ask through the AI SDK's approval flow",
  ),
  onApprovalRequest: option.function("called with each approval request (summary, diff, hashes) for your UI"),
} as const satisfies OptionSpecOf<AISDKToolsOptions>;

/** Most approval requests kept between the SDK's request and its response. */
export const MAX_PENDING_APPROVALS = 256;

/** JSON with every object's keys sorted: the same value gives the same text. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    const o = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(o).sort().map((k) => [k, o[k]]));
  });
}

/** What a kept approval request is found by: the tool, the tool call id and the SHA-256 of the input. */
function approvalKey(tool: string, toolCallId: string, input: unknown): string {
  const hash = createHash("sha256").update(canonicalJson(input) ?? "undefined").digest("hex");
  return `${tool}\u0000${toolCallId}\u0000${hash}`;
}

/**
 * The AI SDK tool made of the workcell tool `T`: its input type, and its output type (with the
 * `{ error }` object when recoverable failures are results, `errors: "result"`).
 */
export type AISDKTool<T extends AnyTool, Errors extends AISDKErrors = "throw"> = AITool<
  ToolInput<T>,
  "result" extends Errors ? ToolOutput<T> | { error: ToolErrorJSON } : ToolOutput<T>
>;

/**
 * What `toAISDKTools` returns: a record keyed by tool name whose entries keep each tool's input
 * and output types (`tools.read_file`; a misspelt name is a type error). For tools typed
 * `AnyTool` (names that are plain strings), a record of every name.
 */
export type AISDKTools<T extends AnyTool, Errors extends AISDKErrors = "throw"> = string extends T["name"]
  ? Record<string, AISDKTool<T, Errors>>
  : { [K in T["name"]]: AISDKTool<ToolNamed<T, K>, Errors> };

/**
 * Converts tools (or a registry) into the record `generateText({ tools })` takes, keyed by tool
 * name. Each tool keeps its description and JSON Schema; `execute` validates the input with
 * the tool's own checks, runs it with the SDK's `abortSignal`, and returns the tool's output
 * object.
 */
export function toAISDKTools<T extends AnyTool, Errors extends AISDKErrors = "throw">(
  tools: ToolsInput<T>,
  options?: AISDKToolsOptions<Errors>,
): AISDKTools<T, Errors>;
export function toAISDKTools(tools: ToolsInput, options: AISDKToolsOptions = {}): Record<string, AITool<unknown, unknown>> {
  checkOptions("toAISDKTools", AI_SDK_TOOLS_OPTIONS, options);
  const registry = toRegistry(tools);
  const errors = options.errors ?? "throw";
  const asks = options.needsApproval ?? {};
  if (typeof asks !== "object" || asks === null) throw new TypeError("workcell: toAISDKTools option needsApproval must be an object such as { write: true }");
  for (const [k, v] of Object.entries(asks)) {
    if (!["read", "write", "process"].includes(k) || typeof v !== "boolean") {
      throw new TypeError(`workcell: toAISDKTools option needsApproval.${k} must be a boolean (keys: read, write, process)`);
    }
  }
  // What the SDK asked about, by tool, tool call id and the hash of the input: the request
  // (preview) the approved call is held to, or the failure the preview met (then the SDK does
  // not ask, and execute reports it). A call with the same id and another input finds nothing:
  // a request is never reused for input it did not show.
  const pending = new Map<string, { request?: ApprovalRequest; error?: unknown }>();
  const keep = (id: string, entry: { request?: ApprovalRequest; error?: unknown }) => {
    pending.delete(id);
    pending.set(id, entry);
    while (pending.size > MAX_PENDING_APPROVALS) pending.delete(pending.keys().next().value as string);
  };
  const out: Record<string, AITool<unknown, unknown>> = {};
  for (const t of registry.list()) {
    const hooks = gateHooksOf(t);
    // read_process, stop_process and list_processes only follow what an approved call started:
    // they run through the tool's gate (its rules and audit) without the SDK asking.
    const sdkAsks = asks[effectOf(t)] === true && hooks !== undefined && !hooks.follows;
    const fail = (toolCallId: string, err: unknown): unknown => {
      if (isAbortError(err)) throw err;
      const te = err instanceof ToolError ? err : new ToolError("IO_ERROR", err instanceof Error ? err.message : String(err));
      const result = { type: "toolResult" as const, id: toolCallId, name: t.name, isError: true, content: JSON.stringify({ error: te.toJSON() }) };
      if (errors === "throw") throw new ToolCallError(result);
      return { error: te.toJSON() };
    };
    out[t.name] = tool<unknown, unknown>({
      description: t.description,
      // No `validate` here: the tool's own `validate` runs inside `execute`, so a bad input gets
      // workcell's TOOL_ARGUMENTS_INVALID with its reason code and hint.
      inputSchema: jsonSchema<unknown>(t.parameters as JSONSchema7),
      ...(sdkAsks
        ? {
            needsApproval: async (input: unknown, { toolCallId }: { toolCallId: string }) => {
              // The SDK asks again when the response comes back: the request already shown
              // for this very input stays the one the call is held to (a fresh preview would
              // approve a later state).
              const key = approvalKey(t.name, toolCallId, input);
              if (pending.get(key)?.request) return true;
              let valid: unknown;
              try {
                valid = t.validate(input);
              } catch {
                return false; // execute reports the invalid input
              }
              if (hooks!.decide(valid) === "deny") return false; // execute reports the refusal
              try {
                const request = await hooks!.request(valid, undefined);
                keep(key, { request });
                options.onApprovalRequest?.({ ...request, toolCallId });
                return true;
              } catch (error) {
                keep(key, { error });
                return false;
              }
            },
          }
        : {}),
      // The promise of the result, which the SDK iterates for preliminary results: `{ progress }`
      // while the call runs, then the result (see ./progressive.ts).
      execute: (input, { abortSignal, toolCallId }) => progressive(async (onProgress) => {
        if (sdkAsks) {
          const key = approvalKey(t.name, toolCallId, input);
          const entry = pending.get(key);
          pending.delete(key);
          if (entry !== undefined) {
            if (abortSignal?.aborted) throw abortError(abortSignal);
            let valid: unknown;
            try {
              valid = t.validate(input);
            } catch (err) {
              return fail(toolCallId, err);
            }
            try {
              // Both run through the tool's gate, which reports the audit event.
              if (entry.error !== undefined) return await hooks!.refuse(valid, entry.error);
              return (await hooks!.runApproved(valid, { signal: abortSignal ?? new AbortController().signal, onProgress }, entry.request!)) as unknown;
            } catch (err) {
              return fail(toolCallId, err);
            }
          }
          // No request kept for this call: an invalid input or a rule's deny is reported by the
          // normal path; anything else was never shown to the person here (or its request is
          // gone) and does not run unbound.
          let valid: unknown;
          let known = false;
          try {
            valid = t.validate(input);
            known = hooks!.decide(valid) !== "deny";
          } catch {
            known = false;
          }
          if (known) {
            const refusal = new ToolError("APPROVAL_DENIED", "this call was not approved through this tool set (its approval request is unknown or expired, or was for another input)", {
              hint: "do not retry the same call unchanged; call the tool again so that the user is asked",
            });
            try {
              await hooks!.refuse(valid, refusal);
            } catch (err) {
              return fail(toolCallId, err);
            }
          }
        }
        const result = await runToolCall(registry, t.name, toolCallId, input, abortSignal, onProgress);
        if (result.isError && errors === "throw") throw new ToolCallError(result);
        return JSON.parse(result.content) as unknown;
      }),
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

/** `true` when the tools `T` hold every one of `Names`, `false` when not, `boolean` when their names are plain strings. */
type Holds<T extends AnyTool, Names extends string> = string extends T["name"] ? boolean : [Names] extends [T["name"]] ? true : false;
/** The entry `K` of {@link AISDKProviderTools}: present, absent or optional, as `Has` says. */
type ProviderEntry<Has extends boolean, K extends keyof AISDKProviderTools> = boolean extends Has
  ? Pick<AISDKProviderTools, K>
  : Has extends true
    ? Required<Pick<AISDKProviderTools, K>>
    : unknown;

/**
 * What `toAISDKProviderTools(tools)` returns for tools of the type `T`: an entry is present
 * when `T` holds the workcell tools it runs on (for tools typed `AnyTool`, every entry is
 * optional).
 */
export type AISDKProviderToolsOf<T extends AnyTool> = ProviderEntry<Holds<T, "read_file" | "write_file" | "edit_file" | "list_files">, "str_replace_based_edit_tool"> &
  ProviderEntry<Holds<T, "apply_patch">, "apply_patch"> &
  ProviderEntry<Holds<T, "run_command">, "shell"> &
  ProviderEntry<Holds<T, "start_process" | "read_process" | "write_process" | "stop_process">, "bash">;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function provider(name: "@ai-sdk/anthropic" | "@ai-sdk/openai"): any {
  return requirePeer(name, "workcell/ai's toAISDKProviderTools", name, " for these tools (or leave them out of the set)");
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
export function toAISDKProviderTools<T extends AnyTool>(tools: ToolsInput<T>, options?: AISDKProviderToolsOptions): AISDKProviderToolsOf<T>;
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
