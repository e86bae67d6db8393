// The package's entry points: the main entry loads none of the optional peer dependencies, and
// each subpath export resolves to built JavaScript with its types.
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
    expect(external("dist/adapters/mcp.js").every((s) => s.startsWith("@modelcontextprotocol/sdk/"))).toBe(true);
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

  test("the workcell command is the package's bin and is executable", () => {
    expect(pkg.bin.workcell).toBe("./bin/workcell.mjs");
    const bin = readFileSync(join(ROOT, "bin/workcell.mjs"), "utf8");
    expect(bin.startsWith("#!/usr/bin/env node\n")).toBe(true);
    expect(pkg.files).toContain("bin");
    expect(pkg.scripts.demo).toBe("node bin/workcell.mjs demo");
  });
});
