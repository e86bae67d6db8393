// `workcell/mcp`, the package's MCP entry: the server of mcp.ts (any transport, stdio through
// `McpStdioTransport`) and the Streamable HTTP server of mcp-http.ts, which builds on it. The
// two modules import one way (mcp-http.ts uses mcp.ts); this file is the only one naming both.
export * from "./mcp.js";
export * from "./mcp-http.js";
