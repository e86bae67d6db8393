import { callCore, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { COMPACT_PATH, pathProperty, validatePath } from "./paths.js";
import { READ_OUTPUT_SCHEMA } from "./output-schemas.js";
import { WORKSPACE_ROOT, type Tool, type ToolContext } from "./tool.js";
import { COMMON_TOOL_OPTIONS, checkOptions, declareOptions, type CommonToolOptions, type OptionSpecOf } from "./options.js";
import { Gate, gateReadTool, type ApprovalOptions } from "./approval.js";

/** The input of read_file: the path, and for a window of lines `offset` (1-based) and `limit`. */
export interface ReadInput {
  path: string;
  /** First line of a window, from 1. With `offset` or `limit`, a window of lines is read. */
  offset?: number;
  /** Most lines in the window. */
  limit?: number;
}

/**
 * Without `offset` / `limit`: `{ path, content, bytes }`, the whole file (`bytes` = its UTF-8
 * byte length). With either: a window of whole lines (each with its line terminator, so
 * consecutive windows concatenate to the file), and the window fields below; `bytes` is then
 * the byte length of `content`.
 */
export interface ReadOutput {
  /** The normalized path. */
  path: string;
  content: string;
  /** UTF-8 byte length of `content` (the whole file when no window was asked for). */
  bytes: number;
  /** The `hashFile` string of the file (the whole file, also for a window): pass it as `expectedHash`. */
  hash: string;
  /** Window only: the file's size in bytes. */
  fileBytes?: number;
  /** Window only: the number of the first line in `content` (the requested offset). */
  offset?: number;
  /** Window only: how many lines `content` holds. */
  lines?: number;
  /** Window only: the offset to read on from; absent when the window reached the end. */
  nextOffset?: number;
  /** Window only: the file's number of lines, when the window reached the end of the file. */
  totalLines?: number;
}

export { isImageOutput, MAX_IMAGE_BYTES, type ReadImageOutput } from "./image.js";
import type { ReadImageOutput } from "./image.js";

/** Options of `createReadTool` (and `read` of `createCodingTools`). */
export interface ReadToolOptions extends CommonToolOptions {}

/** The options of createReadTool (see ts/options.ts). */
export const READ_OPTIONS = declareOptions("createReadTool", {
  ...COMMON_TOOL_OPTIONS,
} as const satisfies OptionSpecOf<ReadToolOptions>);

const parameters: JsonSchema = {
  type: "object",
  properties: {
    path: pathProperty("The file to read, relative to the workspace root, such as src/index.ts."),
    offset: {
      type: "integer",
      minimum: 1,
      maximum: 4294967295,
      description: "For files over 64 KiB: the first line to read, from 1. Continue from the nextOffset of the previous result.",
    },
    limit: {
      type: "integer",
      minimum: 1,
      maximum: 4294967295,
      description: "For files over 64 KiB: the most lines to read. Default: as many as fit in 65,536 bytes.",
    },
  },
  required: ["path"],
  additionalProperties: false,
};

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
): Tool<ReadInput, ReadOutput | ReadImageOutput> & { readonly [WORKSPACE_ROOT]: string } {
  checkOptions("createReadTool", READ_OPTIONS, options);
  const ws = openWorkspace(root);
  const gate = new Gate("createReadTool", options, ws.canonical);
  return gateReadTool({
    [WORKSPACE_ROOT]: ws.canonical,
    name: "read_file",
    effect: "read",
    description: options.descriptions === "full" ? description : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: READ_OUTPUT_SCHEMA,
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

