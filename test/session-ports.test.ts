// A session's `ports` open the session's own listener to the tool set, and nothing else: the
// tool set's processes share one network namespace of their own while ports are in use, so a
// port nobody in the tool set listens on reaches no service of the host (on any address), and a
// process started during a session's lease cannot use the port after the session stopped.
// The host's listeners here are real ones, outside every sandbox, on 127.0.0.2 and 127.0.0.1.
import { createServer, type Server } from "node:net";
import { describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, executeToolCall, sandboxSupport } from "../dist/index.js";
import { call, content } from "./helpers.js";
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
});
