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

export default async function (h) {
  const spawned = await h.latency(spawnTrue, { iterations: 300, warmup: 30 });
  const cases = [
    { name: "policy: argv [npm, test]", argv: ["npm", "test"], target: 0.05 },
    { name: "policy: sh -c one command", argv: ["sh", "-c", "npm test"], target: 0.1 },
    { name: "policy: sh -c 160-char pipeline", argv: ["sh", "-c", PIPELINE], target: 0.1 },
  ];
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
