export { ErrorCode, ArgumentsReason, ToolError, AbortError, isAbortError } from "./errors.js";
export type { JsonSchema } from "./schema.js";
export type { ToolErrorJSON } from "./errors.js";
export type { Tool, ToolContext, Progress, AnyTool, ToolEffect, ToolInput, ToolOutput, ToolNamed, NamedTools, WorkcellTool } from "./tool.js";
export { effectOf, closeTools } from "./tool.js";
export { ToolRegistry, executeToolCall } from "./registry.js";
export type { ToolCall, ToolResult, ToolResultContent, ToolResultOf, ToolDefinition, KnownName, ToolByName } from "./registry.js";
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
export { createProcessTools } from "./session.js";
export { applyStaged, discardStaged } from "./stage.js";
export type { StagedChange, StageMode, StageToolOptions, ApplyStagedInput, ApplyStagedOutput, ApplyStagedTool, DiscardStagedInput, DiscardStagedOutput, DiscardStagedTool, StagedTool } from "./stage.js";
export type {
  ProcessToolsOptions,
  ProcessTools,
  ProcessOutput,
  ProcessInfo,
  ProcessAlert,
  StartProcessInput,
  StartProcessOutput,
  StartProcessTool,
  ReadProcessInput,
  ReadProcessOutput,
  ReadProcessTool,
  WriteProcessInput,
  WriteProcessOutput,
  WriteProcessTool,
  StopProcessInput,
  StopProcessOutput,
  StopProcessTool,
  ListProcessesInput,
  ListProcessesOutput,
  ListProcessesTool,
} from "./session.js";
// Every tool's input and output by tool name, generated from the core's definitions.
export type { ToolShapes } from "./generated/contract.js";
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
export type { CommonToolOptions, DescriptionStyle } from "./common-options.js";
export { createCheckpoints } from "./checkpoints.js";
export type { Checkpoints, CheckpointsOptions, CheckpointCallOptions, CheckpointCreated, CheckpointSummary, CheckpointDiff, CheckpointRewound, CheckpointAction } from "./checkpoints.js";
export type {
  CheckpointTool,
  CheckpointToolsOptions,
  CheckpointInput,
  CheckpointOutput,
  ListCheckpointsInput,
  ListCheckpointsOutput,
  DiffCheckpointInput,
  DiffCheckpointOutput,
  RewindCheckpointInput,
  RewindCheckpointOutput,
} from "./checkpoint-tools.js";
