// The sandbox against hostile children: every attack of test/sandbox-attacks.mjs runs with the
// sandbox off (it must escape, so the test can fail) and under "auto" (it must be refused or
// contained), through every tool of the table; legitimate work must still run confined. The
// same table runs again in a host process started as `nobody`. Attacks on a layer this kernel
// lacks are skipped, by name, from what the probe reports.
import { spawnSync, type SpawnSyncReturns } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import * as lib from "../dist/index.js";
import { ToolError, createCodingTools, createNodeProcessTool, createRunTestsTool, executeToolCall, sandboxSupport, ToolRegistry, type AnyTool } from "../dist/index.js";
import { ATTACKS as ATTACK_TABLE, LEGIT as LEGIT_TABLE, TOOLS, runAttack, runLegit, setting } from "./sandbox-attacks.mjs";
import { call, content, ctx, tempWorkspace } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";
import { aliveWith, marker, scriptLeftovers } from "./process-helpers.js";
import { defaultLimitsReport } from "./limits-helpers.js";

const features = sandboxSupport();
const FULL = { landlockAbi: 7, filesystem: "confined", network: "blocked", processes: "namespace", nodePermission: true, limits: defaultLimitsReport(), protect: "read-only" };
const HAS_CARGO = spawnSync("sh", ["-c", "command -v cargo"]).status === 0;
// The tables are plain JavaScript (they also run in a separate host process): rows are indexed
// by tool name.
type Row = { name: string; [tool: string]: any };
const ATTACKS = ATTACK_TABLE as Row[];
const LEGIT = LEGIT_TABLE as Row[];

describe.each(Object.keys(TOOLS))("%s: hostile children", (tool) => {
  test.each(ATTACKS.filter((a) => a[tool]).map((a) => [a.name, a] as const))("%s", async (_name, attack) => {
    if (!attack.needs(features)) {
      console.warn(`skipped "${attack.name}": this kernel lacks the layer (${JSON.stringify(features)})`);
      return;
    }
    const off = await runAttack(lib, tool, attack, { sandbox: "off" });
    expect(off.escaped, `without the sandbox the attack must succeed: ${off.output.stdout}${off.output.stderr}`).toBe(true);
    expect(off.output.sandbox).toEqual({ landlockAbi: null, filesystem: "open", network: "open", processes: "group", nodePermission: false, limits: defaultLimitsReport("off"), protect: "open" });
    const auto = await runAttack(lib, tool, attack, {});
    expect(auto.escaped, `under "auto" the attack must fail: ${auto.output.stdout}${auto.output.stderr}`).toBe(false);
    expect(auto.leftovers).toEqual([]);
    expect(off.leftovers).toEqual([]);
  });
});

// Each layer on its own: on a simulated kernel missing some features, an attack escapes
// exactly when no remaining layer covers it (so `needs` is honest, and so are the reports).
// Without a namespace, the limits' cgroups (where the host can make them) would also kill a
// process that left the group: those rows simulate no cgroup either (test/sandbox-limits.test.ts
// has the row with them).
const SIMULATED: readonly { landlockAbi?: number | null; pidNamespace?: boolean; procMount?: boolean; cgroups?: boolean }[] = [
  { landlockAbi: null },
  { landlockAbi: 3 },
  { landlockAbi: 5 },
  { pidNamespace: false, cgroups: false },
  { procMount: false },
  { landlockAbi: null, pidNamespace: false, cgroups: false },
];

describe.each(Object.keys(TOOLS))("%s: one layer missing at a time", (tool) => {
  test.each(SIMULATED.map((f) => [JSON.stringify(f), f] as const))("%s", async (_name, limit) => {
    const simulated = {
      landlockAbi: limit.landlockAbi === undefined ? features.landlockAbi : limit.landlockAbi === null ? null : Math.min(limit.landlockAbi, features.landlockAbi ?? 0) || null,
      pidNamespace: features.pidNamespace && (limit as { pidNamespace?: boolean }).pidNamespace !== false,
      procMount: features.procMount && (limit as { procMount?: boolean }).procMount !== false && (limit as { pidNamespace?: boolean }).pidNamespace !== false,
    };
    for (const attack of ATTACKS.filter((a) => a[tool] && a.needs(features))) {
      const r = await runAttack(lib, tool, attack, { sandboxFeatures: limit });
      expect([attack.name, r.escaped], `${r.output.stdout}${r.output.stderr}`).toEqual([attack.name, !attack.needs(simulated)]);
      expect(r.output.sandbox.landlockAbi).toBe(simulated.landlockAbi);
      expect(r.output.sandbox.processes).toBe(simulated.pidNamespace ? "namespace" : "group");
    }
  }, 120_000);
});

describe.each(Object.keys(TOOLS))("%s: legitimate work runs confined", (tool) => {
  test.each(LEGIT.filter((t) => t[tool]).map((t) => [t.name, t] as const))("%s", async (_name, task) => {
    const r = await runLegit(lib, tool, task, {});
    expect(r.ok, `${r.output.stdout}${r.output.stderr}`).toBe(true);
    expect(r.output.sandbox.filesystem).toBe(features.landlockAbi === null ? "open" : "confined");
  }, 60_000);
});

describe("this machine", () => {
  test("has every layer (Landlock ABI 7+, user and PID namespaces, a private /proc) and a result says so", async () => {
    // The machine the project is developed and judged on; elsewhere this names what is missing.
    expect(features.landlockAbi).toBeGreaterThanOrEqual(7);
    expect(features).toMatchObject({ pidNamespace: true, userNamespace: true, procMount: true });
    const { root } = await tempWorkspace();
    const out = await createNodeProcessTool(root, { timeoutMs: 10_000 }).execute({ source: "" }, ctx());
    expect(out.sandbox).toEqual({ ...FULL, landlockAbi: features.landlockAbi });
  });
});


/** The runner and the attack table in a copy of the package that `nobody` can read. */
function runnerNobodyCanRead(): { runner: string; dir: string } | { reason: string } {
  const copy = packageNobodyCanRead(["sandbox-runner.mjs", "sandbox-attacks.mjs"]);
  return "reason" in copy ? copy : { runner: join(copy.dir, "test", "sandbox-runner.mjs"), dir: copy.dir };
}

describe("an unprivileged host", () => {
  test("the same attacks are stopped and the same work runs when the host runs as nobody", (t) => {
    const copy = runnerNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      t.skip();
      return;
    }
    const { runner, dir } = copy;
    const secret = `canary-${process.pid}-${Date.now()}`;
    let r: SpawnSyncReturns<string>;
    try {
      r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, runner, `--api-key=${secret}`], {
        encoding: "utf8",
        env: { PATH: process.env.PATH },
        cwd: "/",
        timeout: 170_000,
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    expect(r.status, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(results.uid).toBe(65534);
    // Unprivileged, the kernel still gives every layer.
    expect(results.features).toEqual(features);
    for (const a of results.attacks) {
      if (!a.needed) continue;
      expect([a.name, a.off, a.auto, a.leftovers]).toEqual([a.name, true, false, []]);
      expect(a.report).toEqual({ ...FULL, landlockAbi: features.landlockAbi, nodePermission: a.tool === "node_process" });
    }
    expect(results.attacks.length).toBe(Object.keys(TOOLS).reduce((n, t) => n + ATTACKS.filter((a) => a[t]).length, 0));
    for (const t of results.legit) expect([t.name, t.ok, t.stderr]).toEqual([t.name, true, ""]);
    expect(r.stdout.split("\n").pop()).not.toContain(secret);
  }, 180_000);
});

describe("a root host with a secret in its command line", () => {
  test("no child reads it: /proc/1 (the init, a copy of the host) is hidden from a root child too", () => {
    expect(process.getuid?.()).toBe(0);
    const runner = fileURLToPath(new URL("./sandbox-runner.mjs", import.meta.url));
    const secret = `canary-${process.pid}-${Date.now()}`;
    const r = spawnSync(process.execPath, [runner, `--api-key=${secret}`], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, WC_ONLY: "through /proc/1" },
      cwd: "/",
      timeout: 60_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout.trim().split("\n").pop()!);
    expect(results.uid).toBe(0);
    expect(results.attacks.map((a: { tool: string }) => a.tool).sort()).toEqual(Object.keys(TOOLS).sort());
    for (const a of results.attacks) {
      // Off: the host's own /proc entry gives the secret away; confined: nothing does.
      expect([a.tool, a.off, a.auto]).toEqual([a.tool, true, false]);
      expect(a.output).not.toContain(secret);
    }
  }, 90_000);
});

describe("sandbox modes and options", () => {
  test('"required" on a kernel without Landlock refuses with SANDBOX_UNAVAILABLE before any effect; "auto" runs open', async () => {
    const { root } = await tempWorkspace();
    const noLandlock = { landlockAbi: null };
    const required = createNodeProcessTool(root, { timeoutMs: 10_000, sandbox: "required", sandboxFeatures: noLandlock });
    const err = await required.execute({ source: "require('fs').writeFileSync('ran', '')" }, ctx()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolError);
    expect(err).toMatchObject({ code: "SANDBOX_UNAVAILABLE", hint: expect.stringMatching(/\w/) });
    expect((err as ToolError).details).toMatchObject({ missing: ["landlock", "landlock-network"], landlockAbi: null });
    // Nothing ran, nothing was written.
    expect(scriptLeftovers(root)).toEqual([]);
    expect(await import("node:fs/promises").then((f) => f.readdir(root))).toEqual([]);
    // Through the registry it is a recoverable error for the model.
    const result = await executeToolCall(new ToolRegistry([required]), call("node_process", { source: "" }), new AbortController().signal);
    expect(result.isError).toBe(true);
    expect(content(result).error.code).toBe("SANDBOX_UNAVAILABLE");

    const auto = createNodeProcessTool(root, { timeoutMs: 10_000, sandboxFeatures: noLandlock });
    const out = await auto.execute({ source: "console.log('ran')" }, ctx());
    expect(out.stdout).toBe("ran\n");
    expect(out.sandbox).toEqual({ landlockAbi: null, filesystem: "open", network: "open", processes: "namespace", nodePermission: true, limits: defaultLimitsReport(), protect: "read-only" });
  });

  test("without Landlock a native addon is refused: the permission model is then the only layer and an addon runs outside it", async () => {
    const { root } = await tempWorkspace();
    const addon = readdirSync(join(fileURLToPath(new URL("..", import.meta.url)), "native")).find((n) => n.endsWith(".node"));
    expect(addon).toBeDefined();
    await writeFile(join(root, "addon.node"), readFileSync(join(fileURLToPath(new URL("../native", import.meta.url)), addon!)));
    const source = `let r; try { require("./addon.node"); r = "LOADED"; } catch (e) { r = e.code; } console.log(r, process.execArgv.includes("--allow-addons"));`;
    const noLandlock = await createNodeProcessTool(root, { timeoutMs: 20_000, sandboxFeatures: { landlockAbi: null } }).execute({ source }, ctx());
    expect(noLandlock.sandbox).toMatchObject({ filesystem: "open", nodePermission: true });
    expect(noLandlock.stdout).toBe("ERR_DLOPEN_DISABLED false\n");
    // Where Landlock confines the child as well, addons stay allowed (and do load).
    if (features.landlockAbi !== null) {
      const confined = await createNodeProcessTool(root, { timeoutMs: 20_000 }).execute({ source }, ctx());
      expect(confined.stdout).toBe("LOADED true\n");
    }
  }, 60_000);

  test('"required" names each missing layer, and runs where all are there', async () => {
    const { root } = await tempWorkspace();
    const missing = async (sandboxFeatures: object, network = false) => {
      const tool = createNodeProcessTool(root, { timeoutMs: 10_000, sandbox: "required", sandboxFeatures, network });
      const r = await tool.execute({ source: "" }, ctx()).catch((e: ToolError) => e);
      return r instanceof ToolError ? (r.details as { missing: string[] }).missing : r.sandbox;
    };
    expect(await missing({ pidNamespace: false })).toEqual(["pid-namespace"]);
    expect(await missing({ landlockAbi: 3 })).toEqual(["landlock-network"]);
    // With the network allowed, ABI 3 is enough.
    expect(await missing({ landlockAbi: 3 }, true)).toMatchObject({ landlockAbi: 3, filesystem: "confined", network: "allowed" });
    expect(await missing({})).toEqual({ ...FULL, landlockAbi: features.landlockAbi });
  });

  test('"off" applies nothing and says so; the description tells the model', async () => {
    const { root } = await tempWorkspace();
    const off = createNodeProcessTool(root, { timeoutMs: 10_000, sandbox: "off" });
    const out = await off.execute({ source: "console.log(JSON.stringify(process.execArgv))" }, ctx());
    expect(out.stdout).toBe("[]\n");
    expect(out.sandbox).toEqual({ landlockAbi: null, filesystem: "open", network: "open", processes: "group", nodePermission: false, limits: defaultLimitsReport("off"), protect: "open" });
    expect(off.description).toContain("without a sandbox");
    expect(createNodeProcessTool(root).description).toContain("the network is blocked");
    expect(createNodeProcessTool(root, { network: true }).description).toContain("the network is allowed");
  });

  test("network: true lets the child connect and reports allowed", async () => {
    const attack = ATTACKS.find((a) => a.name.startsWith("connect to a TCP"))!;
    const r = await runAttack(lib, "node_process", attack, { network: true });
    expect(r.escaped).toBe(true);
    expect(r.output.sandbox).toMatchObject({ network: "allowed", filesystem: "confined", processes: "namespace" });
  });

  test("readPaths and writePaths add grants, checked and resolved at creation", async () => {
    const s = await setting();
    try {
      const read = createNodeProcessTool(s.root, { timeoutMs: 10_000, readPaths: [s.outside] });
      const source = `
        const fs = require("fs"), cp = require("child_process"), dir = process.argv[1];
        const r = (f) => { try { return String(f()); } catch (e) { return e.code || String(e.status); } };
        console.log(JSON.stringify([r(() => fs.readFileSync(dir + "/id_rsa", "utf8")), r(() => cp.execFileSync("cat", [dir + "/id_rsa"], { encoding: "utf8" })),
          r(() => fs.writeFileSync(dir + "/w1", "x")), r(() => cp.execFileSync("sh", ["-c", 'echo x > "$1/w2"', "sh", dir], { stdio: "pipe" }))]));`;
      const [fsRead, catRead, fsWrite, shWrite] = JSON.parse((await read.execute({ source, arguments: [s.outside] }, ctx())).stdout);
      expect([fsRead, catRead]).toEqual([s.canary, s.canary]);
      expect([fsWrite, shWrite]).toEqual(["ERR_ACCESS_DENIED", "2"]);
      const write = createNodeProcessTool(s.root, { timeoutMs: 10_000, writePaths: [join(s.outside, ".", "")] });
      const out = JSON.parse((await write.execute({ source, arguments: [s.outside] }, ctx())).stdout);
      expect(out).toEqual([s.canary, s.canary, "undefined", ""]);
      // Other places stay closed.
      const other = JSON.parse((await write.execute({ source, arguments: [s.parent] }, ctx())).stdout);
      expect(other.slice(2)).toEqual(["ERR_ACCESS_DENIED", "2"]);
    } finally {
      await s.close();
    }
  });

  test("bad sandbox options throw at creation", async () => {
    const { root, parent } = await tempWorkspace();
    expect(() => createNodeProcessTool(root, { sandbox: "on" as never })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { network: "yes" as never })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { readPaths: ["relative/dir"] })).toThrow(/absolute/);
    expect(() => createNodeProcessTool(root, { writePaths: [join(parent, "missing")] })).toThrow(/cannot be granted/);
    expect(() => createNodeProcessTool(root, { readPaths: "/" as never })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { sandboxFeatures: { landlockAbi: -1 } })).toThrow(TypeError);
    await writeFile(join(parent, "f"), "");
    expect(() => createNodeProcessTool(root, { readPaths: [join(parent, "f")] })).not.toThrow();
  });

  test("createCodingTools passes the shared sandbox settings to every tool that starts processes", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.test.mjs"), 'import { test } from "node:test"; test("a", () => {});');
    const requests: Record<string, unknown> = { node_process: { source: "" }, run_command: { argv: ["true"] }, run_tests: { runner: "node", args: ["a.test.mjs"] } };
    const run = async (processes: object) => {
      const reports: Record<string, unknown> = {};
      const tools: AnyTool[] = createCodingTools(root, { processes: { timeoutMs: 10_000, ...processes } });
      for (const tool of tools) {
        if (requests[tool.name]) reports[tool.name] = ((await tool.execute(tool.validate(requests[tool.name]), ctx())) as { sandbox: unknown }).sandbox;
      }
      return reports;
    };
    const off = await run({ sandbox: "off" });
    expect(Object.keys(off).sort()).toEqual(["node_process", "run_command", "run_tests"]);
    for (const report of Object.values(off)) expect(report).toMatchObject({ filesystem: "open", network: "open", processes: "group" });
    for (const report of Object.values(await run({ network: true }))) {
      expect(report).toMatchObject({ filesystem: "confined", network: "allowed", processes: "namespace" });
    }
  });

  test("a timeout's details carry the sandbox report too", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 300 });
    const err = (await tool.execute({ source: "for(;;){}" }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(err.code).toBe("NODE_PROCESS_TIMEOUT");
    expect((err.details as { sandbox: unknown }).sandbox).toEqual({ ...FULL, landlockAbi: features.landlockAbi });
  });
});

describe("a host that dies", () => {
  test("takes the confined processes with it (and without the sandbox, a group's process outlives it)", async () => {
    const { root } = await tempWorkspace();
    const dist = new URL("../dist/index.js", import.meta.url).href;
    for (const [sandbox, survives] of [["off", true], ["auto", false]] as const) {
      const mark = marker();
      // The host starts a long call whose script writes a file when it runs, then exits
      // abruptly without waiting for it.
      const host = `
        const { createNodeProcessTool } = await import(${JSON.stringify(dist)});
        const tool = createNodeProcessTool(${JSON.stringify(root)}, { timeoutMs: 60_000, sandbox: ${JSON.stringify(sandbox)} });
        tool.execute({ source: "require('fs').writeFileSync('running-' + process.argv[1], ''); setInterval(() => {}, 1000)", arguments: [${JSON.stringify(mark)}] }, { signal: new AbortController().signal });
        const { existsSync } = await import("node:fs");
        while (!existsSync(${JSON.stringify(root)} + "/running-" + ${JSON.stringify(mark)})) await new Promise((r) => setTimeout(r, 10));
        process.exit(0);`;
      const r = spawnSync(process.execPath, ["--input-type=module", "-e", host], { encoding: "utf8", timeout: 30_000 });
      expect(r.status, r.stderr).toBe(0);
      const until = Date.now() + 1_000;
      let alive = aliveWith(mark);
      while (alive.length > 0 && !survives && Date.now() < until) {
        await new Promise((res) => setTimeout(res, 20));
        alive = aliveWith(mark);
      }
      expect(alive.length > 0, `sandbox ${sandbox}: ${alive}`).toBe(survives);
      for (const pid of alive) process.kill(pid, "SIGKILL");
    }
  }, 60_000);
});

describe("run_tests: the toolchain is readable, its secrets and caches are not writable", () => {
  test('"required" on a kernel without Landlock refuses before the scratch directory or the runner exist', async () => {
    const { root, parent } = await tempWorkspace();
    const scratchDir = join(parent, "scratch");
    await mkdir(scratchDir);
    await writeFile(join(root, "a.test.mjs"), 'import { test } from "node:test"; import { writeFileSync } from "node:fs"; test("a", () => writeFileSync("ran", ""));');
    const tool = createRunTestsTool(root, { scratchDir, sandbox: "required", sandboxFeatures: { landlockAbi: null } });
    const err = (await tool.execute({ runner: "node", args: ["a.test.mjs"] }, ctx()).catch((e: unknown) => e)) as ToolError;
    expect(err).toBeInstanceOf(ToolError);
    expect(err.code).toBe("SANDBOX_UNAVAILABLE");
    expect(existsSync(join(root, "ran"))).toBe(false);
    expect(readdirSync(scratchDir)).toEqual([]);
    const auto = createRunTestsTool(root, { scratchDir, sandboxFeatures: { landlockAbi: null } });
    const out = await auto.execute({ runner: "node", args: ["a.test.mjs"] }, ctx());
    expect(out.passed).toBe(1);
    expect(out.sandbox).toMatchObject({ landlockAbi: null, filesystem: "open", processes: "namespace", nodePermission: false });
  });

  // A test run by cargo tries the user's registry token and the shared caches of CARGO_HOME (a
  // stand-in with a canary token): without the sandbox it reads the token and plants files that
  // the user's other builds would use; confined it reads only what cargo needs.
  test.skipIf(!HAS_CARGO)("a cargo test cannot read CARGO_HOME's credentials or write into its registry and bin", async () => {
    const { root, parent } = await tempWorkspace();
    const cargoHome = join(parent, "cargo-home");
    await mkdir(join(cargoHome, "registry", "src"), { recursive: true });
    await mkdir(join(cargoHome, "bin"));
    const token = `cio-${Math.random().toString(36).slice(2)}`;
    await writeFile(join(cargoHome, "credentials.toml"), `[registry]\ntoken = "${token}"\n`);
    await writeFile(join(cargoHome, "config.toml"), "# CONFIG-READABLE\n");
    await writeFile(join(root, "Cargo.toml"), '[package]\nname = "reach"\nversion = "0.1.0"\nedition = "2021"\n');
    await mkdir(join(root, "src"));
    await writeFile(
      join(root, "src", "lib.rs"),
      `#[test]
fn reach() {
    let home = std::env::var("CARGO_HOME").unwrap();
    let r = |p: &str| std::fs::read_to_string(format!("{home}/{p}")).unwrap_or_else(|e| format!("ERR {:?}", e.kind()));
    let w = |p: &str| std::fs::write(format!("{home}/{p}"), "poison").map(|_| "WROTE".to_string()).unwrap_or_else(|e| format!("ERR {:?}", e.kind()));
    panic!("REACH creds={} config={} registry={} bin={}", r("credentials.toml").trim(), r("config.toml").trim(), w("registry/src/poisoned.rs"), w("bin/cargo-evil"));
}
`,
    );
    const reach = async (sandbox: "off" | "auto") => {
      const tool = createRunTestsTool(root, { cargoHome, sandbox, timeoutMs: 300_000 });
      const out = await tool.execute({ runner: "cargo" }, ctx());
      expect(out.failed, out.report).toBe(1);
      return out.failures[0].output;
    };
    const open = await reach("off");
    expect(open).toContain(token);
    expect(open).toContain("registry=WROTE bin=WROTE");
    expect(existsSync(join(cargoHome, "registry", "src", "poisoned.rs"))).toBe(true);
    await import("node:fs/promises").then((f) => Promise.all([f.rm(join(cargoHome, "registry", "src", "poisoned.rs")), f.rm(join(cargoHome, "bin", "cargo-evil"))]));
    const confined = await reach("auto");
    expect(confined).not.toContain(token);
    expect(confined).toContain("creds=ERR PermissionDenied config=# CONFIG-READABLE registry=ERR PermissionDenied bin=ERR PermissionDenied");
    expect(readdirSync(join(cargoHome, "registry", "src"))).toEqual([]);
    expect(readdirSync(join(cargoHome, "bin"))).toEqual([]);
  }, 400_000);
});
