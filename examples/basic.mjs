// Register workcell's tools, show their definitions to a model, and execute the calls a model
// would send, including refused ones. Run: node examples/basic.mjs
import { mkdtemp, mkdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ToolRegistry, createCodingTools, executeToolCall } from "workcell";

const workspace = await mkdtemp(join(tmpdir(), "workcell-example-"));
try {
  await mkdir(join(workspace, "src"));
  await writeFile(join(workspace, "src", "greet.ts"), 'export const greet = (name: string) => `hello ${name}`;\n');

  const registry = new ToolRegistry(createCodingTools(workspace));
  console.log("tools for the model:", registry.definitions().map((d) => d.name).join(", "));

  const calls = [
    { name: "read_file", arguments: { path: "src/greet.ts" } },
    { name: "read_file", arguments: { path: "../../etc/passwd" } },
    { name: "read_file", arguments: { path: "/etc/passwd" } },
    { name: "read_file", arguments: { path: "src/missing.ts" } },
    { name: "delete_everything", arguments: {} },
  ];
  const signal = new AbortController().signal;
  for (const [i, c] of calls.entries()) {
    const result = await executeToolCall(registry, { type: "toolCall", id: `call-${i}`, ...c }, signal);
    console.log(`\n> ${c.name} ${JSON.stringify(c.arguments)}`);
    console.log(`${result.isError ? "error" : "ok"}: ${result.content}`);
  }
} finally {
  await rm(workspace, { recursive: true, force: true });
}
