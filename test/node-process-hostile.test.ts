// node_process against children that try to hang the call, flood the host or outlive the call.
// Each must settle within a second past its timeout (or exit), leave no process alive (checked
// through /proc by a marker in the child's arguments or environment) and no script behind.
import { spawn } from "node:child_process";
import { describe, expect, test } from "vitest";
import { ToolError, createNodeProcessTool } from "../dist/index.js";
import { binding } from "../dist/native.js";
import { ctx, tempWorkspace } from "./helpers.js";
import { expectNoneAlive, marker, peakRssGrowth, scriptLeftovers, zombieChildren } from "./process-helpers.js";

type NodeTool = ReturnType<typeof createNodeProcessTool>;

/** Runs `source` with `mark` as its only argument; returns the output or the error, and the time taken. */
async function settle(tool: NodeTool, source: string, mark: string) {
  const started = performance.now();
  const outcome = await tool.execute(tool.validate({ source, arguments: [mark] }), ctx()).then(
    (output) => ({ output, error: undefined }),
    (error: unknown) => ({ output: undefined, error: error as ToolError }),
  );
  return { ...outcome, ms: performance.now() - started };
}

/** Source that starts `sleep 30` children carrying the marker (argv[1]) in their environment. */
const sleeper = (options: string) => `{
  const { spawn } = require("child_process");
  const env = { ...process.env, WC_MARK: process.argv[1] };
  spawn("sleep", ["30"], { env, ${options} }).unref();
}`;

describe.each(["auto", "thread"] as const)("hostile children (reaper: %s)", (reaper) => {
  test("an infinite loop: timeout, killed", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 1_000, reaper });
    const mark = marker();
    const r = await settle(tool, "for (;;) {}", mark);
    expect(r.error?.code).toBe("NODE_PROCESS_TIMEOUT");
    expect(r.ms).toBeLessThan(1_000 + 1_000);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("a child that ignores SIGTERM is killed at the timeout", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 1_000, reaper });
    const mark = marker();
    const r = await settle(tool, "process.on('SIGTERM', () => {}); console.log('armed'); setInterval(() => {}, 1000)", mark);
    expect(r.error?.code).toBe("NODE_PROCESS_TIMEOUT");
    expect((r.error?.details as { stdout: string }).stdout).toBe("armed\n");
    expect(r.ms).toBeLessThan(2_000);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("background `sleep 30` children of a child that exits are killed with it", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 5_000, reaper });
    const mark = marker();
    const source =
      sleeper('stdio: "ignore"') + sleeper('stdio: "inherit"') + sleeper('stdio: "ignore"') + "console.log('spawned')";
    const r = await settle(tool, source, mark);
    expect(r.output).toMatchObject({ exitCode: 0, stdout: "spawned\n" });
    expect(r.ms).toBeLessThan(5_000 + 1_000);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("a setsid grandchild holding stdout cannot keep the call waiting, and is killed", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 5_000, reaper });
    const mark = marker();
    // detached: true makes the grandchild call setsid: it leaves the process group.
    const source = sleeper('detached: true, stdio: ["ignore", "inherit", "inherit"]') + "console.log('leader done')";
    const r = await settle(tool, source, mark);
    expect(r.output).toMatchObject({ exitCode: 0, stdout: "leader done\n" });
    expect(r.ms).toBeLessThan(5_000 + 1_000);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("a setsid grandchild holding the pipes past a timeout is killed too", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 1_000, reaper });
    const mark = marker();
    const source = sleeper('detached: true, stdio: ["ignore", "inherit", "inherit"]') + "setInterval(() => {}, 1000)";
    const r = await settle(tool, source, mark);
    expect(r.error?.code).toBe("NODE_PROCESS_TIMEOUT");
    expect(r.ms).toBeLessThan(2_000);
    await expectNoneAlive(mark);
  });

  test("a child reading stdin gets end of file at once", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 5_000, reaper });
    const mark = marker();
    const source = `
      const sync = require("fs").readFileSync(0);
      let n = 0;
      process.stdin.on("data", (d) => (n += d.length));
      process.stdin.on("end", () => console.log(JSON.stringify({ sync: sync.length, stream: n })));`;
    const r = await settle(tool, source, mark);
    expect(r.output).toMatchObject({ exitCode: 0 });
    expect(JSON.parse(r.output!.stdout)).toEqual({ sync: 0, stream: 0 });
    await expectNoneAlive(mark);
  });
});

// The printers write with fs.writeSync: \`while (true) process.stdout.write(...)\` on a pipe never
// yields to the event loop, so Node queues the data inside the child instead of writing it.
describe("hostile output", () => {
  test("a child printing more than 1 GiB: drained to the end, 32,768 bytes kept, host memory bounded", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 60_000 });
    const mark = marker();
    const source = `
      const { writeSync } = require("fs");
      const chunk = Buffer.alloc(1 << 20, "a");
      let n = 0;
      while (true) { n += writeSync(1, chunk); if (n > 1.05 * 2 ** 30) break; }
      writeSync(2, String(n));`;
    const { result: r, growth } = await peakRssGrowth(() => settle(tool, source, mark));
    expect(r.error).toBeUndefined();
    expect(r.output).toMatchObject({ exitCode: 0, stdoutTruncated: true, stderrTruncated: false });
    expect(r.output!.stdout).toBe("a".repeat(32_768));
    expect(Number(r.output!.stderr)).toBeGreaterThan(2 ** 30);
    // Keeping the whole output would grow the host by more than 1 GiB.
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  }, 120_000);

  test("an endless printer is stopped at its timeout with bounded partial output", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 1_500 });
    const mark = marker();
    const { result: r, growth } = await peakRssGrowth(() =>
      settle(tool, "const c = Buffer.alloc(65536, 'z'); while (true) require('fs').writeSync(1, c);", mark),
    );
    expect(r.error?.code).toBe("NODE_PROCESS_TIMEOUT");
    expect(r.error?.details).toMatchObject({ stdout: "z".repeat(32_768), stdoutTruncated: true, timedOut: true });
    expect(r.ms).toBeLessThan(1_500 + 1_000);
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("`while (true) process.stdout.write(...)` with the default timeout: killed, bounded, nothing left", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    const mark = marker();
    const { result: r, growth } = await peakRssGrowth(() =>
      settle(tool, "const c = 'w'.repeat(65536); while (true) process.stdout.write(c);", mark),
    );
    expect(r.error?.code).toBe("NODE_PROCESS_TIMEOUT");
    expect(r.error?.details).toMatchObject({ stdoutTruncated: true, timedOut: true, timeoutMs: 500 });
    expect((r.error?.details as { stdout: string }).stdout).toBe("w".repeat(32_768));
    expect(r.ms).toBeLessThan(500 + 1_000);
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    await expectNoneAlive(mark);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("invalid UTF-8 becomes U+FFFD", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 5_000 });
    const out = await tool.execute(
      { source: "process.stdout.write(Buffer.from([0x61, 0xff, 0x62, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0x63])); process.stderr.write(Buffer.from([0xe2, 0x82]))" },
      ctx(),
    );
    expect(out.stdout).toBe("a\ufffdb\ufffd(\ufffd\ufffd\ufffdc");
    expect(out.stderr).toBe("\ufffd");
  });

  test("a multi-byte character straddling the 32,768-byte cap is cut whole", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 5_000 });
    // 😀 is 4 bytes: starting at byte 32,766 it would end at 32,770.
    const straddle = await tool.execute({ source: "process.stdout.write('a'.repeat(32766) + '😀' + 'tail')" }, ctx());
    expect(straddle.stdout).toBe("a".repeat(32_766));
    expect(straddle.stdoutTruncated).toBe(true);
    // é is 2 bytes: starting at byte 32,767.
    const two = await tool.execute({ source: "process.stderr.write('b'.repeat(32767) + 'é')" }, ctx());
    expect(two.stderr).toBe("b".repeat(32_767));
    expect(two.stderrTruncated).toBe(true);
    // Ending exactly at the cap: kept whole, not truncated.
    const exact = await tool.execute({ source: "process.stdout.write('a'.repeat(32764) + '😀')" }, ctx());
    expect(exact.stdout).toBe("a".repeat(32_764) + "😀");
    expect(exact.stdoutTruncated).toBe(false);
  });
});

describe.each(["auto", "thread"] as const)("concurrency (reaper: %s)", (reaper) => {
  test("50 calls while the same process spawns 50 children with child_process: all settle, all reaped", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 120_000, reaper });
    const mark = marker();
    const calls = Array.from({ length: 50 }, (_, i) =>
      tool.execute({ source: "console.log(process.argv[2])", arguments: [mark, String(i)] }, ctx()),
    );
    const children = Array.from(
      { length: 50 },
      (_, i) =>
        new Promise<number | null>((resolve, reject) => {
          const child = spawn(process.execPath, ["-e", "setTimeout(() => console.log(process.argv[1]), 50)", String(i)], {
            env: { PATH: process.env.PATH, WC_MARK: mark },
          });
          let out = "";
          child.stdout.on("data", (d: Buffer) => (out += d));
          child.on("error", reject);
          child.on("close", (code) => (out.trim() === String(i) ? resolve(code) : reject(new Error(`child ${i}: ${out}`))));
        }),
    );
    const [outs, codes] = await Promise.all([Promise.all(calls), Promise.all(children)]);
    expect(outs.map((o) => o.stdout)).toEqual(Array.from({ length: 50 }, (_, i) => `${i}\n`));
    expect(outs.every((o) => o.exitCode === 0)).toBe(true);
    expect(codes.every((c) => c === 0)).toBe(true);
    await expectNoneAlive(mark);
    expect(zombieChildren()).toEqual([]);
    expect(scriptLeftovers(root)).toEqual([]);
  }, 180_000);
});

test("pidfd is checked at load and used on this kernel", () => {
  expect(binding.processReaper()).toBe("pidfd");
});
