// The sandbox around what node_process, run_command and run_tests start: children that try to read
// a file outside the workspace and to connect to a local TCP listener, with the `sandbox` report of
// each result, then a node:test file run confined by run_tests. Run: node examples/sandbox.mjs
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNodeProcessTool, createRunCommandTool, createRunTestsTool, sandboxSupport } from "workcell";

console.log("this system offers:", JSON.stringify(sandboxSupport()));

const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-example-")));
const workspace = join(parent, "workspace");
const secret = join(parent, "secret.txt"); // next to the workspace: outside it
let connections = 0; // what the listener accepted, counted on the host's side
const listener = createServer((socket) => {
  connections++;
  socket.destroy();
});
const signal = new AbortController().signal;
// A tool called directly: validate (no effects), then execute.
const run = (tool, input) => tool.execute(tool.validate(input), { signal });
const indent = (text) => text.trim().split("\n").map((line) => (line ? `    ${line}` : "")).join("\n");

try {
  await mkdir(workspace);
  await writeFile(secret, "TOP-SECRET-VALUE\n");
  await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
  const port = String(listener.address().port);
  const leaks = []; // calls whose output contains the secret

  // 1. node_process: the script itself and a program it starts. The default sandbox is "auto":
  //    whatever this system offers, reported in `sandbox`.
  const script = `
const fs = require("node:fs"), net = require("node:net"), cp = require("node:child_process");
const [secret, port] = process.argv.slice(1);
try { console.log("fs.readFileSync(secret): read " + JSON.stringify(fs.readFileSync(secret, "utf8"))); }
catch (e) { console.log("fs.readFileSync(secret): refused, " + e.code); }
const cat = cp.spawnSync("cat", [secret], { encoding: "utf8" });
console.log("a child running cat secret: " + (cat.status === 0 ? "read " + JSON.stringify(cat.stdout) : "refused, " + cat.stderr.trim()));
const s = net.connect(+port, "127.0.0.1", () => { console.log("net.connect(127.0.0.1): connected"); s.end(); });
s.on("error", (e) => console.log("net.connect(127.0.0.1): refused, " + e.code));
`;
  const nodeProcess = createNodeProcessTool(workspace, { timeoutMs: 10_000 });
  const np = await run(nodeProcess, { source: script, arguments: [secret, port] });
  console.log(`\nnode_process (exit ${np.exitCode}):\n${indent(np.stdout + np.stderr)}`);
  console.log("  sandbox:", JSON.stringify(np.sandbox));
  if (np.stdout.includes("TOP-SECRET")) leaks.push("node_process");

  // 2. run_command: the same attempts as an argv (no shell string; the command policy checks it first).
  const runCommand = createRunCommandTool(workspace, { timeoutMs: 10_000 });
  const cat = await run(runCommand, { argv: ["cat", secret] });
  console.log(`\nrun_command ["cat", secret] (exit ${cat.exitCode}):\n${indent(cat.output)}`);
  console.log("  sandbox:", JSON.stringify(cat.sandbox));
  if (cat.output.includes("TOP-SECRET")) leaks.push("run_command cat");
  const connectSource =
    "const s = require('net').connect(+process.argv[1], '127.0.0.1', () => { console.log('connected'); s.end(); });" +
    "s.on('error', (e) => console.log('refused, ' + e.code));";
  const connect = await run(runCommand, { argv: ["node", "-e", connectSource, port] });
  console.log(`\nrun_command ["node", "-e", <connect to 127.0.0.1:${port}>] (exit ${connect.exitCode}):\n${indent(connect.output)}`);

  // 3. run_tests: a node:test file runs confined too. Its second test passes only because the
  //    sandbox refuses the read.
  await writeFile(
    join(workspace, "confined.test.mjs"),
    `import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
test("works inside the workspace", () => {
  writeFileSync("out.txt", "ok");
  assert.equal(readFileSync("out.txt", "utf8"), "ok");
});
test("cannot read outside it", () => {
  assert.throws(() => readFileSync(${JSON.stringify(secret)}), { code: "EACCES" });
});
`,
  );
  const runTests = createRunTestsTool(workspace, { timeoutMs: 60_000 });
  const tests = await run(runTests, { runner: "node", args: ["confined.test.mjs"] });
  console.log(`\nrun_tests node confined.test.mjs: ${tests.passed} passed, ${tests.failed} failed`);
  console.log(indent(tests.report));
  console.log("  sandbox:", JSON.stringify(tests.sandbox));

  console.log(`\nconfined children: ${leaks.length} read the secret, ${connections} reached the listener`);

  // For contrast, the same node_process script with the sandbox off reads the secret and connects.
  const open = createNodeProcessTool(workspace, { timeoutMs: 10_000, sandbox: "off" });
  const off = await run(open, { source: script, arguments: [secret, port] });
  console.log(`\nthe same script with sandbox: "off":\n${indent(off.stdout + off.stderr)}`);
  console.log("  sandbox:", JSON.stringify(off.sandbox));
} finally {
  listener.close();
  await rm(parent, { recursive: true, force: true });
}
