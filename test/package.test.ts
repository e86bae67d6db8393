// The package's entry points: the main entry loads none of the optional peer dependencies, and
// each subpath export resolves to built JavaScript with its types.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { isBuiltin } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));

/** Every module specifier reachable from `file` through relative imports, static or dynamic. */
function reachableSpecifiers(file: string, seen = new Set<string>(), found = new Set<string>()): Set<string> {
  if (seen.has(file)) return found;
  seen.add(file);
  const source = readFileSync(file, "utf8");
  const specifiers = [
    ...source.matchAll(/\b(?:import|export)\s[^"';]*?from\s*["']([^"']+)["']/g),
    ...source.matchAll(/\bimport\s*["']([^"']+)["']/g),
    ...source.matchAll(/\bimport\(\s*["']([^"']+)["']\s*\)/g),
    // The adapters load their optional peer dependency with requirePeer (ts/adapters/peer.ts).
    ...source.matchAll(/\brequirePeer\(\s*["']([^"']+)["']/g),
  ].map((m) => m[1]!);
  for (const s of specifiers) {
    if (s.startsWith(".")) reachableSpecifiers(resolve(dirname(file), s), seen, found);
    else found.add(s);
  }
  return found;
}

describe("package entry points", () => {
  test("the main entry imports only Node built-ins (no optional dependency, not even lazily)", () => {
    const bare = [...reachableSpecifiers(join(ROOT, "dist/index.js"))];
    expect(bare.length).toBeGreaterThan(0);
    expect(bare.filter((s) => !isBuiltin(s))).toEqual([]);
  });

  test("the subpaths pull in only their own SDK", () => {
    const external = (entry: string) => [...reachableSpecifiers(join(ROOT, entry))].filter((s) => !isBuiltin(s));
    expect(external("dist/adapters/ai.js")).toEqual(["ai"]);
    expect(external("dist/adapters/mcp-entry.js").every((s) => s.startsWith("@modelcontextprotocol/sdk/"))).toBe(true);
    expect(external("dist/adapters/pi.js")).toEqual([]);
  });

  test("each export has built JavaScript and types; the optional SDKs are optional peers", async () => {
    for (const [subpath, target] of Object.entries(pkg.exports as Record<string, any>)) {
      if (subpath === "./package.json") continue;
      expect(existsSync(join(ROOT, target.import)), target.import).toBe(true);
      expect(existsSync(join(ROOT, target.types)), target.types).toBe(true);
      expect(Object.keys(target)[0]).toBe("types");
    }
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining([".", "./ai", "./mcp", "./pi"]));
    for (const dep of ["ai", "@modelcontextprotocol/sdk"]) {
      expect(pkg.peerDependencies[dep]).toBeDefined();
      expect(pkg.peerDependenciesMeta[dep].optional).toBe(true);
      expect(pkg.dependencies?.[dep]).toBeUndefined();
    }
    // Self-references resolve through "exports", as they do for a user.
    expect(typeof (await import("workcell/ai")).toAISDKTools).toBe("function");
    expect(typeof (await import("workcell/mcp")).createMcpServer).toBe("function");
    expect(typeof (await import("workcell/pi")).toPiTools).toBe("function");
  });

  test("every exports entry has a default condition, so require() finds it", () => {
    for (const [subpath, target] of Object.entries(pkg.exports as Record<string, any>)) {
      if (typeof target === "string") continue;
      expect(target.default, subpath).toBe(target.import);
      expect(Object.keys(target).at(-1), `${subpath}: default must come last`).toBe("default");
    }
    // Node 20.19+ loads ES modules with require() without a flag (older 20.x and 22.0-22.11 need
    // --experimental-require-module); this Node is one of those.
    const entries = Object.keys(pkg.exports).map((s) => (s === "." ? "workcell" : `workcell/${s.slice(2)}`));
    const r = spawnSync(
      process.execPath,
      ["-e", `for (const e of ${JSON.stringify(entries)}) { const m = require(e); if (Object.keys(m).length === 0) throw new Error(e + " is empty"); } console.log("ok")`],
      { cwd: ROOT, encoding: "utf8" },
    );
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe("ok");
  });

  test("an unsupported platform gets our error: the platform, the prebuilt list, how to build from source", () => {
    // The loader sees riscv64: neither native/workcell.linux-riscv64-gnu.node nor the package
    // workcell-linux-riscv64-gnu exists.
    const fake = 'data:text/javascript,Object.defineProperty(process, "arch", { value: "riscv64" })';
    const prebuilt = "Prebuilt binaries exist for: linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64.";
    for (const [kind, code] of [
      ["import", 'import("workcell").then(() => console.log("loaded"), (e) => console.log(JSON.stringify({ code: e.code, message: e.message, cause: String(e.cause?.message) })))'],
      ["require", 'try { require("workcell"); console.log("loaded") } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message, cause: String(e.cause?.message) })) }'],
    ] as const) {
      const r = spawnSync(process.execPath, ["--import", fake, "-e", code], { cwd: ROOT, encoding: "utf8" });
      const out = JSON.parse(r.stdout.trim()) as { code: string; message: string; cause: string };
      expect(out.code, kind).toBe("WORKCELL_ADDON_UNAVAILABLE");
      expect(out.message).toContain("no native addon for this platform (linux-riscv64-");
      expect(out.message).toContain(prebuilt);
      expect(out.message).toMatch(/To build from source \(a Rust toolchain/);
      expect(out.message).not.toContain("npm has a bug");
      // napi's own error stays reachable as the cause.
      expect(out.cause).toContain("Cannot find native binding");
    }
    expect(pkg.napi.targets).toEqual([
      "x86_64-unknown-linux-gnu",
      "aarch64-unknown-linux-gnu",
      "x86_64-apple-darwin",
      "aarch64-apple-darwin",
    ]);
  });

  test("one per-platform package per napi target, in napi-rs's layout, named as the loader looks for them", async () => {
    const { napiPlatformName } = await import("../dist/platform.js");
    const loader = readFileSync(join(ROOT, "native/binding.cjs"), "utf8");
    for (const target of pkg.napi.targets as string[]) {
      const platform = napiPlatformName(target);
      const sub = JSON.parse(readFileSync(join(ROOT, "npm", platform, "package.json"), "utf8"));
      expect(sub.name).toBe(`${pkg.name}-${platform}`);
      expect(sub.version).toBe(pkg.version);
      expect(sub.main).toBe(`${pkg.napi.binaryName}.${platform}.node`);
      expect(sub.files).toEqual([sub.main]);
      expect(sub.os).toEqual([platform.split("-")[0]]);
      expect(loader).toContain(`require('${sub.name}')`);
      expect(loader).toContain(`require('./${sub.main}')`);
    }
    // Nothing committed names them as dependencies: napi pre-publish adds them when publishing.
    expect(pkg.optionalDependencies).toBeUndefined();
    expect(pkg.files.some((f: string) => f.startsWith("npm"))).toBe(false);
  });

  test("a source checkout builds on npm install; the packed package has no install-time script", () => {
    expect(pkg.scripts.prepare).toBe("node scripts/build-from-source.mjs");
    expect(pkg.scripts.prepack).toBe("node scripts/pack-manifest.mjs strip");
    expect(pkg.scripts.postpack).toBe("node scripts/pack-manifest.mjs restore");
    for (const s of ["preinstall", "install", "postinstall"]) expect(pkg.scripts[s], s).toBeUndefined();
    // Without cargo, prepare says what it needs instead of failing somewhere inside napi.
    const r = spawnSync(process.execPath, [join(ROOT, "scripts/build-from-source.mjs")], { env: { PATH: "/nonexistent" }, encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^workcell: cannot build from source: cargo is not on PATH\..*rustup\.rs/);
  });

  test("the workcell command is the package's bin and is executable", () => {
    expect(pkg.bin.workcell).toBe("./bin/workcell.mjs");
    const bin = readFileSync(join(ROOT, "bin/workcell.mjs"), "utf8");
    expect(bin.startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(pkg.files).toContain("bin");
    expect(pkg.scripts.demo).toBe("node bin/workcell.mjs demo");
  });
});
