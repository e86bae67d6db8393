import { readFile, readdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolError,
  ToolRegistry,
  createCodingTools,
  isAbortError,
  createEditTool,
  createWriteTool,
  executeToolCall,
  hashFile,
} from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";

type EditTool = ReturnType<typeof createEditTool>;

async function editErr(tool: EditTool, input: unknown): Promise<ToolError> {
  const err = await (async () => tool.execute(tool.validate(input), ctx()))().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

async function edit(tool: EditTool, input: unknown) {
  return tool.execute(tool.validate(input), ctx());
}

async function noTemps(dir: string): Promise<void> {
  const names = await readdir(dir, { recursive: true });
  expect(names.filter((n) => String(n).split("/").pop()!.startsWith(".workcell-tmp-"))).toEqual([]);
}

describe("edit_file", () => {
  test("replaces exact text and returns a diff", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.ts"), "const a = 1;\nconst b = 2;\nconst c = 3;\n");
    const tool = createEditTool(root);
    const out = await edit(tool, { path: "./a.ts", edits: [{ oldText: "const b = 2;", newText: "const b = 20;" }] });
    expect(out).toEqual({
      path: "a.ts",
      edits: 1,
      bytes: 40,
      diff: "--- a/a.ts\n+++ b/a.ts\n@@ -1,3 +1,3 @@\n const a = 1;\n-const b = 2;\n+const b = 20;\n const c = 3;\n",
    });
    expect(await readFile(join(root, "a.ts"), "utf8")).toBe("const a = 1;\nconst b = 20;\nconst c = 3;\n");
    await noTemps(root);
  });

  test("a CRLF file keeps CRLF when edited with \\n text", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "w.txt"), "one\r\ntwo\r\nthree\r\n");
    const tool = createEditTool(root);
    await edit(tool, { path: "w.txt", edits: [{ oldText: "one\ntwo\n", newText: "uno\ndos\ndos y medio\n" }] });
    expect(await readFile(join(root, "w.txt"), "utf8")).toBe("uno\r\ndos\r\ndos y medio\r\nthree\r\n");
  });

  test("a BOM is kept", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "b.txt"), "\uFEFFhello\nworld\n");
    const tool = createEditTool(root);
    await edit(tool, { path: "b.txt", edits: [{ oldText: "hello", newText: "bonjour" }] });
    const bytes = await readFile(join(root, "b.txt"));
    expect([...bytes.subarray(0, 3)]).toEqual([0xef, 0xbb, 0xbf]);
    expect(bytes.toString("utf8")).toBe("\uFEFFbonjour\nworld\n");
  });

  test("missing oldText is EDIT_NOT_FOUND naming the closest line; repeated is EDIT_NOT_UNIQUE", async () => {
    const { root } = await tempWorkspace();
    const text = "alpha\nfunction total(a, b) {\n  return a + b;\n}\nx\nx\n";
    await writeFile(join(root, "f.js"), text);
    const tool = createEditTool(root);
    let err = await editErr(tool, { path: "f.js", edits: [{ oldText: "function totl(a, b) {", newText: "y" }] });
    expect(err.code).toBe("EDIT_NOT_FOUND");
    expect(err.hint).toContain("closest line is 2");
    expect((err.details as any).closestLine).toBe(2);
    err = await editErr(tool, { path: "f.js", edits: [{ oldText: "x\n", newText: "y\n" }] });
    expect(err.code).toBe("EDIT_NOT_UNIQUE");
    expect((err.details as any).count).toBe(2);
    expect(err.hint).toBeTruthy();
    // One failing edit among good ones: nothing is written.
    err = await editErr(tool, {
      path: "f.js",
      edits: [
        { oldText: "alpha", newText: "beta" },
        { oldText: "nowhere", newText: "z" },
      ],
    });
    expect(err.code).toBe("EDIT_NOT_FOUND");
    expect((err.details as any).edit).toBe(1);
    expect(await readFile(join(root, "f.js"), "utf8")).toBe(text);
    await noTemps(root);
  });

  test("every oldText is matched against the original; overlapping edits are refused", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "f"), "abc def ghi");
    const tool = createEditTool(root);
    // "def" would not be found after the first edit if edits were applied in sequence.
    await edit(tool, {
      path: "f",
      edits: [
        { oldText: "abc", newText: "def" },
        { oldText: "def", newText: "DEF" },
      ],
    });
    expect(await readFile(join(root, "f"), "utf8")).toBe("def DEF ghi");
    const err = await editErr(tool, {
      path: "f",
      edits: [
        { oldText: "def DEF", newText: "1" },
        { oldText: "DEF ghi", newText: "2" },
      ],
    });
    expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(err.message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect((err.details as any).edits).toEqual([0, 1]);
    expect(await readFile(join(root, "f"), "utf8")).toBe("def DEF ghi");
  });

  test("argument limits: 1..50 edits, no empty oldText, no extra properties", async () => {
    const { root } = await tempWorkspace();
    const tool = createEditTool(root);
    const bad = [
      { path: "f", edits: [] },
      { path: "f", edits: Array.from({ length: 51 }, (_, i) => ({ oldText: `t${i}`, newText: "" })) },
      { path: "f", edits: [{ oldText: "", newText: "x" }] },
      { path: "f", edits: [{ oldText: "a", newText: "b", extra: 1 }] },
      { path: "f", edits: [{ oldText: "a" }] },
      { path: "../f", edits: [{ oldText: "a", newText: "b" }] },
      { path: "f", edits: [{ oldText: "a", newText: "x".repeat(65_537) }] },
    ];
    for (const input of bad) {
      expect(() => tool.validate(input)).toThrow(ToolError);
    }
    expect(() => tool.validate({ path: "f", edits: Array.from({ length: 50 }, (_, i) => ({ oldText: `t${i}`, newText: "" })) })).not.toThrow();
    // Rust repeats the checks when validate is bypassed.
    const err = await tool.execute({ path: "f", edits: [{ oldText: "", newText: "x" }] } as any, ctx()).catch((e) => e);
    expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
  });

  test("50 concurrent edits to one file each append a distinct line; all are present", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "log.txt"), "start\nEND\n");
    const tool = createEditTool(root);
    const outs = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        edit(tool, { path: "log.txt", edits: [{ oldText: "END\n", newText: `line ${i}\nEND\n` }] }),
      ),
    );
    expect(outs.every((o) => o.edits === 1)).toBe(true);
    const text = await readFile(join(root, "log.txt"), "utf8");
    for (let i = 0; i < 50; i++) expect(text).toContain(`line ${i}\n`);
    expect(text.split("\n").length).toBe(53);
    // Edits queue in call order: the lines appear in the order of the calls.
    expect(text).toBe(["start", ...Array.from({ length: 50 }, (_, i) => `line ${i}`), "END", ""].join("\n"));
    await noTemps(root);
  });

  test("expectedHash: refused after a concurrent change, applied otherwise", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "h.txt"), "version 1\n");
    const tool = createEditTool(root);
    const seen = await hashFile(root, "h.txt");
    await writeFile(join(root, "h.txt"), "version 1\nchanged by someone\n");
    const err = await editErr(tool, {
      path: "h.txt",
      edits: [{ oldText: "version 1", newText: "version 2" }],
      expectedHash: seen,
    });
    expect(err.code).toBe("TARGET_CHANGED");
    expect(err.hint).toContain("read it again");
    expect(await readFile(join(root, "h.txt"), "utf8")).toBe("version 1\nchanged by someone\n");
    const now = await hashFile(root, "h.txt");
    await edit(tool, { path: "h.txt", edits: [{ oldText: "version 1", newText: "version 2" }], expectedHash: now });
    expect(await readFile(join(root, "h.txt"), "utf8")).toBe("version 2\nchanged by someone\n");
    await noTemps(root);
  });

  test("refusals: missing file, directory, too large, invalid UTF-8, escaping symlink", async () => {
    const { root, parent } = await tempWorkspace();
    const tool = createEditTool(root);
    const e = [{ oldText: "a", newText: "b" }];
    expect((await editErr(tool, { path: "missing", edits: e })).code).toBe("FILE_NOT_FOUND");
    await writeFile(join(root, "big"), "a" + "x".repeat(65_536));
    expect((await editErr(tool, { path: "big", edits: e })).code).toBe("FILE_TOO_LARGE");
    await writeFile(join(root, "bin"), Buffer.from([0x61, 0xff]));
    expect((await editErr(tool, { path: "bin", edits: e })).code).toBe("INVALID_UTF8");
    await writeFile(join(parent, "outside.txt"), "a");
    await symlink("../outside.txt", join(root, "out"));
    expect((await editErr(tool, { path: "out", edits: e })).code).toBe("PATH_ESCAPES_WORKSPACE");
    expect(await readFile(join(parent, "outside.txt"), "utf8")).toBe("a");
    await noTemps(root);
  });

  test("an aborted signal rejects with an AbortError and changes nothing", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "keep\n");
    const tool = createEditTool(root);
    const ac = new AbortController();
    ac.abort();
    const err = await tool
      .execute(tool.validate({ path: "a.txt", edits: [{ oldText: "keep", newText: "lost" }] }), ctx(ac.signal))
      .catch((e) => e);
    expect(isAbortError(err)).toBe(true);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("keep\n");
    await noTemps(root);
  });

  test("is part of createCodingTools and works through executeToolCall", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "x.txt"), "hi\n");
    const registry = new ToolRegistry(createCodingTools(root));
    expect(registry.get("edit_file")).toBeDefined();
    const r = await executeToolCall(
      registry,
      call("edit_file", { path: "x.txt", edits: [{ oldText: "hi", newText: "ho" }] }),
      new AbortController().signal,
    );
    expect(r.isError).toBe(false);
    expect(content(r).diff).toContain("+ho");
    const bad = await executeToolCall(registry, call("edit_file", { path: "x.txt", edits: [{ oldText: "zz", newText: "y" }] }), new AbortController().signal);
    expect(bad.isError).toBe(true);
    expect(content(bad).error.code).toBe("EDIT_NOT_FOUND");
    // write_file and edit_file share a queue per file.
    const write = createWriteTool(root);
    await Promise.all([
      write.execute(write.validate({ path: "x.txt", content: "ho\nMARK\n" }), ctx()),
      edit(createEditTool(root), { path: "x.txt", edits: [{ oldText: "MARK", newText: "MARKED" }] }),
    ]);
    expect(await readFile(join(root, "x.txt"), "utf8")).toBe("ho\nMARKED\n");
  });
});
