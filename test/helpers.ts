// Shared helpers for the Vitest suite. Every test works in its own temporary parent
// directory: ROOT is the workspace, and anything next to it stands for "outside".
import { mkdir, mkdtemp, readdir, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect } from "vitest";
import { ToolError } from "../dist/index.js";
import type { Tool, ToolCall, ToolContext } from "../dist/index.js";

const cleanups: string[] = [];

afterEach(async () => {
  while (cleanups.length) await rm(cleanups.pop()!, { recursive: true, force: true });
});

/** A fresh temporary parent with a ROOT directory inside; removed after the test. */
export async function tempWorkspace(): Promise<{ parent: string; root: string }> {
  const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-test-")));
  const root = join(parent, "ROOT");
  await mkdir(root);
  cleanups.push(parent);
  return { parent, root };
}

export function ctx(signal: AbortSignal = new AbortController().signal): ToolContext {
  return { signal };
}

export function call(name: string, args: unknown, id = `call-${name}`): ToolCall {
  return { type: "toolCall", id, name, arguments: args };
}

/** Parses a ToolResult's content. */
export function content(result: { content: string }): any {
  return JSON.parse(result.content);
}

/** Expects `fn` to throw a TOOL_ARGUMENTS_INVALID ToolError with a hint; returns it. */
export function invalid(fn: () => unknown): ToolError {
  let caught: unknown;
  try {
    fn();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(ToolError);
  expect((caught as ToolError).code).toBe("TOOL_ARGUMENTS_INVALID");
  expect((caught as ToolError).hint).toBeTruthy();
  return caught as ToolError;
}

/** The rejection of `p`; fails when `p` resolves. */
export async function rejection(p: Promise<unknown>): Promise<any> {
  return p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
}

/** Every path beneath `dir`, relative, sorted; never follows symlinks (Node 20's recursive readdir does). */
export async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  async function go(d: string, rel: string): Promise<void> {
    for (const entry of await readdir(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      out.push(r);
      if (entry.isDirectory()) await go(join(d, entry.name), r);
    }
  }
  await go(dir, "");
  return out.sort();
}

/** A workspace holding src/a.txt ("alpha\n") and a symlink `link` to secret.txt outside it. */
export async function workspaceWithFile(): Promise<{ parent: string; root: string }> {
  const ws = await tempWorkspace();
  await mkdir(join(ws.root, "src"));
  await writeFile(join(ws.root, "src", "a.txt"), "alpha\n");
  await writeFile(join(ws.parent, "secret.txt"), "TOP-SECRET-VALUE");
  await symlink("../secret.txt", join(ws.root, "link"));
  return ws;
}

/**
 * A tool named "slow" whose call waits until its signal aborts, then rejects with an AbortError:
 * `running` settles when a call started, `signal` is that call's signal.
 */
export function waitingTool(): { tool: Tool<string, unknown, unknown>; running: Promise<void>; readonly signal: AbortSignal | undefined } {
  let toolSignal: AbortSignal | undefined;
  let started!: () => void;
  const running = new Promise<void>((r) => (started = r));
  const tool: Tool<string, unknown, unknown> = {
    name: "slow",
    description: "waits until it is cancelled",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    validate: (input) => input,
    execute: (_input, { signal }) =>
      new Promise((_resolve, reject) => {
        toolSignal = signal;
        started();
        signal.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" })), { once: true });
      }),
  };
  return {
    tool,
    running,
    get signal() {
      return toolSignal;
    },
  };
}

/** An MCP approver attached to a stand-in server whose client can elicit; `asked` holds the messages. */
export async function mcpApprover() {
  const { createMcpApprover } = await import("workcell/mcp");
  const approver = createMcpApprover();
  const asked: string[] = [];
  approver.attach({
    getClientCapabilities: () => ({ elicitation: {} }),
    elicitInput: async (params: { message: string }) => {
      asked.push(params.message);
      return { action: "accept", content: { approve: true } };
    },
  } as never);
  return { approve: approver.approve, asked };
}
