// The tools the providers train their models on, answered by workcell: Anthropic's text editor
// (text_editor_20250728) and OpenAI's apply_patch, fed the calls a model sends, an escape
// attempt included. No model and no network: the calls are the ones the providers document.
// Run: node examples/provider-tools.mjs
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCodingTools } from "workcell";
import { textEditor } from "workcell/anthropic";
import { applyPatch } from "workcell/openai";

const workspace = await mkdtemp(join(tmpdir(), "workcell-example-"));
try {
  await writeFile(join(workspace, "primes.py"), "def get_primes(limit):\n    for num in range(2, limit + 1)\n        yield num\n");
  const tools = createCodingTools(workspace);

  // Anthropic: messages.create({ tools: [editor.definition] }) answers with tool_use blocks.
  const editor = textEditor(tools);
  console.log("anthropic tool:", JSON.stringify(editor.definition));
  for (const input of [
    { command: "view", path: "primes.py" },
    { command: "str_replace", path: "primes.py", old_str: "    for num in range(2, limit + 1)", new_str: "    for num in range(2, limit + 1):" },
    { command: "view", path: "/etc/passwd" },
  ]) {
    const result = await editor.answer({ type: "tool_use", id: "toolu_1", name: "str_replace_based_edit_tool", input });
    console.log(`> ${JSON.stringify(input)}\n${result.is_error ? "is_error" : "ok"}: ${result.content}`);
  }

  // OpenAI: responses.create({ tools: [patcher.definition] }) answers with apply_patch_call items.
  const patcher = applyPatch(tools);
  console.log("openai tool:", JSON.stringify(patcher.definition));
  for (const operation of [
    { type: "create_file", path: "test_primes.py", diff: "+from primes import get_primes\n+assert list(get_primes(3)) == [2, 3]\n" },
    { type: "create_file", path: "../escape.py", diff: "+print('out')\n" },
  ]) {
    const output = await patcher.handle({ type: "apply_patch_call", call_id: "call_1", operation });
    console.log(`> ${operation.type} ${operation.path}\n${output.status}: ${output.output}`);
  }
  console.log("primes.py now:", JSON.stringify(await readFile(join(workspace, "primes.py"), "utf8")));
} finally {
  await rm(workspace, { recursive: true, force: true });
}
