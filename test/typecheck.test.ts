// Compiles test/typecheck/integrations.ts with tsc: the published types of workcell, workcell/ai,
// workcell/mcp and workcell/pi are accepted where the OpenAI, Anthropic, AI SDK, MCP and Pi
// types are expected (and its @ts-expect-error lines prove the checks are not vacuous); and the
// test files themselves compile under strict settings (test/tsconfig.json). And the exact public
// types (test/typecheck/exact-types.ts) in a fresh strict project that links the built package,
// under module NodeNext and Bundler, with each of its @ts-expect-error lines shown to fail
// against the package's declarations loosened to what they were before.
import { spawnSync } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";

const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");

function tsc(args: string[], cwd?: string) {
  const run = spawnSync(process.execPath, [TSC, ...args], { encoding: "utf8", cwd });
  return { status: run.status, output: run.stdout + run.stderr };
}

/** Runs tsc on a project of this folder; it must print nothing and succeed. */
function expectCompiles(project: string) {
  const run = tsc(["-p", fileURLToPath(new URL(project, import.meta.url))]);
  expect(run.output).toBe("");
  expect(run.status).toBe(0);
}

test("the adapters' types fit the SDKs' own types", () => expectCompiles("./typecheck/tsconfig.json"), 120_000);

test("the test files themselves type-check strictly against the built package's types", () => expectCompiles("./tsconfig.json"), 120_000);

test("each tool's result type has the fields of the generated binding's result", () => expectCompiles("./typecheck/tsconfig.binding.json"), 120_000);

const REPO = fileURLToPath(new URL("..", import.meta.url));
const EXACT = fileURLToPath(new URL("./typecheck/exact-types.ts", import.meta.url));

/**
 * The package's declarations loosened back to what they were (each replacement must match): the
 * tool sets plain arrays indexed by any name, inputs `any`, ToolError.code a string, results
 * and the AI SDK record untyped.
 */
const LOOSENED: [file: string, from: string, to: string][] = [
  ["dist/tool.d.ts", "export type NamedTools<T extends {\n    readonly name: string;\n}> = T[] & ByName<T>;", "export type NamedTools<T extends {\n    readonly name: string;\n}> = T[] & { readonly [name: string]: any };"],
  ["dist/tool.d.ts", "execute(input: Input, context: ToolContext): Promise<Output>;", "execute(input: any, context: ToolContext): Promise<any>;"],
  ["dist/errors.d.ts", "readonly code: ErrorCode;", "readonly code: string;"],
  ["dist/registry.d.ts", "export type KnownName<T extends AnyTool, N extends string> = string extends N ? unknown : string extends T[\"name\"] ? unknown : T[\"name\"];", "export type KnownName<T extends AnyTool, N extends string> = unknown;"],
  ["dist/registry.d.ts", "export type ToolResultOf<T extends AnyTool, N extends string> = ToolResult<N, ToolOutput<string extends N ? T : ToolNamed<T, N>>>;", "export type ToolResultOf<T extends AnyTool, N extends string> = ToolResult<N, any>;"],
  ["dist/adapters/ai.d.ts", "): AISDKTools<T, Errors>;", "): Record<string, AITool<any, any>>;"],
];

describe("the exact public types in a fresh strict project", () => {
  const dir = mkdtempSync(join(tmpdir(), "workcell-types-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** A project in `dir/name` with the test file, `workcell` resolved to `pkg`, and the SDKs linked. */
  function project(name: string, pkg: string): string {
    const root = join(dir, name);
    mkdirSync(join(root, "src"), { recursive: true });
    mkdirSync(join(root, "node_modules", "@types"), { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: `workcell-${name}`, private: true, type: "module" }));
    cpSync(EXACT, join(root, "src", "exact-types.ts"));
    symlinkSync(pkg, join(root, "node_modules", "workcell"));
    for (const dep of ["ai", "@ai-sdk", "typescript", "@types/node"]) symlinkSync(join(REPO, "node_modules", dep), join(root, "node_modules", dep));
    const base = { strict: true, noEmit: true, target: "ES2022", lib: ["ES2022", "DOM"], types: ["node"], skipLibCheck: true };
    const configs = {
      nodenext: { ...base, module: "NodeNext", moduleResolution: "NodeNext" },
      bundler: { ...base, module: "ESNext", moduleResolution: "Bundler" },
    };
    for (const [mode, compilerOptions] of Object.entries(configs)) {
      writeFileSync(join(root, `tsconfig.${mode}.json`), JSON.stringify({ compilerOptions, include: ["src/*.ts"] }));
    }
    return root;
  }

  test("a tool set typed by name, typed results, a union of codes and a typed AI SDK record (NodeNext and Bundler)", () => {
    const root = project("strict", REPO);
    for (const mode of ["nodenext", "bundler"]) {
      const run = tsc(["-p", `tsconfig.${mode}.json`], root);
      expect(run.output, mode).toBe("");
      expect(run.status, mode).toBe(0);
    }
  }, 120_000);

  test("each @ts-expect-error fails against the loosened declarations", () => {
    // A copy of the package's declarations (no code: tsc reads only these), loosened.
    const pkg = join(dir, "loose-package");
    mkdirSync(pkg);
    for (const f of ["package.json", "index.d.ts"]) cpSync(join(REPO, f), join(pkg, f));
    cpSync(join(REPO, "dist"), join(pkg, "dist"), { recursive: true, filter: (src) => !src.endsWith(".js") && !src.endsWith(".map") });
    cpSync(join(REPO, "native"), join(pkg, "native"), { recursive: true, filter: (src) => !src.endsWith(".node") });
    for (const [file, from, to] of LOOSENED) {
      const text = readFileSync(join(pkg, file), "utf8");
      expect(text.includes(from), `${file}: ${from}`).toBe(true);
      writeFileSync(join(pkg, file), text.replace(from, to));
    }
    symlinkSync(join(REPO, "node_modules"), join(pkg, "node_modules"));
    const root = project("loose", pkg);
    const run = tsc(["-p", "tsconfig.nodenext.json"], root);
    const unused = [...run.output.matchAll(/exact-types\.ts\((\d+),\d+\): error TS2578/g)].map((m) => Number(m[1]));
    const expected = readFileSync(EXACT, "utf8")
      .split("\n")
      .flatMap((line, i) => (line.trim().startsWith("// @ts-expect-error") ? [i + 1] : []));
    expect(expected.length).toBeGreaterThanOrEqual(10);
    expect(unused, run.output).toEqual(expected);
    expect(readdirSync(join(pkg, "dist")).some((f) => f.endsWith(".js"))).toBe(false);
  }, 120_000);
});
