// The cost of the resource limits on a confined node_process call: the default caps (with a
// memory and, for a root host, a pids cgroup made and removed per call, plus three rlimits)
// against the same confined call without cgroups (sandboxFeatures: { cgroups: false }: the
// rlimits alone, three setrlimit calls in the child, which is below what this measures), sampled
// alternately in the same run.
import { createNodeProcessTool } from "../dist/index.js";
import { interleaved } from "./lib.mjs";

const ctx = { signal: new AbortController().signal };

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
    const limited = make({});
    const report = await limited();
    const plain = make({ sandboxFeatures: { cgroups: false } });
    const [l, p] = await interleaved([limited, plain], { iterations: 60, warmup: 5 });
    const by = (x) => `${x.processes.by}/${x.memoryBytes.by}/${x.fileBytes.by}`;
    h.row({
      name: "node_process empty script, confined with the limits' cgroups vs confined without",
      subject: `default limits (processes/memory/file by ${by(report.limits)})`,
      baseline: "sandboxFeatures: { cgroups: false } (rlimits only)",
      unit: "ms",
      subjectValue: l,
      baselineValue: p,
      ratio: l / p,
      target: "<= 1.03",
      pass: l / p <= 1.03,
      notes: `60 rotating samples each; uid ${process.getuid()}`,
    });
  } finally {
    await cleanup();
  }
}
