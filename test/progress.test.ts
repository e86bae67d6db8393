// Progress while a call runs (contract §18): updates built in the core, taken by the host at most
// every 250 ms, none after the call settled; a listener that throws or blocks changes nothing.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createNodeProcessTool, createRunCommandTool, createRunTestsTool, createProcessTools, closeTools } from "../dist/index.js";
import type { Progress } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";
import { withScratch } from "./process-helpers.js";

/** Prints `line 0` … `line 19`, one every 100 ms (2 s). */
const TWENTY_LINES = `let i = 0;
const t = setInterval(() => { console.log("line " + i); if (++i === 20) clearInterval(t); }, 100);`;

/** Waits until `cond()` holds (polling the loop, no fixed sleep); fails after `ms`. */
async function until(cond: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setImmediate(r));
  }
}

/**
 * Proves that no update of an earlier call arrives after it settled: a second watched call runs
 * until it has had two updates of its own (so the earlier call's timer, had it been left
 * running, would have fired several times), then the earlier list must be unchanged.
 */
async function noUpdateAfterSettling(updates: Progress[], root: string): Promise<void> {
  const seen = updates.length;
  const other = createNodeProcessTool(root, { timeoutMs: 20_000 });
  const later: Progress[] = [];
  const stop = new AbortController();
  const running = other
    .execute(other.validate({ source: "setInterval(() => console.log('tick'), 50)" }), {
      signal: stop.signal,
      onProgress: (u) => void later.push(u),
    })
    .catch(() => undefined);
  await until(() => later.length >= 2);
  expect(updates.length).toBe(seen);
  stop.abort();
  await running;
}

function checkUpdates(updates: Progress[]): void {
  for (const [i, u] of updates.entries()) {
    expect(typeof u.message).toBe("string");
    expect(u.message.length).toBeGreaterThan(0);
    if (u.output !== undefined) expect(Buffer.byteLength(u.output)).toBeLessThanOrEqual(4096);
    if (i > 0) expect(u.elapsedMs - updates[i - 1]!.elapsedMs).toBeGreaterThanOrEqual(250);
  }
}

describe("progress: node_process and run_command stream their output", () => {
  test("a script printing a line every 100 ms gives several updates whose output is a prefix of its stdout, none after settling", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 20_000 });
    const updates: Progress[] = [];
    const out = await tool.execute(tool.validate({ source: TWENTY_LINES }), { ...ctx(), onProgress: (u) => void updates.push(u) });
    expect(out.exitCode).toBe(0);
    expect(out.stdout).toBe(Array.from({ length: 20 }, (_, i) => `line ${i}\n`).join(""));
    expect(updates.length).toBeGreaterThanOrEqual(3);
    checkUpdates(updates);
    const streamed = updates.map((u) => u.output ?? "").join("");
    expect(streamed.length).toBeGreaterThan(0);
    expect(out.stdout.startsWith(streamed)).toBe(true);
    // Output came in more than one piece, while the script ran.
    expect(updates.filter((u) => u.output).length).toBeGreaterThanOrEqual(2);
    await noUpdateAfterSettling(updates, root);
  });

  test("run_command streams its merged output the same way", async () => {
    const { root, scratchDir } = await withScratch();
    const tool = createRunCommandTool(root, { scratchDir });
    const updates: Progress[] = [];
    const out = await tool.execute(
      tool.validate({ argv: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo step $i; sleep 0.1; done"] }),
      { ...ctx(), onProgress: (u) => void updates.push(u) },
    );
    expect(out.exitCode).toBe(0);
    expect(updates.length).toBeGreaterThanOrEqual(2);
    checkUpdates(updates);
    expect(updates[0]!.message).toContain("sh");
    expect(out.output.startsWith(updates.map((u) => u.output ?? "").join(""))).toBe(true);
    await noUpdateAfterSettling(updates, root);
  });

  test("a listener that throws, or blocks the thread, changes nothing in the result", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 20_000 });
    const input = tool.validate({ source: TWENTY_LINES });
    const plain = await tool.execute(input, ctx());
    let thrown = 0;
    const throwing = await tool.execute(input, {
      ...ctx(),
      onProgress: () => {
        thrown++;
        throw new Error("listener failure");
      },
    });
    let rejected = 0;
    const rejecting = await tool.execute(input, {
      ...ctx(),
      onProgress: () => {
        rejected++;
        return Promise.reject(new Error("async listener failure")) as unknown as void;
      },
    });
    // Blocks this thread 2.5 s per update: the script runs on (its time is the core's), so
    // its duration stays what it is without a listener; had the core waited for the listener,
    // it would have grown by the time blocked.
    let blocked = 0;
    const blocking = await tool.execute(input, {
      ...ctx(),
      onProgress: () => {
        blocked++;
        const end = Date.now() + 2_500;
        while (Date.now() < end) {
          // busy
        }
      },
    });
    expect(thrown).toBeGreaterThanOrEqual(1);
    expect(rejected).toBeGreaterThanOrEqual(1);
    expect(blocked).toBeGreaterThanOrEqual(1);
    const same = ({ durationMs: _d, ...rest }: typeof plain) => rest;
    expect(same(throwing)).toEqual(same(plain));
    expect(same(rejecting)).toEqual(same(plain));
    expect(same(blocking)).toEqual(same(plain));
    expect(blocking.durationMs).toBeLessThan(plain.durationMs + 1_500);
  });

  test("start_process streams what arrives while it waits for waitFor", async () => {
    const { root, scratchDir } = await withScratch();
    const tools = createProcessTools(root, { scratchDir });
    try {
      const start = tools.find((t) => t.name === "start_process")!;
      const updates: Progress[] = [];
      const out = (await start.execute(
        start.validate({ argv: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo warming $i; sleep 0.1; done; echo ready; sleep 5"], waitFor: "ready", waitMs: 10_000 }),
        { ...ctx(), onProgress: (u) => void updates.push(u) },
      )) as { matched: boolean; output: string };
      expect(out.matched).toBe(true);
      expect(updates.length).toBeGreaterThanOrEqual(2);
      checkUpdates(updates);
      expect(updates[0]!.message).toMatch(/^p\d+: sh started; waiting/);
      expect(out.output.startsWith(updates.map((u) => u.output ?? "").join(""))).toBe(true);
      await noUpdateAfterSettling(updates, root);
    } finally {
      await closeTools(tools);
    }
  });
});

describe("progress: run_tests counts the tests as the runner reports them", () => {
  test("node --test: the counts grow while the run goes on, and end at the result's", async () => {
    const { root, scratchDir } = await withScratch();
    await mkdir(join(root, "test"));
    const slow = (n: number) =>
      `const test = require("node:test");\n` +
      Array.from({ length: n }, (_, i) => `test("t${i}", async () => { await new Promise((r) => setTimeout(r, 120)); });`).join("\n");
    await writeFile(join(root, "test", "a.test.js"), slow(10));
    await writeFile(join(root, "test", "b.test.js"), `${slow(6)}\ntest("fails", () => { throw new Error("no"); });\n`);
    const tool = createRunTestsTool(root, { scratchDir, timeoutMs: 60_000 });
    const updates: Progress[] = [];
    const out = await tool.execute(tool.validate({ runner: "node", args: ["test/a.test.js", "test/b.test.js"] }), {
      ...ctx(),
      onProgress: (u) => void updates.push(u),
    });
    expect(out.passed).toBe(16);
    expect(out.failed).toBe(1);
    checkUpdates(updates);
    const counted = updates.filter((u) => u.progress !== undefined);
    expect(counted.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < counted.length; i++) expect(counted[i]!.progress!).toBeGreaterThanOrEqual(counted[i - 1]!.progress!);
    expect(new Set(counted.map((u) => u.progress)).size).toBeGreaterThanOrEqual(2);
    expect(counted.at(-1)!.progress!).toBeLessThanOrEqual(17);
    expect(counted.at(-1)!.message).toMatch(/^\d+ passed, \d+ failed/);
    // The runner's structured events are not shown as output.
    expect(updates.some((u) => (u.output ?? "").includes('"e":'))).toBe(false);
  });
});
