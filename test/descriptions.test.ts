// Compact descriptions (the default) and full ones: the budget of the coding set's definitions,
// the same parameters structure in both styles, the sandbox sentence said once, and the limits
// a compact description leaves out found in the hints of the errors a model meets.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ToolRegistry, createCodingTools, createNodeProcessTool, createReadTool, createRunCommandTool, executeToolCall } from "../dist/index.js";
import type { JsonSchema } from "../dist/index.js";
import { call, tempWorkspace } from "./helpers.js";

function bytesPerTool(root: string, options?: Parameters<typeof createCodingTools>[1]): number {
  const defs = new ToolRegistry(createCodingTools(root, options)).definitions();
  return Buffer.byteLength(JSON.stringify(defs)) / defs.length;
}

/** The schema without its descriptions: what validation sees. */
function structure(schema: JsonSchema): unknown {
  return JSON.parse(JSON.stringify(schema, (k, v) => (k === "description" ? undefined : v)));
}

async function hintOf(registry: ToolRegistry, name: string, args: unknown): Promise<{ code: string; message: string; hint: string }> {
  const result = await executeToolCall(registry, call(name, args), new AbortController().signal);
  expect(result.isError, result.content).toBe(true);
  return JSON.parse(result.content).error;
}

describe("descriptions", () => {
  it("compact is the default and the coding set's definitions average at most 700 bytes per tool", async () => {
    const { root } = await tempWorkspace();
    const compact = bytesPerTool(root);
    expect(compact).toBeLessThanOrEqual(700);
    expect(bytesPerTool(root, { descriptions: "compact" })).toBe(compact);
    expect(bytesPerTool(root, { descriptions: "full" })).toBeGreaterThan(compact * 1.5);
  });

  it("both styles have the same parameters structure", async () => {
    const { root } = await tempWorkspace();
    const full = createCodingTools(root, { descriptions: "full" });
    const compact = createCodingTools(root);
    expect(compact.map((t) => t.name)).toEqual(full.map((t) => t.name));
    for (const [i, t] of compact.entries()) {
      expect(structure(t.parameters), t.name).toEqual(structure(full[i]!.parameters));
      expect(t.description.length, t.name).toBeLessThan(full[i]!.description.length);
      expect(t.description.length, t.name).toBeGreaterThan(30);
    }
  });

  it("a tool's own descriptions option wins over the coding set's", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root, { descriptions: "full", read: { descriptions: "compact" } });
    expect(tools.find((t) => t.name === "read_file")!.description).toBe(createReadTool(root).description);
    expect(tools.find((t) => t.name === "list_files")!.description).toMatch(/tree order/);
  });

  it("the sandbox sentence is said once in the coding set, and by a process tool created alone", async () => {
    const { root } = await tempWorkspace();
    const text = createCodingTools(root).map((t) => t.description).join("\n");
    expect(text.match(/the network is blocked/g)).toHaveLength(1);
    expect(text.match(/Sandboxed as run_command/g)).toHaveLength(2);
    expect(createNodeProcessTool(root).description).toMatch(/the network is blocked/);
    // A tool whose sandbox differs from run_command's says its own.
    const mixed = createCodingTools(root, { nodeProcess: { network: true } });
    expect(mixed.find((t) => t.name === "node_process")!.description).toMatch(/the network is allowed/);
    const off = createCodingTools(root, { runCommand: { sandbox: "off" } });
    expect(off.find((t) => t.name === "run_command")!.description).toMatch(/without a sandbox/);
    expect(off.find((t) => t.name === "run_tests")!.description).toMatch(/the network is blocked/);
  });

  it("a host's allow-list stays in the compact description (the model cannot guess it)", async () => {
    const { root } = await tempWorkspace();
    expect(createRunCommandTool(root, { allowCommands: ["git", "npm"] }).description).toContain("Only these programs may run: git, npm");
  });

  it("the limits the compact descriptions leave out are in the hints of the errors a model gets", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "big.txt"), "line\n".repeat(20_000));
    await writeFile(join(root, "twice.txt"), "x\nx\n");
    const registry = new ToolRegistry(createCodingTools(root, { processes: { timeoutMs: 200 } }));
    expect((await hintOf(registry, "read_file", { path: "big.txt" })).hint).toMatch(/offset.*limit.*nextOffset/);
    expect((await hintOf(registry, "read_file", { path: "/etc/passwd" })).hint).toMatch(/relative to the workspace/);
    expect((await hintOf(registry, "write_file", { path: "a", content: "a".repeat(70_000) })).hint).toMatch(/at most 65536/);
    expect((await hintOf(registry, "write_file", { path: ".git/config", content: "" })).hint).toMatch(/\*\*\/\.git\/\*\*/);
    expect((await hintOf(registry, "edit_file", { path: "twice.txt", edits: [{ oldText: "x", newText: "y" }] })).hint).toMatch(/exactly once/);
    expect((await hintOf(registry, "edit_file", { path: "big.txt", edits: [{ oldText: "x", newText: "y" }] })).hint).toMatch(/at most 65536/);
    expect((await hintOf(registry, "node_process", { source: "x".repeat(40_000) })).hint).toMatch(/at most 32768/);
    expect((await hintOf(registry, "node_process", { source: "1", arguments: Array(40).fill("a") })).hint).toMatch(/at most 32/);
    expect((await hintOf(registry, "run_command", { argv: ["/bin/ls"] })).hint).toMatch(/bare name/);
    expect((await hintOf(registry, "run_command", { argv: ["sudo", "ls"] })).hint).toMatch(/deny list/);
    expect((await hintOf(registry, "run_command", { argv: ["sh", "-c", "echo > /etc/x"] })).hint).toMatch(/relative path inside the workspace/);
    expect((await hintOf(registry, "run_command", { argv: ["sleep", "5"] })).hint).toMatch(/larger timeoutMs \(at most 600000\)/);
    expect((await hintOf(registry, "run_tests", { runner: "node", args: ["--reporter", "x"] })).hint).toMatch(/builds the node command itself/);
    expect((await hintOf(registry, "search_files", { pattern: "(" })).hint).toMatch(/literal: true/);
  });
});
