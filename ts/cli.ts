// The `workcell` command (bin/workcell.mjs runs `main`).
//   workcell mcp DIR [options]   serve the tools over stdio MCP (or --root DIR)
//   workcell mcp --http HOST:PORT DIR [options]   serve them over Streamable HTTP
//   workcell demo                                           a scripted agent session
import { closeSync, fstatSync, openSync, readSync, constants as fsConstants } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import { parseArgs, type ParseArgsConfig } from "node:util";
import { createCodingTools, type CodingToolsOptions } from "./coding.js";
import { ToolError } from "./errors.js";
import { nearestKey } from "./options.js";
import { sandboxSupport } from "./sandbox.js";
import { CHECKPOINTS_USAGE, checkpointsCommand } from "./cli-checkpoints.js";

const MCP_USAGE = `usage:
  workcell mcp DIR [--network] [--timeout-ms N] [--sandbox MODE] [--read-path P]... [--write-path P]...
               [--ask write,process] [--approve deny|allow] [--checkpoints]
      Serve workcell's tools for the workspace DIR to an MCP client over stdio.
      DIR (or --root DIR) is required: a server never guesses its workspace.
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
      --checkpoints     also serve checkpoint, list_checkpoints, diff_checkpoint, rewind_checkpoint
  workcell mcp --http HOST:PORT DIR [--token-file F] [--allow-origin O]... [--public]
               [--idle-timeout S] [--max-sessions N] [--max-body-bytes N] [the options above]
      Serve the same tools over MCP's Streamable HTTP transport on http://HOST:PORT/mcp.
      Every request needs Authorization: Bearer TOKEN, the token read from --token-file F (a
      file only its owner may read: chmod 600) or from WORKCELL_MCP_TOKEN; at least 16 characters.
      --allow-origin O  an Origin browsers may send (repeatable); any other Origin is refused
      --public          allow a HOST that is not loopback (127.0.0.1, ::1, localhost)
      --idle-timeout S  close a session idle for S seconds (default 900)
      --max-sessions N  at most N sessions at once, each with its own processes (default 32)
      --max-body-bytes N  the largest request body read (default 4194304)
  At start the server logs (on stderr) what the sandbox will enforce on this system.
  More in docs/cli.md (shipped in the package: node_modules/workcell/docs/cli.md).`;

const USAGE = `${MCP_USAGE}
${CHECKPOINTS_USAGE}
  workcell demo
      Run a scripted agent session against a fresh temporary workspace and print it.
  workcell --version | --help`;

/** A bad command line: one line naming what was wrong and where to look; exit status 2. */
function fail(message: string, help = "workcell --help"): number {
  process.stderr.write(`workcell: ${message} (see ${help})\n`);
  return 2;
}

/** Runs the command line `args` (without node and the script); resolves with the exit code. */
export async function main(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "mcp":
      return mcp(rest);
    case "checkpoints":
      try {
        return await checkpointsCommand(rest);
      } catch (err) {
        if (err instanceof TypeError) return fail(err.message.replace(/^workcell: /, ""));
        throw err;
      }
    case "demo": {
      if (rest.length > 0) return fail(`demo takes no arguments (got ${JSON.stringify(rest[0])})`);
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

/** `--http`'s settings, as `parseMcpArgs` reads them. */
export interface McpHttpArgs {
  host: string;
  port: number;
  tokenFile?: string;
  allowOrigins: string[];
  public: boolean;
  idleTimeoutMs?: number;
  maxSessions?: number;
  maxBodyBytes?: number;
}

function wholeNumber(flag: string, text: string, min: number): number {
  const n = /^[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n) || n < min) throw new TypeError(`--${flag} must be a whole number of at least ${min} (got ${JSON.stringify(text)})`);
  return n;
}

/** `HOST:PORT` or `[IPV6]:PORT`. */
export function parseHostPort(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:([0-9]{1,5})$/.exec(text) ?? /^([^:[\]]+):([0-9]{1,5})$/.exec(text);
  const port = m ? Number(m[2]) : NaN;
  if (!m || !(port >= 0 && port <= 65535)) {
    throw new TypeError(`--http takes HOST:PORT, such as 127.0.0.1:8080 or [::1]:8080 (got ${JSON.stringify(text)})`);
  }
  return { host: m[1]!, port };
}

/** The longest token file read. */
const MAX_TOKEN_FILE_BYTES = 4096;

/**
 * Reads the bearer token from `file`: a regular file that only its owner may read or write
 * (no permission bits for group or others), at most 4 KiB; surrounding whitespace is dropped.
 */
export function readTokenFile(file: string): string {
  let fd: number;
  try {
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
  } catch (err) {
    throw new Error(`cannot open the token file ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`the token file ${file} is not a regular file`);
    if ((st.mode & 0o077) !== 0) {
      throw new Error(
        `the token file ${file} is readable or writable by others than its owner (mode ${(st.mode & 0o777).toString(8)}); run chmod 600 ${file}`,
      );
    }
    if (st.size > MAX_TOKEN_FILE_BYTES) throw new Error(`the token file ${file} is over ${MAX_TOKEN_FILE_BYTES} bytes; it should hold the token only`);
    const buf = Buffer.alloc(MAX_TOKEN_FILE_BYTES + 1);
    let n = 0;
    for (;;) {
      const r = readSync(fd, buf, n, buf.length - n, null);
      if (r === 0) break;
      n += r;
      if (n > MAX_TOKEN_FILE_BYTES) throw new Error(`the token file ${file} is over ${MAX_TOKEN_FILE_BYTES} bytes; it should hold the token only`);
    }
    return buf.subarray(0, n).toString("utf8").trim();
  } finally {
    closeSync(fd);
  }
}

/** `mcp`'s flags. */
const MCP_FLAGS = {
  root: { type: "string" },
  network: { type: "boolean" },
  "timeout-ms": { type: "string" },
  sandbox: { type: "string" },
  "read-path": { type: "string", multiple: true },
  "write-path": { type: "string", multiple: true },
  http: { type: "string" },
  "token-file": { type: "string" },
  "allow-origin": { type: "string", multiple: true },
  public: { type: "boolean" },
  "idle-timeout": { type: "string" },
  "max-sessions": { type: "string" },
  "max-body-bytes": { type: "string" },
  ask: { type: "string" },
  approve: { type: "string" },
  help: { type: "boolean", short: "h" },
  checkpoints: { type: "boolean" },
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

/** `mcp`'s approval flags: which effects ask (`--ask`), the answer without elicitation (`--approve`). */
export interface McpApprovalArgs {
  ask: ("write" | "process")[];
  fallback: "deny" | "allow";
}

/** `mcp`'s approval flags alone. */
export function parseMcpApproval(args: string[]): McpApprovalArgs {
  return parseMcpArgs(args).approval ?? { ask: [], fallback: "deny" };
}

/** Parses `mcp`'s flags into the root, the options of createCodingTools, the approval flags and `--http`'s settings. */
export function parseMcpArgs(args: string[]): { root: string; options: CodingToolsOptions; approval?: McpApprovalArgs; http?: McpHttpArgs } {
  const { values, positionals } = parseFlags(args, MCP_FLAGS);
  // The workspace: `workcell mcp DIR` or `--root DIR`, once.
  if (positionals.length > 1 || (positionals.length === 1 && values.root !== undefined)) {
    throw new TypeError(`unexpected argument ${JSON.stringify(positionals[values.root === undefined ? 1 : 0])}: give the workspace once, as DIR or --root DIR`);
  }
  const dir = values.root ?? positionals[0];
  if (dir === undefined || dir === "") {
    throw new TypeError("the workspace DIR (or --root DIR) is required: the directory the tools may act on");
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
  const root = resolve(dir);
  const options: CodingToolsOptions = Object.keys(processes).length > 0 ? { processes } : {};
  if (values.checkpoints) options.checkpoints = true;
  const ask: ("write" | "process")[] = [];
  if (values.ask !== undefined) {
    for (const effect of values.ask.split(",").map((e) => e.trim())) {
      if (effect !== "write" && effect !== "process") throw new TypeError(`--ask takes write, process or write,process (got ${JSON.stringify(values.ask)})`);
      if (!ask.includes(effect)) ask.push(effect);
    }
  }
  const fallback = values.approve ?? "deny";
  if (fallback !== "deny" && fallback !== "allow") throw new TypeError(`--approve must be deny or allow (got ${JSON.stringify(values.approve)})`);
  const approval: McpApprovalArgs = { ask, fallback };
  const httpOnly = ["token-file", "allow-origin", "public", "idle-timeout", "max-sessions", "max-body-bytes"] as const;
  if (values.http === undefined) {
    const given = httpOnly.find((f) => values[f] !== undefined);
    if (given !== undefined) throw new TypeError(`--${given} applies to --http HOST:PORT only`);
    // The approval flags appear only when given (`mcp` defaults them: nothing asks, deny).
    return ask.length > 0 || values.approve !== undefined ? { root, options, approval } : { root, options };
  }
  const http: McpHttpArgs = { ...parseHostPort(values.http), allowOrigins: values["allow-origin"] ?? [], public: values.public ?? false };
  if (values["token-file"] !== undefined) http.tokenFile = values["token-file"];
  if (values["idle-timeout"] !== undefined) http.idleTimeoutMs = wholeNumber("idle-timeout", values["idle-timeout"], 1) * 1000;
  if (values["max-sessions"] !== undefined) http.maxSessions = wholeNumber("max-sessions", values["max-sessions"], 1);
  if (values["max-body-bytes"] !== undefined) http.maxBodyBytes = wholeNumber("max-body-bytes", values["max-body-bytes"], 1024);
  for (const o of http.allowOrigins) {
    if (!/^https?:\/\/[^/\s]+$/.test(o)) throw new TypeError(`--allow-origin takes an origin such as https://app.example.com (got ${JSON.stringify(o)})`);
  }
  if (ask.length > 0 || values.approve !== undefined) {
    throw new TypeError("--ask and --approve apply to stdio only: over --http, approval is the host's (createMcpHttpServer's tools option)");
  }
  return { root, options, http };
}

/** Imports workcell/mcp, or says that the MCP SDK is missing (undefined). */
async function loadAdapter(): Promise<typeof import("./adapters/mcp-entry.js") | undefined> {
  try {
    return await import("./adapters/mcp-entry.js");
  } catch (err) {
    if ((err as { code?: string }).code === "WORKCELL_PEER_MISSING") {
      process.stderr.write(
        "workcell: `workcell mcp` needs the MCP SDK, an optional peer dependency: npm install @modelcontextprotocol/sdk\n",
      );
      return undefined;
    }
    throw err;
  }
}

/**
 * One line saying what the sandbox will enforce for the processes the tools start, on this
 * system, in `mode` (from the kernel's features as the core probes them; each result's
 * `sandbox` field reports what was enforced for that call).
 */
export function describeSandbox(mode: "auto" | "required" | "off" = "auto"): string {
  if (mode === "off") return "sandbox off: processes run as the user, unconfined (--sandbox off)";
  const s = sandboxSupport();
  const namespaces = s.pidNamespace && s.userNamespace;
  const layers = [
    s.landlockAbi === null ? "files NOT confined (no Landlock)" : `files confined (Landlock ABI ${s.landlockAbi})`,
    s.landlockAbi !== null && s.landlockAbi >= 4 ? "TCP blocked" : "TCP NOT blocked (Landlock ABI 4 needed)",
    namespaces ? "processes in a PID namespace" : "processes in a process group only (no user or PID namespace)",
    namespaces ? ".git read-only (mount namespace)" : ".git NOT protected: process calls fail unless protect is []",
    "Node's permission model for node_process",
  ];
  const missing = s.landlockAbi === null || s.landlockAbi < 4 || !namespaces;
  const tail = !missing
    ? ""
    : mode === "required"
      ? "; --sandbox required: every process call fails with SANDBOX_UNAVAILABLE here"
      : "; see docs/deployment.md for a container that gives the whole sandbox";
  return `sandbox ${mode}: ${layers.join(", ")}${tail}`;
}

async function mcpHttp(root: string, options: CodingToolsOptions, http: McpHttpArgs): Promise<number> {
  let token: string | undefined;
  try {
    token = http.tokenFile !== undefined ? readTokenFile(http.tokenFile) : process.env.WORKCELL_MCP_TOKEN?.trim();
  } catch (err) {
    return fail(`--token-file: ${err instanceof Error ? err.message : String(err)}`, "workcell mcp --help");
  }
  if (token === undefined || token === "") {
    return fail("--http needs a token: --token-file F (chmod 600) or the WORKCELL_MCP_TOKEN environment variable", "workcell mcp --help");
  }
  const adapter = await loadAdapter();
  if (!adapter) return 1;
  // The flags' own checks, named as flags (createMcpHttpServer checks them again as options).
  if (token.length < adapter.MIN_TOKEN_LENGTH) {
    const from = http.tokenFile !== undefined ? "--token-file" : "WORKCELL_MCP_TOKEN";
    return fail(`${from}: the token must be at least ${adapter.MIN_TOKEN_LENGTH} characters (openssl rand -hex 32 makes one)`, "workcell mcp --help");
  }
  if (!http.public && !adapter.isLoopbackHost(http.host)) {
    return fail(`--http ${http.host} is not a loopback address: add --public to serve the workspace to the network`, "workcell mcp --help");
  }
  let server: ReturnType<typeof adapter.createMcpHttpServer>;
  try {
    server = adapter.createMcpHttpServer(root, {
      token,
      host: http.host,
      port: http.port,
      public: http.public,
      allowOrigins: http.allowOrigins,
      tools: options,
      ...(http.idleTimeoutMs === undefined ? {} : { idleTimeoutMs: http.idleTimeoutMs }),
      ...(http.maxSessions === undefined ? {} : { maxSessions: http.maxSessions }),
      ...(http.maxBodyBytes === undefined ? {} : { maxBodyBytes: http.maxBodyBytes }),
      onLog: (line) => process.stderr.write(`workcell mcp: ${line}\n`),
    });
  } catch (err) {
    const detail = err instanceof ToolError ? `${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
    process.stderr.write(`workcell: cannot serve the workspace ${root}: ${detail}\n`);
    return 1;
  }
  const stopped = new Promise<string>((done) => {
    process.once("SIGINT", () => done("SIGINT"));
    process.once("SIGTERM", () => done("SIGTERM"));
  });
  let address: Awaited<ReturnType<typeof server.listen>>;
  try {
    address = await server.listen();
  } catch (err) {
    process.stderr.write(`workcell: cannot listen on ${http.host}:${http.port}: ${(err as NodeJS.ErrnoException).code ?? String(err)}\n`);
    return 1;
  }
  process.stderr.write(`workcell mcp: serving ${root} on ${address.url}\n`);
  process.stderr.write(`workcell mcp: ${describeSandbox(options.processes?.sandbox)}\n`);
  const why = await stopped;
  process.stderr.write(`workcell mcp: stopping (${why}): closing ${server.sessionCount} session(s)\n`);
  await server.close();
  process.stderr.write(`workcell mcp: stopped (${why})\n`);
  return 0;
}

async function mcp(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseMcpArgs>;
  try {
    if (args.includes("--help") || args.includes("-h")) {
      process.stdout.write(`${MCP_USAGE}\n`);
      return 0;
    }
    parsed = parseMcpArgs(args);
  } catch (err) {
    return fail(err instanceof Error ? err.message : String(err), "workcell mcp --help");
  }
  if (parsed.http) return mcpHttp(parsed.root, parsed.options, parsed.http);
  const adapter = await loadAdapter();
  if (!adapter) return 1;
  // Calls that ask (and every call with grants) ask the client's user through elicitation.
  const approval = parsed.approval ?? { ask: [], fallback: "deny" };
  const approver = adapter.createMcpApprover({ fallback: approval.fallback });
  let tools;
  try {
    tools = createCodingTools(parsed.root, {
      ...parsed.options,
      approve: approver.approve,
      approvalFor: {
        write: approval.ask.includes("write") ? "ask" : "allow",
        process: approval.ask.includes("process") ? "ask" : "allow",
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
  process.stderr.write(`workcell mcp: ${describeSandbox(parsed.options.processes?.sandbox)}\n`);
  const why = await stopped;
  server.onclose = undefined;
  await server.close();
  process.stderr.write(`workcell mcp: stopped (${why})\n`);
  return 0;
}
