// Every tool's outputSchema against its real results: each tool of createCodingTools runs its
// success cases (whole and windowed reads, a truncated listing, a failing test run, ...) and
// every result must validate against the schema the tool declares (the schema MCP lists and
// structuredContent is checked against). A field added, dropped or retyped fails here.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, createCodingTools, executeToolCall, type AnyTool } from "../dist/index.js";
import { call, content, tempWorkspace } from "./helpers.js";

const validator = new AjvJsonSchemaValidator();

function check(tool: AnyTool, output: unknown): void {
  const result = validator.getValidator(tool.outputSchema as Record<string, unknown>)(output);
  if (!result.valid) throw new Error(`${tool.name}: the result does not match its outputSchema: ${result.errorMessage}\n${JSON.stringify(output).slice(0, 2000)}`);
}

/** Success cases per tool: each is the arguments of one call that must succeed. */
async function cases(root: string): Promise<Record<string, unknown[]>> {
  await mkdir(join(root, "src/deep/er"), { recursive: true });
  await writeFile(join(root, "src/a.ts"), "export const a = 1;\n// TODO: more\n");
  await writeFile(join(root, "big.txt"), "line\n".repeat(20_000));
  for (let i = 0; i < 12; i++) await writeFile(join(root, `src/deep/f${i}.txt`), `needle ${i}\n`);
  await writeFile(join(root, "pass.test.mjs"), "import test from 'node:test';\ntest('ok', () => {});\n");
  await writeFile(join(root, "fail.test.mjs"), "import test from 'node:test';\ntest('bad', () => { throw new Error('boom'); });\n");
  await writeFile(join(root, "edit.txt"), "one\ntwo\n");
  await writeFile(join(root, "patch.txt"), "alpha\n");
  await writeFile(join(root, "move.txt"), "m\n");
  await writeFile(join(root, "gone.txt"), "g\n");
  return {
    read_file: [{ path: "src/a.ts" }, { path: "big.txt", offset: 1, limit: 10 }, { path: "big.txt", offset: 19_995 }],
    list_files: [{}, { path: "src", depth: 3 }, { limit: 2 }],
    search_files: [{ pattern: "needle" }, { pattern: "needle", limit: 3 }, { pattern: "nothing-matches-this" }],
    write_file: [{ path: "new.txt", content: "new\n" }, { path: "new.txt", content: "again\n" }],
    edit_file: [{ path: "edit.txt", edits: [{ oldText: "two", newText: "three" }] }],
    apply_patch: [
      {
        patch:
          "*** Begin Patch\n*** Add File: added.txt\n+hi\n*** Update File: patch.txt\n*** Move to: patched.txt\n@@\n-alpha\n+beta\n*** End Patch\n",
      },
      { patch: "*** Begin Patch\n*** Delete File: added.txt\n*** End Patch\n" },
    ],
    move_file: [{ from: "move.txt", to: "moved/move.txt" }],
    delete_file: [{ path: "gone.txt" }],
    make_directory: [{ path: "made/here" }, { path: "made/here" }],
    node_process: [{ source: "console.log('out'); console.error('err');" }, { source: "process.exit(3)" }],
    run_command: [
      { argv: ["echo", "hi"] },
      { argv: ["sh", "-c", "exit 2"] },
      { argv: ["echo", "clamped"], timeoutMs: 999_999_999 },
      { argv: ["sh", "-c", "echo staged > staged.txt; echo other > other.txt"], stage: true },
    ],
    run_tests: [{ runner: "node", args: ["pass.test.mjs"] }, { runner: "node", args: ["fail.test.mjs"] }],
    // p1 exits at once; p2 (cat) waits for input, gets some and is stopped.
    start_process: [{ argv: ["echo", "hi"], waitMs: 2000 }, { argv: ["cat"], waitMs: 0, watch: ["x"] }],
    read_process: [{ id: "p1" }, { id: "p2", waitMs: 0 }],
    write_process: [{ id: "p2", input: "x\n" }],
    stop_process: [{ id: "p2" }],
    list_processes: [{}],
    // The staged run above made s1 (its hash is read when the call is made).
    apply_staged: [() => ({ id: "s1", expectedHash: staged.hash })],
    discard_staged: [{ id: "s2" }],
  };
}

/** The staged change of the run_command case, once it ran. */
const staged = { hash: "" };

describe("outputSchema", () => {
  test("every tool declares an object outputSchema, defined once on the tool object", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    for (const tool of tools) {
      expect(tool.outputSchema, tool.name).toMatchObject({ type: "object" });
      // One definition: two tool sets share the same schema object.
      expect(createCodingTools(root).find((t) => t.name === tool.name)!.outputSchema).toBe(tool.outputSchema);
    }
  });

  test("the real results of every tool validate against its outputSchema", { timeout: 120_000 }, async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const registry = new ToolRegistry(tools);
    onTestFinished(() => registry.close());
    const all = await cases(root);
    expect(Object.keys(all).sort()).toEqual(tools.map((t) => t.name).sort());
    for (const tool of tools) {
      for (const raw of all[tool.name]!) {
        const args = typeof raw === "function" ? (raw as () => unknown)() : raw;
        // discard_staged of an applied change is STAGED_NOT_FOUND: a second staged run for it.
        if (tool.name === "discard_staged") await executeToolCall(registry, call("run_command", { argv: ["sh", "-c", "echo d > d.txt"], stage: true }), new AbortController().signal);
        const result = await executeToolCall(registry, call(tool.name, tool.name === "discard_staged" ? { id: "s2" } : args), new AbortController().signal);
        expect(result.isError, `${tool.name} ${JSON.stringify(args)}: ${result.content}`).toBe(false);
        const out = content(result);
        if (out.staged) staged.hash = out.staged.hash;
        check(tool, out);
      }
    }
  });

  test("a result that drifts from the schema is caught (an extra field, a missing one, a wrong type)", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "a\n");
    const read = createCodingTools(root).find((t) => t.name === "read_file")!;
    const good = await read.execute({ path: "a.txt" }, { signal: new AbortController().signal });
    check(read, good);
    expect(() => check(read, { ...good, extra: 1 })).toThrow(/outputSchema/);
    const { hash: _hash, ...missing } = good as unknown as Record<string, unknown>;
    expect(() => check(read, missing)).toThrow(/outputSchema/);
    expect(() => check(read, { ...good, bytes: "2" })).toThrow(/outputSchema/);
    const run = createCodingTools(root).find((t) => t.name === "run_command")!;
    const out = await run.execute({ argv: ["echo"] }, { signal: new AbortController().signal });
    check(run, out);
    expect(() => check(run, { ...(out as object), sandbox: { ...(out as { sandbox: object }).sandbox, network: "sideways" } })).toThrow(/outputSchema/);
  });

  test("the sandbox report's schema is exact: limits required, no field it does not name", async () => {
    const { root } = await tempWorkspace();
    const run = createCodingTools(root).find((t) => t.name === "run_command")!;
    const out = (await run.execute({ argv: ["echo"] }, { signal: new AbortController().signal })) as unknown as { sandbox: Record<string, unknown> };
    check(run, out);
    const { limits: _limits, ...withoutLimits } = out.sandbox;
    expect(() => check(run, { ...out, sandbox: withoutLimits })).toThrow(/outputSchema/);
    expect(() => check(run, { ...out, sandbox: { ...out.sandbox, cgroup: "v2" } })).toThrow(/outputSchema/);
    const limits = out.sandbox.limits as Record<string, { max: number; by: string }>;
    expect(() => check(run, { ...out, sandbox: { ...out.sandbox, limits: { ...limits, processes: { ...limits.processes, by: "ulimit" } } } })).toThrow(/outputSchema/);
  });
});
