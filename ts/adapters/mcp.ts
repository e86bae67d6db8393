// `workcell/mcp`: serve workcell's tools to any MCP client (desktop agents, IDEs, the MCP SDK's
// own Client) with the low-level `Server` of `@modelcontextprotocol/sdk` (an optional peer
// dependency; the main entry never loads it). Connect it to a transport yourself, or use the
// `workcell mcp` command, which serves `createCodingTools(root)` over stdio (through
// `McpStdioTransport`, which answers malformed frames instead of closing or going silent).
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Implementation,
  type JSONRPCMessage,
  type Tool as McpTool,
  type ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import { runToolCall, toRegistry, toolTitle, type ToolsInput } from "./common.js";
import type { ApprovalAnswer, ApprovalRequest, Approve } from "../approval.js";

export type { ToolsInput };

/**
 * The MCP annotations of workcell's tools, by name. They are hints for the client (for example
 * whether to ask the user before a call), not guarantees: every limit is enforced by the tools.
 * - reading tools change nothing;
 * - writing tools replace file content (destructive) but only inside the workspace (closed
 *   world); writing the same content twice is idempotent, an edit is not;
 * - process tools run code that may do anything the sandbox allows, including the network
 *   when it is enabled (open world).
 * A tool not listed gets no annotations, so a client applies MCP's cautious defaults.
 */
export const TOOL_ANNOTATIONS: Readonly<Record<string, ToolAnnotations>> = Object.freeze({
  read_file: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  list_files: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  search_files: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  write_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
  edit_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  apply_patch: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  move_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  delete_file: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  make_directory: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  node_process: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  run_command: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  run_tests: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
});

/** Options of `createMcpServer`. */
export interface McpServerOptions {
  /** Instructions the server gives the client at initialization. */
  instructions?: string;
  /** Annotations by tool name, merged key by key over `TOOL_ANNOTATIONS` (for your own tools, say). */
  annotations?: Record<string, ToolAnnotations>;
}

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/**
 * Creates an MCP server (not yet connected) exposing `tools`:
 * - `tools/list` gives each tool's name, title, description, JSON Schema and annotations;
 * - `tools/call` validates and runs the tool; the result is one text block with the output's
 *   JSON, or, for a recoverable failure, `isError: true` with the `{"error":{code,message,hint}}`
 *   JSON (so the model can recover). An unknown tool name is the protocol error InvalidParams.
 * - A client's `notifications/cancelled` (or the connection closing) aborts the call's
 *   AbortSignal: the tool stops (a process tool kills its process group) and no response is
 *   sent, as MCP specifies.
 * `close()` aborts the calls still running and resolves once they have all settled.
 */
export function createMcpServer(
  tools: ToolsInput,
  info: Implementation = { name: "workcell", version: packageVersion() },
  options: McpServerOptions = {},
): Server {
  const registry = toRegistry(tools);
  const own = (record: Readonly<Record<string, ToolAnnotations>> | undefined, name: string) =>
    record && Object.prototype.hasOwnProperty.call(record, name) ? record[name] : undefined;
  const server = new Server(info, {
    capabilities: { tools: {} },
    ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
  });

  const listed: McpTool[] = registry.list().map((t) => {
    const title = toolTitle(t.name);
    const base = own(TOOL_ANNOTATIONS, t.name);
    const extra = own(options.annotations, t.name);
    const a = base === undefined && extra === undefined ? undefined : { ...base, ...extra };
    return {
      name: t.name,
      title,
      description: t.description,
      inputSchema: t.parameters as McpTool["inputSchema"],
      ...(a === undefined ? {} : { annotations: { title, ...a } }),
    };
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));

  const inflight = new Set<Promise<unknown>>();
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    if (!registry.get(name)) {
      throw new McpError(
        McpErrorCode.InvalidParams,
        `no tool is named ${JSON.stringify(name)}; call one of: ${registry.list().map((t) => t.name).join(", ")}`,
      );
    }
    const call = runToolCall(registry, name, String(extra.requestId), args ?? {}, extra.signal);
    inflight.add(call);
    try {
      const result = await call;
      return { content: [{ type: "text", text: result.content }], isError: result.isError };
    } finally {
      inflight.delete(call);
    }
  });

  const close = server.close.bind(server);
  server.close = async () => {
    await close(); // aborts every running handler's signal
    await Promise.allSettled([...inflight]);
  };
  return server;
}

/** Options of `createMcpApprover`. */
export interface McpApproverOptions {
  /**
   * The answer when the client cannot ask its user (no elicitation capability, or no server
   * attached yet): `"deny"` (default) or `"allow"`. A call asking for `grants` is denied without
   * elicitation unless `grants` is `"allow"` too.
   */
  fallback?: "deny" | "allow";
  /** The answer to a grant request when the client cannot ask (default `"deny"`). */
  grants?: "deny" | "allow";
}

/** Longest text of an elicitation message (the diff is cut to fit, with a note). */
export const MAX_ELICITATION_MESSAGE = 16 * 1024;

function approvalMessage(request: ApprovalRequest): string {
  const parts = [`workcell asks: ${request.summary}`];
  if (request.grants) parts.push(`Grants asked for this call: ${JSON.stringify(request.grants)}`);
  if (request.argv) parts.push(`Command: ${JSON.stringify(request.argv)}${request.cwd ? ` in ${request.cwd}` : ""}`);
  if (request.source !== undefined) parts.push(`Script:\n${request.source}`);
  if (request.diff) parts.push(request.diff);
  let text = parts.join("\n\n");
  if (text.length > MAX_ELICITATION_MESSAGE) {
    text = `${text.slice(0, MAX_ELICITATION_MESSAGE - 80)}\n... cut at ${MAX_ELICITATION_MESSAGE} characters`;
  }
  return text;
}

/**
 * An `approve` for the tools an MCP server serves: it asks the client's user through MCP
 * elicitation (`elicitation/create`, the summary and the diff in the message, a yes/no form
 * with an optional reason) when the client declared the `elicitation` capability; otherwise it
 * answers `fallback` (default deny; grants: `grants`, default deny). Create the tools with
 * `approve: approver.approve`, then `approver.attach(server)` once the server exists.
 */
export function createMcpApprover(options: McpApproverOptions = {}): { approve: Approve; attach(server: Server): void } {
  const fallback = options.fallback ?? "deny";
  const grants = options.grants ?? "deny";
  for (const [k, v] of [["fallback", fallback], ["grants", grants]] as const) {
    if (v !== "deny" && v !== "allow") throw new TypeError(`workcell: createMcpApprover option ${k} must be "deny" or "allow"`);
  }
  let server: Server | undefined;
  const approve: Approve = async (request, { signal }): Promise<ApprovalAnswer> => {
    const canAsk = server?.getClientCapabilities()?.elicitation !== undefined;
    if (!server || !canAsk) {
      const answer = request.grants ? grants : fallback;
      return answer === "allow"
        ? true
        : { allow: false, reason: "the MCP client cannot ask its user (no elicitation) and this server does not allow such calls without asking" };
    }
    const result = await server.elicitInput(
      {
        message: approvalMessage(request),
        requestedSchema: {
          type: "object",
          properties: {
            approve: { type: "boolean", title: "Allow", description: "Run this call as shown" },
            reason: { type: "string", title: "Reason", description: "Optional: why not (the model is told)" },
          },
          required: ["approve"],
        },
      },
      { signal },
    );
    if (result.action !== "accept") return { allow: false, reason: `the user chose ${result.action}` };
    const content = (result.content ?? {}) as { approve?: unknown; reason?: unknown };
    const reason = typeof content.reason === "string" && content.reason.length > 0 ? content.reason : undefined;
    if (content.approve === true) return true;
    return reason === undefined ? { allow: false } : { allow: false, reason };
  };
  return {
    approve,
    attach(s: Server) {
      server = s;
    },
  };
}

/** Longest JSON-RPC line `McpStdioTransport` reads (10 MiB, the MCP SDK's own stdio cap). */
export const MAX_MCP_LINE_BYTES = 10 * 1024 * 1024;

/** The first bytes of an oversized line kept to find its `id`. */
const HEAD_BYTES = 1024;

type RequestId = string | number;

function isRequestId(v: unknown): v is RequestId {
  return typeof v === "string" || (typeof v === "number" && Number.isSafeInteger(v));
}

/**
 * A stdio transport for MCP servers that keeps serving whatever the client sends (the SDK's
 * `StdioServerTransport` closes the session on a line over its 10 MiB buffer, and drops a
 * message its schema refuses without an answer). Messages are newline-delimited JSON, as
 * MCP's stdio transport specifies. Each line is read up to `maxLineBytes` (chunks are kept
 * as they come, never re-concatenated, so a long line costs linear time):
 * - a longer line is skipped to its end and answered with JSON-RPC error -32600 (Invalid
 *   Request), with the request's `id` when it appears before `"params"` in the line's first
 *   kilobyte, else `null`;
 * - a line that is not JSON: -32700 (Parse error), `id: null`;
 * - a request the protocol's schema refuses (`"params": null`, a string as params, a bad
 *   `jsonrpc`): -32602 (Invalid params) when only its params are wrong, else -32600, with its
 *   `id`; a malformed notification or response is reported to `onerror` only (JSON-RPC never
 *   answers those).
 * The session goes on in every case.
 */
export class McpStdioTransport implements Transport {
  onmessage?: (message: JSONRPCMessage) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;

  private chunks: Buffer[] = [];
  private size = 0;
  /** The head of a line being skipped because it is too long. */
  private skipping: Buffer | undefined;
  private started = false;
  private readonly input: NodeJS.ReadableStream;
  private readonly output: NodeJS.WritableStream;
  private readonly maxLineBytes: number;

  constructor(
    input: NodeJS.ReadableStream = process.stdin,
    output: NodeJS.WritableStream = process.stdout,
    options: { maxLineBytes?: number } = {},
  ) {
    const max = options.maxLineBytes ?? MAX_MCP_LINE_BYTES;
    if (!Number.isSafeInteger(max) || max < 1) throw new TypeError("workcell: maxLineBytes must be a positive integer");
    this.input = input;
    this.output = output;
    this.maxLineBytes = max;
  }

  private readonly onData = (chunk: Buffer | string): void => {
    const buf = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    let start = 0;
    while (start <= buf.length) {
      const nl = buf.indexOf(10, start);
      const end = nl === -1 ? buf.length : nl;
      const piece = buf.subarray(start, end);
      if (this.skipping === undefined && this.size + piece.length > this.maxLineBytes) {
        const head = Buffer.concat([...this.chunks, piece.subarray(0, HEAD_BYTES)]).subarray(0, HEAD_BYTES);
        this.skipping = head;
        this.chunks = [];
        this.size = 0;
      } else if (this.skipping === undefined && piece.length > 0) {
        this.chunks.push(piece);
        this.size += piece.length;
      }
      if (nl === -1) break;
      if (this.skipping !== undefined) {
        const head = this.skipping;
        this.skipping = undefined;
        this.tooLong(head);
      } else {
        const line = Buffer.concat(this.chunks, this.size).toString("utf8");
        this.chunks = [];
        this.size = 0;
        this.line(line);
      }
      start = nl + 1;
    }
  };

  private readonly onStreamError = (error: Error): void => {
    this.onerror?.(error);
  };

  async start(): Promise<void> {
    if (this.started) throw new Error("McpStdioTransport already started");
    this.started = true;
    this.input.on("data", this.onData);
    this.input.on("error", this.onStreamError);
  }

  private reply(id: RequestId | null, code: number, message: string): void {
    this.output.write(`${JSON.stringify({ jsonrpc: "2.0", id, error: { code, message } })}\n`);
  }

  private tooLong(head: Buffer): void {
    const text = head.toString("utf8");
    const before = text.split('"params"')[0]!;
    const m = /"id"\s*:\s*(-?\d{1,16}|"(?:[^"\\]|\\.){0,200}")/.exec(before);
    let id: RequestId | null = null;
    if (m) {
      try {
        const v: unknown = JSON.parse(m[1]!);
        if (isRequestId(v)) id = v;
      } catch {
        id = null;
      }
    }
    const message = `Invalid Request: the message is longer than ${this.maxLineBytes} bytes, the most this server reads; send smaller arguments`;
    this.reply(id, McpErrorCode.InvalidRequest, message);
    this.onerror?.(new Error(message));
  }

  private line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      const message = `Parse error: the line is not JSON (${err instanceof Error ? err.message : String(err)})`;
      this.reply(null, McpErrorCode.ParseError, message);
      this.onerror?.(new Error(message));
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (parsed.success) {
      this.onmessage?.(parsed.data as JSONRPCMessage);
      return;
    }
    const obj = typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
    const id = obj !== undefined && isRequestId(obj.id) ? obj.id : undefined;
    const method = obj?.method;
    let message: string;
    if (obj !== undefined && typeof method === "string" && id !== undefined) {
      const params = obj.params;
      const paramsBad = "params" in obj && (typeof params !== "object" || params === null || Array.isArray(params));
      if (paramsBad && obj.jsonrpc === "2.0") {
        message = `Invalid params: ${method} takes an object as params, or none (got ${params === null ? "null" : Array.isArray(params) ? "an array" : typeof params})`;
        this.reply(id, McpErrorCode.InvalidParams, message);
      } else {
        message = `Invalid Request: not a JSON-RPC 2.0 request (${parsed.error.issues.map((i) => i.message).join("; ")})`;
        this.reply(id, McpErrorCode.InvalidRequest, message);
      }
    } else if (obj !== undefined && (typeof method === "string" || "result" in obj || "error" in obj)) {
      // A malformed notification or response: JSON-RPC sends nothing back for those.
      message = "a malformed JSON-RPC notification or response was ignored";
    } else {
      message = "Invalid Request: not a JSON-RPC 2.0 message";
      this.reply(obj !== undefined && id !== undefined ? id : null, McpErrorCode.InvalidRequest, message);
    }
    this.onerror?.(new Error(message));
  }

  async close(): Promise<void> {
    this.input.off("data", this.onData);
    this.input.off("error", this.onStreamError);
    if (this.input.listenerCount("data") === 0) this.input.pause();
    this.chunks = [];
    this.size = 0;
    this.skipping = undefined;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    return new Promise((resolve) => {
      if (this.output.write(`${JSON.stringify(message)}\n`)) resolve();
      else this.output.once("drain", () => resolve());
    });
  }
}
