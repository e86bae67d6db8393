// edit_file against the agent's obvious alternative (read_file, replace in JS, write_file), and
// the write guard's cost on write_file (default guard vs protect: []), measured in the same run
// in alternating rounds on tmpfs where the machine has one (fsync nearly free: what remains is
// the libraries' own work), else in the OS temporary directory.
import { mkdtemp, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApplyPatchTool, createEditTool, createReadTool, createWriteTool } from "../dist/index.js";

const ROUNDS = 20;
const PER_ROUND = 20;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ctx = () => ({ signal: new AbortController().signal });

async function alternate(h, a, b) {
  await h.latency(a, { iterations: 0, warmup: 30 });
  await h.latency(b, { iterations: 0, warmup: 30 });
  const xs = [];
  const ys = [];
  for (let r = 0; r < ROUNDS; r++) {
    xs.push((await h.latency(a, { iterations: PER_ROUND, warmup: 0 })).median);
    ys.push((await h.latency(b, { iterations: PER_ROUND, warmup: 0 })).median);
  }
  return [median(xs), median(ys)];
}

export default async function (h) {
  const shm = await stat("/dev/shm").catch(() => undefined);
  const label = shm?.isDirectory() ? "tmpfs" : "disk";
  const dir = await realpath(await mkdtemp(join(shm?.isDirectory() ? "/dev/shm" : tmpdir(), "workcell-bench-edit-")));
  try {
    const text = Array.from({ length: 400 }, (_, i) => `  const value${i} = compute(${i}); // line ${i}`).join("\n") + "\n";
    await writeFile(join(dir, "e.ts"), text);
    await writeFile(join(dir, "r.ts"), text);
    const edit = createEditTool(dir);
    const read = createReadTool(dir);
    const write = createWriteTool(dir);
    let n = 0;
    const ours = () => {
      const k = n++ % 2;
      return edit.execute(
        { path: "e.ts", edits: [{ oldText: `value200 = compute(${k});`, newText: `value200 = compute(${1 - k});` }] },
        ctx(),
      );
    };
    await writeFile(join(dir, "e.ts"), text.replace("value200 = compute(200);", "value200 = compute(0);"));
    let m = 0;
    const theirs = async () => {
      const k = m++ % 2;
      const { content } = await read.execute({ path: "r.ts" }, ctx());
      const next = content.replace(`value200 = compute(${k});`, `value200 = compute(${1 - k});`);
      return write.execute({ path: "r.ts", content: next }, ctx());
    };
    await writeFile(join(dir, "r.ts"), text.replace("value200 = compute(200);", "value200 = compute(0);"));
    const [mine, base] = await alternate(h, ours, theirs);
    h.row({
      name: `edit_file one replacement in a 16 KiB file (${label}): median latency`,
      subject: "workcell edit_file (read, match, diff, atomic write under the lock)",
      baseline: "read_file + String.replace + write_file",
      unit: "µs",
      subjectValue: mine,
      baselineValue: base,
      ratio: mine / base,
      target: "<= 1.0",
      pass: mine / base <= 1.0,
      notes: `${ROUNDS} alternating rounds of ${PER_ROUND} calls; median of round medians; edit_file also returns a diff`,
    });

    // apply_patch of one 5-file patch against the same five edits as five edit_file calls.
    const names = [0, 1, 2, 3, 4].map((i) => `p${i}.ts`);
    const edits = [0, 1, 2, 3, 4].map((i) => `q${i}.ts`);
    for (const f of [...names, ...edits]) await writeFile(join(dir, f), text.replace("value200 = compute(200);", "value200 = compute(0);"));
    const patchTool = createApplyPatchTool(dir);
    let pn = 0;
    const patch = () => {
      const k = pn++ % 2;
      const body = names
        .map((f) => `*** Update File: ${f}\n@@\n   const value199 = compute(199); // line 199\n-  const value200 = compute(${k}); // line 200\n+  const value200 = compute(${1 - k}); // line 200\n   const value201 = compute(201); // line 201\n`)
        .join("");
      return patchTool.execute({ patch: `*** Begin Patch\n${body}*** End Patch\n` }, ctx());
    };
    let en = 0;
    const five = async () => {
      const k = en++ % 2;
      for (const f of edits) {
        await edit.execute({ path: f, edits: [{ oldText: `value200 = compute(${k});`, newText: `value200 = compute(${1 - k});` }] }, ctx());
      }
    };
    const [pv, ev] = await alternate(h, patch, five);
    h.row({
      name: `apply_patch of a 5-file patch vs the same five edit_file calls (${label}): median latency`,
      subject: "workcell apply_patch (parse, locate, stage 5 temps + 5 kept links, 5 renames, all or nothing)",
      baseline: "five sequential edit_file calls, one line each",
      unit: "µs",
      subjectValue: pv,
      baselineValue: ev,
      ratio: pv / ev,
      target: "<= 1.2",
      pass: pv / ev <= 1.2,
      notes: `${ROUNDS} alternating rounds of ${PER_ROUND} calls; median of round medians; both return diffs`,
    });

    const guarded = createWriteTool(dir);
    const open = createWriteTool(dir, { protect: [] });
    const content = "x".repeat(4096);
    const g = () => guarded.execute({ path: "a/b/c/g.txt", content }, ctx());
    const o = () => open.execute({ path: "a/b/c/o.txt", content }, ctx());
    const [gv, ov] = await alternate(h, g, o);
    h.row({
      name: `write_file 4 KiB, 3 directories deep (${label}): the write guard's cost`,
      subject: "write_file with the default guard (.git/**)",
      baseline: "write_file with protect: [] (no guard)",
      unit: "µs",
      subjectValue: gv,
      baselineValue: ov,
      ratio: gv / ov,
      target: "report",
      pass: true,
      notes: "protect: [] without refuseLinksOnWrite passes no guard to Rust: the difference is the guard's lookups (deepest existing parent, where the write lands) and glob matching",
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
