// node_process against the obvious alternative: Node's own child_process.spawn of the same
// Node.js on a script file, awaiting its exit. And the host's memory while a child prints 1 GiB.
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createNodeProcessTool } from "../dist/index.js";
import { interleaved } from "./lib.mjs";

const ctx = { signal: new AbortController().signal };

// The baseline gets the same environment as node_process (PATH only): an inherited variable
// such as NODE_EXTRA_CA_CERTS changes Node's own start-up time and would skew the ratio.
function childProcessRun(args, env = { PATH: process.env.PATH }) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env });
    child.stdout.on("data", () => {});
    child.stderr.on("data", () => {});
    child.on("error", reject);
    child.on("close", resolve);
  });
}

/** Peak growth of this process's RSS (bytes) while `run` runs, sampled every 2 ms. */
async function peakRssGrowth(run) {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 2);
  await run();
  clearInterval(timer);
  return Math.max(peak, process.memoryUsage.rss()) - base;
}

const PRINT_1GIB = `
const { writeSync } = require("fs");
const chunk = Buffer.alloc(1 << 20, "a");
for (let i = 0; i < 1024; i++) writeSync(1, chunk);
`;

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    // The process machinery alone: the sandbox's own cost is measured in bench/sandbox.mjs.
    const tool = createNodeProcessTool(dir, { timeoutMs: 120_000, sandbox: "off" });
    const file = join(dir, "empty.cjs");
    await writeFile(file, "");

    const n = 60;
    const [spawnOurs, spawnNode] = await interleaved([() => tool.execute({ source: "" }, ctx), () => childProcessRun([file])], { iterations: n, warmup: 5 });
    const spawnTimes = { a: spawnOurs, b: spawnNode, n };
    h.row({
      name: "node_process empty script, median wall time",
      subject: "node_process",
      baseline: "child_process.spawn(execPath, [file], { env: { PATH } }) awaiting close",
      unit: "ms",
      subjectValue: spawnTimes.a,
      baselineValue: spawnTimes.b,
      ratio: spawnTimes.a / spawnTimes.b,
      target: "<= 1.05",
      pass: spawnTimes.a / spawnTimes.b <= 1.05,
      notes: `${spawnTimes.n} alternating samples each`,
    });
    const [inheritedOurs, inheritedNode] = await interleaved([() => tool.execute({ source: "" }, ctx), () => childProcessRun([file], process.env)], { iterations: 20, warmup: 2 });
    const inherited = { a: inheritedOurs, b: inheritedNode };
    h.row({
      name: "node_process empty script vs spawn with the host's whole environment",
      subject: "node_process",
      baseline: "child_process.spawn(execPath, [file]) (inherits process.env) awaiting close",
      unit: "ms",
      subjectValue: inherited.a,
      baselineValue: inherited.b,
      ratio: inherited.a / inherited.b,
      target: "<= 1.05",
      pass: inherited.a / inherited.b <= 1.05,
      notes: "informational: the difference is Node's start-up with the host's variables",
    });

    const printer = join(dir, "print.cjs");
    await writeFile(printer, PRINT_1GIB);
    const MiB = 1024 * 1024;
    const ours = [];
    const theirs = [];
    for (let i = 0; i < 3; i++) {
      ours.push(
        await peakRssGrowth(async () => {
          const r = await tool.execute({ source: PRINT_1GIB }, ctx);
          if (!r.stdoutTruncated || r.exitCode !== 0) throw new Error("the 1 GiB printer did not run to the end");
        }),
      );
      theirs.push(await peakRssGrowth(() => childProcessRun([printer])));
    }
    const oursMax = Math.max(...ours) / MiB;
    const theirsMax = Math.max(...theirs) / MiB;
    h.row({
      name: "host peak RSS growth while a child prints 1 GiB",
      subject: "node_process",
      baseline: "child_process.spawn with stdout data discarded",
      unit: "MiB",
      subjectValue: oursMax,
      baselineValue: theirsMax,
      ratio: theirsMax > 0 ? oursMax / theirsMax : 0,
      target: "<= 16 MiB",
      pass: oursMax <= 16,
      notes: `worst of 3 runs; VmHWM ${readFileSync("/proc/self/status", "utf8").match(/VmHWM:\s+(\d+)/)?.[1]} kB`,
    });
  } finally {
    await cleanup();
  }
}
