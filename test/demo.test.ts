// `workcell demo` (what `npm run demo` runs): a scripted session over every tool this build has,
// a refused escape, a timeout, a cancelled run; printed readably; the workspace removed after.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";
import { previewResult, runDemo, SCRIPTED_TOOLS } from "../dist/demo.js";

const BIN = fileURLToPath(new URL("../bin/workcell.mjs", import.meta.url));

describe("workcell demo", () => {
  test("runs every tool there is, refuses the escapes, times out, cancels, and cleans up", async () => {
    const lines: string[] = [];
    const report = await runDemo({ print: (l) => lines.push(l) });
    const out = lines.join("\n");
    expect(existsSync(report.workspace)).toBe(false);

    // Every tool createCodingTools gave is named; each one the script knows was called with
    // arguments its schema accepts (a refusal for shape would mean the script is out of date).
    expect(out).toContain(`tools: ${report.tools.join(", ")}`);
    for (const name of report.tools.filter((n) => (SCRIPTED_TOOLS as readonly string[]).includes(n))) {
      const calls = report.calls.filter((c) => c.tool === name);
      expect(calls.length, name).toBeGreaterThan(0);
      expect(calls.some((c) => c.outcome === "ok"), `${name} had no successful call`).toBe(true);
    }
    for (const c of report.calls) {
      if (c.code === "TOOL_ARGUMENTS_INVALID") expect(JSON.stringify(c.args)).toMatch(/\/etc\/passwd|\.\./);
    }

    // The escapes are refused and the secret next to the workspace never shows.
    const escape = report.calls.find((c) => c.tool === "read_file" && (c.args as { path: string }).path === "notes.txt");
    expect(escape).toMatchObject({ outcome: "error", code: "PATH_ESCAPES_WORKSPACE" });
    expect(out).not.toContain("this-must-never-reach-the-model");
    expect(out).toMatch(/hint: /);

    // A cancelled run always; a timeout when a process tool exists.
    expect(report.calls.some((c) => c.outcome === "cancelled")).toBe(true);
    if (report.tools.includes("node_process")) {
      expect(report.calls.some((c) => c.tool === "node_process" && c.code === "NODE_PROCESS_TIMEOUT")).toBe(true);
    } else if (report.tools.includes("run_command")) {
      expect(report.calls.some((c) => c.tool === "run_command" && c.code === "COMMAND_TIMEOUT")).toBe(true);
    }

    // Readable: a numbered step, the call, then a short result, for every call.
    expect(out.match(/^ ?\d+\. /gm)!.length).toBe(report.calls.length);
    expect(out.match(/^ {4}> /gm)!.length).toBe(report.calls.length);
    expect(out.match(/^ {4}< (ok|error|cancelled)/gm)!.length).toBe(report.calls.length);
    for (const line of lines) expect(line.length).toBeLessThan(400);

    // A longer run's output is shown live, before its result line.
    const build = lines.findIndex((l) => l.includes("build step 1 of 6") && l.startsWith("    ~ "));
    expect(build, out).toBeGreaterThan(0);
    expect(lines.slice(build).findIndex((l) => l.startsWith("    < "))).toBeGreaterThan(0);
  });

  test("step 6 says what the environment is: PATH only", async () => {
    const lines: string[] = [];
    await runDemo({ print: (l) => lines.push(l) });
    const out = lines.join("\n");
    expect(out).not.toContain("empty environment");
    expect(out).toContain("an environment of PATH only");
  });

  test("long results are cut at a field boundary, not mid-JSON", () => {
    const result = JSON.stringify({
      path: "src/greet.js",
      content: "x".repeat(5000),
      totalLines: 2,
      truncated: false,
      hash: "sha256:" + "a".repeat(64),
      entries: Array.from({ length: 50 }, (_, i) => ({ path: `f${i}.txt`, size: i })),
    });
    const shown = previewResult(result, 240);
    expect(shown.length).toBeLessThan(400);
    // The short field is whole, the long string is shortened inside its quotes with its length,
    // and the fields that did not fit are named rather than sliced.
    expect(shown.startsWith('{"path":"src/greet.js","content":"xxx')).toBe(true);
    expect(shown).toMatch(/"content":"x+…"\(\+\d+ chars\)/);
    expect(shown).toMatch(/… \d+ more fields: [a-zA-Z, ]+\}$/);
    // Every field shown is a complete key and value: what is left after removing the markers parses.
    const unmarked = shown
      .replace(/…"\(\+\d+ chars\)/g, '"')
      .replace(/,… \d+ more (fields: [a-zA-Z, ]+|items)/g, "");
    expect(() => JSON.parse(unmarked)).not.toThrow();
    // A short result is shown as it is.
    expect(previewResult('{"ok":true}', 240)).toBe('{"ok":true}');
  });

  test("the command prints the session and exits 0", () => {
    const run = spawnSync(process.execPath, [BIN, "demo"], { encoding: "utf8" });
    expect(run.stderr).toBe("");
    expect(run.status).toBe(0);
    expect(run.stdout).toContain("workcell demo:");
    expect(run.stdout).toContain("PATH_ESCAPES_WORKSPACE");
    const removed = run.stdout.match(/removing (\S+)/)![1]!;
    expect(existsSync(removed)).toBe(false);
  });
});
