// Remote MCP against local MCP: read_file of a 4 KiB file through `workcell mcp --http` (20
// sessions, each its own StreamableHTTPClientTransport, with 4 callers each) against the same
// calls through `workcell mcp` over stdio (one session, the same 80 callers), each server a
// child process and the MCP SDK's own client in this process. Calls per second and the p99
// latency of one call, over the same wall time.
import { spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const BIN = join(dirname(fileURLToPath(import.meta.url)), "..", "bin", "workcell.mjs");
const TOKEN = "bench-token-0123456789abcdef";
const SESSIONS = 20;
const PER_SESSION = 4;
const DURATION_MS = 5000;

/** Runs `callers` (each a function making one call) flat out for `ms`; calls/s and p99 latency (ms). */
async function drive(callers, ms) {
  const samples = [];
  let stop = false;
  const start = performance.now();
  await Promise.all(
    callers.map(async (call) => {
      while (!stop) {
        const t0 = performance.now();
        await call();
        samples.push(performance.now() - t0);
        if (performance.now() - start >= ms) stop = true;
      }
    }),
  );
  const elapsed = (performance.now() - start) / 1000;
  samples.sort((a, b) => a - b);
  return { callsPerSecond: samples.length / elapsed, p99Ms: samples[Math.floor(0.99 * (samples.length - 1))], n: samples.length };
}

function startHttp(root) {
  const child = spawn(process.execPath, [BIN, "mcp", "--http", "127.0.0.1:0", "--root", root, "--max-sessions", String(SESSIONS + 4)], {
    env: { PATH: process.env.PATH ?? "", WORKCELL_MCP_TOKEN: TOKEN },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => {
      err += d;
      const m = /on (http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve({ child, url: m[1] });
    });
    child.once("exit", (code) => reject(new Error(`workcell mcp --http exited ${code}: ${err}`)));
  });
}

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    await writeFile(join(dir, "a.txt"), "x".repeat(4096));
    const args = { name: "read_file", arguments: { path: "a.txt" } };

    const { child, url } = await startHttp(dir);
    const sessions = [];
    for (let i = 0; i < SESSIONS; i++) {
      const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${TOKEN}` } } });
      const client = new Client({ name: "bench", version: "1" });
      await client.connect(transport);
      sessions.push({ client, transport });
    }
    const httpCallers = sessions.flatMap((s) => Array.from({ length: PER_SESSION }, () => () => s.client.callTool(args)));

    const stdioClient = new Client({ name: "bench", version: "1" });
    await stdioClient.connect(
      new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", "--root", dir], env: { PATH: process.env.PATH ?? "" }, stderr: "ignore" }),
    );
    const stdioCallers = Array.from({ length: SESSIONS * PER_SESSION }, () => () => stdioClient.callTool(args));

    // Warm both, then measure each in turn, twice, keeping each one's better run.
    await drive(httpCallers, 500);
    await drive(stdioCallers, 500);
    const runs = { http: [], stdio: [] };
    for (let round = 0; round < 2; round++) {
      runs.http.push(await drive(httpCallers, DURATION_MS));
      runs.stdio.push(await drive(stdioCallers, DURATION_MS));
    }
    const best = (rs) => rs.reduce((a, b) => (b.callsPerSecond > a.callsPerSecond ? b : a));
    const http = best(runs.http);
    const stdio = best(runs.stdio);

    for (const s of sessions) {
      await s.transport.terminateSession();
      await s.client.close();
    }
    await stdioClient.close();
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));

    const shape = `${SESSIONS} sessions x ${PER_SESSION} callers`;
    h.row({
      name: `read_file 4 KiB over MCP Streamable HTTP (${shape}): calls/s`,
      subject: "workcell mcp --http",
      baseline: `workcell mcp over stdio (1 session, ${SESSIONS * PER_SESSION} callers)`,
      unit: "calls/s",
      subjectValue: http.callsPerSecond,
      baselineValue: stdio.callsPerSecond,
      ratio: http.callsPerSecond / stdio.callsPerSecond,
      target: ">= 0.5",
      pass: http.callsPerSecond / stdio.callsPerSecond >= 0.5,
    });
    h.row({
      name: `read_file 4 KiB over MCP Streamable HTTP (${shape}): p99 latency`,
      subject: "workcell mcp --http",
      baseline: `workcell mcp over stdio (1 session, ${SESSIONS * PER_SESSION} callers)`,
      unit: "ms",
      subjectValue: http.p99Ms,
      baselineValue: stdio.p99Ms,
      ratio: http.p99Ms / stdio.p99Ms,
      target: "report",
      pass: true,
    });
  } finally {
    await cleanup();
  }
}
