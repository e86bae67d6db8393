// Progress through the adapters (contract §18): MCP `notifications/progress` for a request with a
// progress token (stdio and HTTP, tasks included), the AI SDK's preliminary tool results seen
// by streamText, Pi's onUpdate.
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CallToolResultSchema, type Progress as McpProgress } from "@modelcontextprotocol/sdk/types.js";
import { stepCountIs, streamText } from "ai";
import { MockLanguageModelV3, convertArrayToReadableStream } from "ai/test";
import { afterEach, describe, expect, test } from "vitest";
import { createMcpHttpServer, createMcpServer, type McpHttpServer } from "workcell/mcp";
import { toAISDKTools } from "workcell/ai";
import { toPiTools } from "workcell/pi";
import { createCodingTools } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

const BIN = fileURLToPath(new URL("../bin/workcell.mjs", import.meta.url));
/** Prints `step 1` … `step 10`, one every 100 ms. */
const STEPS = ["sh", "-c", "for i in 1 2 3 4 5 6 7 8 9 10; do echo step $i; sleep 0.1; done"];

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  while (closers.length) await closers.pop()!().catch(() => undefined);
});

function checkNotifications(seen: McpProgress[], resultText: string): void {
  expect(seen.length).toBeGreaterThanOrEqual(2);
  for (let i = 1; i < seen.length; i++) expect(seen[i]!.progress).toBeGreaterThan(seen[i - 1]!.progress);
  expect(seen.some((p) => /step \d/.test(p.message ?? ""))).toBe(true);
  expect(resultText).toContain("step 10");
}

describe("progress: MCP notifications/progress", () => {
  test("stdio (`workcell mcp`): a call with a progress token gets notifications while it runs", async () => {
    const { root } = await tempWorkspace();
    const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", "--root", root], stderr: "pipe" });
    const client = new Client({ name: "workcell-test", version: "1.0.0" });
    await client.connect(transport);
    closers.push(() => client.close());
    const seen: McpProgress[] = [];
    const result = await client.callTool({ name: "run_command", arguments: { argv: STEPS } }, CallToolResultSchema, {
      onprogress: (p) => void seen.push(p),
    });
    expect(result.isError).toBeFalsy();
    checkNotifications(seen, JSON.stringify(result.content));
    // Without a token, no notification (the call is not watched).
    const quiet: unknown[] = [];
    client.setNotificationHandler((await import("@modelcontextprotocol/sdk/types.js")).ProgressNotificationSchema, (n) => void quiet.push(n));
    await client.callTool({ name: "run_command", arguments: { argv: STEPS } });
    expect(quiet).toEqual([]);
  });

  test("Streamable HTTP: the same notifications, on the session's stream (requests are answered with JSON)", async () => {
    const { root } = await tempWorkspace();
    const token = "test-token-0123456789abcdef";
    const server: McpHttpServer = createMcpHttpServer(root, { token });
    closers.push(() => server.close());
    const { url } = await server.listen();
    const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${token}` } } });
    const client = new Client({ name: "workcell-test", version: "1.0.0" });
    await client.connect(transport);
    closers.push(() => client.close());
    const seen: McpProgress[] = [];
    const result = await client.callTool({ name: "run_command", arguments: { argv: STEPS } }, CallToolResultSchema, {
      onprogress: (p) => void seen.push(p),
    });
    expect(result.isError).toBeFalsy();
    checkNotifications(seen, JSON.stringify(result.content));
  });

  test("a task (run_tests) reports progress with the token of the request that created it", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "test"));
    const tests = Array.from({ length: 8 }, (_, i) => `test("t${i}", async () => { await new Promise((r) => setTimeout(r, 150)); });`);
    await writeFile(join(root, "test", "a.test.js"), `const test = require("node:test");\n${tests.join("\n")}\n`);
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    const server = createMcpServer(createCodingTools(root));
    await server.connect(serverSide);
    const client = new Client({ name: "workcell-test", version: "1.0.0" });
    await client.connect(clientSide);
    closers.push(() => client.close());
    const progress: unknown[] = [];
    const { ProgressNotificationSchema } = await import("@modelcontextprotocol/sdk/types.js");
    client.setNotificationHandler(ProgressNotificationSchema, (n) => void progress.push(n.params));
    const created = (await client.request(
      { method: "tools/call", params: { name: "run_tests", arguments: { runner: "node" }, task: { ttl: 60_000 }, _meta: { progressToken: "tok-1" } } },
      (await import("@modelcontextprotocol/sdk/types.js")).CreateTaskResultSchema,
    )) as { task: { taskId: string } };
    expect(created.task.taskId).toBeTruthy();
    await new Promise<void>((resolve) => {
      const poll = async () => {
        const t = (await client.request({ method: "tasks/get", params: { taskId: created.task.taskId } }, (await import("@modelcontextprotocol/sdk/types.js")).GetTaskResultSchema)) as { status: string };
        if (t.status === "working") setImmediate(() => void poll());
        else resolve();
      };
      void poll();
    });
    expect(progress.length).toBeGreaterThanOrEqual(1);
    for (const p of progress) expect(p).toMatchObject({ progressToken: "tok-1" });
    expect(progress.some((p) => /\d+ passed, \d+ failed/.test((p as { message?: string }).message ?? ""))).toBe(true);
  });
});

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

describe("progress: AI SDK preliminary tool results", () => {
  test("streamText sees preliminary results while run_command runs, then the result", async () => {
    const { root } = await tempWorkspace();
    const model = new MockLanguageModelV3({
      doStream: [
        {
          stream: convertArrayToReadableStream([
            { type: "stream-start", warnings: [] },
            { type: "tool-call", toolCallId: "c1", toolName: "run_command", input: JSON.stringify({ argv: STEPS }) },
            { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage },
          ] as any),
        },
        {
          stream: convertArrayToReadableStream([
            { type: "stream-start", warnings: [] },
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: "done" },
            { type: "text-end", id: "t" },
            { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
          ] as any),
        },
      ],
    });
    const tools = createCodingTools(root);
    closers.push(async () => {
      for (const t of tools) await t.close?.();
    });
    const result = streamText({ model, tools: toAISDKTools(tools), prompt: "x", stopWhen: stepCountIs(3) });
    const results: { preliminary?: boolean; output: any }[] = [];
    for await (const part of result.fullStream) {
      if (part.type === "tool-result") results.push(part as any);
    }
    const preliminary = results.filter((r) => r.preliminary && r.output?.progress !== undefined);
    expect(preliminary.length).toBeGreaterThanOrEqual(2);
    expect(preliminary.map((r) => r.output.progress.output ?? "").join("")).toContain("step 1\n");
    const final = results.filter((r) => !r.preliminary);
    expect(final).toHaveLength(1);
    expect(final[0]!.output.exitCode).toBe(0);
    expect(final[0]!.output.output).toContain("step 10");
    // The model's next step got the result, not a progress value.
    const steps = await result.steps;
    expect(steps[0]!.toolResults[0]!.output).toEqual(final[0]!.output);
    expect(await result.text).toBe("done");
  });

  test("calling execute directly still resolves to the result", async () => {
    const { root } = await tempWorkspace();
    const tools = toAISDKTools(createCodingTools(root));
    const out = (await tools.run_command!.execute!({ argv: ["sh", "-c", "echo hi"] }, { toolCallId: "d1", messages: [] })) as { output: string };
    expect(out.output).toBe("hi\n");
  });
});

describe("progress: Pi onUpdate", () => {
  test("onUpdate gets partial results with the output so far", async () => {
    const { root } = await tempWorkspace();
    const pi = toPiTools(createCodingTools(root));
    const run = pi.find((t) => t.name === "run_command")!;
    const partials: { content: { text: string }[]; details: { progress: { elapsedMs: number } } }[] = [];
    const out = await run.execute("c1", { argv: STEPS }, undefined, (p) => void partials.push(p as any));
    expect(partials.length).toBeGreaterThanOrEqual(2);
    expect(partials.at(-1)!.content[0]!.text).toMatch(/step 1\n/);
    expect(typeof partials[0]!.details.progress.elapsedMs).toBe("number");
    expect((out.details as { output: string }).output).toContain("step 10");
  });
});
