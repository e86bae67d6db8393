// Runs the sandbox's attack table and legitimate tasks in this process, as whatever user
// started it, and prints one JSON line of results. An `--api-key=<secret>` argument is a secret
// in the host's command line that no child may read; WC_ONLY=<text> runs only the attacks whose
// name contains it. test/sandbox.test.ts starts it as `nobody`
// to show that the sandbox needs no privilege.
import * as lib from "../dist/index.js";
import { ATTACKS, LEGIT, TOOLS, runAttack, runLegit } from "./sandbox-attacks.mjs";

const features = lib.sandboxSupport();
const results = { uid: process.getuid(), features, attacks: [], legit: [] };
for (const tool of Object.keys(TOOLS)) {
  for (const attack of ATTACKS) {
    if (!attack[tool]) continue;
    // WC_ONLY: run only the rows whose name contains it (and no legitimate task).
    if (process.env.WC_ONLY && !attack.name.includes(process.env.WC_ONLY)) continue;
    const off = await runAttack(lib, tool, attack, { sandbox: "off" });
    const auto = await runAttack(lib, tool, attack, { sandbox: "auto" });
    results.attacks.push({
      tool,
      name: attack.name,
      needed: attack.needs(features),
      off: off.escaped,
      auto: auto.escaped,
      report: auto.output.sandbox,
      leftovers: [...off.leftovers, ...auto.leftovers],
      output: auto.output.stdout,
    });
  }
  for (const task of LEGIT) {
    if (!task[tool] || process.env.WC_ONLY) continue;
    const r = await runLegit(lib, tool, task, {});
    results.legit.push({ tool, name: task.name, ok: r.ok, stdout: r.output.stdout, stderr: r.output.stderr, report: r.output.sandbox });
  }
}
console.log(JSON.stringify(results));
