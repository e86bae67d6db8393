// An adapter whose optional peer dependency is not installed says which package to install,
// instead of the loader's bare ERR_MODULE_NOT_FOUND: the built package is copied into a temp
// project that has none of the SDKs, and each entry point is loaded from there.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const REPO = fileURLToPath(new URL("..", import.meta.url));
let project = "";

beforeAll(() => {
  project = realpathSync(mkdtempSync(join(tmpdir(), "workcell-peers-")));
  const pkg = join(project, "node_modules", "workcell");
  mkdirSync(join(pkg, "native"), { recursive: true });
  for (const f of ["package.json", "index.d.ts", "dist", "bin"]) cpSync(join(REPO, f), join(pkg, f), { recursive: true });
  cpSync(join(REPO, "native"), join(pkg, "native"), { recursive: true, filter: (src) => !src.includes(`${join("native", "node_modules")}`) });
});

afterAll(() => {
  if (project) rmSync(project, { recursive: true, force: true });
});

function load(script: string) {
  const r = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: project, encoding: "utf8", timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe("an adapter without its optional peer dependency", () => {
  test("import('workcell/ai') without ai says to install ai", () => {
    const r = load(`await import("workcell/ai").then(() => console.log("loaded"), (e) => console.log(e.code + ": " + e.message));`);
    expect(r.stderr).toBe("");
    expect(r.stdout.trim()).toBe(
      "WORKCELL_PEER_MISSING: workcell: workcell/ai needs ai (the Vercel AI SDK, 6 or 7), an optional peer dependency: install ai (npm install ai)",
    );
  });

  test("import('workcell/mcp') without the MCP SDK says to install it, and so does `workcell mcp DIR`", () => {
    const r = load(`await import("workcell/mcp").then(() => console.log("loaded"), (e) => console.log(e.code + ": " + e.message));`);
    expect(r.stdout.trim()).toBe(
      "WORKCELL_PEER_MISSING: workcell: workcell/mcp needs @modelcontextprotocol/sdk, an optional peer dependency: install @modelcontextprotocol/sdk (npm install @modelcontextprotocol/sdk)",
    );
    const cli = spawnSync(process.execPath, [join(project, "node_modules", "workcell", "bin", "workcell.mjs"), "mcp", project], {
      cwd: project,
      encoding: "utf8",
      input: "",
      timeout: 60_000,
    });
    expect(cli.status).toBe(1);
    expect(cli.stderr).toContain("npm install @modelcontextprotocol/sdk");
  });

  test("require('workcell/ai') says the same", () => {
    const r = spawnSync(process.execPath, ["-e", `try { require("workcell/ai"); console.log("loaded") } catch (e) { console.log(e.code + ": " + e.message) }`], {
      cwd: project,
      encoding: "utf8",
      timeout: 60_000,
    });
    expect(r.stdout.trim()).toMatch(/^WORKCELL_PEER_MISSING: .*install ai \(npm install ai\)$/);
  });

  test("with ai but without the provider packages, toAISDKProviderTools says which to install", () => {
    symlinkSync(join(REPO, "node_modules", "ai"), join(project, "node_modules", "ai"));
    try {
      const r = load(`
        const { toAISDKProviderTools } = await import("workcell/ai");
        const { createCodingTools } = await import("workcell");
        try { toAISDKProviderTools(createCodingTools(process.cwd())); console.log("built") } catch (e) { console.log(e.code + ": " + e.message) }`);
      expect(r.stdout.trim()).toMatch(/^WORKCELL_PEER_MISSING: .*install @ai-sdk\/(anthropic|openai) \(npm install @ai-sdk\/(anthropic|openai)\)$/);
    } finally {
      rmSync(join(project, "node_modules", "ai"));
    }
  });
});
