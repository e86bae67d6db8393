export { ErrorCode, ArgumentsReason, ToolError, AbortError, isAbortError } from "./errors.js";
export type { JsonSchema } from "./schema.js";
export type { Tool, ToolContext, AnyTool, ToolEffect } from "./tool.js";
export { effectOf, closeTools } from "./tool.js";
export { ToolRegistry, executeToolCall } from "./registry.js";
export type { ToolCall, ToolResult, ToolDefinition } from "./registry.js";
export { validatePath as normalizePath } from "./paths.js";
export { DEFAULT_PROTECT } from "./guard.js";
export type { WriteGuardOptions } from "./guard.js";
export { checkCommand, DEFAULT_DENY_COMMANDS } from "./policy.js";
export type { CommandPolicy, CommandCheck, CommandAllowed, CommandRefused, CommandInvalid, CommandRefusalReason } from "./policy.js";
export { hashFile } from "./hash.js";
export type { HashFileOptions } from "./hash.js";
export { sandboxSupport, sandboxLimitDefaults } from "./sandbox.js";
export type { SandboxMode, SandboxReport, SandboxSupport, SandboxToolOptions, SandboxFeatureOverride } from "./sandbox.js";
export type { NetworkAllow, NetworkCounts } from "./sandbox.js";
export type { SandboxLimitOptions, SandboxLimitReport, SandboxLimitsReport } from "./sandbox.js";
// The coding set and the factories it lists, with their types (ts/coding.ts re-exports them).
export * from "./coding.js";
export { createProcessTools } from "./process-tools.js";
export type {
  ProcessToolsOptions,
  ProcessOutput,
  ProcessInfo,
  ProcessAlert,
  StartProcessInput,
  ReadProcessInput,
  WriteProcessInput,
  StopProcessInput,
} from "./process-tools.js";
export { sandboxDenials, withGrants } from "./approval.js";
export type { ApprovalOptions, ApprovalRequest, ApprovalAnswer, Approve, ApprovalFor, ApprovalRule, AuditEvent, FileDiff as ApprovalFileDiff, Grants, RunGrants } from "./approval.js";
export type { ProcessToolDefaults } from "./coding.js";
export { ToolCallError } from "./adapters/common.js";
export type { ToolsInput } from "./adapters/common.js";
export {
  toOpenAITools,
  toOpenAIResponsesTools,
  toAnthropicTools,
  strictSchema,
  fromOpenAIToolCall,
  fromOpenAIResponsesToolCall,
  fromAnthropicToolUse,
  toOpenAIToolMessage,
  toOpenAIResponsesOutput,
  toAnthropicToolResult,
} from "./adapters/providers.js";
export type {
  OpenAIToolsOptions,
  OpenAIChatTool,
  OpenAIResponsesTool,
  AnthropicTool,
  ObjectJsonSchema,
  OpenAIChatToolCall,
  OpenAIResponsesFunctionCall,
  AnthropicToolUse,
} from "./adapters/providers.js";
export type { CommonToolOptions, DescriptionStyle } from "./options.js";
export { createCheckpoints } from "./checkpoints.js";
export type { Checkpoints, CheckpointsOptions, CheckpointCallOptions, CheckpointCreated, CheckpointSummary, CheckpointDiff, CheckpointRewound, CheckpointAction } from "./checkpoints.js";
