// run_command against the obvious alternatives: Node's own child_process.spawn("true") and
// execa("true"), each awaiting the exit with output collected, measured in the same run with
// alternating samples. run_command also checks the policy, looks the program up on PATH,
// creates and removes a private HOME/TMPDIR, and kills what is left of the process group.
import { spawn } from "node:child_process";
import { execa } from "execa";
import { createRunCommandTool } from "../dist/index.js";
import { interleaved } from "./lib.mjs";

const ctx = { signal: new AbortController().signal };

function spawnTrue() {
  return new Promise((resolve, reject) => {
    const child = spawn("true", [], { stdio: ["ignore", "pipe", "pipe"], env: { PATH: process.env.PATH } });
    child.stdout.on("data", () => {});
    child.stderr.on("data", () => {});
    child.on("error", reject);
    child.on("close", resolve);
  });
}

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    const tool = createRunCommandTool(dir);
    const runTrue = async () => {
      const r = await tool.execute(tool.validate({ argv: ["true"] }), ctx);
      if (r.exitCode !== 0) throw new Error("true failed");
    };
    const execaTrue = () => execa("true", [], { all: true, env: { PATH: process.env.PATH }, extendEnv: false });
    const [ours, node, ex] = await interleaved([runTrue, spawnTrue, execaTrue], { iterations: 200, warmup: 20 });
    h.row({
      name: 'run_command ["true"], median wall time',
      subject: "run_command",
      baseline: 'child_process.spawn("true") awaiting close',
      unit: "ms",
      subjectValue: ours,
      baselineValue: node,
      ratio: ours / node,
      target: "<= 1.5",
      pass: ours / node <= 1.5,
      notes: "200 rotating samples each; includes validate (policy), PATH lookup, scratch HOME/TMPDIR create + remove",
    });
    h.row({
      name: 'run_command ["true"] vs execa, median wall time',
      subject: "run_command",
      baseline: 'execa("true", { all: true })',
      unit: "ms",
      subjectValue: ours,
      baselineValue: ex,
      ratio: ours / ex,
      target: "<= 1.5",
      pass: ours / ex <= 1.5,
      notes: "same run as the row above",
    });
  } finally {
    await cleanup();
  }
}
