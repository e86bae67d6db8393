// run_tests against fixture projects generated per runner: passing, failing, a compile error, a
// hanging test (named by the runner's inner deadline), a test printing megabytes, a test leaving a
// background child, a test reading the host's API key, and 1 failure among 500 passing tests.
// Every run: right counts, only failing output, a report under 8 KiB, nothing left alive
// (checked through /proc with a marker the host passes in the environment), the key invisible.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ToolError, ToolRegistry, createCodingTools, createRunTestsTool, executeToolCall, isAbortError, sandboxSupport } from "../dist/index.js";
import type { RunTestsOutput } from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";
import { defaultLimitsReport } from "./limits-helpers.js";
import { expectNoneAlive, marker, peakRssGrowth, withScratch } from "./process-helpers.js";

const REPO = dirname(dirname(fileURLToPath(import.meta.url)));
const SECRET = "sk-workcell-test-secret-4f1c";
const has = (cmd: string) => spawnSync("sh", ["-c", `command -v ${cmd}`]).status === 0;
const HAS_GO = has("go");
const HAS_CARGO = has("cargo");
// Every run below is confined ("auto"): the runners, their toolchains and the fixtures work in
// the sandbox, and every result (and a timeout's or a failed start's details) says so.
const features = sandboxSupport();
const CONFINED = {
  landlockAbi: features.landlockAbi,
  filesystem: features.landlockAbi === null ? "open" : "confined",
  network: (features.landlockAbi ?? 0) >= 4 ? "blocked" : "open",
  processes: features.pidNamespace && features.userNamespace ? "namespace" : "group",
  nodePermission: false,
  limits: defaultLimitsReport(),
  protect: "read-only",
};

type Files = Record<string, string>;

async function writeFiles(root: string, files: Files) {
  for (const [name, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, name)), { recursive: true });
    await writeFile(join(root, name), text);
  }
}

/** A scratch parent beside the workspace, checked empty after each run. */
async function project(files: Files) {
  const ws = await withScratch();
  await writeFiles(ws.root, files);
  return ws;
}

interface Outcome {
  output?: RunTestsOutput;
  error?: ToolError;
  ms: number;
}

/** The go tests' shared GOCACHE (see their `beforeAll`), or none: a cache in each call's scratch. */
let goCache: string | undefined;

/** Runs the tool with a fresh marker in WC_MARK and the secret in the host's environment. */
async function runTests(root: string, scratchDir: string, input: Record<string, unknown>, timeoutMs = 60_000): Promise<Outcome> {
  const mark = marker();
  const saved = { OPENAI_API_KEY: process.env.OPENAI_API_KEY };
  process.env.WC_MARK = mark;
  process.env.WC_TEST_API_KEY = SECRET;
  process.env.OPENAI_API_KEY = SECRET;
  const started = performance.now();
  try {
    const tool = createRunTestsTool(root, { scratchDir, inheritEnv: ["WC_MARK"], timeoutMs, ...(goCache === undefined ? {} : { goCache }) });
    const outcome: Outcome = await tool.execute(tool.validate(input), ctx()).then(
      (output) => ({ output, ms: 0 }),
      (error: ToolError) => ({ error, ms: 0 }),
    );
    outcome.ms = performance.now() - started;
    await expectNoneAlive(mark);
    expect(readdirSync(scratchDir)).toEqual([]);
    const text = JSON.stringify(outcome.output ?? { error: outcome.error?.toJSON?.() ?? String(outcome.error) });
    expect(text).not.toContain(SECRET);
    if (outcome.output) expect(Buffer.byteLength(outcome.output.report)).toBeLessThanOrEqual(8 * 1024);
    if (outcome.output) expect(outcome.output.sandbox).toEqual(CONFINED);
    const details = outcome.error?.details as { sandbox?: unknown } | undefined;
    if (outcome.error?.code === "TESTS_TIMED_OUT") expect(details?.sandbox).toEqual(CONFINED);
    if (details?.sandbox !== undefined) expect(details.sandbox).toEqual(CONFINED);
    return outcome;
  } finally {
    delete process.env.WC_MARK;
    delete process.env.WC_TEST_API_KEY;
    if (saved.OPENAI_API_KEY === undefined) delete process.env.OPENAI_API_KEY;
    else process.env.OPENAI_API_KEY = saved.OPENAI_API_KEY;
  }
}

function ok(o: Outcome): RunTestsOutput {
  expect(o.error, o.error ? `${o.error.code}: ${o.error.message}` : "").toBeUndefined();
  return o.output!;
}

function counts(r: RunTestsOutput) {
  return { passed: r.passed, failed: r.failed, skipped: r.skipped };
}

// ---------------------------------------------------------------- node --test

const NODE_FILES: Files = {
  "test/passing.test.js": `const test = require("node:test");
const assert = require("node:assert");
test("adds", () => assert.strictEqual(1 + 1, 2));
test("noisy pass", () => { console.log("NOISE-FROM-PASSING"); });
test("third", () => {});
test("later", { skip: "not now" }, () => {});
`,
  "test/failing.test.js": `const test = require("node:test");
const assert = require("node:assert");
const add = (a, b) => a + b + 0;
test("noisy pass", () => { console.log("NOISE-FROM-PASSING"); });
test("subtracts", () => assert.strictEqual(3 - 1, 2));
test("adds", () => { assert.strictEqual(add(2, 2), 5, "add(2, 2) should be 5"); });
`,
  "test/broken.test.js": "const x = ;\n",
  "test/hang.test.js": `const test = require("node:test");
test("fast", () => {});
test("hangs", async () => { await new Promise((r) => setTimeout(r, 3_600_000)); });
`,
  "test/printer.test.js": `const test = require("node:test");
const assert = require("node:assert");
test("prints megabytes and passes", () => { const line = "p".repeat(1023); for (let i = 0; i < 5 * 1024; i++) console.log(line); });
test("prints megabytes and fails", () => { const line = "f".repeat(1023); for (let i = 0; i < 3 * 1024; i++) console.error(line); assert.fail("FAILED-AFTER-PRINTING"); });
`,
  "test/background.test.js": `const test = require("node:test");
const { spawn } = require("node:child_process");
test("leaves a child", () => { spawn("sleep", ["60"], { stdio: "ignore" }).unref(); });
`,
  "test/apikey.test.js": `const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
test("no key", () => {
  assert.strictEqual(process.env.WC_TEST_API_KEY, undefined);
  assert.strictEqual(process.env.OPENAI_API_KEY, undefined);
  assert.ok(!fs.readFileSync("/proc/self/environ", "latin1").includes("sk-workcell"));
});
`,
};

function manyNode(): string {
  const lines = ['const test = require("node:test");', 'const assert = require("node:assert");'];
  for (let i = 0; i < 500; i++) lines.push(`test("passes ${i}", () => { console.log("chatter ${i}"); assert.ok(true); });`);
  lines.push('test("the odd one", () => { assert.deepStrictEqual({ total: 41 }, { total: 42 }); });');
  return lines.join("\n") + "\n";
}

describe("run_tests: node", () => {
  test("passing", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "node", args: ["test/passing.test.js"] }));
    expect(counts(r)).toEqual({ passed: 3, failed: 0, skipped: 1 });
    expect(r.exitCode).toBe(0);
    expect(r.failures).toEqual([]);
    expect(r.status).toBe("passed");
    expect(r.report).toMatch(/^node: passed: 3 passed, 0 failed, 1 skipped \(exit code 0\)/);
    expect(r.report).toContain("ok   test/passing.test.js (3 passed, 1 skipped)");
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
  });

  test("failing: the failing test's message and its file's output", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "node", args: ["test/failing.test.js"] }));
    expect(counts(r)).toEqual({ passed: 2, failed: 1, skipped: 0 });
    expect(r.status).toBe("failed");
    expect(r.exitCode).toBe(1);
    expect(r.failures).toHaveLength(1);
    expect(r.failures[0]).toMatchObject({ name: "adds", file: "test/failing.test.js" });
    expect(r.failures[0]!.output).toContain("add(2, 2) should be 5");
    expect(r.failures[0]!.output).toContain("test/failing.test.js:6");
    expect(r.failures[0]!.output).not.toContain("node:internal");
    // node:test reports output per file: the failing file's output comes with the failure.
    expect(r.failures[0]!.output).toMatch(/output of the file \(\d+ bytes printed\):\nNOISE-FROM-PASSING/);
    expect(r.report).not.toContain(root);
  });

  test("compile error: a build error naming the file", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "node", args: ["test/broken.test.js", "test/passing.test.js"] }));
    expect(counts(r)).toEqual({ passed: 3, failed: 0, skipped: 1 });
    expect(r.buildErrors).toHaveLength(1);
    expect(r.buildErrors[0]).toMatch(/^test\/broken\.test\.js:\n[\s\S]*SyntaxError: Unexpected token/);
    expect(r.report).toContain("FAIL test/broken.test.js [failed to load]");
  });

  test("a hanging test is named by the inner deadline", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const o = await runTests(root, scratchDir, { runner: "node", args: ["test/hang.test.js"], timeoutMs: 6_000 });
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]).toMatchObject({ name: "hangs", file: "test/hang.test.js" });
    expect(r.failures[0]!.output).toMatch(/timed out after 4500ms/);
    expect(o.ms).toBeLessThan(6_000 + 1_000);
  });

  test("a test printing megabytes: bounded; the failure keeps its file's output's head and tail with the bytes cut", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const { result: o, growth } = await peakRssGrowth(() => runTests(root, scratchDir, { runner: "node", args: ["test/printer.test.js"] }));
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]!.output).toContain("FAILED-AFTER-PRINTING");
    expect(r.failures[0]!.output).toMatch(/output of the file \(\d{7,} bytes printed, \d{7,} cut from the middle\):/);
    expect(r.failures[0]!.output).toMatch(/\[\d+ bytes omitted\]/);
    expect(Buffer.byteLength(r.failures[0]!.output)).toBeLessThan(1_700);
    expect(growth).toBeLessThan(64 * 1024 * 1024);
  });

  test("a test leaving a background child, and one reading the API key", async () => {
    const { root, scratchDir } = await project(NODE_FILES);
    const bg = ok(await runTests(root, scratchDir, { runner: "node", args: ["test/background.test.js"] }));
    expect(counts(bg)).toEqual({ passed: 1, failed: 0, skipped: 0 });
    const key = ok(await runTests(root, scratchDir, { runner: "node", args: ["test/apikey.test.js"] }));
    expect(counts(key)).toEqual({ passed: 1, failed: 0, skipped: 0 });
  });

  test("1 failure among 500 passing: a report under 2 KiB naming the test and its assertion", async () => {
    const { root, scratchDir } = await project({ "test/many.test.js": manyNode() });
    const r = ok(await runTests(root, scratchDir, { runner: "node" }));
    expect(counts(r)).toEqual({ passed: 500, failed: 1, skipped: 0 });
    expect(Buffer.byteLength(r.report)).toBeLessThan(2 * 1024);
    expect(r.report).toContain("the odd one");
    expect(r.report).toContain("total: 42");
    // The failing file's output comes with its failure (node reports output per file), cut.
    expect(r.report).toMatch(/output of the file \(\d+ bytes printed, \d+ cut from the middle\):/);
  });
});

// ---------------------------------------------------------------- vitest

describe("run_tests: vitest", () => {
  // One project with node_modules hard-linked from this repository (vitest must be installed in
  // the workspace itself); each case selects its files with a filter.
  let base = "";
  let root = "";
  let scratchDir = "";
  beforeAll(() => {
    base = realpathSync(mkdtempSync(join(tmpdir(), "workcell-test-vitest-")));
    root = join(base, "ROOT");
    scratchDir = join(base, "scratch");
    mkdirSync(root);
    mkdirSync(scratchDir);
    // Hard links when the temporary directory is on the same file system, a copy otherwise.
    try {
      execFileSync("cp", ["-al", realpathSync(join(REPO, "node_modules")), join(root, "node_modules")], { stdio: "ignore" });
    } catch {
      rmSync(join(root, "node_modules"), { recursive: true, force: true });
      execFileSync("cp", ["-a", realpathSync(join(REPO, "node_modules")), join(root, "node_modules")]);
    }
    const files: Files = {
      "package.json": '{ "name": "fixture", "type": "module" }\n',
      "src/add.ts": "export const add = (a: number, b: number) => a + b + 0;\n",
      "test/passing.test.ts": `import { expect, test } from "vitest";
import { add } from "../src/add";
test("adds", () => expect(add(1, 1)).toBe(2));
test("noisy pass", () => { console.log("NOISE-FROM-PASSING"); });
test("third", () => {});
test.skip("later", () => {});
`,
      "test/failing.test.ts": `import { expect, test } from "vitest";
import { add } from "../src/add";
test("noisy pass", () => { console.log("NOISE-FROM-PASSING"); });
test("subtracts", () => expect(3 - 1).toBe(2));
test("adds", () => expect(add(2, 2), "add(2, 2) should be 5").toBe(5));
`,
      "test/broken.test.ts": "const x = ;\n",
      "test/hang.test.ts": `import { test } from "vitest";
test("fast", () => {});
test("hangs", async () => { await new Promise((r) => setTimeout(r, 3_600_000)); });
`,
      "test/printer.test.ts": `import { expect, test } from "vitest";
test("prints megabytes and passes", () => { const line = "p".repeat(1023); for (let i = 0; i < 5 * 1024; i++) process.stdout.write(line + "\\n"); });
test("prints megabytes and fails", () => { const line = "f".repeat(1023); for (let i = 0; i < 3 * 1024; i++) process.stderr.write(line + "\\n"); expect.fail("FAILED-AFTER-PRINTING"); });
`,
      "test/background.test.ts": `import { test } from "vitest";
import { spawn } from "node:child_process";
test("leaves a child", () => { spawn("sleep", ["60"], { stdio: "ignore" }).unref(); });
`,
      "test/apikey.test.ts": `import { expect, test } from "vitest";
import { readFileSync } from "node:fs";
test("no key", () => {
  expect(process.env.WC_TEST_API_KEY).toBeUndefined();
  expect(process.env.OPENAI_API_KEY).toBeUndefined();
  expect(readFileSync("/proc/self/environ", "latin1")).not.toContain("sk-workcell");
});
`,
    };
    const many = ['import { expect, test } from "vitest";'];
    for (let i = 0; i < 500; i++) many.push(`test("passes ${i}", () => { console.log("chatter ${i}"); expect(true).toBe(true); });`);
    many.push('test("the odd one", () => { expect({ total: 41 }).toEqual({ total: 42 }); });');
    files["test/many.test.ts"] = many.join("\n") + "\n";
    for (const [name, text] of Object.entries(files)) {
      mkdirSync(dirname(join(root, name)), { recursive: true });
      writeFileSync(join(root, name), text);
    }
  }, 120_000);
  afterAll(() => {
    if (base) rmSync(base, { recursive: true, force: true });
  });

  test("passing", async () => {
    const r = ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/passing"] }));
    expect(counts(r)).toEqual({ passed: 3, failed: 0, skipped: 1 });
    expect(r.exitCode).toBe(0);
    expect(r.report).toContain("ok   test/passing.test.ts (3 passed, 1 skipped)");
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
  });

  test("failing: only the failing test's message", async () => {
    const r = ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/failing"] }));
    expect(counts(r)).toEqual({ passed: 2, failed: 1, skipped: 0 });
    expect(r.failures).toHaveLength(1);
    expect(r.failures[0]).toMatchObject({ name: "adds", file: "test/failing.test.ts" });
    expect(r.failures[0]!.output).toContain("add(2, 2) should be 5");
    expect(r.failures[0]!.output).toContain("test/failing.test.ts:5");
    expect(r.failures[0]!.output).not.toContain("node_modules");
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
    expect(r.report).not.toContain(root);
  });

  test("compile error: a build error naming the file", async () => {
    const r = ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/broken"] }));
    expect(r.failed).toBe(0);
    expect(r.buildErrors).toHaveLength(1);
    expect(r.buildErrors[0]).toMatch(/^test\/broken\.test\.ts:\n/);
    expect(r.buildErrors[0]).not.toContain("\u001b[");
    expect(r.report).toContain("FAIL test/broken.test.ts [failed to load]");
  });

  test("a hanging test is named by the inner deadline", async () => {
    const o = await runTests(root, scratchDir, { runner: "vitest", args: ["test/hang"], timeoutMs: 12_000 });
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]).toMatchObject({ name: "hangs", file: "test/hang.test.ts" });
    expect(r.failures[0]!.output).toContain("Test timed out in 9000ms");
  });

  test("a test printing megabytes, a background child, the API key", async () => {
    const { result: o, growth } = await peakRssGrowth(() => runTests(root, scratchDir, { runner: "vitest", args: ["test/printer"] }));
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]!.output).toContain("FAILED-AFTER-PRINTING");
    expect(r.report).not.toContain("ppppp");
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    expect(counts(ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/background"] })))).toEqual({ passed: 1, failed: 0, skipped: 0 });
    expect(counts(ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/apikey"] })))).toEqual({ passed: 1, failed: 0, skipped: 0 });
  });

  test("1 failure among 500 passing: a report under 2 KiB naming the test and its assertion", async () => {
    const r = ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/many"] }));
    expect(counts(r)).toEqual({ passed: 500, failed: 1, skipped: 0 });
    expect(Buffer.byteLength(r.report)).toBeLessThan(2 * 1024);
    expect(r.report).toContain("the odd one");
    expect(r.report).toMatch(/expected \{ total: 41 \} to deeply equal \{ total: 42 \}/);
  });

  test("a config replacing the report at exit with a symlink to a file outside: never read", async () => {
    // A JSON file outside the workspace that, read as the report, would put its content in it.
    const canary = join(base, "canary.json");
    writeFileSync(canary, JSON.stringify({ testResults: [{ name: "CANARY-OUTSIDE", status: "passed", assertionResults: [{ fullName: "x", status: "passed" }] }], numPassedTests: 1, numFailedTests: 0, success: true }));
    writeFileSync(
      join(root, "vitest.config.mjs"),
      `import fs from "node:fs";
const out = process.argv.find((a) => a.startsWith("--outputFile=")).slice("--outputFile=".length);
process.on("exit", () => { try { fs.rmSync(out); fs.symlinkSync(${JSON.stringify(canary)}, out); } catch {} });
export default {};
`,
    );
    try {
      const confined = ok(await runTests(root, scratchDir, { runner: "vitest", args: ["test/passing"] }));
      expect(JSON.stringify(confined)).not.toContain("CANARY");
      if (features.landlockAbi !== null) {
        // The runner could not replace its report.
        expect(confined.status).toBe("passed");
        expect(counts(confined)).toEqual({ passed: 3, failed: 0, skipped: 1 });
      }
      // Unconfined, the replacement happens and the host refuses it.
      const tool = createRunTestsTool(root, { scratchDir, sandbox: "off" });
      const open = await tool.execute(tool.validate({ runner: "vitest", args: ["test/passing"] }), ctx());
      expect(JSON.stringify(open)).not.toContain("CANARY");
      expect(open.status).toBe("incomplete");
      expect(open.report).toContain("vitest's report file was replaced by a symlink during the run and was not read");
      expect(readdirSync(scratchDir)).toEqual([]);
    } finally {
      rmSync(join(root, "vitest.config.mjs"));
    }
  });

  test("a broken config is TEST_RUNNER_FAILED with vitest's own lines", async () => {
    writeFileSync(join(root, "vitest.config.ts"), "export default { test: { include: [\n");
    try {
      const o = await runTests(root, scratchDir, { runner: "vitest", args: ["test/passing"] });
      expect(o.error).toMatchObject({ code: "TEST_RUNNER_FAILED", hint: expect.any(String) });
      expect(o.error!.message).toContain("failed to load config from vitest.config.ts");
    } finally {
      rmSync(join(root, "vitest.config.ts"));
    }
  });
});

test("vitest not installed in the workspace: COMMAND_NOT_FOUND with a hint", async () => {
  const { root, scratchDir } = await project({ "test/a.test.ts": "" });
  const o = await runTests(root, scratchDir, { runner: "vitest" });
  expect(o.error).toMatchObject({ code: "COMMAND_NOT_FOUND", hint: expect.stringContaining("install") });
});

// ---------------------------------------------------------------- go test

function goModule(pkgs: Files): Files {
  const files: Files = { "go.mod": "module example.com/fx\n\ngo 1.19\n" };
  for (const [name, text] of Object.entries(pkgs)) files[name] = text;
  return files;
}

const GO_FILES: Files = goModule({
  "calc/calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b + 0 }\n",
  "calc/calc_test.go": `package calc

import (
	"fmt"
	"testing"
)

func TestAddOne(t *testing.T) { if Add(1, 1) != 2 { t.Fatal("bad") } }
func TestNoisy(t *testing.T)  { fmt.Println("NOISE-FROM-PASSING") }
func TestThird(t *testing.T)  {}
func TestLater(t *testing.T)  { t.Skip("not now") }
`,
  "failing/f_test.go": `package failing

import (
	"fmt"
	"testing"
)

func add(a, b int) int { return a + b + 0 }

func TestNoisy(t *testing.T)     { fmt.Println("NOISE-FROM-PASSING") }
func TestSubtracts(t *testing.T) {}
func TestAdds(t *testing.T) {
	if got := add(2, 2); got != 5 {
		t.Errorf("add(2, 2) = %d, want 5", got)
	}
}
`,
  "broken/b.go": 'package broken\n\nfunc X() int { return "s" }\n',
  "broken/b_test.go": 'package broken\n\nimport "testing"\n\nfunc TestX(t *testing.T) { X() }\n',
  "hang/h_test.go": `package hang

import (
	"testing"
	"time"
)

func TestFast(t *testing.T)  {}
func TestHangs(t *testing.T) { time.Sleep(time.Hour) }
`,
  "printer/p_test.go": `package printer

import (
	"fmt"
	"strings"
	"testing"
)

func TestPrintsAndPasses(t *testing.T) {
	line := strings.Repeat("p", 1023)
	for i := 0; i < 5*1024; i++ { fmt.Println(line) }
}
func TestPrintsAndFails(t *testing.T) {
	line := strings.Repeat("f", 1023)
	for i := 0; i < 3*1024; i++ { fmt.Println(line) }
	t.Fatal("FAILED-AFTER-PRINTING")
}
`,
  "background/bg_test.go": `package background

import (
	"os/exec"
	"testing"
)

func TestLeavesAChild(t *testing.T) {
	if err := exec.Command("sleep", "60").Start(); err != nil { t.Fatal(err) }
}
`,
  "apikey/k_test.go": `package apikey

import (
	"os"
	"strings"
	"testing"
)

func TestNoKey(t *testing.T) {
	if os.Getenv("WC_TEST_API_KEY") != "" || os.Getenv("OPENAI_API_KEY") != "" { t.Fatal("the key is visible") }
	env, _ := os.ReadFile("/proc/self/environ")
	if strings.Contains(string(env), "sk-workcell") { t.Fatal("the key is in the environment") }
}
`,
});

describe.skipIf(!HAS_GO)("run_tests: go", () => {
  // One GOCACHE for these tests (the `goCache` option), warmed here: each call then builds
  // only its own package, not the standard library's `testing` and its imports again (about
  // 2 s a call), and the hanging test's binary is built well within its 3 s before go's own
  // deadline.
  beforeAll(async () => {
    goCache = mkdtempSync(join(tmpdir(), "workcell-test-gocache-"));
    const { root, scratchDir } = await project(GO_FILES);
    ok(await runTests(root, scratchDir, { runner: "go", args: ["-run", "^$", "./calc", "./hang"] }));
  }, 120_000);
  afterAll(() => {
    if (goCache !== undefined) rmSync(goCache, { recursive: true, force: true });
    goCache = undefined;
  });

  test("passing", async () => {
    const { root, scratchDir } = await project(GO_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "go", args: ["./calc"] }));
    expect(counts(r)).toEqual({ passed: 3, failed: 0, skipped: 1 });
    expect(r.exitCode).toBe(0);
    expect(r.report).toContain("ok   example.com/fx/calc (3 passed, 1 skipped)");
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
  });

  test("failing: only the failing test's output", async () => {
    const { root, scratchDir } = await project(GO_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "go", args: ["./failing"] }));
    expect(counts(r)).toEqual({ passed: 2, failed: 1, skipped: 0 });
    expect(r.failures).toEqual([{ name: "TestAdds", file: "example.com/fx/failing", output: "    f_test.go:14: add(2, 2) = 4, want 5" }]);
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
    expect(r.report).not.toMatch(/\d\.\d\ds/);
  });

  test("compile error: a build error naming the package", async () => {
    const { root, scratchDir } = await project(GO_FILES);
    const r = ok(await runTests(root, scratchDir, { runner: "go", args: ["./broken", "./calc"] }));
    expect(counts(r)).toEqual({ passed: 3, failed: 0, skipped: 1 });
    expect(r.buildErrors).toHaveLength(1);
    expect(r.buildErrors[0]).toMatch(/^# example\.com\/fx\/broken[^\n]*\n.*b\.go:3:\d+: cannot use "s"/);
    expect(r.report).toContain("FAIL example.com/fx/broken [build failed]");
  });

  test("a hanging test is named by the inner deadline", async () => {
    const { root, scratchDir } = await project(GO_FILES);
    // go's own -timeout (3/4 of the call's) counts from the test binary's start: the rest (3 s)
    // is for building and linking it, with the standard library already in the shared cache
    // (0.3 s here on a quiet machine; from an empty cache it took over 4 s on a loaded one).
    const r = ok(await runTests(root, scratchDir, { runner: "go", args: ["./hang"], timeoutMs: 12_000 }));
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]).toMatchObject({ name: "TestHangs", file: "example.com/fx/hang" });
    expect(r.failures[0]!.output).toContain("panic: test timed out after 9s");
  }, 60_000);

  test("a test printing megabytes, a background child, the API key", async () => {
    const { root, scratchDir } = await project(GO_FILES);
    const { result: o, growth } = await peakRssGrowth(() => runTests(root, scratchDir, { runner: "go", args: ["./printer"] }));
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 1, failed: 1, skipped: 0 });
    expect(r.failures[0]!.name).toBe("TestPrintsAndFails");
    expect(Buffer.byteLength(r.failures[0]!.output)).toBeLessThan(2 * 1024);
    // The end of a long output is kept: that is where the failure is.
    expect(r.failures[0]!.output).toContain("FAILED-AFTER-PRINTING");
    expect(r.failures[0]!.output).toMatch(/more bytes not shown|bytes omitted/);
    expect(r.report).not.toContain("ppppp");
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    expect(counts(ok(await runTests(root, scratchDir, { runner: "go", args: ["./background"] })))).toEqual({ passed: 1, failed: 0, skipped: 0 });
    expect(counts(ok(await runTests(root, scratchDir, { runner: "go", args: ["./apikey"] })))).toEqual({ passed: 1, failed: 0, skipped: 0 });
  });

  test("1 failure among 500 passing: a report under 2 KiB naming the test and its assertion", async () => {
    const src = ['package many', "", 'import "testing"', ""];
    for (let i = 0; i < 500; i++) src.push(`func TestPasses${i}(t *testing.T) { t.Log("chatter") }`);
    src.push('func TestTheOddOne(t *testing.T) { t.Errorf("total = %d, want %d", 41, 42) }');
    const { root, scratchDir } = await project(goModule({ "many/m_test.go": src.join("\n") + "\n" }));
    const r = ok(await runTests(root, scratchDir, { runner: "go" }));
    expect(counts(r)).toEqual({ passed: 500, failed: 1, skipped: 0 });
    expect(Buffer.byteLength(r.report)).toBeLessThan(2 * 1024);
    expect(r.report).toContain("TestTheOddOne");
    expect(r.report).toContain("total = 41, want 42");
  });

  test("a go.mod that does not parse is TEST_RUNNER_FAILED with go's own lines; no go.mod is refused", async () => {
    const bad = await project({ "go.mod": "module example.com/bad\n\ngo 1.19\nnonsense here\n" });
    const o = await runTests(bad.root, bad.scratchDir, { runner: "go" });
    expect(o.error).toMatchObject({ code: "TEST_RUNNER_FAILED", hint: expect.any(String) });
    expect(o.error!.message).toMatch(/^go: errors parsing go\.mod:\ngo\.mod:4: unknown directive: nonsense/);
    const none = await project({ "x_test.go": "package x\n" });
    const n = await runTests(none.root, none.scratchDir, { runner: "go" });
    expect(n.error).toMatchObject({ code: "TEST_RUNNER_FAILED", message: "go.mod not found in the workspace root" });
  });
});

// ---------------------------------------------------------------- cargo test

function crate(lib: string, extra: Files = {}): Files {
  return {
    "Cargo.toml": '[package]\nname = "fx"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
    "src/lib.rs": lib,
    ...extra,
  };
}

describe.skipIf(!HAS_CARGO)("run_tests: cargo", () => {
  test("passing, failing, printing megabytes, a background child, the API key (one crate)", async () => {
    const lib = `pub fn add(a: i32, b: i32) -> i32 { a + b + 0 }
#[cfg(test)]
mod tests {
    use super::*;
    #[test] fn adds_one() { assert_eq!(add(1, 1), 2); }
    #[test] fn noisy() { println!("NOISE-FROM-PASSING"); }
    #[test] #[ignore] fn later() {}
    #[test] fn adds() { assert_eq!(add(2, 2), 5, "add(2, 2) should be 5"); }
    #[test] fn prints_and_passes() { let l = "p".repeat(1023); for _ in 0..5 * 1024 { println!("{l}"); } }
    #[test] fn prints_and_fails() { let l = "f".repeat(1023); for _ in 0..3 * 1024 { println!("{l}"); } panic!("FAILED-AFTER-PRINTING"); }
    #[test] fn leaves_a_child() { std::process::Command::new("sleep").arg("60").spawn().unwrap(); }
    #[test] fn no_key() {
        assert!(std::env::var_os("WC_TEST_API_KEY").is_none());
        assert!(std::env::var_os("OPENAI_API_KEY").is_none());
        assert!(!std::fs::read_to_string("/proc/self/environ").unwrap_or_default().contains("sk-workcell"));
    }
}
`;
    const { root, scratchDir } = await project(crate(lib));
    const { result: o, growth } = await peakRssGrowth(() => runTests(root, scratchDir, { runner: "cargo" }));
    const r = ok(o);
    expect(counts(r)).toEqual({ passed: 5, failed: 2, skipped: 1 });
    expect(r.exitCode).toBe(101);
    expect(r.failures.map((f) => f.name).sort()).toEqual(["tests::adds", "tests::prints_and_fails"]);
    const adds = r.failures.find((f) => f.name === "tests::adds")!;
    expect(adds).toMatchObject({ file: "src/lib.rs" });
    expect(adds.output).toContain("add(2, 2) should be 5");
    const printer = r.failures.find((f) => f.name === "tests::prints_and_fails")!;
    expect(printer.output).toContain("FAILED-AFTER-PRINTING");
    expect(Buffer.byteLength(printer.output)).toBeLessThan(2 * 1024);
    expect(r.report).not.toContain("NOISE-FROM-PASSING");
    expect(r.report).not.toContain("ppppp");
    expect(growth).toBeLessThan(64 * 1024 * 1024);
    // Filtering through args.
    const one = ok(await runTests(root, scratchDir, { runner: "cargo", args: ["adds_one", "--", "--exact", "tests::adds_one"] }));
    expect(counts(one)).toEqual({ passed: 1, failed: 0, skipped: 0 });
  });

  test("compile error: a build error with rustc's diagnostic", async () => {
    const { root, scratchDir } = await project(crate('pub fn x() -> i32 { "s" }\n#[test] fn t() { x(); }\n'));
    const r = ok(await runTests(root, scratchDir, { runner: "cargo" }));
    expect(counts(r)).toEqual({ passed: 0, failed: 0, skipped: 0 });
    expect(r.buildErrors).toHaveLength(1);
    expect(r.buildErrors[0]).toMatch(/^error\[E0308\]: mismatched types\n\s*--> src\/lib\.rs:1:/);
    expect(r.report).toContain("build error");
  });

  test("1 failure among 500 passing: a report under 2 KiB", async () => {
    const src = [];
    for (let i = 0; i < 500; i++) src.push(`#[test] fn passes_${i}() { println!("chatter"); }`);
    src.push('#[test] fn the_odd_one() { assert_eq!(41, 42, "the total is off"); }');
    const { root, scratchDir } = await project(crate(src.join("\n") + "\n"));
    const r = ok(await runTests(root, scratchDir, { runner: "cargo" }));
    expect(counts(r)).toEqual({ passed: 500, failed: 1, skipped: 0 });
    expect(Buffer.byteLength(r.report)).toBeLessThan(2 * 1024);
    expect(r.report).toContain("the_odd_one");
    expect(r.report).toContain("the total is off");
  });

  test("a hanging test: no inner deadline in libtest, so the outer one kills everything: TESTS_TIMED_OUT", async () => {
    const { root, scratchDir } = await project(crate("#[test] fn fast() {}\n#[test] fn hangs() { std::thread::sleep(std::time::Duration::from_secs(3600)); }\n"));
    // Build first, so that the deadline below is spent running.
    ok(await runTests(root, scratchDir, { runner: "cargo", args: ["--no-run"] }));
    const o = await runTests(root, scratchDir, { runner: "cargo", timeoutMs: 3_000 });
    expect(o.error).toMatchObject({ code: "TESTS_TIMED_OUT", hint: expect.any(String), details: { timeoutMs: 3_000 } });
    expect(o.ms).toBeLessThan(3_000 + 1_000);
    expect((o.error!.details as { report: string }).report).toMatch(/^cargo: incomplete: 1 passed, 0 failed, 0 skipped \(stopped at the 3000 ms deadline\)/);
  });

  test("no Cargo.toml in the workspace: TEST_RUNNER_FAILED with cargo's own line (no search above the root)", async () => {
    const { root, scratchDir } = await project({ "src/lib.rs": "" });
    const o = await runTests(root, scratchDir, { runner: "cargo" });
    expect(o.error).toMatchObject({ code: "TEST_RUNNER_FAILED" });
    expect(o.error!.message).toMatch(/manifest path `Cargo\.toml` does not exist/);
  });
});

// ---------------------------------------------------------------- the tool

describe("run_tests: the tool", () => {
  test("args that change the reporter or run other programs are refused with a hint, before any effect", async () => {
    const { root } = await tempWorkspace();
    const tool = createRunTestsTool(root);
    for (const [runner, args] of [
      ["go", ["-exec", "sh"]],
      ["go", ["../elsewhere/..."]],
      ["vitest", ["--reporter=dot"]],
      ["node", ["--import", "/tmp/x.mjs"]],
      ["cargo", ["--", "--nocapture"]],
      ["cargo", ["--config", "x"]],
    ] as const) {
      let caught: unknown;
      try {
        tool.validate({ runner, args });
      } catch (e) {
        caught = e;
      }
      expect(caught, `${runner} ${args.join(" ")}`).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "COMMAND_REFUSED", hint: expect.stringMatching(/^refused `/) });
    }
    for (const input of [{ runner: "jest" }, { runner: "node", args: "x" }, { runner: "node", args: Array(33).fill("a") }, { runner: "node", timeoutMs: 0 }, { runner: "node", extra: 1 }]) {
      expect(() => tool.validate(input)).toThrow(ToolError);
    }
  });

  test("cancellation rejects with an AbortError (not TESTS_TIMED_OUT, not a report) and kills everything", async () => {
    const { root, scratchDir } = await project({
      "test/slow.test.js": 'require("node:test")("slow", async () => { console.log("started"); await new Promise((r) => setTimeout(r, 60_000)); });\n',
    });
    // Cancellation.
    const mark = marker();
    process.env.WC_MARK = mark;
    try {
      const tool = createRunTestsTool(root, { scratchDir, inheritEnv: ["WC_MARK"] });
      const ac = new AbortController();
      const started = performance.now();
      setTimeout(() => ac.abort(), 500);
      const err = await tool.execute(tool.validate({ runner: "node" }), ctx(ac.signal)).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isAbortError(err)).toBe(true);
      expect(performance.now() - started).toBeLessThan(500 + 1_000);
      await expectNoneAlive(mark);
      expect(readdirSync(scratchDir)).toEqual([]);
    } finally {
      delete process.env.WC_MARK;
    }
  });

  test("a requested deadline above the maximum is clamped and said", async () => {
    const { root, scratchDir } = await project({ "test/a.test.js": 'require("node:test")("a", () => {});\n' });
    const tool = createRunTestsTool(root, { scratchDir, timeoutMs: 20_000, maxTimeoutMs: 30_000 });
    const r = await tool.execute(tool.validate({ runner: "node", timeoutMs: 3_600_000 }), ctx());
    expect(r.timeoutMs).toBe(30_000);
    expect(r.note).toMatch(/clamped to 30000 ms/);
    expect(r.report).toContain("note: timeoutMs");
  });

  test("createCodingTools includes run_tests; processes.timeoutMs feeds it; a call through the registry", async () => {
    const { root } = await tempWorkspace();
    await writeFiles(root, { "test/a.test.js": 'require("node:test")("a", () => {});\n' });
    const shared = createCodingTools(root, { processes: { timeoutMs: 45_000 } }).find((t) => t.name === "run_tests")!;
    expect(shared.description).toContain("within 45000 ms");
    const registry = new ToolRegistry(createCodingTools(root));
    const result = await executeToolCall(registry, call("run_tests", { runner: "node" }), new AbortController().signal);
    expect(result.isError).toBe(false);
    expect(content(result)).toMatchObject({ passed: 1, failed: 0, exitCode: 0 });
    const refused = await executeToolCall(registry, call("run_tests", { runner: "vitest", args: ["--watch"] }), new AbortController().signal);
    expect(content(refused).error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "COMMAND_REFUSED" });
  });
});

test("the host's command policy covers the runners", async () => {
  const { root } = await tempWorkspace();
  const onlyNode = createRunTestsTool(root, { allowCommands: ["node"] });
  expect(() => onlyNode.validate({ runner: "node" })).not.toThrow();
  expect(() => onlyNode.validate({ runner: "go" })).toThrow(expect.objectContaining({ message: "COMMAND_REFUSED", details: expect.objectContaining({ reason: "not_allow_listed" }) }));
  const noCargo = createRunTestsTool(root, { denyCommands: ["cargo"] });
  expect(() => noCargo.validate({ runner: "cargo" })).toThrow(expect.objectContaining({ message: "COMMAND_REFUSED" }));
  expect(() => createRunTestsTool(root, { denyCommands: ["node"] })).not.toThrow();
});
