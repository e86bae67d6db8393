// read_file against Node.js: the plain unconfined fs.promises.readFile (latency), and a
// synchronous Node.js implementation of the same confinement checks (throughput under 64
// concurrent callers, with the event loop's delay).
import fs, { constants } from "node:fs";
import { join, sep } from "node:path";
import { createReadTool } from "../dist/index.js";

/** The same checks in plain synchronous Node.js: the baseline a careful author would write. */
function syncConfinedReader(root) {
  const canonical = fs.realpathSync(root);
  const rootStat = fs.statSync(canonical);
  const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
  const buf = Buffer.allocUnsafe(65_537);
  return (rel) => {
    if (fs.realpathSync(root) !== canonical) throw new Error("WORKSPACE_ROOT_CHANGED");
    const st = fs.statSync(canonical);
    if (st.ino !== rootStat.ino || st.dev !== rootStat.dev) throw new Error("WORKSPACE_ROOT_CHANGED");
    const parts = rel.split("/");
    let at = canonical;
    let leaf;
    for (const part of parts) {
      if (part === "" || part === "." || part === ".." || part.includes("\\")) throw new Error("INVALID_RELATIVE_PATH");
      at += sep + part;
      leaf = fs.lstatSync(at);
      if (leaf.isSymbolicLink()) throw new Error("symlink: resolve it beneath the root");
    }
    const fd = fs.openSync(at, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    try {
      const fst = fs.fstatSync(fd);
      if (!fst.isFile()) throw new Error("NOT_A_REGULAR_FILE");
      if (fst.ino !== leaf.ino || fst.dev !== leaf.dev) throw new Error("TARGET_CHANGED");
      let n = 0;
      for (;;) {
        const got = fs.readSync(fd, buf, n, buf.length - n, null);
        if (got === 0 || (n += got) >= buf.length) break;
      }
      if (n > 65_536) throw new Error("FILE_TOO_LARGE");
      return { path: rel, content: decoder.decode(buf.subarray(0, n)), bytes: n };
    } finally {
      fs.closeSync(fd);
    }
  };
}

export default async function bench(h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    fs.mkdirSync(join(dir, "src"));
    const file = join(dir, "src", "file.txt");
    fs.writeFileSync(file, "x".repeat(4096));
    const tool = createReadTool(dir);
    const context = { signal: new AbortController().signal };
    const input = { path: "src/file.txt" };
    const syncRead = syncConfinedReader(dir);
    // Sanity: all three read the same bytes.
    const a = await tool.execute(input, context);
    if (a.content !== fs.readFileSync(file, "utf8") || syncRead("src/file.txt").content !== a.content) {
      throw new Error("bench: readers disagree");
    }

    // Alternating rounds (4,000 calls each after a warm-up), so both see the same machine.
    const mine = [];
    const base = [];
    await h.latency(() => tool.execute(input, context), { iterations: 0, warmup: 2_000 });
    await h.latency(() => fs.promises.readFile(file, "utf8"), { iterations: 0, warmup: 2_000 });
    for (let r = 0; r < 5; r++) {
      mine.push((await h.latency(() => tool.execute(input, context), { iterations: 4_000, warmup: 0 })).median);
      base.push((await h.latency(() => fs.promises.readFile(file, "utf8"), { iterations: 4_000, warmup: 0 })).median);
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ours = { median: med(mine) };
    const node = { median: med(base) };
    h.row({
      name: "read_file 4 KiB, sequential calls: median latency",
      subject: "read_file via tool.execute",
      baseline: "fs.promises.readFile",
      unit: "µs",
      subjectValue: ours.median,
      baselineValue: node.median,
      ratio: ours.median / node.median,
      target: "<= 0.3",
      pass: ours.median / node.median <= 0.3,
    });

    const durationMs = 3000;
    // The machine's own floor for the same harness: 64 callers that only await a 1 ms timer.
    const floor = await h.throughput(() => new Promise((r) => setTimeout(r, 1)), { concurrency: 64, durationMs });
    const tOurs = await h.throughput(() => tool.execute(input, context), { concurrency: 64, durationMs });
    const tSync = await h.throughput(async () => syncRead("src/file.txt"), { concurrency: 64, durationMs });
    const ratio = tOurs.callsPerSecond / tSync.callsPerSecond;
    h.row({
      name: "read_file, 64 concurrent callers, calls/s",
      subject: "read_file via tool.execute",
      baseline: "synchronous Node.js confined read",
      unit: "calls/s",
      subjectValue: tOurs.callsPerSecond,
      baselineValue: tSync.callsPerSecond,
      ratio,
      target: ">= 1.5",
      pass: ratio >= 1.5,
      notes: `event loop p99 delay: workcell ${tOurs.loopDelayP99Us.toFixed(0)} µs, sync baseline ${tSync.loopDelayP99Us.toFixed(0)} µs`,
    });
    h.row({
      name: "read_file, 64 concurrent callers, event loop p99 delay",
      subject: "read_file via tool.execute",
      baseline: "synchronous Node.js confined read",
      unit: "µs",
      subjectValue: tOurs.loopDelayP99Us,
      baselineValue: tSync.loopDelayP99Us,
      ratio: tOurs.loopDelayP99Us / Math.max(1, tSync.loopDelayP99Us),
      target: "workcell < 1000 µs",
      pass: tOurs.loopDelayP99Us < 1000,
    });
    h.row({
      name: "read_file, 64 concurrent callers, event loop p99 delay vs the machine's floor",
      subject: "read_file via tool.execute",
      baseline: "callers awaiting 1 ms timers (no I/O)",
      unit: "µs",
      subjectValue: tOurs.loopDelayP99Us,
      baselineValue: floor.loopDelayP99Us,
      ratio: tOurs.loopDelayP99Us / Math.max(1, floor.loopDelayP99Us),
      target: "<= floor + 1000 µs",
      pass: tOurs.loopDelayP99Us <= floor.loopDelayP99Us + 1000,
    });
  } finally {
    await cleanup();
  }
}
