// What watching a call costs (contract §18): node_process and run_command with and without an
// onProgress listener, same input, interleaved. The listener only counts what it gets.
import { createNodeProcessTool, createRunCommandTool } from "../dist/index.js";
import { interleaved } from "./lib.mjs";

const signal = new AbortController().signal;
/** Prints 4 MiB as fast as it can, then a line every 5 ms for 300 ms. */
const PRINTER = `
const { writeSync } = require("fs");
const line = Buffer.from("x".repeat(1023) + "\\n");
for (let i = 0; i < 4096; i++) writeSync(1, line);
let n = 0;
const t = setInterval(() => { console.log("tick " + n); if (++n === 60) clearInterval(t); }, 5);
`;

export default async function (h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    // The process machinery alone: the sandbox's own cost is measured in bench/sandbox.mjs.
    const node = createNodeProcessTool(dir, { timeoutMs: 120_000, sandbox: "off" });
    const command = createRunCommandTool(dir, { timeoutMs: 120_000, sandbox: "off" });
    let updates = 0;
    const onProgress = () => void updates++;
    const cases = [
      { name: "node_process empty script", tool: node, input: { source: "" }, n: 40 },
      { name: "node_process printing 4 MiB then 60 lines over 300 ms", tool: node, input: { source: PRINTER }, n: 24 },
      { name: "run_command seq 1 300000 (2 MB)", tool: command, input: { argv: ["seq", "1", "300000"] }, n: 40 },
      { name: "run_command sleep 0.6 (updates taken, none to give)", tool: command, input: { argv: ["sleep", "0.6"] }, n: 12 },
    ];
    for (const c of cases) {
      const input = c.tool.validate(c.input);
      updates = 0;
      const [watched, plain] = await interleaved(
        [() => c.tool.execute(input, { signal, onProgress }), () => c.tool.execute(input, { signal })],
        { iterations: c.n, warmup: 3 },
      );
      const ratio = watched / plain;
      h.row({
        name: `${c.name}, with an onProgress listener, median wall time`,
        subject: `${c.tool.name} with onProgress`,
        baseline: "the same call without a listener",
        unit: "ms",
        subjectValue: watched,
        baselineValue: plain,
        ratio,
        target: "<= 1.02",
        pass: ratio <= 1.02,
        notes: `${c.n} alternating samples each; ${updates} updates delivered in all`,
      });
    }
  } finally {
    await cleanup();
  }
}
