// search_files over a generated tree of 20,000 files, against the `rg` binary (Debian package
// `ripgrep`; its row is skipped with a notice when rg is not installed) and against a plain
// Node.js walk-and-regex (fs.promises readdir recursive + readFile + RegExp). All three search
// the same tree, warm in the page cache, for a pattern found in 50 files, with every match
// collected (workcell's limit is raised so it never stops early).
import { execFile, spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createSearchTool } from "../dist/index.js";

const DIRS = 200;
const FILES_PER_DIR = 100;
const PATTERN = "needle_[0-9]+";

const words = ["const", "let", "value", "return", "function", "import", "export", "module", "async", "await", "result", "error"];

function fileText(n) {
  // About 2 KiB of source-like text: 60 short lines.
  const lines = [];
  for (let i = 0; i < 60; i++) {
    const a = words[(n + i) % words.length];
    const b = words[(n * 7 + i * 3) % words.length];
    lines.push(`${a} ${b}_${i} = compute(${n}, ${i}); // ${b} ${a}`);
  }
  if (n % 400 === 0) lines[30] = `const needle_${n} = true;`;
  return lines.join("\n") + "\n";
}

async function generate(root) {
  let n = 0;
  for (let d = 0; d < DIRS; d++) {
    const dir = join(root, `pkg${String(d).padStart(3, "0")}`, "src");
    await mkdir(dir, { recursive: true });
    const writes = [];
    for (let f = 0; f < FILES_PER_DIR; f++) writes.push(writeFile(join(dir, `file${String(f).padStart(3, "0")}.ts`), fileText(n++)));
    await Promise.all(writes);
  }
  return n;
}

function rgAvailable() {
  const r = spawnSync("rg", ["--version"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.split("\n")[0] : null;
}

function runRg(root) {
  return new Promise((resolve, reject) => {
    execFile("rg", ["--no-config", "-n", "--no-heading", PATTERN, "."], { cwd: root, maxBuffer: 64 << 20 }, (err, stdout) => {
      if (err && err.code !== 1) reject(err);
      else resolve(stdout.split("\n").filter(Boolean).length);
    });
  });
}

async function nodeWalk(root) {
  const re = new RegExp(PATTERN);
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files = entries.filter((e) => e.isFile()).map((e) => join(e.parentPath ?? e.path, e.name));
  const matches = [];
  // Bounded concurrency, as a careful Node.js implementation would do.
  let next = 0;
  const worker = async () => {
    while (next < files.length) {
      const file = files[next++];
      const text = await readFile(file, "utf8");
      const lines = text.split("\n");
      for (let i = 0; i < lines.length; i++) if (re.test(lines[i])) matches.push(`${file}:${i + 1}: ${lines[i]}`);
    }
  };
  await Promise.all(Array.from({ length: 16 }, worker));
  return matches.length;
}

export default async function (h) {
  const { dir, cleanup } = await h.tempDir("workcell-bench-search-");
  try {
    const count = await generate(dir);
    console.log(`  generated ${count} files in ${DIRS * 2} directories`);
    const tool = createSearchTool(dir);
    const signal = new AbortController().signal;
    const ours = async () => (await tool.execute({ pattern: PATTERN, limit: 1000 }, { signal })).matches.length;
    const expected = await ours();
    if (expected !== count / 400) throw new Error(`search_files found ${expected} matches, expected ${count / 400}`);
    if ((await nodeWalk(dir)) !== expected) throw new Error("the Node.js walk disagrees with search_files");
    // The machine is shared: each pair is measured in alternation (one run of each per round,
    // via h.latency with one iteration), so a slow spell hits both sides alike.
    const ROUNDS = 15;
    const paired = async (a, b) => {
      await a();
      await b();
      const as = [];
      const bs = [];
      for (let i = 0; i < ROUNDS; i++) {
        as.push((await h.latency(a, { iterations: 1, warmup: 0 })).median);
        bs.push((await h.latency(b, { iterations: 1, warmup: 0 })).median);
      }
      const median = (xs) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)] / 1000;
      return [median(as), median(bs)];
    };

    const version = rgAvailable();
    if (version === null) {
      console.log("  NOTICE: rg is not installed (Debian: apt-get install -y ripgrep); skipping the search_files vs rg row");
    } else {
      if ((await runRg(dir)) !== expected) throw new Error("rg disagrees with search_files");
      const [subject, baseline] = await paired(ours, () => runRg(dir));
      const ratio = subject / baseline;
      h.row({
        name: "search_files, 20k files vs rg",
        subject: "search_files",
        baseline: `rg (${version})`,
        unit: "ms",
        subjectValue: subject,
        baselineValue: baseline,
        ratio,
        target: "<= 1.5",
        pass: ratio <= 1.5,
        notes: `median of ${ROUNDS} alternating warm runs; rg's time includes its process start`,
      });
    }

    const [subject, baseline] = await paired(ours, () => nodeWalk(dir));
    const speedup = baseline / subject;
    h.row({
      name: "search_files, 20k files vs Node.js walk+regex (speedup)",
      subject: "search_files",
      baseline: "fs.promises readdir recursive + readFile + RegExp",
      unit: "ms",
      subjectValue: subject,
      baselineValue: baseline,
      ratio: speedup,
      target: ">= 5",
      pass: speedup >= 5,
      notes: `ratio is baseline/subject (times faster); median of ${ROUNDS} alternating warm runs`,
    });
  } finally {
    await cleanup();
  }
}
