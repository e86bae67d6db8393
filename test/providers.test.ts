// The providers' function-tool JSON and the tool-call conversions, against their documented
// shapes (OpenAI Chat Completions and Responses, Anthropic Messages). test/typecheck.test.ts
// also compiles them against the providers' own SDK types.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolRegistry,
  createCodingTools,
  createReadTool,
  executeToolCall,
  fromAnthropicToolUse,
  fromOpenAIResponsesToolCall,
  fromOpenAIToolCall,
  strictSchema,
  toAnthropicToolResult,
  toAnthropicTools,
  toOpenAIResponsesOutput,
  toOpenAIResponsesTools,
  toOpenAITools,
  toOpenAIToolMessage,
  type JsonSchema,
  type Tool,
} from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

function fakeTool(name: string, parameters: JsonSchema): Tool<string, unknown, unknown> {
  return { name, description: `fake ${name}`, parameters, validate: (i) => i, execute: async (i) => i };
}

/** A schema like node_process's: one required property, optional ones, an array, an enum. */
const RICH: JsonSchema = {
  type: "object",
  properties: {
    source: { type: "string", description: "code", minLength: 1 },
    arguments: { type: "array", items: { type: "string" }, maxItems: 32, default: [] },
    mode: { type: "string", enum: ["a", "b"] },
    edits: {
      type: "array",
      items: {
        type: "object",
        properties: { oldText: { type: "string" }, newText: { type: "string" } },
        required: ["oldText", "newText"],
        additionalProperties: false,
      },
    },
  },
  required: ["source"],
  additionalProperties: false,
};

describe("provider tool formats", () => {
  test("OpenAI Chat Completions: { type: function, function: { name, description, parameters } }", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const out = toOpenAITools(tools);
    expect(out).toEqual(tools.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.parameters } })));
    expect(out[0]!.function).not.toHaveProperty("strict");
    // OpenAI function names: a-z, A-Z, 0-9, _ and -, at most 64 characters.
    for (const t of out) expect(t.function.name).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    // A registry works as well as an array.
    expect(toOpenAITools(new ToolRegistry(tools))).toEqual(out);
  });

  test("OpenAI Responses: flat { type, name, description, parameters, strict } and strict is always sent", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    expect(toOpenAIResponsesTools(tools)).toEqual(
      tools.map((t) => ({ type: "function", name: t.name, description: t.description, parameters: t.parameters, strict: false })),
    );
    const strict = toOpenAIResponsesTools(tools, { strict: true });
    expect(strict.every((t) => t.strict)).toBe(true);
    expect(strict[0]!.parameters).toEqual(strictSchema(tools[0]!.parameters));
  });

  test("Anthropic: { name, description, input_schema } with an object schema", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const out = toAnthropicTools(tools);
    expect(out).toEqual(tools.map((t) => ({ name: t.name, description: t.description, input_schema: t.parameters })));
    for (const t of out) expect(t.input_schema.type).toBe("object");
  });

  test("strict mode: every property required, optional ones nullable, keywords outside the subset dropped", () => {
    const [tool] = toOpenAITools([fakeTool("rich", RICH)], { strict: true });
    expect(tool!.function.strict).toBe(true);
    expect(tool!.function.parameters).toEqual({
      type: "object",
      properties: {
        source: { type: "string", description: "code" },
        arguments: { type: ["array", "null"], items: { type: "string" }, maxItems: 32 },
        mode: { type: ["string", "null"], enum: ["a", "b", null] },
        edits: {
          type: ["array", "null"],
          items: {
            type: "object",
            properties: { oldText: { type: "string" }, newText: { type: "string" } },
            required: ["oldText", "newText"],
            additionalProperties: false,
          },
        },
      },
      required: ["source", "arguments", "mode", "edits"],
      additionalProperties: false,
    });
    // The original schema is untouched.
    expect(RICH.required).toEqual(["source"]);
    expect((RICH.properties!.source as JsonSchema).minLength).toBe(1);
  });

  test("strict mode on the real tools: every object lists all its properties as required", async () => {
    const { root } = await tempWorkspace();
    const walk = (s: JsonSchema) => {
      if (s.type === "object" || s.properties) {
        expect(s.additionalProperties).toBe(false);
        expect([...(s.required ?? [])].sort()).toEqual(Object.keys(s.properties ?? {}).sort());
        for (const p of Object.values(s.properties ?? {})) walk(p);
      }
      if (s.items) walk(s.items);
      for (const k of ["minLength", "maxLength", "default"]) expect(s).not.toHaveProperty(k);
    };
    for (const t of toOpenAITools(createCodingTools(root), { strict: true })) walk(t.function.parameters);
  });
});

describe("tool calls and results", () => {
  test("OpenAI Chat Completions tool_calls -> ToolCall -> executeToolCall -> tool message", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hi");
    const registry = new ToolRegistry([createReadTool(root)]);
    // As in a Chat Completions response: message.tool_calls[i]
    const openaiCall = { id: "call_abc", type: "function" as const, function: { name: "read_file", arguments: '{"path":"a.txt"}' } };
    const call = fromOpenAIToolCall(openaiCall);
    expect(call).toEqual({ type: "toolCall", id: "call_abc", name: "read_file", arguments: '{"path":"a.txt"}' });
    const result = await executeToolCall(registry, call, new AbortController().signal);
    expect(toOpenAIToolMessage(result)).toEqual({ role: "tool", tool_call_id: "call_abc", content: '{"path":"a.txt","content":"hi","bytes":2,"hash":"8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}' });
  });

  test("OpenAI Responses function_call -> ToolCall; result -> function_call_output", async () => {
    const item = { type: "function_call" as const, id: "fc_1", call_id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' };
    expect(fromOpenAIResponsesToolCall(item)).toEqual({ type: "toolCall", id: "call_1", name: "read_file", arguments: '{"path":"a.txt"}' });
    expect(toOpenAIResponsesOutput({ type: "toolResult", id: "call_1", name: "read_file", isError: false, content: "{}" })).toEqual({
      type: "function_call_output",
      call_id: "call_1",
      output: "{}",
    });
  });

  test("Anthropic tool_use -> ToolCall; result -> tool_result with is_error", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry([createReadTool(root)]);
    const block = { type: "tool_use" as const, id: "toolu_01", name: "read_file", input: { path: "/etc/passwd" } };
    const call = fromAnthropicToolUse(block);
    expect(call).toEqual({ type: "toolCall", id: "toolu_01", name: "read_file", arguments: { path: "/etc/passwd" } });
    const result = await executeToolCall(registry, call, new AbortController().signal);
    const out = toAnthropicToolResult(result);
    expect(out).toMatchObject({ type: "tool_result", tool_use_id: "toolu_01", is_error: true });
    expect(JSON.parse(out.content).error.code).toBe("TOOL_ARGUMENTS_INVALID");
  });

  test("strict calls: the nulls standing for absent optional properties are removed", async () => {
    const call = fromOpenAIToolCall(
      { id: "c", function: { name: "rich", arguments: '{"source":"x","arguments":null,"mode":null,"edits":[{"oldText":"a","newText":"b"}]}' } },
      { strict: true },
    );
    expect(call.arguments).toEqual({ source: "x", edits: [{ oldText: "a", newText: "b" }] });
    // A "__proto__" key stays an own property, so the tool's schema check refuses it.
    const proto = fromOpenAIToolCall({ id: "c", function: { name: "rich", arguments: '{"source":"x","__proto__":{"polluted":1}}' } }, { strict: true });
    expect(Object.keys(proto.arguments as object)).toEqual(["source", "__proto__"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Text that is not JSON is passed on for the registry to refuse.
    expect(fromOpenAIToolCall({ id: "c", function: { name: "rich", arguments: "{oops" } }, { strict: true }).arguments).toBe("{oops");
    // Without strict, nothing is changed.
    expect(fromOpenAIToolCall({ id: "c", function: { name: "rich", arguments: '{"mode":null}' } }).arguments).toBe('{"mode":null}');
    // And the registry then validates the cleaned-up arguments as usual.
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hi");
    const registry = new ToolRegistry([createReadTool(root)]);
    const strictCall = fromOpenAIToolCall({ id: "c", function: { name: "read_file", arguments: '{"path":"a.txt"}' } }, { strict: true });
    expect((await executeToolCall(registry, strictCall, new AbortController().signal)).isError).toBe(false);
    const extra = fromOpenAIToolCall({ id: "c", function: { name: "read_file", arguments: '{"path":"a.txt","__proto__":{}}' } }, { strict: true });
    const refused = await executeToolCall(registry, extra, new AbortController().signal);
    expect(refused.isError).toBe(true);
  });
});
