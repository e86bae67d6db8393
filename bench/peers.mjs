// workcell against its peers, side by side in one run on the same workspace:
//
// - the official MCP filesystem server (`@modelcontextprotocol/server-filesystem`) and
//   `workcell mcp`, each a child process over MCP stdio, driven by the same MCP SDK client loop:
//   read 4 KiB, write 4 KiB (tmpfs and disk), list a 1,000-entry directory, edit one
//   replacement, 16 concurrent reads and 16 concurrent writes (tmpfs and disk). Each row also
//   notes each server's CPU per call (its /proc counters).
// - an older build's read_file (`WORKCELL_PREVIOUS=/path/to/an/older/checkout`, built, with
//   its own dist/ and native addon): sequential tool.execute of a 4 KiB file in the same
//   minutes as this build's. No release is published to install, so it is skipped without one.
// - sandbox-runtime's launch (`srt true`) where `bwrap` exists, and Codex's sandbox where
//   `codex` is on PATH, against a confined run_command ["true"].
//
// The peers are installed on demand into bench/peers/ (`npm --prefix bench/peers install`);
// a peer that is not there is skipped with a line saying so.
import { spawn, execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createReadTool, createRunCommandTool } from "../dist/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const BIN = join(here, "..", "bin", "workcell.mjs");
const PEERS = join(here, "peers", "node_modules");
const FS_SERVER = join(PEERS, "@modelcontextprotocol", "server-filesystem", "dist", "index.js");
const SRT = join(PEERS, "@anthropic-ai", "sandbox-runtime", "dist", "cli.js");
const ROUNDS = 15;
const PER_ROUND = 20;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU time (ms) a process has used so far, from /proc (undefined elsewhere). */
function cpuMs(pid) {
  try {
    const st = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = st.slice(st.lastIndexOf(")") + 2).split(" ");
    return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
  } catch {
    return undefined;
  }
}

async function connect(command, args, cwd) {
  const transport = new StdioClientTransport({ command, args, cwd, env: { PATH: process.env.PATH ?? "" }, stderr: "ignore" });
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(transport);
  return { client, pid: transport.pid, close: () => client.close() };
}

function call(server, name, args) {
  return async () => {
    const r = await server.client.callTool({ name, arguments: args() });
    if (r.isError) throw new Error(`${name}: ${JSON.stringify(r.content).slice(0, 300)}`);
    return r;
  };
}

/** Median of round medians of `a` and `b` in alternating rounds, and each server's CPU per call. */
async function alternate(h, a, b, servers) {
  await h.latency(a, { iterations: 0, warmup: 30 });
  await h.latency(b, { iterations: 0, warmup: 30 });
  const xs = [];
  const ys = [];
  const cpu = [0, 0];
  for (let r = 0; r < ROUNDS; r++) {
    let c0 = cpuMs(servers[0].pid);
    xs.push((await h.latency(a, { iterations: PER_ROUND, warmup: 0 })).median);
    cpu[0] += (cpuMs(servers[0].pid) ?? 0) - (c0 ?? 0);
    c0 = cpuMs(servers[1].pid);
    ys.push((await h.latency(b, { iterations: PER_ROUND, warmup: 0 })).median);
    cpu[1] += (cpuMs(servers[1].pid) ?? 0) - (c0 ?? 0);
  }
  const n = ROUNDS * PER_ROUND;
  return { ours: median(xs), theirs: median(ys), cpu: cpu.map((c) => (c * 1000) / n) };
}

/** `callers` concurrent callers of each for `ms`, alternating twice; calls/s of each (the better run). */
async function concurrent(a, b, callers, ms = 3000) {
  const drive = async (fn) => {
    let calls = 0;
    let stop = false;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: callers }, async (_, i) => {
        while (!stop) {
          await fn(i);
          calls++;
          if (performance.now() - t0 >= ms) stop = true;
        }
      }),
    );
    return calls / ((performance.now() - t0) / 1000);
  };
  await drive(a);
  await drive(b);
  const xs = [];
  const ys = [];
  for (let r = 0; r < 2; r++) {
    xs.push(await drive(a));
    ys.push(await drive(b));
  }
  return { ours: Math.max(...xs), theirs: Math.max(...ys) };
}

export async function fsServerRows(h, label, base) {
  const dir = await realpath(await mkdtemp(join(base, "workcell-bench-peers-")));
  try {
    const content = "const answer = 42; // some source text\n".repeat(105).slice(0, 4096);
    await writeFile(join(dir, "r.txt"), content);
    const text = Array.from({ length: 400 }, (_, i) => `  const value${i} = compute(${i}); // line ${i}`).join("\n") + "\n";
    const start = text.replace("value200 = compute(200);", "value200 = compute(0);");
    await writeFile(join(dir, "e1.ts"), start);
    await writeFile(join(dir, "e2.ts"), start);
    await mkdir(join(dir, "big"));
    for (let i = 0; i < 1000; i++) await writeFile(join(dir, "big", `file-${String(i).padStart(4, "0")}.txt`), "");
    await mkdir(join(dir, "w"));

    const ours = await connect(process.execPath, [BIN, "mcp", "--root", dir], dir);
    const theirs = await connect(process.execPath, [FS_SERVER, dir], dir);
    const servers = [ours, theirs];
    const abs = (p) => join(dir, p);
    const note = (r) => `server CPU per call: workcell ${r.cpu[0].toFixed(0)} µs, filesystem server ${r.cpu[1].toFixed(0)} µs`;
    const row = (name, r, target = "<= 1.0") =>
      h.row({
        name: `${name} over MCP stdio (${label})`,
        subject: "workcell mcp",
        baseline: "@modelcontextprotocol/server-filesystem",
        unit: "µs",
        subjectValue: r.ours,
        baselineValue: r.theirs,
        ratio: r.ours / r.theirs,
        target,
        pass: target === "report" || r.ours / r.theirs <= 1.0,
        notes: note(r),
      });
    try {
      if (label === "tmpfs") {
        row(
          "read_file 4 KiB",
          await alternate(h, call(ours, "read_file", () => ({ path: "r.txt" })), call(theirs, "read_text_file", () => ({ path: abs("r.txt") })), servers),
        );
        const listed = await alternate(
          h,
          call(ours, "list_files", () => ({ path: "big", depth: 1, limit: 5000 })),
          call(theirs, "list_directory", () => ({ path: abs("big") })),
          servers,
        );
        row("list a 1,000-entry directory", listed);
        let k1 = 0;
        let k2 = 0;
        const edit = (server, path, n) => () => {
          const k = n() % 2;
          return { path, edits: [{ oldText: `value200 = compute(${k});`, newText: `value200 = compute(${1 - k});` }] };
        };
        row(
          "edit_file one replacement in a 16 KiB file",
          await alternate(h, call(ours, "edit_file", edit(ours, "e1.ts", () => k1++)), call(theirs, "edit_file", edit(theirs, abs("e2.ts"), () => k2++)), servers),
        );
        const reads = await concurrent(
          call(ours, "read_file", () => ({ path: "r.txt" })),
          call(theirs, "read_text_file", () => ({ path: abs("r.txt") })),
          16,
        );
        h.row({
          name: `read_file 4 KiB, 16 concurrent callers over MCP stdio (${label}): calls/s`,
          subject: "workcell mcp",
          baseline: "@modelcontextprotocol/server-filesystem",
          unit: "calls/s",
          subjectValue: reads.ours,
          baselineValue: reads.theirs,
          ratio: reads.ours / reads.theirs,
          target: ">= 1.0",
          pass: reads.ours >= reads.theirs,
        });
      }
      // Writes: durable in workcell (the file and its directory flushed), not in the peer.
      const durable = label === "disk" ? "report" : "<= 1.0";
      row(
        "write_file 4 KiB",
        await alternate(h, call(ours, "write_file", () => ({ path: "w.txt", content })), call(theirs, "write_file", () => ({ path: abs("w2.txt"), content })), servers),
        durable,
      );
      const w = await concurrent(
        (i) => ours.client.callTool({ name: "write_file", arguments: { path: `w/a${i}.txt`, content } }),
        (i) => theirs.client.callTool({ name: "write_file", arguments: { path: abs(`w/b${i}.txt`), content } }),
        16,
      );
      h.row({
        name: `write_file 4 KiB, 16 concurrent writers over MCP stdio (${label}): calls/s`,
        subject: "workcell mcp (fsync file + directory, the directory's flush shared)",
        baseline: "@modelcontextprotocol/server-filesystem (no fsync)",
        unit: "calls/s",
        subjectValue: w.ours,
        baselineValue: w.theirs,
        ratio: w.ours / w.theirs,
        target: ">= 1.0",
        pass: w.ours >= w.theirs,
      });
    } finally {
      await ours.close();
      await theirs.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** read_file of an older build (`WORKCELL_PREVIOUS`) against this one, in alternating rounds. */
async function previousRelease(h) {
  const prev = process.env.WORKCELL_PREVIOUS;
  const entry = prev ? join(prev, "dist", "index.js") : undefined;
  if (!entry || !existsSync(entry)) {
    // No release of workcell is published (`npm view workcell versions`: 404), so there is
    // none to install: the row needs a built checkout of an older version.
    console.log("  skipped: the previous release's read_file (workcell has no published release; set WORKCELL_PREVIOUS to a built checkout of an older version)");
    return;
  }
  const old = await import(pathToFileURL(entry).href);
  let commit = "";
  try {
    commit = execFileSync("git", ["-C", prev, "rev-parse", "--short", "HEAD"], { encoding: "utf8" }).trim();
  } catch {}
  const { dir, cleanup } = await h.tempDir();
  try {
    await mkdir(join(dir, "src"));
    await writeFile(join(dir, "src", "file.txt"), "x".repeat(4096));
    const signal = new AbortController().signal;
    const input = { path: "src/file.txt" };
    const now = createReadTool(dir);
    const then = old.createReadTool(dir);
    const a = () => now.execute(input, { signal });
    const b = () => then.execute(input, { signal });
    const xs = [];
    const ys = [];
    await h.latency(a, { iterations: 0, warmup: 500 });
    await h.latency(b, { iterations: 0, warmup: 500 });
    for (let r = 0; r < 8; r++) {
      xs.push((await h.latency(a, { iterations: 500, warmup: 0 })).median);
      ys.push((await h.latency(b, { iterations: 500, warmup: 0 })).median);
    }
    h.row({
      name: "read_file 4 KiB, sequential tool.execute: this build vs the previous release",
      subject: "this build",
      baseline: `previous release (${commit || prev})`,
      unit: "µs",
      subjectValue: median(xs),
      baselineValue: median(ys),
      ratio: median(xs) / median(ys),
      target: "<= 1.0",
      pass: median(xs) <= median(ys),
    });
  } finally {
    await cleanup();
  }
}

function onPath(cmd) {
  try {
    execFileSync("sh", ["-c", `command -v ${cmd}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Runs `cmd args` in `cwd`; resolves when it exits 0. */
function run(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { cwd, stdio: "ignore" });
    c.once("error", reject);
    c.once("close", (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} exited ${code}`))));
  });
}

/** Wall time (ms) of running `true` confined: workcell's run_command against srt and Codex. */
export async function sandboxLaunch(h) {
  const peers = [];
  if (!onPath("bwrap") || !onPath("socat")) console.log("  skipped: sandbox-runtime's launch (it needs bwrap and socat on PATH)");
  else if (!existsSync(SRT)) console.log("  skipped: sandbox-runtime's launch (run npm --prefix bench/peers install)");
  else peers.push({ name: "sandbox-runtime (srt true)", run: (cwd) => run(process.execPath, [SRT, "true"], cwd) });
  if (!onPath("codex")) console.log("  skipped: Codex's sandbox (no codex on PATH)");
  else peers.push({ name: "Codex (codex sandbox linux true)", run: (cwd) => run("codex", ["sandbox", "linux", "true"], cwd) });
  if (peers.length === 0) return;
  const { dir, cleanup } = await h.tempDir();
  try {
    const tool = createRunCommandTool(dir);
    const signal = new AbortController().signal;
    const ours = async () => {
      const r = await tool.execute({ argv: ["true"] }, { signal });
      if (r.exitCode !== 0) throw new Error("run_command true failed");
    };
    for (const peer of peers) {
      const [a, b] = await h.interleaved([ours, () => peer.run(dir)], { iterations: 30, warmup: 3 });
      h.row({
        name: `a confined true: run_command vs ${peer.name}, median wall time`,
        subject: "workcell run_command",
        baseline: peer.name,
        unit: "ms",
        subjectValue: a,
        baselineValue: b,
        ratio: a / b,
        target: "<= 1.0",
        pass: a <= b,
      });
    }
  } finally {
    await cleanup();
  }
}

export default async function (h) {
  if (!existsSync(FS_SERVER)) {
    console.log("  skipped: the filesystem server's rows (run npm --prefix bench/peers install)");
  } else {
    const shm = await stat("/dev/shm").catch(() => undefined);
    if (shm?.isDirectory()) await fsServerRows(h, "tmpfs", "/dev/shm");
    await fsServerRows(h, "disk", tmpdir());
  }
  await previousRelease(h);
  await sandboxLaunch(h);
}
