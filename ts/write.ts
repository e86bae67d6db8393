import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { COMPACT_PATH } from "./paths.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import { COMPACT_EXPECTED_HASH, GUARD_OPTIONS, EXPECTED_HASH, makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { Gate, attachHooks, toPreview, type ApprovalOptions, type WriteSpec } from "./approval.js";
import type { WriteFileInput, WriteFileOutput } from "./generated/contract.js";
export type { WriteFileInput, WriteFileOutput } from "./generated/contract.js";

/** `WriteInput`: the same as `WriteFileInput` (generated from the core). */
export type WriteInput = WriteFileInput;

/** `WriteOutput`: the same as `WriteFileOutput` (generated from the core). */
export type WriteOutput = WriteFileOutput;

/** Default and ceiling of `maxContentBytes`. */
export const DEFAULT_MAX_WRITE_BYTES: number = binding.MAX_WRITE_BYTES;
const CEILING_MAX_WRITE_BYTES = binding.MAX_WRITE_BYTES_CEILING;

/**
 * Options of `createWriteTool` (and `write` of `createCodingTools`): the write guard, approval,
 * `maxContentBytes`.
 */
export interface WriteToolOptions extends WriteGuardOptions, CommonToolOptions {
  /** Largest content accepted, in UTF-8 bytes (default 65,536; at most 16 MiB). */
  maxContentBytes?: number;
}

/** The `maxContentBytes` entry of the writing tools' specs (the range is the core's). */
export const MAX_CONTENT_BYTES_OPTION = option.integer(0, CEILING_MAX_WRITE_BYTES, "largest content, in UTF-8 bytes");

/** The options of createWriteTool (see ts/options.ts). */
export const WRITE_OPTIONS = declareOptions("createWriteTool", {
  ...COMMON_TOOL_OPTIONS,
  ...GUARD_OPTIONS,
  maxContentBytes: MAX_CONTENT_BYTES_OPTION,
} as const satisfies OptionSpecOf<WriteToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.write_file.input, {
  path: "The file to write, relative to the workspace root, such as src/index.ts. Missing directories are created.",
  content: "The complete new content of the file (UTF-8 text).",
  expectedHash: EXPECTED_HASH,
});

const compactParameters = withDescriptions(parameters, {
  path: COMPACT_PATH,
  content: "The whole new content.",
  expectedHash: COMPACT_EXPECTED_HASH,
});

function describeCompact(limit: number): string {
  return `Create or replace a text file with content of at most ${limit.toLocaleString("en-US")} UTF-8 bytes; missing directories are created.`;
}

function describe(limit: number): string {
  return [
    "Create or replace a UTF-8 text file in the workspace with the given content.",
    "The path is relative to the workspace root and uses / between names (src/index.ts); absolute paths, .., backslashes, drive letters, Windows device names and a trailing / are refused, and symlinks may not lead outside the workspace.",
    "Missing parent directories are created. A symlink to a file inside the workspace is written through (the link stays).",
    `The content replaces the whole file atomically: at most ${limit.toLocaleString("en-US")} UTF-8 bytes.`,
    "An existing file keeps its permissions; a new file gets 0644. Directories, FIFOs, sockets and devices are refused.",
    "Paths protected by the host (by default .git and everything in it) are refused with PATH_PROTECTED.",
    "Returns { path, bytes, created }.",
  ].join(" ");
}

/** The `write_file` tool. */
export type WriteFileTool = WorkcellTool<"write_file", WriteFileInput, WriteFileOutput, "write">;

/** Creates the `write_file` tool for one workspace root. */
export function createWriteTool(root: string, options: WriteToolOptions = {}): WriteFileTool {
  checkOptions("createWriteTool", WRITE_OPTIONS, options);
  const limit = options.maxContentBytes ?? DEFAULT_MAX_WRITE_BYTES;
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const gate = new Gate("createWriteTool", options, ws.canonical);
  const spec: WriteSpec<WriteInput, WriteOutput> = {
    effect: "write",
    paths: (input) => [input.path],
    preview: async (input, signal) =>
      toPreview(await callCore(signal, (cancel) => ws.previewWrite(input.path, input.content, limit, cancel, input.expectedHash, guard))),
    async run(input, context, files) {
      // Approved: held to the hash the preview was computed on (checked in the core under the lock).
      const expected = files ? Object.values(files)[0] : input.expectedHash;
      // Rust repeats every check of `validate`; the queue position is taken synchronously here.
      return callCore(context?.signal, (cancel) => ws.writeFile(input.path, input.content, limit, cancel, expected, guard));
    },
  };
  return attachHooks({
    name: "write_file",
    effect: "write",
    description: options.descriptions === "full" ? describe(limit) : describeCompact(limit),
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.write_file.output,
    validate(input: unknown): WriteInput {
      checkSchema(parameters, input);
      const { path, content, expectedHash } = input as WriteInput;
      try {
        binding.checkWriteArguments(path, content, limit);
      } catch (err) {
        throw fromThrown(err);
      }
      return expectedHash === undefined ? { path, content } : { path, content, expectedHash };
    },
    execute(input: WriteInput, context: ToolContext): Promise<WriteOutput> {
      return gate.execute("write_file", spec, input, context);
    },
  }, gate.hooks("write_file", spec));
}
