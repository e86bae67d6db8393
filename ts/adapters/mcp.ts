// `workcell/mcp`: serve workcell's tools to any MCP client (desktop agents, IDEs, the MCP SDK's
// own Client) with the low-level `Server` of `@modelcontextprotocol/sdk` (an optional peer
// dependency; the main entry never loads it). Connect it to a transport yourself, or use the
// `workcell mcp` command, which serves `createCodingTools(root)` over stdio.
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CallToolRequestSchema,
  ErrorCode as McpErrorCode,
  ListToolsRequestSchema,
  McpError,
  type CallToolResult,
  type Implementation,
  type Tool as McpTool,
  type ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import { runToolCall, toRegistry, toolTitle, type ToolsInput } from "./common.js";

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
