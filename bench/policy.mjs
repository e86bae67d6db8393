// The command policy's cost, as a share of the cheapest thing it guards: spawning a process.
// checkCommand runs before every run_command; it should be noise next to the spawn itself.
import { spawn } from "node:child_process";
import { checkCommand } from "../dist/index.js";

const PIPELINE =
  "set -euo pipefail; cd packages/app && npm ci --silent 2>&1 | tail -n 20 && npx tsc --noEmit && " +
  "for f in $(git ls-files '*.ts'); do wc -l \"$f\"; done > counts.txt";

function spawnTrue() {
  return new Promise((resolve, reject) => {
    const child = spawn("true", [], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", resolve);
  });
}

/** `n` levels of `"${x:-` nested around `x`. */
function nestedDefaults(n) {
  return `echo ${'"${x:-'.repeat(n)}x${'}"'.repeat(n)}; `;
}

/** A script of about `bytes` bytes: `head` once per `unitBytes`, then `echo abc;` filler. */
function fill(head, bytes) {
  let s = head;
  while (s.length + 10 <= bytes) s += "echo abc; ";
  return s;
}

export default async function (h) {
  const spawned = await h.latency(spawnTrue, { iterations: 300, warmup: 30 });
  const cases = [
    { name: "policy: argv [npm, test]", argv: ["npm", "test"], target: 0.05 },
    { name: "policy: sh -c one command", argv: ["sh", "-c", "npm test"], target: 0.1 },
    { name: "policy: sh -c 160-char pipeline", argv: ["sh", "-c", PIPELINE], target: 0.1 },
  ];
  // The parser's work on nested quoting grew with the square of the depth (issue: 32 KiB of
  // nested "${x:-... took 500 ms on the event loop). Nesting is capped at 12 such levels
  // (24 quote/expansion contexts) and 512 constructs; the worst script within the caps is
  // compared with a plain script of the same size, and a script over the cap must be refused
  // for less than the plain one costs.
  const plain = fill("", 32_000);
  const worstAllowed = fill(nestedDefaults(12).repeat(42), 32_000);
  const overCap = fill(nestedDefaults(2_000), 32_000);
  if (!checkCommand(["bash", "-c", plain]).allowed) throw new Error("the plain script should be allowed");
  if (!checkCommand(["bash", "-c", worstAllowed]).allowed) throw new Error("the nested script at the cap should be allowed");
  if (checkCommand(["bash", "-c", overCap]).allowed) throw new Error("the script over the nesting cap should be refused");
  const plainTime = await h.latency(async () => checkCommand(["bash", "-c", plain]), { iterations: 40, warmup: 5 });
  for (const c of [
    { name: "policy: 32 KiB script, nested \"${x:-\" at the cap", script: worstAllowed, target: 2 },
    { name: "policy: 32 KiB script, nested \"${x:-\" over the cap (refused)", script: overCap, target: 0.5 },
  ]) {
    const t = await h.latency(async () => checkCommand(["bash", "-c", c.script]), { iterations: 40, warmup: 5 });
    const ratio = t.median / plainTime.median;
    h.row({
      name: c.name,
      subject: "checkCommand",
      baseline: "checkCommand of a plain 32 KiB script",
      unit: "µs median",
      subjectValue: t.median,
      baselineValue: plainTime.median,
      ratio,
      target: `<= ${c.target}`,
      pass: ratio <= c.target,
      notes: "deep nesting costs no more than plain text of the same size",
    });
  }
  for (const c of cases) {
    if (!checkCommand(c.argv).allowed) throw new Error(`${c.name} should be allowed`);
    const checked = await h.latency(async () => checkCommand(c.argv), { iterations: 3000, warmup: 300 });
    const ratio = checked.median / spawned.median;
    h.row({
      name: c.name,
      subject: "checkCommand",
      baseline: "child_process.spawn(true)",
      unit: "µs median",
      subjectValue: checked.median,
      baselineValue: spawned.median,
      ratio,
      target: `<= ${c.target}`,
      pass: ratio <= c.target,
      notes: "the check's cost as a share of spawning the cheapest process",
    });
  }
}
