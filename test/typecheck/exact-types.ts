// The exact public types, as a user's strict project sees them (contract §17): compiled by
// test/typecheck.test.ts inside a fresh project that links the built package, under module
// NodeNext and under Bundler. Not run, only compiled. Every `@ts-expect-error` below is also
// compiled against a copy of the package's declarations with the types loosened (what they were
// before: plain strings, `AnyTool[]`, `unknown`), where each one must be reported unused.
import { generateText, type InferToolInput, type InferToolOutput, type LanguageModel, type ToolSet } from "ai";
import {
  ErrorCode,
  toAnthropicTools,
  toOpenAITools,
  ToolError,
  ToolRegistry,
  closeTools,
  createCodingTools,
  createProcessTools,
  createReadTool,
  executeToolCall,
  type AnyTool,
  type CodingTool,
  type ListProcessesOutput,
  type NodeProcessInput,
  type ReadFileInput,
  type ReadFileOutput,
  type RunCommandOutput,
  type Tool,
  type ToolResult,
  type WriteFileInput,
  type WriteFileOutput,
} from "workcell";
import { toAISDKTools } from "workcell/ai";
import { toPiTools } from "workcell/pi";

declare const signal: AbortSignal;
const tools = createCodingTools("/workspace");

// A tool by name, with its types.
const read: Tool<"read_file", ReadFileInput, ReadFileOutput> = tools.read_file;
export const readName: "read_file" = tools.read_file.name;
export async function readOne(): Promise<string> {
  const out: ReadFileOutput = await tools.read_file.execute({ path: "a.txt" }, { signal });
  return out.hash;
}
export const writeInput: WriteFileInput = tools.write_file.validate({ path: "a.txt", content: "x" });
export async function written(): Promise<number> {
  const out: WriteFileOutput = await tools.write_file.execute({ path: "a.txt", content: "x" }, { signal });
  return out.bytes;
}
export const nodeTimeout: NodeProcessInput = { source: "1", timeoutMs: 5000 };
// @ts-expect-error a misspelt tool name
export const misspelt = tools.raed_file;
// @ts-expect-error a wrong input field type (path is a string)
export const wrongField = tools.read_file.execute({ path: 42 }, { signal });
export async function notAField(): Promise<unknown> {
  const out = await tools.read_file.execute({ path: "a.txt" }, { signal });
  // @ts-expect-error a field read_file's output does not have
  return out.exitCode;
}

// The set still iterates as tools and goes wherever tools go.
for (const t of tools) {
  const any: AnyTool = t;
  void any;
}
export const names: string[] = tools.map((t) => t.name);
export const registry = new ToolRegistry(tools);
export const closed: Promise<void> = closeTools(tools);
export const plain: AnyTool[] = tools;
export const readOnly: readonly AnyTool[] = [read, createReadTool("/other")];

// The process sessions' set likewise.
const sessions = createProcessTools("/workspace");
export async function listed(): Promise<ListProcessesOutput> {
  return sessions.list_processes.execute({}, { signal });
}
// @ts-expect-error a misspelt session tool
export const noSession = sessions.start_proces;

// A typed registry: get by a literal name.
export const fromRegistry: "run_command" = registry.get("run_command").name;
// @ts-expect-error a misspelt name given to a typed registry
export const notRegistered = registry.get("run_comand");
const dynamicName: string = "read_file";
export const maybe: AnyTool | undefined = registry.get(dynamicName);

// executeToolCall: no `type`, no signal, the parsed output or error beside `content`.
export async function call(): Promise<string> {
  const result = await executeToolCall(registry, { id: "1", name: "read_file", arguments: { path: "a.txt" } });
  if (result.isError) {
    const code: ErrorCode = result.error.code;
    return code;
  }
  const output: ReadFileOutput = result.output;
  // @ts-expect-error read_file's output has no exitCode
  void result.output.exitCode;
  return output.hash + result.content;
}
export async function callByDynamicName(name: string): Promise<ToolResult> {
  return executeToolCall(registry, { type: "toolCall", id: "2", name, arguments: {} }, signal);
}
export async function commandCall(): Promise<number | null> {
  const r = await executeToolCall(registry, { id: "3", name: "run_command", arguments: { argv: ["true"] } });
  const out: RunCommandOutput | undefined = r.isError ? undefined : r.output;
  return out?.exitCode ?? null;
}
// @ts-expect-error executeToolCall with a misspelt literal tool name on a typed registry
export const noSuchCall = executeToolCall(registry, { id: "4", name: "raed_file", arguments: {} });

// ToolError.code is the union of the codes.
export function isMissing(e: unknown): boolean {
  if (!(e instanceof ToolError)) return false;
  const code: ErrorCode = e.code;
  // @ts-expect-error not one of the codes
  if (e.code === "FILE_NOT_FOUD") return true;
  return code === "FILE_NOT_FOUND" || e.code === ErrorCode.PATH_ESCAPES_WORKSPACE;
}

// The AI SDK record: keyed by tool name, each entry with its tool's input and output types.
declare const model: LanguageModel;
const aiTools = toAISDKTools(tools);
export const set: ToolSet = aiTools;
export const aiInput: InferToolInput<typeof aiTools.read_file> = { path: "a.txt" };
export const aiOutput: ReadFileOutput = {} as InferToolOutput<typeof aiTools.read_file>;
// @ts-expect-error a misspelt tool name in the AI SDK record
export const aiMisspelt = aiTools.raed_file;
// @ts-expect-error the AI SDK tool's output is read_file's, not unknown
export const aiNotUnknown: number = {} as InferToolOutput<typeof aiTools.read_file>;
export async function aiResults(): Promise<string[]> {
  const result = await generateText({ model, tools: aiTools, prompt: "read a.txt" });
  const hashes: string[] = [];
  for (const r of result.toolResults) {
    if (r.dynamic) continue;
    if (r.toolName === "read_file") {
      hashes.push(r.output.hash);
      // @ts-expect-error a read_file result has no exitCode
      void r.output.exitCode;
    }
  }
  return hashes;
}
const aiResultErrors = toAISDKTools(tools, { errors: "result" });
export const withError: InferToolOutput<typeof aiResultErrors.read_file> = { error: { code: "FILE_NOT_FOUND", message: "x" } };

// Pi: each tool's details are its output.
const pi = toPiTools(tools);
export async function piDetails(): Promise<string> {
  const r = await pi.read_file.execute("1", { path: "a.txt" });
  return r.details.hash;
}

// The providers' definitions carry the tools' names.
export const chatNames: CodingTool["name"][] = toOpenAITools(tools).map((t) => t.function.name);
export const anthropicNames: CodingTool["name"][] = toAnthropicTools(tools).map((t) => t.name);
