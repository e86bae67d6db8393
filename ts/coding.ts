import { createNodeProcessTool, type NodeProcessToolOptions } from "./node-process.js";
import { createReadTool, type ReadToolOptions } from "./read.js";
import { createListTool, type ListToolOptions } from "./list.js";
import { createSearchTool, type SearchToolOptions } from "./search.js";
import { createRunCommandTool, type RunCommandToolOptions } from "./run-command.js";
import { createRunTestsTool, type RunTestsToolOptions } from "./run-tests.js";
import type { AnyTool } from "./tool.js";
import { createWriteTool, type WriteToolOptions } from "./write.js";
import { createEditTool, type EditToolOptions } from "./edit.js";
import type { WriteGuardOptions } from "./guard.js";
import { createApplyPatchTool, type ApplyPatchToolOptions } from "./apply-patch.js";
import { APPROVAL_SESSION, ApprovalSession, type ApprovalOptions } from "./approval.js";
import { createDeleteFileTool, createMakeDirectoryTool, createMoveFileTool, type FileOpsToolOptions } from "./file-ops.js";

/** Options for every tool of `createCodingTools`, by tool. */
export interface CodingToolsOptions extends ApprovalOptions {
  read?: ReadToolOptions;
  write?: WriteToolOptions;
  edit?: EditToolOptions;
  applyPatch?: ApplyPatchToolOptions;
  moveFile?: FileOpsToolOptions;
  deleteFile?: FileOpsToolOptions;
  makeDirectory?: FileOpsToolOptions;
  /**
   * The write guard of every writing tool (write_file, edit_file, apply_patch, move_file,
   * delete_file, make_directory); a tool's own options override it.
   */
  guard?: WriteGuardOptions;
  list?: ListToolOptions;
  search?: SearchToolOptions;
  nodeProcess?: NodeProcessToolOptions;
  runCommand?: RunCommandToolOptions;
  runTests?: RunTestsToolOptions;
  /**
   * Defaults for every tool that starts processes (node_process, run_command, run_tests); a
   * tool's own options override them. `workcell mcp --timeout-ms N --network` sets them.
   */
  processes?: ProcessToolDefaults;
  // approve, approvalFor, rules, onAudit (ApprovalOptions): passed to every tool; grants
  // approved with remember: "session" hold for every process tool of the set.
}

/** Settings shared by the tools that start processes. */
export interface ProcessToolDefaults {
  /** The call's timeout in milliseconds. */
  timeoutMs?: number;
  /** Allow network access from the processes (the sandbox blocks it by default). */
  network?: boolean;
  /**
   * The sandbox mode of the processes of node_process, run_command and run_tests: `"auto"`
   * (default), `"required"` or `"off"`.
   */
  sandbox?: "auto" | "required" | "off";
  /** Absolute paths the processes may also read (the sandbox's `readPaths`). */
  readPaths?: readonly string[];
  /** Absolute paths the processes may also read and write (the sandbox's `writePaths`). */
  writePaths?: readonly string[];
}

/** All of workcell's tools for one workspace root. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): AnyTool[] {
  const processes = {
    timeoutMs: options.processes?.timeoutMs,
    network: options.processes?.network,
    sandbox: options.processes?.sandbox,
    readPaths: options.processes?.readPaths,
    writePaths: options.processes?.writePaths,
  };
  // The approval options go to every tool, with one session for the set (remembered grants).
  const approval: ApprovalOptions & { [APPROVAL_SESSION]: ApprovalSession } = { [APPROVAL_SESSION]: new ApprovalSession() };
  if (options.approve !== undefined) approval.approve = options.approve;
  if (options.approvalFor !== undefined) approval.approvalFor = options.approvalFor;
  if (options.rules !== undefined) approval.rules = options.rules;
  if (options.onAudit !== undefined) approval.onAudit = options.onAudit;
  return [
    createReadTool(root, { ...approval, ...options.read }),
    createListTool(root, { ...approval, ...options.list }),
    createSearchTool(root, { ...approval, ...options.search }),
    createWriteTool(root, { ...approval, ...options.guard, ...options.write }),
    createEditTool(root, { ...approval, ...options.guard, ...options.edit }),
    createApplyPatchTool(root, { ...approval, ...options.guard, ...options.applyPatch }),
    createMoveFileTool(root, { ...approval, ...options.guard, ...options.moveFile }),
    createDeleteFileTool(root, { ...approval, ...options.guard, ...options.deleteFile }),
    createMakeDirectoryTool(root, { ...approval, ...options.guard, ...options.makeDirectory }),
    createNodeProcessTool(root, { ...approval, ...processes, ...options.nodeProcess }),
    createRunCommandTool(root, { ...approval, ...processes, ...options.runCommand }),
    createRunTestsTool(root, { ...approval, ...processes, ...options.runTests }),
  ];
}
