import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";

import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { GUARD_OPTIONS, makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, type OptionSpecOf } from "./options.js";

import { Gate, attachHooks, hashList, toPreview, type WriteSpec } from "./approval.js";
import type { DeleteFileInput, DeleteFileOutput, MakeDirectoryInput, MakeDirectoryOutput, MoveFileInput, MoveFileOutput } from "./generated/contract.js";
export type { DeleteFileInput, DeleteFileOutput, MakeDirectoryInput, MakeDirectoryOutput, MoveFileInput, MoveFileOutput } from "./generated/contract.js";

/**
 * Options of `createMoveFileTool`, `createDeleteFileTool` and `createMakeDirectoryTool`: the write
 * guard and approval.
 */
export interface FileOpsToolOptions extends WriteGuardOptions, CommonToolOptions {}

const FILE_OPS_SPEC = {
  ...COMMON_TOOL_OPTIONS,
  ...GUARD_OPTIONS,
} as const satisfies OptionSpecOf<FileOpsToolOptions>;
/** The options of createMoveFileTool, createDeleteFileTool and createMakeDirectoryTool (see ts/options.ts). */
export const MOVE_FILE_OPTIONS = declareOptions("createMoveFileTool", FILE_OPS_SPEC);
export const DELETE_FILE_OPTIONS = declareOptions("createDeleteFileTool", FILE_OPS_SPEC);
export const MAKE_DIRECTORY_OPTIONS = declareOptions("createMakeDirectoryTool", FILE_OPS_SPEC);

/** The `move_file` tool. */
export type MoveFileTool = WorkcellTool<"move_file", MoveFileInput, MoveFileOutput, "write">;
/** The `delete_file` tool. */
export type DeleteFileTool = WorkcellTool<"delete_file", DeleteFileInput, DeleteFileOutput, "write">;
/** The `make_directory` tool. */
export type MakeDirectoryTool = WorkcellTool<"make_directory", MakeDirectoryInput, MakeDirectoryOutput, "write">;

const moveParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.move_file.input, {
  from: "The file, symlink or directory to move, such as src/old.ts.",
  to: "Its new path, such as src/new.ts. Missing directories are created.",
  overwrite: "Replace an existing file at to (default false).",
});

const compactMove = withDescriptions(moveParameters, { from: "The path to move, such as src/old.ts.", to: "Its new path.", overwrite: "Replace what is at to." });

/** Creates the `move_file` tool for one workspace root. */
export function createMoveFileTool(root: string, options: FileOpsToolOptions = {}): MoveFileTool {
  checkOptions("createMoveFileTool", MOVE_FILE_OPTIONS, options);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createMoveFileTool", options, ws.canonical);
  const spec: WriteSpec<MoveFileInput, MoveFileOutput> = {
    effect: "write",
    paths: (input) => [input.from, input.to],
    preview: async (input, signal) =>
      toPreview(await callCore(signal, (cancel) => ws.previewMove(input.from, input.to, input.overwrite, cancel, guard))),
    async run(input, context, files) {
      return callCore(context?.signal, (cancel) => ws.moveFile(input.from, input.to, input.overwrite, cancel, guard, hashList(files)));
    },
  };
  return attachHooks({
    name: "move_file",
    effect: "write",
    description:
      options.descriptions === "full"
        ? "Move or rename a file, symlink or directory inside the workspace (a rename, never a copy). Fails with FILE_EXISTS if to exists, unless overwrite is true. Returns { from, to, replaced }."
        : "Move or rename a file, symlink or directory in the workspace.",
    parameters: options.descriptions === "full" ? moveParameters : compactMove,
    outputSchema: TOOL_SCHEMAS.move_file.output,
    validate(input: unknown): MoveFileInput {
      checkSchema(moveParameters, input);
      const { from, to, overwrite } = input as MoveFileInput;
      try {
        binding.checkMoveArguments(from, to);
      } catch (err) {
        throw fromThrown(err);
      }
      return overwrite === undefined ? { from, to } : { from, to, overwrite };
    },
    execute(input: MoveFileInput, context: ToolContext): Promise<MoveFileOutput> {
      return gate.execute("move_file", spec, input, context);
    },
  }, gate.hooks("move_file", spec));
}

const deleteParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.delete_file.input, {
  path: "The file, symlink or empty directory to delete, such as build/old.js.",
});

const compactDelete = withDescriptions(deleteParameters, { path: "Relative to the workspace root." });

/** Creates the `delete_file` tool for one workspace root. */
export function createDeleteFileTool(root: string, options: FileOpsToolOptions = {}): DeleteFileTool {
  checkOptions("createDeleteFileTool", DELETE_FILE_OPTIONS, options);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createDeleteFileTool", options, ws.canonical);
  const spec: WriteSpec<DeleteFileInput, DeleteFileOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) => toPreview(await callCore(signal, (cancel) => ws.previewDelete(input.path, cancel, guard))),
    async run(input, context, files) {
      return callCore(context?.signal, (cancel) => ws.deleteFile(input.path, cancel, guard, hashList(files)));
    },
  };
  return attachHooks({
    name: "delete_file",
    effect: "write",
    description:
      options.descriptions === "full"
        ? "Delete a file or symlink (the link itself, never its target), or an empty directory. Returns { path, kind }."
        : "Delete a file, a symlink (not its target) or an empty directory.",
    parameters: options.descriptions === "full" ? deleteParameters : compactDelete,
    outputSchema: TOOL_SCHEMAS.delete_file.output,
    validate(input: unknown): DeleteFileInput {
      checkSchema(deleteParameters, input);
      const { path } = input as DeleteFileInput;
      try {
        binding.checkNameArgument(path);
      } catch (err) {
        throw fromThrown(err);
      }
      return { path };
    },
    execute(input: DeleteFileInput, context: ToolContext): Promise<DeleteFileOutput> {
      return gate.execute("delete_file", spec, input, context);
    },
  }, gate.hooks("delete_file", spec));
}

const mkdirParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.make_directory.input, {
  path: "The directory to create, with any missing parents, such as src/components.",
});

const compactMkdir = withDescriptions(mkdirParameters, { path: "Relative to the workspace root." });

/** Creates the `make_directory` tool for one workspace root. */
export function createMakeDirectoryTool(
  root: string,
  options: FileOpsToolOptions = {},
): MakeDirectoryTool {
  checkOptions("createMakeDirectoryTool", MAKE_DIRECTORY_OPTIONS, options);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createMakeDirectoryTool", options, ws.canonical);
  const spec: WriteSpec<MakeDirectoryInput, MakeDirectoryOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) => toPreview(await callCore(signal, (cancel) => ws.previewMakeDirectory(input.path, cancel, guard))),
    async run(input, context, files) {
      return callCore(context?.signal, (cancel) => ws.makeDirectory(input.path, cancel, guard, hashList(files)));
    },
  };
  return attachHooks({
    name: "make_directory",
    effect: "write",
    description:
      options.descriptions === "full"
        ? "Create a directory and its missing parents. Returns { path, created } (false if it already existed)."
        : "Create a directory and its missing parents.",
    parameters: options.descriptions === "full" ? mkdirParameters : compactMkdir,
    outputSchema: TOOL_SCHEMAS.make_directory.output,
    validate(input: unknown): MakeDirectoryInput {
      checkSchema(mkdirParameters, input);
      const { path } = input as MakeDirectoryInput;
      try {
        binding.checkNameArgument(path);
      } catch (err) {
        throw fromThrown(err);
      }
      return { path };
    },
    execute(input: MakeDirectoryInput, context: ToolContext): Promise<MakeDirectoryOutput> {
      return gate.execute("make_directory", spec, input, context);
    },
  }, gate.hooks("make_directory", spec));
}
