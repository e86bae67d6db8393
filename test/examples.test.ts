// Every examples/*.mjs runs as a user runs it (`node examples/<file>.mjs` from the package root,
// importing the package by its name): it must exit 0, print the lines that show it did its job,
// and leave nothing in its temporary directory. A new example is picked up by the readdir below
// and fails until it has an entry in EXPECTED and a line in README's Examples list.
import { spawn } from "node:child_process";
import { mkdtemp, readFile, readdir, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { sandboxSupport } from "../dist/index.js";

const PACKAGE = fileURLToPath(new URL("..", import.meta.url));
const EXAMPLES = (await readdir(join(PACKAGE, "examples"))).filter((f) => f.endsWith(".mjs")).sort();
const TIMEOUT_MS = 60_000;

// This system confines files and TCP (Landlock ABI 4+): the sandbox example must show refusals.
const landlockNetwork = (sandboxSupport().landlockAbi ?? 0) >= 4;

/** Lines (patterns) each example must print on stdout. */
const EXPECTED: Record<string, RegExp[]> = {
  "basic.mjs": [
    /^tools for the model: read_file, /m,
    /^> read_file \{"path":"\.\.\/\.\.\/etc\/passwd"\}\nerror: \{"error":\{"code":"TOOL_ARGUMENTS_INVALID"/m,
  ],
  "ai-sdk.mjs": [
    /^ {2}> run_command \{"argv":\["node","src\/sum\.js"\]\}\n {2}result: \{"exitCode":0,"signal":null,"output":"6\\n"/m,
    /^ {2}> read_file \{"path":"\.\.\/secret\.txt"\}\n {2}refused: TOOL_ARGUMENTS_INVALID \(INVALID_RELATIVE_PATH\): /m,
    /^the model read, for call-4: error-text \{"error":\{"code":"TOOL_ARGUMENTS_INVALID"/m,
  ],
  "mcp-server.mjs": [
    /^tools\/list:\n {2}read_file \(read-only\): Read file\n/m,
    /^tools\/call read_file \{"path":"notes\/hello\.txt"\}\nok: \{"path":"notes\/hello\.txt","content":"hello over MCP\\n"/m,
    /^tools\/call read_file \{"path":"\.\.\/secret\.txt"\}\nisError: \{"error":\{"code":"TOOL_ARGUMENTS_INVALID"/m,
  ],
  "pi.mjs": [
    /^> run_tests \{"runner":"node"\}\nok: 0 passed, 1 failed\n/m,
    /^> run_tests \{"runner":"node"\}\nok: 1 passed, 0 failed\n/m,
    /^> read_file \{"path":"notes\.txt"\}\nerror: \{"error":\{"code":"PATH_ESCAPES_WORKSPACE"/m,
  ],
  "provider-tools.mjs": [
    /^> \{"command":"view","path":"primes\.py"\}\nok: 1: def get_primes\(limit\):\n2:     for num in range\(2, limit \+ 1\)\n/m,
    /^ok: Successfully replaced text at exactly one location\.$/m,
    /^is_error: Error: PATH_ESCAPES_WORKSPACE: \/etc\/passwd is outside the workspace$/m,
    /^> create_file test_primes\.py\ncompleted: Created test_primes\.py$/m,
    /^> create_file \.\.\/escape\.py\nfailed: Error: TOOL_ARGUMENTS_INVALID: INVALID_RELATIVE_PATH$/m,
  ],
  "sandbox.mjs": [
    /^this system offers: \{"landlockAbi":/m,
    // The example's own leak check works: with the sandbox off, the same script reads and connects.
    /^the same script with sandbox: "off":\n {4}fs\.readFileSync\(secret\): read "TOP-SECRET-VALUE\\n"\n(.*\n)* {4}net\.connect\(127\.0\.0\.1\): connected$/m,
    ...(landlockNetwork
      ? [
          /^confined children: 0 read the secret, 0 reached the listener$/m,
          /^ {4}a child running cat secret: refused, cat: .*Permission denied$/m,
          /^run_tests node confined\.test\.mjs: 2 passed, 0 failed$/m,
          /^ {2}sandbox: \{"landlockAbi":\d+,"filesystem":"confined","network":"blocked",/m,
        ]
      : []),
  ],
};

function run(file: string, env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(process.execPath, [join("examples", file)], { cwd: PACKAGE, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), TIMEOUT_MS - 5_000);
    child.on("error", reject);
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

describe("examples", () => {
  test("README's Examples list names exactly the files in examples/", async () => {
    const readme = await readFile(join(PACKAGE, "README.md"), "utf8");
    const start = readme.indexOf("\nExamples");
    const section = readme.slice(start, readme.indexOf("\n## ", start));
    const listed = [...section.matchAll(/^- `([\w.-]+\.mjs)`: /gm)].map((m) => m[1]).sort();
    expect(listed).toEqual(EXAMPLES);
    expect(EXAMPLES).toEqual(expect.arrayContaining(["ai-sdk.mjs", "basic.mjs", "mcp-server.mjs", "sandbox.mjs"]));
  });

  for (const file of EXAMPLES) {
    test(
      `node examples/${file} exits 0, prints what it shows, and leaves no temporary files`,
      async () => {
        expect(EXPECTED[file], `add the lines examples/${file} must print to EXPECTED`).toBeDefined();
        // A temporary directory of its own, so that anything it leaves behind is seen.
        const tmp = await realpath(await mkdtemp(join(tmpdir(), "workcell-test-")));
        try {
          const result = await run(file, { ...process.env, TMPDIR: tmp });
          expect({ code: result.code, signal: result.signal, stderr: result.stderr }).toMatchObject({ code: 0, signal: null });
          for (const pattern of EXPECTED[file]!) expect(result.stdout).toMatch(pattern);
          expect(await readdir(tmp)).toEqual([]);
        } finally {
          await rm(tmp, { recursive: true, force: true });
        }
      },
      TIMEOUT_MS,
    );
  }
});
