import { binding, callNative, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, type JsonSchema } from "./schema.js";
import { pathProperty } from "./paths.js";
import type { Tool, ToolContext } from "./tool.js";
import { makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { APPROVAL_OPTION_KEYS, Gate, attachHooks, hashList, toPreview, type ApprovalOptions, type WriteSpec } from "./approval.js";

/** Throws a TypeError for an option key the factory does not know, naming the nearest one. */
export function checkOptionKeys(options: object, known: readonly string[], where = "options"): void {
  if (typeof options !== "object" || options === null) throw new TypeError(`workcell: ${where} must be an object`);
  for (const key of Object.keys(options)) {
    if (known.includes(key)) continue;
    const near = known.map((k) => [k, distance(k, key)] as const).sort((a, b) => a[1] - b[1])[0];
    const hint = near && near[1] <= 3 ? `; did you mean ${near[0]}?` : `; known: ${known.join(", ")}`;
    throw new TypeError(`workcell: ${key}: unknown option${hint}`);
  }
}

function distance(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0]!;
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = d[j]!;
      d[j] = Math.min(d[j]! + 1, d[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return d[b.length]!;
}

const GUARD_KEYS = ["protect", "refuseLinksOnWrite", ...APPROVAL_OPTION_KEYS] as const;

export interface MoveFileInput {
  from: string;
  to: string;
  /** Replace what is at `to` (default false: FILE_EXISTS). */
  overwrite?: boolean;
}
export interface MoveFileOutput {
  from: string;
  to: string;
  /** Whether something at `to` was replaced. */
  replaced: boolean;
}
export interface DeleteFileInput {
  path: string;
}
export interface DeleteFileOutput {
  path: string;
  kind: "file" | "symlink" | "directory";
}
export interface MakeDirectoryInput {
  path: string;
}
export interface MakeDirectoryOutput {
  path: string;
  /** Whether the directory did not exist before. */
  created: boolean;
}

export interface FileOpsToolOptions extends WriteGuardOptions, ApprovalOptions {}

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

/** Creates the `move_file` tool for one workspace root. */
export function createMoveFileTool(root: string, options: FileOpsToolOptions = {}): WriteTool<MoveFileInput, MoveFileOutput> {
  checkOptionKeys(options, GUARD_KEYS);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createMoveFileTool", options, ws.canonical);
  const spec: WriteSpec<MoveFileInput, MoveFileOutput> = {
    effect: "write",
    paths: (input) => [input.from, input.to],
    preview: async (input, signal) =>
      toPreview(await callNative(signal, (cancel) => ws.previewMove(input.from, input.to, input.overwrite, cancel, guard))),
    async run(input, context, files) {
      const r = await callNative(context?.signal, (cancel) =>
        ws.moveFile(input.from, input.to, input.overwrite, cancel, guard, hashList(files)),
      );
      return { from: r.from!, to: r.to!, replaced: r.replaced! };
    },
  };
  return attachHooks({
    name: "move_file",
    effect: "write",
    description:
      "Move or rename a file, symlink or directory inside the workspace (a rename, never a copy). Fails with FILE_EXISTS if to exists, unless overwrite is true. Returns { from, to, replaced }.",
    parameters: moveParameters,
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

/** Creates the `delete_file` tool for one workspace root. */
export function createDeleteFileTool(root: string, options: FileOpsToolOptions = {}): WriteTool<DeleteFileInput, DeleteFileOutput> {
  checkOptionKeys(options, GUARD_KEYS);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createDeleteFileTool", options, ws.canonical);
  const spec: WriteSpec<DeleteFileInput, DeleteFileOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) => toPreview(await callNative(signal, (cancel) => ws.previewDelete(input.path, cancel, guard))),
    async run(input, context, files) {
      const r = await callNative(context?.signal, (cancel) => ws.deleteFile(input.path, cancel, guard, hashList(files)));
      return { path: r.path!, kind: r.kind! as DeleteFileOutput["kind"] };
    },
  };
  return attachHooks({
    name: "delete_file",
    effect: "write",
    description:
      "Delete a file or symlink (the link itself, never its target), or an empty directory. Returns { path, kind }.",
    parameters: deleteParameters,
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

/** Creates the `make_directory` tool for one workspace root. */
export function createMakeDirectoryTool(
  root: string,
  options: FileOpsToolOptions = {},
): WriteTool<MakeDirectoryInput, MakeDirectoryOutput> {
  checkOptionKeys(options, GUARD_KEYS);
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createMakeDirectoryTool", options, ws.canonical);
  const spec: WriteSpec<MakeDirectoryInput, MakeDirectoryOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) => toPreview(await callNative(signal, (cancel) => ws.previewMakeDirectory(input.path, cancel, guard))),
    async run(input, context, files) {
      const r = await callNative(context?.signal, (cancel) => ws.makeDirectory(input.path, cancel, guard, hashList(files)));
      return { path: r.path!, created: r.created! };
    },
  };
  return attachHooks({
    name: "make_directory",
    effect: "write",
    description: "Create a directory and its missing parents. Returns { path, created } (false if it already existed).",
    parameters: mkdirParameters,
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
