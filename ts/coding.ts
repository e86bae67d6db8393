import { NODE_PROCESS_OPTIONS, createNodeProcessTool, type NodeProcessToolOptions } from "./node-process.js";
import { READ_OPTIONS, createReadTool, type ReadToolOptions } from "./read.js";
import { LIST_OPTIONS, createListTool, type ListToolOptions } from "./list.js";
import { SEARCH_OPTIONS, createSearchTool, type SearchToolOptions } from "./search.js";
import { RUN_COMMAND_OPTIONS, createRunCommandTool, type RunCommandToolOptions } from "./run-command.js";
import { RUN_TESTS_OPTIONS, createRunTestsTool, type RunTestsToolOptions } from "./run-tests.js";
import { PROCESS_TOOLS_OPTIONS, createProcessTools, portGroupOf, type ProcessTools, type ProcessToolsOptions } from "./session.js";
import { namedTools, type AnyTool, type NamedTools } from "./tool.js";
import { WRITE_OPTIONS, createWriteTool, type WriteToolOptions } from "./write.js";
import { EDIT_OPTIONS, createEditTool, type EditToolOptions } from "./edit.js";
import { GUARD_OPTIONS, type WriteGuardOptions } from "./guard.js";
import { APPLY_PATCH_OPTIONS, createApplyPatchTool, type ApplyPatchToolOptions } from "./apply-patch.js";
import {
  DELETE_FILE_OPTIONS,
  MAKE_DIRECTORY_OPTIONS,
  MOVE_FILE_OPTIONS,
  createDeleteFileTool,
  createMakeDirectoryTool,
  createMoveFileTool,
  type FileOpsToolOptions,
} from "./file-ops.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { asPartOf, checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { APPROVAL_SESSION, ApprovalSession, type ApprovalOptions } from "./approval.js";
import { createCheckpointTools, type CheckpointTool, type CheckpointToolsOptions } from "./checkpoint-tools.js";
import { CHECKPOINTS_OPTIONS, type CheckpointsOptions } from "./checkpoints.js";
import { STAGE_OPTIONS, STAGE_SET, StageSet, createStagedTools, type StagedTool, type StageToolOptions } from "./stage.js";
import { openWorkspace } from "./native.js";
import { LISTEN_PORTS, PORT_GROUP, SANDBOX_OPTIONS, SANDBOX_SAID_BY, type NetworkAllow, type SandboxLimitOptions, type SandboxSaid } from "./sandbox.js";

/** Options for every tool of `createCodingTools`, by tool. */
// The factories of the set and their types, exported by the package's entry point through
// this module (ts/index.ts re-exports it): a tool added to the set is exported here.
export { createReadTool, isImageOutput, MAX_IMAGE_BYTES } from "./read.js";
export type { ReadFileInput, ReadFileOutput, ReadFileTool, ReadInput, ReadOutput, ReadImageOutput, ReadToolOptions } from "./read.js";
export { createWriteTool } from "./write.js";
export type { WriteFileInput, WriteFileOutput, WriteFileTool, WriteInput, WriteOutput, WriteToolOptions } from "./write.js";
export { createEditTool } from "./edit.js";
export type { EditFileInput, EditFileOutput, EditFileTool, EditInput, EditOutput, EditToolOptions } from "./edit.js";
export { createApplyPatchTool, MAX_PATCH_BYTES, MAX_PATCH_FILES } from "./apply-patch.js";
export type { ApplyPatchInput, ApplyPatchOutput, ApplyPatchTool, ApplyPatchToolOptions, PatchedFile } from "./apply-patch.js";
export { createMoveFileTool, createDeleteFileTool, createMakeDirectoryTool } from "./file-ops.js";
export type {
  MoveFileInput,
  MoveFileOutput,
  MoveFileTool,
  DeleteFileInput,
  DeleteFileOutput,
  DeleteFileTool,
  MakeDirectoryInput,
  MakeDirectoryOutput,
  MakeDirectoryTool,
  FileOpsToolOptions,
} from "./file-ops.js";
export { createNodeProcessTool } from "./node-process.js";
export type { NodeProcessInput, NodeProcessOutput, NodeProcessTool, NodeProcessToolOptions } from "./node-process.js";
export { createListTool } from "./list.js";
export type { ListFilesInput, ListFilesOutput, ListFilesTool, ListInput, ListOutput, ListToolOptions } from "./list.js";
export { createSearchTool } from "./search.js";
export type { SearchFilesInput, SearchFilesOutput, SearchFilesTool, SearchInput, SearchOutput, SearchToolOptions } from "./search.js";
export { createRunCommandTool } from "./run-command.js";
export type { RunCommandInput, RunCommandOutput, RunCommandTool, RunCommandToolOptions } from "./run-command.js";
export { createRunTestsTool } from "./run-tests.js";
export type { RunTestsInput, RunTestsOutput, RunTestsTool, RunTestsToolOptions, TestFailure, TestRunner } from "./run-tests.js";

/**
 * Options of `createCodingTools`: one group per tool, `guard` and `processes` shared by the writing
 * and the process tools, and the approval options, passed to every tool.
 */
export interface CodingToolsOptions extends CommonToolOptions {
  /** read_file's options. */
  read?: ReadToolOptions;
  /** write_file's options (over `guard`). */
  write?: WriteToolOptions;
  /** edit_file's options (over `guard`). */
  edit?: EditToolOptions;
  /** apply_patch's options (over `guard`). */
  applyPatch?: ApplyPatchToolOptions;
  /** move_file's options (over `guard`). */
  moveFile?: FileOpsToolOptions;
  /** delete_file's options (over `guard`). */
  deleteFile?: FileOpsToolOptions;
  /** make_directory's options (over `guard`). */
  makeDirectory?: FileOpsToolOptions;
  /**
   * The write guard of every writing tool (write_file, edit_file, apply_patch, move_file,
   * delete_file, make_directory); a tool's own options override it.
   */
  guard?: WriteGuardOptions;
  /** list_files' options. */
  list?: ListToolOptions;
  /** search_files' options. */
  search?: SearchToolOptions;
  /** node_process's options (over `processes`). */
  nodeProcess?: NodeProcessToolOptions;
  /** run_command's options (over `processes`). */
  runCommand?: RunCommandToolOptions;
  /** run_tests' options (over `processes`). */
  runTests?: RunTestsToolOptions;
  /** The process sessions (start_process, read_process, write_process, stop_process, list_processes). */
  sessions?: ProcessToolsOptions;
  /**
   * Defaults for every tool that starts processes (node_process, run_command, run_tests, the process sessions); a
   * tool's own options override them. `workcell mcp --timeout-ms N --network` sets them.
   */
  processes?: ProcessToolDefaults;
  /**
   * The checkpoint tools (checkpoint, list_checkpoints, diff_checkpoint, rewind_checkpoint):
   * `true`, or the checkpoints' options (`protect` defaults to `guard.protect`). Off by default.
   */
  checkpoints?: boolean | CheckpointsOptions;
  // approve, approvalFor, rules, onAudit (ApprovalOptions): passed to every tool; grants
  // approved with remember: "session" hold for every process tool of the set.
}

/** Settings shared by the tools that start processes (the staging options: node_process, run_command and run_tests). */
export interface ProcessToolDefaults extends StageToolOptions {
  /** The call's timeout in milliseconds. */
  timeoutMs?: number;
  /**
   * Allow network access from the processes (the sandbox blocks it by default): `true`, or
   * `{ allow: [...] }` for only the listed hosts, through workcell's filtering proxy.
   */
  network?: boolean | NetworkAllow;
  /**
   * The sandbox mode of the processes of node_process, run_command and run_tests: `"auto"`
   * (default), `"required"` or `"off"`.
   */
  sandbox?: "auto" | "required" | "off";
  /** Absolute paths the processes may also read (the sandbox's `readPaths`). */
  readPaths?: readonly string[];
  /** Absolute paths the processes may also read and write (the sandbox's `writePaths`). */
  writePaths?: readonly string[];
  /** Resource caps on each call's process tree (the sandbox's `limits`). */
  limits?: SandboxLimitOptions;
  /**
   * Globs of workspace paths read-only for every process (default: `guard.protect`, else every
   * `.git`); `[]` protects nothing from the processes.
   */
  protect?: readonly string[];
}

/** The spec entries of {@link ProcessToolDefaults} (see ts/options.ts). */
const PROCESS_DEFAULTS_OPTIONS = {
  // node_process's ceiling, the lowest of the three tools'.
  timeoutMs: NODE_PROCESS_OPTIONS.timeoutMs,
  network: SANDBOX_OPTIONS.network,
  sandbox: SANDBOX_OPTIONS.sandbox,
  readPaths: SANDBOX_OPTIONS.readPaths,
  writePaths: SANDBOX_OPTIONS.writePaths,
  limits: SANDBOX_OPTIONS.limits,
  protect: SANDBOX_OPTIONS.protect,
  ...STAGE_OPTIONS,
} as const satisfies OptionSpecOf<ProcessToolDefaults>;

/** The options of createCodingTools (see ts/options.ts): each tool's key is that factory's spec. */
const CODING_TOOLS_OPTIONS = declareOptions("createCodingTools", {
  ...COMMON_TOOL_OPTIONS,
  read: option.object(READ_OPTIONS, "read_file's options"),
  write: option.object(WRITE_OPTIONS, "write_file's options"),
  edit: option.object(EDIT_OPTIONS, "edit_file's options"),
  applyPatch: option.object(APPLY_PATCH_OPTIONS, "apply_patch's options"),
  moveFile: option.object(MOVE_FILE_OPTIONS, "move_file's options"),
  deleteFile: option.object(DELETE_FILE_OPTIONS, "delete_file's options"),
  makeDirectory: option.object(MAKE_DIRECTORY_OPTIONS, "make_directory's options"),
  guard: option.object(GUARD_OPTIONS, "the write guard of every writing tool"),
  list: option.object(LIST_OPTIONS, "list_files's options"),
  search: option.object(SEARCH_OPTIONS, "search_files's options"),
  nodeProcess: option.object(NODE_PROCESS_OPTIONS, "node_process's options"),
  runCommand: option.object(RUN_COMMAND_OPTIONS, "run_command's options"),
  runTests: option.object(RUN_TESTS_OPTIONS, "run_tests's options"),
  sessions: option.object(PROCESS_TOOLS_OPTIONS, "the process sessions' options"),
  processes: option.object(PROCESS_DEFAULTS_OPTIONS, "defaults of every tool that starts processes"),
  checkpoints: option.oneOf([{ type: "boolean" }, { type: "object", spec: CHECKPOINTS_OPTIONS }], "the checkpoint tools: true, or their options"),
} as const satisfies OptionSpecOf<CodingToolsOptions>);

/** Copies the keys of `o` whose value is not undefined. */
function defined<T extends object>(o: T | undefined): Partial<T> {
  const out: Partial<T> = {};
  if (o === undefined) return out;
  for (const [k, v] of Object.entries(o)) if (v !== undefined) (out as Record<string, unknown>)[k] = v;
  return out;
}

/** One tool of {@link CodingTools}. */
export type CodingTool =
  | ReturnType<typeof createReadTool>
  | ReturnType<typeof createListTool>
  | ReturnType<typeof createSearchTool>
  | ReturnType<typeof createWriteTool>
  | ReturnType<typeof createEditTool>
  | ReturnType<typeof createApplyPatchTool>
  | ReturnType<typeof createMoveFileTool>
  | ReturnType<typeof createDeleteFileTool>
  | ReturnType<typeof createMakeDirectoryTool>
  | ReturnType<typeof createNodeProcessTool>
  | ReturnType<typeof createRunCommandTool>
  | ReturnType<typeof createRunTestsTool>
  | ProcessTools[number]
  | CheckpointTool
  | StagedTool;

/**
 * The tools of `createCodingTools`: an array of tools (iterate it, pass it to `ToolRegistry` and
 * the adapters) whose tools are also reachable by name with their types (`tools.read_file`).
 */
export type CodingTools = NamedTools<CodingTool>;

/** All of workcell's tools for one workspace root, by name (`tools.read_file`) and as an array. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): CodingTools {
  // Errors raised by the factories it calls name createCodingTools, the function the host called.
  return asPartOf("createCodingTools", () => codingTools(root, options));
}

function codingTools(root: string, options: CodingToolsOptions): CodingTools {
  // The whole tree is checked first, so an error names the full path (processes.sandox).
  checkOptions("createCodingTools", CODING_TOOLS_OPTIONS, options);
  // The approval options go to every tool, with one session for the set (remembered grants).
  const approval: ApprovalOptions & { [APPROVAL_SESSION]: ApprovalSession } = { [APPROVAL_SESSION]: new ApprovalSession() };
  if (options.approve !== undefined) approval.approve = options.approve;
  if (options.approvalFor !== undefined) approval.approvalFor = options.approvalFor;
  if (options.rules !== undefined) approval.rules = options.rules;
  if (options.onAudit !== undefined) approval.onAudit = options.onAudit;
  const base = { ...approval, ...defined({ descriptions: options.descriptions }) };
  const processes = { ...base, ...defined(options.processes) };
  const guard = { ...base, ...defined(options.guard) };
  // The processes protect what the file tools protect unless the host says otherwise.
  if (processes.protect === undefined && guard.protect !== undefined) processes.protect = guard.protect;
  // run_command's description says what the sandbox does; node_process's and run_tests's
  // refer to it when theirs would say the same.
  // The process sessions are never staged.
  const { stage: _stage, maxStagedBytes: _max, stagedTtlMs: _ttl, ...sessionDefaults } = processes;
  const sessionsOptions = { ...sessionDefaults, ...options.sessions };
  const sessions = createProcessTools(root, sessionsOptions);
  // The tool set's processes may connect to the ports its sessions listen on, and a refused
  // listen names the ports its sessions may ask for.
  const ports = { [PORT_GROUP]: portGroupOf(sessions), [LISTEN_PORTS]: [...(sessionsOptions.ports ?? [])] };
  // One group of staged changes for the set (apply_staged, discard_staged, closeTools), unless
  // every tool that could stage is set to "never"; the write guard's globs are never applied.
  const stages = [options.nodeProcess, options.runCommand, options.runTests].map((o) => o?.stage ?? processes.stage ?? "allowed");
  const stageSet = stages.some((m) => m !== "never") ? new StageSet(openWorkspace(root), guard.protect) : undefined;
  const staged: { [STAGE_SET]?: StageSet } = stageSet ? { [STAGE_SET]: stageSet } : {};
  const runCommand = { ...processes, ...options.runCommand, ...ports, ...staged };
  const said: SandboxSaid = { tool: "run_command", sandbox: runCommand.sandbox ?? "auto", network: runCommand.network ?? false };
  return namedTools<CodingTool>([
    createReadTool(root, { ...base, ...options.read }),
    createListTool(root, { ...base, ...options.list }),
    createSearchTool(root, { ...base, ...options.search }),
    createWriteTool(root, { ...guard, ...options.write }),
    createEditTool(root, { ...guard, ...options.edit }),
    createApplyPatchTool(root, { ...guard, ...options.applyPatch }),
    createMoveFileTool(root, { ...guard, ...options.moveFile }),
    createDeleteFileTool(root, { ...guard, ...options.deleteFile }),
    createMakeDirectoryTool(root, { ...guard, ...options.makeDirectory }),
    createNodeProcessTool(root, { ...processes, ...options.nodeProcess, ...ports, ...staged, [SANDBOX_SAID_BY]: said } as NodeProcessToolOptions),
    createRunCommandTool(root, runCommand),
    createRunTestsTool(root, { ...processes, ...options.runTests, ...ports, ...staged, [SANDBOX_SAID_BY]: said } as RunTestsToolOptions),
    ...sessions,
    ...(stageSet ? createStagedTools(stageSet, base, root) : []),
    ...(options.checkpoints ? checkpointTools(root, options, base, guard.protect) : []),
  ]);
}

/** The checkpoint tools of the set: the write guard's globs protect from a rewind too. */
function checkpointTools(root: string, options: CodingToolsOptions, base: Omit<CheckpointToolsOptions, "checkpoints">, protect: readonly string[] | undefined): CheckpointTool[] {
  const own = options.checkpoints === true || options.checkpoints === undefined || options.checkpoints === false ? {} : options.checkpoints;
  const checkpoints: CheckpointsOptions = { ...(protect !== undefined ? { protect: [...protect] } : {}), ...defined(own) };
  return createCheckpointTools(root, { ...base, checkpoints });
}
