// Compiles test/typecheck/integrations.ts with tsc: the published types of workcell, workcell/ai,
// workcell/mcp and workcell/pi are accepted where the OpenAI, Anthropic, AI SDK, MCP and Pi
// types are expected (and its @ts-expect-error lines prove the checks are not vacuous).
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

test("the adapters' types fit the SDKs' own types", () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const project = fileURLToPath(new URL("./typecheck/tsconfig.json", import.meta.url));
  const run = spawnSync(process.execPath, [tsc, "-p", project], { encoding: "utf8" });
  expect(run.stdout + run.stderr).toBe("");
  expect(run.status).toBe(0);
}, 120_000);

test("the test files themselves type-check strictly against the built package's types", () => {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  const project = fileURLToPath(new URL("./tsconfig.json", import.meta.url));
  const run = spawnSync(process.execPath, [tsc, "-p", project], { encoding: "utf8" });
  expect(run.stdout + run.stderr).toBe("");
  expect(run.status).toBe(0);
}, 120_000);
