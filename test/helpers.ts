// Shared helpers for the Vitest suite. Every test works in its own temporary parent
// directory: ROOT is the workspace, and anything next to it stands for "outside".
import { mkdir, mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";
import type { ToolCall, ToolContext } from "../dist/index.js";

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
