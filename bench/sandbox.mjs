// The sandbox's cost: a confined node_process call (Landlock, PID and user namespaces with a
// private /proc, Node's permission model) against the same call with the sandbox off, sampled
// alternately in the same run. Plus each part on its own, for information, and the same
// comparison for run_command (["true"]) and run_tests (node --test on one passing test).
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createNodeProcessTool, createRunCommandTool, createRunTestsTool, sandboxSupport } from "../dist/index.js";
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

    // run_command and run_tests: confined ("auto") vs "off", the same call alternately.
    const command = (options) => {
      const tool = createRunCommandTool(dir, { timeoutMs: 60_000, ...options });
      return async () => {
        const r = await tool.execute(tool.validate({ argv: ["true"] }), ctx);
        if (r.exitCode !== 0) throw new Error("true failed");
      };
    };
    const [cc, co] = await interleaved([command({}), command({ sandbox: "off" })], { iterations: 100, warmup: 10 });
    h.row({
      name: 'run_command ["true"], confined vs unconfined, median wall time',
      subject: 'sandbox "auto"',
      baseline: 'sandbox "off"',
      unit: "ms",
      subjectValue: cc,
      baselineValue: co,
      ratio: cc / co,
      target: "report",
      pass: true,
      notes: `100 rotating samples each; +${(cc - co).toFixed(2)} ms per call: Landlock costs next to nothing here, the rest is the three processes and namespaces that contain the call (see node_process's rows for a real program)`,
    });
    await writeFile(join(dir, "one.test.mjs"), 'import { test } from "node:test";\ntest("one", () => {});\n');
    const tests = (options) => {
      const tool = createRunTestsTool(dir, { timeoutMs: 60_000, ...options });
      return async () => {
        const r = await tool.execute(tool.validate({ runner: "node", args: ["one.test.mjs"] }), ctx);
        if (r.passed !== 1) throw new Error(`the test did not pass: ${r.report}`);
      };
    };
    const [tc, to] = await interleaved([tests({}), tests({ sandbox: "off" })], { iterations: 30, warmup: 3 });
    h.row({
      name: "run_tests node runner, one passing test, confined vs unconfined, median wall time",
      subject: 'sandbox "auto"',
      baseline: 'sandbox "off"',
      unit: "ms",
      subjectValue: tc,
      baselineValue: to,
      ratio: tc / to,
      target: "<= 1.10",
      pass: tc / to <= 1.1,
      notes: "30 rotating samples each; node --test starts a second Node.js for the file",
    });
  } finally {
    await cleanup();
  }
}
