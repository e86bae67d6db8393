// Hostile inputs: for each input that once hurt the host, what one call costs the host while it
// runs: the growth of its peak RSS, the worst event-loop delay, the slowest of a loop of small
// read_file calls made concurrently (in another workspace), and, where the call can be
// aborted, how long an abort takes to settle. Each scenario runs in a child process of its own
// (`node bench/hostile.mjs --scenario NAME`) so its peak RSS is its own: the child resets the
// kernel's peak counter (/proc/self/clear_refs) after building its inputs, then makes the call.
// Targets: RSS growth under 64 MiB, delay under 50 ms, the concurrent read under 50 ms, an abort
// settled within 250 ms. A validate() scenario makes ten calls, each in its own turn of the
// event loop, so its delay is the cost of one call.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { link, mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = fileURLToPath(import.meta.url);
const MiB = 1024 * 1024;
const TARGETS = { rssMiB: 64, lagMs: 50, readMs: 50, abortMs: 250 };

async function workcell() {
  return import(pathToFileURL(join(here, "..", "..", "dist", "index.js")).href);
}

function peakRssBytes() {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) * 1024 : 0;
}

/** A .gitignore of 1 MiB of rules, hard-linked into 10 directories with a file each. */
async function gitignoreInTenDirectories(dir) {
  const rules = Array.from({ length: 40000 }, (_, i) => `build-${i}/**/*.tmp`).join("\n");
  await writeFile(join(dir, ".gitignore"), rules.slice(0, MiB));
  for (let i = 0; i < 10; i++) {
    await mkdir(join(dir, `d${i}`));
    await link(join(dir, ".gitignore"), join(dir, `d${i}`, ".gitignore"));
    await writeFile(join(dir, `d${i}`, "f.txt"), "needle\n");
  }
}

/** Each scenario: setup(dir, wc) returns { call(signal), abortable? }. */
const scenarios = {
  // A matching 1 MiB file and 150 hard links to it under long names: every file reports its
  // limit of matches; what waits for the slowest file must stay bounded.
  async "search: 151 links to a 1 MiB matching file"(dir, wc) {
    const line = "needle " + "x".repeat(1017) + "\n";
    await writeFile(join(dir, "a.txt"), line.repeat(1024));
    let d = dir;
    for (let i = 0; i < 12; i++) {
      d = join(d, "d".repeat(200) + i);
      await mkdir(d);
    }
    for (let i = 0; i < 150; i++) await link(join(dir, "a.txt"), join(d, `${"n".repeat(200)}${i}.txt`));
    const search = wc.createSearchTool(dir);
    return { call: (signal) => search.execute({ pattern: "needle", limit: 1000 }, { signal }), abortable: true };
  },
  // One 8 MiB line and a pattern the matcher works hard on.
  async "search: one 8 MiB line"(dir, wc) {
    await writeFile(join(dir, "long.txt"), "ab ".repeat((8 * MiB) / 3));
    const search = wc.createSearchTool(dir);
    return { call: (signal) => search.execute({ pattern: "(\\w+\\s+){50}zzz" }, { signal }), abortable: true };
  },
  // Four slow searches at once: the host's own I/O must not wait for them.
  async "search: four slow searches at once"(dir, wc) {
    await writeFile(join(dir, "long.txt"), "ab ".repeat((4 * MiB) / 3));
    const search = wc.createSearchTool(dir);
    const one = (signal) => search.execute({ pattern: "(\\w+\\s+){50}zzz" }, { signal });
    return { call: (signal) => Promise.all([one(signal), one(signal), one(signal), one(signal)]), abortable: true };
  },
  // A regex whose compiled form is large, checked by validate() (on the event loop).
  async "search: validate a huge regex"(dir, wc) {
    const search = wc.createSearchTool(dir);
    return {
      call: async () => {
        // Ten calls, each its own turn of the event loop (as calls arriving one by one are).
        for (let i = 0; i < 10; i++) {
          try {
            search.validate({ pattern: "(\\w{1,100}){1,100}" + "x".repeat(i) });
          } catch {}
          await new Promise((r) => setImmediate(r));
        }
      },
    };
  },
  // A .gitignore of 1 MiB hard-linked into 10 directories.
  async "list_files: 1 MiB .gitignore in 10 directories"(dir, wc) {
    await gitignoreInTenDirectories(dir);
    const list = wc.createListTool(dir);
    return { call: (signal) => list.execute({ depth: 3 }, { signal }), abortable: true };
  },
  async "search_files: 1 MiB .gitignore in 10 directories"(dir, wc) {
    await gitignoreInTenDirectories(dir);
    const search = wc.createSearchTool(dir);
    return { call: (signal) => search.execute({ pattern: "needle" }, { signal }), abortable: true };
  },
  // A chain of long-named directories with 20,000 directories hanging off it, listed with a
  // small limit.
  async "list_files: 20,000 directories under a deep chain"(dir, wc) {
    let d = dir;
    const chain = [];
    for (let i = 0; i < 10; i++) {
      d = join(d, "c".repeat(200) + i);
      await mkdir(d);
      chain.push(d);
    }
    for (let i = 0; i < 20000; i++) await mkdir(join(chain[i % chain.length], `${"s".repeat(200)}${i}`));
    const list = wc.createListTool(dir);
    return { call: (signal) => list.execute({ depth: 10, limit: 10 }, { signal }), abortable: true };
  },
  // edit_file replacing every line of a 64 KiB file: the diff of 32,768 changed lines.
  async "edit_file: replace all 32,768 lines"(dir, wc) {
    const before = "a\n".repeat(32768);
    await writeFile(join(dir, "f.txt"), before);
    const edit = wc.createEditTool(dir);
    return {
      call: (signal) => edit.execute({ path: "f.txt", edits: [{ oldText: before, newText: "b\n".repeat(32768) }] }, { signal }),
      abortable: true,
      reset: () => writeFile(join(dir, "f.txt"), before),
    };
  },
  // A sh -c script of nested parameter expansions, checked by validate() (on the event loop).
  async "run_command: validate a 32 KiB script nested at the cap"(dir, wc) {
    const tool = wc.createRunCommandTool(dir);
    // The deepest nesting the policy accepts (a deeper one is refused at once).
    const nested = (n) => '"' + "${x:-".repeat(n) + "x" + "}".repeat(n) + '"';
    let lo = 1;
    let hi = 4000;
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2);
      if (wc.checkCommand(["sh", "-c", `echo ${nested(mid)}`]).allowed) lo = mid;
      else hi = mid - 1;
    }
    // At the cap, then plain commands up to 32 KiB: the parse itself is on the loop too.
    let script = nested(lo);
    while (script.length < 32000) script += "; echo a";
    return {
      call: async () => {
        for (let i = 0; i < 10; i++) {
          try {
            tool.validate({ argv: ["sh", "-c", `echo ${script}`] });
          } catch {}
          await new Promise((r) => setImmediate(r));
        }
      },
    };
  },
  // 32 KiB of invalid UTF-8 on stdout: what comes back must stay within the output cap.
  async "node_process: 32 KiB of 0xff"(dir, wc) {
    const tool = wc.createNodeProcessTool(dir, { timeoutMs: 5000 });
    return {
      call: async (signal) => {
        const r = await tool.execute({ source: "process.stdout.write(Buffer.alloc(32768, 0xff))" }, { signal });
        return { returnedBytes: Buffer.byteLength(r.stdout) };
      },
    };
  },
};

async function runScenario(name) {
  const wc = await workcell();
  const dir = await realpath(await mkdtemp(join(tmpdir(), "workcell-bench-hostile-")));
  const side = await realpath(await mkdtemp(join(tmpdir(), "workcell-bench-side-")));
  try {
    await writeFile(join(side, "small.txt"), "hello\n");
    const reader = wc.createReadTool(side);
    const sig = () => new AbortController().signal;
    for (let i = 0; i < 50; i++) await reader.execute({ path: "small.txt" }, { signal: sig() });
    const s = await scenarios[name](dir, wc);
    global.gc?.();
    await writeFile(`/proc/${process.pid}/clear_refs`, "5").catch(() => {});
    const rss0 = peakRssBytes();
    const hist = monitorEventLoopDelay({ resolution: 1 });
    hist.enable();
    // The loop's lateness as a 1 ms interval sees it (a synchronous block shows in full).
    let lagMax = 0;
    let expected = performance.now() + 1;
    const timer = setInterval(() => {
      const now = performance.now();
      lagMax = Math.max(lagMax, now - expected);
      expected = now + 1;
    }, 1);
    await new Promise((r) => setTimeout(r, 20));
    lagMax = 0;
    let done = false;
    let readMax = 0;
    const reads = (async () => {
      while (!done) {
        const t0 = performance.now();
        await reader.execute({ path: "small.txt" }, { signal: sig() });
        readMax = Math.max(readMax, performance.now() - t0);
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const t0 = performance.now();
    let extra = {};
    let outcome = "ok";
    try {
      extra = (await s.call(sig())) ?? {};
      if (typeof extra !== "object" || Array.isArray(extra) || extra.path !== undefined || extra.entries || extra.matches) extra = {};
    } catch (e) {
      outcome = e?.code ?? e?.name ?? "error";
    }
    const callMs = performance.now() - t0;
    done = true;
    await reads;
    hist.disable();
    clearInterval(timer);
    const rssGrowth = Math.max(0, peakRssBytes() - rss0);
    let abortMs = null;
    if (s.abortable) {
      await s.reset?.();
      const ac = new AbortController();
      const p = s.call(ac.signal).then(
        () => "finished",
        (e) => e?.name ?? "error",
      );
      await new Promise((r) => setTimeout(r, 100));
      const a0 = performance.now();
      ac.abort();
      const how = await p;
      abortMs = how === "finished" && performance.now() - a0 < 1 ? null : performance.now() - a0;
    }
    return { name, outcome, callMs, rssGrowthMiB: rssGrowth / MiB, lagMs: Math.max(lagMax, hist.max / 1e6), readMs: readMax, abortMs, ...extra };
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(side, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--scenario") {
  const r = await runScenario(process.argv[3]);
  process.stdout.write(JSON.stringify(r) + "\n");
  process.exit(0);
}

export default async function (h) {
  for (const name of Object.keys(scenarios)) {
    const child = spawnSync(process.execPath, [here, "--scenario", name], { encoding: "utf8", timeout: 600_000 });
    const line = (child.stdout ?? "").trim().split("\n").pop();
    let r;
    try {
      r = JSON.parse(line);
    } catch {
      console.log(`  ${name}: the scenario failed: ${(child.stderr ?? "").slice(-500)}`);
      continue;
    }
    const checks = [
      ["peak RSS growth", "MiB", r.rssGrowthMiB, TARGETS.rssMiB],
      ["worst event-loop delay", "ms", r.lagMs, TARGETS.lagMs],
      ["slowest concurrent read_file", "ms", r.readMs, TARGETS.readMs],
    ];
    if (r.abortMs != null) checks.push(["abort settled", "ms", r.abortMs, TARGETS.abortMs]);
    for (const [what, unit, value, target] of checks) {
      h.row({
        name: `hostile: ${name}: ${what}`,
        subject: `workcell (call ${r.outcome}, ${r.callMs.toFixed(0)} ms${r.returnedBytes != null ? `, ${r.returnedBytes} bytes returned` : ""})`,
        baseline: "the target",
        unit,
        subjectValue: value,
        baselineValue: target,
        ratio: value / target,
        target: `< ${target} ${unit}`,
        pass: value < target,
        notes: "one call in a child process of its own; peak RSS from VmHWM after clear_refs",
      });
    }
  }
}
