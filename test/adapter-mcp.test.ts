// workcell/mcp in process: the MCP SDK's own Client talks to createMcpServer over an in-memory
// transport. (test/cli-mcp.test.ts does the same through the `workcell mcp` command over stdio.)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { CreateTaskResultSchema, ErrorCode, McpError } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, test } from "vitest";
import { EFFECT_ANNOTATIONS, createMcpServer } from "workcell/mcp";
import { ToolRegistry, closeTools, createCodingTools, createReadTool, type Tool } from "../dist/index.js";
import { workspaceWithFile } from "./helpers.js";

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

async function connect(server: ReturnType<typeof createMcpServer>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: "workcell-test", version: "1.0.0" });
  await client.connect(clientSide);
  open.push(client, server);
  return client;
}

function fakeTool(name: string, execute: Tool<string, unknown, unknown>["execute"] = async () => ({ ok: name })): Tool<string, unknown, unknown> {
  return {
    name,
    description: `fake ${name}`,
    parameters: { type: "object", properties: {}, additionalProperties: false },
    validate: (input) => input,
    execute,
  };
}

/** A tool that runs until its AbortSignal fires, and records what it saw. */
function slowTool() {
  let started!: () => void;
  let settled!: () => void;
  const state = {
    running: new Promise<void>((r) => (started = r)),
    settled: new Promise<void>((r) => (settled = r)),
    signal: undefined as AbortSignal | undefined,
    reason: undefined as unknown,
  };
  const tool = fakeTool("slow", (_input, { signal }) => {
    state.signal = signal;
    started();
    return new Promise((_resolve, reject) => {
      signal.addEventListener(
        "abort",
        () => {
          state.reason = signal.reason;
          // Settle a little later, as a process tool does once it has killed its group.
          setTimeout(() => {
            settled();
            reject(Object.assign(new Error("aborted"), { name: "AbortError" }));
          }, 50);
        },
        { once: true },
      );
    });
  });
  return { tool, state };
}

describe("createMcpServer", () => {
  test("initialize: the server names itself and offers tools", async () => {
    const { root } = await workspaceWithFile();
    const client = await connect(createMcpServer(createCodingTools(root)));
    expect(client.getServerVersion()).toMatchObject({ name: "workcell", version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(client.getServerCapabilities()?.tools).toBeDefined();
    const custom = await connect(createMcpServer(createCodingTools(root), { name: "mine", version: "9.9.9" }, { instructions: "be nice" }));
    expect(custom.getServerVersion()).toMatchObject({ name: "mine", version: "9.9.9" });
    expect(custom.getInstructions()).toBe("be nice");
  });

  test("tools/list gives each tool's JSON Schema, description, title and annotations", async () => {
    const { root } = await workspaceWithFile();
    const coding = createCodingTools(root);
    const client = await connect(createMcpServer(new ToolRegistry(coding)));
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(coding.map((t) => t.name));
    for (const t of coding) {
      const listed = tools.find((x) => x.name === t.name)!;
      expect(listed.inputSchema).toEqual(t.parameters);
      expect(listed.description).toBe(t.description);
      expect(listed.annotations).toMatchObject(EFFECT_ANNOTATIONS[t.effect!]);
    }
    const read = tools.find((t) => t.name === "read_file")!;
    expect(read.title).toBe("Read file");
    expect(read.annotations).toEqual({ title: "Read file", readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  });

  test("annotations are derived from each tool's effect; a tool without one is a process tool", async () => {
    const tools = [
      ...["read_file", "list_files", "search_files"].map((n) => ({ ...fakeTool(n), effect: "read" as const })),
      ...["write_file", "edit_file", "make_directory"].map((n) => ({ ...fakeTool(n), effect: "write" as const })),
      ...["node_process", "run_command", "run_tests"].map((n) => ({ ...fakeTool(n), effect: "process" as const })),
      // Named like a reading tool, but says nothing: a process tool (contract §10).
      fakeTool("mystery"),
      { ...fakeTool("my_reader"), effect: "read" as const },
    ];
    const client = await connect(createMcpServer(tools, undefined, { annotations: { run_tests: { openWorldHint: false } } }));
    const { tools: listed } = await client.listTools();
    const a = Object.fromEntries(listed.map((t) => [t.name, t.annotations]));
    for (const n of ["read_file", "list_files", "search_files", "my_reader"]) {
      expect(a[n]).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    }
    for (const n of ["write_file", "edit_file", "make_directory"]) {
      expect(a[n]).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: false });
    }
    for (const n of ["node_process", "run_command", "mystery"]) {
      expect(a[n]).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true });
    }
    expect(a.run_tests).toMatchObject({ readOnlyHint: false, openWorldHint: false }); // the override wins
  });

  // read_process and list_processes were marked destructive and not read-only, so clients that
  // approve read-only tools on their own asked for every poll of a process's output.
  test("read_process_and_list_processes_are_read_only_in_mcp_while_stop_and_start_stay_process_tools", async () => {
    const { root } = await workspaceWithFile();
    const tools = createCodingTools(root);
    try {
      const client = await connect(createMcpServer(tools));
      const a = Object.fromEntries((await client.listTools()).tools.map((t) => [t.name, t.annotations]));
      for (const n of ["read_process", "list_processes"]) expect(a[n]).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      for (const n of ["start_process", "write_process", "stop_process"]) expect(a[n]).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    } finally {
      await closeTools(tools);
    }
  });

  test("tools/call returns the output's JSON as text", async () => {
    const { root } = await workspaceWithFile();
    const client = await connect(createMcpServer(createCodingTools(root)));
    const result = await client.callTool({ name: "read_file", arguments: { path: "./src/a.txt" } });
    expect(result.isError).toBe(false);
    expect(result.content).toEqual([{ type: "text", text: JSON.stringify({ path: "src/a.txt", content: "alpha\n", bytes: 6, hash: "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060" }) }]);
  });

  test("refusals are isError results with the error JSON (code and hint), never protocol errors", async () => {
    const { root } = await workspaceWithFile();
    const client = await connect(createMcpServer(createCodingTools(root)));
    const cases: [unknown, string, string | undefined][] = [
      [{ path: "../secret.txt" }, "TOOL_ARGUMENTS_INVALID", "INVALID_RELATIVE_PATH"],
      [{ path: "/etc/passwd" }, "TOOL_ARGUMENTS_INVALID", "INVALID_RELATIVE_PATH"],
      [{ path: "link" }, "PATH_ESCAPES_WORKSPACE", undefined],
      [{ path: "src" }, "NOT_A_REGULAR_FILE", undefined],
      [{ path: "nope.txt" }, "FILE_NOT_FOUND", undefined],
      [{}, "TOOL_ARGUMENTS_INVALID", "INVALID_ARGUMENTS_SHAPE"],
      [{ path: "a", mode: "rw" }, "TOOL_ARGUMENTS_INVALID", "INVALID_ARGUMENTS_SHAPE"],
    ];
    for (const [args, code, message] of cases) {
      const result = await client.callTool({ name: "read_file", arguments: args as Record<string, unknown> });
      expect(result.isError, JSON.stringify(args)).toBe(true);
      const content = result.content as { type: string; text: string }[];
      expect(content).toHaveLength(1);
      expect(content[0]!.type).toBe("text");
      const { error } = JSON.parse(content[0]!.text);
      expect(error.code).toBe(code);
      if (message) expect(error.message).toBe(message);
      expect(error.hint).toEqual(expect.any(String));
      expect(content[0]!.text).not.toContain("TOP-SECRET-VALUE");
    }
  });

  test("an unknown tool is the protocol error InvalidParams naming the tools there are", async () => {
    const { root } = await workspaceWithFile();
    const client = await connect(createMcpServer(createCodingTools(root)));
    const err = await client.callTool({ name: "rm_rf", arguments: {} }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(ErrorCode.InvalidParams);
    expect((err as McpError).message).toContain("read_file");
  });

  test("a refused call's MCP error says its prefix once", async () => {
    const { root } = await workspaceWithFile();
    const client = await connect(createMcpServer(createCodingTools(root)));
    const messages: string[] = [];
    const refused = async (call: Promise<unknown>) => {
      const err = await call.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      messages.push((err as McpError).message);
    };
    await refused(client.callTool({ name: "rm_rf", arguments: {} }));
    await refused(client.callTool({ name: "read_file", arguments: { path: "a.txt" }, task: { ttl: 1000 } }));
    await refused(client.request({ method: "tools/call", params: { arguments: {} } } as never, CreateTaskResultSchema));
    expect(messages[0]).toMatch(/^MCP error -32602: no tool is named "rm_rf"; call one of: read_file, /);
    expect(messages[1]).toMatch(/^MCP error -32602: read_file does not run as a task/);
    for (const m of messages) expect(m.match(/MCP error/g), m).toHaveLength(1);
  });

  test("a client's cancellation reaches the tool's AbortSignal", async () => {
    const { tool, state } = slowTool();
    const client = await connect(createMcpServer([tool]));
    const controller = new AbortController();
    const call = client.callTool({ name: "slow", arguments: {} }, undefined, { signal: controller.signal });
    await state.running;
    expect(state.signal!.aborted).toBe(false);
    controller.abort("the user pressed stop");
    await expect(call).rejects.toThrow();
    await state.settled;
    expect(state.signal!.aborted).toBe(true);
    // The reason the client sent in notifications/cancelled arrives with the abort.
    expect(String(state.reason)).toContain("the user pressed stop");
    // The server is still healthy afterwards.
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["slow"]);
  });

  test("close() aborts the running calls and resolves only once they have settled", async () => {
    const { tool, state } = slowTool();
    const server = createMcpServer([tool]);
    const client = await connect(server);
    const call = client.callTool({ name: "slow", arguments: {} }).catch((e: unknown) => e);
    await state.running;
    let settled = false;
    void state.settled.then(() => (settled = true));
    await server.close();
    expect(state.signal!.aborted).toBe(true);
    expect(settled).toBe(true);
    expect(await call).toBeInstanceOf(Error);
  });

  test("calls run concurrently, each with its own signal", async () => {
    const { root } = await workspaceWithFile();
    const a = slowTool();
    const client = await connect(createMcpServer([a.tool, createReadTool(root)]));
    const controller = new AbortController();
    const slow = client.callTool({ name: "slow", arguments: {} }, undefined, { signal: controller.signal }).catch((e: unknown) => e);
    await a.state.running;
    const read = await client.callTool({ name: "read_file", arguments: { path: "src/a.txt" } });
    expect(read.isError).toBe(false);
    expect(a.state.signal!.aborted).toBe(false);
    controller.abort();
    expect(await slow).toBeInstanceOf(Error);
    await a.state.settled;
  });
});

describe("McpStdioTransport: bad frames are answered and the session goes on", () => {
  /** A server over a transport fed through `input`; the lines it writes, parsed. */
  async function frames(transport: "workcell" | "sdk") {
    const { PassThrough } = await import("node:stream");
    const { McpStdioTransport } = await import("workcell/mcp");
    const { StdioServerTransport } = await import("@modelcontextprotocol/sdk/server/stdio.js");
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: Record<string, unknown>[] = [];
    let buffered = "";
    output.on("data", (c: Buffer) => {
      buffered += c.toString();
      let nl: number;
      while ((nl = buffered.indexOf("\n")) !== -1) {
        lines.push(JSON.parse(buffered.slice(0, nl)));
        buffered = buffered.slice(nl + 1);
      }
    });
    const server = createMcpServer([fakeTool("one")]);
    let closed = false;
    server.onclose = () => (closed = true);
    const t = transport === "workcell" ? new McpStdioTransport(input, output) : new StdioServerTransport(input, output);
    await server.connect(t);
    open.push(server);
    const send = (obj: unknown) => input.write(`${JSON.stringify(obj)}\n`);
    const reply = async (id: unknown) => {
      for (let i = 0; i < 500 && !lines.some((l) => l.id === id); i++) await new Promise((r) => setTimeout(r, 10));
      return lines.find((l) => l.id === id);
    };
    send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    await reply(0);
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    return { input, send, reply, lines, closed: () => closed };
  }

  const huge = (id: number) => `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"one","arguments":{"x":"${"a".repeat(11 * 1024 * 1024)}"}}}\n`;

  test("an oversized line, a line that is not JSON and a null-params call get JSON-RPC errors; tools/list still answers", async () => {
    const s = await frames("workcell");
    s.input.write(huge(1));
    expect((await s.reply(1))!.error).toMatchObject({ code: -32600, message: expect.stringContaining("longer than 10485760 bytes") });
    s.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: null });
    expect((await s.reply(2))!.error).toMatchObject({ code: -32602, message: expect.stringContaining("got null") });
    s.input.write("{not json\n");
    s.send({ jsonrpc: "2.0", id: "three", method: "tools/call", params: "x" });
    expect((await s.reply("three"))!.error).toMatchObject({ code: -32602 });
    s.send({ jsonrpc: "2.0", id: 4, method: "tools/list" });
    const listed = await s.reply(4);
    expect((listed!.result as { tools: { name: string }[] }).tools.map((t) => t.name)).toEqual(["one"]);
    // The parse error was answered with id null, in order.
    expect(s.lines.filter((l) => l.id === null).map((l) => (l.error as { code: number }).code)).toEqual([-32700]);
    // A valid call still runs.
    s.send({ jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "one", arguments: {} } });
    expect((await s.reply(5))!.result).toMatchObject({ isError: false });
    expect(s.closed()).toBe(false);
  });

  test("the MCP SDK's own stdio transport closes on the same oversized line (what the transport above fixes)", async () => {
    const s = await frames("sdk");
    // params: null is dropped without an answer: the next reply is tools/list's.
    s.send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: null });
    s.send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
    await s.reply(3);
    expect(s.lines.some((l) => l.id === 2)).toBe(false);
    s.input.write(huge(1));
    for (let i = 0; i < 500 && !s.closed(); i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.closed()).toBe(true);
  });

  test("structuredContent only for a tool with an outputSchema; a host's tool without one answers text only", async () => {
    const plain = fakeTool("plain");
    const typed = { ...fakeTool("typed"), outputSchema: { type: "object" as const, properties: { ok: { type: "string" as const } }, required: ["ok"] } };
    const client = await connect(createMcpServer([plain, typed]));
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === "plain")!.outputSchema).toBeUndefined();
    expect(tools.find((t) => t.name === "typed")!.outputSchema).toEqual(typed.outputSchema);
    const a = await client.callTool({ name: "plain", arguments: {} });
    expect(a.structuredContent).toBeUndefined();
    const b = await client.callTool({ name: "typed", arguments: {} });
    expect(b.structuredContent).toEqual({ ok: "typed" });
    expect(JSON.parse((b.content as { text: string }[])[0]!.text)).toEqual({ ok: "typed" });
  });

  test("tasks: tasks/cancel aborts a task's AbortSignal; maxRunningTasks bounds them; tasks: false offers none", async () => {
    const { tool, state } = slowTool();
    const taskTool = { ...tool, taskSupport: "optional" as const };
    const client = await connect(createMcpServer([taskTool], undefined, { maxRunningTasks: 1 }));
    expect((await client.listTools()).tools[0]!.execution).toEqual({ taskSupport: "optional" });
    const asTask = () =>
      client.request({ method: "tools/call", params: { name: "slow", arguments: {}, task: { ttl: 10_000 } } }, CreateTaskResultSchema);
    const first = await asTask();
    await state.running;
    await expect(asTask()).rejects.toThrow(/1 tasks are already running/);
    expect(state.signal!.aborted).toBe(false);
    expect((await client.experimental.tasks.cancelTask(first.task.taskId)).status).toBe("cancelled");
    await state.settled;
    expect(state.signal!.aborted).toBe(true);
    expect((await client.experimental.tasks.getTask(first.task.taskId)).status).toBe("cancelled");

    const off = await connect(createMcpServer([taskTool], undefined, { tasks: false }));
    expect((await off.listTools()).tools[0]!.execution).toBeUndefined();
    await expect(
      off.request({ method: "tools/call", params: { name: "slow", arguments: {}, task: {} } }, CreateTaskResultSchema),
    ).rejects.toThrow();
    expect(() => createMcpServer([taskTool], undefined, { maxRunningTasks: 0 })).toThrow(TypeError);
  });
});
