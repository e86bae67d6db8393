// `workcell demo`: a scripted agent session against a fresh temporary workspace. No model and no
// network: the calls are the ones a model would send, run through the same registry and
// executeToolCall an agent loop uses, and printed as call, then result. The tools are discovered
// at run time from createCodingTools; the script has calls for the tools it knows and says which
// ones this build lacks.
import { mkdir, mkdtemp, realpath, rm, symlink, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createCodingTools } from "./coding.js";
import { isAbortError } from "./errors.js";
import { ToolRegistry, executeToolCall, type ToolResult } from "./registry.js";
import type { Progress } from "./tool.js";

/** The tools the script has calls for, in the order it shows them. */
export const SCRIPTED_TOOLS = [
  "list_files",
  "read_file",
  "search_files",
  "write_file",
  "edit_file",
  "node_process",
  "run_command",
  "run_tests",
  "start_process",
  "stop_process",
] as const;

interface Step {
  /** What the agent is doing, for the reader. */
  say: string;
  tool: string;
  args: unknown;
  /** Abort the call this many milliseconds after it starts. */
  cancelAfterMs?: number;
}

export interface DemoOptions {
  /** Where lines go (default: stdout). */
  print?: (line: string) => void;
  /** Longest result text shown before it is cut (default 240). */
  width?: number;
}

export interface DemoReport {
  /** The tools createCodingTools returned. */
  tools: string[];
  /** Every call made: tool, arguments, and its outcome. */
  calls: { tool: string; args: unknown; outcome: "ok" | "error" | "cancelled"; code?: string; ms: number }[];
  /** The temporary directory used (removed when the demo returns). */
  workspace: string;
}

const GREET = `// A tiny module for the agent to work on.
exports.greet = (name) => "hello " + name;
`;

const GREET_TEST = `const test = require("node:test");
const assert = require("node:assert");
const { greet } = require("../src/greet.js");

test("greets by name", () => {
  assert.strictEqual(greet("Ada"), "hello Ada");
});
`;

function cut(text: string, width: number): string {
  const flat = text.replace(/\s*\n\s*/g, " ");
  if (flat.length <= width) return flat;
  return `${flat.slice(0, width)}… (${flat.length - width} more characters)`;
}

/** One JSON value in at most about `budget` characters, shortened inside strings and lists. */
function shorten(value: unknown, budget: number): string {
  const whole = JSON.stringify(value) ?? "null";
  if (whole.length <= budget) return whole;
  if (typeof value === "string") {
    const keep = Math.max(8, budget - 24);
    return `${JSON.stringify(value.slice(0, keep)).slice(0, -1)}…"(+${value.length - keep} chars)`;
  }
  if (value !== null && typeof value === "object") {
    const isArray = Array.isArray(value);
    const entries = isArray ? (value as unknown[]).map((v) => [undefined, v] as const) : Object.entries(value);
    return fields(entries, budget, isArray);
  }
  return whole;
}

/** Whole fields (or list items) while they fit, then how many were left out: never a cut inside one. */
function fields(entries: readonly (readonly [string | undefined, unknown])[], width: number, isArray: boolean): string {
  const parts: string[] = [];
  let used = 2;
  for (let i = 0; i < entries.length; i++) {
    const [key, value] = entries[i]!;
    const label = key === undefined ? "" : `${JSON.stringify(key)}:`;
    const rest = entries.length - i;
    const room = width - used - label.length - (rest > 1 ? 24 : 0);
    const part = label + shorten(value, Math.max(32, room));
    if (parts.length > 0 && used + part.length > width) {
      const names = entries.slice(i).map(([k]) => k).filter((k) => k !== undefined);
      parts.push(isArray ? `… ${rest} more items` : `… ${rest} more fields: ${names.join(", ")}`);
      break;
    }
    parts.push(part);
    used += part.length + 1;
  }
  return isArray ? `[${parts.join(",")}]` : `{${parts.join(",")}}`;
}

/** A tool result (JSON text) shown in about `width` characters, cut between fields, not mid-value. */
export function previewResult(text: string, width: number): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return cut(text, width);
  }
  return shorten(value, width);
}

/** The script: for each step, the tool it needs; steps for tools this build lacks are skipped. */
function script(has: (name: string) => boolean, port: number): Step[] {
  const steps: Step[] = [
    { say: "The agent looks around the workspace.", tool: "list_files", args: {} },
    { say: "It reads the module it was asked to change.", tool: "read_file", args: { path: "src/greet.js" } },
    { say: "It searches for the function's callers.", tool: "search_files", args: { pattern: "greet\\(" } },
    {
      say: "It writes a new file (parent directories are created inside the workspace); the user approves the diff first.",
      tool: "write_file",
      args: { path: "src/shout.js", content: 'const { greet } = require("./greet.js");\nexports.shout = (n) => greet(n).toUpperCase() + "!";\n' },
    },
    {
      say: "It edits the module in place: the old text must occur exactly once.",
      tool: "edit_file",
      args: { path: "src/greet.js", edits: [{ oldText: "A tiny module", newText: "A small module" }] },
    },
    {
      say: "It runs a script with the host's Node.js (no shell, cwd = the workspace, an environment of PATH only).",
      tool: "node_process",
      args: {
        source: has("write_file")
          ? 'const { shout } = require("./src/shout.js"); console.log(shout(process.argv[1]));'
          : 'const { greet } = require("./src/greet.js"); console.log(greet(process.argv[1]));',
        arguments: ["workcell"],
      },
    },
    { say: "It runs a command: an argv, never a shell string.", tool: "run_command", args: { argv: ["ls", "src"] } },
    {
      say: "It runs a longer build; its output is shown live while it runs (progress updates, at most every 250 ms).",
      tool: "run_command",
      args: { argv: ["sh", "-c", "for i in 1 2 3 4 5 6; do echo \"build step $i of 6\"; sleep 0.2; done"] },
    },
    { say: "It runs the test suite and gets a short report.", tool: "run_tests", args: { runner: "node" } },
    {
      say: "It starts a dev server and waits until it says it is listening.",
      tool: "start_process",
      args: { argv: ["node", "-e", SERVER, String(port)], waitFor: "listening", waitMs: 15000, ports: [port] },
    },
    {
      say: "It fetches from the server with a command of the same tool set (only the session's port is open).",
      tool: "run_command",
      args: { argv: ["node", "-e", `fetch("http://127.0.0.1:${port}").then(r => r.text()).then(t => console.log(t))`] },
    },
    { say: "It stops the server and everything it started.", tool: "stop_process", args: { id: "p1" } },

    { say: "Refused: an absolute path (the path grammar, before any effect).", tool: "read_file", args: { path: "/etc/passwd" } },
    { say: "Refused: a path climbing out with .. (refused even when it would stay inside).", tool: "read_file", args: { path: "src/../../secret.txt" } },
    {
      say: "Refused escape: notes.txt is a symlink to ../secret.txt, outside the workspace.",
      tool: "read_file",
      args: { path: "notes.txt" },
    },
    { say: "Refused: writing outside through the same symlink.", tool: "write_file", args: { path: "notes.txt", content: "pwned" } },
    { say: "Refused: a command on the deny list.", tool: "run_command", args: { argv: ["sudo", "cat", "/etc/passwd"] } },
  ];

  // A timeout: the first process tool there is.
  if (has("node_process")) {
    steps.push({ say: "Timeout: a script that never ends is killed at its deadline (500 ms by default).", tool: "node_process", args: { source: "while (true) {}" } });
  } else if (has("run_command")) {
    steps.push({ say: "Timeout: a command that never ends is killed at its deadline.", tool: "run_command", args: { argv: ["sleep", "30"], timeoutMs: 300 } });
  }

  // A cancelled run: the agent's AbortSignal fires while the call is running.
  if (has("node_process")) {
    steps.push({
      say: "Cancelled: the user presses stop while a script runs; its whole process group is killed.",
      tool: "node_process",
      args: { source: "setInterval(() => {}, 1000);" },
      cancelAfterMs: 200,
    });
  } else if (has("run_command")) {
    steps.push({ say: "Cancelled: the user presses stop while a command runs.", tool: "run_command", args: { argv: ["sleep", "30"] }, cancelAfterMs: 200 });
  } else {
    steps.push({ say: "Cancelled: the user pressed stop before the call started; nothing happens.", tool: "read_file", args: { path: "src/greet.js" }, cancelAfterMs: 0 });
  }
  return steps.filter((s) => has(s.tool));
}

/** Runs the demo session; resolves with what was called. The workspace is always removed. */
export async function runDemo(options: DemoOptions = {}): Promise<DemoReport> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const width = options.width ?? 240;
  const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-demo-")));
  const report: DemoReport = { tools: [], calls: [], workspace: parent };
  let closing: ToolRegistry | undefined;
  try {
    const root = join(parent, "workspace");
    await mkdir(join(root, "src"), { recursive: true });
    await mkdir(join(root, "test"));
    await writeFile(join(root, "src", "greet.js"), GREET);
    await writeFile(join(root, "test", "greet.test.js"), GREET_TEST);
    await writeFile(join(root, "README.md"), "# demo project\n\nsrc/greet.js greets people.\n");
    await writeFile(join(parent, "secret.txt"), "API_KEY=this-must-never-reach-the-model\n");
    await symlink("../secret.txt", join(root, "notes.txt"));

    const port = await freePort();
    // A person in the loop: every write asks first, showing its diff; what is applied is
    // exactly what was shown (the preview's hashes are checked under the file's lock).
    const registry = new ToolRegistry(
      createCodingTools(root, {
        sessions: { ports: [port] },
        approvalFor: { write: "ask" },
        approve: (request) => {
          print(`    ? the user is asked: ${cut(request.summary, width)}`);
          const diff = (request.diff ?? "").split("\n").filter((l) => l.length > 0);
          for (const line of diff.slice(0, 8)) print(`      | ${cut(line, width)}`);
          if (diff.length > 8) print(`      | ... ${diff.length - 8} more lines`);
          print("    ? the user approves");
          return true;
        },
      }),
    );
    closing = registry;
    const names = registry.list().map((t) => t.name);
    report.tools = names;
    const has = (name: string) => registry.get(name) !== undefined;
    const missing = SCRIPTED_TOOLS.filter((n) => !has(n));
    const unknown = names.filter((n) => !(SCRIPTED_TOOLS as readonly string[]).includes(n));

    print("workcell demo: a scripted agent session (the calls a model would send; no model, no network)");
    print(`workspace: ${root}`);
    print(`outside it: ${join(parent, "secret.txt")} (the agent must never see this)`);
    print(`tools: ${names.join(", ")}`);
    if (missing.length > 0) print(`not in this build: ${missing.join(", ")} (their steps are skipped)`);
    if (unknown.length > 0) print(`no scripted call for: ${unknown.join(", ")}`);

    let n = 0;
    for (const step of script(has, port)) {
      n += 1;
      print("");
      print(`${String(n).padStart(2)}. ${step.say}`);
      print(`    > ${step.tool} ${JSON.stringify(step.args)}`);
      const controller = new AbortController();
      let timer: NodeJS.Timeout | undefined;
      if (step.cancelAfterMs === 0) controller.abort();
      else if (step.cancelAfterMs !== undefined) timer = setTimeout(() => controller.abort(), step.cancelAfterMs);
      const started = performance.now();
      let result: ToolResult | undefined;
      try {
        // A run's progress, live: its line, then the output that arrived since the last update.
        const live = (u: Progress): void => {
          print(`    … ${cut(u.message, width)} (${(u.elapsedMs / 1000).toFixed(1)} s)`);
          for (const line of (u.output ?? "").split("\n").filter((l) => l.length > 0)) print(`    ~ ${cut(line, width)}`);
        };
        result = await executeToolCall(registry, { type: "toolCall", id: `demo-${n}`, name: step.tool, arguments: step.args }, controller.signal, live);
      } catch (err) {
        if (!isAbortError(err)) throw err;
      } finally {
        if (timer) clearTimeout(timer);
      }
      const ms = Math.round(performance.now() - started);
      if (!result) {
        print(`    < cancelled (AbortError) after ${ms} ms`);
        report.calls.push({ tool: step.tool, args: step.args, outcome: "cancelled", ms });
        continue;
      }
      if (!result.isError) {
        print(`    < ok (${ms} ms) ${previewResult(result.content, width)}`);
        report.calls.push({ tool: step.tool, args: step.args, outcome: "ok", ms });
        continue;
      }
      const { error } = JSON.parse(result.content) as { error: { code: string; message: string; hint?: string } };
      print(`    < error (${ms} ms) ${error.code}: ${cut(error.message, width)}`);
      if (error.hint) print(`      hint: ${cut(error.hint, width)}`);
      report.calls.push({ tool: step.tool, args: step.args, outcome: "error", code: error.code, ms });
    }
    print("");
    print(`${report.calls.length} calls; removing ${parent}`);
    return report;
  } finally {
    await closing?.close();
    await rm(parent, { recursive: true, force: true });
  }
}

const SERVER = "require('http').createServer((q, s) => s.end('hello from the dev server')).listen(+process.argv[1], '127.0.0.1', () => console.log('listening on ' + process.argv[1]))";

/** A TCP port free on the loopback interface now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on("error", reject);
  });
}
