// The sandbox's cost: a confined node_process call (Landlock, PID and user namespaces with a
// private /proc, Node's permission model) against the same call with the sandbox off, sampled
// alternately in the same run. Plus each part on its own, for information.
import { createNodeProcessTool, sandboxSupport } from "../dist/index.js";

const ctx = { signal: new AbortController().signal };

/** Median wall time (ms) of each function, sampled in rotating order so all see the same machine. */
async function interleaved(fns, { iterations, warmup }) {
  for (let i = 0; i < warmup; i++) for (const fn of fns) await fn();
  const samples = fns.map(() => []);
  for (let i = 0; i < iterations; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length;
      const t0 = performance.now();
      await fns[j]();
      samples[j].push(performance.now() - t0);
    }
  }
  return samples.map((s) => s.sort((x, y) => x - y)[Math.floor(s.length / 2)]);
}

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    const make = (options) => {
      const tool = createNodeProcessTool(dir, { timeoutMs: 60_000, ...options });
      return async () => {
        const r = await tool.execute({ source: "" }, ctx);
        if (r.exitCode !== 0) throw new Error(`the empty script failed: ${r.stderr}`);
        return r.sandbox;
      };
    };
    const confined = make({});
    const report = await confined();
    const off = make({ sandbox: "off" });
    const kernelOnly = make({ sandboxFeatures: { landlockAbi: null, pidNamespace: false } });
    const landlockOnly = make({ sandboxFeatures: { pidNamespace: false } });
    const [c, o, k, l] = await interleaved([confined, off, kernelOnly, landlockOnly], { iterations: 60, warmup: 5 });
    const features = JSON.stringify(sandboxSupport());
    h.row({
      name: "node_process empty script, confined vs unconfined, median wall time",
      subject: `sandbox "auto" (${report.filesystem}, network ${report.network}, processes ${report.processes}, nodePermission ${report.nodePermission})`,
      baseline: 'sandbox "off"',
      unit: "ms",
      subjectValue: c,
      baselineValue: o,
      ratio: c / o,
      target: "<= 1.10",
      pass: c / o <= 1.1,
      notes: `60 rotating samples each; features ${features}`,
    });
    h.row({
      name: "node_process empty script, Node permission model only",
      subject: "sandboxFeatures: no Landlock, no namespace",
      baseline: 'sandbox "off"',
      unit: "ms",
      subjectValue: k,
      baselineValue: o,
      ratio: k / o,
      target: "informational",
      pass: true,
      notes: "the permission flags' share of the cost",
    });
    h.row({
      name: "node_process empty script, Landlock and Node permission, no namespace",
      subject: "sandboxFeatures: no PID namespace",
      baseline: 'sandbox "off"',
      unit: "ms",
      subjectValue: l,
      baselineValue: o,
      ratio: l / o,
      target: "informational",
      pass: true,
      notes: "the rest of the difference to the first row is the namespaces (three processes, a private /proc)",
    });
  } finally {
    await cleanup();
  }
}
