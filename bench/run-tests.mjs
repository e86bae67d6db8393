// run_tests hostile inputs: a vitest stand-in (node_modules/.bin/vitest) that writes a large
// report or replaces its report with a FIFO. Measured: the host's peak RSS growth while
// run_tests reads and parses the report, against parsing the same file as a generic JSON value
// in the host (JSON.parse: what a generic parse costs); and how soon a call whose report was
// replaced by a FIFO settles (the old read blocked forever).
import { execFileSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createRunTestsTool } from "../dist/index.js";

const ctx = { signal: new AbortController().signal };
const MiB = 1024 * 1024;

/** Peak growth of this process's RSS (bytes) while `run` runs, sampled every 2 ms. */
async function peakRssGrowth(run) {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 2);
  const result = await run();
  clearInterval(timer);
  return { growth: Math.max(peak, process.memoryUsage.rss()) - base, result };
}

// Writes a report of about `mib` MiB of tiny passing tests (the most structures per byte), or
// replaces the report with a FIFO.
const FAKE = `#!/usr/bin/env node
const fs = require("node:fs");
const out = process.argv.find((a) => a.startsWith("--outputFile=")).slice("--outputFile=".length);
const mode = fs.readFileSync("mode.txt", "utf8").trim();
if (mode === "fifo") { fs.rmSync(out); require("node:child_process").execFileSync("mkfifo", [out]); process.exit(0); }
const mib = Number(mode);
const test = '{"fullName":"t","status":"passed","failureMessages":[]}';
const perFile = 1000;
const file = '{"name":"' + process.cwd() + '/a.test.ts","status":"passed","message":"","assertionResults":[' + Array(perFile).fill(test).join(",") + "]}";
const files = Math.max(1, Math.floor((mib * 1048576) / file.length));
const fd = fs.openSync(out, "w");
fs.writeSync(fd, '{"numPassedTests":' + files * perFile + ',"numFailedTests":0,"numPendingTests":0,"numTodoTests":0,"success":true,"testResults":[');
for (let i = 0; i < files; i++) fs.writeSync(fd, (i ? "," : "") + file);
fs.writeSync(fd, "]}");
fs.closeSync(fd);
`;

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    const root = join(dir, "ROOT");
    const scratchDir = join(dir, "scratch");
    await mkdir(join(root, "node_modules/.bin"), { recursive: true });
    await mkdir(scratchDir);
    await writeFile(join(root, "node_modules/.bin/vitest"), FAKE);
    const tool = createRunTestsTool(root, { scratchDir, sandbox: "off" });
    const run = async (mode) => {
      await writeFile(join(root, "mode.txt"), mode);
      return tool.execute(tool.validate({ runner: "vitest", timeoutMs: 60_000 }), ctx);
    };
    // The same file a generic parse would read, written once outside the run.
    const reportCopy = join(dir, "report-7mib.json");

    for (const mib of [7, 64]) {
      const { growth, result } = await peakRssGrowth(() => run(String(mib)));
      const expected = mib < 8 ? "passed" : "incomplete";
      if (result.status !== expected) throw new Error(`a ${mib} MiB report gave ${result.status}: ${result.report.slice(0, 300)}`);
      // Baseline: the same report parsed as one generic value in the host.
      await writeFile(join(root, "mode.txt"), String(mib));
      execFileSync(process.execPath, [join(root, "node_modules/.bin/vitest"), `--outputFile=${reportCopy}`], { cwd: root });
      const base = await peakRssGrowth(async () => JSON.parse(await readFile(reportCopy, "utf8")).testResults.length);
      h.row({
        name: `run_tests: host peak RSS growth reading a ${mib} MiB vitest report (${mib < 8 ? "parsed" : "over the 8 MiB cap: refused"})`,
        subject: "run_tests",
        baseline: "JSON.parse of the same file in the host (a generic value)",
        unit: "MiB",
        subjectValue: growth / MiB,
        baselineValue: base.growth / MiB,
        ratio: base.growth > 0 ? growth / base.growth : 0,
        target: "<= 64 MiB",
        pass: growth / MiB <= 64,
        notes: `status ${result.status}`,
      });
    }

    const started = performance.now();
    const fifo = await run("fifo");
    const ms = performance.now() - started;
    h.row({
      name: "run_tests: a vitest report replaced by a FIFO, time to settle",
      subject: "run_tests",
      baseline: "the old read (blocks until a writer opens the FIFO: forever)",
      unit: "ms",
      subjectValue: ms,
      baselineValue: Infinity,
      ratio: 0,
      target: "settles, status incomplete",
      pass: fifo.status === "incomplete",
      notes: fifo.report.split("\n")[1] ?? "",
    });
  } finally {
    await cleanup();
  }
}
