// network: { allow: [...] }: the processes get a network namespace with loopback only, and
// workcell's filtering proxy is their only way out. Every destination is a listener on
// 127.0.0.1 that the test starts, or the package registry this machine's npm is configured
// with (read at run time). Each attack also runs with the filter off (`network: true`), where
// it must get through, so the test can fail.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import * as lib from "../dist/index.js";
import { binding } from "../dist/native.js";
import { createCodingTools, createNodeProcessTool, createRunCommandTool, createRunTestsTool, sandboxSupport, ToolError } from "../dist/index.js";
import { child, origin, scenarios } from "./network-scenarios.mjs";
import { ctx } from "./helpers.js";

const features = sandboxSupport();
const NAMESPACES = features.pidNamespace && features.userNamespace;
let root: string;
beforeAll(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "workcell-net-test-")));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

function expectFiltered(r: any) {
  expect(r.result.sandbox).toMatchObject({ network: "filtered" });
}

function checkScenarios(out: any) {
  // An allowed host is reached through the proxy, by plain HTTP and through a CONNECT tunnel.
  expect(out.plain.saw).toMatchObject({ status: 200, body: "hello /plain" });
  expect(out.tunnel.saw.status).toBe(200);
  expect(out.tunnel.saw.body).toMatch(/^HTTP\/1\.1 200 OK[\s\S]*hello \/tunnel$/);
  expect(out.seenA).toEqual(expect.arrayContaining(["GET /plain", "GET /tunnel"]));
  expectFiltered(out.plain);
  expect(out.plain.result.network).toEqual({ allowed: 1, refused: 0 });
  expect(out.tunnel.result.network).toEqual({ allowed: 1, refused: 0 });
  // The child's environment points every proxy variable at the namespace's proxy.
  const proxy = out.plain.saw.env.HTTP_PROXY;
  expect(proxy).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(out.plain.saw.env).toEqual({ HTTP_PROXY: proxy, HTTPS_PROXY: proxy, ALL_PROXY: proxy, https_proxy: proxy, NO_PROXY: "" });
  // An unlisted port is refused with a 403 that names the host and the rule; nothing reaches it.
  for (const r of [out.unlisted, out.unlistedTunnel]) {
    expect(r.saw.status).toBe(403);
    expect(r.saw.body).toMatch(/:\d+ refused: no entry of the allowlist allows this host and port \(allowed: localhost:\d+\)/);
    expect(r.result.network).toEqual({ allowed: 0, refused: 1 });
  }
  expect(out.seenB).toEqual([]);
  // ... which the open network lets through: the filter is what refused.
  expect(out.unlistedOff.saw).toMatchObject({ status: 200, body: "hello /secret" });
  expect(out.unlistedOff.result.network).toBeUndefined();
  // A direct TCP connection that ignores the proxy fails (Landlock refuses it, and without
  // Landlock the namespace's loopback has nothing there); with the network open it connects.
  expect(out.bypass.saw).toMatchObject({ connected: false });
  expect(out.bypassNoLandlock.saw).toMatchObject({ connected: false, error: "ECONNREFUSED" });
  expect(out.bypassNoLandlock.result.sandbox).toMatchObject({ network: "filtered", landlockAbi: null });
  expect(out.bypassOff.saw).toMatchObject({ connected: true });
  // A listed name that resolves to a loopback address is refused unless the address is listed.
  if (out.name) {
    expect(out.rebind.saw.status).toBe(403);
    expect(out.rebind.saw.body).toContain(`${out.name}:`);
    expect(out.rebind.saw.body).toMatch(/refused: it resolves to 127\.\d+\.\d+\.\d+, a loopback address, which no entry of the allowlist lists/);
    expect(out.rebindListed.saw.status).toBe(200);
  } else {
    console.warn("skipped the loopback-name check: no name but localhost resolves to a loopback address here");
  }
}

describe.runIf(NAMESPACES)("the filtering proxy", () => {
  test("allowed hosts are reached, unlisted hosts, loopback names and direct connections refused (each with the filter off too)", async () => {
    checkScenarios(await scenarios(lib, root));
  });

  test("the proxy's own headers never reach the destination, and a keep-alive request still ends", async () => {
    const a = await origin();
    try {
      const r = await child(lib, root, { allow: [`localhost:${a.port}`] }, "get", `http://127.0.0.1:${a.port}/h`);
      expect(r.saw).toMatchObject({ status: 200, body: "hello /h" });
    } finally {
      await a.close();
    }
  });

  test("run_command and run_tests report the filter and count connections too", async () => {
    const rc = createRunCommandTool(root, { network: { allow: ["localhost:1"] } });
    const r = await rc.execute({ argv: ["true"] }, ctx());
    expect(r.sandbox).toMatchObject({ network: "filtered" });
    expect(r.network).toEqual({ allowed: 0, refused: 0 });
    const tools = createCodingTools(root, { processes: { network: { allow: ["localhost:1"] } } });
    const np = tools.find((t) => t.name === "node_process")!;
    const out: any = await np.execute({ source: "console.log(process.env.HTTPS_PROXY)" } as any, ctx());
    expect(out.sandbox).toMatchObject({ network: "filtered" });
    expect(out.stdout).toMatch(/^http:\/\/127\.0\.0\.1:\d+\n$/);
  });
});

describe("where no network namespace can be made", () => {
  test("an allowlist fails with SANDBOX_UNAVAILABLE in auto mode too, never an open network", async () => {
    for (const sandbox of ["auto", "required"] as const) {
      const tool = createNodeProcessTool(root, { sandbox, network: { allow: ["localhost:1"] }, sandboxFeatures: { pidNamespace: false } });
      const err = await tool.execute({ source: "console.log('ran')" }, ctx()).catch((e) => e);
      expect(err).toBeInstanceOf(ToolError);
      expect(err.code).toBe("SANDBOX_UNAVAILABLE");
      expect(err.details.missing).toEqual(["network-namespace"]);
      expect(err.hint).toBeTruthy();
    }
    const rc = createRunCommandTool(root, { network: { allow: ["npm"] }, sandboxFeatures: { userNamespace: false } });
    expect((await rc.execute({ argv: ["true"] }, ctx()).catch((e) => e)).code).toBe("SANDBOX_UNAVAILABLE");
  });
});

describe("the option is checked at creation", () => {
  test("bad entries, shapes and an allowlist without the sandbox are TypeErrors", () => {
    const bad: unknown[] = [
      { allow: ["http://registry.example.org"] },
      { allow: ["*.com"] },
      { allow: ["host:99999"] },
      { allow: ["exa mple.org"] },
      { allow: [""] },
      { allow: "npm" },
      { allow: [1] },
      { allow: ["npm"], extra: true },
      [],
      "npm",
    ];
    for (const network of bad) {
      for (const make of [createNodeProcessTool, createRunCommandTool, createRunTestsTool]) {
        expect(() => make(root, { network } as any), JSON.stringify(network)).toThrow(TypeError);
      }
      expect(() => createCodingTools(root, { processes: { network } as any }), JSON.stringify(network)).toThrow(TypeError);
    }
    expect(() => createNodeProcessTool(root, { network: { allow: ["*.com"] } })).toThrow(/network\.allow entry "\*\.com"/);
    expect(() => createNodeProcessTool(root, { sandbox: "off", network: { allow: ["npm"] } })).toThrow(TypeError);
    for (const ok of [["npm", "crates", "pypi", "github"], ["registry.example.org", "*.example.com", "host.example:8080", "localhost:3000", "10.0.0.5:22", "[fd00::1]:443"], []]) {
      expect(() => createNodeProcessTool(root, { network: { allow: ok } })).not.toThrow();
    }
  });
});

const AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];

describe.runIf(NAMESPACES)("an unprivileged host", () => {
  test("the same scenarios hold when the host runs as nobody", () => {
    const repo = fileURLToPath(new URL("..", import.meta.url));
    const dir = mkdtempSync(join(tmpdir(), "workcell-nobody-net-"));
    try {
      chmodSync(dir, 0o755);
      cpSync(join(repo, "dist"), join(dir, "dist"), { recursive: true });
      mkdirSync(join(dir, "native"));
      for (const f of readdirSync(join(repo, "native"))) {
        if (f.endsWith(".cjs") || f.endsWith(".node")) cpSync(join(repo, "native", f), join(dir, "native", f));
      }
      cpSync(join(repo, "package.json"), join(dir, "package.json"));
      mkdirSync(join(dir, "test"));
      for (const f of ["network-runner.mjs", "network-scenarios.mjs"]) cpSync(join(repo, "test", f), join(dir, "test", f));
      const runner = join(dir, "test", "network-runner.mjs");
      if (spawnSync("setpriv", [...AS_NOBODY, "test", "-r", runner], { cwd: "/" }).status !== 0) {
        console.warn(`skipped the unprivileged run: nobody cannot read ${runner}`);
        return;
      }
      const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, runner], { encoding: "utf8", env: { PATH: process.env.PATH }, cwd: "/", timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
      expect(out.uid).toBe(65534);
      checkScenarios(out);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});

/** The registry this machine's npm uses, and whether the host itself reaches it. */
function registry(): { host: string } | { reason: string } {
  const got = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8", timeout: 20_000 });
  if (got.status !== 0) return { reason: "npm config get registry failed" };
  const host = new URL(got.stdout.trim()).hostname;
  const view = spawnSync("npm", ["view", "semver", "version"], { encoding: "utf8", timeout: 60_000 });
  if (view.status !== 0) return { reason: `the registry ${host} is not reachable from the host itself` };
  return { host };
}

describe.runIf(NAMESPACES)("npm through the npm preset", () => {
  test("npm view prints a version inside the sandbox with network: { allow: [\"npm\"] }", async (t) => {
    const reg = registry();
    if ("reason" in reg) {
      console.warn(`skipped npm view in the sandbox: ${reg.reason}`);
      t.skip();
      return;
    }
    // The preset's hosts, from the package itself; the configured registry is added when it is
    // not one of them (a mirror).
    const preset: string[] = binding.sandboxNetworkAllow(["npm"]);
    const allow = preset.some((e) => e.endsWith(`(${reg.host})`)) ? ["npm"] : ["npm", reg.host];
    const tool = createRunCommandTool(root, { network: { allow }, timeoutMs: 90_000 });
    const r = await tool.execute({ argv: ["npm", "view", "semver", "version"] }, ctx());
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output.trim()).toMatch(/^\d+\.\d+\.\d+$/m);
    expect(r.sandbox).toMatchObject({ network: "filtered" });
    expect(r.network!.allowed).toBeGreaterThanOrEqual(1);
    // The same command with the network blocked cannot reach the registry.
    const blocked = await createRunCommandTool(root, { timeoutMs: 90_000 }).execute({ argv: ["npm", "view", "semver", "version", "--fetch-retries=0"] }, ctx());
    expect(blocked.exitCode).not.toBe(0);
  }, 200_000);
});
