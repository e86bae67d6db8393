// The model providers' own function-tool JSON, for agents that call a provider's API directly,
// and the small conversions between a provider's tool-call object and workcell's ToolCall /
// ToolResult. No dependency: these are plain objects in the documented shapes.
import type { ToolCall, ToolResultContent } from "../registry.js";
import type { JsonSchema } from "../schema.js";
import type { AnyTool } from "../tool.js";
import { toRegistry, type ToolsInput } from "./common.js";
import { checkOptions, option, type OptionSpecOf } from "../options.js";

/** Options of the OpenAI formats. */
export interface OpenAIToolsOptions {
  /**
   * Ask for OpenAI's strict mode (Structured Outputs). The schema is rewritten to the strict
   * subset: every property is listed in `required`, an optional one may be `null` instead, and
   * keywords outside the subset (such as `minLength`) are dropped; the tools' own validation
   * still enforces them. Parse the calls with `fromOpenAIToolCall(call, { strict: true })` so
   * the nulls standing for absent properties are removed. Default false.
   */
  strict?: boolean;
}

/** The options of the OpenAI formats' functions (see ts/options.ts). */
export const OPENAI_TOOLS_OPTIONS = {
  strict: option.boolean("OpenAI's strict mode"),
} as const satisfies OptionSpecOf<OpenAIToolsOptions>;

/** A function tool of OpenAI's Chat Completions API (`Name`: the tool's name). */
export interface OpenAIChatTool<Name extends string = string> {
  type: "function";
  function: { name: Name; description: string; parameters: JsonSchema; strict?: boolean };
}

/** A function tool of OpenAI's Responses API (`Name`: the tool's name). */
export interface OpenAIResponsesTool<Name extends string = string> {
  type: "function";
  name: Name;
  description: string;
  parameters: JsonSchema;
  /** Responses defaults to strict, so this is always sent. */
  strict: boolean;
}

/** A tool's parameters: a JSON Schema of type object (every workcell tool's parameters are). */
export type ObjectJsonSchema = JsonSchema & { type: "object"; required?: string[] };

/** A client tool of Anthropic's Messages API (`Name`: the tool's name). */
export interface AnthropicTool<Name extends string = string> {
  name: Name;
  description: string;
  input_schema: ObjectJsonSchema;
}

/** `tools` for `chat.completions.create`. */
export function toOpenAITools<T extends AnyTool>(tools: ToolsInput<T>, options: OpenAIToolsOptions = {}): OpenAIChatTool<T["name"]>[] {
  checkOptions("toOpenAITools", OPENAI_TOOLS_OPTIONS, options);
  return toRegistry(tools)
    .definitions()
    .map((d) => ({
      type: "function" as const,
      function: options.strict
        ? { name: d.name, description: d.description, parameters: strictSchema(d.parameters), strict: true }
        : { name: d.name, description: d.description, parameters: d.parameters },
    }));
}

/** `tools` for `responses.create` (the Responses API, which is strict unless told otherwise). */
export function toOpenAIResponsesTools<T extends AnyTool>(tools: ToolsInput<T>, options: OpenAIToolsOptions = {}): OpenAIResponsesTool<T["name"]>[] {
  checkOptions("toOpenAIResponsesTools", OPENAI_TOOLS_OPTIONS, options);
  return toRegistry(tools)
    .definitions()
    .map((d) => ({
      type: "function" as const,
      name: d.name,
      description: d.description,
      parameters: options.strict ? strictSchema(d.parameters) : d.parameters,
      strict: options.strict === true,
    }));
}

/** `tools` for Anthropic's `messages.create`. */
export function toAnthropicTools<T extends AnyTool>(tools: ToolsInput<T>): AnthropicTool<T["name"]>[] {
  return toRegistry(tools)
    .definitions()
    .map((d) => ({ name: d.name, description: d.description, input_schema: d.parameters as ObjectJsonSchema }));
}

// ---- tool calls and results -------------------------------------------------------------------

/** An entry of a Chat Completions message's `tool_calls`. */
export interface OpenAIChatToolCall {
  id: string;
  type?: "function";
  function: { name: string; arguments: string };
}

/** A `function_call` item of a Responses API output. */
export interface OpenAIResponsesFunctionCall {
  type?: "function_call";
  call_id: string;
  name: string;
  arguments: string;
}

/** A `tool_use` block of an Anthropic assistant message. */
export interface AnthropicToolUse {
  type?: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** Chat Completions `tool_calls[i]` -> ToolCall (`arguments` stays JSON text; the registry parses it). */
export function fromOpenAIToolCall(call: OpenAIChatToolCall, options: OpenAIToolsOptions = {}): ToolCall {
  checkOptions("fromOpenAIToolCall", OPENAI_TOOLS_OPTIONS, options);
  return {
    type: "toolCall",
    id: call.id,
    name: call.function.name,
    arguments: options.strict ? withoutNulls(call.function.arguments) : call.function.arguments,
  };
}

/** Responses API `function_call` item -> ToolCall. */
export function fromOpenAIResponsesToolCall(item: OpenAIResponsesFunctionCall, options: OpenAIToolsOptions = {}): ToolCall {
  checkOptions("fromOpenAIResponsesToolCall", OPENAI_TOOLS_OPTIONS, options);
  return {
    type: "toolCall",
    id: item.call_id,
    name: item.name,
    arguments: options.strict ? withoutNulls(item.arguments) : item.arguments,
  };
}

/** Anthropic `tool_use` block -> ToolCall. */
export function fromAnthropicToolUse(block: AnthropicToolUse): ToolCall {
  return { type: "toolCall", id: block.id, name: block.name, arguments: block.input };
}

/** ToolResult -> the Chat Completions `tool` message that answers the call. */
export function toOpenAIToolMessage(result: ToolResultContent): { role: "tool"; tool_call_id: string; content: string } {
  return { role: "tool", tool_call_id: result.id, content: result.content };
}

/** ToolResult -> the Responses API `function_call_output` input item. */
export function toOpenAIResponsesOutput(result: ToolResultContent): { type: "function_call_output"; call_id: string; output: string } {
  return { type: "function_call_output", call_id: result.id, output: result.content };
}

/** ToolResult -> the Anthropic `tool_result` block (in the next user message), `is_error` set on failures. */
export function toAnthropicToolResult(result: ToolResultContent): {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error: boolean;
} {
  return { type: "tool_result", tool_use_id: result.id, content: result.content, is_error: result.isError };
}

// ---- OpenAI strict mode -----------------------------------------------------------------------

/** The keywords OpenAI's strict mode accepts; others are dropped (the tool still checks them). */
const STRICT_KEYWORDS = new Set([
  "type",
  "description",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems",
  "pattern",
  "format",
]);

/** Rewrites a schema to OpenAI's strict subset (see `OpenAIToolsOptions.strict`). */
export function strictSchema(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!STRICT_KEYWORDS.has(key)) continue;
    if (key === "properties" || key === "required" || key === "additionalProperties") continue;
    if (key === "items" && value && typeof value === "object") out.items = strictSchema(value as JsonSchema);
    else if (key === "anyOf" && Array.isArray(value)) out.anyOf = value.map((s) => strictSchema(s as JsonSchema));
    else out[key] = value;
  }
  if (schema.type === "object" || schema.properties) {
    const props = schema.properties ?? {};
    const required = new Set(schema.required ?? []);
    const properties: Record<string, JsonSchema> = {};
    for (const [name, sub] of Object.entries(props)) {
      const strict = strictSchema(sub);
      properties[name] = required.has(name) ? strict : nullable(strict);
    }
    out.properties = properties;
    out.required = Object.keys(props);
    out.additionalProperties = false;
  }
  return out;
}

function nullable(schema: JsonSchema): JsonSchema {
  if (typeof schema.type === "string") {
    const out: JsonSchema = { ...schema, type: [schema.type, "null"] as unknown as JsonSchema["type"] };
    if (Array.isArray(schema.enum)) out.enum = [...schema.enum, null] as unknown as JsonSchema["enum"];
    return out;
  }
  return { anyOf: [schema, { type: "null" as unknown as JsonSchema["type"] }] };
}

/** Removes object properties whose value is null (strict mode's stand-in for "absent"). */
function withoutNulls(args: string): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    return args; // the registry reports the wrong shape
  }
  return dropNulls(parsed);
}

function dropNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(dropNulls);
  if (value !== null && typeof value === "object") {
    // fromEntries defines own properties, so a "__proto__" key stays a (refused) property.
    return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, dropNulls(v)]));
  }
  return value;
}
