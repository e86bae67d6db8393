// Helpers for tests that start processes: markers to find them through /proc, and checks that
// nothing is left behind.
import { randomBytes } from "node:crypto";
import { readFileSync, readdirSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import { tempWorkspace } from "./helpers.js";

/**
 * A workspace (ROOT in a temporary parent, removed after the test) and an empty scratch parent
 * beside it, so the test can see what a call leaves there.
 */
export async function withScratch(): Promise<{ parent: string; root: string; scratchDir: string }> {
  const ws = await tempWorkspace();
  const scratchDir = join(ws.parent, "scratch");
  await mkdir(scratchDir);
  return { ...ws, scratchDir };
}

/** A unique string to put in a child's arguments or environment. */
export function marker(): string {
  return `wc-mark-${randomBytes(8).toString("hex")}`;
}

/** Live (not zombie) processes whose command line or environment contains `mark`. */
export function aliveWith(mark: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      for (const file of ["cmdline", "environ"]) {
        if (readFileSync(`/proc/${pid}/${file}`, "latin1").includes(mark)) {
          found.push(pid);
          break;
        }
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/**
 * Expects that no process carrying `mark` is alive. SIGKILL takes effect asynchronously, so a
 * process killed at the end of a call may take a moment to disappear: this allows one second.
 */
export async function expectNoneAlive(mark: string): Promise<void> {
  const until = Date.now() + 1_000;
  let alive = aliveWith(mark);
  while (alive.length > 0 && Date.now() < until) {
    await new Promise((r) => setTimeout(r, 20));
    alive = aliveWith(mark);
  }
  expect(alive, `processes still alive: ${alive.map(describePid).join("; ")}`).toEqual([]);
}

function describePid(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, "latin1").replaceAll("\0", " ")}`;
  } catch {
    return String(pid);
  }
}

/** Zombie children of this process (children exited but never collected). */
export function zombieChildren(): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" && Number(fields[1]) === process.pid) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Names of `.workcell-node-*` entries in `dir`. */
export function scriptLeftovers(dir: string): string[] {
  return readdirSync(dir).filter((n) => n.startsWith(".workcell-node-"));
}

/** Samples this process's RSS every few milliseconds while `run` runs; returns the peak growth. */
export async function peakRssGrowth<T>(run: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const base = process.memoryUsage.rss();
  let peak = base;
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 5);
  try {
    const result = await run();
    peak = Math.max(peak, process.memoryUsage.rss());
    return { result, growth: peak - base };
  } finally {
    clearInterval(timer);
  }
}
