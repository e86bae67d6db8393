// `npm test`: runs the Rust tests (cargo) and the Vitest suite, then prints one closing line
// summing both runners: "N passed, N failed, N skipped". Exits non-zero if either failed.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const totals = { passed: 0, failed: 0, skipped: 0 };
let failedRunner = false;

function run(cmd, args, opts = {}) {
  console.log(`\n$ ${cmd} ${args.join(" ")}`);
  return spawnSync(cmd, args, { stdio: ["ignore", "pipe", "inherit"], encoding: "utf8", maxBuffer: 256 * 1024 * 1024, ...opts });
}

// Rust: cargo test prints "test result: ok. N passed; M failed; K ignored; ..." per test binary.
// `napi build` compiles for the host's triple named explicitly (`--target`), which puts its
// artifacts under target/<triple>/; naming it here too lets the tests reuse that build's
// dependencies instead of compiling every crate a second time under target/release/.
const host = /^host: (\S+)$/m.exec(spawnSync("rustc", ["-vV"], { encoding: "utf8" }).stdout ?? "")?.[1];
const cargo = run("cargo", ["test", "-p", "workcell-core", "--release", ...(host ? ["--target", host] : [])]);
process.stdout.write(cargo.stdout ?? "");
for (const m of (cargo.stdout ?? "").matchAll(/test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/g)) {
  totals.passed += Number(m[1]);
  totals.failed += Number(m[2]);
  totals.skipped += Number(m[3]);
}
if (cargo.status !== 0) failedRunner = true;

// Vitest: a JSON report next to the normal output.
const dir = mkdtempSync(join(tmpdir(), "workcell-test-report-"));
const report = join(dir, "vitest.json");
const vitest = run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`], {
  stdio: ["ignore", "inherit", "inherit"],
});
try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  totals.passed += json.numPassedTests;
  totals.failed += json.numFailedTests;
  totals.skipped += json.numPendingTests + (json.numTodoTests ?? 0);
} catch {
  console.error("workcell: the Vitest JSON report is missing; counting the run as failed");
  failedRunner = true;
}
rmSync(dir, { recursive: true, force: true });
if (vitest.status !== 0) failedRunner = true;

console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(failedRunner || totals.failed > 0 ? 1 : 0);
