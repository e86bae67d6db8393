// edit_file's diff: bounded work, "diff omitted" past the budget, and an abort that agrees with
// what happened to the file.
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createEditTool, createWriteTool, isAbortError } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

const lines = (n: number, a: string, b: string) => Array.from({ length: n }, (_, i) => (i % 2 ? a : b)).join("\n") + "\n";

describe("edit_file diff", () => {
  test("replacing every line of a 64 KiB file says diff omitted", async () => {
    const { root } = await tempWorkspace();
    const old = lines(32_768, "a", "b");
    const next = lines(32_768, "c", "d");
    await writeFile(join(root, "big.txt"), old);
    const tool = createEditTool(root);
    const out = await tool.execute(tool.validate({ path: "big.txt", edits: [{ oldText: old, newText: next }] }), ctx());
    expect(out.diff).toContain("diff omitted: the change spans 32768 old and 32768 new lines");
    expect(await readFile(join(root, "big.txt"), "utf8")).toBe(next);
  });

  test("an aborted huge edit either rejects with AbortError and leaves the file, or resolves having written it", async () => {
    const { root } = await tempWorkspace();
    const tool = createEditTool(root);
    const write = createWriteTool(root);
    const a = lines(16_000, "x", "y");
    const b = lines(16_000, "p", "q");
    for (let i = 0; i < 24; i++) {
      const [from, to] = i % 2 ? [b, a] : [a, b];
      await write.execute({ path: "f.txt", content: from }, ctx());
      const ac = new AbortController();
      const pending = tool.execute({ path: "f.txt", edits: [{ oldText: from, newText: to }] }, ctx(ac.signal));
      // Abort at a different point of the call each round (microtasks to a few ms).
      if (i % 3 === 0) queueMicrotask(() => ac.abort());
      else setTimeout(() => ac.abort(), i % 5);
      const outcome = await pending.then(
        () => "done",
        (e: unknown) => (isAbortError(e) ? "aborted" : `error ${String(e)}`),
      );
      const now = await readFile(join(root, "f.txt"), "utf8");
      if (outcome === "aborted") expect(now, `round ${i}`).toBe(from);
      else expect([outcome, now === to], `round ${i}`).toEqual(["done", true]);
    }
  });
});
