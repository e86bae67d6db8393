// The network allowlist's scenarios, in plain JavaScript so that they also run in a host process
// started as `nobody` (test/network-runner.mjs). Every destination is a listener on 127.0.0.1
// that the scenario starts itself; a scenario returns what the child saw, what the listener
// got and the tool's result.
import http from "node:http";
import net from "node:net";
import { lookup } from "node:dns/promises";
import { hostname } from "node:os";

// The child: one request per call, its outcome as one JSON line. `get URL` and `connect
// host:port` go through the proxy named by HTTP_PROXY (directly without one); `direct PORT`
// opens a plain TCP connection to 127.0.0.1:PORT, bypassing any proxy.
export const CHILD = String.raw`
const http = require("http"), net = require("net");
const [op, target] = process.argv.slice(1);
const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;
const done = (o) => console.log(JSON.stringify({ ...o, env: { HTTP_PROXY: process.env.HTTP_PROXY, HTTPS_PROXY: process.env.HTTPS_PROXY, ALL_PROXY: process.env.ALL_PROXY, https_proxy: process.env.https_proxy, NO_PROXY: process.env.NO_PROXY } }));
if (op === "get") {
  const req = proxy ? http.request({ host: proxy.hostname, port: proxy.port, method: "GET", path: target }) : http.request(target);
  req.on("response", (r) => { let b = ""; r.on("data", (d) => (b += d)); r.on("end", () => done({ status: r.statusCode, body: b })); });
  req.on("error", (e) => done({ error: e.code || e.message }));
  req.end();
} else if (op === "connect") {
  const req = http.request({ host: proxy.hostname, port: proxy.port, method: "CONNECT", path: target });
  req.on("connect", (res, sock, head) => {
    let b = head.toString();
    if (res.statusCode === 200) sock.write("GET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    sock.on("data", (d) => (b += d));
    sock.on("end", () => done({ status: res.statusCode, body: b }));
    sock.on("error", (e) => done({ status: res.statusCode, body: b, error: e.code }));
  });
  req.on("error", (e) => done({ error: e.code || e.message }));
  req.end();
} else {
  const s = net.connect(Number(target), "127.0.0.1");
  s.on("connect", () => { done({ connected: true }); s.destroy(); });
  s.on("error", (e) => done({ connected: false, error: e.code }));
}
`;

/** A listener on 127.0.0.1 that answers `hello <path>` and records what it got. */
export async function origin() {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url}`);
    res.end(`hello ${req.url}`);
  });
  server.on("connection", (s) => seen.push("connection") && s.on("error", () => {}));
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { port: server.address().port, seen, close: () => new Promise((r) => server.close(r)) };
}

const signal = () => new AbortController().signal;

/** Runs the child once with `network`; returns what it printed and the result. */
export async function child(lib, root, network, op, target, extra = {}) {
  const tool = lib.createNodeProcessTool(root, { timeoutMs: 15_000, network, ...extra });
  const result = await tool.execute({ source: CHILD, arguments: [op, String(target)] }, { signal: signal() });
  let saw;
  try {
    saw = JSON.parse(result.stdout.trim().split("\n").pop());
  } catch {
    saw = { unparsed: result.stdout, stderr: result.stderr };
  }
  return { saw, result };
}

/** A name other than `localhost` that this machine's resolver maps to a loopback address, if any. */
export async function loopbackName() {
  for (const name of [hostname(), "ip6-localhost", "ip6-loopback"]) {
    try {
      const { address } = await lookup(name, { family: 4 });
      if (address.startsWith("127.")) return name;
    } catch {}
  }
  return null;
}

/** Every scenario a host can run as any user; one object of observations. */
export async function scenarios(lib, root) {
  const out = {};
  const a = await origin();
  const b = await origin();
  try {
    const allow = { allow: [`localhost:${a.port}`] };
    out.plain = await child(lib, root, allow, "get", `http://localhost:${a.port}/plain`);
    out.tunnel = await child(lib, root, allow, "connect", `localhost:${a.port}`);
    out.seenA = [...a.seen];
    out.unlisted = await child(lib, root, allow, "get", `http://localhost:${b.port}/secret`);
    out.unlistedTunnel = await child(lib, root, allow, "connect", `127.0.0.1:${b.port}`);
    out.seenB = [...b.seen];
    // Filter off: the host opens the network, and the same request reaches the listener.
    out.unlistedOff = await child(lib, root, true, "get", `http://localhost:${b.port}/secret`);
    out.bypass = await child(lib, root, allow, "direct", a.port);
    out.bypassOff = await child(lib, root, true, "direct", a.port);
    // Without Landlock the namespace alone stops it: its loopback is not the host's.
    out.bypassNoLandlock = await child(lib, root, allow, "direct", a.port, { sandboxFeatures: { landlockAbi: null } });
    const name = await loopbackName();
    if (name) {
      out.name = name;
      out.rebind = await child(lib, root, { allow: [`${name}:${a.port}`] }, "connect", `${name}:${a.port}`);
      out.rebindListed = await child(lib, root, { allow: [`${name}:${a.port}`, `127.0.0.1:${a.port}`] }, "connect", `${name}:${a.port}`);
    }
  } finally {
    await a.close();
    await b.close();
  }
  return out;
}
