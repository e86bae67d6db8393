// workcell's MCP server over Streamable HTTP: the MCP SDK's own StreamableHTTPClientTransport
// talks to createMcpHttpServer (in process) and to `workcell mcp --http` (a child process).
// Every refusal is also run with the thing it checks made right, so the refusal is shown to
// come from that check.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, readFile, readdir, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { Agent as HttpAgent, request as httpRequest } from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { afterEach, describe, expect, onTestFinished, test } from "vitest";
import { PRE_AUTH_TIMEOUT_MS, createMcpHttpServer, type McpHttpServer, type McpHttpServerOptions } from "workcell/mcp";
import { createCodingTools, type AnyTool } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

const TOKEN = "test-token-0123456789abcdef";
const BIN = join(import.meta.dirname, "..", "bin", "workcell.mjs");

const servers: McpHttpServer[] = [];
const clients: { client: Client; transport: StreamableHTTPClientTransport }[] = [];
const children: ChildProcess[] = [];
afterEach(async () => {
  for (const c of clients.splice(0)) await c.client.close().catch(() => undefined);
  for (const s of servers.splice(0)) await s.close();
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

async function serve(root: string, options: Partial<McpHttpServerOptions> = {}) {
  const server = createMcpHttpServer(root, { token: TOKEN, ...options });
  servers.push(server);
  const address = await server.listen();
  return { server, ...address };
}

async function connect(url: string, token = TOKEN, headers: Record<string, string> = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: `Bearer ${token}`, ...headers } },
  });
  const client = new Client({ name: "workcell-test", version: "1.0.0" });
  await client.connect(transport);
  const c = { client, transport };
  clients.push(c);
  return c;
}

const INIT = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
});

function post(url: string, headers: Record<string, string>, body = INIT) {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body,
  });
}

/** Processes on this machine whose command line contains `marker`. */
async function processesWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^[0-9]+$/.test(name) || Number(name) === process.pid) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(marker)) found.push(Number(name));
  }
  return found;
}

async function until<T>(what: string, probe: () => Promise<T | undefined | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A unique `sleep` duration: its text marks the processes of one test. */
const sleepMarker = () => `300.${randomBytes(4).readUInt32BE(0)}`;

/** Starts `workcell mcp --http ...`; resolves with the URL it prints once it listens. */
function startCli(args: string[], env: Record<string, string> = {}): Promise<{ child: ChildProcess; url: string; stderr: () => string }> {
  const child = spawn(process.execPath, [BIN, "mcp", ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let err = "";
  return new Promise((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /on (http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve({ child, url: m[1]!, stderr: () => err });
    });
    child.once("exit", (code) => reject(Object.assign(new Error(`workcell exited ${code}: ${err}`), { code, stderr: err })));
  });
}

function runCli(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, "mcp", ...args], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "ignore", "pipe"] });
    children.push(child);
    let err = "";
    child.stderr.on("data", (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => child.kill("SIGTERM"), 5_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr: err });
    });
  });
}

describe("workcell mcp over Streamable HTTP", () => {
  test("the SDK's client lists the tools, each with an outputSchema, and calls them with the token", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hello\n");
    const { url } = await serve(root);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const { client } = await connect(url);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(createCodingTools(root).map((t) => t.name));
    for (const t of tools) expect(t.outputSchema, t.name).toMatchObject({ type: "object" });
    expect(tools.find((t) => t.name === "run_tests")!.execution).toEqual({ taskSupport: "optional" });
    expect(tools.find((t) => t.name === "start_process")!.execution).toEqual({ taskSupport: "optional" });
    expect(tools.find((t) => t.name === "read_file")!.execution).toBeUndefined();

    const read = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
    expect(read.isError).toBe(false);
    expect(read.structuredContent).toMatchObject({ path: "a.txt", content: "hello\n", bytes: 6 });
    expect(JSON.parse((read.content as { text: string }[])[0]!.text)).toEqual(read.structuredContent);

    const write = await client.callTool({ name: "write_file", arguments: { path: "b.txt", content: "b\n" } });
    expect(write.structuredContent).toEqual({ path: "b.txt", bytes: 2, created: true });
    expect(await readFile(join(root, "b.txt"), "utf8")).toBe("b\n");

    const refused = await client.callTool({ name: "read_file", arguments: { path: "../outside" } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toBeUndefined();
    expect(JSON.parse((refused.content as { text: string }[])[0]!.text).error.code).toBe("TOOL_ARGUMENTS_INVALID");
  });

  test("no token and a wrong token are 401; the right token on the same request is let in", async () => {
    const { root } = await tempWorkspace();
    const { url } = await serve(root);
    const none = await post(url, {});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(((await none.json()) as { error: { message: string } }).error.message).toMatch(/Authorization: Bearer/);
    expect((await post(url, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    expect((await post(url, { authorization: `Bearer ${TOKEN.slice(0, -1)}` })).status).toBe(401);
    expect((await post(url, { authorization: TOKEN })).status).toBe(401);
    expect((await post(url, { authorization: `Basic ${TOKEN}` })).status).toBe(401);
    await expect(connect(url, "wrong-token-0123456789")).rejects.toThrow(/401|Unauthorized/i);
    const ok = await post(url, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("mcp-session-id")).toMatch(/^[0-9a-f-]{36}$/);
    await ok.body?.cancel();
  });

  test("a_connection_that_proved_the_token_is_refused_when_a_later_request_on_it_carries_another", async () => {
    // The server remembers the Authorization header a connection proved the token with, so that
    // its next requests need no new digest; anything else sent on that connection is checked anew.
    const { root } = await tempWorkspace();
    const { url } = await serve(root);
    const agent = new HttpAgent({ keepAlive: true, maxSockets: 1 });
    onTestFinished(() => agent.destroy());
    const ports = new Set<number>();
    const send = (authorization?: string) =>
      new Promise<number>((resolve, reject) => {
        const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json, text/event-stream" };
        if (authorization !== undefined) headers.authorization = authorization;
        const req = httpRequest(url, { method: "POST", agent, headers }, (res) => {
          ports.add(res.socket.localPort!);
          res.resume();
          res.on("end", () => resolve(res.statusCode!));
        });
        req.on("error", reject);
        req.end(INIT);
      });
    expect(await send(`Bearer ${TOKEN}`)).toBe(200);
    expect(await send(`Bearer ${TOKEN}x`)).toBe(401);
    expect(await send(`Bearer ${TOKEN.slice(0, -1)}`)).toBe(401);
    expect(await send(`Bearer  ${TOKEN}`)).toBe(200); // another spelling of the same token: checked, and let in
    expect(await send()).toBe(401);
    expect(await send(`Basic ${TOKEN}`)).toBe(401);
    expect(await send(`Bearer ${TOKEN}`)).toBe(200);
    expect(ports.size).toBe(1); // all of them on one connection
  });

  test("a foreign Origin is 403 even with the token; an allowed Origin and no Origin are let in", async () => {
    const { root } = await tempWorkspace();
    const { url } = await serve(root, { allowOrigins: ["https://app.example.com"] });
    const auth = { authorization: `Bearer ${TOKEN}` };
    const foreign = await post(url, { ...auth, origin: "https://evil.example" });
    expect(foreign.status).toBe(403);
    expect(((await foreign.json()) as { error: { message: string } }).error.message).toMatch(/Origin/);
    expect((await post(url, { ...auth, origin: "null" })).status).toBe(403);
    await expect(connect(url, TOKEN, { origin: "http://127.0.0.1:1" })).rejects.toThrow(/403|Forbidden/i);
    for (const headers of [auth, { ...auth, origin: "https://app.example.com" }]) {
      const ok = await post(url, headers);
      expect(ok.status).toBe(200);
      await ok.body?.cancel();
    }
  });

  test("a DNS-rebound Host is 403 on a loopback bind; a loopback Host is let in", async () => {
    const { root } = await tempWorkspace();
    const { port } = await serve(root);
    const { request } = await import("node:http");
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(
          { host: "127.0.0.1", port, path: "/mcp", method: "POST", headers: { host, authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" } },
          (res) => {
            res.resume();
            resolve(res.statusCode!);
          },
        );
        req.on("error", reject);
        req.end(INIT);
      });
    expect(await status(`attacker.example:${port}`)).toBe(403);
    expect(await status(`localhost:${port}`)).toBe(200);
  });

  test("a non-loopback bind without public is refused at creation and by the CLI; with it, it binds", async () => {
    const { root } = await tempWorkspace();
    expect(() => createMcpHttpServer(root, { token: TOKEN, host: "0.0.0.0" })).toThrow(TypeError);
    expect(() => createMcpHttpServer(root, { token: TOKEN, host: "0.0.0.0" })).toThrow(/not a loopback address.*public/);
    expect(() => createMcpHttpServer(root, { token: TOKEN, host: "::" })).toThrow(/public/);
    const refused = await runCli(["--http", "0.0.0.0:0", "--root", root], { WORKCELL_MCP_TOKEN: TOKEN });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/0\.0\.0\.0 is not a loopback address.*--public/);
    const { url, port } = await serve(root, { host: "0.0.0.0", public: true });
    expect(url).toContain(`:${port}/mcp`);
    const res = await fetch(`http://127.0.0.1:${port}/mcp`, { method: "POST", headers: { "content-type": "application/json" }, body: INIT });
    expect(res.status).toBe(401); // public changes where it listens, never the token check
  });

  test("short tokens, unknown options and a missing token are refused", async () => {
    const { root } = await tempWorkspace();
    expect(() => createMcpHttpServer(root, { token: "short" })).toThrow(/at least 16/);
    expect(() => createMcpHttpServer(root, { token: TOKEN, maxSesions: 3 } as never)).toThrow(/maxSesions: unknown option/);
    const none = await runCli(["--http", "127.0.0.1:0", "--root", root]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/needs a token/);
    const stray = await runCli(["--root", root, "--public"]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toMatch(/--public applies to --http/);
  });

  test("a token file readable by others is refused; chmod 600 makes it work", async () => {
    const { root, parent } = await tempWorkspace();
    const file = join(parent, "token");
    await writeFile(file, `${TOKEN}\n`);
    await chmod(file, 0o644);
    const refused = await runCli(["--http", "127.0.0.1:0", "--root", root, "--token-file", file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/readable or writable by others than its owner \(mode 644\); run chmod 600/);
    await chmod(file, 0o640);
    expect((await runCli(["--http", "127.0.0.1:0", "--root", root, "--token-file", file])).code).toBe(2);
    await chmod(file, 0o600);
    const { child, url } = await startCli(["--http", "127.0.0.1:0", "--root", root, "--token-file", file]);
    const { client } = await connect(url);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    await client.close();
    child.kill("SIGTERM");
    expect(await new Promise((r) => child.once("exit", (code) => r(code)))).toBe(0);
  });

  test("a body over maxBodyBytes is 413 and the server goes on", async () => {
    const { root } = await tempWorkspace();
    const { url } = await serve(root, { maxBodyBytes: 64 * 1024 });
    const { client } = await connect(url);
    const big = await client.callTool({ name: "write_file", arguments: { path: "big.txt", content: "x".repeat(100_000) } }).catch((e: Error) => e);
    expect(String(big)).toMatch(/413|Payload Too Large/);
    const raw = await post(url, { authorization: `Bearer ${TOKEN}` }, " ".repeat(70_000) + INIT);
    expect(raw.status).toBe(413);
    const ok = await client.callTool({ name: "write_file", arguments: { path: "small.txt", content: "x".repeat(1000) } });
    expect(ok.isError).toBe(false);
  });

  test("sessions beyond maxSessions are 503; closing one makes room", async () => {
    const { root } = await tempWorkspace();
    const { url, server } = await serve(root, { maxSessions: 2 });
    const a = await connect(url);
    await connect(url);
    expect(server.sessionCount).toBe(2);
    const third = await post(url, { authorization: `Bearer ${TOKEN}` });
    expect(third.status).toBe(503);
    await a.transport.terminateSession();
    await until("a closed session", async () => server.sessionCount === 1);
    await connect(url);
    expect(server.sessionCount).toBe(2);
  });

  test("each session has its own tools, closed when its session ends and no other", async () => {
    const { root } = await tempWorkspace();
    const made: { tools: AnyTool[]; closed: number }[] = [];
    const { url, server } = await serve(root, {
      createTools: (r) => {
        const entry = { tools: [] as AnyTool[], closed: 0 };
        entry.tools = createCodingTools(r).map((t) => ({ ...t, close: async () => void (entry.closed += 1) }));
        made.push(entry);
        return entry.tools;
      },
    });
    const before = made.length; // the tool set made once at creation to check the workspace
    const a = await connect(url);
    const b = await connect(url);
    expect(made.length).toBe(before + 2);
    const [ta, tb] = made.slice(before);
    expect(ta!.tools[0]).not.toBe(tb!.tools[0]);
    await a.transport.terminateSession();
    await until("session a's tools closed", async () => ta!.closed === ta!.tools.length);
    expect(tb!.closed).toBe(0);
    expect((await b.client.callTool({ name: "list_files", arguments: {} })).isError).toBe(false);
    expect(server.sessionCount).toBe(1);
    await server.close();
    expect(tb!.closed).toBe(tb!.tools.length);
  });

  test("a session idle past idleTimeoutMs is closed with its tools; a running call keeps it open", async () => {
    const { root } = await tempWorkspace();
    let closed = 0;
    const { url, server } = await serve(root, {
      idleTimeoutMs: 300,
      createTools: (r) => createCodingTools(r).map((t) => ({ ...t, close: async () => void (closed += 1) })),
    });
    closed = 0; // the tool set made at creation to check the workspace
    const marker = sleepMarker();
    const busy = await connect(url);
    const call = busy.client.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", `sleep 1.2; : ${marker}`] } });
    const idle = await connect(url);
    const sid = idle.transport.sessionId!;
    await until("the idle session closed", async () => server.sessionCount === 1);
    const gone = await post(url, { authorization: `Bearer ${TOKEN}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" }, JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }));
    expect(gone.status).toBe(404);
    const result = await call;
    expect(result.isError).toBe(false);
    expect(result.structuredContent).toMatchObject({ exitCode: 0 });
    await until("the busy session idled out after its call", async () => server.sessionCount === 0);
    expect(closed).toBe(2 * createCodingTools(root).length);
  });

  test("run_tests as a task: polled to completion; another cancelled, which kills its process tree", { timeout: 60_000 }, async () => {
    const { root } = await tempWorkspace();
    const marker = sleepMarker();
    await writeFile(join(root, "ok.test.mjs"), "import test from 'node:test';\ntest('ok', () => {});\n");
    await writeFile(
      join(root, "slow.test.mjs"),
      `import test from 'node:test';\nimport { execFileSync } from 'node:child_process';\ntest('slow', () => { execFileSync('sleep', ['${marker}']); });\n`,
    );
    const { url } = await serve(root);
    const { client } = await connect(url);

    const created = await client.request(
      { method: "tools/call", params: { name: "run_tests", arguments: { runner: "node", args: ["ok.test.mjs"] }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    expect(created.task.status).toBe("working");
    const done = await until("the task finished", async () => {
      const t = await client.experimental.tasks.getTask(created.task.taskId);
      return t.status === "working" ? undefined : t;
    });
    expect(done.status).toBe("completed");
    const result = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    expect(result.structuredContent).toMatchObject({ status: "passed", passed: 1 });
    expect((await client.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(created.task.taskId);

    const slow = await client.request(
      { method: "tools/call", params: { name: "run_tests", arguments: { runner: "node", args: ["slow.test.mjs"] }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
    );
    await until("the slow test's sleep", async () => (await processesWith(marker)).length > 0);
    const cancelled = await client.experimental.tasks.cancelTask(slow.task.taskId);
    expect(cancelled.status).toBe("cancelled");
    await until("no process of the cancelled task", async () => (await processesWith(marker)).length === 0);
    expect((await client.experimental.tasks.getTask(slow.task.taskId)).status).toBe("cancelled");

    // A tool without taskSupport refuses to run as a task.
    await expect(
      client.request({ method: "tools/call", params: { name: "read_file", arguments: { path: "ok.test.mjs" }, task: {} } }, CreateTaskResultSchema),
    ).rejects.toThrow(/does not run as a task/);
  });

  test("SIGTERM: the CLI stops accepting, kills the running calls' processes and exits 0", { timeout: 30_000 }, async () => {
    const { root } = await tempWorkspace();
    const marker = sleepMarker();
    const { child, url, stderr } = await startCli(["--http", "127.0.0.1:0", "--root", root], { WORKCELL_MCP_TOKEN: TOKEN });
    const { client } = await connect(url);
    const call = client.callTool({ name: "run_command", arguments: { argv: ["sleep", marker] } }).then(
      () => new Error("the call was answered"),
      (e: Error) => e,
    );
    await until("the running sleep", async () => (await processesWith(marker)).length > 0);
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(await processesWith(marker)).toEqual([]);
    expect(stderr()).toMatch(/stopped \(SIGTERM\)/);
    // At start it said what the sandbox enforces here, layer by layer.
    expect(stderr()).toMatch(/\nworkcell mcp: sandbox auto: files (confined \(Landlock ABI \d+\)|NOT confined).*, (TCP blocked|TCP NOT blocked).*, processes in /);
    // The call still running was answered with an error, not left waiting.
    expect(String(await call)).toMatch(/server closed; the call was cancelled/);
    await expect(fetch(url, { method: "POST", body: INIT })).rejects.toThrow();
  });

  test("load: 20 sessions x 25 concurrent calls all answered, memory back within bounds, no process left", { timeout: 120_000 }, async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "x".repeat(4096));
    const marker = sleepMarker();
    const { child, url } = await startCli(["--http", "127.0.0.1:0", "--root", root, "--max-sessions", "24"], { WORKCELL_MCP_TOKEN: TOKEN });
    const rss = async () => Number(/VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${child.pid}/status`, "utf8"))![1]) * 1024;
    const warm = await connect(url);
    for (let i = 0; i < 50; i++) await warm.client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
    await warm.transport.terminateSession();
    const before = await rss();

    const sessions = await Promise.all(Array.from({ length: 20 }, () => connect(url)));
    // One long-running process per session, left running when the sessions close.
    const sleeps = sessions.map((s) => s.client.callTool({ name: "run_command", arguments: { argv: ["sleep", marker] } }).catch((e: Error) => e));
    const results = await Promise.all(
      sessions.flatMap((s) => Array.from({ length: 25 }, () => s.client.callTool({ name: "read_file", arguments: { path: "a.txt" } }))),
    );
    expect(results).toHaveLength(500);
    for (const r of results) expect(r.structuredContent).toMatchObject({ path: "a.txt", bytes: 4096 });
    await until("every session's sleep", async () => (await processesWith(marker)).length >= 20);
    const peak = await rss();

    await Promise.all(sessions.map((s) => s.transport.terminateSession()));
    await until("no process left", async () => (await processesWith(marker)).length === 0);
    // The client ended the sessions itself: closing it fails its calls still waiting.
    await Promise.all(sessions.map((s) => s.client.close()));
    for (const r of await Promise.all(sleeps)) expect(r).toBeInstanceOf(Error);
    // The heap settles once the sessions' objects are collected: RSS stays within a generous bound.
    const after = await until("memory back within bounds", async () => {
      const now = await rss();
      return now < before + 128 * 1024 * 1024 ? now : undefined;
    });
    expect(after).toBeLessThan(before + 128 * 1024 * 1024);
    expect(peak).toBeGreaterThan(0);
    child.kill("SIGTERM");
  });
});

/** Opens a session with raw requests; resolves with its id and a `call(body, headers)` that POSTs in it. */
async function rawSession(url: string) {
  const init = await post(url, { authorization: `Bearer ${TOKEN}` });
  expect(init.status).toBe(200);
  const sid = init.headers.get("mcp-session-id")!;
  await init.text();
  const inSession = { authorization: `Bearer ${TOKEN}`, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" };
  const note = await post(url, inSession, JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  expect(note.status).toBe(202);
  let id = 100;
  const call = (name: string, args: object, headers: Record<string, string> = {}) =>
    post(url, { ...inSession, ...headers }, JSON.stringify({ jsonrpc: "2.0", id: id++, method: "tools/call", params: { name, arguments: args } }));
  return { sid, inSession, call };
}

/** Counts the POSTs the SDK's StreamableHTTPServerTransport handles (the copy the server loads). */
function countSdkRequests(): { readonly count: number } {
  const { StreamableHTTPServerTransport } = createRequire(join(import.meta.dirname, "..", "dist", "adapters", "mcp-http.js"))(
    "@modelcontextprotocol/sdk/server/streamableHttp.js",
  ) as typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const proto = StreamableHTTPServerTransport.prototype;
  const original = proto.handleRequest;
  const counter = { count: 0 };
  proto.handleRequest = function (this: unknown, ...args: Parameters<typeof original>) {
    if (args[0].method === "POST") counter.count += 1;
    return original.apply(this, args);
  } as typeof original;
  onTestFinished(() => {
    proto.handleRequest = original;
  });
  return counter;
}

describe("a session's requests answered on Node's response", () => {
  test("a_tools_call_is_answered_as_one_json_body_without_the_sdks_web_request", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hello\n");
    const { url } = await serve(root);
    const sdk = countSdkRequests();
    const { sid, call } = await rawSession(url);
    const before = sdk.count; // initialize and the initialized notification went to the SDK's transport
    expect(before).toBe(2);
    const res = await call("read_file", { path: "a.txt" });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.headers.get("mcp-session-id")).toBe(sid);
    const body = (await res.json()) as { id: number; result: { content: { text: string }[]; structuredContent: { content: string } } };
    expect(body.id).toBe(100);
    expect(body.result.structuredContent.content).toContain("hello");
    expect(sdk.count).toBe(before);
    // The SDK's own client is answered the same way.
    const { client } = await connect(url);
    const viaSdk = sdk.count;
    expect((await client.callTool({ name: "read_file", arguments: { path: "a.txt" } })).isError).toBe(false);
    expect(sdk.count).toBe(viaSdk);
  });

  test("a_tools_call_the_sdk_would_refuse_is_refused_alike", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hello\n");
    const { url } = await serve(root);
    const { call, inSession } = await rawSession(url);
    const refusals: [Record<string, string>, number, RegExp][] = [
      [{ "mcp-protocol-version": "1999-01-01" }, 400, /Unsupported protocol version/],
      [{ accept: "application/json" }, 406, /Not Acceptable/],
      [{ "content-type": "text/plain" }, 415, /Unsupported Media Type/],
      [{ "mcp-session-id": "00000000-0000-0000-0000-000000000000" }, 404, /no such session/],
    ];
    for (const [headers, status, message] of refusals) {
      const res = await call("read_file", { path: "a.txt" }, headers);
      expect(res.status, JSON.stringify(headers)).toBe(status);
      expect(((await res.json()) as { error: { message: string } }).error.message).toMatch(message);
    }
    // Not a JSON-RPC message (a method that is not a string): the SDK's parse error.
    const bad = await post(url, inSession, JSON.stringify({ jsonrpc: "2.0", id: 7, method: 42 }));
    expect(bad.status).toBe(400);
    await bad.body?.cancel();
    // The same call, its headers right, is answered.
    const ok = await call("read_file", { path: "a.txt" });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { result: { isError: boolean } }).result.isError).toBe(false);
  });

  test("a_call_running_when_its_session_is_deleted_is_answered_with_an_error", { timeout: 30_000 }, async () => {
    const { root } = await tempWorkspace();
    const { url } = await serve(root);
    const marker = sleepMarker();
    const { call, inSession } = await rawSession(url);
    const running = call("run_command", { argv: ["sleep", marker] });
    await until("the running sleep", async () => (await processesWith(marker)).length > 0);
    const deleted = await fetch(url, { method: "DELETE", headers: inSession });
    expect(deleted.status).toBe(200);
    const res = await running;
    expect(res.status).toBe(200);
    const body = (await res.json()) as { id: number; error: { message: string } };
    expect(body.id).toBe(100);
    expect(body.error.message).toMatch(/closed/);
    await until("the sleep stopped", async () => (await processesWith(marker)).length === 0);
    // The session is gone: a call in it is 404.
    expect((await call("list_files", {})).status).toBe(404);
  });
});

describe("connections before the token", () => {
  /** Opens `count` connections (from `localAddress`) that send a request line and one header, never finishing. */
  function partial(port: number, count: number, localAddress = "127.0.0.1"): Socket[] {
    const sockets: Socket[] = [];
    for (let i = 0; i < count; i++) {
      const s = netConnect({ host: "127.0.0.1", port, localAddress });
      s.on("error", () => undefined);
      s.on("connect", () => s.write("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
      sockets.push(s);
    }
    onTestFinished(() => sockets.forEach((s) => s.destroy()));
    return sockets;
  }

  /** Resolves once the server has accepted or dropped `count` connections. */
  function seen(server: McpHttpServer, count: number): Promise<void> {
    let n = 0;
    return new Promise((done) => {
      const one = () => {
        n += 1;
        if (n === count) {
          server.httpServer.off("connection", one).off("drop", one);
          done();
        }
      };
      server.httpServer.on("connection", one).on("drop", one);
    });
  }

  async function tokenHolderGetsThrough(url: string): Promise<number> {
    const t0 = Date.now();
    const { client } = await connect(url);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    return Date.now() - t0;
  }

  test("partial_requests_from_one_address_do_not_lock_the_token_holder_out", { timeout: 60_000 }, async () => {
    const { root } = await tempWorkspace();
    const { server, url, port } = await serve(root, { maxSessions: 1 });
    // 300 is more than the whole connection cap (256 with one session).
    const all = seen(server, 300);
    partial(port, 300);
    await all;
    const ms = await tokenHolderGetsThrough(url);
    expect(ms).toBeLessThan(10_000);
    const open = await new Promise<number>((r) => server.httpServer.getConnections((_e, n) => r(n)));
    expect(open).toBeLessThanOrEqual(256);
  });

  test("partial_requests_from_many_addresses_do_not_lock_the_token_holder_out", { timeout: 60_000 }, async () => {
    const { root } = await tempWorkspace();
    const { server, url, port } = await serve(root, { maxSessions: 1 });
    // 20 addresses with 16 each: more than the cap, and more than the quarter of it that may wait unauthenticated.
    const all = seen(server, 320);
    for (let i = 2; i < 22; i++) partial(port, 16, `127.0.0.${i}`);
    await all;
    const ms = await tokenHolderGetsThrough(url);
    expect(ms).toBeLessThan(10_000);
    const open = await new Promise<number>((r) => server.httpServer.getConnections((_e, n) => r(n)));
    expect(open).toBeLessThanOrEqual(256);
  });

  test("a_connection_that_sends_no_token_is_closed_after_the_pre_auth_timeout", { timeout: 60_000 }, async () => {
    const { root } = await tempWorkspace();
    const { port } = await serve(root);
    const [s] = partial(port, 1);
    const t0 = Date.now();
    const closed = await new Promise<boolean>((r) => {
      const deadline = setTimeout(() => r(false), PRE_AUTH_TIMEOUT_MS + 10_000);
      s!.once("close", () => {
        clearTimeout(deadline);
        r(true);
      });
    });
    expect(closed, "the server kept the connection open").toBe(true);
    // Closed after PRE_AUTH_TIMEOUT_MS (the 30 s headers timeout, checked every 30 s, before).
    expect(Date.now() - t0).toBeGreaterThanOrEqual(PRE_AUTH_TIMEOUT_MS - 500);
    expect(Date.now() - t0).toBeLessThan(PRE_AUTH_TIMEOUT_MS + 10_000);
  });
});
