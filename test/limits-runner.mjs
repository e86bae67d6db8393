// Runs the bounded resource attacks (a fork bomb, a memory hog, a file writer) through the
// process tools, each with a small cap and with the default caps (the attack then reaches its
// own bound, so a test of the cap can fail), as whatever user started it, and prints one JSON
// line. test/sandbox-limits.test.ts runs it in its own process and as `nobody`.
//
// Every attack is bounded by itself: at most FORK_BOUND processes, MEMORY_BOUND bytes, WRITE_BOUND
// bytes of file; the machine is shared.
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as lib from "../dist/index.js";

export const FORK_BOUND = 200;
export const FORK_CAP = 64;
export const MEMORY_BOUND = 512 << 20;
export const MEMORY_CAP = 256 << 20;
export const WRITE_BOUND = 32 << 20;
export const WRITE_CAP = 16 << 20;

// What every script writes first (info.json): its oom score and the cgroups it is in (to check they are gone
// after the call), read by a child (Node's permission model keeps /proc from the script itself;
// a child has the same cgroups and inherits the score).
const PRELUDE = `const fs = require("fs");
const { execFileSync } = require("child_process");
const cat = (f) => execFileSync("/bin/cat", [f], { encoding: "utf8" });
const info = { oom: cat("/proc/self/oom_score_adj").trim(), cgroups: cat("/proc/self/cgroup") };
fs.writeFileSync("info.json", JSON.stringify(info));
`;

export const ATTACKS = {
  forkBomb: {
    limits: { processes: FORK_CAP },
    source: `${PRELUDE}
const { spawn } = require("child_process");
(async () => {
  let started = 0, error = null;
  for (let i = 0; i < ${FORK_BOUND}; i++) {
    const e = await new Promise((res) => {
      const c = spawn("/bin/sleep", ["20"], { stdio: "ignore" });
      c.on("spawn", () => res(null));
      c.on("error", (err) => res(err.code));
    });
    if (e) { error = e; break; }
    started++;
  }
  console.log("RESULT " + JSON.stringify({ started, error }));
  process.exit(0);
})();`,
  },
  memoryHog: {
    limits: { memoryBytes: MEMORY_CAP },
    source: `${PRELUDE}
const chunks = [];
let error = null;
try {
  while (chunks.length * (16 << 20) < ${MEMORY_BOUND}) chunks.push(Buffer.alloc(16 << 20, 1));
} catch (e) { error = e.code || e.message; }
console.log("RESULT " + JSON.stringify({ bytes: chunks.length * (16 << 20), error }));`,
  },
  writer: {
    limits: { fileBytes: WRITE_CAP },
    source: `${PRELUDE}
const fd = fs.openSync("big.bin", "w");
const chunk = Buffer.alloc(1 << 20, 1);
let written = 0, error = null;
try {
  while (written < ${WRITE_BOUND}) written += fs.writeSync(fd, chunk);
} catch (e) { error = e.code; }
fs.closeSync(fd);
fs.rmSync("big.bin");
console.log("RESULT " + JSON.stringify({ written, error }));`,
  },
};

/** What a script printed after `RESULT `. */
function parse(stdout) {
  const get = (tag) => {
    const line = stdout.split("\n").find((l) => l.startsWith(tag + " "));
    return line ? JSON.parse(line.slice(tag.length + 1)) : null;
  };
  return { result: get("RESULT") };
}

/** The per-call cgroup directories named in a /proc/<pid>/cgroup text. */
export function callCgroups(text) {
  const dirs = [];
  for (const line of (text ?? "").split("\n")) {
    const [, controllers, path] = line.split(":");
    if (!path || !path.includes("workcell-")) continue;
    if (controllers === "") dirs.push(join("/sys/fs/cgroup/unified", path), join("/sys/fs/cgroup", path));
    else for (const c of controllers.split(",")) dirs.push(join("/sys/fs/cgroup", c, path));
  }
  return dirs;
}

/** Runs `source` in node_process with `limits`, counting event-loop turns during the call. */
async function runNode(root, source, limits, extra = {}) {
  const tool = lib.createNodeProcessTool(root, { timeoutMs: 60_000, limits, ...extra.options });
  let turns = 0;
  let ticking = true;
  const tick = () => {
    turns++;
    if (ticking) setImmediate(tick);
  };
  setImmediate(tick);
  let out;
  let error;
  try {
    out = await tool.execute({ source }, { signal: extra.signal });
  } catch (e) {
    error = e;
  }
  ticking = false;
  const stdout = out?.stdout ?? error?.details?.stdout ?? "";
  const parsed = parse(stdout);
  // The script's own view, written to the workspace (also there after a cancellation).
  const infoFile = join(root, "info.json");
  parsed.info = existsSync(infoFile) ? JSON.parse(readFileSync(infoFile, "utf8")) : null;
  rmSync(infoFile, { force: true });
  const cgroups = callCgroups(parsed.info?.cgroups);
  return {
    exitCode: out?.exitCode ?? null,
    signal: out?.signal ?? null,
    error: error ? { code: error.code ?? error.name, message: error.message } : null,
    sandbox: out?.sandbox ?? error?.details?.sandbox ?? null,
    info: parsed.info,
    result: parsed.result,
    turns,
    cgroups,
    cgroupsLeft: cgroups.filter((d) => existsSync(d)),
    stderr: (out?.stderr ?? "").slice(0, 400),
  };
}

export async function runAll() {
  const root = mkdtempSync(join(tmpdir(), "workcell-limits-"));
  const hostOom = () => readFileSync("/proc/self/oom_score_adj", "utf8").trim();
  const results = { uid: process.getuid(), hostOomBefore: hostOom(), hostOom: null, defaults: lib.sandboxLimitDefaults(), attacks: {} };
  try {
    for (const [name, attack] of Object.entries(ATTACKS)) {
      results.attacks[name] = {
        capped: await runNode(root, attack.source, attack.limits),
        defaults: await runNode(root, attack.source, undefined),
      };
    }
    // A file written by a shell program: SIGXFSZ would kill it where Node ignores it itself.
    const cmd = lib.createRunCommandTool(root, { limits: { fileBytes: WRITE_CAP } });
    const out = await cmd.execute({ argv: ["sh", "-c", `head -c ${WRITE_BOUND} /dev/zero > big.bin; echo "rc=$?"; wc -c < big.bin; rm -f big.bin`] }, {});
    results.shellWriter = { exitCode: out.exitCode, signal: out.signal, output: out.output, sandbox: out.sandbox };
    // Timeout and cancellation with processes left running: the cgroups go all the same.
    const hang = `${PRELUDE}
const { spawn } = require("child_process");
for (let i = 0; i < 5; i++) spawn("/bin/sleep", ["30"], { stdio: "ignore" });
setInterval(() => {}, 1000);`;
    results.timeout = await runNode(root, hang, { processes: FORK_CAP }, { options: { timeoutMs: 1500 } });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 1500);
    results.cancelled = await runNode(root, hang, { processes: FORK_CAP }, { signal: ac.signal });
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
  // After every attack: a score the host got while they ran shows here.
  results.hostOom = hostOom();
  return results;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  console.log(JSON.stringify(await runAll()));
}
