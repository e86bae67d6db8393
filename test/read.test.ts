import { createHash } from "node:crypto";
import { mkdir, rename, symlink, writeFile, rm, truncate } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolError, createReadTool, createWriteTool, isAbortError, type ReadOutput } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

async function readErr(tool: ReturnType<typeof createReadTool>, path: string): Promise<ToolError> {
  const err = await tool.execute(tool.validate({ path }), ctx()).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe("read_file", () => {
  test("reads a file and reports the normalized path and byte length", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "src"));
    await writeFile(join(root, "src/a.txt"), "héllo");
    const tool = createReadTool(root);
    const out = await tool.execute(tool.validate({ path: "./src//a.txt" }), ctx());
    expect(out).toEqual({ path: "src/a.txt", content: "héllo", bytes: 6, hash: createHash("sha256").update("héllo").digest("hex") });
  });

  test("keeps a BOM, NUL bytes and 4-byte characters", async () => {
    const { root } = await tempWorkspace();
    const text = "\ufeffa\u0000b😀";
    await writeFile(join(root, "t.txt"), text);
    const tool = createReadTool(root);
    const out = (await tool.execute({ path: "t.txt" }, ctx())) as ReadOutput;
    expect(out.content).toBe(text);
    expect(out.bytes).toBe(Buffer.byteLength(text));
  });

  test("65,536 bytes is accepted, 65,537 is FILE_TOO_LARGE", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "max"), "a".repeat(65_536));
    await writeFile(join(root, "over"), "a".repeat(65_537));
    const tool = createReadTool(root);
    expect((await tool.execute({ path: "max" }, ctx())).bytes).toBe(65_536);
    const err = await readErr(tool, "over");
    expect(err.code).toBe("FILE_TOO_LARGE");
    expect(err.hint).toMatch(/offset|search/);
  });

  test("a sparse 1 GiB file is FILE_TOO_LARGE without reading it all", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "sparse"), "");
    await truncate(join(root, "sparse"), 1 << 30);
    const err = await readErr(createReadTool(root), "sparse");
    expect(err.code).toBe("FILE_TOO_LARGE");
  });

  test("invalid UTF-8 is INVALID_UTF8 with the byte offset", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "bin"), Buffer.from([0x61, 0x62, 0xc3, 0x28, 0x61]));
    const err = await readErr(createReadTool(root), "bin");
    expect(err.code).toBe("INVALID_UTF8");
    expect(err.details).toEqual({ offset: 2 });
  });

  test("missing file is FILE_NOT_FOUND with a hint", async () => {
    const { root } = await tempWorkspace();
    const err = await readErr(createReadTool(root), "missing.txt");
    expect(err.code).toBe("FILE_NOT_FOUND");
    expect(err.hint).toBeTruthy();
  });

  test("a directory is NOT_A_REGULAR_FILE", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "d"));
    expect((await readErr(createReadTool(root), "d")).code).toBe("NOT_A_REGULAR_FILE");
  });

  test("a FIFO with no writer never blocks: NOT_A_REGULAR_FILE", async () => {
    const { root } = await tempWorkspace();
    execFileSync("mkfifo", [join(root, "fifo")]);
    const started = Date.now();
    expect((await readErr(createReadTool(root), "fifo")).code).toBe("NOT_A_REGULAR_FILE");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("a symlink inside is followed; one leading outside is PATH_ESCAPES_WORKSPACE", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(root, "real.txt"), "inside");
    await writeFile(join(parent, "secret.txt"), "outside");
    await symlink("real.txt", join(root, "inner"));
    await symlink("../secret.txt", join(root, "outer"));
    await symlink(join(root, "real.txt"), join(root, "absolute"));
    const tool = createReadTool(root);
    expect(((await tool.execute({ path: "inner" }, ctx())) as ReadOutput).content).toBe("inside");
    expect((await readErr(tool, "outer")).code).toBe("PATH_ESCAPES_WORKSPACE");
    // An absolute symlink is refused even when it points inside.
    expect((await readErr(tool, "absolute")).code).toBe("PATH_ESCAPES_WORKSPACE");
  });

  test("a symlink loop is SYMLINK_LOOP", async () => {
    const { root } = await tempWorkspace();
    await symlink("b", join(root, "a"));
    await symlink("a", join(root, "b"));
    expect((await readErr(createReadTool(root), "a")).code).toBe("SYMLINK_LOOP");
  });

  test("an already aborted signal rejects with AbortError before reading", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a"), "x");
    const tool = createReadTool(root);
    const ac = new AbortController();
    ac.abort();
    const err = await tool.execute({ path: "a" }, ctx(ac.signal)).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
  });

  test("the root must exist and be a directory", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(root, "f"), "x");
    expect(() => createReadTool(join(parent, "missing"))).toThrow(ToolError);
    expect(() => createReadTool(join(root, "f"))).toThrow();
  });
});

describe("root replacement", () => {
  test("renamed away and recreated: WORKSPACE_ROOT_CHANGED, every time", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(root, "a"), "original");
    const tool = createReadTool(root);
    await rename(root, join(parent, "moved"));
    await mkdir(root);
    await writeFile(join(root, "a"), "replacement");
    for (let i = 0; i < 20; i++) expect((await readErr(tool, "a")).code).toBe("WORKSPACE_ROOT_CHANGED");
  });

  test("a root symlink repointed: WORKSPACE_ROOT_CHANGED, every time", async () => {
    const { parent } = await tempWorkspace();
    await mkdir(join(parent, "one"));
    await mkdir(join(parent, "two"));
    await writeFile(join(parent, "one/a"), "one");
    await writeFile(join(parent, "two/a"), "two");
    await symlink("one", join(parent, "link"));
    const tool = createReadTool(join(parent, "link"));
    expect(((await tool.execute({ path: "a" }, ctx())) as ReadOutput).content).toBe("one");
    await rm(join(parent, "link"));
    await symlink("two", join(parent, "link"));
    for (let i = 0; i < 20; i++) expect((await readErr(tool, "a")).code).toBe("WORKSPACE_ROOT_CHANGED");
  });

  test("a root renamed away with a symlink left at its old name is not adopted", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(root, "a"), "original");
    const read = createReadTool(root);
    const write = createWriteTool(root);
    expect(((await read.execute({ path: "a" }, ctx())) as ReadOutput).content).toBe("original");
    await rename(root, join(parent, "moved"));
    await symlink("moved", root);
    for (let i = 0; i < 20; i++) expect((await readErr(read, "a")).code).toBe("WORKSPACE_ROOT_CHANGED");
    const err = await write.execute({ path: "b", content: "x" }, ctx()).then(() => undefined, (e: unknown) => e);
    expect((err as ToolError).code).toBe("WORKSPACE_ROOT_CHANGED");
    expect(existsSync(join(parent, "moved/b"))).toBe(false);
  });

  test("a root given through a symlink: its directory renamed away behind a symlink is not adopted", async () => {
    const { parent } = await tempWorkspace();
    await mkdir(join(parent, "real"));
    await writeFile(join(parent, "real/a"), "real");
    await symlink("real", join(parent, "link"));
    const read = createReadTool(join(parent, "link"));
    for (let i = 0; i < 3; i++) expect(((await read.execute({ path: "a" }, ctx())) as ReadOutput).content).toBe("real");
    await rename(join(parent, "real"), join(parent, "real2"));
    await symlink("real2", join(parent, "real"));
    for (let i = 0; i < 20; i++) expect((await readErr(read, "a")).code).toBe("WORKSPACE_ROOT_CHANGED");
  });

  test("deleted root: WORKSPACE_ROOT_CHANGED", async () => {
    const { root } = await tempWorkspace();
    const tool = createReadTool(root);
    await rm(root, { recursive: true });
    expect((await readErr(tool, "a")).code).toBe("WORKSPACE_ROOT_CHANGED");
  });
});

describe("many calls at once", () => {
  // Under load a finishing read may leave waking the event loop to the next one of its lane
  // (one wake-up for several calls): every call still settles, with its own file, and so does
  // a lone call after the burst, and calls from bursts that end at different times.
  test("a burst of 300 reads, bursts ending apart, and a lone read after them all settle with their own content", async () => {
    const { root } = await tempWorkspace();
    for (let i = 0; i < 300; i++) await writeFile(join(root, `f${i}.txt`), `file ${i}\n`.repeat(1 + (i % 50)));
    const tool = createReadTool(root);
    const read = async (i: number) => ((await tool.execute({ path: `f${i}.txt` }, ctx())) as ReadOutput).content;
    const all = await Promise.all(Array.from({ length: 300 }, (_, i) => read(i)));
    all.forEach((c, i) => expect(c).toBe(`file ${i}\n`.repeat(1 + (i % 50))));
    for (let round = 0; round < 20; round++) {
      const n = 1 + ((round * 7) % 13);
      const got = await Promise.all(Array.from({ length: n }, (_, i) => read((round * 13 + i) % 300)));
      got.forEach((c, i) => expect(c).toBe(`file ${(round * 13 + i) % 300}\n`.repeat(1 + (((round * 13 + i) % 300) % 50))));
    }
    expect(await read(7)).toBe("file 7\n".repeat(8));
  });
});
