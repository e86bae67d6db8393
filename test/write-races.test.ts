// write_file under concurrency, crashes and racing attackers. Attackers and readers run on
// worker threads (true parallelism with the native writes); the crash test kills child
// processes that import the built package.
import { spawn } from "node:child_process";
import { lstat, mkdir, readFile, readlink, symlink, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { Worker } from "node:worker_threads";
import { describe, expect, test } from "vitest";
import { ToolError, createWriteTool } from "../dist/index.js";
import { ctx, tempWorkspace, walk } from "./helpers.js";

/** Version `n` of the target: self-describing, so a torn or mixed read is detectable. */
const versionSource = `function version(n) {
  const letter = String.fromCharCode(97 + (n % 26));
  return "begin " + n + " " + letter.repeat(500 + ((n * 7919) % 60000)) + " end " + n + "\\n";
}
function isVersion(s) {
  const m = /^begin (\\d+) ([a-z]+) end (\\d+)\\n$/.exec(s);
  return m !== null && m[1] === m[3] && s === version(Number(m[1]));
}`;
const { version, isVersion } = new Function(`${versionSource}; return { version, isVersion };`)() as {
  version: (n: number) => string;
  isVersion: (s: string) => boolean;
};

/** Runs `body` (CommonJS, with `data`, `fs`, `path` and `stopped()`) on a worker thread in a loop. */
function startWorker(body: string, data: Record<string, unknown>): { stop: () => Promise<any> } {
  const flag = new SharedArrayBuffer(4);
  const code = `
    const { parentPort, workerData } = require("node:worker_threads");
    const fs = require("node:fs");
    const path = require("node:path");
    const data = workerData.data;
    const stopFlag = new Int32Array(workerData.flag);
    const stopped = () => Atomics.load(stopFlag, 0) !== 0;
    ${versionSource}
    const result = (() => { ${body} })();
    parentPort.postMessage(result);
  `;
  const worker = new Worker(code, { eval: true, workerData: { data, flag } });
  const done = new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  return {
    async stop() {
      Atomics.store(new Int32Array(flag), 0, 1);
      const result = await done;
      await worker.terminate();
      return result;
    },
  };
}

/** Every entry beneath `dir` with its type and content or link text. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const rel of await walk(dir)) {
    const p = join(dir, rel);
    const s = await lstat(p);
    if (s.isSymbolicLink()) out[rel] = `link:${await readlink(p)}`;
    else if (s.isDirectory()) out[rel] = "dir";
    else out[rel] = `file:${(s.mode & 0o7777).toString(8)}:${(await readFile(p)).toString("base64")}`;
  }
  return out;
}

async function temps(dir: string): Promise<string[]> {
  return (await walk(dir)).filter((p) => p.split("/").pop()!.startsWith(".workcell-tmp-"));
}

/** The tree of `parent` without the workspace: what must never change. */
async function outsideSnapshot(parent: string): Promise<Record<string, string>> {
  const all = await snapshot(parent);
  return Object.fromEntries(Object.entries(all).filter(([k]) => k !== "ROOT" && !k.startsWith("ROOT/")));
}

const READER = `
  let reads = 0, missing = 0, bad = 0, sample = "", maxThreads = 0;
  const threads = () => Number((/Threads:\\s+(\\d+)/.exec(fs.readFileSync("/proc/self/status", "utf8")) ?? [0, 0])[1]);
  const linux = fs.existsSync("/proc/self/status");
  while (!stopped()) {
    if (linux && reads % 20 === 0) maxThreads = Math.max(maxThreads, threads());
    let s;
    try { s = fs.readFileSync(data.file, "utf8"); } catch { missing++; continue; }
    reads++;
    if (!isVersion(s)) { bad++; if (!sample) sample = s.slice(0, 60) + "... (" + s.length + " bytes)"; }
  }
  return { reads, missing, bad, sample, maxThreads };
`;

describe("write_file under concurrency", () => {
  test("1,000 concurrent writes to one target: all resolve, the last call wins, readers only ever see whole versions", { timeout: 180_000 }, async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createWriteTool(root);
    await tool.execute({ path: "target", content: version(1_000_000) }, ctx());
    const reader = startWorker(READER, { file: join(root, "target") });
    const calls = Array.from({ length: 1000 }, (_, i) => tool.execute({ path: "target", content: version(i) }, ctx()));
    const results = await Promise.allSettled(calls);
    const seen = await reader.stop();
    const failed = results.filter((r) => r.status === "rejected");
    expect(failed.map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    results.forEach((r, i) => {
      expect((r as PromiseFulfilledResult<unknown>).value).toEqual({ path: "target", bytes: Buffer.byteLength(version(i)), created: false });
    });
    expect(await readFile(join(root, "target"), "utf8")).toBe(version(999));
    expect(seen.reads).toBeGreaterThan(0);
    expect(seen).toMatchObject({ missing: 0, bad: 0 });
    // The filesystem work is bounded (16 blocking slots): 1,000 calls never mean 1,000 threads.
    // Bounded, not one thread per call: 1,000 unbounded calls would show hundreds of threads.
    if (seen.maxThreads > 0) expect(seen.maxThreads).toBeLessThan(200);
    console.log(`1,000 writers: ${seen.reads} parallel reads, all whole versions; at most ${seen.maxThreads} threads in the process`);
    expect(await temps(parent)).toEqual([]);
  });

  test("writes through different spellings of one file run in call order", { timeout: 120_000 }, async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(root, "d"));
    await writeFile(join(root, "d/t.txt"), version(0));
    await symlink("d/t.txt", join(root, "link"));
    await symlink("d", join(root, "dlink"));
    await symlink("dlink/t.txt", join(root, "chain"));
    const spellings = ["d/t.txt", "link", "dlink/t.txt", "./d//t.txt", "chain"];
    const tool = createWriteTool(root);
    const reader = startWorker(READER, { file: join(root, "d/t.txt") });
    for (let round = 0; round < 5; round++) {
      const calls = Array.from({ length: 60 }, (_, i) =>
        tool.execute({ path: spellings[(i + round) % spellings.length]!, content: version(round * 100 + i) }, ctx()),
      );
      await Promise.all(calls);
      expect(await readFile(join(root, "d/t.txt"), "utf8")).toBe(version(round * 100 + 59));
    }
    expect(await reader.stop()).toMatchObject({ missing: 0, bad: 0 });
    expect(await readlink(join(root, "link"))).toBe("d/t.txt");
    expect(await temps(parent)).toEqual([]);
  });
});

describe("write_file and crashes", () => {
  // Two writers at a time, each with its own target (a second writer of the same target would
  // replace a torn file before it is looked at): 100 rounds, 200 kills, at half the wall time
  // (most of a round is a child's start).
  test("a writer SIGKILLed 200 times at random moments leaves one complete version every time", { timeout: 600_000 }, async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root);
    const targets = ["target-0", "target-1"];
    for (const t of targets) await tool.execute({ path: t, content: version(0) }, ctx());
    const entry = pathToFileURL(join(import.meta.dirname, "../dist/index.js")).href;
    const child = `
      import { createWriteTool } from ${JSON.stringify(entry)};
      ${versionSource}
      const [root, target, start] = process.argv.slice(1);
      const tool = createWriteTool(root);
      const ctx = { signal: new AbortController().signal };
      process.stdout.write("ready\\n");
      for (let n = Number(start); ; n++) await tool.execute({ path: target, content: version(n) }, ctx);
    `;
    const versions = new Set<string>();
    const killOne = async (target: string, start: number, kill: number) => {
      const proc = spawn(process.execPath, ["--input-type=module", "-e", child, root, target, String(start)], {
        stdio: ["ignore", "pipe", "inherit"],
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) => proc.once("exit", (_code, signal) => resolve(signal)));
      await new Promise<void>((resolve, reject) => {
        proc.stdout.once("data", () => resolve());
        proc.once("exit", (code) => reject(new Error(`the writer exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, Math.random() * 30));
      proc.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      const now = await readFile(join(root, target), "utf8");
      expect(now.length).toBeGreaterThan(0);
      if (!isVersion(now)) throw new Error(`after kill ${kill} (${target}): not one complete version: ${now.slice(0, 60)}... (${now.length} bytes)`);
      versions.add(now.slice(0, 20));
    };
    for (let i = 0; i < 100; i++) {
      await Promise.all(targets.map((t, k) => killOne(t, (2 * i + k + 1) * 100_000, 2 * i + k)));
    }
    // The writers made progress between kills (the test exercised writes, not idle children).
    expect(versions.size).toBeGreaterThan(50);
    // A killed call never ended, so its temp may remain; it never replaced the target.
    for (const t of await temps(root)) expect((await lstat(join(root, t))).isFile()).toBe(true);
  });
});

describe("write_file against racing attackers", () => {
  async function expectOnlyToolErrors(results: PromiseSettledResult<unknown>[]): Promise<{ ok: number; codes: Record<string, number> }> {
    const codes: Record<string, number> = {};
    let ok = 0;
    for (const r of results) {
      if (r.status === "fulfilled") ok++;
      else {
        expect(r.reason).toBeInstanceOf(ToolError);
        const code = (r.reason as ToolError).code;
        codes[code] = (codes[code] ?? 0) + 1;
        if (code === "IO_ERROR") console.log("IO_ERROR:", (r.reason as ToolError).message);
      }
    }
    return { ok, codes };
  }

  async function writeMany(
    tool: ReturnType<typeof createWriteTool>,
    path: string,
    count: number,
    beforeBatch: () => Promise<void> = async () => {},
  ): Promise<PromiseSettledResult<unknown>[]> {
    const out: PromiseSettledResult<unknown>[] = [];
    const until = Date.now() + 1500;
    for (let i = 0; i < count || Date.now() < until; i += 4) {
      await beforeBatch();
      out.push(...(await Promise.allSettled([0, 1, 2, 3].map((k) => tool.execute({ path, content: version(i + k) }, ctx())))));
    }
    return out;
  }

  test("swapping the parent directory for an outside symlink never leads a write outside", { timeout: 120_000 }, async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(parent, "OUT"));
    await writeFile(join(parent, "OUT/target"), "outside");
    await mkdir(join(root, "dir"));
    const before = await outsideSnapshot(parent);
    const attacker = startWorker(
      `let swaps = 0;
       for (let i = 0; !stopped(); i++) {
         // Whatever directory is at "dir" now (the original, or one write_file recreated)
         // goes aside under a fresh name while an outside symlink takes its place.
         const aside = data.root + "/aside-" + i;
         try { fs.renameSync(data.root + "/dir", aside); } catch {}
         try { fs.symlinkSync(i % 2 ? data.out : "../OUT", data.root + "/dir"); swaps++; } catch {}
         for (let k = 0; k < 50; k++) fs.existsSync(data.root);
         try { if (fs.lstatSync(data.root + "/dir").isSymbolicLink()) fs.unlinkSync(data.root + "/dir"); } catch {}
         try { fs.renameSync(aside, data.root + "/dir"); } catch {}
         for (let k = 0; k < 50; k++) fs.existsSync(data.root);
       }
       return { swaps };`,
      { root, out: join(parent, "OUT") },
    );
    const results = await writeMany(createWriteTool(root), "dir/target", 400);
    const { swaps } = await attacker.stop();
    const { ok, codes } = await expectOnlyToolErrors(results);
    console.log(`parent swap: ${swaps} swaps, ${ok} writes landed inside, refusals ${JSON.stringify(codes)}`);
    expect(swaps).toBeGreaterThan(100);
    expect(ok).toBeGreaterThan(0);
    expect(await outsideSnapshot(parent)).toEqual(before);
    expect(await temps(root)).toEqual([]);
  });

  test("replacing the target with an outside symlink just before the rename never writes outside", { timeout: 120_000 }, async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(parent, "secret.txt"), "outside");
    await mkdir(join(root, "dir"));
    await writeFile(join(root, "dir/target"), version(0));
    const before = await outsideSnapshot(parent);
    const attacker = startWorker(
      `let swaps = 0;
       const target = data.root + "/dir/target", tmp = data.root + "/dir/.attacker";
       for (let i = 0; !stopped(); i++) {
         // Mostly a regular file (so writes get as far as the rename), briefly an outside link.
         try { fs.writeFileSync(tmp, "attacker file"); fs.renameSync(tmp, target); } catch {}
         for (let k = 0; k < 200; k++) fs.existsSync(data.root);
         try { fs.rmSync(tmp, { force: true }); fs.symlinkSync(i % 2 ? data.secret : "../../secret.txt", tmp); fs.renameSync(tmp, target); swaps++; } catch {}
         for (let k = 0; k < 10; k++) fs.existsSync(data.root);
       }
       return { swaps };`,
      { root, secret: join(parent, "secret.txt") },
    );
    const results = await writeMany(createWriteTool(root), "dir/target", 400);
    const { swaps } = await attacker.stop();
    const { ok, codes } = await expectOnlyToolErrors(results);
    console.log(`target swap: ${swaps} swaps, ${ok} writes landed inside, refusals ${JSON.stringify(codes)}`);
    expect(swaps).toBeGreaterThan(50);
    expect(ok).toBeGreaterThan(0);
    expect(await readFile(join(parent, "secret.txt"), "utf8")).toBe("outside");
    expect(await outsideSnapshot(parent)).toEqual(before);
    expect(await temps(root)).toEqual([]);
  });

  test("an attacker replacing our temp files with outside symlinks never redirects a write", { timeout: 120_000 }, async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(parent, "secret.txt"), "outside");
    const before = await outsideSnapshot(parent);
    const attacker = startWorker(
      `let swaps = 0;
       while (!stopped()) {
         let names;
         try { names = fs.readdirSync(data.root); } catch { continue; }
         for (const n of names) {
           if (!n.startsWith(".workcell-tmp-")) continue;
           const p = data.root + "/" + n;
           try { if (fs.lstatSync(p).isSymbolicLink()) continue; } catch { continue; }
           try { fs.symlinkSync(data.secret, p + ".x"); fs.renameSync(p + ".x", p); swaps++; } catch {}
           try { fs.rmSync(p + ".x", { force: true }); } catch {}
         }
       }
       return { swaps };`,
      { root, secret: join(parent, "secret.txt") },
    );
    // When a swap lands between our name check and the rename, the target becomes the
    // attacker's symlink (TARGET_CHANGED); put a file back so later writes meet the race again.
    const repair = async () => {
      const s = await lstat(join(root, "target")).catch(() => undefined);
      if (s?.isSymbolicLink()) await unlink(join(root, "target"));
    };
    const results = await writeMany(createWriteTool(root), "target", 400, repair);
    const { swaps } = await attacker.stop();
    const { ok, codes } = await expectOnlyToolErrors(results);
    console.log(`temp swap: ${swaps} swaps, ${ok} writes landed, refusals ${JSON.stringify(codes)}`);
    expect(ok).toBeGreaterThan(0);
    expect(await readFile(join(parent, "secret.txt"), "utf8")).toBe("outside");
    expect(await outsideSnapshot(parent)).toEqual(before);
    // The target is one of our versions, or the attacker's symlink when a swap landed between
    // the name check and the rename (reported as TARGET_CHANGED; the outside file is untouched).
    if (!(await lstat(join(root, "target"))).isSymbolicLink()) {
      expect(isVersion(await readFile(join(root, "target"), "utf8"))).toBe(true);
    }
    // Whatever remains under a temp name is the attacker's symlink, never a file of ours.
    for (const t of await temps(root)) expect((await lstat(join(root, t))).isSymbolicLink()).toBe(true);
  });
});
