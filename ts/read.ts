import { callCore, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { COMPACT_PATH, validatePath } from "./paths.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import { WORKSPACE_ROOT, type Tool, type ToolContext, type WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, type OptionSpecOf } from "./options.js";
import { Gate, gateReadTool, type ApprovalOptions } from "./approval.js";

/** `ReadInput`: the same as `ReadFileInput` (generated from the core). */
export type ReadInput = ReadFileInput;

/**
 * Without `offset` / `limit`: `{ path, content, bytes }`, the whole file (`bytes` = its UTF-8
 * byte length). With either: a window of whole lines (each with its line terminator, so
 * consecutive windows concatenate to the file), and the window fields (`ReadFileWindow`);
 * `bytes` is then the byte length of `content`. One type for both (the window fields optional);
 * `ReadFileOutput` is the exact union, an image included.
 */
export type ReadOutput = ReadFileText & Partial<Omit<ReadFileWindow, keyof ReadFileText>>;

export { isImageOutput, MAX_IMAGE_BYTES, type ReadImageOutput } from "./image.js";
import type { ReadImageOutput } from "./image.js";
import type { ReadFileInput, ReadFileOutput, ReadFileText, ReadFileWindow } from "./generated/contract.js";
export type { ReadFileInput, ReadFileOutput, ReadFileText, ReadFileWindow } from "./generated/contract.js";

/** The `read_file` tool. */
export type ReadFileTool = WorkcellTool<"read_file", ReadFileInput, ReadFileOutput, "read"> & { readonly [WORKSPACE_ROOT]: string };

/** Options of `createReadTool` (and `read` of `createCodingTools`). */
export interface ReadToolOptions extends CommonToolOptions {}

/** The options of createReadTool (see ts/options.ts). */
export const READ_OPTIONS = declareOptions("createReadTool", {
  ...COMMON_TOOL_OPTIONS,
} as const satisfies OptionSpecOf<ReadToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.read_file.input, {
  path: "The file to read, relative to the workspace root, such as src/index.ts.",
  offset: "For files over 64 KiB: the first line to read, from 1. Continue from the nextOffset of the previous result.",
  limit: "For files over 64 KiB: the most lines to read. Default: as many as fit in 65,536 bytes.",
});

const description = [
  "Read a UTF-8 text file from the workspace.",
  "The path is relative to the workspace root and uses / between names (src/index.ts); absolute paths, .., backslashes, drive letters and Windows device names are refused, and symlinks may not lead outside the workspace.",
  "Only regular files of valid UTF-8 are read; a file of at most 65,536 bytes is returned whole as { path, content, bytes, hash } (hash: pass it as expectedHash to write_file or edit_file).",
  "A PNG, JPEG, GIF or WebP image (at most 5 MiB) is returned as { path, mimeType, data (base64), bytes, hash }.",
  "A larger file (up to 64 MiB) is read in windows of whole lines: pass offset (first line, from 1) and/or limit (lines); the result adds { fileBytes, offset, lines, nextOffset?, totalLines? } (hash is the whole file's), holds at most 65,536 bytes, and nextOffset is where to continue (absent at the end of the file).",
].join(" ");

const compactParameters = withDescriptions(parameters, {
  path: COMPACT_PATH,
  offset: "A window's first line, from 1.",
  limit: "Most lines in the window.",
});

const compactDescription =
  "Read a UTF-8 text file. Over 64 KiB, read windows of lines with offset/limit and go on from nextOffset. Its hash is the expectedHash for writing it.";

/** Creates the `read_file` tool for one workspace root. */
export function createReadTool(
  root: string,
  options: ReadToolOptions = {},
): ReadFileTool {
  checkOptions("createReadTool", READ_OPTIONS, options);
  const ws = openWorkspace(root);
  const gate = new Gate("createReadTool", options, ws.canonical);
  return gateReadTool<ReadInput, ReadFileOutput, ReadFileTool>({
    [WORKSPACE_ROOT]: ws.canonical,
    name: "read_file",
    effect: "read",
    description: options.descriptions === "full" ? description : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.read_file.output,
    validate(input: unknown): ReadInput {
      checkSchema(parameters, input);
      const { path, offset, limit } = input as ReadInput;
      validatePath(path, "arguments.path");
      const out: ReadInput = { path };
      if (offset !== undefined) out.offset = offset;
      if (limit !== undefined) out.limit = limit;
      return out;
    },
    // Not async: the call's own promise is returned (no wrapper promise per call); a throw
    // before the call starts still rejects.
    execute(input: ReadInput, context: ToolContext): Promise<ReadOutput | ReadImageOutput> {
      try {
        if (input.offset === undefined && input.limit === undefined) {
          return callCore(context?.signal, (cancel) => ws.readFile(input.path, cancel)) as Promise<ReadOutput | ReadImageOutput>;
        }
        return callCore(context?.signal, (cancel) => ws.readFileWindow(input.path, input.offset, input.limit, cancel));
      } catch (err) {
        return Promise.reject(err);
      }
    },
  }, gate, (i: ReadInput) => [i.path]);
}

