// A call's AbortSignal gets its `abort` listener only when the call is still running a few
// milliseconds after it started (ts/native.ts): short calls leave the signal untouched, and a
// long call is still cancelled by an abort at any moment, before or after its listener exists,
// also while a test's fake timers replace the global ones.
import { getEventListeners } from "node:events";
import { describe, expect, test, vi } from "vitest";
import { createNodeProcessTool, createReadTool, createWriteTool, ToolError } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

const LONG = "process.stdout.write('ready\\n'); setInterval(() => {}, 1000)";

async function abortedAfter(ms: number, fakeTimers = false): Promise<unknown> {
  const { root } = await tempWorkspace();
  const tool = createNodeProcessTool(root, { timeoutMs: 30_000 });
  const ac = new AbortController();
  if (fakeTimers) vi.useFakeTimers();
  try {
    const pending = tool.execute(tool.validate({ source: LONG }), ctx(ac.signal));
    if (ms > 0) await sleepReal(ms);
    ac.abort();
    return await pending.then(
      () => "resolved",
      (e: unknown) => e,
    );
  } finally {
    if (fakeTimers) vi.useRealTimers();
  }
}

/** Waits with node:timers' own setTimeout (not the global one a fake-timer install replaces). */
async function sleepReal(ms: number): Promise<void> {
  const { setTimeout: real } = await import("node:timers/promises");
  await real(ms);
}

describe("cancellation listeners", () => {
  test("cancel_listener_abort_right_after_the_start_still_cancels_the_call", async () => {
    const e = await abortedAfter(0);
    expect(e).toBeInstanceOf(Error);
    expect((e as Error).name).toBe("AbortError");
  });

  test("cancel_listener_abort_after_the_listener_is_added_cancels_the_call", async () => {
    const e = await abortedAfter(300);
    expect((e as Error).name).toBe("AbortError");
  });

  test("cancel_listener_abort_under_fake_timers_still_cancels_the_call", async () => {
    const e = await abortedAfter(300, true);
    expect((e as Error).name).toBe("AbortError");
  });

  test("cancel_listener_short_calls_on_fresh_signals_leave_them_without_listeners", async () => {
    const { root } = await tempWorkspace();
    const write = createWriteTool(root);
    const read = createReadTool(root);
    await write.execute({ path: "a.txt", content: "x\n" }, ctx());
    const signals: AbortSignal[] = [];
    for (let i = 0; i < 200; i++) {
      const s = new AbortController().signal;
      signals.push(s);
      await read.execute({ path: "a.txt" }, ctx(s));
    }
    // Each read ends long before the listener's tick; on a loaded machine a few may not.
    const listened = signals.filter((s) => getEventListeners(s, "abort").length > 0).length;
    expect(listened).toBeLessThan(100);
  });

  test("cancel_listener_one_listener_per_signal_however_many_long_calls_share_it", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 30_000 });
    const ac = new AbortController();
    const calls = Array.from({ length: 4 }, () => tool.execute(tool.validate({ source: LONG }), ctx(ac.signal)).catch((e: unknown) => e));
    await sleepReal(300);
    expect(getEventListeners(ac.signal, "abort").length).toBe(1);
    ac.abort();
    for (const e of await Promise.all(calls)) expect(e).not.toBeInstanceOf(ToolError);
  });
});
