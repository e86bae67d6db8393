// The `workcell` command (bin/workcell.mjs runs `main`).
//   workcell mcp --root DIR [options]   serve the tools over stdio MCP
//   workcell demo                                           a scripted agent session
import { isAbsolute, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { createCodingTools, type CodingToolsOptions } from "./coding.js";
import { ToolError } from "./errors.js";
import { nearestKey } from "./options.js";

const USAGE = `usage:
  workcell mcp --root DIR [--network] [--timeout-ms N] [--sandbox MODE] [--read-path P]... [--write-path P]...
      Serve workcell's tools for the workspace DIR to an MCP client over stdio.
      --network         let the processes the tools start use the network (blocked by default)
      --timeout-ms N    the timeout of the tools that start processes, in milliseconds
      --sandbox MODE    auto (default: confine as far as this system allows), required (refuse
                        to run processes without every layer) or off
      --read-path P     an absolute path the processes may also read (repeatable)
      --write-path P    an absolute path the processes may also read and write (repeatable)
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
const MCP_FLAGS = {
  root: { type: "string" },
  network: { type: "boolean" },
  "timeout-ms": { type: "string" },
  sandbox: { type: "string" },
  "read-path": { type: "string", multiple: true },
  "write-path": { type: "string", multiple: true },
} as const;

/**
 * node:util's parseArgs over `flags`, its errors as TypeErrors; an unknown flag names the
 * nearest valid one (`--netwrok: unknown option; did you mean --network?`).
 */
function parseFlags<F extends NonNullable<ParseArgsConfig["options"]>>(args: string[], flags: F) {
  try {
    return parseArgs({ args, options: flags, strict: true, allowPositionals: true });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const unknown = /^Unknown option '(-{1,2}[^'=]*)'/.exec(message)?.[1];
    if (unknown !== undefined) {
      const known = Object.keys(flags ?? {});
      const near = nearestKey(unknown.replace(/^-+/, ""), known);
      throw new TypeError(
        `${unknown}: unknown option; ${near === undefined ? `the options are ${known.map((k) => `--${k}`).join(", ")}` : `did you mean --${near}?`}`,
      );
    }
    throw new TypeError(message);
  }
}

export function parseMcpArgs(args: string[]): { root: string; options: CodingToolsOptions } {
  const { values, positionals } = parseFlags(args, MCP_FLAGS);
  if (positionals.length > 0) throw new TypeError(`unexpected argument ${JSON.stringify(positionals[0])}`);
  if (values.root === undefined || values.root === "") {
    throw new TypeError("--root DIR is required: the workspace directory the tools may act on");
  }
  const processes: NonNullable<CodingToolsOptions["processes"]> = {};
  const timeout = values["timeout-ms"];
  if (timeout !== undefined) {
    const ms = /^[0-9]+$/.test(timeout) ? Number(timeout) : NaN;
    if (!Number.isSafeInteger(ms) || ms <= 0) throw new TypeError(`--timeout-ms must be a positive whole number of milliseconds (got ${JSON.stringify(timeout)})`);
    processes.timeoutMs = ms;
  }
  if (values.network) processes.network = true;
  const sandbox = values.sandbox;
  if (sandbox !== undefined) {
    if (sandbox !== "auto" && sandbox !== "required" && sandbox !== "off") {
      throw new TypeError(`--sandbox must be auto, required or off (got ${JSON.stringify(sandbox)})`);
    }
    processes.sandbox = sandbox;
  }
  for (const [flag, key] of [["read-path", "readPaths"], ["write-path", "writePaths"]] as const) {
    const paths = values[flag];
    if (paths === undefined) continue;
    for (const p of paths) {
      if (!isAbsolute(p)) throw new TypeError(`--${flag} must be an absolute path (got ${JSON.stringify(p)})`);
    }
    processes[key] = paths;
  }
  return { root: resolve(values.root), options: Object.keys(processes).length > 0 ? { processes } : {} };
}

async function mcp(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseMcpArgs>;
  try {
    parsed = parseMcpArgs(args);
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err));
  }
  let tools;
  try {
    tools = createCodingTools(parsed.root, parsed.options);
  } catch (err) {
    const detail = err instanceof ToolError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
    process.stderr.write(`workcell: cannot open the workspace ${parsed.root}: ${detail}\n`);
    return 1;
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

  const server = adapter.createMcpServer(tools);
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
