// A session's `ports` open the session's own listener to the tool set, and nothing else: the
// tool set's processes share one network namespace of their own while ports are in use, so a
// port nobody in the tool set listens on reaches no service of the host (on any address), and a
// process started during a session's lease cannot use the port after the session stopped.
// The host's listeners here are real ones, outside every sandbox, on 127.0.0.2 and 127.0.0.1.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, executeToolCall, sandboxSupport } from "../dist/index.js";
import { call, content } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";
import { withScratch } from "./process-helpers.js";

const s = sandboxSupport();
// Containing ports needs Landlock's TCP rules (ABI 4) and namespaces.
const contained = s.pidNamespace && s.userNamespace && (s.landlockAbi ?? 0) >= 4;

/** Connects to each `host:port` argument (after a line on stdin if the first is `wait`) and prints `host:port <outcome>`. */
const CONNECT = `const net = require("net");
const wait = process.argv[1] === "wait"; const hosts = process.argv.slice(wait ? 2 : 1);
const go = () => { let left = hosts.length;
  for (const h of hosts) { const i = h.lastIndexOf(":"); const s = net.connect(+h.slice(i + 1), h.slice(0, i));
    const done = (what) => { console.log(h + " " + what); s.destroy(); if (!--left) process.exit(0); };
    s.on("connect", () => done("connected")); s.on("error", (e) => done(e.code)); } };
if (wait) { console.log("waiting"); process.stdin.once("data", go); } else go();`;

/** A service of the host on `ip:port`, counting the connections it accepted. */
async function hostService(ip: string, port: number): Promise<{ accepted: () => number }> {
  let n = 0;
  const server: Server = createServer((c) => {
    n++;
    c.destroy();
  });
  await new Promise<void>((resolve, reject) => server.once("error", reject).listen(port, ip, () => resolve()));
  onTestFinished(() => new Promise<void>((r) => server.close(() => r())));
  return { accepted: () => n };
}

/** A port free on both loopback addresses the test listens on. */
async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve) => {
      const srv = createServer().listen(0, "127.0.0.1", () => {
        const p = (srv.address() as { port: number }).port;
        srv.close(() => resolve(p));
      });
    });
    const free = await new Promise<boolean>((resolve) => {
      const srv = createServer().once("error", () => resolve(false));
      srv.listen(port, "127.0.0.2", () => srv.close(() => resolve(true)));
    });
    if (free) return port;
  }
}

function toolSet(root: string, scratchDir: string, port: number) {
  const tools = createCodingTools(root, { sessions: { ports: [port], scratchDir }, runCommand: { scratchDir } });
  onTestFinished(() => closeTools(tools));
  const reg = new ToolRegistry(tools);
  return (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
}

describe.runIf(contained)("a session's ports", () => {
  test("a_session_port_nobody_listens_on_reaches_no_service_of_the_host", async () => {
    const { root, scratchDir } = await withScratch();
    const port = await freePort();
    const other = await hostService("127.0.0.2", port);
    const same = await hostService("127.0.0.1", port);
    const run = toolSet(root, scratchDir, port);
    // The session asks for the port and never listens on it.
    const lease = await run("start_process", { argv: ["sleep", "300"], ports: [port], waitMs: 0 });
    expect(lease.running, JSON.stringify(lease)).toBe(true);
    const targets = [`127.0.0.2:${port}`, `127.0.0.1:${port}`];
    const got = await run("run_command", { argv: ["node", "-e", CONNECT, ...targets] });
    expect(got.exitCode, got.output).toBe(0);
    for (const t of targets) expect(got.output).toContain(`${t} ECONNREFUSED`);
    expect([other.accepted(), same.accepted()]).toEqual([0, 0]);
  }, 60_000);

  test("a_process_started_during_the_lease_cannot_reach_the_host_after_the_session_stopped", async () => {
    const { root, scratchDir } = await withScratch();
    const port = await freePort();
    const host = await hostService("127.0.0.2", port);
    const run = toolSet(root, scratchDir, port);
    const lease = await run("start_process", { argv: ["sleep", "300"], ports: [port], waitMs: 0 });
    expect(lease.running, JSON.stringify(lease)).toBe(true);
    // Started while the port is open, then the lease ends before it connects.
    const target = `127.0.0.2:${port}`;
    const late = await run("start_process", { argv: ["node", "-e", CONNECT, "wait", target], waitFor: "waiting", waitMs: 15_000 });
    expect(late.matched, JSON.stringify(late)).toBe(true);
    expect((await run("stop_process", { id: lease.id, signal: "SIGKILL" })).running).toBe(false);
    await run("write_process", { id: late.id, input: "go\n" });
    const out = await run("read_process", { id: late.id, waitFor: `${target} `, waitMs: 15_000 });
    expect(out.matched, JSON.stringify(out)).toBe(true);
    expect(out.output).toContain(`${target} ECONNREFUSED`);
    expect(host.accepted()).toBe(0);
  }, 60_000);

  test("an_unprivileged_host's_session_ports_reach_only_its_own_listener", async () => {
    const { parent, root } = await withScratch();
    for (const d of [parent, root]) await chmod(d, 0o777);
    const copy = packageNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      return;
    }
    onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
    const port = await freePort();
    const other = await hostService("127.0.0.2", port);
    const same = await hostService("127.0.0.1", port);
    const script = join(parent, "host.mjs");
    await writeFile(
      script,
      `import { createCodingTools, closeTools, ToolRegistry, executeToolCall } from ${JSON.stringify(join(copy.dir, "dist", "index.js"))};
const [root, port, CONNECT] = [process.argv[2], +process.argv[3], process.argv[4]];
const tools = createCodingTools(root, { sessions: { ports: [port] } });
const reg = new ToolRegistry(tools);
const run = async (name, args) => JSON.parse((await executeToolCall(reg, { id: "c", name, arguments: args }, new AbortController().signal)).content);
const targets = ["127.0.0.2:" + port, "127.0.0.1:" + port];
const out = {};
const lease = await run("start_process", { argv: ["sleep", "300"], ports: [port], waitMs: 0 });
out.leased = (await run("run_command", { argv: ["node", "-e", CONNECT, ...targets] })).output;
const late = await run("start_process", { argv: ["node", "-e", CONNECT, "wait", targets[0]], waitFor: "waiting", waitMs: 15000 });
await run("stop_process", { id: lease.id, signal: "SIGKILL" });
await run("write_process", { id: late.id, input: "go\\n" });
out.late = (await run("read_process", { id: late.id, waitFor: targets[0] + " ", waitMs: 15000 })).output;
// The legitimate use: a session listening on the port serves the tool set (its own loopback).
const SERVER = "require('http').createServer((q, s) => s.end('hello from the session')).listen(+process.argv[1], '127.0.0.1', () => console.log('listening'))";
const server = await run("start_process", { argv: ["node", "-e", SERVER, String(port)], ports: [port], waitFor: "listening", waitMs: 15000 });
out.serverMatched = server.matched;
out.fetched = (await run("run_command", { argv: ["node", "-e", "fetch('http://127.0.0.1:' + process.argv[1]).then((r) => r.text()).then((t) => console.log(t))", String(port)] })).output;
await closeTools(tools);
console.log(JSON.stringify(out));
`,
    );
    await chmod(script, 0o644);
    const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, script, root, String(port), CONNECT], { encoding: "utf8", cwd: "/", env: { PATH: process.env.PATH, HOME: "/tmp" } });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, unknown>;
    for (const t of [`127.0.0.2:${port}`, `127.0.0.1:${port}`]) expect(got.leased, JSON.stringify(got)).toContain(`${t} ECONNREFUSED`);
    expect(got.late, JSON.stringify(got)).toContain(`127.0.0.2:${port} ECONNREFUSED`);
    expect([other.accepted(), same.accepted()]).toEqual([0, 0]);
    expect(got.serverMatched, JSON.stringify(got)).toBe(true);
    expect(got.fetched).toBe("hello from the session\n");
  }, 60_000);
});
