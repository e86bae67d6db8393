import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolError,
  ToolRegistry,
  createCodingTools,
  createReadTool,
  executeToolCall,
  isAbortError,
  type Tool,
} from "../dist/index.js";
import { call, content, tempWorkspace } from "./helpers.js";

function fakeTool(name: string, execute: Tool<string, unknown, unknown>["execute"]): Tool<string, unknown, unknown> {
  return {
    name,
    description: "test tool",
    parameters: { type: "object", properties: {}, additionalProperties: false },
    validate: (input) => input,
    execute,
  };
}

describe("ToolRegistry", () => {
  test("refuses duplicate names and lists definitions", async () => {
    const { root } = await tempWorkspace();
    const read = createReadTool(root);
    expect(() => new ToolRegistry([read, createReadTool(root)])).toThrow(/duplicate/);
    const registry = new ToolRegistry([read]);
    expect(registry.get("read_file")).toBe(read);
    // A literal name the registry does not hold is a type error; a name known only at run time
    // (a model's) is looked up.
    expect(registry.get("nope" as string)).toBeUndefined();
    expect(registry.list()).toEqual([read]);
    expect(registry.definitions()).toEqual([{ name: "read_file", description: read.description, parameters: read.parameters }]);
  });

  test("every tool has an object schema without additional properties and a description", async () => {
    const { root } = await tempWorkspace();
    for (const tool of createCodingTools(root)) {
      expect(tool.parameters.type).toBe("object");
      expect(tool.parameters.additionalProperties).toBe(false);
      expect(tool.description.length).toBeGreaterThan(40);
      expect(tool.name).toMatch(/^[a-z_]+$/);
    }
  });
});

describe("executeToolCall", () => {
  test("serializes the output on success", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hi");
    const registry = new ToolRegistry([createReadTool(root)]);
    const result = await executeToolCall(registry, call("read_file", { path: "a.txt" }, "c1"), new AbortController().signal);
    const output = { path: "a.txt", content: "hi", bytes: 2, hash: "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4" };
    expect(result).toEqual({ type: "toolResult", id: "c1", name: "read_file", isError: false, content: JSON.stringify(output), output });
  });

  test("executeToolCall_takes_a_call_without_type_or_signal_and_gives_the_parsed_output_or_error_beside_content", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hi");
    const registry = new ToolRegistry(createCodingTools(root));
    const ok = await executeToolCall(registry, { id: "1", name: "read_file", arguments: { path: "a.txt" } });
    expect(ok.isError).toBe(false);
    if (ok.isError) return;
    expect(ok.output).toEqual(JSON.parse(ok.content));
    expect(ok.output.hash).toMatch(/^[0-9a-f]{64}$/);
    for (const args of [{ path: "missing.txt" }, { path: "../x" }]) {
      const failed = await executeToolCall(registry, { id: "2", name: "read_file", arguments: args });
      expect(failed.isError).toBe(true);
      if (!failed.isError) return;
      expect(failed.error).toEqual(JSON.parse(failed.content).error);
      expect(failed).not.toHaveProperty("output");
    }
    const unknown = await executeToolCall(registry, { id: "3", name: "rm_rf" as string, arguments: {} });
    expect(unknown.isError && unknown.error.code).toBe("TOOL_NOT_FOUND");
  });

  test("a_tool_set_reaches_its_tools_by_name_and_still_iterates_as_tools", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const names = tools.map((t) => t.name);
    expect(names).toContain("read_file");
    for (const t of tools) expect((tools as unknown as Record<string, unknown>)[t.name]).toBe(t);
    expect(tools.read_file.name).toBe("read_file");
    expect(tools.start_process.name).toBe("start_process");
    // The names are not elements: the array is what it was (keys, JSON, spread, registry).
    expect(Object.keys(tools)).toEqual(names.map((_, i) => String(i)));
    expect(Array.isArray(tools)).toBe(true);
    expect([...tools]).toHaveLength(names.length);
    expect(new ToolRegistry(tools).list()).toEqual([...tools]);
    expect(JSON.parse(JSON.stringify(tools.map((t) => t.name)))).toEqual(names);
    await new ToolRegistry(tools).close();
  });

  test("accepts arguments given as JSON text", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hi");
    const registry = new ToolRegistry([createReadTool(root)]);
    const result = await executeToolCall(registry, call("read_file", '{"path":"a.txt"}'), new AbortController().signal);
    expect(result.isError).toBe(false);
  });

  test("an unknown tool is TOOL_NOT_FOUND naming the tools there are", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry([createReadTool(root)]);
    const result = await executeToolCall(registry, call("rm_rf", {}), new AbortController().signal);
    expect(result.isError).toBe(true);
    expect(content(result).error).toMatchObject({ code: "TOOL_NOT_FOUND", hint: expect.stringContaining("read_file") });
  });

  test.each([
    [null, "INVALID_ARGUMENTS_SHAPE"],
    [[], "INVALID_ARGUMENTS_SHAPE"],
    ["not json", "INVALID_ARGUMENTS_SHAPE"],
    [{}, "INVALID_ARGUMENTS_SHAPE"],
    [{ path: 1 }, "INVALID_ARGUMENTS_SHAPE"],
    [{ path: "a", extra: true }, "INVALID_ARGUMENTS_SHAPE"],
    [{ path: "../outside.txt" }, "INVALID_RELATIVE_PATH"],
    [{ path: "C:\\Windows" }, "INVALID_RELATIVE_PATH"],
    [{ path: "a\ud800" }, "INVALID_UNICODE"],
  ])("invalid arguments %j: TOOL_ARGUMENTS_INVALID / %s with a hint", async (args, reason) => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry([createReadTool(root)]);
    const result = await executeToolCall(registry, call("read_file", args), new AbortController().signal);
    expect(result.isError).toBe(true);
    const { error } = content(result);
    expect(error.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(error.message).toBe(reason);
    expect(typeof error.hint).toBe("string");
    expect(error.hint.length).toBeGreaterThan(10);
  });

  test("an aborted signal rejects with AbortError before any effect", async () => {
    let ran = false;
    const registry = new ToolRegistry([fakeTool("t", async () => ((ran = true), {}))]);
    const ac = new AbortController();
    ac.abort();
    const err = await executeToolCall(registry, call("t", {}), ac.signal).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    expect(ran).toBe(false);
  });

  test("cancellation during execute rejects with AbortError", async () => {
    const ac = new AbortController();
    const registry = new ToolRegistry([
      fakeTool("slow", (_input, { signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" }))))),
    ]);
    const pending = executeToolCall(registry, call("slow", {}), ac.signal);
    setTimeout(() => ac.abort(), 10);
    const err = await pending.catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
  });

  test("a ToolError becomes the error envelope; an unexpected throw is IO_ERROR, never a rejection", async () => {
    const registry = new ToolRegistry([
      fakeTool("fails", async () => {
        throw new ToolError("FILE_NOT_FOUND", "x is missing", { hint: "look elsewhere", details: { a: 1 } });
      }),
      fakeTool("bug", async () => {
        throw new TypeError("boom");
      }),
    ]);
    const signal = new AbortController().signal;
    expect(content(await executeToolCall(registry, call("fails", {}), signal))).toEqual({
      error: { code: "FILE_NOT_FOUND", message: "x is missing", hint: "look elsewhere", details: { a: 1 } },
    });
    const bug = content(await executeToolCall(registry, call("bug", {}), signal));
    expect(bug.error.code).toBe("IO_ERROR");
    expect(bug.error.hint).toBeTruthy();
  });

  test("the course failure experiment: ../outside.txt is refused and nothing is read", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(parent, "outside.txt"), "secret");
    const registry = new ToolRegistry([createReadTool(root)]);
    const result = await executeToolCall(registry, call("read_file", { path: "../outside.txt" }), new AbortController().signal);
    expect(content(result)).toMatchObject({ error: { code: "TOOL_ARGUMENTS_INVALID", message: "INVALID_RELATIVE_PATH" } });
    expect(result.content).not.toContain("secret");
  });
});
