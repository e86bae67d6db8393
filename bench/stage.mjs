// Staged runs (contract §20): a run_command writing 2,000 small files, staged against the same
// run unstaged (target: staging costs at most 1.3x), and applying the staged change against
// write_file of the same 2,000 files.
//
// Each side runs ROUNDS times in alternation, each round in a fresh workspace; rows report
// medians. The staged time is the whole call: the overlay made, the run, the upper layer read
// into the change set and its diff rendered.
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { applyStaged, closeTools, createCodingTools, sandboxSupport } from "../dist/index.js";

const FILES = 2_000;
const ROUNDS = 7;
const SCRIPT = `mkdir -p out && awk 'BEGIN { for (i = 0; i < ${FILES}; i++) { f = "out/f" i ".txt"; print "file " i > f; close(f) } }'`;

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed(fn) {
  const t = process.hrtime.bigint();
  const r = await fn();
  return [Number(process.hrtime.bigint() - t) / 1e6, r];
}

export default async function stageBench(h) {
  const s = sandboxSupport();
  if (!(s.pidNamespace && s.userNamespace)) {
    console.log("  no user and PID namespaces: staged runs are unavailable here, skipped");
    return;
  }
  const { dir, cleanup } = await h.tempDir("workcell-bench-stage-");
  const signal = new AbortController().signal;
  const times = { staged: [], unstaged: [], apply: [], write: [] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const staged of [true, false]) {
        const root = join(dir, `r${r}-${staged ? "s" : "u"}`);
        await mkdir(root);
        const tools = createCodingTools(root);
        const input = tools.run_command.validate({ argv: ["sh", "-c", SCRIPT], timeoutMs: 120_000, ...(staged ? { stage: true } : {}) });
        const [ms, out] = await timed(() => tools.run_command.execute(input, { signal }));
        if (out.exitCode !== 0) throw new Error(`the run failed: ${out.output}`);
        times[staged ? "staged" : "unstaged"].push(ms);
        if (staged) {
          if (out.staged.files.length !== FILES) throw new Error(`staged ${out.staged.files.length} files`);
          const [applyMs] = await timed(() => applyStaged(tools, out.staged.id, { expectedHash: out.staged.hash }));
          times.apply.push(applyMs);
          // The same 2,000 files through write_file, into a fresh workspace.
          const wroot = join(dir, `r${r}-w`);
          await mkdir(wroot);
          const wtools = createCodingTools(wroot);
          const [writeMs] = await timed(async () => {
            for (let i = 0; i < FILES; i++) await wtools.write_file.execute({ path: `out/f${i}.txt`, content: `file ${i}\n` }, { signal });
          });
          times.write.push(writeMs);
          await closeTools(wtools);
        }
        await closeTools(tools);
      }
    }
    const row = (name, subject, baseline, baselineName, target, check) =>
      h.row({ name, subject: "workcell", baseline: baselineName, unit: "ms", subjectValue: subject, baselineValue: baseline, ratio: subject / baseline, target, pass: check(subject / baseline) });
    const st = median(times.staged);
    const un = median(times.unstaged);
    row(`run_command writing ${FILES} files, staged (vs the same run unstaged)`, st, un, "unstaged", "<= 1.3", (x) => x <= 1.3);
    row(`apply of a staged change of ${FILES} files (vs write_file of each)`, median(times.apply), median(times.write), "write_file x2000", "report", () => true);
    console.log(`  staged ${times.staged.map((t) => t.toFixed(0)).join(" ")} ms; unstaged ${times.unstaged.map((t) => t.toFixed(0)).join(" ")} ms`);
    console.log(`  apply ${times.apply.map((t) => t.toFixed(0)).join(" ")} ms; write_file ${times.write.map((t) => t.toFixed(0)).join(" ")} ms`);
  } finally {
    await cleanup();
  }
}
