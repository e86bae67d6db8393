// Process sessions: read_process latency when the output is already there, host memory per
// idle session, and the host's RSS while a session prints 1 GiB, each against child_process.
import { spawn } from "node:child_process";
import { writeFile, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { closeTools, createProcessTools } from "../dist/index.js";

const ctx = { signal: new AbortController().signal };

async function peakRssGrowth(run) {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 2);
  await run();
  clearInterval(timer);
  return peak - base;
}

export default async function sessions(h) {
  const { dir, cleanup } = await h.tempDir();
  const tools = createProcessTools(dir, { maxProcesses: 16 });
  const [start, read, , stop] = tools;
  try {
    // 1. read_process with output already there (cursor 0, no wait).
    const s = await start.execute({ argv: ["sh", "-c", "echo hello from the session; sleep 300"], waitFor: "hello", waitMs: 10000 }, ctx);
    const log = join(dir, "log.txt");
    await writeFile(log, "hello from the session\n");
    const mine = await h.latency(() => read.execute({ id: s.id, cursor: 0, waitMs: 0 }, ctx), { iterations: 3000 });
    const base = await h.latency(() => readFile(log, "utf8"), { iterations: 3000 });
    h.row({
      name: "read_process with output already there, median latency",
      subject: "read_process",
      baseline: "fs.promises.readFile of a log file",
      unit: "µs",
      subjectValue: mine.median,
      baselineValue: base.median,
      ratio: mine.median / base.median,
      target: "median < 500 µs",
      pass: mine.median < 500,
    });
    await stop.execute({ id: s.id, signal: "SIGKILL" }, ctx);

    // 2. Host memory per idle session vs per idle child_process child.
    const n = 8;
    globalThis.gc?.();
    const before = process.memoryUsage.rss();
    const ids = [];
    for (let i = 0; i < n; i++) ids.push((await start.execute({ argv: ["sleep", "300"], waitMs: 0 }, ctx)).id);
    const perSession = (process.memoryUsage.rss() - before) / n / 1024;
    for (const id of ids) await stop.execute({ id, signal: "SIGKILL" }, ctx);
    const before2 = process.memoryUsage.rss();
    const kids = [];
    for (let i = 0; i < n; i++) {
      const c = spawn("sleep", ["300"], { stdio: ["pipe", "pipe", "pipe"] });
      c.stdout.on("data", () => {});
      kids.push(c);
    }
    await new Promise((r) => setTimeout(r, 100));
    const perChild = (process.memoryUsage.rss() - before2) / n / 1024;
    for (const c of kids) c.kill("SIGKILL");
    h.row({
      name: "host RSS per idle session (8 sessions)",
      subject: "start_process",
      baseline: "child_process.spawn with piped stdio",
      unit: "KiB",
      subjectValue: perSession,
      baselineValue: perChild,
      ratio: perSession / Math.max(perChild, 1),
      target: "report",
      pass: true,
    });

    // 3. A session printing 1 GiB: the host's RSS stays flat.
    const growth = await peakRssGrowth(async () => {
      const g = await start.execute({ argv: ["sh", "-c", "head -c 1073741824 /dev/zero; echo; echo END"], waitFor: "END", waitMs: 30000 }, ctx);
      let r = g;
      while (r.running) r = await read.execute({ id: g.id, waitMs: 30000, waitFor: "will-not-match" }, ctx);
    });
    const baseGrowth = await peakRssGrowth(
      () =>
        new Promise((resolve) => {
          const c = spawn("sh", ["-c", "head -c 1073741824 /dev/zero"], { stdio: ["ignore", "pipe", "ignore"] });
          c.stdout.on("data", () => {});
          c.on("close", resolve);
        }),
    );
    h.row({
      name: "host RSS growth while a session prints 1 GiB",
      subject: "start_process + read_process",
      baseline: "child_process.spawn discarding stdout",
      unit: "MiB",
      subjectValue: growth / 1048576,
      baselineValue: baseGrowth / 1048576,
      ratio: growth / Math.max(baseGrowth, 1),
      target: "< 16 MiB",
      pass: growth < 16 * 1048576,
    });
  } finally {
    await closeTools(tools);
    await cleanup();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { createReporter } = await import("./lib.mjs");
  await sessions(createReporter());
}
