import { mkdir, rename, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolError, ToolRegistry, createSearchTool, executeToolCall, isAbortError } from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";
import { SECRET, hostileWorkspace } from "./fixtures-hostile.js";

type SearchTool = ReturnType<typeof createSearchTool>;

async function search(tool: SearchTool, args: unknown) {
  return tool.execute(tool.validate(args), ctx());
}

async function searchErr(tool: SearchTool, args: unknown): Promise<ToolError> {
  const err = await Promise.resolve()
    .then(() => search(tool, args))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe("search_files confinement", () => {
  test("never reads outside through escaping symlinks, never follows links, never hangs on FIFOs", async () => {
    const { root } = await hostileWorkspace();
    const tool = createSearchTool(root);
    const out = await search(tool, { pattern: `${SECRET}|needle` });
    expect(out.matches).toEqual(["README.md:1: needle in the readme", "src/a.ts:1: export const needle = 1;"]);
    expect(JSON.stringify(out)).not.toContain(SECRET);
    expect(out.truncated).toBe(false);
    // With .gitignore off as well.
    const all = await search(createSearchTool(root, { gitignore: false }), { pattern: SECRET });
    expect(all.matches).toEqual([]);
  });

  test("naming an escaping link, a loop or a FIFO as the path is refused promptly", async () => {
    const { root } = await hostileWorkspace();
    const tool = createSearchTool(root);
    for (const path of ["reldir", "absdir", "relfile", "absfile", "src/deeprel", "reldir/secret.txt"]) {
      expect((await searchErr(tool, { pattern: SECRET, path })).code).toBe("PATH_ESCAPES_WORKSPACE");
    }
    expect((await searchErr(tool, { pattern: "x", path: "loop-a" })).code).toBe("SYMLINK_LOOP");
    const started = Date.now();
    expect((await searchErr(tool, { pattern: "x", path: "pipe" })).code).toBe("NOT_A_REGULAR_FILE");
    expect((await searchErr(tool, { pattern: "x", path: "src/pipe.ts" })).code).toBe("NOT_A_REGULAR_FILE");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("a FIFO with a glob that selects only it: searched around, never opened", async () => {
    const { root } = await tempWorkspace();
    execFileSync("mkfifo", [join(root, "only.fifo")]);
    await writeFile(join(root, "a.fifo.txt"), "x\n");
    const out = await search(createSearchTool(root), { pattern: "x", glob: "*.fifo" });
    expect(out).toEqual({ matches: [], truncated: false, filesSearched: 0 });
  });

  test("a single named file (through an inside link) is searched", async () => {
    const { root } = await hostileWorkspace();
    const tool = createSearchTool(root);
    expect((await search(tool, { pattern: "hay", path: "src/self/a.ts" })).matches).toEqual(["src/self/a.ts:2: const hay = 2;"]);
    expect((await search(tool, { pattern: "needle", path: "./src" })).matches).toEqual(["src/a.ts:1: export const needle = 1;"]);
  });
});

describe("search_files results", () => {
  test("limit is exact, with a note when more exist", async () => {
    const { root } = await tempWorkspace();
    for (let i = 0; i < 12; i++) await writeFile(join(root, `f${String(i).padStart(2, "0")}.txt`), "hit\nmiss\nhit\n");
    const tool = createSearchTool(root);
    const exact = await search(tool, { pattern: "hit", limit: 24 });
    expect(exact.matches.length).toBe(24);
    expect(exact.truncated).toBe(false);
    expect(exact.note).toBeUndefined();
    const cut = await search(tool, { pattern: "hit", limit: 5 });
    expect(cut.matches).toEqual(["f00.txt:1: hit", "f00.txt:3: hit", "f01.txt:1: hit", "f01.txt:3: hit", "f02.txt:1: hit"]);
    expect(cut.truncated).toBe(true);
    expect(cut.note).toMatch(/showing the first 5 matches; more exist/);
  });

  test("default limit is 100", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "many.txt"), "hit\n".repeat(150));
    const out = await search(createSearchTool(root), { pattern: "hit" });
    expect(out.matches.length).toBe(100);
    expect(out.truncated).toBe(true);
  });

  test("binary files are skipped and long lines are cut at 500 characters", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "image.bin"), Buffer.concat([Buffer.from("needle\n"), Buffer.from([0, 1, 2, 3])]));
    await writeFile(join(root, "long.txt"), `needle ${"😀".repeat(2000)}\n`);
    await writeFile(join(root, "exact.txt"), `${"a".repeat(494)}needle\n`);
    const out = await search(createSearchTool(root), { pattern: "needle" });
    expect(out.matches.length).toBe(2);
    expect(out.matches[0]).toBe(`exact.txt:1: ${"a".repeat(494)}needle`);
    const text = out.matches[1]!.slice("long.txt:1: ".length);
    expect([...text].length).toBe(501);
    expect(text.endsWith("…")).toBe(true);
    expect(text.startsWith("needle 😀")).toBe(true);
    expect(out.note).toContain("1 binary files skipped");
    expect(out.filesSearched).toBe(3);
  });

  test(".gitignore is honoured; glob, ignoreCase and literal work", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, ".gitignore"), "build/\n");
    await mkdir(join(root, "build"));
    await writeFile(join(root, "build/out.js"), "Needle(1)\n");
    await mkdir(join(root, "src"));
    await writeFile(join(root, "src/a.js"), "Needle(1)\n");
    await writeFile(join(root, "src/a.ts"), "needle(2)\n");
    await mkdir(join(root, ".git"));
    await writeFile(join(root, ".git/config"), "needle\n");
    const tool = createSearchTool(root);
    expect((await search(tool, { pattern: "needle" })).matches).toEqual(["src/a.ts:1: needle(2)"]);
    expect((await search(tool, { pattern: "needle", ignoreCase: true })).matches).toEqual([
      "src/a.js:1: Needle(1)",
      "src/a.ts:1: needle(2)",
    ]);
    expect((await search(tool, { pattern: "needle", ignoreCase: true, glob: "*.js" })).matches).toEqual(["src/a.js:1: Needle(1)"]);
    expect((await search(tool, { pattern: "Needle(1)", literal: true })).matches).toEqual(["src/a.js:1: Needle(1)"]);
    const ungated = await search(createSearchTool(root, { gitignore: false }), { pattern: "eedle", literal: true });
    expect(ungated.matches.length).toBe(4);
  });
});

describe("search_files arguments", () => {
  test("a regex that does not compile is TOOL_ARGUMENTS_INVALID with the parser's message", async () => {
    const { root } = await tempWorkspace();
    const tool = createSearchTool(root);
    let thrown: unknown;
    try {
      tool.validate({ pattern: "foo(bar" });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(ToolError);
    const err = thrown as ToolError;
    expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(err.message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(err.hint).toContain("unclosed group");
    expect(err.hint).toContain("literal");
    // The same check happens in Rust when execute is called directly.
    const direct = await tool.execute({ pattern: "[z-a]" }, ctx()).catch((e: unknown) => e);
    expect(direct).toBeInstanceOf(ToolError);
    expect((direct as ToolError).hint).toMatch(/invalid character class range/);
    // Through the registry: an error result, not a rejection.
    const registry = new ToolRegistry([tool]);
    const result = await executeToolCall(registry, call("search_files", { pattern: "(" }), new AbortController().signal);
    expect(result.isError).toBe(true);
    expect(content(result).error.code).toBe("TOOL_ARGUMENTS_INVALID");
  });

  test("a pathological pattern is only parsed by validate and refused by execute, by the compile size limit", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "abc\n");
    const tool = createSearchTool(root);
    for (const pattern of ["[\\p{L}]{1000}", "(\\w{1,100}){1,100}"]) {
      // validate does a linear parse only: the pattern is well-formed, so it passes...
      const input = tool.validate({ pattern });
      // ...and the compile, off the event loop, refuses it with a clear message.
      const err = (await tool.execute(input, ctx()).catch((e: unknown) => e)) as ToolError;
      expect(err).toBeInstanceOf(ToolError);
      expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
      expect(err.hint).toContain("compiles to more than 4194304 bytes");
      expect(err.hint).toContain("literal: true");
    }
    // Syntax errors still come from validate.
    expect(() => tool.validate({ pattern: "a{2,1}" })).toThrow(ToolError);
  });

  test("bad globs, limits, paths, unknown properties and lone surrogates are refused", async () => {
    const { root } = await tempWorkspace();
    const tool = createSearchTool(root);
    const refuse = (args: unknown): ToolError => {
      try {
        tool.validate(args);
      } catch (e) {
        return e as ToolError;
      }
      throw new Error(`accepted ${JSON.stringify(args)}`);
    };
    expect(refuse({ pattern: "x", glob: "a{b" }).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refuse({ pattern: "x", limit: 0 }).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refuse({ pattern: "x", limit: 1001 }).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refuse({ pattern: "x", path: "../up" }).message).toBe("INVALID_RELATIVE_PATH");
    expect(refuse({ pattern: "x", context: 2 }).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refuse({}).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refuse({ pattern: "a\ud800" }).message).toBe("INVALID_UNICODE");
    // Rust checks lone surrogates too, when execute is called without validate.
    const direct = (await tool.execute({ pattern: "a\ud800" }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(direct.message).toBe("INVALID_UNICODE");
    const directLimit = (await tool.execute({ pattern: "x", limit: 5000 }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(directLimit.message).toBe("INVALID_ARGUMENTS_SHAPE");
  });
});

describe("search_files cancellation and root", () => {
  test("an abort during the walk rejects with AbortError", async () => {
    const { root } = await tempWorkspace();
    for (let d = 0; d < 20; d++) {
      await mkdir(join(root, `d${d}`));
      await Promise.all(
        Array.from({ length: 100 }, (_, f) => writeFile(join(root, `d${d}/f${f}.txt`), "some text without the word\n")),
      );
    }
    const tool = createSearchTool(root);
    const ac = new AbortController();
    const pending = tool.execute({ pattern: "zzz-never" }, ctx(ac.signal));
    ac.abort();
    const err = await pending.catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    const before = new AbortController();
    before.abort();
    expect(isAbortError(await tool.execute({ pattern: "x" }, ctx(before.signal)).catch((e: unknown) => e))).toBe(true);
  });

  test("a replaced root is WORKSPACE_ROOT_CHANGED", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createSearchTool(root);
    await rename(root, join(parent, "moved"));
    await mkdir(root);
    expect((await searchErr(tool, { pattern: "x" })).code).toBe("WORKSPACE_ROOT_CHANGED");
  });
});
