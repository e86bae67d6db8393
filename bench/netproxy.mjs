// The filtering proxy's added latency per request on loopback: a confined child makes HTTP GETs
// to a server of the bench on 127.0.0.1, one new connection each, through the proxy of
// `network: { allow: ["localhost:PORT"] }` against the same GETs made directly with
// `network: true`, measured inside the child, in alternating rounds of the same run.
import http from "node:http";
import { createNodeProcessTool, sandboxSupport } from "../dist/index.js";

const ctx = { signal: new AbortController().signal };
const REQUESTS = 200;
const ROUNDS = 5;

// Times REQUESTS sequential GETs (no keep-alive) and prints the median in microseconds.
const CHILD = String.raw`
const http = require("http");
const [url, n] = [process.argv[1], Number(process.argv[2])];
const proxy = process.env.HTTP_PROXY ? new URL(process.env.HTTP_PROXY) : null;
const get = () => new Promise((resolve, reject) => {
  const req = proxy
    ? http.request({ host: proxy.hostname, port: proxy.port, path: url, agent: false })
    : http.request(url, { agent: false });
  req.on("response", (r) => { r.resume(); r.on("end", () => (r.statusCode === 200 ? resolve() : reject(new Error("status " + r.statusCode)))); });
  req.on("error", reject);
  req.end();
});
(async () => {
  for (let i = 0; i < 20; i++) await get();
  const t = [];
  for (let i = 0; i < n; i++) { const s = process.hrtime.bigint(); await get(); t.push(Number(process.hrtime.bigint() - s) / 1000); }
  t.sort((a, b) => a - b);
  console.log(t[Math.floor(t.length / 2)]);
})().catch((e) => { console.error(e.message); process.exit(1); });
`;

export default async function (h) {
  const f = sandboxSupport();
  if (!(f.pidNamespace && f.userNamespace)) {
    console.log("  skipped: no user and PID namespaces here, so no network namespace for the proxy");
    return;
  }
  const server = http.createServer((_req, res) => res.end("ok"));
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const port = server.address().port;
  const { dir, cleanup } = await h.tempDir();
  try {
    const run = async (network) => {
      const tool = createNodeProcessTool(dir, { timeoutMs: 60_000, network });
      const r = await tool.execute({ source: CHILD, arguments: [`http://127.0.0.1:${port}/`, String(REQUESTS)] }, ctx);
      if (r.exitCode !== 0) throw new Error(`the bench child failed: ${r.stderr}`);
      return { us: Number(r.stdout.trim()), report: r.sandbox };
    };
    const proxied = [];
    const direct = [];
    let report;
    for (let i = 0; i < ROUNDS; i++) {
      const p = await run({ allow: [`localhost:${port}`] });
      report = p.report;
      proxied.push(p.us);
      direct.push((await run(true)).us);
    }
    const median = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
    const p = median(proxied) / 1000;
    const d = median(direct) / 1000;
    h.row({
      name: "HTTP GET on loopback from a confined child, through the filtering proxy vs direct, median per request",
      subject: `network { allow } (sandbox network ${report.network}: namespace, proxy, new connection per request)`,
      baseline: "network: true (direct, new connection per request)",
      unit: "ms",
      subjectValue: p,
      baselineValue: d,
      ratio: p / d,
      target: "added <= 1 ms",
      pass: p - d <= 1,
      notes: `added ${((p - d) * 1000).toFixed(0)} µs per request; median of ${ROUNDS} alternating rounds of ${REQUESTS} GETs each`,
    });
  } finally {
    server.close();
    await cleanup();
  }
}

