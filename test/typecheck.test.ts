// Compiles test/typecheck/integrations.ts with tsc: the published types of workcell, workcell/ai,
// workcell/mcp and workcell/pi are accepted where the OpenAI, Anthropic, AI SDK, MCP and Pi
// types are expected (and its @ts-expect-error lines prove the checks are not vacuous); and the
// test files themselves compile under strict settings (test/tsconfig.json).
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

/** Runs tsc on a project of this folder; it must print nothing and succeed. */
function expectCompiles(project: string) {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const run = spawnSync(process.execPath, [tsc, "-p", fileURLToPath(new URL(project, import.meta.url))], { encoding: "utf8" });
  expect(run.stdout + run.stderr).toBe("");
  expect(run.status).toBe(0);
}

test("the adapters' types fit the SDKs' own types", () => expectCompiles("./typecheck/tsconfig.json"), 120_000);

test("the test files themselves type-check strictly against the built package's types", () => expectCompiles("./tsconfig.json"), 120_000);

test("each tool's result type has the fields of the generated binding's result", () => expectCompiles("./typecheck/tsconfig.binding.json"), 120_000);
