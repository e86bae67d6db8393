export { ErrorCode, ArgumentsReason, ToolError, AbortError, isAbortError } from "./errors.js";
export type { JsonSchema } from "./schema.js";
export type { Tool, ToolContext, AnyTool, ToolEffect } from "./tool.js";
export { effectOf, closeTools } from "./tool.js";
export { ToolRegistry, executeToolCall } from "./registry.js";
export type { ToolCall, ToolResult, ToolDefinition } from "./registry.js";
export { validatePath as normalizePath } from "./paths.js";
export { createReadTool, isImageOutput, MAX_IMAGE_BYTES } from "./read.js";
export type { ReadInput, ReadOutput, ReadImageOutput, ReadToolOptions } from "./read.js";
export { createWriteTool } from "./write.js";
export type { WriteInput, WriteOutput, WriteToolOptions } from "./write.js";
export { createEditTool } from "./edit.js";
export type { EditInput, EditOutput, EditToolOptions } from "./edit.js";
export { createApplyPatchTool, MAX_PATCH_BYTES, MAX_PATCH_FILES } from "./apply-patch.js";
export type { ApplyPatchInput, ApplyPatchOutput, ApplyPatchToolOptions, PatchedFile } from "./apply-patch.js";
export { createMoveFileTool, createDeleteFileTool, createMakeDirectoryTool } from "./file-ops.js";
export type {
  MoveFileInput,
  MoveFileOutput,
  DeleteFileInput,
  DeleteFileOutput,
  MakeDirectoryInput,
  MakeDirectoryOutput,
  FileOpsToolOptions,
} from "./file-ops.js";
export { DEFAULT_PROTECT } from "./guard.js";
export type { WriteGuardOptions } from "./guard.js";
export { checkCommand, DEFAULT_DENY_COMMANDS } from "./policy.js";
export type { CommandPolicy, CommandCheck, CommandAllowed, CommandRefused, CommandInvalid, CommandRefusalReason } from "./policy.js";
export { createNodeProcessTool } from "./node-process.js";
export type { NodeProcessInput, NodeProcessOutput, NodeProcessToolOptions } from "./node-process.js";
export { createListTool } from "./list.js";
export type { ListInput, ListOutput, ListToolOptions } from "./list.js";
export { createSearchTool } from "./search.js";
export type { SearchInput, SearchOutput, SearchToolOptions } from "./search.js";
export { hashFile } from "./hash.js";
export type { HashFileOptions } from "./hash.js";
export { createRunCommandTool } from "./run-command.js";
export type { RunCommandInput, RunCommandOutput, RunCommandToolOptions } from "./run-command.js";
export { createRunTestsTool } from "./run-tests.js";
export type { RunTestsInput, RunTestsOutput, RunTestsToolOptions, TestFailure, TestRunner } from "./run-tests.js";
export { sandboxSupport, sandboxLimitDefaults } from "./sandbox.js";
export type { SandboxMode, SandboxReport, SandboxSupport, SandboxToolOptions, SandboxFeatureOverride } from "./sandbox.js";
export type { NetworkAllow, NetworkCounts } from "./sandbox.js";
export type { SandboxLimitOptions, SandboxLimitReport, SandboxLimitsReport } from "./sandbox.js";
export { createCodingTools } from "./coding.js";
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
export type { ApprovalOptions, ApprovalRequest, ApprovalAnswer, Approve, ApprovalFor, ApprovalRule, AuditEvent, Grants } from "./approval.js";
export type { CodingToolsOptions } from "./coding.js";
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
