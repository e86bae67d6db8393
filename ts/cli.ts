// The `workcell` command (bin/workcell.mjs runs `main`).
//   workcell mcp --root DIR [options]   serve the tools over stdio MCP
//   workcell demo                                           a scripted agent session
import { isAbsolute, resolve } from "node:path";
import { parseArgs } from "node:util";
import { createCodingTools, type CodingToolsOptions } from "./coding.js";
import { ToolError } from "./errors.js";

const USAGE = `usage:
  workcell mcp --root DIR [--network] [--timeout-ms N] [--sandbox MODE] [--read-path P]... [--write-path P]...
               [--ask write,process] [--approve deny|allow]
      Serve workcell's tools for the workspace DIR to an MCP client over stdio.
      --network         let the processes the tools start use the network (blocked by default)
      --timeout-ms N    the timeout of the tools that start processes, in milliseconds
      --sandbox MODE    auto (default: confine as far as this system allows), required (refuse
                        to run processes without every layer) or off
      --read-path P     an absolute path the processes may also read (repeatable)
      --write-path P    an absolute path the processes may also read and write (repeatable)
      --ask EFFECTS     which calls ask the user first (write, process, or both, comma-separated);
                        a call may always ask for grants. The client's user is asked through MCP
                        elicitation (the diff in the message) when the client supports it
      --approve ANSWER  the answer when the client cannot ask its user: deny (default) or allow
                        (grants are always denied without asking)
  workcell demo
      Run a scripted agent session against a fresh temporary workspace and print it.
  workcell --version | --help`;

function fail(message: string): number {
  process.stderr.write(`workcell: ${message}\n\n${USAGE}\n`);
  return 2;
}

/** Runs the command line `args` (without node and the script); resolves with the exit code. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "mcp":
      return mcp(rest);
    case "demo": {
      if (rest.length > 0) return fail(`demo takes no arguments (got ${rest.join(" ")})`);
      const { runDemo } = await import("./demo.js");
      await runDemo();
      return 0;
    }
    case "--help":
    case "-h":
    case "help":
      process.stdout.write(`${USAGE}\n`);
      return 0;
    case "--version":
    case "-v": {
      const { readFileSync } = await import("node:fs");
      const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
      process.stdout.write(`${pkg.version}\n`);
      return 0;
    }
    case undefined:
      return fail("no command given");
    default:
      return fail(`unknown command ${JSON.stringify(command)}`);
  }
}

/** Parses `mcp`'s flags into the root and the options of createCodingTools. */
export function parseMcpArgs(args: string[]): { root: string; options: CodingToolsOptions } {
  const { root, options } = parseMcp(args);
  return { root, options };
}

/** `mcp`'s approval flags: which effects ask (`--ask`), the answer without elicitation (`--approve`). */
export function parseMcpApproval(args: string[]): { ask: ("write" | "process")[]; fallback: "deny" | "allow" } {
  return parseMcp(args).approval;
}

function parseMcp(args: string[]): {
  root: string;
  options: CodingToolsOptions;
  approval: { ask: ("write" | "process")[]; fallback: "deny" | "allow" };
} {
  const { values, positionals } = parseArgs({
    args,
    options: {
      root: { type: "string" },
      network: { type: "boolean" },
      "timeout-ms": { type: "string" },
      sandbox: { type: "string" },
      "read-path": { type: "string", multiple: true },
      "write-path": { type: "string", multiple: true },
      ask: { type: "string" },
      approve: { type: "string" },
    },
    strict: true,
    allowPositionals: true,
  });
  if (positionals.length > 0) throw new Error(`unexpected argument ${JSON.stringify(positionals[0])}`);
  if (values.root === undefined || values.root === "") {
    throw new Error("--root DIR is required: the workspace directory the tools may act on");
  }
  const processes: NonNullable<CodingToolsOptions["processes"]> = {};
  const timeout = values["timeout-ms"];
  if (timeout !== undefined) {
    const ms = /^[0-9]+$/.test(timeout) ? Number(timeout) : NaN;
    if (!Number.isSafeInteger(ms) || ms <= 0) throw new Error(`--timeout-ms must be a positive whole number of milliseconds (got ${JSON.stringify(timeout)})`);
    processes.timeoutMs = ms;
  }
  if (values.network) processes.network = true;
  const sandbox = values.sandbox;
  if (sandbox !== undefined) {
    if (sandbox !== "auto" && sandbox !== "required" && sandbox !== "off") {
      throw new Error(`--sandbox must be auto, required or off (got ${JSON.stringify(sandbox)})`);
    }
    processes.sandbox = sandbox;
  }
  for (const [flag, key] of [["read-path", "readPaths"], ["write-path", "writePaths"]] as const) {
    const paths = values[flag];
    if (paths === undefined) continue;
    for (const p of paths) {
      if (!isAbsolute(p)) throw new Error(`--${flag} must be an absolute path (got ${JSON.stringify(p)})`);
    }
    processes[key] = paths;
  }
  const ask: ("write" | "process")[] = [];
  if (values.ask !== undefined) {
    for (const effect of values.ask.split(",").map((e) => e.trim())) {
      if (effect !== "write" && effect !== "process") throw new Error(`--ask takes write, process or write,process (got ${JSON.stringify(values.ask)})`);
      if (!ask.includes(effect)) ask.push(effect);
    }
  }
  const fallback = values.approve ?? "deny";
  if (fallback !== "deny" && fallback !== "allow") throw new Error(`--approve must be deny or allow (got ${JSON.stringify(values.approve)})`);
  return {
    root: resolve(values.root),
    options: Object.keys(processes).length > 0 ? { processes } : {},
    approval: { ask, fallback },
  };
}

async function mcp(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseMcp>;
  try {
    parsed = parseMcp(args);
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
  let adapter: typeof import("./adapters/mcp.js");
  try {
    adapter = await import("./adapters/mcp.js");
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_MODULE_NOT_FOUND" && String(err).includes("@modelcontextprotocol/sdk")) {
      process.stderr.write(
        "workcell: `workcell mcp` needs the MCP SDK, an optional peer dependency: npm install @modelcontextprotocol/sdk\n",
      );
      return 1;
    }
    throw err;
  }
  // Calls that ask (and every call with grants) ask the client's user through elicitation.
  const approver = adapter.createMcpApprover({ fallback: parsed.approval.fallback });
  let tools;
  try {
    tools = createCodingTools(parsed.root, {
      ...parsed.options,
      approve: approver.approve,
      approvalFor: {
        write: parsed.approval.ask.includes("write") ? "ask" : "allow",
        process: parsed.approval.ask.includes("process") ? "ask" : "allow",
        grant: "ask",
      },
    });
  } catch (err) {
    const detail = err instanceof ToolError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
    process.stderr.write(`workcell: cannot open the workspace ${parsed.root}: ${detail}\n`);
    return 1;
  }

  const server = adapter.createMcpServer(tools);
  approver.attach(server);
  // workcell's own stdio transport: a line over 10 MiB, a line that is not JSON or a request
  // with bad params is answered with a JSON-RPC error, and the session goes on.
  const transport = new adapter.McpStdioTransport();
  // Serve until the client goes away (stdin ends), the transport closes, or a signal arrives;
  // then close the server, which aborts the running calls and waits for them to settle (a
  // process tool kills its process group), so nothing the calls started outlives the server.
  const stopped = new Promise<string>((done) => {
    process.stdin.once("end", () => done("stdin closed"));
    process.stdin.once("close", () => done("stdin closed"));
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
    server.onclose = () => done("connection closed");
  });
  await server.connect(transport);
  process.stderr.write(
    `workcell mcp: serving ${tools.map((t) => t.name).join(", ")} for ${parsed.root} over stdio\n`,
  );
  const why = await stopped;
  server.onclose = undefined;
  await server.close();
  process.stderr.write(`workcell mcp: stopped (${why})\n`);
  return 0;
}
