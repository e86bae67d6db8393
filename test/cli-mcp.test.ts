// `workcell mcp` as a real MCP client starts it: the MCP SDK's Client over StdioClientTransport
// runs the built CLI (bin/workcell.mjs) as a child process.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { afterEach, describe, expect, test } from "vitest";
import { createCodingTools } from "../dist/index.js";
import { parseMcpArgs } from "../dist/cli.js";
import { tempWorkspace } from "./helpers.js";
import { aliveWith, marker } from "./process-helpers.js";

const BIN = fileURLToPath(new URL("../bin/workcell.mjs", import.meta.url));

/** The tools this build has (node_process and the others arrive from other branches). */
const TOOLS = await (async () => {
  const dir = await mkdtemp(join(tmpdir(), "workcell-test-"));
  try {
    return createCodingTools(dir).map((t) => t.name);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
})();

/** A valid call for each tool the suite knows, against the workspace `prepare` makes. */
const VALID_CALLS: Record<string, Record<string, unknown>> = {
  read_file: { path: "src/a.txt" },
  write_file: { path: "out/new.txt", content: "new\n" },
  edit_file: { path: "src/a.txt", edits: [{ oldText: "alpha", newText: "beta" }] },
  list_files: {},
  search_files: { pattern: "alpha" },
  node_process: { source: "console.log(1 + 1)" },
  run_command: { argv: ["ls", "src"] },
  run_tests: { runner: "node" },
};

async function prepare() {
  const ws = await tempWorkspace();
  await mkdir(join(ws.root, "src"));
  await mkdir(join(ws.root, "test"));
  await writeFile(join(ws.root, "src", "a.txt"), "alpha\n");
  await writeFile(join(ws.root, "test", "a.test.js"), 'require("node:test")("ok", () => {});\n');
  await writeFile(join(ws.parent, "secret.txt"), "TOP-SECRET-VALUE");
  await symlink("../secret.txt", join(ws.root, "link"));
  return ws;
}

const clients: Client[] = [];
afterEach(async () => {
  while (clients.length) await clients.pop()!.close();
});

async function start(args: string[]) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", ...args], stderr: "pipe" });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  const client = new Client({ name: "workcell-test", version: "1.0.0" });
  await client.connect(transport);
  clients.push(client);
  return { client, transport, stderr: () => stderr };
}

function text(result: object): string {
  const content = (result as { content: { type: string; text: string }[] }).content;
  expect(content).toHaveLength(1);
  expect(content[0]!.type).toBe("text");
  return content[0]!.text;
}

function alive(pid: number): boolean {
  // A zombie still has a /proc entry; it counts as gone (it runs nothing and holds nothing).
  try {
    return !/^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return false;
  }
}

async function waitFor(check: () => boolean | Promise<boolean>, ms = 5000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

describe("workcell mcp over stdio", () => {
  test("lists the tools, calls each one, and refuses escapes with isError", async () => {
    const { root } = await prepare();
    const { client } = await start(["--root", root]);
    expect(client.getServerVersion()?.name).toBe("workcell");

    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    for (const t of tools) {
      expect(t.inputSchema.type).toBe("object");
      expect(t.description!.length).toBeGreaterThan(40);
    }
    expect(tools.find((t) => t.name === "read_file")!.annotations).toMatchObject({ readOnlyHint: true });

    const called: string[] = [];
    for (const t of tools) {
      const args = VALID_CALLS[t.name];
      if (!args) continue; // a tool this suite does not know yet
      const result = await client.callTool({ name: t.name, arguments: args });
      expect(result.isError, `${t.name}: ${text(result)}`).toBe(false);
      expect(() => JSON.parse(text(result))).not.toThrow();
      called.push(t.name);
    }
    expect(called).toContain("read_file");
    const read = await client.callTool({ name: "read_file", arguments: { path: "src/a.txt" } });
    expect(JSON.parse(text(read)).path).toBe("src/a.txt");

    for (const [args, code] of [
      [{ path: "../secret.txt" }, "TOOL_ARGUMENTS_INVALID"],
      [{ path: "link" }, "PATH_ESCAPES_WORKSPACE"],
    ] as const) {
      const refused = await client.callTool({ name: "read_file", arguments: args });
      expect(refused.isError).toBe(true);
      const body = text(refused);
      expect(JSON.parse(body).error).toMatchObject({ code, hint: expect.any(String) });
      expect(body).not.toContain("TOP-SECRET-VALUE");
    }
    if (TOOLS.includes("write_file")) {
      const refused = await client.callTool({ name: "write_file", arguments: { path: "link", content: "x" } });
      expect(refused.isError).toBe(true);
      expect(await readFile(join(root, "..", "secret.txt"), "utf8")).toBe("TOP-SECRET-VALUE");
    }
  });

  test("exits when the client closes the connection", async () => {
    const { root } = await prepare();
    const { client, transport, stderr } = await start(["--root", root]);
    const pid = transport.pid!;
    expect(alive(pid)).toBe(true);
    await client.close();
    clients.pop();
    expect(await waitFor(() => !alive(pid))).toBe(true);
    expect(stderr()).toContain("stopped (stdin closed)");
  });

  test("stops cleanly on SIGTERM while the client keeps the connection open", async () => {
    const { root } = await prepare();
    const child = spawn(process.execPath, [BIN, "mcp", "--root", root], { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    expect(await waitFor(() => stderr.includes("serving"))).toBe(true);
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    expect(stderr).toContain("stopped (SIGTERM)");
    child.stdin.destroy();
  });

  test.skipIf(!TOOLS.includes("node_process"))(
    "cancelling a long node_process kills its child (checked through /proc)",
    async () => {
      const { root } = await prepare();
      // A long timeout, so that only the cancellation can end the script.
      const { client } = await start(["--root", root, "--timeout-ms", "30000"]);
      const controller = new AbortController();
      // The child is found through /proc by a marker in its arguments: inside the sandbox's PID
      // namespace, process.pid is not the host's pid.
      const mark = marker();
      const source = 'require("fs").writeFileSync("child.started", "yes"); setInterval(() => {}, 1000);';
      const call = client.callTool(
        { name: "node_process", arguments: { source, arguments: [mark] } },
        undefined,
        { signal: controller.signal, timeout: 60_000 },
      );
      const settled = call.then(
        () => "resolved",
        () => "rejected",
      );
      const started = join(root, "child.started");
      expect(await waitFor(() => existsSync(started) && readFileSync(started, "utf8").length > 0, 10_000)).toBe(true);
      // Past node_process's default 500 ms timeout the script still runs: --timeout-ms reached it.
      let done = false;
      void settled.then(() => (done = true));
      await new Promise((r) => setTimeout(r, 1000));
      expect(done).toBe(false);
      expect(aliveWith(mark)).not.toEqual([]);
      controller.abort("stop");
      expect(await settled).toBe("rejected");
      expect(await waitFor(() => aliveWith(mark).length === 0)).toBe(true);
      // The server is still serving afterwards.
      const read = await client.callTool({ name: "read_file", arguments: { path: "src/a.txt" } });
      expect(read.isError).toBe(false);
    },
  );
});

describe("workcell mcp flags", () => {
  test("the workspace is required, as DIR or --root DIR, once", () => {
    expect(() => parseMcpArgs([])).toThrow(/the workspace DIR \(or --root DIR\) is required/);
    expect(parseMcpArgs(["/tmp"])).toEqual({ root: "/tmp", options: {} });
    expect(parseMcpArgs(["/tmp", "--network"])).toEqual({ root: "/tmp", options: { processes: { network: true } } });
    expect(() => parseMcpArgs(["/tmp", "/var"])).toThrow(/unexpected argument "\/var": give the workspace once/);
    expect(() => parseMcpArgs(["--root", "/tmp", "/var"])).toThrow(/unexpected argument "\/var"/);
  });

  test("--timeout-ms and --network become the process tools' options", () => {
    expect(() => parseMcpArgs(["--root", "/tmp", "--timeout-ms", "0"])).toThrow(/--timeout-ms/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--timeout-ms", "1e3"])).toThrow(/--timeout-ms/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--bogus"])).toThrow();
    expect(() => parseMcpArgs(["--root", "/tmp", "extra"])).toThrow(/unexpected argument/);
    expect(parseMcpArgs(["--root", "/tmp"])).toEqual({ root: "/tmp", options: {} });
    expect(parseMcpArgs(["--root", "rel/dir", "--network", "--timeout-ms", "2500"])).toEqual({
      root: join(process.cwd(), "rel/dir"),
      options: { processes: { timeoutMs: 2500, network: true } },
    });
  });

  test("--sandbox, --read-path and --write-path become the process tools' sandbox options", () => {
    expect(parseMcpArgs(["--root", "/tmp", "--sandbox", "required", "--read-path", "/a", "--read-path", "/b", "--write-path", "/c"])).toEqual({
      root: "/tmp",
      options: { processes: { sandbox: "required", readPaths: ["/a", "/b"], writePaths: ["/c"] } },
    });
    expect(() => parseMcpArgs(["--root", "/tmp", "--sandbox", "on"])).toThrow(/--sandbox must be auto, required or off/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--read-path", "rel"])).toThrow(/--read-path must be an absolute path/);
    expect(() => parseMcpArgs(["--root", "/tmp", "--write-path", "./x"])).toThrow(/--write-path must be an absolute path/);
  });

  test("through the server: --read-path opens one outside file to run_command, --sandbox off opens everything", async () => {
    const { root, parent } = await prepare();
    const outside = join(parent, "granted");
    await mkdir(outside);
    await writeFile(join(outside, "notes.txt"), "GRANTED-NOTES");
    const cat = async (args: string[]) => {
      const { client } = await start(["--root", root, ...args]);
      const r = await client.callTool({ name: "run_command", arguments: { argv: ["sh", "-c", 'cat "$1"/notes.txt "$2"', "sh", outside, join(parent, "secret.txt")] } });
      return JSON.parse(text(r)) as { output: string; sandbox: { filesystem: string } };
    };
    const confined = await cat([]);
    expect(confined.sandbox.filesystem).toBe("confined");
    expect(confined.output).not.toContain("GRANTED-NOTES");
    expect(confined.output).not.toContain("TOP-SECRET-VALUE");
    const granted = await cat(["--read-path", outside]);
    expect(granted.output).toContain("GRANTED-NOTES");
    expect(granted.output).not.toContain("TOP-SECRET-VALUE");
    const off = await cat(["--sandbox", "off"]);
    expect(off.sandbox.filesystem).toBe("open");
    expect(off.output).toContain("TOP-SECRET-VALUE");
  });

  test("`workcell mcp DIR` serves DIR, and says at start what the sandbox will enforce", async () => {
    const { root } = await prepare();
    const { client, stderr } = await start([root]);
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toContain("read_file");
    const read = await client.callTool({ name: "read_file", arguments: { path: "src/a.txt" } });
    expect(JSON.parse(text(read)).content).toBe("alpha\n");
    expect(await waitFor(() => /workcell mcp: sandbox auto: files /.test(stderr()))).toBe(true);
  });

  test("`workcell mcp --help` prints the usage and exits 0; an error is one line naming the flag and where to look", () => {
    const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", input: "" });
    for (const flag of ["--help", "-h"]) {
      const help = run("mcp", flag);
      expect(help.status).toBe(0);
      expect(help.stdout).toContain("workcell mcp DIR");
      expect(help.stderr).toBe("");
    }
    const bad = run("mcp", "/tmp", "--timeout-ms", "soon");
    expect(bad.status).toBe(2);
    expect(bad.stderr).toBe('workcell: --timeout-ms must be a positive whole number of milliseconds (got "soon") (see workcell mcp --help)\n');
    const typo = run("mcp", "/tmp", "--netwrok");
    expect(typo.stderr).toBe("workcell: --netwrok: unknown option; did you mean --network? (see workcell mcp --help)\n");
    // The --http settings are named as the flags a person typed, never as the options of the
    // function behind them.
    const env = { ...process.env, WORKCELL_MCP_TOKEN: "short" };
    const token = spawnSync(process.execPath, [BIN, "mcp", "--http", "127.0.0.1:0", "/tmp"], { encoding: "utf8", input: "", env });
    expect(token.status).toBe(2);
    expect(token.stderr).toMatch(/^workcell: WORKCELL_MCP_TOKEN: the token must be at least 16 characters .*\(see workcell mcp --help\)\n$/);
    const open = spawnSync(process.execPath, [BIN, "mcp", "--http", "0.0.0.0:0", "/tmp"], { encoding: "utf8", input: "", env: { ...env, WORKCELL_MCP_TOKEN: "x".repeat(32) } });
    expect(open.status).toBe(2);
    expect(open.stderr).toBe("workcell: --http 0.0.0.0 is not a loopback address: add --public to serve the workspace to the network (see workcell mcp --help)\n");
    for (const r of [bad, typo, token, open]) expect(r.stderr).not.toMatch(/createMcpHttpServer|options\.|public: true|usage:/);
  });

  test("bad command lines exit non-zero with a message and the usage", async () => {
    const { parent } = await tempWorkspace();
    const run = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args], { encoding: "utf8", input: "" });
    const missing = run("mcp", "--root", join(parent, "does-not-exist"));
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain("cannot open the workspace");
    expect(missing.stdout).toBe("");
    const noRoot = run("mcp");
    expect(noRoot.status).toBe(2);
    expect(noRoot.stderr).toBe("workcell: the workspace DIR (or --root DIR) is required: the directory the tools may act on (see workcell mcp --help)\n");
    expect(run("frobnicate").status).toBe(2);
    expect(run().status).toBe(2);
    const help = run("--help");
    expect(help.status).toBe(0);
    expect(help.stdout).toContain("workcell mcp DIR");
    const version = run("--version");
    expect(version.stdout.trim()).toBe(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
  });
});

describe("workcell mcp survives bad frames", () => {
  test("after an oversized line and a null-params call, the same connection still answers tools/list", async () => {
    const { root } = await prepare();
    const child = spawn(process.execPath, [BIN, "mcp", "--root", root], { stdio: ["pipe", "pipe", "pipe"] });
    try {
      const lines: Record<string, unknown>[] = [];
      let buffered = "";
      child.stdout.on("data", (c: Buffer) => {
        buffered += c.toString();
        let nl: number;
        while ((nl = buffered.indexOf("\n")) !== -1) {
          lines.push(JSON.parse(buffered.slice(0, nl)));
          buffered = buffered.slice(nl + 1);
        }
      });
      const send = (obj: unknown) => child.stdin.write(`${JSON.stringify(obj)}\n`);
      const reply = async (id: unknown) => {
        await waitFor(() => lines.some((l) => l.id === id), 20_000);
        return lines.find((l) => l.id === id);
      };
      send({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
      expect((await reply(0))!.result).toBeDefined();
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      child.stdin.write(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"${"a".repeat(11 << 20)}"}}}\n`);
      expect((await reply(1))!.error).toMatchObject({ code: -32600 });
      send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: null });
      expect((await reply(2))!.error).toMatchObject({ code: -32602 });
      send({ jsonrpc: "2.0", id: 3, method: "tools/list" });
      const listed = (await reply(3))!.result as { tools: { name: string }[] };
      expect(listed.tools.map((t) => t.name)).toEqual(TOOLS);
      send({ jsonrpc: "2.0", id: 4, method: "tools/call", params: { name: "read_file", arguments: { path: "src/a.txt" } } });
      expect(JSON.stringify((await reply(4))!.result)).toContain("alpha");
      expect(child.exitCode).toBe(null);
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => child.once("exit", r));
    }
  });
});
