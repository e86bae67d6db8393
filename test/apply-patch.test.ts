import { spawn } from "node:child_process";
import { mkdir, readFile, readdir, realpath, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, test } from "vitest";
import {
  ToolError,
  ToolRegistry,
  createApplyPatchTool,
  createCodingTools,
  createDeleteFileTool,
  createMakeDirectoryTool,
  createMoveFileTool,
  executeToolCall,
  hashFile,
} from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";

type AnyTool = { validate(i: unknown): unknown; execute(i: any, c: any): Promise<any> };

async function run(tool: AnyTool, input: unknown): Promise<any> {
  return tool.execute(tool.validate(input), ctx());
}

async function fails(tool: AnyTool, input: unknown): Promise<ToolError> {
  const err = await (async () => tool.execute(tool.validate(input), ctx()))().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

async function temps(dir: string): Promise<string[]> {
  const names = await readdir(dir, { recursive: true });
  return names.map(String).filter((n) => n.split("/").pop()!.startsWith(".workcell-tmp-"));
}

const patchOf = (...sections: string[]) => `*** Begin Patch\n${sections.join("")}*** End Patch\n`;

describe("apply_patch", () => {
  test("applies Add, Delete, Update and Move through the registry; every new tool is a writing tool", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "app.py"), "def main():\n    print('hi')\n");
    await writeFile(join(root, "old.txt"), "old\n");
    const registry = new ToolRegistry(createCodingTools(root));
    for (const name of ["apply_patch", "move_file", "delete_file", "make_directory"]) {
      expect((registry.get(name) as unknown as { effect: string }).effect).toBe("write");
    }
    const patch = patchOf(
      "*** Add File: lib/util.py\n+def helper():\n+    return 1\n",
      "*** Delete File: old.txt\n",
      "*** Update File: app.py\n*** Move to: main.py\n@@ def main():\n-    print('hi')\n+    print('hello')\n",
    );
    const result = await executeToolCall(registry, call("apply_patch", { patch }), new AbortController().signal);
    expect(result.isError).toBe(false);
    const out = content(result);
    expect(out.files).toEqual([
      { path: "lib/util.py", action: "add", bytes: 27 },
      { path: "old.txt", action: "delete" },
      { path: "app.py", action: "update", movedTo: "main.py", bytes: 31 },
    ]);
    expect(out.note).toBeUndefined();
    expect(out.diff).toContain("--- a/app.py\n+++ b/main.py\n");
    expect(await readFile(join(root, "main.py"), "utf8")).toBe("def main():\n    print('hello')\n");
    expect(await readFile(join(root, "lib/util.py"), "utf8")).toBe("def helper():\n    return 1\n");
    expect(await readdir(root)).toEqual(expect.not.arrayContaining(["old.txt", "app.py"]));
    expect(await temps(root)).toEqual([]);
  });

  test("format errors are PATCH_INVALID with the line; nothing is touched", async () => {
    const { root } = await tempWorkspace();
    const tool = createApplyPatchTool(root);
    let err: unknown;
    try {
      tool.validate({ patch: "*** Begin Patch\n*** Update File: a.txt\n@@\n?oops\n*** End Patch" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ToolError);
    const e = err as ToolError;
    expect([e.code, e.message]).toEqual(["TOOL_ARGUMENTS_INVALID", "PATCH_INVALID"]);
    expect(e.hint).toMatch(/^line 4: /);
    expect(e.details).toEqual({ line: 4 });
    expect(() => tool.validate({ patch: "x", extra: 1 })).toThrow(ToolError);
    expect(() => tool.validate({ patch: patchOf("*** Delete File: a\n"), expectedHashes: { a: 5 } })).toThrow(ToolError);
    expect(await readdir(root)).toEqual([]);
  });

  test("a patch whose third file fails leaves files one and two byte-identical", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "one.txt"), "one\r\n");
    await writeFile(join(root, "two.txt"), Buffer.from([0x74, 0x77, 0x6f, 0x0a, 0xe2, 0x80, 0x94, 0x0a]));
    await writeFile(join(root, "three.txt"), "three\n");
    const before = await Promise.all(["one.txt", "two.txt", "three.txt"].map((f) => readFile(join(root, f))));
    const err = await fails(createApplyPatchTool(root), {
      patch: patchOf(
        "*** Update File: one.txt\n-one\n+ONE\n",
        "*** Update File: two.txt\n-two\n+TWO\n",
        "*** Update File: three.txt\n-thre\n+x\n",
      ),
    });
    expect(err.code).toBe("EDIT_NOT_FOUND");
    expect(err.hint).toContain('"three"');
    const after = await Promise.all(["one.txt", "two.txt", "three.txt"].map((f) => readFile(join(root, f))));
    expect(after).toEqual(before);
    expect(await temps(root)).toEqual([]);
  });

  test("a patch touching .git/config is refused whole, also through a symlink", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, ".git"));
    await writeFile(join(root, ".git/config"), "[core]\n");
    await writeFile(join(root, "a.txt"), "a\n");
    await symlink(".git/config", join(root, "cfg"));
    const tool = createApplyPatchTool(root);
    for (const target of [".git/config", "cfg"]) {
      const err = await fails(tool, {
        patch: patchOf("*** Update File: a.txt\n-a\n+A\n", `*** Update File: ${target}\n [core]\n+\thooksPath = /tmp/x\n`),
      });
      expect(err.code).toBe("PATH_PROTECTED");
      expect(await readFile(join(root, "a.txt"), "utf8")).toBe("a\n");
      expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    }
    // protect: [] lets the same patch through.
    await run(createApplyPatchTool(root, { protect: [] }), {
      patch: patchOf("*** Update File: a.txt\n-a\n+A\n", "*** Update File: .git/config\n [core]\n+\thooksPath = /tmp/x\n"),
    });
    expect(await readFile(join(root, ".git/config"), "utf8")).toContain("hooksPath");
  });

  test("FILE_EXISTS, expectedHashes and the tolerant passes' note", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "say \u201chi\u201d   \n");
    const tool = createApplyPatchTool(root);
    expect((await fails(tool, { patch: patchOf("*** Add File: a.txt\n+x\n") })).code).toBe("FILE_EXISTS");
    const patch = patchOf('*** Update File: a.txt\n-say "hi"\n+say "bye"\n');
    const stale = await fails(tool, { patch, expectedHashes: { "a.txt": "absent" } });
    expect(stale.code).toBe("TARGET_CHANGED");
    const out = await run(tool, { patch, expectedHashes: { "a.txt": await hashFile(root, "a.txt") } });
    expect(out.note).toBe("a.txt: hunks matched ignoring whitespace and with Unicode punctuation and spaces normalized");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe('say "bye"\n');
  });

  test("50 patches applied while a reader loops never show a half-written file", async () => {
    const { root } = await tempWorkspace();
    const files = ["a.txt", "b.txt", "c.txt"];
    const body = (v: number) => `version ${v}\n${"padding that must stay whole\n".repeat(1500)}`;
    for (const f of files) await writeFile(join(root, f), body(0));
    const tool = createApplyPatchTool(root);
    let stop = false;
    let reads = 0;
    const reader = (async () => {
      while (!stop) {
        for (const f of files) {
          const text = await readFile(join(root, f), "utf8");
          const v = Number(/^version (\d+)\n/.exec(text)![1]);
          expect(text).toBe(body(v));
          reads++;
        }
      }
    })();
    for (let v = 1; v <= 50; v++) {
      await run(tool, { patch: patchOf(...files.map((f) => `*** Update File: ${f}\n-version ${v - 1}\n+version ${v}\n`)) });
    }
    stop = true;
    await reader;
    expect(reads).toBeGreaterThan(0);
    for (const f of files) expect(await readFile(join(root, f), "utf8")).toBe(body(50));
    expect(await temps(root)).toEqual([]);
  });

  test("a host killed mid-patch leaves every file whole, and the next calls do not trip on what it left", async () => {
    const { parent, root } = await tempWorkspace();
    const files = ["f0.txt", "f1.txt", "f2.txt", "f3.txt", "f4.txt"];
    const pad = "the rest of the file, which must stay whole\n".repeat(1400);
    for (const f of files) await writeFile(join(root, f), `version 0\n${pad}`);
    const script = join(parent, "host.mjs");
    const dist = pathToFileURL(join(process.cwd(), "dist/index.js")).href;
    await writeFile(
      script,
      `import { readFileSync } from "node:fs";
import { createApplyPatchTool } from ${JSON.stringify(dist)};
const root = ${JSON.stringify(root)};
const files = ${JSON.stringify(files)};
const tool = createApplyPatchTool(root);
let announced = false;
for (;;) {
  const sections = files.map((f) => {
    const v = Number(/^version (\\d+)/.exec(readFileSync(root + "/" + f, "utf8"))[1]);
    return "*** Update File: " + f + "\\n-version " + v + "\\n+version " + (v + 1) + "\\n";
  });
  await tool.execute({ patch: "*** Begin Patch\\n" + sections.join("") + "*** End Patch\\n" }, { signal: new AbortController().signal });
  if (!announced) { process.stdout.write("ready\\n"); announced = true; }
}
`,
    );
    const seen = new Set<string>();
    for (let round = 0; round < 12; round++) {
      const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "inherit"] });
      await new Promise<void>((resolve, reject) => {
        child.stdout.once("data", () => resolve());
        child.once("exit", (code) => reject(new Error(`host exited early: ${code}`)));
      });
      await new Promise((r) => setTimeout(r, 3 + ((round * 7) % 25)));
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      const versions: number[] = [];
      for (const f of files) {
        const text = await readFile(join(root, f), "utf8");
        const m = /^version (\d+)\n/.exec(text);
        expect(m, `${f} lost its first line`).not.toBeNull();
        expect(text, `${f} is half-written`).toBe(`version ${m![1]}\n${pad}`);
        versions.push(Number(m![1]));
      }
      seen.add(versions.join(","));
    }
    // What a killed host may leave: staged .workcell-tmp-* names only, nothing else new.
    const names = (await readdir(root)).sort();
    expect(names.filter((n) => !n.startsWith(".workcell-tmp-"))).toEqual(files);
    // The next tool and call work beside them.
    const tool = createApplyPatchTool(root);
    const sections = [];
    for (const f of files) {
      const v = Number(/^version (\d+)/.exec(await readFile(join(root, f), "utf8"))![1]);
      sections.push(`*** Update File: ${f}\n-version ${v}\n+version done\n`);
    }
    await run(tool, { patch: patchOf(...sections) });
    for (const f of files) expect(await readFile(join(root, f), "utf8")).toBe(`version done\n${pad}`);
    expect(seen.size).toBeGreaterThan(0);
  }, 120_000);
});

describe("move_file, delete_file, make_directory", () => {
  test("move renames, refuses to replace without overwrite, and is guarded on both names", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "A");
    await writeFile(join(root, "b.txt"), "B");
    await mkdir(join(root, ".git"));
    await writeFile(join(root, ".git/config"), "[core]\n");
    const mv = createMoveFileTool(root);
    expect((await fails(mv, { from: "a.txt", to: "b.txt" })).code).toBe("FILE_EXISTS");
    expect(await run(mv, { from: "./a.txt", to: "b.txt", overwrite: true })).toEqual({ from: "a.txt", to: "b.txt", replaced: true });
    expect(await run(mv, { from: "b.txt", to: "x/y/z.txt" })).toEqual({ from: "b.txt", to: "x/y/z.txt", replaced: false });
    expect(await readFile(join(root, "x/y/z.txt"), "utf8")).toBe("A");
    expect((await fails(mv, { from: "x/y/z.txt", to: ".git/config", overwrite: true })).code).toBe("PATH_PROTECTED");
    expect((await fails(mv, { from: ".git/config", to: "stolen" })).code).toBe("PATH_PROTECTED");
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    expect(() => mv.validate({ from: "../a", to: "b" })).toThrow(ToolError);
  });

  test("delete removes files, links (not their targets) and empty directories only", async () => {
    const { parent, root } = await tempWorkspace();
    const rm = createDeleteFileTool(root);
    await writeFile(join(parent, "outside.txt"), "keep");
    await symlink(join(parent, "outside.txt"), join(root, "link"));
    expect(await run(rm, { path: "link" })).toEqual({ path: "link", kind: "symlink" });
    expect(await readFile(join(parent, "outside.txt"), "utf8")).toBe("keep");
    await mkdir(join(root, "d/e"), { recursive: true });
    const err = await fails(rm, { path: "d" });
    expect(err.message).toMatch(/^ENOTEMPTY/);
    expect(err.hint).toContain("only empty directories");
    expect(await run(rm, { path: "d/e" })).toEqual({ path: "d/e", kind: "directory" });
    expect((await fails(rm, { path: "missing" })).code).toBe("FILE_NOT_FOUND");
  });

  test("make_directory creates parents and reports an existing directory", async () => {
    const { root } = await tempWorkspace();
    const md = createMakeDirectoryTool(root);
    expect(await run(md, { path: "a/b/c" })).toEqual({ path: "a/b/c", created: true });
    expect(await run(md, { path: "a/b/c/" })).toEqual({ path: "a/b/c", created: false });
    await writeFile(join(root, "f"), "");
    expect((await fails(md, { path: "f" })).code).toBe("FILE_EXISTS");
    expect((await fails(md, { path: ".git/hooks" })).code).toBe("PATH_PROTECTED");
    expect(() => createMakeDirectoryTool(root, { protekt: [] } as never)).toThrow(/protekt: unknown option; did you mean protect\?/);
  });
});

describe("apply_patch: the forms models send", () => {
  test("an_absolute_path_beneath_the_canonical_root_gets_the_answer_the_provider_adapters_give", async () => {
    const { root } = await tempWorkspace();
    const canonical = await realpath(root);
    await writeFile(join(root, "a.txt"), "one\n");
    const tool = createApplyPatchTool(root);
    const patch = patchOf(`*** Update File: ${canonical}/a.txt\n@@\n-one\n+two\n`, `*** Add File: ${canonical}/sub/b.txt\n+b\n`);
    const out = await run(tool, { patch });
    expect(out.files.map((f: any) => f.path)).toEqual(["a.txt", "sub/b.txt"]);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("two\n");
    for (const outside of ["/etc/passwd", `${canonical}x/b.txt`, `${canonical}/../b.txt`]) {
      expect(() => tool.validate({ patch: patchOf(`*** Add File: ${outside}\n+x\n`) }), outside).toThrow(/INVALID_RELATIVE_PATH/);
    }
  });

  test("a_heredoc_wrapped_patch_with_a_blank_line_before_end_patch_applies", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\ntwo\n");
    const tool = createApplyPatchTool(root);
    const patch = "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+2\n\n*** End Patch\nEOF\n";
    await run(tool, { patch });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n2\n");
    const err = await (async () => tool.validate({ patch: "echo hi; " + patch }))().then(() => undefined, (e: unknown) => e as ToolError);
    expect(err?.details).toMatchObject({ line: 1 });
  });
});
