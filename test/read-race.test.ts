// A racing attacker swaps a directory inside the root for a symlink to an outside directory in
// a tight loop (from a worker thread) while thousands of reads run. No read may ever return
// the outside canary.
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { ToolError, createReadTool, type ReadOutput } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

const swapper = `
const { workerData } = require("node:worker_threads");
const fs = require("node:fs");
const stop = new Int32Array(workerData.stop);
const { real, evil, dir } = workerData;
let swaps = 0;
while (Atomics.load(stop, 0) === 0) {
  try { fs.renameSync(real, dir); fs.renameSync(dir, real); } catch {}
  try { fs.renameSync(evil, dir); fs.renameSync(dir, evil); } catch {}
  swaps++;
}
Atomics.store(stop, 1, swaps);
`;

async function race(linkTarget: (parent: string) => string, depth: string): Promise<Record<string, number>> {
  const { parent, root } = await tempWorkspace();
  const base = join(root, depth);
  await mkdir(join(base, "real"), { recursive: true });
  await writeFile(join(base, "real", "f"), "inside");
  await mkdir(join(parent, "outside"));
  await writeFile(join(parent, "outside", "f"), "CANARY");
  await symlink(linkTarget(parent), join(base, "evil"));

  const stop = new SharedArrayBuffer(8);
  const worker = new Worker(swapper, {
    eval: true,
    workerData: { stop, real: join(base, "real"), evil: join(base, "evil"), dir: join(base, "dir") },
  });
  const tool = createReadTool(root);
  const seen: Record<string, number> = {};
  const target = join(depth, "dir", "f");
  const reader = async (): Promise<void> => {
    for (let i = 0; i < 400; i++) {
      try {
        const out = (await tool.execute({ path: target }, ctx())) as ReadOutput;
        expect(out.content).toBe("inside");
        seen.inside = (seen.inside ?? 0) + 1;
      } catch (err) {
        expect(err).toBeInstanceOf(ToolError);
        const code = (err as ToolError).code;
        expect(["PATH_ESCAPES_WORKSPACE", "FILE_NOT_FOUND", "TARGET_CHANGED"]).toContain(code);
        seen[code] = (seen[code] ?? 0) + 1;
      }
    }
  };
  await Promise.all(Array.from({ length: 10 }, reader));
  Atomics.store(new Int32Array(stop), 0, 1);
  await new Promise((r) => worker.once("exit", r));
  seen.swaps = new Int32Array(stop)[1];
  return seen;
}

describe("read_file under a racing symlink swap", () => {
  test("relative symlink to an outside directory: the canary is never read", async () => {
    const seen = await race(() => "../outside", ".");
    // The race really happened: reads met both the directory and the escaping link.
    expect(seen.swaps).toBeGreaterThan(100);
    expect((seen.inside ?? 0) + (seen.PATH_ESCAPES_WORKSPACE ?? 0) + (seen.FILE_NOT_FOUND ?? 0) + (seen.TARGET_CHANGED ?? 0)).toBe(4000);
    expect(seen.PATH_ESCAPES_WORKSPACE ?? 0).toBeGreaterThan(0);
  });

  test("absolute symlink, two levels down: the canary is never read", async () => {
    const seen = await race((parent) => join(parent, "outside"), "a/b");
    expect(seen.swaps).toBeGreaterThan(100);
    expect(seen.PATH_ESCAPES_WORKSPACE ?? 0).toBeGreaterThan(0);
  });
});
