// Vercel AI SDK (ai@6) running workcell's tools through `workcell/ai`. A scripted mock model stands in
// for a real one (swap in any AI SDK model): it writes a file, runs it, reads it back and tries to
// escape the workspace, and gets the refusal's code and hint back. Run: node examples/ai-sdk.mjs
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { createCodingTools } from "workcell";
import { toAISDKTools } from "workcell/ai";

// What a provider returns for one step: a tool call, or the final text.
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
let calls = 0;
const toolCall = (toolName, input) => ({
  content: [{ type: "tool-call", toolCallId: `call-${++calls}`, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: "tool_calls" },
  usage,
  warnings: [],
});
const text = (t) => ({ content: [{ type: "text", text: t }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] });

const short = (value) => {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s.length > 200 ? `${s.slice(0, 200)}...` : s;
};

const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-example-")));
const workspace = join(parent, "workspace");
try {
  await mkdir(workspace);
  await writeFile(join(parent, "secret.txt"), "TOP-SECRET-VALUE\n"); // outside the workspace

  const model = new MockLanguageModelV3({
    doGenerate: [
      toolCall("write_file", { path: "src/sum.js", content: "console.log([1, 2, 3].reduce((a, b) => a + b, 0));\n" }),
      toolCall("run_command", { argv: ["node", "src/sum.js"] }),
      toolCall("read_file", { path: "src/sum.js" }),
      toolCall("read_file", { path: "../secret.txt" }),
      text("src/sum.js prints 6; ../secret.txt is outside the workspace, so I stayed inside."),
    ],
  });

  const result = await generateText({
    model,
    tools: toAISDKTools(createCodingTools(workspace)),
    stopWhen: stepCountIs(10),
    prompt: "Write a script that sums 1, 2 and 3, run it, and show me ../secret.txt",
  });

  for (const [i, step] of result.steps.entries()) {
    console.log(`\nstep ${i + 1}`);
    for (const part of step.content) {
      if (part.type === "tool-call") console.log(`  > ${part.toolName} ${JSON.stringify(part.input)}`);
      else if (part.type === "tool-result") console.log(`  result: ${short(part.output)}`);
      // A refusal is a tool-error part: the error is workcell's ToolCallError (code, toolError.hint),
      // and the model receives its message, the {"error":{code,message,hint}} JSON, as the call's result.
      else if (part.type === "tool-error") console.log(`  refused: ${part.error.code} (${part.error.toolError.message}): ${part.error.toolError.hint}`);
      else if (part.type === "text") console.log(`  text: ${part.text}`);
    }
  }
  // What the model was sent back for the refused call, in its next request:
  const refusal = model.doGenerateCalls[4].prompt
    .filter((m) => m.role === "tool")
    .flatMap((m) => m.content)
    .find((p) => p.toolCallId === "call-4");
  console.log(`\nthe model read, for call-4: ${refusal.output.type} ${refusal.output.value}`);
  console.log(`\nfinal text: ${result.text}`);
} finally {
  await rm(parent, { recursive: true, force: true });
}
