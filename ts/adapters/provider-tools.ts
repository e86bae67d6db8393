// What the helpers for the providers' own tools (workcell/anthropic, workcell/openai) share:
// finding the workcell tools they run on, calling one through its own validate + execute (so
// the path grammar, the guard, approval, the sandbox and the limits all apply), and turning an
// absolute path the model was prompted with into a workspace path.
import { ErrorCode, ToolError, abortError, isAbortError } from "../errors.js";
import { ToolRegistry } from "../registry.js";
import { workspaceRootOf, type AnyTool } from "../tool.js";
import { toRegistry, type ToolsInput } from "./common.js";

/** The outcome of one call of a workcell tool. */
export type Called<T> = { ok: true; value: T } | { ok: false; error: ToolError };

/** The tools named `names` in `tools`; a `TypeError` naming the helper and what is missing. */
export function requireTools(helper: string, tools: ToolsInput, names: readonly string[], hint: string): ToolRegistry {
  if (!(tools instanceof ToolRegistry) && !Array.isArray(tools)) {
    throw new TypeError(`workcell: ${helper} takes an array of tools or a ToolRegistry`);
  }
  const registry = toRegistry(tools);
  const missing = names.filter((n) => registry.get(n) === undefined);
  if (missing.length > 0) {
    throw new TypeError(`workcell: ${helper} needs the tools ${missing.join(", ")}; ${hint}`);
  }
  return registry;
}

/** Whether `tools` holds every tool in `names`. */
export function hasTools(tools: ToolsInput, names: readonly string[]): boolean {
  const registry = toRegistry(tools);
  return names.every((n) => registry.get(n) !== undefined);
}

/**
 * Calls `name` with `input` through the tool's own `validate` and `execute`. Resolves with the
 * output or the `ToolError`; rejects only with an AbortError (cancellation).
 */
export async function callTool<T = unknown>(registry: ToolRegistry, name: string, input: unknown, signal: AbortSignal | undefined): Promise<Called<T>> {
  const s = signal ?? new AbortController().signal;
  if (s.aborted) throw abortError(s);
  const tool: AnyTool | undefined = registry.get(name);
  if (tool === undefined) {
    return { ok: false, error: new ToolError(ErrorCode.TOOL_NOT_FOUND, `no tool is named ${JSON.stringify(name)}`) };
  }
  try {
    const valid: unknown = tool.validate(input);
    return { ok: true, value: (await tool.execute(valid, { signal: s })) as T };
  } catch (err) {
    if (isAbortError(err)) throw err;
    if (s.aborted) throw abortError(s);
    if (err instanceof ToolError) return { ok: false, error: err };
    return {
      ok: false,
      error: new ToolError(ErrorCode.IO_ERROR, `unexpected failure: ${err instanceof Error ? err.message : String(err)}`, {
        hint: "the tool failed unexpectedly; try again or report the problem to the user",
      }),
    };
  }
}

/** Validates `input` with the tool's own `validate` only (no effect). */
export function validateWith(registry: ToolRegistry, name: string, input: unknown): ToolError | undefined {
  const tool = registry.get(name);
  if (tool === undefined) return new ToolError(ErrorCode.TOOL_NOT_FOUND, `no tool is named ${JSON.stringify(name)}`);
  try {
    tool.validate(input);
    return undefined;
  } catch (err) {
    if (err instanceof ToolError) return err;
    return new ToolError(ErrorCode.IO_ERROR, `unexpected failure: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** The canonical workspace root reported by the first of `names` that reports one. */
export function rootOf(registry: ToolRegistry, names: readonly string[]): string | undefined {
  for (const n of names) {
    const root = workspaceRootOf(registry.get(n));
    if (root !== undefined) return root;
  }
  return undefined;
}

/**
 * A model's path as a workspace path. A relative path is returned as it is (the tool's own
 * grammar checks it). An absolute path is accepted only when it starts with the workspace's
 * canonical path followed by `/`: that prefix is removed and the rest goes through the
 * grammar like any relative path (so `/ws/../etc` is still refused for its `..`). Every other
 * absolute path is `PATH_ESCAPES_WORKSPACE`.
 */
export function workspacePath(path: unknown, root: string | undefined): { ok: true; path: unknown } | { ok: false; error: ToolError } {
  if (typeof path !== "string" || !path.startsWith("/")) return { ok: true, path };
  if (root !== undefined) {
    const prefix = root.endsWith("/") ? root : `${root}/`;
    if (path.startsWith(prefix)) {
      const rest = path.slice(prefix.length);
      // The root itself (`/ws/`) is the root directory.
      return { ok: true, path: rest.length === 0 ? "." : rest };
    }
    if (path === root) return { ok: true, path: "." };
  }
  return {
    ok: false,
    error: new ToolError(ErrorCode.PATH_ESCAPES_WORKSPACE, `${path} is outside the workspace`, {
      hint:
        root === undefined
          ? "paths are relative to the workspace root, such as src/index.ts"
          : `paths are relative to the workspace root ${root}, such as src/index.ts (or absolute beneath ${root}/)`,
    }),
  };
}

/** `Error: <code>: <message>` and the hint on the next line: a failure as text for a model. */
export function errorText(error: ToolError): string {
  const head = `Error: ${error.code}: ${error.message}`;
  return error.hint ? `${head}\n${error.hint}` : head;
}

/** A cryptographically random token of `bytes` bytes, hex. */
export function randomToken(bytes = 16): string {
  const b = new Uint8Array(bytes);
  globalThis.crypto.getRandomValues(b);
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/**
 * `text` cut to at most `max` UTF-16 code units: its start and end with a marker naming what
 * was left out in between (the marker counts toward `max`). `max` 0 gives "".
 */
export function cutMiddle(text: string, max: number): { text: string; omitted: number } {
  if (text.length <= max) return { text, omitted: 0 };
  if (max <= 0) return { text: "", omitted: text.length };
  const marker = (n: number) => `\n[${n} characters omitted]\n`;
  // The marker's length depends on the count; one pass with the largest count is enough.
  const room = max - marker(text.length).length;
  if (room <= 0) return { text: text.slice(0, max), omitted: text.length - max };
  let head = Math.ceil(room / 2);
  let tail = room - head;
  // Never split a surrogate pair.
  if (head > 0 && /[\uD800-\uDBFF]/.test(text[head - 1]!)) head -= 1;
  if (tail > 0 && /[\uDC00-\uDFFF]/.test(text[text.length - tail]!)) tail -= 1;
  const omitted = text.length - head - tail;
  return { text: text.slice(0, head) + marker(omitted) + text.slice(text.length - tail), omitted };
}
