import { mkdir, rename, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolError,
  ToolRegistry,
  createCodingTools,
  createListTool,
  executeToolCall,
  isAbortError,
} from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";
import { SECRET, hostileWorkspace } from "./fixtures-hostile.js";

type ListTool = ReturnType<typeof createListTool>;

async function list(tool: ListTool, args: unknown) {
  return tool.execute(tool.validate(args), ctx());
}

async function listErr(tool: ListTool, args: unknown): Promise<ToolError> {
  const err = await Promise.resolve()
    .then(() => list(tool, args))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe("list_files confinement", () => {
  test("escaping symlinks, loops and FIFOs are shown as what they are, never followed", async () => {
    const { parent, root } = await hostileWorkspace();
    const tool = createListTool(root);
    const started = Date.now();
    const out = await list(tool, { depth: 10 });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(out.entries).toEqual([
      `absdir -> ${parent}/outside`,
      `absfile -> ${parent}/secret.txt`,
      "loop-a -> loop-b",
      "loop-b -> loop-a",
      "pipe [fifo]",
      "README.md",
      "reldir -> ../outside",
      "relfile -> ../secret.txt",
      "src/",
      "src/a.ts",
      "src/deeprel -> ../../outside",
      "src/pipe.ts [fifo]",
      "src/self -> .",
    ].sort((a, b) => (a < b ? -1 : 1)));
    // Nothing from outside is listed as an entry (only link target texts mention it).
    for (const e of out.entries) expect(e.split(" -> ")[0]).not.toMatch(/secret|outside/);
    expect(out.truncated).toBe(false);
    expect(JSON.stringify(out)).not.toContain(SECRET);
  });

  test("listing through an escaping symlink is PATH_ESCAPES_WORKSPACE; a loop is SYMLINK_LOOP", async () => {
    const { root } = await hostileWorkspace();
    const tool = createListTool(root);
    for (const path of ["reldir", "absdir", "src/deeprel", "reldir/x"]) {
      expect((await listErr(tool, { path })).code).toBe("PATH_ESCAPES_WORKSPACE");
    }
    expect((await listErr(tool, { path: "loop-a" })).code).toBe("SYMLINK_LOOP");
    expect((await listErr(tool, { path: "missing" })).code).toBe("FILE_NOT_FOUND");
  });

  test("a symlinked directory inside is listed when named, but never entered from above", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "real"));
    await writeFile(join(root, "real/x.txt"), "");
    await symlink("real", join(root, "alias"));
    const tool = createListTool(root);
    expect((await list(tool, {})).entries).toEqual(["alias -> real", "real/", "real/x.txt"]);
    expect((await list(tool, { path: "alias" })).entries).toEqual(["alias/x.txt"]);
    expect((await list(tool, { path: "alias" })).path).toBe("alias");
  });

  test("a FIFO named as the path lists as itself without blocking", async () => {
    const { root } = await hostileWorkspace();
    const out = await list(createListTool(root), { path: "pipe" });
    expect(out.entries).toEqual(["pipe [fifo]"]);
  });
});

describe("list_files limits", () => {
  async function wideTree() {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "a/deep"), { recursive: true });
    for (let i = 0; i < 30; i++) {
      await writeFile(join(root, `a/deep/f${String(i).padStart(2, "0")}`), "");
      await writeFile(join(root, `a/g${String(i).padStart(2, "0")}`), "");
    }
    await writeFile(join(root, "z.txt"), "");
    return root;
  }

  test("default depth is 2 and deeper entries are counted in the note", async () => {
    const root = await wideTree();
    const out = await list(createListTool(root), {});
    expect(out.entries).toContain("a/deep/");
    expect(out.entries).toContain("a/g29");
    expect(out.entries).not.toContain("a/deep/f00");
    expect(out.entries.length).toBe(33);
    expect(out.truncated).toBe(true);
    expect(out.notShown).toBe(30);
    expect(out.note).toContain("30 entries not shown");
    expect(out.note).toContain("deeper than depth 2");
  });

  test("the limit keeps the shallowest entries and says how many were left out", async () => {
    const root = await wideTree();
    const out = await list(createListTool(root), { depth: 3, limit: 3 });
    expect(out.entries).toEqual(["a/", "a/deep/", "z.txt"]);
    expect(out.notShown).toBe(60);
    expect(out.note).toMatch(/60 entries not shown \(60 beyond the limit of 3\)/);
    const all = await list(createListTool(root), { depth: 3, limit: 63 });
    expect(all.entries.length).toBe(63);
    expect(all.truncated).toBe(false);
    expect(all.note).toBeUndefined();
  });

  test("depth and limit are range-checked; unknown properties are refused", async () => {
    const { root } = await tempWorkspace();
    const tool = createListTool(root);
    for (const args of [{ depth: 0 }, { depth: 11 }, { limit: 0 }, { limit: 5001 }, { depth: 1.5 }, { all: true }]) {
      const err = await listErr(tool, args);
      expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
      expect(err.message).toBe("INVALID_ARGUMENTS_SHAPE");
      expect(err.hint).toBeTruthy();
    }
    expect((await listErr(tool, { path: "../x" })).message).toBe("INVALID_RELATIVE_PATH");
    expect((await listErr(tool, { path: "/" })).message).toBe("INVALID_RELATIVE_PATH");
    for (const path of [".", "./", ""]) expect((await list(tool, { path })).path).toBe(".");
    expect((await list(tool, { depth: 10, limit: 5000 })).entries).toEqual([]);
    expect(tool.parameters.additionalProperties).toBe(false);
  });
});

describe("list_files and .gitignore", () => {
  test("ignored entries and .git are left out by default and shown with gitignore: false", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, ".gitignore"), "dist/\n*.log\n");
    await mkdir(join(root, "dist"));
    await writeFile(join(root, "dist/bundle.js"), "");
    await writeFile(join(root, "debug.log"), "");
    await mkdir(join(root, ".git"));
    await writeFile(join(root, ".git/HEAD"), "");
    await mkdir(join(root, "src"));
    await writeFile(join(root, "src/.gitignore"), "!keep.log\n");
    await writeFile(join(root, "src/keep.log"), "");
    const tool = createListTool(root);
    expect((await list(tool, {})).entries).toEqual([".gitignore", "src/", "src/.gitignore", "src/keep.log"]);
    const all = await list(tool, { gitignore: false });
    expect(all.entries).toEqual([
      ".git/",
      ".git/HEAD",
      ".gitignore",
      "debug.log",
      "dist/",
      "dist/bundle.js",
      "src/",
      "src/.gitignore",
      "src/keep.log",
    ]);
  });
});

describe("list_files through the registry", () => {
  test("createCodingTools includes list_files and search_files; results are JSON", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "");
    const registry = new ToolRegistry(createCodingTools(root));
    expect(registry.list().map((t) => t.name)).toEqual(expect.arrayContaining(["read_file", "list_files", "search_files"]));
    const result = await executeToolCall(registry, call("list_files", { path: "." }), new AbortController().signal);
    expect(result.isError).toBe(false);
    expect(content(result)).toEqual({ path: ".", entries: ["a.txt"], truncated: false, notShown: 0 });
    const bad = await executeToolCall(registry, call("list_files", { depth: 99 }), new AbortController().signal);
    expect(bad.isError).toBe(true);
    expect(content(bad).error.code).toBe("TOOL_ARGUMENTS_INVALID");
  });

  test("an aborted signal rejects with AbortError", async () => {
    const { root } = await tempWorkspace();
    const tool = createListTool(root);
    const ac = new AbortController();
    ac.abort();
    const err = await tool.execute({}, ctx(ac.signal)).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
  });

  test("a replaced root is WORKSPACE_ROOT_CHANGED", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createListTool(root);
    await rename(root, join(parent, "moved"));
    await mkdir(root);
    expect((await listErr(tool, {})).code).toBe("WORKSPACE_ROOT_CHANGED");
    await rm(root, { recursive: true });
    expect((await listErr(tool, {})).code).toBe("WORKSPACE_ROOT_CHANGED");
  });
});

describe("list_files results made in one call", () => {
  // A long array in a result is made by one call of the Array.of the addon took when it was
  // first used, not element by element (a 1,000-entry listing spent most of its event-loop
  // time in napi_set_element). What a host later does to the global Array.of changes nothing.
  test("a_long_listing_is_a_plain_array_of_every_entry_in_tree_order_whatever_the_host_does_to_Array_of", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "big"));
    const names = Array.from({ length: 1000 }, (_, i) => `f-${String(i).padStart(4, "0")}.txt`);
    for (const n of names) await writeFile(join(root, "big", n), "");
    const tool = createListTool(root);
    const first = await list(tool, { path: "big", depth: 1, limit: 5000 });
    const of = Array.of;
    try {
      Array.of = (() => ["replaced"]) as typeof Array.of;
      for (const out of [first, await list(tool, { path: "big", depth: 1, limit: 5000 })]) {
        expect(Array.isArray(out.entries)).toBe(true);
        expect(Object.getPrototypeOf(out.entries)).toBe(Array.prototype);
        expect(out.entries).toEqual(names.map((n) => `big/${n}`));
        expect(out.notShown).toBe(0);
        expect(out.truncated).toBe(false);
      }
    } finally {
      Array.of = of;
    }
    // A short one (made element by element) is the same kind of array.
    const short = await list(tool, { path: "big", depth: 1, limit: 3 });
    expect(short.entries).toEqual(names.slice(0, 3).map((n) => `big/${n}`));
    expect(short.notShown).toBe(997);
  });
});
