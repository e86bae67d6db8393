import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { MOVE_FILE_OUTPUT_SCHEMA, DELETE_FILE_OUTPUT_SCHEMA, MAKE_DIRECTORY_OUTPUT_SCHEMA } from "./output-schemas.js";
import { pathProperty } from "./paths.js";
import type { Tool, ToolContext } from "./tool.js";
import { GUARD_OPTIONS, makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { COMMON_TOOL_OPTIONS, checkOptions, declareOptions, type CommonToolOptions, type OptionSpecOf } from "./options.js";

import { Gate, attachHooks, hashList, toPreview, type WriteSpec } from "./approval.js";


/** The input of move_file: `from`, `to`, and `overwrite` to replace an existing `to`. */
export interface MoveFileInput {
  from: string;
  to: string;
  /** Replace what is at `to` (default false: FILE_EXISTS). */
  overwrite?: boolean;
}
/** The result of move_file: both names, and whether an existing `to` was replaced. */
export interface MoveFileOutput {
  from: string;
  to: string;
  /** Whether something at `to` was replaced. */
  replaced: boolean;
}
/** The input of delete_file: the path of a file, a symlink or an empty directory. */
export interface DeleteFileInput {
  path: string;
}
/** The result of delete_file: the path and the kind of what was removed. */
export interface DeleteFileOutput {
  path: string;
  kind: "file" | "symlink" | "directory";
}
/** The input of make_directory: the directory to create, with its missing parents. */
export interface MakeDirectoryInput {
  path: string;
}
/** The result of make_directory: the path, and whether it was created (`false`: it existed). */
export interface MakeDirectoryOutput {
  path: string;
  /** Whether the directory did not exist before. */
  created: boolean;
}

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

type WriteTool<I, O> = Tool<I, O> & { readonly effect: "write" };

const moveParameters: JsonSchema = {
  type: "object",
  properties: {
    from: pathProperty("The file, symlink or directory to move, such as src/old.ts."),
    to: pathProperty("Its new path, such as src/new.ts. Missing directories are created."),
    overwrite: { type: "boolean", description: "Replace an existing file at to (default false)." },
  },
  required: ["from", "to"],
  additionalProperties: false,
};

const compactMove = withDescriptions(moveParameters, { from: "The path to move, such as src/old.ts.", to: "Its new path.", overwrite: "Replace what is at to." });

/** Creates the `move_file` tool for one workspace root. */
export function createMoveFileTool(root: string, options: FileOpsToolOptions = {}): WriteTool<MoveFileInput, MoveFileOutput> {
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
    outputSchema: MOVE_FILE_OUTPUT_SCHEMA,
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

const deleteParameters: JsonSchema = {
  type: "object",
  properties: { path: pathProperty("The file, symlink or empty directory to delete, such as build/old.js.") },
  required: ["path"],
  additionalProperties: false,
};

const compactDelete = withDescriptions(deleteParameters, { path: "Relative to the workspace root." });

/** Creates the `delete_file` tool for one workspace root. */
export function createDeleteFileTool(root: string, options: FileOpsToolOptions = {}): WriteTool<DeleteFileInput, DeleteFileOutput> {
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
    outputSchema: DELETE_FILE_OUTPUT_SCHEMA,
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

const mkdirParameters: JsonSchema = {
  type: "object",
  properties: { path: pathProperty("The directory to create, with any missing parents, such as src/components.") },
  required: ["path"],
  additionalProperties: false,
};

const compactMkdir = withDescriptions(mkdirParameters, { path: "Relative to the workspace root." });

/** Creates the `make_directory` tool for one workspace root. */
export function createMakeDirectoryTool(
  root: string,
  options: FileOpsToolOptions = {},
): WriteTool<MakeDirectoryInput, MakeDirectoryOutput> {
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
    outputSchema: MAKE_DIRECTORY_OUTPUT_SCHEMA,
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
