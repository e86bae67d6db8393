// Type-level checks: what the adapters return is accepted where each SDK expects it.
// Not run, only compiled (test/typecheck.test.ts).
import type { AgentTool } from "@mariozechner/pi-agent-core";
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import type { Tool as AnthropicTool, ToolResultBlockParam, ToolUseBlock } from "@anthropic-ai/sdk/resources/messages/messages";
import { generateText, streamText, type LanguageModel, type ToolSet } from "ai";
import type {
  ChatCompletionMessageFunctionToolCall,
  ChatCompletionTool,
  ChatCompletionToolMessageParam,
} from "openai/resources/chat/completions/completions";
import type { FunctionTool, ResponseFunctionToolCall, ResponseInputItem } from "openai/resources/responses/responses";
import {
  createCodingTools,
  fromAnthropicToolUse,
  fromOpenAIResponsesToolCall,
  fromOpenAIToolCall,
  toAnthropicToolResult,
  toAnthropicTools,
  toOpenAIResponsesOutput,
  toOpenAIResponsesTools,
  toOpenAITools,
  toOpenAIToolMessage,
  type ToolCall,
  type ToolResult,
} from "workcell";
import { toAISDKProviderTools, toAISDKTools } from "workcell/ai";
import { bash, textEditor } from "workcell/anthropic";
import { applyPatch, shell } from "workcell/openai";
import type { ToolBash20250124, ToolTextEditor20250728 } from "@anthropic-ai/sdk/resources/messages/messages";
import type { ApplyPatchTool, FunctionShellTool, ResponseApplyPatchToolCall, ResponseFunctionShellToolCall } from "openai/resources/responses/responses";
import { createMcpServer } from "workcell/mcp";
import { toPiTools } from "workcell/pi";

const tools = createCodingTools("/workspace");

// OpenAI Chat Completions and Responses, Anthropic Messages.
export const chat: ChatCompletionTool[] = toOpenAITools(tools);
export const chatStrict: ChatCompletionTool[] = toOpenAITools(tools, { strict: true });
export const responses: FunctionTool[] = toOpenAIResponsesTools(tools);
export const anthropic: AnthropicTool[] = toAnthropicTools(tools);
declare const openaiCall: ChatCompletionMessageFunctionToolCall;
declare const responsesCall: ResponseFunctionToolCall;
declare const toolUse: ToolUseBlock;
declare const result: ToolResult;
export const calls: ToolCall[] = [fromOpenAIToolCall(openaiCall), fromOpenAIResponsesToolCall(responsesCall), fromAnthropicToolUse(toolUse)];
export const chatMessage: ChatCompletionToolMessageParam = toOpenAIToolMessage(result);
export const responsesItem: ResponseInputItem = toOpenAIResponsesOutput(result);
export const anthropicBlock: ToolResultBlockParam = toAnthropicToolResult(result);

// The AI SDK.
declare const model: LanguageModel;
export const set: ToolSet = toAISDKTools(tools);
export const generated = generateText({ model, tools: toAISDKTools(tools), prompt: "x" });
export const streamed = streamText({ model, tools: toAISDKTools(tools, { errors: "result" }), prompt: "x" });

// Pi.
export const pi: AgentTool<any>[] = toPiTools(tools);

// MCP.
export const server: Server = createMcpServer(tools, { name: "x", version: "1.0.0" });

// The providers' own tools: definitions, calls and answers in the SDKs' types.
const editor = textEditor(tools);
export const editorDefinition: ToolTextEditor20250728 = editor.definition;
export const bashDefinition: ToolBash20250124 = bash(tools).definition;
export async function anthropicAnswers(use: ToolUseBlock): Promise<ToolResultBlockParam> {
  return editor.answer(use);
}
export const patchDefinition: ApplyPatchTool = applyPatch(tools).definition;
export const shellDefinition: FunctionShellTool = shell(tools).definition;
export async function openaiAnswers(a: ResponseApplyPatchToolCall, s: ResponseFunctionShellToolCall): Promise<ResponseInputItem[]> {
  return [await applyPatch(tools).handle(a), await shell(tools).handle(s)];
}
export const providerSet: ToolSet = { ...toAISDKProviderTools(tools) } as ToolSet;
export const providerText = generateText({ model, tools: { apply_patch: toAISDKProviderTools(tools).apply_patch! }, prompt: "x" });

// Negative controls: each line must fail to compile (so the checks above are not vacuous, for
// example through an SDK type that failed to resolve and became `any`).
// @ts-expect-error an Anthropic tool is not an OpenAI tool
export const wrongFormat: ChatCompletionTool[] = toAnthropicTools(tools);
// @ts-expect-error an AI SDK tool is not a number
export const notAny: number = toAISDKTools(tools)["read_file"]!;
// @ts-expect-error a Pi tool's execute takes (toolCallId, params, signal)
export const piExecute: (a: number) => void = toPiTools(tools)[0]!.execute;
// @ts-expect-error createMcpServer returns the SDK's Server
export const notServer: string = createMcpServer(tools);
// @ts-expect-error a ToolSet entry needs an inputSchema
export const emptySet: ToolSet = { x: { description: "no schema" } };
