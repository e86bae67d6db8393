// The promises of calls that finish on workcell's threads are settled through one shared queue
// per JavaScript thread (src/settle.rs): each caller gets its own result however many finish
// together, a pending call keeps the process alive and an idle addon does not, and a worker
// thread that ends with calls in flight takes nothing else down.
import { execFile } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { createReadTool, createWriteTool } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

const run = promisify(execFile);
const dist = new URL("../dist/index.js", import.meta.url).href;

describe("settling calls", () => {
  test("settle_batch_gives_each_caller_its_own_result", async () => {
    const { root } = await tempWorkspace();
    for (let i = 0; i < 64; i++) await writeFile(join(root, `f${i}.txt`), `content ${i}\n`);
    const read = createReadTool(root);
    const write = createWriteTool(root);
    const calls = Array.from({ length: 2000 }, (_, i) => {
      const n = i % 80;
      if (i % 7 === 0) return write.execute({ path: `out/w${i}.txt`, content: `w${i}` }, ctx()).then((r) => `write ${r.path} ${r.bytes}`);
      return read.execute({ path: `f${n}.txt` }, ctx()).then(
        (r) => ("content" in r ? r.content : "(an image)"),
        (e: { code?: string }) => `error ${e.code}`,
      );
    });
    const results = await Promise.all(calls);
    results.forEach((r, i) => {
      const n = i % 80;
      if (i % 7 === 0) expect(r).toBe(`write out/w${i}.txt ${`w${i}`.length}`);
      else expect(r).toBe(n < 64 ? `content ${n}\n` : "error FILE_NOT_FOUND");
    });
  });

  test("settle_pending_call_keeps_the_process_alive_and_idle_addon_lets_it_exit", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "alive\n");
    // Nothing but the pending call holds the loop: the process must wait for it, print, and
    // then exit on its own (execFile's timeout only catches a hang).
    const script = `
      const { createReadTool } = await import(${JSON.stringify(dist)});
      const tool = createReadTool(${JSON.stringify(root)});
      tool.execute({ path: "a.txt" }, {}).then((r) => process.stdout.write("got " + r.content));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { timeout: 60_000 });
    expect(stdout).toBe("got alive\n");
  });

  // The loop is woken by a libuv async handle of the addon. Woken through a threadsafe function
  // instead, it went to sleep twice per call: Node writes the loop's eventfd while holding the
  // function's mutex, so the loop's thread woke, blocked on that mutex, and slept until the
  // worker let go (read_file of 4 KiB: about 4 µs of 28 per call).
  test.skipIf(process.platform !== "linux")("settle_a_finished_call_wakes_the_event_loop_once", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "x".repeat(4096));
    // The event loop's thread is the process's main thread (a child process: the test runner's
    // own thread may not be); its voluntary context switches count how often it went to sleep.
    const script = `
      const { readFileSync } = await import("node:fs");
      const { createReadTool } = await import(${JSON.stringify(dist)});
      const tool = createReadTool(${JSON.stringify(root)});
      const context = { signal: new AbortController().signal };
      const sleeps = () => Number(/voluntary_ctxt_switches:\\s+(\\d+)/.exec(readFileSync("/proc/self/task/" + process.pid + "/status", "utf8"))[1]);
      for (let i = 0; i < 200; i++) await tool.execute({ path: "a.txt" }, context);
      const before = sleeps();
      for (let i = 0; i < 2000; i++) await tool.execute({ path: "a.txt" }, context);
      process.stdout.write(String((sleeps() - before) / 2000));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { timeout: 120_000 });
    // Once per call while it waits for the result (epoll); twice was the mutex.
    expect(Number(stdout)).toBeLessThan(1.4);
  });

  // While a quick call (a file lane job) is in flight the loop polls instead of sleeping, for at
  // most 100 µs after the call started and never once no call is pending: a call that takes
  // long, and an idle process, cost the loop's thread next to nothing.
  test.skipIf(process.platform !== "linux")("settle_the_loop_polls_only_briefly_for_a_quick_call_that_takes_long_and_not_at_all_when_idle", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "big.bin"), Buffer.alloc(64 * 1024 * 1024, 7));
    // The loop's thread's own CPU time (ns, /proc's schedstat), against the wall time.
    const script = `
      const { readFileSync } = await import("node:fs");
      const { hashFile } = await import(${JSON.stringify(dist)});
      const cpu = () => Number(readFileSync("/proc/self/task/" + process.pid + "/schedstat", "utf8").split(" ")[0]);
      await hashFile(${JSON.stringify(root)}, "big.bin");
      let calls = 0, callCpu = 0, callWall = 0;
      while (callWall < 300e6 && calls < 50) {
        const c0 = cpu(), w0 = process.hrtime.bigint();
        await hashFile(${JSON.stringify(root)}, "big.bin");
        callCpu += cpu() - c0; callWall += Number(process.hrtime.bigint() - w0); calls++;
      }
      const i0 = cpu(), iw0 = process.hrtime.bigint();
      await new Promise((r) => setTimeout(r, 300));
      const idleCpu = cpu() - i0, idleWall = Number(process.hrtime.bigint() - iw0);
      process.stdout.write(JSON.stringify({ calls, callCpu, callWall, idleCpu, idleWall }));
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { timeout: 120_000 });
    const m = JSON.parse(stdout) as { calls: number; callCpu: number; callWall: number; idleCpu: number; idleWall: number };
    // Each hash of 64 MiB takes tens of milliseconds: polling through it would keep the loop's
    // thread on the CPU for most of that time.
    expect(m.callWall / m.calls).toBeGreaterThan(5e6);
    expect(m.callCpu / m.callWall).toBeLessThan(0.2);
    expect(m.idleCpu / m.idleWall).toBeLessThan(0.1);
  });

  test("settle_worker_ended_with_calls_in_flight_leaves_the_main_thread_working", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "x".repeat(1000));
    const script = `
      import { Worker } from "node:worker_threads";
      const code = \`
        const { createReadTool } = await import(${JSON.stringify(dist)});
        const t = createReadTool(${JSON.stringify(root)});
        const { parentPort } = await import("node:worker_threads");
        let n = 0;
        for (;;) { await Promise.all(Array.from({ length: 64 }, () => t.execute({ path: "a.txt" }, {}))); if (++n === 3) parentPort.postMessage("busy"); }
      \`;
      for (let i = 0; i < 3; i++) {
        const w = new Worker(code, { eval: true, type: "module" });
        await new Promise((r) => w.once("message", r));
        await w.terminate();
      }
      const { createReadTool } = await import(${JSON.stringify(dist)});
      const r = await createReadTool(${JSON.stringify(root)}).execute({ path: "a.txt" }, {});
      process.stdout.write("main " + r.bytes);
    `;
    const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], { timeout: 120_000 });
    expect(stdout).toBe("main 1000");
  });
});
