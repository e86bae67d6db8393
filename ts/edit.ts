import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { COMPACT_PATH } from "./paths.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, type OptionSpecOf } from "./options.js";
import { COMPACT_EXPECTED_HASH, GUARD_OPTIONS, EXPECTED_HASH, makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { DEFAULT_MAX_WRITE_BYTES, MAX_CONTENT_BYTES_OPTION } from "./write.js";
import { Gate, attachHooks, toPreview, type ApprovalOptions, type WriteSpec } from "./approval.js";
import type { EditFileInput, EditFileOutput } from "./generated/contract.js";
export type { EditFileInput, EditFileOutput } from "./generated/contract.js";

/** The input of edit_file (the generated `EditFileInput`). */
export type EditInput = EditFileInput;

/** The result of edit_file (the generated `EditFileOutput`). */
export type EditOutput = EditFileOutput;

/** Most edits in one call. */
export const MAX_EDITS = 50;

/**
 * Options of `createEditTool` (and `edit` of `createCodingTools`): the write guard, approval,
 * `maxContentBytes`.
 */
export interface EditToolOptions extends WriteGuardOptions, CommonToolOptions {
  /** Largest file edited and largest result, in UTF-8 bytes (default 65,536; at most 16 MiB). */
  maxContentBytes?: number;
}

/** The options of createEditTool (see ts/options.ts). */
export const EDIT_OPTIONS = declareOptions("createEditTool", {
  ...COMMON_TOOL_OPTIONS,
  ...GUARD_OPTIONS,
  maxContentBytes: MAX_CONTENT_BYTES_OPTION,
} as const satisfies OptionSpecOf<EditToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.edit_file.input, {
  path: "The file to edit, relative to the workspace root, such as src/index.ts. It must exist.",
  edits: `1 to ${MAX_EDITS} replacements, all located in the file as it is before this call.`,
  "edits.oldText": "Text copied exactly from the file (whitespace and line breaks included); it must occur exactly once.",
  "edits.newText": "The text that replaces oldText (may be empty to delete it).",
  expectedHash: EXPECTED_HASH,
});

const compactParameters = withDescriptions(parameters, {
  path: COMPACT_PATH,
  edits: "Replacements, applied together.",
  "edits.oldText": "Exact text of the file, whitespace included, occurring once.",
  "edits.newText": "Its replacement (may be empty).",
  expectedHash: COMPACT_EXPECTED_HASH,
});

const compactDescription = "Edit a text file by exact replacement of oldText with newText. Returns a diff.";

function describe(limit: number): string {
  return [
    "Edit a UTF-8 text file in the workspace by exact text replacement: each edit replaces oldText with newText.",
    "Every oldText is looked up in the file as it was before the call and must occur exactly once (EDIT_NOT_FOUND names the closest line; EDIT_NOT_UNIQUE gives the count: add surrounding lines to make it unique); edits may not overlap.",
    "Line breaks may be written as \\n in a file with CRLF line endings: they are matched and written back as CRLF. A byte order mark is kept.",
    `All edits are applied together in one atomic write; the file and the result may hold at most ${limit.toLocaleString("en-US")} UTF-8 bytes.`,
    "The path is relative to the workspace root and uses / between names (src/index.ts); symlinks may not lead outside the workspace; paths protected by the host (by default .git and everything in it) are refused with PATH_PROTECTED.",
    "Returns { path, edits, bytes, diff } with a unified diff of the change.",
  ].join(" ");
}

/** The `edit_file` tool. */
export type EditFileTool = WorkcellTool<"edit_file", EditFileInput, EditFileOutput, "write">;

/** Creates the `edit_file` tool for one workspace root. */
export function createEditTool(root: string, options: EditToolOptions = {}): EditFileTool {
  checkOptions("createEditTool", EDIT_OPTIONS, options);
  const limit = options.maxContentBytes ?? DEFAULT_MAX_WRITE_BYTES;
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createEditTool", options, ws.canonical);
  const spec: WriteSpec<EditInput, EditOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) =>
      toPreview(await callCore(signal, (cancel) => ws.previewEdit(input.path, input.edits, limit, cancel, input.expectedHash, guard))),
    async run(input, context, files) {
      const expected = files ? Object.values(files)[0] : input.expectedHash;
      // Rust repeats every check of `validate`; the queue position is taken synchronously here.
      return callCore(context?.signal, (cancel) => ws.editFile(input.path, input.edits, limit, cancel, expected, guard));
    },
  };
  return attachHooks({
    name: "edit_file",
    effect: "write",
    description: options.descriptions === "full" ? describe(limit) : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.edit_file.output,
    validate(input: unknown): EditInput {
      checkSchema(parameters, input);
      const { path, edits, expectedHash } = input as EditInput;
      const copy = edits.map((e) => ({ oldText: e.oldText, newText: e.newText }));
      try {
        binding.checkEditArguments(path, copy, limit);
      } catch (err) {
        throw fromThrown(err);
      }
      return expectedHash === undefined ? { path, edits: copy } : { path, edits: copy, expectedHash };
    },
    execute(input: EditInput, context: ToolContext): Promise<EditOutput> {
      return gate.execute("edit_file", spec, input, context);
    },
  }, gate.hooks("edit_file", spec));
}
