// toAISDKProviderTools through the real AI SDK (ai@6, @ai-sdk/anthropic and @ai-sdk/openai 3):
// a mock language model emits the providers' own tool calls and generateText gets workcell's
// results back.
import { readFile, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generateText, stepCountIs } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { describe, expect, test } from "vitest";
import { toAISDKProviderTools } from "workcell/ai";
import { closeTools, createCodingTools } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";
import { fakeSessionTools } from "./process-session-fake.js";
import { PRIMES_PY, openaiApplyPatch as P } from "./provider-fixtures.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function calls(...list: { id: string; name: string; input: unknown }[]) {
  return {
    content: list.map((c) => ({ type: "tool-call" as const, toolCallId: c.id, toolName: c.name, input: JSON.stringify(c.input) })),
    finishReason: { unified: "tool-calls" as const, raw: "tool_use" },
    usage,
    warnings: [],
  };
}

const done = { content: [{ type: "text" as const, text: "done" }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] };

function toolParts(prompt: readonly { role: string; content: unknown }[]): any[] {
  return prompt.filter((m) => m.role === "tool").flatMap((m) => m.content as any[]);
}

describe("toAISDKProviderTools", () => {
  test("built_with_the_providers_own_factories", async () => {
    const { root } = await tempWorkspace();
    const coding = createCodingTools(root);
    try {
      // createCodingTools includes the process sessions, so bash is there too.
      const tools = toAISDKProviderTools(coding);
      expect(Object.keys(tools).sort()).toEqual(["apply_patch", "bash", "shell", "str_replace_based_edit_tool"]);
      expect(tools.str_replace_based_edit_tool).toMatchObject({ type: "provider", id: "anthropic.text_editor_20250728" });
      expect(tools.bash).toMatchObject({ type: "provider", id: "anthropic.bash_20250124" });
      expect(tools.apply_patch).toMatchObject({ type: "provider", id: "openai.apply_patch" });
      expect(tools.shell).toMatchObject({ type: "provider", id: "openai.shell" });
      // Without the session tools there is no bash.
      const noSessions = toAISDKProviderTools(coding.filter((t) => !t.name.endsWith("_process") && t.name !== "list_processes"));
      expect(Object.keys(noSessions).sort()).toEqual(["apply_patch", "shell", "str_replace_based_edit_tool"]);
    } finally {
      await closeTools(coding);
    }
  });

  test("anthropic_text_editor_calls_get_workcells_results", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "primes.py"), PRIMES_PY);
    const canonical = await realpath(root);
    const model = new MockLanguageModelV3({
      doGenerate: [
        calls(
          { id: "t1", name: "str_replace_based_edit_tool", input: { command: "view", path: "primes.py", view_range: [19, 19] } },
          { id: "t2", name: "str_replace_based_edit_tool", input: { command: "str_replace", path: `${canonical}/primes.py`, old_str: "    for num in range(2, limit + 1)", new_str: "    for num in range(2, limit + 1):" } },
          { id: "t3", name: "str_replace_based_edit_tool", input: { command: "view", path: "/etc/passwd" } },
        ),
        done,
      ],
    });
    const { str_replace_based_edit_tool } = toAISDKProviderTools(createCodingTools(root));
    const result = await generateText({ model, tools: { str_replace_based_edit_tool: str_replace_based_edit_tool! }, prompt: "fix primes.py", stopWhen: stepCountIs(3) });
    expect(result.text).toBe("done");
    // The provider tool reached the model as Anthropic's own tool.
    expect(model.doGenerateCalls[0]!.tools).toEqual([
      { type: "provider", id: "anthropic.text_editor_20250728", name: "str_replace_based_edit_tool", args: {} },
    ]);
    const parts = toolParts(model.doGenerateCalls[1]!.prompt as any);
    expect(parts.map((p) => [p.toolCallId, p.output])).toEqual([
      ["t1", { type: "text", value: "19:     for num in range(2, limit + 1)" }],
      ["t2", { type: "text", value: "Successfully replaced text at exactly one location." }],
      ["t3", { type: "error-text", value: expect.stringContaining("PATH_ESCAPES_WORKSPACE") }],
    ]);
    expect(await readFile(join(root, "primes.py"), "utf8")).toContain("limit + 1):\n");
  });

  test("openai_apply_patch_and_shell_calls_get_workcells_results", async () => {
    const { root } = await tempWorkspace();
    const model = new MockLanguageModelV3({
      doGenerate: [
        calls({ id: "p1", name: "apply_patch", input: { callId: P.createFile.call_id, operation: P.createFile.operation } }),
        calls(
          { id: "p2", name: "apply_patch", input: { callId: "call_x", operation: { type: "create_file", path: "../escape.py", diff: "+x\n" } } },
          { id: "s1", name: "shell", input: { action: { commands: ["wc -l lib/fib.py", "sudo id"], timeoutMs: 10000, maxOutputLength: 1000 } } },
        ),
        done,
      ],
    });
    const { apply_patch, shell } = toAISDKProviderTools(createCodingTools(root));
    const result = await generateText({ model, tools: { apply_patch: apply_patch!, shell: shell! }, prompt: "write fib", stopWhen: stepCountIs(4) });
    expect(result.text).toBe("done");
    expect(model.doGenerateCalls[0]!.tools!.map((t: any) => [t.type, t.id, t.name])).toEqual([
      ["provider", "openai.apply_patch", "apply_patch"],
      ["provider", "openai.shell", "shell"],
    ]);
    expect(result.steps[0]!.toolResults[0]).toMatchObject({ toolName: "apply_patch", output: { status: "completed", output: "Created lib/fib.py" } });
    expect(await readFile(join(root, "lib/fib.py"), "utf8")).toBe(P.fib);
    const second = result.steps[1]!.toolResults;
    expect(second.find((r) => r.toolCallId === "p2")!.output).toMatchObject({ status: "failed", output: expect.stringContaining("INVALID_RELATIVE_PATH") });
    expect(second.find((r) => r.toolCallId === "s1")!.output).toEqual({
      output: [
        { stdout: "4 lib/fib.py\n", stderr: "", outcome: { type: "exit", exitCode: 0 } },
        { stdout: "", stderr: expect.stringContaining("COMMAND_REFUSED"), outcome: { type: "exit", exitCode: 126 } },
      ],
    });
  });

  test("anthropic_bash_calls_share_one_shell", async () => {
    const { root } = await tempWorkspace();
    const fake = fakeSessionTools(root);
    try {
      const model = new MockLanguageModelV3({
        doGenerate: [
          calls({ id: "b1", name: "bash", input: { command: "export GREETING=hello" } }),
          calls({ id: "b2", name: "bash", input: { command: "echo $GREETING" } }),
          // @ai-sdk/anthropic's schema for bash_20250124 requires `command`, so a restart goes
          // through the SDK with one (the tool's own `{ restart: true }` is tested directly).
          calls({ id: "b3", name: "bash", input: { command: "", restart: true } }),
          done,
        ],
      });
      const { bash } = toAISDKProviderTools(fake.tools);
      const result = await generateText({ model, tools: { bash: bash! }, prompt: "greet", stopWhen: stepCountIs(5) });
      expect(result.steps.map((s) => s.toolResults[0]?.output)).toEqual([
        { content: "", is_error: false },
        { content: "hello", is_error: false },
        { content: "tool has been restarted.", is_error: false },
        undefined,
      ]);
      expect(toolParts(model.doGenerateCalls[2]!.prompt as any).at(-1).output).toEqual({ type: "text", value: "hello" });
      expect(fake.running()).toEqual([]);
    } finally {
      fake.close();
    }
  });
});
