// run_command against commands that try to hang the call, flood the host or outlive the call.
// Each must settle within a second past its timeout (or its exit), leave no process alive
// (checked through /proc by a marker in the environment the host passes) and no scratch
// directory behind.
import { spawn } from "node:child_process";
import { readdir } from "node:fs/promises";
import { describe, expect, test } from "vitest";
import { ToolError, createRunCommandTool } from "../dist/index.js";
import { ctx } from "./helpers.js";
import { expectNoneAlive, marker, peakRssGrowth, withScratch, zombieChildren } from "./process-helpers.js";

type RunTool = ReturnType<typeof createRunCommandTool>;

async function setup(options: Parameters<typeof createRunCommandTool>[1] = {}) {
  const { root, scratchDir } = await withScratch();
  const tool = createRunCommandTool(root, { scratchDir, inheritEnv: ["WC_MARK"], ...options });
  return { root, scratchDir, tool };
}

/** Runs `argv` with a fresh marker in WC_MARK; returns the output or the error and the time taken. */
async function settle(tool: RunTool, argv: string[], timeoutMs?: number) {
  const mark = marker();
  process.env.WC_MARK = mark;
  const started = performance.now();
  try {
    const input = tool.validate(timeoutMs === undefined ? { argv } : { argv, timeoutMs });
    const outcome = await tool.execute(input, ctx()).then(
      (output) => ({ output, error: undefined }),
      (error: unknown) => ({ output: undefined, error: error as ToolError }),
    );
    return { ...outcome, ms: performance.now() - started, mark };
  } finally {
    delete process.env.WC_MARK;
  }
}

describe("hostile commands", () => {
  test.each([
    { argv: ["sleep", "60"], timesOut: true },
    { argv: ["yes"], timesOut: true },
    { argv: ["sh", "-c", "sleep 60 &"], timesOut: false },
    { argv: ["setsid", "sleep", "60"], timesOut: false },
    { argv: ["bash", "-c", "exec > >(cat)"], timesOut: false },
    { argv: ["sh", "-c", "setsid sleep 60 & sleep 60 & sleep 60"], timesOut: true },
  ])("$argv settles within a second past its timeout and leaves nothing alive", async ({ argv, timesOut }) => {
    const { tool, scratchDir } = await setup();
    const r = await settle(tool, argv, 1_000);
    if (timesOut) {
      expect(r.error?.code).toBe("COMMAND_TIMEOUT");
      expect(r.error?.hint).toBeTruthy();
      expect(r.error?.details).toMatchObject({ timedOut: true, timeoutMs: 1_000, signal: "SIGKILL" });
    } else {
      expect(r.error).toBeUndefined();
      expect(r.output?.exitCode).toBe(0);
    }
    expect(r.ms).toBeLessThan(1_000 + 1_000);
    await expectNoneAlive(r.mark);
    expect(await readdir(scratchDir)).toEqual([]);
  });

  test("`yes` under a timeout: the partial output is bounded, head and tail kept", async () => {
    const { tool } = await setup({ outputHeadBytes: 10, outputTailBytes: 20 });
    const r = await settle(tool, ["yes"], 500);
    expect(r.error?.code).toBe("COMMAND_TIMEOUT");
    const d = r.error?.details as { output: string; truncated: boolean; omittedBytes: number };
    expect(d.truncated).toBe(true);
    expect(d.output).toMatch(/^y\ny\ny\ny\ny\n\n\[\d+ bytes omitted\]\n[y\n]{20}$/);
    expect(d.omittedBytes).toBeGreaterThan(1_000);
  });

  test("interleaved stdout and stderr lines keep their order", async () => {
    const { tool } = await setup();
    const script = "for i in $(seq 0 199); do echo out$i; echo err$i >&2; done";
    const r = await settle(tool, ["sh", "-c", script]);
    const expected = Array.from({ length: 200 }, (_, i) => `out${i}\nerr${i}\n`).join("");
    expect(r.output?.output).toBe(expected);
    // And from a program writing to both descriptors itself.
    const node = await settle(tool, ["node", "-e", "const fs=require('fs'); for (let i=0;i<100;i++){fs.writeSync(1,'o'+i+'\\n');fs.writeSync(2,'e'+i+'\\n')}"]);
    expect(node.output?.output).toBe(Array.from({ length: 100 }, (_, i) => `o${i}\ne${i}\n`).join(""));
  });

  test("a 1 GiB printer: host memory stays bounded; head, omission note and tail are shown", async () => {
    const { tool } = await setup();
    const script = "echo BEGIN; head -c 1073741824 /dev/zero | tr '\\0' a; echo; echo END";
    const { result: r, growth } = await peakRssGrowth(() => settle(tool, ["sh", "-c", script], 120_000));
    expect(r.error).toBeUndefined();
    const out = r.output!;
    expect(out.exitCode).toBe(0);
    expect(out.truncated).toBe(true);
    const total = 6 + 2 ** 30 + 1 + 4;
    expect(out.omittedBytes).toBe(total - 8_192 - 24_576);
    expect(out.output.startsWith(`BEGIN\n${"a".repeat(8_192 - 6)}\n[${total - 32_768} bytes omitted]\n`)).toBe(true);
    expect(out.output.endsWith(`${"a".repeat(24_576 - 5)}\nEND\n`)).toBe(true);
    expect(Buffer.byteLength(out.output)).toBeLessThan(33_000);
    // Keeping the whole output would grow the host by more than 1 GiB.
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    await expectNoneAlive(r.mark);
  }, 120_000);

  test("a command reading stdin gets end of file at once", async () => {
    const { tool } = await setup();
    const r = await settle(tool, ["sh", "-c", "cat; echo eof"], 10_000);
    expect(r.output?.output).toBe("eof\n");
  });

  test("30 calls while the same process spawns 30 children with child_process: all settle, all reaped", async () => {
    const { tool, scratchDir } = await setup();
    const mark = marker();
    process.env.WC_MARK = mark;
    try {
      const calls = Array.from({ length: 30 }, (_, i) => tool.execute({ argv: ["sh", "-c", `echo ${i}`] }, ctx()));
      const children = Array.from(
        { length: 30 },
        (_, i) =>
          new Promise<number | null>((resolve, reject) => {
            const child = spawn("sh", ["-c", `sleep 0.05; echo ${i}`], { env: { PATH: process.env.PATH, WC_MARK: mark } });
            let out = "";
            child.stdout.on("data", (d: Buffer) => (out += d));
            child.on("error", reject);
            child.on("close", (code) => (out.trim() === String(i) ? resolve(code) : reject(new Error(`child ${i}: ${out}`))));
          }),
      );
      const [outs, codes] = await Promise.all([Promise.all(calls), Promise.all(children)]);
      expect(outs.map((o) => o.output)).toEqual(Array.from({ length: 30 }, (_, i) => `${i}\n`));
      expect(codes.every((c) => c === 0)).toBe(true);
      await expectNoneAlive(mark);
      expect(zombieChildren()).toEqual([]);
      expect(await readdir(scratchDir)).toEqual([]);
    } finally {
      delete process.env.WC_MARK;
    }
  }, 60_000);
});
