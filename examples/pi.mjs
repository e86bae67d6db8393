// Pi's agent (@mariozechner/pi-agent-core) with workcell's tools through `workcell/pi`. pi-ai's faux
// provider plays a scripted model (use any Pi model instead): it runs the failing test, fixes the
// code with edit_file, runs the tests again, and follows a symlink out of the workspace. Run: node examples/pi.mjs
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Agent } from "@mariozechner/pi-agent-core";
import { fauxAssistantMessage, fauxText, fauxToolCall, registerFauxProvider } from "@mariozechner/pi-ai";
import { createCodingTools } from "workcell";
import { toPiTools } from "workcell/pi";

const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-example-")));
const workspace = join(parent, "workspace");
const faux = registerFauxProvider();
try {
  await mkdir(join(workspace, "src"), { recursive: true });
  await mkdir(join(workspace, "test"));
  await writeFile(join(workspace, "src", "greet.js"), 'exports.greet = (name) => "helo " + name;\n');
  await writeFile(
    join(workspace, "test", "greet.test.js"),
    'const test = require("node:test");\nconst assert = require("node:assert");\nconst { greet } = require("../src/greet.js");\n' +
      'test("greets by name", () => assert.strictEqual(greet("Ada"), "hello Ada"));\n',
  );
  await writeFile(join(parent, "secret.txt"), "TOP-SECRET-VALUE\n"); // outside the workspace
  await symlink("../secret.txt", join(workspace, "notes.txt")); // inside, but leads outside

  const toolUse = { stopReason: "toolUse" };
  faux.setResponses([
    fauxAssistantMessage(fauxToolCall("run_tests", { runner: "node" }), toolUse),
    fauxAssistantMessage(fauxToolCall("edit_file", { path: "src/greet.js", edits: [{ oldText: '"helo "', newText: '"hello "' }] }), toolUse),
    fauxAssistantMessage(fauxToolCall("run_tests", { runner: "node" }), toolUse),
    fauxAssistantMessage(fauxToolCall("read_file", { path: "notes.txt" }), toolUse),
    fauxAssistantMessage(fauxText("Fixed the typo in src/greet.js; the test passes. notes.txt points outside the workspace.")),
  ]);

  const agent = new Agent({ initialState: { model: faux.getModel(), tools: toPiTools(createCodingTools(workspace)) } });
  agent.subscribe((event) => {
    if (event.type === "tool_execution_start") console.log(`\n> ${event.toolName} ${JSON.stringify(event.args)}`);
    if (event.type === "tool_execution_end") {
      // Success: details is the tool's output object. A refusal: the text is the error JSON the model reads.
      const r = event.result;
      if (event.isError) console.log(`error: ${r.content[0].text}`);
      else if (event.toolName === "run_tests") console.log(`ok: ${r.details.passed} passed, ${r.details.failed} failed\n${r.details.report.trim()}`);
      else if (event.toolName === "edit_file") console.log(`ok: ${r.details.edits} edit\n${r.details.diff.trim()}`);
      else console.log(`ok: ${JSON.stringify(r.details)}`);
    }
  });
  await agent.prompt("The greeting test fails. Fix it, then show me notes.txt.");
  const last = agent.state.messages.at(-1);
  console.log(`\nassistant: ${last.content.map((c) => c.text).join("")}`);
} finally {
  faux.unregister();
  await rm(parent, { recursive: true, force: true });
}
