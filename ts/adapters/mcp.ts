// `workcell/mcp`: serve workcell's tools to any MCP client (desktop agents, IDEs, the MCP SDK's
// own Client) with the low-level `Server` of `@modelcontextprotocol/sdk` (an optional peer
// dependency; the main entry never loads it). Connect it to a transport yourself, or use the
// `workcell mcp` command, which serves `createCodingTools(root)` over stdio (through
// `McpStdioTransport`, which answers malformed frames instead of closing or going silent).
import { readFileSync } from "node:fs";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { CreateTaskOptions, TaskStore } from "@modelcontextprotocol/sdk/experimental/tasks/interfaces.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type {
  CallToolResult,
  Implementation,
  JSONRPCMessage,
  Request as McpRequest,
  RequestId as McpRequestId,
  Result as McpResult,
  Task as McpTask,
  Tool as McpTool,
  ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import type { ToolResult } from "../registry.js";
import { effectOf, type Progress, type ToolEffect } from "../tool.js";
import { isImageOutput } from "../image.js";
import type { JsonSchema } from "../schema.js";
import { runToolCall, toRegistry, toolTitle, type ToolsInput } from "./common.js";
import { OPTION_SPECS, checkOptions, option, type OptionSpecOf } from "../options.js";
// Declares createCodingTools's spec (OPTION_SPECS), which a session's `tools` option is.
import "../coding.js";
import type { ApprovalAnswer, ApprovalRequest, Approve } from "../approval.js";
import { ErrorCode, ToolError } from "../errors.js";
import { requirePeer } from "./peer.js";

// The MCP SDK: a missing one is an Error saying to install it, when this module loads.
const { Server: SdkServer } = requirePeer<typeof import("@modelcontextprotocol/sdk/server/index.js")>("@modelcontextprotocol/sdk/server/index.js", "workcell/mcp", "@modelcontextprotocol/sdk");
const { InMemoryTaskStore } = requirePeer<typeof import("@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js")>(
  "@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js",
  "workcell/mcp",
  "@modelcontextprotocol/sdk",
);
const {
  CallToolRequestSchema,
  ErrorCode: McpErrorCode,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
} = requirePeer<typeof import("@modelcontextprotocol/sdk/types.js")>("@modelcontextprotocol/sdk/types.js", "workcell/mcp", "@modelcontextprotocol/sdk");

export type { ToolsInput };

/**
 * The MCP annotations of a tool, derived from its `effect` (contract §10; a tool without one is
 * `"process"`). They are hints for the client (for example whether to ask the user before a
 * call), not guarantees: every limit is enforced by the tools.
 * - reading tools change nothing;
 * - writing tools change or remove files (destructive), but only inside the workspace (closed
 *   world); not every write is idempotent (an edit, a patch, a move), so none is said to be;
 * - process tools run code that may do anything the sandbox allows, including the network
 *   when it is enabled (open world).
 */
export const EFFECT_ANNOTATIONS: Readonly<Record<ToolEffect, ToolAnnotations>> = Object.freeze({
  read: Object.freeze({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }),
  write: Object.freeze({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false }),
  process: Object.freeze({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true }),
});

/** Options of `createMcpServer`. */
export interface McpServerOptions {
  /** Instructions the server gives the client at initialization. */
  instructions?: string;
  /** Annotations by tool name, merged key by key over those its `effect` gives (`EFFECT_ANNOTATIONS`). */
  annotations?: Record<string, ToolAnnotations>;
  /**
   * MCP tasks for the tools with `taskSupport: "optional"` (run_tests): `true` (default) offers
   * them, `false` lists no tool as task-capable and refuses task requests.
   */
  tasks?: boolean;
  /** At most this many tasks run at once (default 16, `MAX_RUNNING_TASKS`); more are refused. */
  maxRunningTasks?: number;
}

/** How many tasks a server runs at once by default. */
export const MAX_RUNNING_TASKS = 16;
/** How long a finished task's result is kept when the client asks for no ttl (10 minutes). */
export const DEFAULT_TASK_TTL_MS = 600_000;
/** The longest ttl a client may ask for a task (1 hour); longer requests are cut to it. */
export const MAX_TASK_TTL_MS = 3_600_000;

/**
 * The task store of one server: the SDK's in-memory store, which also aborts a running task's
 * AbortSignal when the task is cancelled (`tasks/cancel`), so the tool stops (a process tool
 * kills its process tree).
 */
class AbortingTaskStore implements TaskStore {
  readonly inner = new InMemoryTaskStore();
  readonly running = new Map<string, AbortController>();

  createTask(params: CreateTaskOptions, requestId: McpRequestId, request: McpRequest, sessionId?: string): Promise<McpTask> {
    return this.inner.createTask(params, requestId, request, sessionId);
  }
  getTask(taskId: string, sessionId?: string): Promise<McpTask | null> {
    return this.inner.getTask(taskId, sessionId);
  }
  storeTaskResult(taskId: string, status: "completed" | "failed", result: McpResult, sessionId?: string): Promise<void> {
    return this.inner.storeTaskResult(taskId, status, result, sessionId);
  }
  getTaskResult(taskId: string, sessionId?: string): Promise<McpResult> {
    return this.inner.getTaskResult(taskId, sessionId);
  }
  async updateTaskStatus(taskId: string, status: McpTask["status"], statusMessage?: string, sessionId?: string): Promise<void> {
    await this.inner.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") this.running.get(taskId)?.abort(new Error("the client cancelled the task"));
  }
  listTasks(cursor?: string, sessionId?: string): Promise<{ tasks: McpTask[]; nextCursor?: string }> {
    return this.inner.listTasks(cursor, sessionId);
  }
}

const pending = new WeakMap<Server, () => number>();

/**
 * @internal
 * Servers whose transport answers requests with JSON bodies (no per-request stream): their
 * progress notifications go on the session's stream. Set by the HTTP server.
 */
export const progressOnSessionStream = new WeakSet<object>();

/** A progress notification as the SDK sends it. */
interface ProgressNotification {
  method: "notifications/progress";
  params: { progressToken: string | number; progress: number; total?: number; message?: string };
}

/**
 * `notifications/progress` for a call whose request carried `_meta.progressToken` (none
 * without one: no listener, so the call is not watched). MCP wants `progress` to grow with
 * every notification: a tool that counts with a known total (apply_patch) sends its count and
 * total, any other tool the milliseconds since the call started, with its count in the message
 * ("12 passed, 1 failed"). `message` is the update's line, then the output since the last one.
 * A notification that fails to go out (the client left) is dropped.
 */
function progressSender(
  token: unknown,
  send: (n: ProgressNotification) => Promise<void>,
): ((update: Progress) => void) | undefined {
  if (typeof token !== "string" && typeof token !== "number") return undefined;
  let last = -Infinity;
  return (u) => {
    const counted = u.progress !== undefined && u.total !== undefined;
    const progress = counted ? u.progress! : u.elapsedMs;
    if (!(progress > last)) return;
    last = progress;
    const message = u.output ? `${u.message}\n${u.output}` : u.message;
    const params = { progressToken: token, progress, ...(counted ? { total: u.total } : {}), message };
    send({ method: "notifications/progress", params }).catch(() => undefined);
  };
}

/** How many calls and tasks a server made by `createMcpServer` is running now (0 for another server). */
export function pendingCalls(server: Server): number {
  return pending.get(server)?.() ?? 0;
}

/**
 * A tool's outputSchema as MCP lists it: an image result's `data` goes out as an image block,
 * not in structuredContent, so the schema's image branch (read_file's) leaves it out.
 */
function mcpOutputSchema(schema: JsonSchema): JsonSchema {
  const branches = schema.anyOf as JsonSchema[] | undefined;
  if (!branches?.some((b) => b.properties?.data && b.properties?.mimeType)) return schema;
  return {
    ...schema,
    anyOf: branches.map((b) => {
      if (!(b.properties?.data && b.properties?.mimeType)) return b;
      const { data: _, ...properties } = b.properties;
      return { ...b, properties, required: b.required?.filter((r) => r !== "data") };
    }),
  };
}

/** An MCP tool result from a workcell result: the JSON as text, and as structuredContent when the tool declares an outputSchema. */
function toCallToolResult(result: ToolResult, structured: boolean): CallToolResult {
  // The output itself (its JSON is the text): not parsed back from the text (a 1,000-entry
  // listing is 20 KB of JSON, 40-90 µs to parse on the server's thread).
  const value: unknown = result.isError ? undefined : result.output;
  if (!result.isError) {
    // An image read_file returned: an image block, and its path, size and hash as text (and as
    // structuredContent, without the base64 said once already).
    if (isImageOutput(value)) {
      const { data, mimeType, ...rest } = value;
      const meta = { ...rest, mimeType };
      const image: CallToolResult = {
        content: [
          { type: "image", data, mimeType },
          { type: "text", text: JSON.stringify(meta) },
        ],
        isError: false,
      };
      if (structured) image.structuredContent = meta;
      return image;
    }
  }
  const out: CallToolResult = { content: [{ type: "text", text: result.content }], isError: result.isError };
  if (structured && !result.isError) out.structuredContent = value as Record<string, unknown>;
  return out;
}

/** The options of `createMcpServer` (see ts/options.ts). */
export const MCP_SERVER_OPTIONS = {
  instructions: option.string("instructions for the client"),
  annotations: option.record(
    {
      type: "object",
      spec: {
        title: option.string("a title"),
        readOnlyHint: option.boolean("the tool changes nothing"),
        destructiveHint: option.boolean("the tool may destroy data"),
        idempotentHint: option.boolean("repeating a call changes nothing more"),
        openWorldHint: option.boolean("the tool reaches outside the workspace"),
      } satisfies OptionSpecOf<ToolAnnotations>,
    },
    "annotations by tool name",
  ),
  tasks: option.boolean("let clients run long tools (taskSupport) as MCP tasks"),
  maxRunningTasks: option.integer(1, Number.MAX_SAFE_INTEGER, "the most tasks running at once"),
} as const satisfies OptionSpecOf<McpServerOptions>;

/** The options of `McpStdioTransport` (see ts/options.ts). */
export const MCP_STDIO_OPTIONS = {
  maxLineBytes: option.integer(1, Number.MAX_SAFE_INTEGER, "the longest line read"),
} as const;

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/**
 * A JSON-RPC error for the SDK to answer with: `code` and the bare `message`. The SDK's
 * `McpError` writes "MCP error CODE: " into its own message, the SDK sends that message as is,
 * and the client's `McpError` adds the prefix again ("MCP error -32602: MCP error -32602: ...").
 */
function protocolError(code: number, message: string): Error & { code: number } {
  return Object.assign(new Error(message), { code });
}

/**
 * Creates an MCP server (not yet connected) exposing `tools`:
 * - `tools/list` gives each tool's name, title, description, JSON Schema and annotations;
 * - `tools/list` also gives each tool's `outputSchema` (the tool's own) and, for a tool with
 *   `taskSupport: "optional"`, `execution: { taskSupport: "optional" }`;
 * - `tools/call` validates and runs the tool; the result is one text block with the output's
 *   JSON (and the output as `structuredContent` when the tool declares an `outputSchema`), or,
 *   for a recoverable failure, `isError: true` with the `{"error":{code,message,hint}}` JSON (so
 *   the model can recover). An unknown tool name is the protocol error InvalidParams.
 * - With `task` in the call's params (MCP tasks, for the tools that support them), the answer
 *   is the task at once; `tasks/get`, `tasks/result` and `tasks/list` follow it and
 *   `tasks/cancel` aborts the call's AbortSignal.
 * - A client's `notifications/cancelled` (or the connection closing) aborts the call's
 *   AbortSignal: the tool stops (a process tool kills its process group) and no response is
 *   sent, as MCP specifies.
 * `close()` answers the calls still running with an error, aborts them (and the running tasks)
 * and resolves once they have all settled and the tools are closed (`registry.close()`: the
 * process sessions end); a client disconnecting closes them too.
 */
export function createMcpServer(
  tools: ToolsInput,
  info: Implementation = { name: "workcell", version: packageVersion() },
  options: McpServerOptions = {},
): Server {
  checkOptions("createMcpServer", MCP_SERVER_OPTIONS, options);
  const registry = toRegistry(tools);
  const own = (record: Readonly<Record<string, ToolAnnotations>> | undefined, name: string) =>
    record && Object.prototype.hasOwnProperty.call(record, name) ? record[name] : undefined;
  const tasks = options.tasks ?? true;
  if (typeof tasks !== "boolean") throw new TypeError("workcell: createMcpServer options.tasks must be true or false");
  const maxRunningTasks = options.maxRunningTasks ?? MAX_RUNNING_TASKS;
  if (!Number.isSafeInteger(maxRunningTasks) || maxRunningTasks < 1) {
    throw new TypeError("workcell: createMcpServer options.maxRunningTasks must be a positive integer");
  }
  const taskStore = tasks ? new AbortingTaskStore() : undefined;
  const server = new SdkServer(info, {
    capabilities: {
      tools: {},
      ...(tasks ? { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } } : {}),
    },
    ...(taskStore === undefined ? {} : { taskStore }),
    ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
  });
  const canTask = (t: { taskSupport?: unknown }) => tasks && t.taskSupport === "optional";

  const listed: McpTool[] = registry.list().map((t) => {
    const title = toolTitle(t.name);
    const a = { ...EFFECT_ANNOTATIONS[effectOf(t)], ...own(options.annotations, t.name) };
    return {
      name: t.name,
      title,
      description: t.description,
      inputSchema: t.parameters as McpTool["inputSchema"],
      ...(t.outputSchema === undefined ? {} : { outputSchema: mcpOutputSchema(t.outputSchema) as McpTool["outputSchema"] }),
      annotations: { title, ...a },
      ...(canTask(t) ? { execution: { taskSupport: "optional" as const } } : {}),
    };
  });

  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: listed }));

  const inflight = new Set<Promise<unknown>>();
  /** The request ids of the calls answered on their request (not tasks), to answer them at close. */
  const answering = new Set<McpRequestId>();
  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args } = request.params;
    const tool = registry.get(name);
    if (!tool) {
      throw protocolError(
        McpErrorCode.InvalidParams,
        `no tool is named ${JSON.stringify(name)}; call one of: ${registry.list().map((t) => t.name).join(", ")}`,
      );
    }
    const structured = tool.outputSchema !== undefined;
    if (request.params.task !== undefined) {
      if (!canTask(tool) || taskStore === undefined || extra.taskStore === undefined) {
        throw protocolError(McpErrorCode.InvalidParams, `${name} does not run as a task; call it without "task"`);
      }
      if (taskStore.running.size >= maxRunningTasks) {
        throw protocolError(
          McpErrorCode.InvalidRequest,
          `${maxRunningTasks} tasks are already running, the most this server runs at once; wait for one to finish or cancel one (tasks/cancel)`,
        );
      }
      const requested = extra.taskRequestedTtl;
      const ttl = typeof requested === "number" && requested > 0 ? Math.min(requested, MAX_TASK_TTL_MS) : DEFAULT_TASK_TTL_MS;
      const store = extra.taskStore;
      const task = await store.createTask({ ttl, pollInterval: 500 });
      const controller = new AbortController();
      taskStore.running.set(task.taskId, controller);
      // The request is answered at once: progress goes out unrelated to it (on HTTP, the
      // session's own stream), with the client's token.
      const progress = progressSender(request.params._meta?.progressToken, (n) => server.notification(n));
      const run = runToolCall(registry, name, `task-${task.taskId}`, args ?? {}, controller.signal, progress).then(
        async (result) => {
          // A result that arrives after a cancellation is dropped: the task stays cancelled.
          if (controller.signal.aborted) return;
          await store.storeTaskResult(task.taskId, result.isError ? "failed" : "completed", toCallToolResult(result, structured));
        },
        () => undefined, // an AbortError: the task was cancelled or the server closed
      );
      const tracked = run.catch(() => undefined).finally(() => {
        taskStore.running.delete(task.taskId);
        inflight.delete(tracked);
      });
      inflight.add(tracked);
      return { task } as unknown as CallToolResult;
    }
    // A transport that answers each request with one JSON body (workcell's HTTP server) has no
    // stream for the request: progress goes on the session's own stream, which the client's
    // progress handler reads alike.
    const progress = progressSender(request.params._meta?.progressToken, (n) =>
      progressOnSessionStream.has(server) ? server.notification(n) : extra.sendNotification(n),
    );
    const call = runToolCall(registry, name, String(extra.requestId), args ?? {}, extra.signal, progress);
    inflight.add(call);
    answering.add(extra.requestId);
    try {
      return toCallToolResult(await call, structured);
    } finally {
      inflight.delete(call);
      answering.delete(extra.requestId);
    }
  });

  pending.set(server, () => inflight.size);
  // The tools are closed once, by whichever comes first: close() or the client disconnecting.
  let toolsClosed: Promise<void> | undefined;
  const closeToolsOnce = (): Promise<void> => (toolsClosed ??= registry.close());
  const close = server.close.bind(server);
  server.close = async () => {
    // The calls still running get an error answer before their signals abort (an aborted
    // request is otherwise never answered, and a client would wait for it until its timeout).
    const transport = server.transport;
    for (const id of answering) {
      const error = { code: McpErrorCode.ConnectionClosed, message: "the server closed; the call was cancelled (its processes were stopped)" };
      await transport?.send({ jsonrpc: "2.0", id, error }, { relatedRequestId: id }).catch(() => undefined);
    }
    answering.clear();
    for (const controller of taskStore?.running.values() ?? []) controller.abort(new Error("the server closed"));
    await close(); // aborts every running handler's signal
    await Promise.allSettled([...inflight]);
    taskStore?.inner.cleanup();
    await closeToolsOnce();
  };
  // When the client disconnects, the tools are closed: no process session outlives it.
  const connect = server.connect.bind(server);
  server.connect = async (transport: Transport) => {
    await connect(transport);
    const onclose = transport.onclose;
    transport.onclose = () => {
      onclose?.();
      void Promise.allSettled([...inflight]).then(closeToolsOnce);
    };
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

/**
 * Longest text of an elicitation message. A request whose whole effect does not fit is not
 * asked about: `approve` rejects with `APPROVAL_VIEW_INCOMPLETE` (a part of a change is never
 * presented for a "yes" that would apply all of it).
 */
export const MAX_ELICITATION_MESSAGE = 64 * 1024;

/**
 * Characters a client could render invisibly or use to disguise text (controls other than
 * line feed and tab, line and paragraph separators, bidirectional overrides): shown escaped.
 */
const HIDDEN = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\ufeff]/g;

function visible(text: string): string {
  return text.replace(HIDDEN, (c) => `\\u{${c.codePointAt(0)!.toString(16)}}`);
}

/**
 * The elicitation message of a request: everything the call would do, whole (the command, the
 * whole script, every line of a process's input, every file's header and whole diff), or
 * `undefined` when that does not fit the message.
 */
function approvalMessage(request: ApprovalRequest): string | undefined {
  const parts = [`workcell asks: ${visible(request.summary)}`];
  if (request.grants) parts.push(`Grants asked for this call: ${JSON.stringify(request.grants)}`);
  if (request.argv && request.argv.length > 0) parts.push(`Command: ${JSON.stringify(request.argv)}${request.cwd ? ` in ${JSON.stringify(request.cwd)}` : ""}`);
  if (request.source !== undefined) {
    const lines = request.source.split("\n").length;
    parts.push(`Script, all ${lines} line${lines === 1 ? "" : "s"}:\n${visible(request.source)}`);
  }
  if (request.stdin !== undefined) {
    // Each line on its own, quoted: a line break, a carriage return or padding cannot hide a line.
    const lines = request.stdin === "" ? [] : request.stdin.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    const shown = lines.map((l, i) => `${String(i + 1).padStart(4)} ${JSON.stringify(l)}`).join("\n");
    parts.push(`Input sent to the process, all ${lines.length} line${lines.length === 1 ? "" : "s"} (each quoted):\n${shown}`);
  }
  if (request.diffs && request.diffs.length > 0) {
    const list = request.diffs.map((d) => `  ${visible(d.path)}: +${d.added} -${d.removed}`).join("\n");
    parts.push(`Files changed (${request.diffs.length}), each diff below whole:\n${list}`);
    for (const d of request.diffs) parts.push(visible(d.diff));
  } else if (request.diff) {
    parts.push(visible(request.diff));
  }
  const text = parts.join("\n\n");
  return text.length <= MAX_ELICITATION_MESSAGE ? text : undefined;
}

function viewIncomplete(request: ApprovalRequest): ToolError {
  const size = [request.source, request.stdin, request.diff].reduce((n, s) => n + (s?.length ?? 0), 0);
  const files = request.diffs?.map((d) => ({ path: d.path, added: d.added, removed: d.removed, characters: d.diff.length }));
  return new ToolError(
    ErrorCode.APPROVAL_VIEW_INCOMPLETE,
    `the user was not asked and nothing ran: the MCP client's approval message shows at most ${MAX_ELICITATION_MESSAGE} characters, too few for the whole of this call (${size} characters of script, input or diff)`,
    {
      hint: "make the change in smaller calls that each fit (fewer files per patch, a long file written in parts, a shorter script), so the user sees all of what they approve",
      details: { limit: MAX_ELICITATION_MESSAGE, characters: size, ...(files ? { files } : {}) },
    },
  );
}

/**
 * An `approve` for the tools an MCP server serves: it asks the client's user through MCP
 * elicitation (`elicitation/create`, a yes/no form with an optional reason) when the client
 * declared the `elicitation` capability, with the whole call in the message (the command, the
 * whole script or input, every file's header and whole diff); a call that does not fit the
 * message is refused with `APPROVAL_VIEW_INCOMPLETE` without asking; otherwise it
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
    // Only a request shown whole is asked about; one that does not fit is refused, never cut.
    const message = approvalMessage(request);
    if (message === undefined) throw viewIncomplete(request);
    const result = await server.elicitInput(
      {
        message,
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
    checkOptions("McpStdioTransport", MCP_STDIO_OPTIONS, options);
    const max = options.maxLineBytes ?? MAX_MCP_LINE_BYTES;
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
