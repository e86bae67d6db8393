// workcell/ai through the real AI SDK (ai@6): a mock language model issues tool calls and
// generateText / streamText execute them through toAISDKTools.
import { generateText, stepCountIs, streamText } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { describe, expect, test } from "vitest";
import { ToolCallError, toAISDKTools } from "workcell/ai";
import { ToolError, createCodingTools, createReadTool } from "../dist/index.js";
import { tempWorkspace, workspaceWithFile, waitingTool } from "./helpers.js";

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

function toolCallStep(toolName: string, input: unknown, toolCallId = "call-1") {
  return {
    content: [{ type: "tool-call" as const, toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  };
}

function textStep(text: string) {
  return { content: [{ type: "text" as const, text }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] };
}

/** The tool message of a prompt the model received. */
function toolMessages(prompt: readonly { role: string; content: unknown }[]): any[] {
  return prompt.filter((m) => m.role === "tool").flatMap((m) => m.content as any[]);
}

describe("toAISDKTools", () => {
  test("gives the SDK each tool's description and JSON Schema, keyed by name", async () => {
    const { root } = await tempWorkspace();
    const coding = createCodingTools(root);
    const tools = toAISDKTools(coding);
    expect(Object.keys(tools)).toEqual(coding.map((t) => t.name));
    const model = new MockLanguageModelV3({ doGenerate: textStep("nothing to do") });
    await generateText({ model, tools, prompt: "hi" });
    const sent = model.doGenerateCalls[0]!.tools!;
    expect(sent.map((t) => t.name)).toEqual(coding.map((t) => t.name));
    for (const t of coding) {
      const s = sent.find((x) => x.name === t.name) as any;
      expect(s.type).toBe("function");
      expect(s.description).toBe(t.description);
      expect(s.inputSchema).toEqual(t.parameters);
    }
  });

  test("generateText executes the model's tool call and the model reads the output next step", async () => {
    const { root } = await workspaceWithFile();
    const model = new MockLanguageModelV3({
      doGenerate: [toolCallStep("read_file", { path: "src//a.txt" }), textStep("the file says alpha")],
    });
    const result = await generateText({ model, tools: toAISDKTools(createCodingTools(root)), prompt: "read it", stopWhen: stepCountIs(5) });
    expect(result.text).toBe("the file says alpha");
    const first = result.steps[0]!;
    expect(first.toolResults).toHaveLength(1);
    expect(first.toolResults[0]).toMatchObject({
      toolName: "read_file",
      toolCallId: "call-1",
      output: { path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" },
    });
    // What the model got back in the second request:
    const [part] = toolMessages(model.doGenerateCalls[1]!.prompt as any);
    expect(part).toMatchObject({ type: "tool-result", toolCallId: "call-1", toolName: "read_file" });
    expect(part.output).toEqual({ type: "json", value: { path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" } });
  });

  test("a refused call reaches the model as an error result carrying the code and hint, and it recovers", async () => {
    const { root } = await workspaceWithFile();
    const model = new MockLanguageModelV3({
      doGenerate: [
        toolCallStep("read_file", { path: "../secret.txt" }, "bad"),
        toolCallStep("read_file", { path: "link" }, "escape"),
        toolCallStep("read_file", { path: "src/a.txt" }, "good"),
        textStep("done"),
      ],
    });
    const result = await generateText({ model, tools: toAISDKTools(createCodingTools(root)), prompt: "x", stopWhen: stepCountIs(6) });
    expect(result.text).toBe("done");

    // The app sees an SDK tool-error part whose error is a ToolCallError with the code.
    const errorPart = result.steps[0]!.content.find((p) => p.type === "tool-error") as any;
    expect(errorPart).toBeDefined();
    expect(errorPart.error).toBeInstanceOf(ToolCallError);
    expect(errorPart.error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", toolName: "read_file", toolCallId: "bad" });
    expect(errorPart.error.toolError).toBeInstanceOf(ToolError);
    expect(errorPart.error.toolError.message).toBe("INVALID_RELATIVE_PATH");

    // The model sees the error JSON, code and hint included, as the call's error output.
    const [refused] = toolMessages(model.doGenerateCalls[1]!.prompt as any);
    expect(refused.toolCallId).toBe("bad");
    expect(refused.output.type).toBe("error-text");
    const body = JSON.parse(refused.output.value);
    expect(body.error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "INVALID_RELATIVE_PATH" });
    expect(body.error.hint).toMatch(/relative to the workspace/);

    const escape = toolMessages(model.doGenerateCalls[2]!.prompt as any).find((p) => p.toolCallId === "escape");
    expect(JSON.parse(escape.output.value).error.code).toBe("PATH_ESCAPES_WORKSPACE");
    expect(escape.output.value).not.toContain("TOP-SECRET-VALUE");

    const good = toolMessages(model.doGenerateCalls[3]!.prompt as any).find((p) => p.toolCallId === "good");
    expect(good.output).toEqual({ type: "json", value: { path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" } });
  });

  test('errors: "result" returns the error object as an ordinary tool result', async () => {
    const { root } = await workspaceWithFile();
    const model = new MockLanguageModelV3({ doGenerate: [toolCallStep("read_file", { path: "src/missing.txt" }), textStep("ok")] });
    const result = await generateText({
      model,
      tools: toAISDKTools(createCodingTools(root), { errors: "result" }),
      prompt: "x",
      stopWhen: stepCountIs(3),
    });
    expect(result.steps[0]!.content.some((p) => p.type === "tool-error")).toBe(false);
    const output = result.steps[0]!.toolResults[0]!.output as any;
    expect(output.error).toMatchObject({ code: "FILE_NOT_FOUND", hint: expect.any(String) });
    const [part] = toolMessages(model.doGenerateCalls[1]!.prompt as any);
    expect(part.output.type).toBe("json");
    expect(part.output.value.error.code).toBe("FILE_NOT_FOUND");
  });

  test("streamText executes the streamed tool call too", async () => {
    const { root } = await workspaceWithFile();
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: convertArrayToReadableStream([
            { type: "stream-start", warnings: [] },
            { type: "tool-call", toolCallId: "s1", toolName: "read_file", input: JSON.stringify({ path: "src/a.txt" }) },
            { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage },
          ] as any),
        },
        {
          stream: convertArrayToReadableStream([
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "read" },
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
          ] as any),
        },
      ],
    });
    const result = streamText({ model, tools: toAISDKTools(createCodingTools(root)), prompt: "x", stopWhen: stepCountIs(3) });
    expect(await result.text).toBe("read");
    const steps = await result.steps;
    expect(steps[0]!.toolResults[0]!.output).toEqual({ path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" });
  });

  test("cancellation: the SDK's abortSignal reaches the tool, execute rejects with an AbortError, generateText stops", async () => {
    const slow = waitingTool();
    const model = new MockLanguageModelV3({ doGenerate: [toolCallStep("slow", {}), textStep("never reached")] });
    const controller = new AbortController();
    const run = generateText({ model, tools: toAISDKTools([slow.tool]), prompt: "x", stopWhen: stepCountIs(3), abortSignal: controller.signal });
    await slow.running;
    controller.abort();
    const err = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error | undefined)?.name).toBe("AbortError");
    expect(slow.signal?.aborted).toBe(true);
    expect(model.doGenerateCalls).toHaveLength(1);

    // The adapter itself: an aborted call rejects with an AbortError, never a result or a ToolCallError.
    const { root } = await tempWorkspace();
    const read = toAISDKTools([createReadTool(root)]).read_file!;
    const aborted = new AbortController();
    aborted.abort();
    await expect(
      Promise.resolve(read.execute!({ path: "a.txt" }, { toolCallId: "x", messages: [], abortSignal: aborted.signal })),
    ).rejects.toMatchObject({ name: "AbortError" });
  });

  test("execute works without an abortSignal and keeps the tool's own validation", async () => {
    const { root } = await workspaceWithFile();
    const read = toAISDKTools([createReadTool(root)]).read_file!;
    await expect(Promise.resolve(read.execute!({ path: "src/a.txt" }, { toolCallId: "x", messages: [] }))).resolves.toEqual({
      path: "src/a.txt",
      content: "alpha\n",
      bytes: 6,
      hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060",
    });
    const err = await Promise.resolve(read.execute!({ path: "a.txt", extra: 1 } as { path: string }, { toolCallId: "y", messages: [] })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ToolCallError);
    expect(JSON.parse((err as Error).message).error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "INVALID_ARGUMENTS_SHAPE" });
  });
});
