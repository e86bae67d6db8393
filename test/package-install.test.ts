// The package as a user gets it: `npm pack`, then the tarball installed into a fresh project
// with no cargo on PATH. From there: a tool runs through `import` and through `require` (every
// entry point), the project type-checks under module NodeNext and under Bundler with the tsc in
// its node_modules, a small Vitest checkpoint suite passes, and a missing addon is our error.
//
// Kept as cheap as it can be: the tarball carries the addon already built for this suite
// (packing a copy of the built files, which builds nothing), the install is `--offline` (workcell has no
// dependencies), and the tools the project uses (typescript, vitest, the SDKs of the adapters)
// are links to this repository's own node_modules rather than a second download.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join, posix } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const REPO = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));

/** PATH without any directory that has cargo in it (a user without a Rust toolchain). */
const PATH_WITHOUT_CARGO = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((d) => d !== "" && !existsSync(join(d, "cargo")))
  .join(delimiter);

/** A clean environment: no npm_* or VITEST* variables of the run that started this test. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: PATH_WITHOUT_CARGO, HOME: process.env.HOME, LANG: "C.UTF-8", ...extra };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return env;
}

function run(cmd: string, args: string[], opts: SpawnSyncOptions = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", env: userEnv(), maxBuffer: 64 * 1024 * 1024, timeout: 240_000, ...opts });
  return { status: r.status, stdout: String(r.stdout ?? ""), stderr: String(r.stderr ?? ""), error: r.error };
}

let dir = "";
let project = "";
let tarball = "";
let packed: { path: string }[] = [];
let installLog = "";

const ENTRIES = Object.keys(pkg.exports as object)
  .filter((s) => s !== "./package.json")
  .map((s) => (s === "." ? "workcell" : `workcell/${s.slice(2)}`));

/**
 * The files `npm pack` takes (package.json's `files`, package.json, the pack script), copied to
 * `to`: packing the copy leaves this checkout's package.json alone while other test files read it.
 */
function copyPackable(to: string) {
  for (const entry of [...(pkg.files as string[]), "package.json", "scripts"]) {
    const glob = entry.match(/^(.*)\/\*(\.[\w.]+)$/);
    if (glob) {
      mkdirSync(join(to, glob[1]!), { recursive: true });
      for (const f of readdirSync(join(REPO, glob[1]!)).filter((f) => f.endsWith(glob[2]!))) {
        cpSync(join(REPO, glob[1]!, f), join(to, glob[1]!, f));
      }
    } else {
      cpSync(join(REPO, entry), join(to, entry), { recursive: true });
    }
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "workcell-install-"));
  const source = join(dir, "source");
  copyPackable(source);
  const pack = run("npm", ["pack", "--json", "--pack-destination", dir], { cwd: source });
  expect(pack.status, pack.stderr).toBe(0);
  const info = JSON.parse(pack.stdout.slice(pack.stdout.indexOf("["))) as { filename: string; files: { path: string }[] }[];
  // Packing put the source's package.json back as it was.
  expect(JSON.parse(readFileSync(join(source, "package.json"), "utf8"))).toEqual(pkg);
  expect(existsSync(join(source, "package.json.before-pack"))).toBe(false);
  tarball = join(dir, info[0]!.filename);
  packed = info[0]!.files;

  project = join(dir, "consumer");
  mkdirSync(join(project, "src"), { recursive: true });
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "workcell-consumer", private: true, type: "module" }, null, 2));
  const install = run("npm", ["install", "--offline", "--no-audit", "--no-fund", tarball], { cwd: project });
  installLog = install.stdout + install.stderr;
  expect(install.status, installLog).toBe(0);
  // What a project would install beside workcell, linked from this repository.
  for (const name of ["typescript", "vitest", "@types/node", "ai", "@modelcontextprotocol/sdk"]) {
    mkdirSync(join(project, "node_modules", name, ".."), { recursive: true });
    symlinkSync(join(REPO, "node_modules", name), join(project, "node_modules", name));
  }
}, 300_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A tool call run by a script of the consumer project (`.mjs` or `.cjs`). */
const READ_SCRIPT = (load: string) => `${load}
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "workcell-consumer-ws-"));
fs.writeFileSync(path.join(root, "hello.txt"), "hello from the workspace\\n");
const registry = new workcell.ToolRegistry([workcell.createReadTool(root)]);
workcell
  .executeToolCall(registry, { type: "toolCall", id: "1", name: "read_file", arguments: { path: "hello.txt" } }, new AbortController().signal)
  .then((r) => { fs.rmSync(root, { recursive: true, force: true }); console.log(JSON.stringify(r)); });
`;

describe("the packed package, installed into a fresh project without cargo", { timeout: 180_000 }, () => {
  test("the tarball has the build, the examples and the loader, and names no unpublished package", () => {
    const files = packed.map((f) => f.path);
    for (const f of ["dist/index.js", "native/binding.cjs", "native/binding.d.ts", "index.d.ts", "README.md", "bin/workcell.mjs", "examples/basic.mjs"]) {
      expect(files, f).toContain(f);
    }
    expect(files.some((f) => /^native\/workcell\.[\w-]+\.node$/.test(f))).toBe(true);
    // No sources, tests or per-platform package folders.
    expect(files.filter((f) => /^(src|crates|test|npm|ts|scripts)\//.test(f))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "workcell", "package.json"), "utf8"));
    // Nothing runs at install time, so npm has no install script to warn about.
    for (const s of ["preinstall", "install", "postinstall", "prepare"]) expect(manifest.scripts?.[s], s).toBeUndefined();
    expect(installLog).not.toMatch(/install-scripts|allowScripts|prepare/);
    // The per-platform packages are added at publish time only (napi pre-publish).
    expect(manifest.optionalDependencies).toBeUndefined();
    expect(manifest.dependencies).toBeUndefined();
  });

  test("the published manifest has no scripts or devDependencies, and no invented address", () => {
    const manifest = JSON.parse(readFileSync(join(project, "node_modules", "workcell", "package.json"), "utf8"));
    expect(manifest.scripts).toBeUndefined();
    expect(manifest.devDependencies).toBeUndefined();
    // The project has no public address yet: none is made up (the docs ship in the package).
    for (const key of ["repository", "homepage", "bugs"]) expect(manifest[key], key).toBeUndefined();
    expect(manifest.keywords).toEqual(expect.arrayContaining(["mcp", "sandbox", "ai-sdk"]));
    // What the package needs at run time stays.
    for (const key of ["exports", "bin", "peerDependencies", "peerDependenciesMeta", "engines", "typesVersions"]) expect(manifest[key], key).toBeDefined();
  });

  test("the docs ship with the package, and every relative link of its README and docs resolves inside it", () => {
    const installed = join(project, "node_modules", "workcell");
    const files = new Set(packed.map((f) => f.path));
    const pages = [...files].filter((f) => f === "README.md" || /^docs\/[^/]+\.md$/.test(f));
    expect(pages).toEqual(expect.arrayContaining(["README.md", "docs/README.md", "docs/security.md", "docs/cli.md"]));
    const broken: string[] = [];
    for (const page of pages) {
      const prose = readFileSync(join(installed, page), "utf8").replace(/^```[\s\S]*?^```/gm, "").replace(/`[^`\n]*`/g, "``");
      for (const [, link] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link!) || link!.startsWith("#")) continue;
        const target = posix.normalize(posix.join(posix.dirname(page), link!.split("#")[0]!));
        if (!files.has(target) && ![...files].some((f) => f.startsWith(`${target.replace(/\/$/, "")}/`))) broken.push(`${page}: ${link}`);
      }
    }
    expect(broken).toEqual([]);
  });

  test("the README's quick start, copied into the fresh project, runs first time", () => {
    const readme = readFileSync(join(project, "node_modules", "workcell", "README.md"), "utf8");
    const start = readme.indexOf("## Quick start");
    const block = /```js\n([\s\S]*?)```/.exec(readme.slice(start))![1]!;
    writeFileSync(join(project, "quickstart.mjs"), block);
    const tmp = mkdtempSync(join(dir, "quickstart-tmp-"));
    const r = run(process.execPath, ["quickstart.mjs"], { cwd: project, env: userEnv({ TMPDIR: tmp }) });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('"content":"hello\\n"');
    expect(r.stdout).toContain('"code":"TOOL_ARGUMENTS_INVALID"');
  });

  test("`npx workcell mcp DIR` serves DIR from the installed package", async () => {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
    const ws = mkdtempSync(join(dir, "served-"));
    writeFileSync(join(ws, "a.txt"), "served\n");
    const transport = new StdioClientTransport({
      command: join(project, "node_modules", ".bin", "workcell"),
      args: ["mcp", ws],
      cwd: project,
      env: userEnv() as Record<string, string>,
      stderr: "pipe",
    });
    const client = new Client({ name: "package-install", version: "1.0.0" });
    await client.connect(transport);
    try {
      const r = (await client.callTool({ name: "read_file", arguments: { path: "a.txt" } })) as { content: { text: string }[] };
      expect(JSON.parse(r.content[0]!.text).content).toBe("served\n");
    } finally {
      await client.close();
    }
  });

  test("node10 resolution (moduleResolution node) finds the subpath exports' types through typesVersions", () => {
    writeFileSync(
      join(project, "src", "node10.ts"),
      `import { createCodingTools } from "workcell";
import { toAISDKTools } from "workcell/ai";
import { createMcpServer } from "workcell/mcp";
import { toPiTools } from "workcell/pi";
import { textEditor } from "workcell/anthropic";
import { applyPatch } from "workcell/openai";
export const all = [createCodingTools, toAISDKTools, createMcpServer, toPiTools, textEditor, applyPatch];
`,
    );
    const compilerOptions = { strict: true, noEmit: true, target: "ES2022", types: ["node"], skipLibCheck: true, module: "CommonJS", moduleResolution: "node10" };
    writeFileSync(join(project, "tsconfig.node10.json"), JSON.stringify({ compilerOptions, files: ["src/node10.ts"] }, null, 2));
    const tsc = run(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", "tsconfig.node10.json"], { cwd: project });
    expect(tsc.stdout + tsc.stderr).toBe("");
    expect(tsc.status).toBe(0);
  });

  test("no cargo on PATH here", () => {
    expect(run("sh", ["-c", "command -v cargo"]).status).not.toBe(0);
  });

  test("a tool runs through import", () => {
    writeFileSync(join(project, "read.mjs"), READ_SCRIPT('import { createRequire } from "node:module";\nimport * as workcell from "workcell";\nconst require = createRequire(import.meta.url);'));
    const r = run(process.execPath, ["read.mjs"], { cwd: project });
    expect(r.stderr).toBe("");
    const result = JSON.parse(r.stdout);
    expect(result.isError).toBe(false);
    expect(JSON.parse(result.content)).toMatchObject({ path: "hello.txt", content: "hello from the workspace\n" });
  });

  test("a tool runs through require, and every entry point loads from a .cjs file", () => {
    writeFileSync(join(project, "read.cjs"), READ_SCRIPT('const workcell = require("workcell");'));
    const r = run(process.execPath, ["read.cjs"], { cwd: project });
    expect(r.stderr).toBe("");
    expect(JSON.parse(JSON.parse(r.stdout).content)).toMatchObject({ path: "hello.txt" });

    writeFileSync(
      join(project, "entries.cjs"),
      `for (const e of ${JSON.stringify(ENTRIES)}) console.log(e, Object.keys(require(e)).length);\n`,
    );
    const entries = run(process.execPath, ["entries.cjs"], { cwd: project });
    expect(entries.stderr).toBe("");
    const lines = entries.stdout.trim().split("\n");
    expect(lines.map((l) => l.split(" ")[0])).toEqual(ENTRIES);
    for (const l of lines) expect(Number(l.split(" ")[1]), l).toBeGreaterThan(0);
  });

  test("the examples ship with the package and run from it", () => {
    const r = run(process.execPath, [join(project, "node_modules", "workcell", "examples", "basic.mjs")], { cwd: project });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain("read_file");
  });

  test("the project type-checks under module NodeNext and under Bundler", () => {
    writeFileSync(
      join(project, "src", "agent.ts"),
      `import { ToolRegistry, ToolError, createCodingTools, executeToolCall, type ToolResult } from "workcell";
import { toPiTools } from "workcell/pi";
import { toAISDKTools } from "workcell/ai";
import { createMcpServer } from "workcell/mcp";

export async function step(root: string, signal: AbortSignal): Promise<ToolResult> {
  const tools = createCodingTools(root);
  const registry = new ToolRegistry(tools);
  const defs: { name: string; description: string }[] = registry.definitions();
  void defs;
  void toPiTools(tools);
  void toAISDKTools(tools);
  void createMcpServer;
  const result = await executeToolCall(registry, { type: "toolCall", id: "1", name: "read_file", arguments: { path: "a.txt" } }, signal);
  const isError: boolean = result.isError;
  void isError;
  return result;
}

export function codeOf(e: unknown): string | undefined {
  return e instanceof ToolError ? e.code : undefined;
}
`,
    );
    writeFileSync(
      join(project, "src", "legacy.cts"),
      `import workcell = require("workcell");
export const registry = new workcell.ToolRegistry(workcell.createCodingTools("/tmp"));
`,
    );
    // skipLibCheck as `tsc --init` writes it (the ai package's own declarations need
    // @types/json-schema); workcell's types are still checked wherever the project uses them.
    const base = { strict: true, noEmit: true, target: "ES2022", types: ["node"], skipLibCheck: true };
    const configs = {
      nodenext: { ...base, module: "NodeNext", moduleResolution: "NodeNext" },
      bundler: { ...base, module: "ESNext", moduleResolution: "Bundler" },
    };
    for (const [name, compilerOptions] of Object.entries(configs)) {
      const include = name === "nodenext" ? ["src/*.ts", "src/*.cts"] : ["src/*.ts"];
      writeFileSync(join(project, `tsconfig.${name}.json`), JSON.stringify({ compilerOptions, include }, null, 2));
      const tsc = run(process.execPath, [join(project, "node_modules", "typescript", "bin", "tsc"), "-p", `tsconfig.${name}.json`], { cwd: project });
      expect(tsc.stdout + tsc.stderr, name).toBe("");
      expect(tsc.status, name).toBe(0);
    }
  });

  test("a Vitest checkpoint suite passes in the project", () => {
    writeFileSync(
      join(project, "checkpoint.test.ts"),
      `import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { ToolRegistry, createCodingTools, executeToolCall } from "workcell";

const root = mkdtempSync(join(tmpdir(), "workcell-checkpoint-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const registry = new ToolRegistry(createCodingTools(root));
const call = async (name: string, args: object) => {
  const r = await executeToolCall(registry, { type: "toolCall", id: name, name, arguments: args }, new AbortController().signal);
  return { isError: r.isError, body: JSON.parse(r.content) };
};

test("checkpoint 1: the agent writes a file", async () => {
  const r = await call("write_file", { path: "src/app.js", content: "export const answer = 41;\\n" });
  expect(r.isError).toBe(false);
  expect(readFileSync(join(root, "src/app.js"), "utf8")).toBe("export const answer = 41;\\n");
});

test("checkpoint 2: it edits it and reads it back", async () => {
  expect((await call("edit_file", { path: "src/app.js", edits: [{ oldText: "41", newText: "42" }] })).isError).toBe(false);
  expect((await call("read_file", { path: "src/app.js" })).body.content).toBe("export const answer = 42;\\n");
});

test("checkpoint 3: an escape is refused with a code and a hint", async () => {
  writeFileSync(join(root, "..", "workcell-checkpoint-secret.txt"), "secret");
  const r = await call("read_file", { path: "../workcell-checkpoint-secret.txt" });
  rmSync(join(root, "..", "workcell-checkpoint-secret.txt"), { force: true });
  expect(r.isError).toBe(true);
  expect(r.body.error.code).toBe("TOOL_ARGUMENTS_INVALID");
  expect(r.body.error.hint).toMatch(/relative/);
});
`,
    );
    const vitest = run(process.execPath, [join(project, "node_modules", "vitest", "vitest.mjs"), "run", "--reporter=verbose"], { cwd: project });
    expect(vitest.status, vitest.stdout + vitest.stderr).toBe(0);
    expect(vitest.stdout).toMatch(/3 passed/);
  });

  test("on a platform without a prebuilt binary (simulated: the loader sees riscv64) importing is our error", () => {
    writeFileSync(join(project, "fake-riscv64.mjs"), 'Object.defineProperty(process, "arch", { value: "riscv64" });\n');
    const r = run(process.execPath, ["--import", "./fake-riscv64.mjs", "-e", 'import("workcell").catch((e) => console.log(JSON.stringify({ code: e.code, message: e.message })))'], { cwd: project });
    const out = JSON.parse(r.stdout) as { code: string; message: string };
    expect(out.code).toBe("WORKCELL_ADDON_UNAVAILABLE");
    expect(out.message).toMatch(/^workcell: no native addon for this platform \(linux-riscv64-(gnu|musl), Node\.js v\d+/);
    expect(out.message).toContain("Prebuilt binaries exist for: linux-x64-gnu, linux-arm64-gnu, darwin-x64, darwin-arm64.");
    expect(out.message).toContain("To build from source (a Rust toolchain");
    expect(out.message).not.toContain("npm has a bug");
  });

  test("a missing prebuilt addon is our error, naming the optional dependency it comes in", () => {
    const native = join(project, "node_modules", "workcell", "native");
    const addon = packed.map((f) => f.path).find((f) => f.endsWith(".node"))!.slice("native/".length);
    renameSync(join(native, addon), join(native, `${addon}.away`));
    try {
      const r = run(process.execPath, ["-e", 'try { require("workcell") } catch (e) { console.log(JSON.stringify({ code: e.code, message: e.message })) }'], { cwd: project });
      const out = JSON.parse(r.stdout) as { code: string; message: string };
      const platform = addon.slice("workcell.".length, -".node".length);
      expect(out.code).toBe("WORKCELL_ADDON_UNAVAILABLE");
      expect(out.message).toContain(`the prebuilt native addon for ${platform} did not load`);
      expect(out.message).toContain(`optional dependency workcell-${platform}`);
      expect(out.message).toContain("To build from source");
      expect(out.message).not.toContain("npm has a bug");
    } finally {
      renameSync(join(native, `${addon}.away`), join(native, addon));
    }
  });
});
