import { spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, readdir, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { describe, expect, onTestFinished, test } from "vitest";
import { createMcpServer } from "workcell/mcp";
import { ToolRegistry, closeTools, createCodingTools, createProcessTools, executeToolCall } from "../dist/index.js";
import { call, content, ctx } from "./helpers.js";
import { aliveWith, expectNoneAlive, marker, withScratch } from "./process-helpers.js";
import { packageNobodyCanRead } from "./nobody.js";

const DIST = join(import.meta.dirname, "..", "dist", "index.js");

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function until(check: () => boolean | Promise<boolean>, ms = 3_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

const SERVER =
  "require('http').createServer((q, s) => s.end('hello from the session')).listen(+process.argv[1], '127.0.0.1', () => console.log('listening on ' + process.argv[1]))";

describe("process sessions", () => {
  test("a node HTTP server started with waitFor is fetched by run_command of the same tool set, then stopped leaving nothing", async () => {
    const { root, scratchDir } = await withScratch();
    const port = await freePort();
    const tools = createCodingTools(root, { sessions: { ports: [port], scratchDir }, runCommand: { scratchDir } });
    const registry = new ToolRegistry(tools);
    for (const n of ["start_process", "write_process", "stop_process"]) expect(registry.get(n)?.effect).toBe("process");
    for (const n of ["read_process", "list_processes"]) expect(registry.get(n)?.effect).toBe("read");
    const started = content(
      await executeToolCall(
        registry,
        call("start_process", { argv: ["node", "-e", SERVER, String(port)], waitFor: "listening", waitMs: 15_000, ports: [port] }),
        new AbortController().signal,
      ),
    );
    expect(started).toMatchObject({ id: "p1", running: true, matched: true, exitCode: null });
    expect(started.output).toContain(`listening on ${port}`);
    expect(started.sandbox).toMatchObject({ processes: expect.any(String) });
    expect((await readdir(scratchDir)).length).toBe(1);

    const fetched = content(
      await executeToolCall(
        registry,
        call("run_command", { argv: ["node", "-e", `fetch('http://127.0.0.1:${port}').then(r => r.text()).then(t => console.log(t))`] }),
        new AbortController().signal,
      ),
    );
    expect(fetched.output).toBe("hello from the session\n");

    const stopped = content(await executeToolCall(registry, call("stop_process", { id: "p1" }), new AbortController().signal));
    expect(stopped.running).toBe(false);
    expect(stopped.signal ?? stopped.exitCode).not.toBeNull();
    await expect(until(async () => (await readdir(scratchDir)).length === 0)).resolves.toBe(true);
    const listed = content(await executeToolCall(registry, call("list_processes", {}), new AbortController().signal));
    expect(listed.processes).toMatchObject([{ id: "p1", running: false }]);
    await registry.close();
  });

  test("a REPL through tty: write 1+1, read 2, no escape bytes", async () => {
    const { root, scratchDir } = await withScratch();
    const tools = createProcessTools(root, { scratchDir });
    const { start_process: start, read_process: read, write_process: write, stop_process: stop } = tools;
    const s = await start.execute(start.validate({ argv: ["node", "-i"], tty: true, waitFor: "> $", waitMs: 15_000 }), ctx());
    expect(s.matched).toBe(true);
    expect(await write.execute(write.validate({ id: s.id, input: "1+1\n" }), ctx())).toEqual({ id: s.id, bytes: 4 });
    const r = await read.execute(read.validate({ id: s.id, waitFor: "(?m)^2$", waitMs: 10_000 }), ctx());
    expect(r.matched).toBe(true);
    expect(r.output.split("\n")).toContain("2");
    expect(r.output).not.toMatch(/[\x1b\r]/);
    await stop.execute(stop.validate({ id: s.id, signal: "SIGKILL" }), ctx());
    await closeTools(tools);
  });

  test("limits are refused before any effect, with hints", async () => {
    const { root, scratchDir } = await withScratch();
    const mark = marker();
    const tools = createProcessTools(root, { scratchDir, maxProcesses: 1 });
    const registry = new ToolRegistry(tools);
    const run = async (name: string, args: unknown) =>
      JSON.parse((await executeToolCall(registry, call(name, args), new AbortController().signal)).content);
    expect((await run("start_process", { argv: ["sleep", "300", mark], waitMs: 30_001 })).error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID" });
    expect((await run("start_process", { argv: ["sleep", "300", mark], ports: [8080] })).error).toMatchObject({
      code: "TOOL_ARGUMENTS_INVALID",
      message: "PORT_NOT_ALLOWED",
    });
    expect((await run("start_process", { argv: ["sleep", "300", mark], waitFor: "(" })).error.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(aliveWith(mark)).toEqual([]);
    expect(await readdir(scratchDir)).toEqual([]);
    const one = await run("start_process", { argv: ["sh", "-c", "sleep 300", mark], waitMs: 0 });
    expect(one.id).toBe("p1");
    const second = await run("start_process", { argv: ["sh", "-c", "sleep 300", mark], waitMs: 0 });
    expect(second.error).toMatchObject({ code: "PROCESS_LIMIT", hint: expect.stringContaining("stop_process") });
    expect((await run("write_process", { id: "p1", input: "x".repeat(8193) })).error).toMatchObject({ message: "CONTENT_TOO_LARGE" });
    expect((await run("read_process", { id: "p7" })).error).toMatchObject({ code: "PROCESS_NOT_FOUND", hint: expect.stringContaining("list_processes") });
    expect((await run("read_process", { id: "p1", waitMs: 30_001 })).error.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(aliveWith(mark).length).toBe(1);
    await registry.close();
    await expectNoneAlive(mark);
    await expect(until(async () => (await readdir(scratchDir)).length === 0)).resolves.toBe(true);
  });

  test("the MCP server closes its tools when the client disconnects: the session ends", async () => {
    const { root, scratchDir } = await withScratch();
    const mark = marker();
    const server = createMcpServer(createProcessTools(root, { scratchDir }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = new Client({ name: "workcell-test", version: "1.0.0" });
    await client.connect(clientSide);
    const r = await client.callTool({ name: "start_process", arguments: { argv: ["sh", "-c", "echo up; sleep 300", mark], waitFor: "up" } });
    expect(r.isError).toBeFalsy();
    expect(aliveWith(mark).length).toBe(1);
    await client.close();
    await expect(until(() => aliveWith(mark).length === 0)).resolves.toBe(true);
    await expect(until(async () => (await readdir(scratchDir)).length === 0)).resolves.toBe(true);
  });

  test("host misconfiguration is a TypeError", async () => {
    const { root } = await withScratch();
    expect(() => createProcessTools(root, { maxProcesses: 0 })).toThrow(TypeError);
    expect(() => createProcessTools(root, { ports: [70000] })).toThrow(TypeError);
    expect(() => createProcessTools(root, { timeoutMs: 10, maxTimeoutMs: 5 })).toThrow(TypeError);
    expect(() => createProcessTools(root, { sandbox: "sometimes" as never })).toThrow(TypeError);
  });

  // A host that starts sessions and is SIGKILLed: the namespace's init dies with it (a setsid
  // escape included), the janitor removes the scratch directories and, where there is no
  // namespace, kills the process group (a setsid escape is out of its reach there).
  for (const [who, noNamespace] of [
    ["root", false],
    ["root without a PID namespace", true],
    ["an unprivileged user", false],
  ] as const) {
    const asNobody = who === "an unprivileged user";
    test.skipIf(asNobody && process.getuid?.() !== 0)(`a host SIGKILLed as ${who} leaves no process and no scratch directory`, async () => {
      const { parent, root, scratchDir } = await withScratch();
      const mark = marker();
      let dist = DIST;
      if (asNobody) {
        for (const d of [parent, root, scratchDir]) await chmod(d, 0o777);
        // The package as nobody can read it (a clone in a 0700 directory is out of its reach).
        const copy = packageNobodyCanRead();
        if ("reason" in copy) {
          console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
          return;
        }
        onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
        dist = join(copy.dir, "dist", "index.js");
      }
      const script = join(parent, "host.mjs");
      await writeFile(
        script,
        `import { createProcessTools } from ${JSON.stringify(dist)};
const tools = createProcessTools(${JSON.stringify(root)}, { scratchDir: ${JSON.stringify(scratchDir)}, inheritEnv: ["WC_MARK"]${noNamespace ? ", sandboxFeatures: { pidNamespace: false }, protect: []" : ""} });
// The host keeps its tools (a table nothing refers to is collected, and its sessions end).
globalThis.keep = tools;
const c = { signal: new AbortController().signal };
for (let i = 0; i < 2; i++) {
  const s = await tools[0].execute({ argv: ["sh", "-c", ${JSON.stringify(noNamespace ? "sleep 300 & sleep 300 & echo up; sleep 300" : "setsid sleep 300 & sleep 300 & echo up; sleep 300")}], waitFor: "up", waitMs: 10000 }, c);
  if (!s.matched) { console.log("not started " + JSON.stringify(s)); process.exit(1); }
}
console.log("ready");
setInterval(() => {}, 1000);
`,
      );
      const argv = asNobody ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, script] : [process.execPath, script];
      const host = spawn(argv[0], argv.slice(1), { env: { ...process.env, WC_MARK: mark }, stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      await new Promise<void>((resolve, reject) => {
        host.stdout.on("data", (d) => {
          out += d;
          if (out.includes("ready")) resolve();
        });
        host.on("exit", () => reject(new Error(`host exited: ${out}`)));
      });
      // The host itself carries the marker too; its sessions do.
      const before = aliveWith(mark).filter((p) => p !== host.pid);
      expect(before.length).toBeGreaterThanOrEqual(6);
      expect((await readdir(scratchDir)).length).toBe(2);
      host.kill("SIGKILL");
      await new Promise((r) => host.once("exit", r));
      await expect(until(() => before.every((p) => !aliveWith(mark).includes(p)), 3_000)).resolves.toBe(true);
      await expectNoneAlive(mark);
      await expect(until(async () => (await readdir(scratchDir)).length === 0, 5_000)).resolves.toBe(true);
    }, 30_000);
  }
});
