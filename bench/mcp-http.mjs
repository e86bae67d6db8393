// Remote MCP against local MCP: read_file of a 4 KiB file through `workcell mcp --http` (20
// sessions, each its own StreamableHTTPClientTransport, with 4 callers each) against the same
// calls through `workcell mcp` over stdio (one session, the same 80 callers), each server a
// child process and the MCP SDK's own client in this process. Calls per second and the p99
// latency of one call, over the same wall time.
//
// The SDK's HTTP client is given a `fetch` over a keep-alive `node:http` Agent (`keepAliveFetch`
// below), as a client that makes many calls would: the global `fetch` (undici's, with its Web
// streams) costs this process 0.6-0.9 ms of CPU per call on two shared cores, several times what
// the server spends, so with it the row measures the client's fetch. A third row reports the
// calls per second with the SDK's default `fetch`, for reference.
import { spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { Readable } from "node:stream";
import { readFileSync } from "node:fs";
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
const DURATION_MS = 4000;
const ROUNDS = 3;
/** Each transport's warm-up: V8 has compiled the HTTP stacks' hot code by then (it takes seconds). */
const WARMUP_MS = 3000;

/**
 * A `fetch` for the SDK's StreamableHTTPClientTransport over `node:http` with a keep-alive
 * Agent: the request's headers and body as given; an event stream (the session's GET stream)
 * passed on as a Web `Response`'s body; any other answer read whole and handed back as the part
 * of a `Response` the transport reads (`ok`, `status`, `statusText`, `headers.get`, `json()`,
 * `text()`, a null `body`). A Web `Response` per call, with its `Headers` and its body stream,
 * cost this process a fifth of its CPU per call, which the server row should not measure.
 *
 * The transport passes the same `AbortSignal` (its own, aborted when it closes) with every
 * request. Handing it to `http.request` adds and removes two listeners on it per request, 9% of
 * this process's CPU per call; here each signal gets one listener, which destroys the requests
 * of it still open. The URL's parts are taken once per URL.
 */
export function keepAliveFetch(maxSockets = 256) {
  // A `timeout` makes the Agent honour the server's `Keep-Alive: timeout=5` hint (it drops an
  // idle socket a second before the server would), so that no request goes out on a socket the
  // server is closing; without one, an idle socket is kept until the server closes it.
  const agent = new Agent({ keepAlive: true, maxSockets, timeout: 60_000 });
  const targets = new Map();
  /** The requests still open, by the signal they were given. */
  const open = new WeakMap();
  const watch = (signal, req) => {
    let reqs = open.get(signal);
    if (reqs === undefined) {
      reqs = new Set();
      open.set(signal, reqs);
      signal.addEventListener("abort", () => {
        for (const r of reqs) r.destroy(signal.reason);
        reqs.clear();
      }, { once: true });
    }
    reqs.add(req);
    return () => reqs.delete(req);
  };
  return (url, init = {}) =>
    new Promise((resolve, reject) => {
      const signal = init.signal ?? undefined;
      if (signal?.aborted) return reject(signal.reason);
      const key = String(url);
      let target = targets.get(key);
      if (target === undefined) {
        const u = new URL(key);
        target = { host: u.hostname, port: u.port, path: u.pathname + u.search };
        targets.set(key, target);
      }
      const headers = {};
      if (init.headers instanceof Headers) init.headers.forEach((v, k) => void (headers[k] = v));
      else Object.assign(headers, init.headers);
      if (init.body != null) headers["content-length"] = Buffer.byteLength(init.body);
      let done = () => undefined;
      const req = request({ ...target, method: init.method ?? "GET", headers, agent }, (res) => {
        const status = res.statusCode ?? 0;
        if ((res.headers["content-type"] ?? "").startsWith("text/event-stream")) {
          const head = {};
          for (const [k, v] of Object.entries(res.headers)) head[k] = Array.isArray(v) ? v.join(", ") : v;
          // The stream stays open (and abortable) until the transport closes it.
          resolve(new Response(Readable.toWeb(res), { status, headers: head }));
          return;
        }
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () => {
          done();
          resolve(answer(res, status, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
        });
      });
      if (signal !== undefined) done = watch(signal, req);
      req.on("error", (err) => {
        done();
        reject(err);
      });
      req.end(init.body ?? undefined);
    });
}

/** What the SDK's transport reads of a `Response`, for an answer read whole. */
function answer(res, status, body) {
  const h = res.headers;
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: res.statusMessage ?? "",
    headers: {
      get(name) {
        const v = h[String(name).toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(", ") : String(v);
      },
      has: (name) => h[String(name).toLowerCase()] !== undefined,
    },
    body: null,
    json: async () => JSON.parse(body.toString("utf8")),
    text: async () => body.toString("utf8"),
  };
}

/** CPU time (ms, user + system) a process has used, from /proc; NaN where there is none. */
function cpuMsOf(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks of 1/100 s
  } catch {
    return NaN;
  }
}

/**
 * Runs `callers` (each a function making one call) flat out for `ms`: calls/s, the p99 latency
 * (ms), and the CPU per call (ms) of this process (the client) and of the server `serverPid`.
 */
async function drive(callers, ms, serverPid) {
  const samples = [];
  let stop = false;
  const server0 = cpuMsOf(serverPid);
  const client0 = process.cpuUsage();
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
  const client = process.cpuUsage(client0);
  const n = samples.length;
  samples.sort((a, b) => a - b);
  return {
    callsPerSecond: n / elapsed,
    p99Ms: samples[Math.floor(0.99 * (n - 1))],
    n,
    clientCpuMs: (client.user + client.system) / 1000 / n,
    serverCpuMs: (cpuMsOf(serverPid) - server0) / n,
  };
}

function startHttp(root) {
  const child = spawn(process.execPath, [BIN, "mcp", "--http", "127.0.0.1:0", "--root", root, "--max-sessions", String(2 * SESSIONS + 4)], {
    env: { PATH: process.env.PATH ?? "", WORKCELL_MCP_TOKEN: TOKEN },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  return new Promise((resolve, reject) => {
    child.stderr.on("data", (d) => {
      err += d;
      const m = /on (http:\/\/\S+\/mcp)/.exec(err);
      if (m) resolve({ child, url: m[1], stderr: () => err });
    });
    child.once("exit", (code) => {
      if (!/on http:/.test(err)) reject(new Error(`workcell mcp --http exited ${code}: ${err}`));
    });
  });
}

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    await writeFile(join(dir, "a.txt"), "x".repeat(4096));
    const args = { name: "read_file", arguments: { path: "a.txt" } };

    const { child, url, stderr } = await startHttp(dir);
    const sessions = [];
    const stdioClient = new Client({ name: "bench", version: "1" });
    const stdioTransport = new StdioClientTransport({ command: process.execPath, args: [BIN, "mcp", "--root", dir], env: { PATH: process.env.PATH ?? "" }, stderr: "ignore" });
    let http, stdio, defaultFetch, runs;
    try {
      const open = async (fetch) => {
        const mine = [];
        for (let i = 0; i < SESSIONS; i++) {
          const transport = new StreamableHTTPClientTransport(new URL(url), {
            requestInit: { headers: { authorization: `Bearer ${TOKEN}` } },
            ...(fetch ? { fetch } : {}),
          });
          const client = new Client({ name: "bench", version: "1" });
          await client.connect(transport);
          mine.push({ client, transport });
        }
        sessions.push(...mine);
        return mine.flatMap((s) => Array.from({ length: PER_SESSION }, () => () => s.client.callTool(args)));
      };
      const httpCallers = await open(keepAliveFetch());
      const defaultFetchCallers = await open(undefined);

      await stdioClient.connect(stdioTransport);
      const stdioCallers = Array.from({ length: SESSIONS * PER_SESSION }, () => () => stdioClient.callTool(args));

      // Warm each, then measure them in alternating rounds, keeping each one's median round.
      await drive(httpCallers, WARMUP_MS, child.pid);
      await drive(stdioCallers, WARMUP_MS, stdioTransport.pid);
      await drive(defaultFetchCallers, WARMUP_MS, child.pid);
      runs = { http: [], stdio: [], defaultFetch: [] };
      for (let round = 0; round < ROUNDS; round++) {
        runs.http.push(await drive(httpCallers, DURATION_MS, child.pid));
        runs.stdio.push(await drive(stdioCallers, DURATION_MS, stdioTransport.pid));
      }
      runs.defaultFetch.push(await drive(defaultFetchCallers, DURATION_MS, child.pid));
      const median = (rs) => [...rs].sort((a, b) => a.callsPerSecond - b.callsPerSecond)[Math.floor(rs.length / 2)];
      http = median(runs.http);
      stdio = median(runs.stdio);
      defaultFetch = median(runs.defaultFetch);
    } catch (err) {
      child.kill("SIGTERM");
      throw new Error(`${err instanceof Error ? err.message : err}; the server said: ${stderr()}`);
    }
    const rounds = (rs) => rs.map((r) => r.callsPerSecond.toFixed(0)).join(", ");
    const cpu = (r) => `CPU per call: client ${r.clientCpuMs.toFixed(3)} ms, server ${r.serverCpuMs.toFixed(3)} ms`;

    for (const s of sessions) {
      await s.transport.terminateSession();
      await s.client.close();
    }
    await stdioClient.close();
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));

    const shape = `${SESSIONS} sessions x ${PER_SESSION} callers`;
    /** A row of HTTP against stdio: `what` (a suffix of the name), its unit, both values. */
    const row = (what, unit, ours, theirs, rest) =>
      h.row({
        name: `read_file 4 KiB over MCP Streamable HTTP (${shape})${what}`,
        subject: "workcell mcp --http",
        baseline: `workcell mcp over stdio (1 session, ${SESSIONS * PER_SESSION} callers)`,
        unit,
        subjectValue: ours,
        baselineValue: theirs,
        ratio: ours / theirs,
        target: "report",
        pass: true,
        ...rest,
      });
    row(": calls/s", "calls/s", http.callsPerSecond, stdio.callsPerSecond, {
      target: ">= 0.5",
      pass: http.callsPerSecond / stdio.callsPerSecond >= 0.5,
      notes: `the SDK's client with a keep-alive node:http fetch answering with what the transport reads of a Response; median of ${ROUNDS} alternating ${DURATION_MS} ms rounds after ${WARMUP_MS} ms warm-ups (http: ${rounds(runs.http)}; stdio: ${rounds(runs.stdio)} calls/s); median rounds' ${cpu(http)} over HTTP, ${cpu(stdio)} over stdio`,
    });
    row(": p99 latency", "ms", http.p99Ms, stdio.p99Ms, { notes: "the p99 of the median round above" });
    // What the server could serve with the client on other cores: its CPU per call, both ways.
    row(": the server's CPU per call", "ms", http.serverCpuMs, stdio.serverCpuMs, {
      notes: `the server processes' CPU (all threads) in the median rounds above over their calls; with each server alone on a core and its client elsewhere, HTTP would serve ${(stdio.serverCpuMs / http.serverCpuMs).toFixed(2)}x stdio's calls/s`,
    });
    row(", the SDK's default fetch: calls/s", "calls/s", defaultFetch.callsPerSecond, stdio.callsPerSecond, {
      notes: `the same server with the SDK's client on the global fetch (undici): one ${DURATION_MS} ms round after the rounds above; p99 ${defaultFetch.p99Ms.toFixed(0)} ms; ${cpu(defaultFetch)}`,
    });
  } finally {
    await cleanup();
  }
}
