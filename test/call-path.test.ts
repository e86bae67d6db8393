// The event loop's share of a read_file or write_file call: its arguments are converted, its
// result is built from the core's own types (src/js.rs: ASCII strings copied as Latin-1, the
// rest decoded as UTF-8, numbers and details as napi makes them), and a write's filesystem work
// runs on workcell's own bounded write lane. These check that the cheaper paths give exactly
// what the plain ones did.
import { availableParallelism } from "node:os";
import { readFile, readdir, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createReadTool, createWriteTool, ToolError } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

// Text that moves between ASCII runs and others at every kind of boundary: two-byte (Latin-1
// range, which must not be taken for Latin-1 bytes), three-byte, and surrogate pairs, at the
// start, the end and back to back.
const MIXED = [
  "plain ascii\n",
  "café ü ÿ \u0080\u00a0",
  "é",
  "日本語のテキスト",
  "😀x😀😀",
  "a\u0000b\u007f",
  "x".repeat(5000) + "é" + "y".repeat(3) + "😀",
  "😀" + "z".repeat(100),
];

describe("call path", () => {
  test("read_results_keep_ascii_latin1_range_and_astral_text_exact", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "dé"));
    const read = createReadTool(root);
    for (const [i, text] of MIXED.entries()) {
      const path = `dé/f${i}-ü.txt`;
      await writeFile(join(root, path), text);
      const r = await read.execute({ path }, ctx());
      if (!("content" in r)) throw new Error("expected text");
      expect(r.content).toBe(text);
      expect(r.path).toBe(path);
      expect(r.bytes).toBe(Buffer.byteLength(text));
      expect(r.hash).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  test("error_details_come_out_as_numbers_and_objects", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "big.txt"), ("x".repeat(99) + "\n").repeat(700));
    await writeFile(join(root, "bin.txt"), Buffer.from([0x61, 0x62, 0xff, 0x63]));
    const read = createReadTool(root);
    const big = await read.execute({ path: "big.txt" }, ctx()).catch((e: unknown) => e);
    expect(big).toBeInstanceOf(ToolError);
    expect((big as ToolError).code).toBe("FILE_TOO_LARGE");
    expect((big as ToolError).details).toEqual({ limit: 65_536 });
    const bin = await read.execute({ path: "bin.txt" }, ctx()).catch((e: unknown) => e);
    expect((bin as ToolError).code).toBe("INVALID_UTF8");
    expect((bin as ToolError).details).toEqual({ offset: 2 });
    const windowed = await read.execute({ path: "big.txt", offset: 1, limit: 1 }, ctx());
    expect(windowed).toMatchObject({ path: "big.txt", fileBytes: 70_000, offset: 1, lines: 1 });
  });

  test("write_content_with_mixed_runs_lands_byte_for_byte", async () => {
    const { root } = await tempWorkspace();
    const write = createWriteTool(root, { maxContentBytes: 1 << 20 });
    for (const [i, text] of MIXED.entries()) {
      for (const validate of [true, false]) {
        const input = { path: `w${i}-${validate}-é.txt`, content: text };
        const r = await write.execute(validate ? write.validate(input) : input, ctx());
        expect(r).toEqual({ path: input.path, bytes: Buffer.byteLength(text), created: true });
        expect(await readFile(join(root, input.path), "utf8")).toBe(text);
      }
    }
  });

  test.runIf(process.platform === "linux")("writes_run_on_a_bounded_lane_of_named_threads", async () => {
    const { root } = await tempWorkspace();
    const write = createWriteTool(root);
    const results = await Promise.all(
      Array.from({ length: 64 }, (_, i) => write.execute({ path: `d${i % 8}/f${i}.txt`, content: `file ${i}\n` }, ctx())),
    );
    expect(results.map((r) => r.path)).toEqual(Array.from({ length: 64 }, (_, i) => `d${i % 8}/f${i}.txt`));
    const names: string[] = [];
    for (const task of await readdir("/proc/self/task")) {
      names.push((await readFile(`/proc/self/task/${task}/comm`, "utf8").catch(() => "")).trim());
    }
    // However many writes run at once, their filesystem phases use the cores minus one threads.
    const lane = names.filter((n) => n.startsWith("workcell-write"));
    expect(lane.length).toBeGreaterThanOrEqual(1);
    expect(lane.length).toBeLessThanOrEqual(Math.max(1, availableParallelism() - 1));
  });
});
