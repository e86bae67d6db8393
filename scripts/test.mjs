// `npm test`: runs the Rust tests (cargo) and the Vitest suite at the same time (cargo's
// compile keeps the cores busy while Vitest's tests wait on processes; each suite must pass on a
// loaded machine anyway), shows Vitest's output as it comes and cargo's whole once Vitest is
// done, then prints one closing line summing both runners: "N passed, N failed, N skipped".
// Exits non-zero if either failed.
//
// Whatever failed is said again at the very end, above that line (a runner's exit status or
// signal, the test binaries that printed no result, the failed tests' names, a runner's last
// lines), so a log cut to its tail still shows why the run failed.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const totals = { passed: 0, failed: 0, skipped: 0 };
const problems = [];

/**
 * Runs a command with its output shown as it comes (or, with `hold`, kept in `held` to show
 * later); resolves to its status and output.
 */
function run(cmd, args, { keep = false, hold = false } = {}) {
  console.log(`\n$ ${cmd} ${args.join(" ")}${hold ? " (its output follows when the other runner is done)" : ""}`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out = [];
    const held = [];
    const tail = [];
    let started = 0;
    const carry = { out: "", err: "" };
    const note = (which, chunk) => {
      const lines = (carry[which] + chunk.toString("utf8")).split("\n");
      carry[which] = lines.pop();
      for (const line of lines) {
        if (/^\s*(Running|Doc-tests) /.test(line)) started += 1;
        tail.push(line);
        if (tail.length > 400) tail.splice(0, tail.length - 200);
      }
    };
    child.stdout.on("data", (c) => {
      if (hold) held.push(c);
      else process.stdout.write(c);
      if (keep) out.push(c);
      note("out", c);
    });
    child.stderr.on("data", (c) => {
      if (hold) held.push(c);
      else process.stderr.write(c);
      note("err", c);
    });
    child.on("error", (err) => resolve({ status: null, signal: null, error: err, stdout: "", tail, started, held }));
    child.on("close", (status, signal) => {
      for (const rest of [carry.out, carry.err]) if (rest) tail.push(rest);
      resolve({ status, signal, stdout: Buffer.concat(out).toString("utf8"), tail, started, held });
    });
  });
}

function describeExit(r) {
  if (r.error) return `could not start (${r.error.message})`;
  return r.signal ? `was killed by ${r.signal}` : `exited with ${r.status}`;
}

// Rust: cargo test prints "test result: ok. N passed; M failed; K ignored; ..." per test binary.
// The `ci-test` profile (Cargo.toml): optimized dependencies without LTO and an unoptimized
// workcell-core, so the core's test binaries build in about half a minute, where the release
// profile's thin LTO took 4 to 8 minutes of the cores Vitest shares (the dependencies, built once
// per checkout, take a few minutes beside Vitest). `--target` names the host's triple as
// `napi build` does (artifacts under target/<triple>/).
// `--no-fail-fast`: a test binary that fails (or dies) does not hide the others' results.
const host = /^host: (\S+)$/m.exec(spawnSync("rustc", ["-vV"], { encoding: "utf8" }).stdout ?? "")?.[1];
const cargoRun = run("cargo", ["test", "-p", "workcell-core", "--profile", "ci-test", "--no-fail-fast", ...(host ? ["--target", host] : [])], { keep: true, hold: true });

// Vitest: a JSON report next to the normal output.
const dir = mkdtempSync(join(tmpdir(), "workcell-test-report-"));
const report = join(dir, "vitest.json");
const vitest = await run("npx", ["vitest", "run", "--reporter=default", "--reporter=json", `--outputFile.json=${report}`]);
const cargo = await cargoRun;
console.log(`\n$ cargo test (its output)`);
for (const c of cargo.held) process.stdout.write(c);
for (const m of cargo.stdout.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/g)) {
  totals.passed += Number(m[1]);
  totals.failed += Number(m[2]);
  totals.skipped += Number(m[3]);
}
if (cargo.status !== 0) {
  const ran = cargo.started;
  const reported = (cargo.stdout.match(/test result: /g) ?? []).length;
  const failedTests = [...cargo.stdout.matchAll(/^test (\S+) \.\.\. FAILED$/gm)].map((m) => m[1]);
  problems.push(
    [
      `cargo test ${describeExit(cargo)}; ${reported} test binaries printed a result${ran > reported ? `, ${ran - reported} started and printed none (crashed or killed)` : ""}.`,
      ...(failedTests.length ? [`failed: ${failedTests.join(", ")}`] : []),
      "its last lines:",
      ...cargo.tail.filter((l) => l.trim() !== "").slice(-60).map((l) => `  | ${l}`),
    ].join("\n"),
  );
}

try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  totals.passed += json.numPassedTests;
  totals.failed += json.numFailedTests;
  totals.skipped += json.numPendingTests + (json.numTodoTests ?? 0);
  const failed = [];
  for (const file of json.testResults ?? []) {
    for (const t of file.assertionResults ?? []) {
      if (t.status === "failed") failed.push(`${file.name.replace(process.cwd() + "/", "")} > ${t.fullName}: ${String(t.failureMessages?.[0] ?? "").split("\n")[0].slice(0, 300)}`);
    }
    if (file.status === "failed" && !(file.assertionResults ?? []).some((t) => t.status === "failed")) {
      failed.push(`${file.name.replace(process.cwd() + "/", "")}: ${String(file.message ?? "failed to run").split("\n")[0].slice(0, 300)}`);
    }
  }
  if (failed.length) problems.push(["vitest: failed:", ...failed.map((f) => `  ${f}`)].join("\n"));
} catch {
  problems.push("vitest: the JSON report is missing; counting the run as failed");
}
rmSync(dir, { recursive: true, force: true });
if (vitest.status !== 0 && !problems.some((p) => p.startsWith("vitest"))) {
  problems.push([`vitest ${describeExit(vitest)}; its last lines:`, ...vitest.tail.filter((l) => l.trim() !== "").slice(-40).map((l) => `  | ${l}`)].join("\n"));
}

if (problems.length) console.log(`\nWhat failed:\n${problems.join("\n\n")}`);
console.log(`\n${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(problems.length > 0 || totals.failed > 0 ? 1 : 0);
