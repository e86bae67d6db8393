// Remote MCP: workcell's tools over MCP's Streamable HTTP transport (the SDK's
// StreamableHTTPServerTransport), for clients on other machines. Every request is checked before
// the SDK sees it: the Host (a loopback bind), the Origin (DNS rebinding), the bearer token
// (compared in constant time), the method and the body size. Every MCP session gets its own
// tool set (its own process table) and its own MCP server; the session's tools are closed when
// the client ends it (DELETE), when it idles out, and when the server shuts down.
import { createHash, randomUUID, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from "node:http";
import { isIP, type Socket } from "node:net";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { StreamableHTTPServerTransport as HttpTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import type { Transport, TransportSendOptions } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { Implementation, JSONRPCMessage, MessageExtraInfo, ToolAnnotations } from "@modelcontextprotocol/sdk/types.js";
import { createCodingTools, type CodingToolsOptions } from "../coding.js";
import { OPTION_SPECS, checkOptions, option } from "../options.js";
import type { AnyTool } from "../tool.js";
import { MCP_SERVER_OPTIONS, createMcpServer, pendingCalls, progressOnSessionStream } from "./mcp.js";
import { requirePeer } from "./peer.js";

const { StreamableHTTPServerTransport } = requirePeer<typeof import("@modelcontextprotocol/sdk/server/streamableHttp.js")>(
  "@modelcontextprotocol/sdk/server/streamableHttp.js",
  "workcell/mcp",
  "@modelcontextprotocol/sdk",
);
const { isInitializeRequest, JSONRPCMessageSchema, SUPPORTED_PROTOCOL_VERSIONS } = requirePeer<typeof import("@modelcontextprotocol/sdk/types.js")>(
  "@modelcontextprotocol/sdk/types.js",
  "workcell/mcp",
  "@modelcontextprotocol/sdk",
);

/** The options of `createMcpHttpServer` (see ts/options.ts). */
export const MCP_HTTP_OPTIONS = {
  instructions: MCP_SERVER_OPTIONS.instructions,
  annotations: MCP_SERVER_OPTIONS.annotations,
  token: option.string("the bearer token clients must send", true),
  host: option.string("the address to bind", true),
  port: option.integer(0, 65535, "the port to bind (0: any free port)"),
  public: option.boolean("allow a non-loopback bind"),
  allowOrigins: option.strings("the Origin values allowed"),
  idleTimeoutMs: option.integer(1, Number.MAX_SAFE_INTEGER, "how long an idle session is kept"),
  maxSessions: option.integer(1, Number.MAX_SAFE_INTEGER, "the most sessions open at once"),
  maxBodyBytes: option.integer(1, Number.MAX_SAFE_INTEGER, "the largest request body"),
  tools: { kind: { type: "object", spec: OPTION_SPECS.createCodingTools! }, doc: "the options of each session's createCodingTools" },
  createTools: option.function("makes each session's tools"),
  info: option.object(
    {
      name: option.string("the server's name"),
      version: option.string("its version"),
      title: option.string("a title for people"),
      websiteUrl: option.string("a web page"),
    },
    "the server's name and version",
  ),
  onLog: option.function("called with a line per session opened or closed"),
} as const;

/** Default of `idleTimeoutMs`: a session with no request and no running call for 15 minutes is closed. */
export const DEFAULT_IDLE_TIMEOUT_MS = 900_000;
/** Default of `maxSessions`. */
export const DEFAULT_MAX_SESSIONS = 32;
/** Default of `maxBodyBytes` (4 MiB: the largest tool arguments with JSON escaping, and more). */
export const DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024;
/** The shortest bearer token accepted. */
export const MIN_TOKEN_LENGTH = 16;
/** The path MCP is served on. */
export const MCP_PATH = "/mcp";
/**
 * A connection that has not yet sent a request carrying the token is closed after this long
 * (5 s from its accept), whatever it sends meanwhile.
 */
export const PRE_AUTH_TIMEOUT_MS = 5_000;
/**
 * At most this many connections from one address wait unauthenticated longer than
 * `PRE_AUTH_GRACE_MS`; a new one from there closes the one waiting longest.
 */
export const MAX_PRE_AUTH_PER_PEER = 16;
/** How long a connection may wait for its first authenticated request before the bounds above count it as slow. */
export const PRE_AUTH_GRACE_MS = 1_000;

/** Options of `createMcpHttpServer`. */
export interface McpHttpServerOptions {
  /** The bearer token every request must carry (`Authorization: Bearer TOKEN`); at least 16 characters. */
  token: string;
  /** The address to bind (default `127.0.0.1`). A non-loopback address needs `public: true`. */
  host?: string;
  /** The TCP port (default 0: any free port; `listen()` says which). */
  port?: number;
  /** Allow binding a non-loopback address (default false). */
  public?: boolean;
  /**
   * The `Origin` values a request may carry (exact, such as `https://app.example.com`). A
   * request with any other Origin is refused (403); a request without one (a non-browser
   * client) is let through to the token check.
   */
  allowOrigins?: readonly string[];
  /** A session with no request and no running call for this long is closed (default 900,000 ms). */
  idleTimeoutMs?: number;
  /** At most this many sessions at once (default 32); a new one beyond is refused with 503. */
  maxSessions?: number;
  /** The largest request body read (default 4 MiB); a larger one is answered 413 unread. */
  maxBodyBytes?: number;
  /** Options of the `createCodingTools` each session gets (ignored with `createTools`). */
  tools?: CodingToolsOptions;
  /** Makes one session's tools (default: `createCodingTools(root, options.tools)`). */
  createTools?: (root: string) => readonly AnyTool[];
  /** The server's name and version for MCP's initialize. */
  info?: Implementation;
  /** Instructions the server gives each client at initialization. */
  instructions?: string;
  /** Annotations by tool name (see `createMcpServer`). */
  annotations?: Record<string, ToolAnnotations>;
  /** Called with one line for each session opened or closed (for a log). */
  onLog?: (line: string) => void;
}

/** A server made by `createMcpHttpServer`. */
export interface McpHttpServer {
  /** Starts listening; resolves with the address and the URL to give clients. */
  listen(): Promise<{ host: string; port: number; url: string }>;
  /**
   * Graceful shutdown: stops accepting connections, aborts every running call (the tools'
   * AbortSignals: a process tool kills its process tree), closes every session's tools and
   * resolves when all of it is done and every connection is closed.
   */
  close(): Promise<void>;
  /** How many MCP sessions are open. */
  readonly sessionCount: number;
  /** The Node.js HTTP server. */
  readonly httpServer: HttpServer;
}

interface Session {
  id: string;
  transport: SessionTransport;
  server: Server;
  tools: readonly AnyTool[];
  lastSeen: number;
  /** POST requests of this session being answered now. */
  active: number;
  closed?: Promise<void>;
}


/**
 * A session's transport: the SDK's StreamableHTTPServerTransport, with the common request (a
 * POST of one JSON-RPC request in an open session, such as a tools/call) answered straight on
 * Node's response. The SDK's transport turns every request into a Web `Request` and its answer
 * into a Web `Response` (headers, streams, a body copy each way), which cost the server more than
 * the tool call itself; here the request is checked as the SDK checks it (the Accept and
 * Content-Type headers, the protocol version, the message's schema) and its answer is one JSON
 * body written on the response. Anything else (initialize, notifications, answers to the server's
 * own requests, batches, the GET stream, DELETE, and every request those checks would refuse) goes
 * to the SDK's transport, which answers it as before.
 */
class SessionTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage, extra?: MessageExtraInfo) => void;
  /** Requests answered here, by JSON-RPC id, waiting for the server's answer. */
  private readonly waiting = new Map<string | number, ServerResponse>();
  private closed = false;

  constructor(readonly sdk: HttpTransport) {
    sdk.onmessage = (message, extra) => this.onmessage?.(message, extra);
    sdk.onclose = () => {
      this.answerWaiting();
      this.onclose?.();
    };
    sdk.onerror = (error) => this.onerror?.(error);
  }

  /**
   * Answers every request still waiting with an error: the session is closing (a DELETE, an
   * idle timeout, the server's shutdown), and its calls are being cancelled. The MCP server has
   * already let go of this transport when the SDK's closes it (a DELETE), so it cannot answer them.
   */
  private answerWaiting(): void {
    this.closed = true;
    for (const [id, res] of this.waiting) {
      sendJson(res, 200, "the session was closed; the call was cancelled (its processes were stopped)", {}, id);
    }
    this.waiting.clear();
  }

  get sessionId(): string | undefined {
    return this.sdk.sessionId;
  }

  start(): Promise<void> {
    return this.sdk.start();
  }

  /**
   * Answers `body` (a parsed POST body) here when it is one JSON-RPC request the SDK would
   * accept; returns false, having done nothing, for anything else.
   */
  tryRequest(req: IncomingMessage, res: ServerResponse, body: unknown): boolean {
    if (this.closed || typeof body !== "object" || body === null || Array.isArray(body)) return false;
    const { id, method } = body as { id?: unknown; method?: unknown };
    if ((typeof id !== "string" && typeof id !== "number") || typeof method !== "string" || method === "initialize") return false;
    if (this.waiting.has(id)) return false;
    const accept = req.headers.accept;
    if (typeof accept !== "string" || !accept.includes("application/json") || !accept.includes("text/event-stream")) return false;
    if (req.headers["content-type"]?.trim().toLowerCase() !== "application/json") return false;
    const version = req.headers["mcp-protocol-version"];
    if (version !== undefined && (typeof version !== "string" || !SUPPORTED_PROTOCOL_VERSIONS.includes(version))) return false;
    const parsed = JSONRPCMessageSchema.safeParse(body);
    if (!parsed.success) return false;
    this.waiting.set(id, res);
    res.once("close", () => {
      if (this.waiting.get(id) === res) this.waiting.delete(id);
    });
    this.onmessage?.(parsed.data, { requestInfo: { headers: req.headers } });
    return true;
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const id = "method" in message ? undefined : (message as { id?: string | number }).id;
    const res = id === undefined ? undefined : this.waiting.get(id);
    if (res === undefined) return this.sdk.send(message, options);
    this.waiting.delete(id!);
    const text = JSON.stringify(message);
    const headers: Record<string, string | number> = { "content-type": "application/json", "content-length": Buffer.byteLength(text) };
    if (this.sdk.sessionId !== undefined) headers["mcp-session-id"] = this.sdk.sessionId;
    if (!res.headersSent && !res.writableEnded) {
      res.writeHead(200, headers);
      res.end(text);
    }
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.answerWaiting();
    await this.sdk.close();
  }
}

/** Whether `host` names this machine's loopback interface only. */
export function isLoopbackHost(host: string): boolean {
  const h = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  if (h.toLowerCase() === "localhost") return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  if (isIP(h) === 6) return h === "::1" || /^(0{0,4}:){7}0{0,3}1$/.test(h) || h.toLowerCase() === "::ffff:127.0.0.1";
  return false;
}

/** The hostname part of a Host header (`[::1]:8080` -> `[::1]`, `localhost:80` -> `localhost`). */
function hostOf(header: string): string {
  if (header.startsWith("[")) {
    const end = header.indexOf("]");
    return end === -1 ? header : header.slice(0, end + 1);
  }
  const colon = header.lastIndexOf(":");
  return colon === -1 ? header : header.slice(0, colon);
}

/**
 * Bounds the connections that have not yet sent a request with the token, so that clients
 * without it cannot fill the server's connection cap and lock out the one that has it. A
 * connection counts as unauthenticated from its accept until a request on it carries the
 * token (a client's request arrives within milliseconds; only a slow or partial one waits).
 * - Each is closed `PRE_AUTH_TIMEOUT_MS` after its accept.
 * - The cap (`cap` connections in all) is kept here, not by Node's `maxConnections` (which
 *   drops a new connection unseen): a new connection beyond it closes the unauthenticated
 *   connection waiting longest, and is closed itself only when every other one is
 *   authenticated. So a new connection is always let in unless token holders fill the cap.
 * - Unauthenticated connections waiting longer than `PRE_AUTH_GRACE_MS` are at most
 *   `MAX_PRE_AUTH_PER_PEER` per remote address and `max` (a quarter of the cap) in all: a new
 *   connection beyond either closes the longest waiting one (of its address, or of the address
 *   holding the most). Younger ones are never closed for this, so a client's burst of many
 *   connections at once is served.
 */
function preAuthBound(server: HttpServer, cap: number, max: number): { authenticated(socket: Socket): void } {
  const waiting = new Map<string, Socket[]>();
  const since = new Map<Socket, { at: number; timer: NodeJS.Timeout }>();
  let open = 0;
  const forget = (socket: Socket): boolean => {
    const w = since.get(socket);
    if (w === undefined) return false;
    clearTimeout(w.timer);
    since.delete(socket);
    const peer = socket.remoteAddress ?? "";
    const list = waiting.get(peer)!;
    list.splice(list.indexOf(socket), 1);
    if (list.length === 0) waiting.delete(peer);
    return true;
  };
  const evict = (socket: Socket | undefined, olderThan = Infinity): boolean => {
    if (socket === undefined || !(Date.now() - since.get(socket)!.at >= olderThan)) return false;
    forget(socket);
    socket.destroy();
    return true;
  };
  const longest = (): Socket | undefined => {
    let first: Socket | undefined;
    for (const list of waiting.values()) if (first === undefined || since.get(list[0]!)!.at < since.get(first)!.at) first = list[0];
    return first;
  };
  server.on("connection", (socket: Socket) => {
    open += 1;
    socket.once("close", () => {
      open -= 1;
      forget(socket);
    });
    if (open > cap && !evict(longest(), 0)) {
      socket.destroy();
      return;
    }
    const peer = socket.remoteAddress ?? "";
    const mine = waiting.get(peer);
    if ((mine?.length ?? 0) >= MAX_PRE_AUTH_PER_PEER) evict(mine![0], PRE_AUTH_GRACE_MS);
    else if (since.size >= max) {
      let most: Socket[] = [];
      for (const list of waiting.values()) if (list.length > most.length) most = list;
      evict(most[0], PRE_AUTH_GRACE_MS);
    }
    const list = waiting.get(peer) ?? [];
    waiting.set(peer, list);
    list.push(socket);
    const timer = setTimeout(() => evict(socket, 0), PRE_AUTH_TIMEOUT_MS);
    timer.unref();
    since.set(socket, { at: Date.now(), timer });
  });
  return { authenticated: (socket) => void forget(socket) };
}

function positive(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 1) {
    throw new TypeError(`workcell: createMcpHttpServer options.${name} must be a positive integer (got ${String(value)})`);
  }
  return value;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text, "utf8").digest();
}

function sendJson(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}, id: string | number | null = null): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const body = JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message }, id });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(body), ...headers });
  res.end(body);
}

/** Reads a request body of at most `max` bytes; resolves undefined (and answers 413) past it. */
function readBody(req: IncomingMessage, res: ServerResponse, max: number): Promise<Buffer | undefined> {
  const declared = req.headers["content-length"];
  if (declared !== undefined && Number(declared) > max) {
    sendJson(res, 413, `Payload Too Large: the request body is over ${max} bytes, the most this server reads; send smaller arguments`, {
      connection: "close",
    });
    req.resume();
    return Promise.resolve(undefined);
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on("data", (chunk: Buffer) => {
      if (over) return;
      size += chunk.length;
      if (size > max) {
        over = true;
        chunks.length = 0;
        sendJson(res, 413, `Payload Too Large: the request body is over ${max} bytes, the most this server reads; send smaller arguments`, {
          connection: "close",
        });
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => {
      if (!over) resolve(Buffer.concat(chunks, size));
    });
    req.on("error", reject);
  });
}

/**
 * Creates (without starting) an MCP server over Streamable HTTP for the workspace `root`,
 * served on `/mcp`. Every request must carry `Authorization: Bearer TOKEN` (401 otherwise); an
 * `Origin` not in `allowOrigins` is refused (403), as is a `Host` other than a loopback name
 * while bound to loopback; a body over `maxBodyBytes` is 413; a new session beyond
 * `maxSessions` is 503. Each session gets its own tools (`createCodingTools(root, tools)`), and
 * they are closed when the session ends, idles out or the server closes.
 * Throws a `TypeError` for a misconfiguration: a short token, a non-loopback host without
 * `public: true`, an unknown option, a workspace that cannot be opened.
 */
export function createMcpHttpServer(root: string, options: McpHttpServerOptions): McpHttpServer {
  if (options === undefined) throw new TypeError("workcell: createMcpHttpServer needs options with a token");
  checkOptions("createMcpHttpServer", MCP_HTTP_OPTIONS, options);
  const { token } = options;
  if (typeof token !== "string" || token.length < MIN_TOKEN_LENGTH) {
    throw new TypeError(`workcell: createMcpHttpServer options.token must be a string of at least ${MIN_TOKEN_LENGTH} characters`);
  }
  const host = options.host ?? "127.0.0.1";
  if (typeof host !== "string" || host === "") throw new TypeError("workcell: createMcpHttpServer options.host must be a non-empty string");
  const isPublic = options.public ?? false;
  if (typeof isPublic !== "boolean") throw new TypeError("workcell: createMcpHttpServer options.public must be true or false");
  const loopback = isLoopbackHost(host);
  if (!loopback && !isPublic) {
    throw new TypeError(
      `workcell: ${host} is not a loopback address; binding it serves the workspace to the network: pass public: true (--public) to mean it`,
    );
  }
  const port = options.port ?? 0;
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535) throw new TypeError("workcell: createMcpHttpServer options.port must be 0-65535");
  const allowOrigins = options.allowOrigins ?? [];
  if (!Array.isArray(allowOrigins) || allowOrigins.some((o) => typeof o !== "string" || o === "")) {
    throw new TypeError("workcell: createMcpHttpServer options.allowOrigins must be an array of origins such as https://app.example.com");
  }
  const origins = new Set(allowOrigins);
  const idleTimeoutMs = positive("idleTimeoutMs", options.idleTimeoutMs, DEFAULT_IDLE_TIMEOUT_MS);
  const maxSessions = positive("maxSessions", options.maxSessions, DEFAULT_MAX_SESSIONS);
  const maxBodyBytes = positive("maxBodyBytes", options.maxBodyBytes, DEFAULT_MAX_BODY_BYTES);
  if (options.createTools !== undefined && typeof options.createTools !== "function") {
    throw new TypeError("workcell: createMcpHttpServer options.createTools must be a function");
  }
  const makeTools = options.createTools ?? ((r: string) => createCodingTools(r, options.tools));
  const first = makeTools(root);
  if (!Array.isArray(first)) throw new TypeError("workcell: createMcpHttpServer options.createTools must return an array of tools");
  const log = options.onLog ?? (() => undefined);
  // Open the workspace once now, so a bad root or bad tool options fail here, not per session.
  void closeTools(first);

  const expected = digest(token);
  const sessions = new Map<string, Session>();
  let starting = 0;
  let stopping: Promise<void> | undefined;

  async function closeTools(tools: readonly AnyTool[]): Promise<void> {
    await Promise.allSettled(tools.map(async (t) => (t as { close?: () => unknown }).close?.()));
  }

  function closeSession(s: Session, why: string): Promise<void> {
    if (s.closed) return s.closed;
    sessions.delete(s.id);
    s.closed = (async () => {
      s.server.onclose = undefined;
      // Aborts its calls, waits for them and closes the session's tools (createMcpServer does).
      await s.server.close().catch(() => undefined);
      log(`session ${s.id} closed (${why}); ${sessions.size} open`);
    })();
    return s.closed;
  }

  /**
   * The Authorization header each connection last proved the token with. A later request on the
   * same connection carrying the same header is let through without a new digest: only a peer
   * that already sent the token can match it there, so comparing it as a plain string tells
   * nobody anything. Another connection's requests never meet it.
   */
  const proven = new WeakMap<Socket, string>();

  function authorized(req: IncomingMessage): boolean {
    const header = req.headers.authorization;
    if (typeof header === "string" && proven.get(req.socket) === header) return true;
    const m = typeof header === "string" ? /^Bearer[ ]+(\S+)\s*$/i.exec(header) : null;
    // Digests of equal length, compared in constant time whatever the token sent.
    const ok = timingSafeEqual(digest(m ? m[1]! : ""), expected) && m !== null;
    if (ok) proven.set(req.socket, header!);
    return ok;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = req.url ?? "/";
    const path = url.split("?")[0];
    if (stopping) return sendJson(res, 503, "Service Unavailable: the server is shutting down", { connection: "close" });
    if (loopback && !isPublic) {
      const h = req.headers.host;
      if (typeof h !== "string" || !isLoopbackHost(hostOf(h))) {
        return sendJson(res, 403, "Forbidden: this server answers only requests addressed to a loopback name (Host header)");
      }
    }
    const origin = req.headers.origin;
    if (origin !== undefined && !origins.has(origin)) {
      return sendJson(res, 403, `Forbidden: Origin ${JSON.stringify(origin)} is not allowed (the server's --allow-origin list)`);
    }
    if (authorized(req)) preAuth.authenticated(req.socket);
    else {
      req.resume();
      return sendJson(res, 401, "Unauthorized: send the server's token as Authorization: Bearer TOKEN", {
        "www-authenticate": 'Bearer realm="workcell"',
      });
    }
    if (path !== MCP_PATH) return sendJson(res, 404, `Not Found: MCP is served on ${MCP_PATH}`);
    if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
      return sendJson(res, 405, "Method Not Allowed: use POST, GET or DELETE", { allow: "POST, GET, DELETE" });
    }

    let body: unknown;
    if (req.method === "POST") {
      const raw = await readBody(req, res, maxBodyBytes);
      if (raw === undefined) return;
      try {
        body = JSON.parse(raw.toString("utf8"));
      } catch {
        const text = JSON.stringify({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: the body is not JSON" }, id: null });
        res.writeHead(400, { "content-type": "application/json" });
        res.end(text);
        return;
      }
    }

    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const s = sessions.get(sid);
      if (!s) return sendJson(res, 404, "Not Found: no such session (it ended or idled out); initialize a new one");
      s.lastSeen = Date.now();
      // A POST (a request, a notification, a poll) keeps the session busy until it is answered;
      // the GET stream a client keeps open for server messages does not.
      if (req.method === "POST") {
        s.active += 1;
        res.once("close", () => {
          s.active -= 1;
          s.lastSeen = Date.now();
        });
      }
      if (req.method === "POST" && s.transport.tryRequest(req, res, body)) return;
      await s.transport.sdk.handleRequest(req, res, body);
      return;
    }
    if (req.method !== "POST" || !(isInitializeRequest(body) || (Array.isArray(body) && body.some((m) => isInitializeRequest(m))))) {
      return sendJson(res, 400, "Bad Request: send the Mcp-Session-Id header, or an initialize request to start a session");
    }
    if (sessions.size + starting >= maxSessions) {
      return sendJson(res, 503, `Service Unavailable: ${maxSessions} sessions are open, the most this server keeps; close one (DELETE) or retry later`, {
        "retry-after": "10",
      });
    }
    starting += 1;
    let tools: readonly AnyTool[];
    try {
      tools = makeTools(root);
    } catch (err) {
      starting -= 1;
      return sendJson(res, 500, `Internal Server Error: cannot open the workspace: ${err instanceof Error ? err.message : String(err)}`);
    }
    const server = createMcpServer(tools, options.info, {
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
      ...(options.annotations === undefined ? {} : { annotations: options.annotations }),
    });
    progressOnSessionStream.add(server);
    let session: Session | undefined;
    const sdkTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      maxRequestBodySize: maxBodyBytes,
      // Each POST is answered with one JSON body rather than an SSE stream (as SessionTransport
      // answers the common ones): JSON costs less CPU per call on both ends (docs/benchmarks.md).
      // Server messages, progress notifications included, go on the GET stream.
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        session = { id, transport, server, tools, lastSeen: Date.now(), active: 1, closed: undefined };
        sessions.set(id, session);
        log(`session ${id} opened; ${sessions.size} open`);
      },
    });
    const transport = new SessionTransport(sdkTransport);
    server.onclose = () => {
      if (session) void closeSession(session, "ended by the client");
    };
    try {
      await server.connect(transport);
      res.once("close", () => {
        if (session) {
          session.active -= 1;
          session.lastSeen = Date.now();
        }
      });
      await sdkTransport.handleRequest(req, res, body);
    } finally {
      starting -= 1;
      if (!session) {
        server.onclose = undefined;
        await server.close().catch(() => undefined); // closes the tools too
      } else if (stopping) {
        await closeSession(session, "the server is shutting down");
      }
    }
  }

  // A request must arrive whole within 2 minutes (headers within 30 s); answers may take longer.
  const httpServer = createServer({ requestTimeout: 120_000, headersTimeout: 30_000 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      sendJson(res, 500, `Internal Server Error: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  // At most max(256, 32 per session) connections, kept by preAuthBound (see there).
  const cap = Math.max(256, maxSessions * 32);
  const preAuth = preAuthBound(httpServer, cap, Math.floor(cap / 4));

  // Idle sessions: no request being answered, no call or task running, nothing seen for idleTimeoutMs.
  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const s of sessions.values()) {
        if (s.active === 0 && pendingCalls(s.server) === 0 && now - s.lastSeen >= idleTimeoutMs) {
          void closeSession(s, `idle for ${idleTimeoutMs} ms`);
        }
      }
    },
    Math.max(10, Math.min(30_000, Math.floor(idleTimeoutMs / 4))),
  );
  sweep.unref();

  return {
    httpServer,
    get sessionCount() {
      return sessions.size;
    },
    listen() {
      return new Promise((resolve, reject) => {
        httpServer.once("error", reject);
        httpServer.listen(port, host, () => {
          httpServer.off("error", reject);
          const addr = httpServer.address();
          const bound = typeof addr === "object" && addr !== null ? addr : { address: host, port };
          const shown = bound.address.includes(":") ? `[${bound.address}]` : bound.address;
          resolve({ host: bound.address, port: bound.port, url: `http://${shown}:${bound.port}${MCP_PATH}` });
        });
      });
    },
    close() {
      if (stopping) return stopping;
      stopping = (async () => {
        clearInterval(sweep);
        const closedHttp = new Promise<void>((done) => httpServer.close(() => done()));
        await Promise.allSettled([...sessions.values()].map((s) => closeSession(s, "the server is shutting down")));
        httpServer.closeAllConnections();
        if (httpServer.listening) await closedHttp;
      })();
      return stopping;
    },
  };
}
