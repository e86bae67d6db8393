// Shared benchmark helpers. Each bench/<concern>.mjs exports `default async function (h)` and
// reports rows with h.row(); bench/index.mjs runs them all, prints a table and writes
// bench/results.json. Ratios compare workcell with the obvious alternative measured in the
// same run, never against a fixed number.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";

/** Median / p99 / mean latency (µs) of an async function, after a warm-up. */
export async function latency(fn, { iterations = 2000, warmup = 200, minMs = 0 } = {}) {
  for (let i = 0; i < warmup; i++) await fn();
  const samples = [];
  const start = performance.now();
  for (let i = 0; i < iterations || performance.now() - start < minMs; i++) {
    const t0 = process.hrtime.bigint();
    await fn();
    samples.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  samples.sort((a, b) => a - b);
  const q = (p) => samples[Math.min(samples.length - 1, Math.floor(p * samples.length))];
  return { median: q(0.5), p99: q(0.99), mean: samples.reduce((a, b) => a + b, 0) / samples.length, n: samples.length };
}

/**
 * Runs `concurrency` callers for `durationMs`, each yielding to the event loop once between
 * calls (as request handlers do), and measures calls per second and the event loop's delay
 * as the lateness of a 1 ms interval timer (p99, µs).
 */
export async function throughput(fn, { concurrency = 64, durationMs = 3000 } = {}) {
  let calls = 0;
  let stop = false;
  const lateness = [];
  let expected = performance.now() + 1;
  const timer = setInterval(() => {
    const now = performance.now();
    lateness.push(Math.max(0, now - expected) * 1000);
    expected = now + 1;
  }, 1);
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  const start = performance.now();
  const worker = async () => {
    while (!stop) {
      await fn();
      calls++;
      await new Promise((r) => setImmediate(r));
    }
  };
  const workers = Array.from({ length: concurrency }, worker);
  await new Promise((r) => setTimeout(r, durationMs));
  stop = true;
  await Promise.all(workers);
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(timer);
  histogram.disable();
  lateness.sort((a, b) => a - b);
  const p99 = lateness[Math.min(lateness.length - 1, Math.floor(0.99 * lateness.length))] ?? 0;
  return { callsPerSecond: calls / elapsed, loopDelayP99Us: p99 };
}

/**
 * Median wall time (ms) of each function, sampled in rotating order (each round starts with the
 * next one) so that all of them see the same machine.
 */
export async function interleaved(fns, { iterations, warmup }) {
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  const samples = fns.map(() => []);
  for (let i = 0; i < iterations; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length;
      const t0 = performance.now();
      await fns[j]();
      samples[j].push(performance.now() - t0);
    }
  }
  return samples.map((s) => s.sort((x, y) => x - y)[Math.floor(s.length / 2)]);
}

/** A temporary directory removed by `cleanup()`. */
export async function tempDir(prefix = "workcell-bench-") {
  const dir = await realpath(await mkdtemp(join(tmpdir(), prefix)));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export function createReporter() {
  const rows = [];
  return {
    rows,
    latency,
    throughput,
    interleaved,
    tempDir,
    /**
     * Records one comparison. `ratio` is subject/baseline for times (lower is better) or as
     * given for rates; `target` states the goal ("<= 0.5") and `pass` whether it was met.
     */
    row({ name, subject, baseline, unit, subjectValue, baselineValue, ratio, target, pass, notes }) {
      const r = { name, subject, baseline, unit, subjectValue, baselineValue, ratio, target, pass, notes };
      rows.push(r);
      const fmt = (v) => (typeof v === "number" ? v.toFixed(v >= 100 ? 0 : 2) : String(v ?? ""));
      console.log(`  ${name}: ${fmt(subjectValue)} ${unit} vs ${fmt(baselineValue)} ${unit} -> ratio ${fmt(ratio)} (target ${target}) ${pass ? "ok" : "MISSED"}`);
      return r;
    },
  };
}
