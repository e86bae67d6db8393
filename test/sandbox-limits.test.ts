// Resource limits against bounded hostile children (test/limits-runner.mjs): a fork bomb, a memory
// hog and a file writer each stop at a small cap, and reach their own bound under the default
// caps (so each test can fail); the call returns, the host's event loop kept turning during it,
// the children are the OOM killer's choice and not the host, and the call's cgroups are gone
// afterwards (also after a timeout and a cancellation). The same runs as `nobody`.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { createCodingTools, createNodeProcessTool, createRunCommandTool, createRunTestsTool, sandboxLimitDefaults, sandboxSupport, ToolError } from "../dist/index.js";
import { FORK_BOUND, FORK_CAP, MEMORY_BOUND, MEMORY_CAP, WRITE_BOUND, WRITE_CAP, runAll } from "./limits-runner.mjs";
import { ctx, tempWorkspace } from "./helpers.js";
import * as lib from "../dist/index.js";
import { ATTACKS, TOOLS, runAttack } from "./sandbox-attacks.mjs";

const features = sandboxSupport();
const namespaced = features.pidNamespace && features.userNamespace;
const AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];

type Run = {
  exitCode: number | null;
  signal: string | null;
  error: { code: string; message: string } | null;
  sandbox: any;
  info: { oom: string; cgroups: string } | null;
  result: any;
  turns: number;
  cgroups: string[];
  cgroupsLeft: string[];
  stderr: string;
};

function checkResults(results: any) {
  const root = results.uid === 0;
  const a = results.attacks;
  const common = (r: Run) => {
    // The host's event loop kept turning while the call ran.
    expect(r.turns).toBeGreaterThan(0);
    // The child is the OOM killer's first choice; the host is not.
    expect(r.info?.oom).toBe("1000");
    expect(Number(results.hostOomBefore)).toBeLessThan(1000);
    expect(results.hostOom).toBe(results.hostOomBefore);
    // Whatever cgroups the call made are gone.
    expect(r.cgroupsLeft).toEqual([]);
  };

  // Fork bomb: stops at the cap with EAGAIN; reaches its own bound under the default cap.
  const fork = a.forkBomb;
  common(fork.capped);
  common(fork.defaults);
  expect(fork.capped.sandbox.limits.processes).toEqual({ max: FORK_CAP, by: root ? expect.stringMatching(/^cgroup-v[12]$/) : "rlimit" });
  expect(fork.capped.result.error).toBe("EAGAIN");
  expect(fork.capped.result.started).toBeLessThan(FORK_CAP);
  expect(fork.defaults.result).toEqual({ started: FORK_BOUND, error: null });
  if (root) expect(fork.capped.cgroups.length).toBeGreaterThan(0);

  // Memory hog: never gets its 512 MiB under a 256 MiB cap (killed by the cgroup's OOM killer,
  // or refused by RLIMIT_DATA), gets it under the default cap.
  const mem = a.memoryHog;
  common(mem.capped);
  common(mem.defaults);
  expect(mem.capped.sandbox.limits.memoryBytes).toEqual({ max: MEMORY_CAP, by: root ? expect.stringMatching(/^cgroup-v[12]$/) : "rlimit" });
  expect(mem.capped.result?.bytes ?? 0).toBeLessThan(MEMORY_BOUND);
  expect(mem.capped.exitCode === 0 && mem.capped.result?.bytes === MEMORY_BOUND).toBe(false);
  expect(mem.defaults.result).toEqual({ bytes: MEMORY_BOUND, error: null });

  // Writer: EFBIG at exactly the cap, and the script lives on to say so.
  const w = a.writer;
  common(w.capped);
  common(w.defaults);
  expect(w.capped.sandbox.limits.fileBytes).toEqual({ max: WRITE_CAP, by: "rlimit" });
  expect(w.capped.result).toEqual({ written: WRITE_CAP, error: "EFBIG" });
  expect(w.capped.exitCode).toBe(0);
  expect(w.defaults.result).toEqual({ written: WRITE_BOUND, error: null });

  // A shell program: SIGXFSZ is ignored, so head gets EFBIG and the shell goes on.
  const sh = results.shellWriter;
  expect([sh.exitCode, sh.signal]).toEqual([0, null]);
  expect(sh.output).toContain("rc=1");
  expect(sh.output).toContain(String(WRITE_CAP));
  expect(sh.sandbox.limits.fileBytes).toEqual({ max: WRITE_CAP, by: "rlimit" });

  // Timeout and cancellation: the cgroups are removed with the tree.
  expect(results.timeout.error.code).toBe("NODE_PROCESS_TIMEOUT");
  expect(results.timeout.sandbox.limits.processes.max).toBe(FORK_CAP);
  expect(results.timeout.cgroupsLeft).toEqual([]);
  expect(results.cancelled.error.code).toBe("AbortError");
  expect(results.cancelled.cgroupsLeft).toEqual([]);
  if (root) {
    expect(results.timeout.cgroups.length).toBeGreaterThan(0);
    expect(results.cancelled.cgroups.length).toBeGreaterThan(0);
  }
}

describe.skipIf(!namespaced)("resource limits against hostile children", () => {
  test("a root host: each attack stops at its cap, the host keeps running, nothing is left", async () => {
    expect(process.getuid?.()).toBe(0);
    checkResults(await runAll());
  }, 240_000);

  test("an unprivileged host: the same, with rlimits counted in the sandbox's user namespace", (t) => {
    const repo = fileURLToPath(new URL("..", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "workcell-nobody-"));
    chmodSync(dir, 0o755);
    try {
      cpSync(join(repo, "dist"), join(dir, "dist"), { recursive: true });
      mkdirSync(join(dir, "native"));
      for (const f of readdirSync(join(repo, "native"))) {
        if (f.endsWith(".cjs") || f.endsWith(".node")) cpSync(join(repo, "native", f), join(dir, "native", f));
      }
      cpSync(join(repo, "package.json"), join(dir, "package.json"));
      mkdirSync(join(dir, "test"));
      cpSync(join(repo, "test", "limits-runner.mjs"), join(dir, "test", "limits-runner.mjs"));
      const runner = join(dir, "test", "limits-runner.mjs");
      if (spawnSync("setpriv", [...AS_NOBODY, "test", "-r", runner], { cwd: "/" }).status !== 0) {
        console.warn(`skipped the unprivileged run: nobody cannot read ${runner}`);
        t.skip();
        return;
      }
      const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, runner], { encoding: "utf8", env: { PATH: process.env.PATH }, cwd: "/", timeout: 230_000 });
      expect(r.status, r.stderr).toBe(0);
      const results = JSON.parse(r.stdout.trim().split("\n").pop()!);
      expect(results.uid).toBe(65534);
      checkResults(results);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe.skipIf(process.getuid?.() !== 0 || !features.pidNamespace)("without a PID namespace", () => {
  test("the call's cgroups still kill a setsid grandchild that left the process group", async () => {
    const attack = (ATTACKS as any[]).find((a) => a.name.startsWith("start a setsid grandchild"));
    for (const tool of Object.keys(TOOLS).filter((t) => attack[t])) {
      const grouped = await runAttack(lib, tool, attack, { sandboxFeatures: { pidNamespace: false, cgroups: false }, protect: [] });
      expect([tool, grouped.escaped]).toEqual([tool, true]);
      const contained = await runAttack(lib, tool, attack, { sandboxFeatures: { pidNamespace: false }, protect: [] });
      expect([tool, contained.escaped]).toEqual([tool, false]);
      expect(contained.output.sandbox.limits.processes.by).toMatch(/^cgroup-v[12]$/);
      expect([...grouped.leftovers, ...contained.leftovers]).toEqual([]);
    }
  }, 120_000);
});

describe("the limits option", () => {
  test("defaults come from the core: 512 processes, half the physical memory in whole MiB, 4 GiB per file", async () => {
    const d = sandboxLimitDefaults();
    const { totalmem } = await import("node:os");
    expect(d).toEqual({ processes: 512, memoryBytes: Math.floor(totalmem() / 2 / 2 ** 20) * 2 ** 20, fileBytes: 4 * 2 ** 30 });
    const { root } = await tempWorkspace();
    const out = await createNodeProcessTool(root, { timeoutMs: 10_000 }).execute({ source: "" }, ctx());
    expect(out.sandbox.limits).toMatchObject({ processes: { max: 512 }, memoryBytes: { max: d.memoryBytes }, fileBytes: { max: d.fileBytes, by: "rlimit" } });
  });

  test("a host's unusable limits are a TypeError at creation, on every process tool", async () => {
    const { root } = await tempWorkspace();
    const factories = [
      (o: any) => createNodeProcessTool(root, o),
      (o: any) => createRunCommandTool(root, o),
      (o: any) => createRunTestsTool(root, o),
      (o: any) => createCodingTools(root, { processes: o }),
    ];
    for (const make of factories) {
      for (const limits of [{ processes: 0 }, { processes: 1.5 }, { memoryBytes: 1 << 20 }, { fileBytes: -1 }, { fileBytes: "1" }, { cpu: 1 }, [], null]) {
        expect(() => make({ limits }), JSON.stringify(limits)).toThrow(TypeError);
      }
      expect(() => make({ limits: { processes: 64, memoryBytes: 256 << 20, fileBytes: 1 } })).not.toThrow();
    }
  });

  test('"off" enforces nothing and says so', async () => {
    const { root } = await tempWorkspace();
    const out = await createNodeProcessTool(root, { sandbox: "off", limits: { processes: 64 } }).execute({ source: "" }, ctx());
    expect(out.sandbox.limits).toMatchObject({ processes: { max: 64, by: "none" }, memoryBytes: { by: "none" }, fileBytes: { by: "none" } });
  });

  test.skipIf(!namespaced || process.getuid?.() !== 0)('"required" refuses a root host that can make no pids cgroup; "auto" runs and reports by: "none"', async () => {
    const { root } = await tempWorkspace();
    const noCgroups = { sandboxFeatures: { cgroups: false } } as const;
    const required = createNodeProcessTool(root, { sandbox: "required", ...noCgroups });
    const err = (await required.execute({ source: "" }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(err).toBeInstanceOf(ToolError);
    expect(err.code).toBe("SANDBOX_UNAVAILABLE");
    expect((err.details as any).missing).toContain("limit-processes");
    const out = await createNodeProcessTool(root, { ...noCgroups, timeoutMs: 10_000 }).execute({ source: "" }, ctx());
    // Root: RLIMIT_NPROC is not enforced and there is no cgroup; memory falls back to RLIMIT_DATA.
    expect(out.sandbox.limits).toMatchObject({ processes: { by: "none" }, memoryBytes: { by: "rlimit" }, fileBytes: { by: "rlimit" } });
  });
});
