// workcell's tools over MCP on stdio. `node examples/mcp-server.mjs --serve /path/to/project` only
// serves (point an MCP client at that command; without a path it serves a fresh temporary workspace).
// With no arguments it starts itself that way as a child through the MCP SDK's Client, lists the tools and calls some.
import { mkdir, mkdtemp, realpath, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createCodingTools } from "workcell";
import { createMcpServer } from "workcell/mcp";

if (process.argv[2] === "--serve") await serve(process.argv[3]);
else await client();

/** The server: stdout carries only MCP messages, so logs go to stderr. */
async function serve(root) {
  const temporary = root === undefined ? await realpath(await mkdtemp(join(tmpdir(), "workcell-example-"))) : undefined;
  const workspace = root ?? temporary;
  const server = createMcpServer(createCodingTools(workspace), { name: "workcell-example", version: "1.0.0" });
  // Serve until the client goes away (stdin ends) or a signal arrives; then close the server,
  // which aborts the calls still running and waits for them.
  const stopped = new Promise((done) => {
    process.stdin.once("end", done);
    process.stdin.once("close", done);
    process.once("SIGINT", done);
    process.once("SIGTERM", done);
    server.onclose = done;
  });
  await server.connect(new StdioServerTransport());
  console.error(`[server] serving workcell's tools for ${workspace} over stdio`);
  await stopped;
  server.onclose = undefined;
  await server.close();
  if (temporary) await rm(temporary, { recursive: true, force: true });
  console.error("[server] stopped");
}

/** The client: what an MCP host (a desktop agent, an IDE) does with the server. */
async function client() {
  const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-example-")));
  const workspace = join(parent, "workspace");
  const client = new Client({ name: "workcell-example-client", version: "1.0.0" });
  try {
    await writeFile(join(parent, "secret.txt"), "TOP-SECRET-VALUE\n"); // outside the workspace
    await mkdir(workspace);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [fileURLToPath(import.meta.url), "--serve", workspace],
    });
    await client.connect(transport);

    const { tools } = await client.listTools();
    console.log("tools/list:");
    for (const t of tools) console.log(`  ${t.name}${t.annotations?.readOnlyHint ? " (read-only)" : ""}: ${t.title}`);

    const calls = [
      { name: "write_file", arguments: { path: "notes/hello.txt", content: "hello over MCP\n" } },
      { name: "read_file", arguments: { path: "notes/hello.txt" } },
      { name: "read_file", arguments: { path: "../secret.txt" } },
    ];
    for (const call of calls) {
      const result = await client.callTool(call);
      console.log(`\ntools/call ${call.name} ${JSON.stringify(call.arguments)}`);
      console.log(`${result.isError ? "isError" : "ok"}: ${result.content[0].text}`);
    }
  } finally {
    await client.close(); // ends the child's stdin: the server stops
    await rm(parent, { recursive: true, force: true });
  }
}
