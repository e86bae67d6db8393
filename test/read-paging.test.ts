import { createHash } from "node:crypto";
import { open, writeFile, truncate } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolError, createReadTool, type ReadOutput } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

type ReadTool = ReturnType<typeof createReadTool>;

async function read(tool: ReadTool, args: unknown): Promise<ReadOutput> {
  return tool.execute(tool.validate(args), ctx()) as Promise<ReadOutput>;
}

async function readErr(tool: ReadTool, args: unknown): Promise<ToolError> {
  const err = await Promise.resolve()
    .then(() => read(tool, args))
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

const MIB64 = 64 * 1024 * 1024;

describe("read_file without a window", () => {
  test("the output stays { path, content, bytes }", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\ntwo\n");
    expect(await read(createReadTool(root), { path: "a.txt" })).toEqual({ path: "a.txt", content: "one\ntwo\n", bytes: 8, hash: createHash("sha256").update("one\ntwo\n").digest("hex") });
  });

  test("over 65,536 bytes is FILE_TOO_LARGE and the hint says how to page", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "big.txt"), "x".repeat(65_537));
    const err = await readErr(createReadTool(root), { path: "big.txt" });
    expect(err.code).toBe("FILE_TOO_LARGE");
    expect(err.hint).toMatch(/offset/);
    expect(err.hint).toMatch(/limit/);
    expect(err.hint).toMatch(/nextOffset/);
  });
});

describe("read_file windows", () => {
  test("fields of a window, and the end of the file", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "f.txt"), "a\nb\r\nc");
    const tool = createReadTool(root);
    expect(await read(tool, { path: "f.txt", offset: 2, limit: 1 })).toEqual({
      path: "f.txt",
      content: "b\r\n",
      bytes: 3,
      hash: "fb129fc5b78b4080d40235bfb262c2d82b390e034a0c58adbc06e61ce1e717b9",
      fileBytes: 6,
      offset: 2,
      lines: 1,
      nextOffset: 3,
    });
    expect(await read(tool, { path: "f.txt", offset: 3 })).toEqual({
      path: "f.txt",
      content: "c",
      bytes: 1,
      hash: "fb129fc5b78b4080d40235bfb262c2d82b390e034a0c58adbc06e61ce1e717b9",
      fileBytes: 6,
      offset: 3,
      lines: 1,
      totalLines: 3,
    });
    expect(await read(tool, { path: "f.txt", limit: 10 })).toMatchObject({ content: "a\nb\r\nc", offset: 1, lines: 3, totalLines: 3 });
    const past = await read(tool, { path: "f.txt", offset: 4 });
    expect(past).toMatchObject({ content: "", lines: 0, totalLines: 3 });
    expect(past.nextOffset).toBeUndefined();
  });

  test("following nextOffset gives back a large file byte for byte", async () => {
    const { root } = await tempWorkspace();
    const lines: string[] = [];
    for (let i = 0; i < 20_000; i++) lines.push(`${i} ${"é".repeat(i % 13)}${i % 5 === 0 ? "\r\n" : "\n"}`);
    const text = lines.join("") + "no newline at the end";
    await writeFile(join(root, "log.txt"), text);
    const tool = createReadTool(root);
    let got = "";
    let offset: number | undefined = 1;
    let windows = 0;
    while (offset !== undefined) {
      const w = await read(tool, { path: "log.txt", offset });
      expect(w.bytes).toBeLessThanOrEqual(65_536);
      expect(Buffer.byteLength(w.content)).toBe(w.bytes);
      got += w.content;
      offset = w.nextOffset;
      windows++;
      // Without a limit, every window but the last is filled to within one line of the cap.
      if (offset !== undefined) expect(w.bytes).toBeGreaterThan(65_536 - 64);
      if (offset === undefined) expect(w.totalLines).toBe(20_001);
    }
    expect(got).toBe(text);
    expect(windows).toBeGreaterThanOrEqual(Math.ceil(Buffer.byteLength(text) / 65_536));
  });

  test("the 65,536-byte cap holds exactly at the boundary", async () => {
    const { root } = await tempWorkspace();
    const line = "x".repeat(1023) + "\n";
    await writeFile(join(root, "exact"), line.repeat(64));
    await writeFile(join(root, "over"), line.repeat(64) + "y\n");
    await writeFile(join(root, "shifted"), "z" + line.repeat(64));
    const tool = createReadTool(root);
    expect(await read(tool, { path: "exact", offset: 1 })).toMatchObject({ bytes: 65_536, lines: 64, totalLines: 64 });
    expect(await read(tool, { path: "over", offset: 1 })).toMatchObject({ bytes: 65_536, lines: 64, nextOffset: 65 });
    expect(await read(tool, { path: "shifted", offset: 1 })).toMatchObject({ bytes: 64_513, lines: 63, nextOffset: 64 });
    // A single line longer than the cap cannot be returned: FILE_TOO_LARGE with its number.
    await writeFile(join(root, "wide"), "ok\n" + "w".repeat(65_536) + "\n");
    expect(await read(tool, { path: "wide", offset: 1 })).toMatchObject({ content: "ok\n", nextOffset: 2 });
    const err = await readErr(tool, { path: "wide", offset: 2 });
    expect(err.code).toBe("FILE_TOO_LARGE");
    expect(err.details).toMatchObject({ line: 2 });
  });

  test("a 64 MiB file pages; one byte more is FILE_TOO_LARGE", async () => {
    const { root } = await tempWorkspace();
    // 1,048,576 lines of 64 bytes.
    const fh = await open(join(root, "max.txt"), "w");
    const block = Buffer.alloc(64 * 16_384);
    for (let chunk = 0; chunk < 64; chunk++) {
      for (let i = 0; i < 16_384; i++) {
        const n = chunk * 16_384 + i;
        block.write(String(n).padStart(63, " ") + "\n", i * 64, "latin1");
      }
      await fh.write(block);
    }
    await fh.close();
    const tool = createReadTool(root);
    expect(await read(tool, { path: "max.txt", offset: 1_048_576 })).toMatchObject({
      content: String(1_048_575).padStart(63, " ") + "\n",
      fileBytes: MIB64,
      totalLines: 1_048_576,
    });
    const tail = await read(tool, { path: "max.txt", offset: 1_047_553 });
    expect(tail).toMatchObject({ bytes: 65_536, lines: 1024, totalLines: 1_048_576 });
    expect(tail.nextOffset).toBeUndefined();
    expect(await read(tool, { path: "max.txt", offset: 1_047_552 })).toMatchObject({ bytes: 65_536, lines: 1024, nextOffset: 1_048_576 });
    expect(await read(tool, { path: "max.txt", offset: 524_289, limit: 2 })).toMatchObject({
      content: String(524_288).padStart(63, " ") + "\n" + String(524_289).padStart(63, " ") + "\n",
      nextOffset: 524_291,
    });
    const grown = await open(join(root, "max.txt"), "a");
    await grown.write("!");
    await grown.close();
    const err = await readErr(tool, { path: "max.txt", offset: 1, limit: 1 });
    expect(err.code).toBe("FILE_TOO_LARGE");
    expect(err.hint).toMatch(/search_files/);
  }, 120_000);

  test("a sparse 1 TiB file is refused without reading it", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "sparse"), "");
    await truncate(join(root, "sparse"), 2 ** 40);
    expect((await readErr(createReadTool(root), { path: "sparse", offset: 1, limit: 1 })).code).toBe("FILE_TOO_LARGE");
  });

  test("windows still refuse FIFOs, escapes and invalid UTF-8 in the window", async () => {
    const { parent, root } = await tempWorkspace();
    execFileSync("mkfifo", [join(root, "pipe")]);
    await writeFile(join(parent, "secret"), "s\n");
    const { symlink } = await import("node:fs/promises");
    await symlink("../secret", join(root, "out"));
    await writeFile(join(root, "mixed"), Buffer.concat([Buffer.from("ok\n"), Buffer.from([0xff, 0x0a]), Buffer.from("fine\n")]));
    const tool = createReadTool(root);
    expect((await readErr(tool, { path: "pipe", offset: 1 })).code).toBe("NOT_A_REGULAR_FILE");
    expect((await readErr(tool, { path: "out", limit: 1 })).code).toBe("PATH_ESCAPES_WORKSPACE");
    expect((await read(tool, { path: "mixed", offset: 3 })).content).toBe("fine\n");
    const bad = await readErr(tool, { path: "mixed", offset: 2, limit: 1 });
    expect(bad.code).toBe("INVALID_UTF8");
    expect(bad.details).toEqual({ offset: 3 });
  });

  test("offset and limit are positive integers", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a"), "x\n");
    const tool = createReadTool(root);
    for (const args of [
      { path: "a", offset: 0 },
      { path: "a", limit: 0 },
      { path: "a", offset: -1 },
      { path: "a", offset: 1.5 },
      { path: "a", offset: "1" },
      { path: "a", offset: 2 ** 32 },
      { path: "a", lines: 3 },
    ]) {
      const err = await readErr(tool, args);
      expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
      expect(err.message).toBe("INVALID_ARGUMENTS_SHAPE");
    }
    // Rust refuses them too, when execute is called without validate.
    const direct = (await tool.execute({ path: "a", offset: 0 }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(direct.message).toBe("INVALID_ARGUMENTS_SHAPE");
  });
});
