// `workcell/ai`: workcell's tools as Vercel AI SDK tools (`generateText`, `streamText`, agents).
// Needs the optional peer dependency `ai` (6 or 7); the main entry never loads it.
import { jsonSchema, tool, type JSONSchema7, type Tool as AITool } from "ai";
import { ToolCallError, runToolCall, toRegistry, type ToolsInput } from "./common.js";
import { ToolError, abortError, isAbortError } from "../errors.js";
import { gateHooksOf, type ApprovalRequest } from "../approval.js";
import { effectOf, type ToolEffect } from "../tool.js";

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

/** Most approval requests kept between the SDK's request and its response. */
export const MAX_PENDING_APPROVALS = 256;

/**
 * Converts tools (or a registry) into the record `generateText({ tools })` takes, keyed by tool
 * name. Each tool keeps its description and JSON Schema; `execute` validates the input with
 * the tool's own checks, runs it with the SDK's `abortSignal`, and returns the tool's output
 * object.
 */
export function toAISDKTools(tools: ToolsInput, options: AISDKToolsOptions = {}): Record<string, AITool<unknown, unknown>> {
  const registry = toRegistry(tools);
  const errors = options.errors ?? "throw";
  const asks = options.needsApproval ?? {};
  if (typeof asks !== "object" || asks === null) throw new TypeError("workcell: toAISDKTools option needsApproval must be an object such as { write: true }");
  for (const [k, v] of Object.entries(asks)) {
    if (!["read", "write", "process"].includes(k) || typeof v !== "boolean") {
      throw new TypeError(`workcell: toAISDKTools option needsApproval.${k} must be a boolean (keys: read, write, process)`);
    }
  }
  // What the SDK asked about, by tool call id: the request (preview) the approved call is held
  // to, or the failure the preview met (then the SDK does not ask, and execute reports it).
  const pending = new Map<string, { request?: ApprovalRequest; error?: unknown }>();
  const keep = (id: string, entry: { request?: ApprovalRequest; error?: unknown }) => {
    pending.delete(id);
    pending.set(id, entry);
    while (pending.size > MAX_PENDING_APPROVALS) pending.delete(pending.keys().next().value as string);
  };
  const out: Record<string, AITool<unknown, unknown>> = {};
  for (const t of registry.list()) {
    const hooks = gateHooksOf(t);
    const sdkAsks = asks[effectOf(t)] === true && hooks !== undefined;
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
              // stays the one the call is held to (a fresh preview would approve a later state).
              if (pending.get(toolCallId)?.request) return true;
              let valid: unknown;
              try {
                valid = t.validate(input);
              } catch {
                return false; // execute reports the invalid input
              }
              if (hooks!.decide(valid) === "deny") return false; // execute reports the refusal
              try {
                const request = await hooks!.request(valid, undefined);
                keep(toolCallId, { request });
                options.onApprovalRequest?.({ ...request, toolCallId });
                return true;
              } catch (error) {
                keep(toolCallId, { error });
                return false;
              }
            },
          }
        : {}),
      execute: async (input, { abortSignal, toolCallId }) => {
        if (sdkAsks) {
          const entry = pending.get(toolCallId);
          pending.delete(toolCallId);
          if (entry?.error !== undefined) return fail(toolCallId, entry.error);
          if (entry?.request) {
            if (abortSignal?.aborted) throw abortError(abortSignal);
            try {
              const valid = t.validate(input);
              return (await hooks!.runApproved(valid, { signal: abortSignal ?? new AbortController().signal }, entry.request)) as unknown;
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
            return fail(
              toolCallId,
              new ToolError("APPROVAL_DENIED", "this call was not approved through this tool set (its approval request is unknown or expired)", {
                hint: "do not retry the same call unchanged; call the tool again so that the user is asked",
              }),
            );
          }
        }
        const result = await runToolCall(registry, t.name, toolCallId, input, abortSignal);
        if (result.isError && errors === "throw") throw new ToolCallError(result);
        return JSON.parse(result.content) as unknown;
      },
    });
  }
  return out;
}
