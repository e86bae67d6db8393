import { binding, callCore, fromConversion, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import { ArgumentsReason, invalidArguments } from "./errors.js";
import { WORKSPACE_ROOT, type ToolContext, type WorkcellTool } from "./tool.js";
import { GUARD_OPTIONS, makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { DEFAULT_MAX_WRITE_BYTES, MAX_CONTENT_BYTES_OPTION } from "./write.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, type OptionSpecOf } from "./options.js";
import { Gate, attachHooks, toPreview, type WriteSpec } from "./approval.js";
import type { ApplyPatchInput, ApplyPatchOutput } from "./generated/contract.js";
export type { ApplyPatchInput, ApplyPatchOutput } from "./generated/contract.js";

/** One file of an applied patch: its path, what was done to it, where it moved, its new size. */
export type PatchedFile = ApplyPatchOutput["files"][number];

/** Largest patch accepted, in UTF-8 bytes, and most files per patch. */
export const MAX_PATCH_BYTES = 262_144;
/** The most files one patch may touch (100). */
export const MAX_PATCH_FILES = 100;

/**
 * Options of `createApplyPatchTool` (and `applyPatch` of `createCodingTools`): the write guard,
 * approval, `maxContentBytes`.
 */
export interface ApplyPatchToolOptions extends WriteGuardOptions, CommonToolOptions {
  /** Largest file a patch may produce or update, in UTF-8 bytes (default 65,536, write_file's limit; at most 16 MiB). */
  maxContentBytes?: number;
}

/** The options of createApplyPatchTool (see ts/options.ts). */
export const APPLY_PATCH_OPTIONS = declareOptions("createApplyPatchTool", {
  ...COMMON_TOOL_OPTIONS,
  ...GUARD_OPTIONS,
  maxContentBytes: MAX_CONTENT_BYTES_OPTION,
} as const satisfies OptionSpecOf<ApplyPatchToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.apply_patch.input, {
  patch: "The patch, from *** Begin Patch to *** End Patch.",
  expectedHashes: 'Optional: { path: hash } from read_file; the patch applies only if each file still has it ("absent": must not exist).',
});

const DESCRIPTION = [
  "Apply a patch to several files at once, all or nothing. Format:",
  "*** Begin Patch",
  "*** Add File: path (then +lines)",
  "*** Delete File: path",
  "*** Update File: path",
  "*** Move to: path (optional)",
  "@@ line above the change (optional, e.g. a def)",
  " context",
  "-old",
  "+new",
  "*** End of File (optional)",
  "*** End Patch",
  "Paths are workspace-relative. Give 3 context lines per change. Returns { files, diff, note? }.",
].join("\n");

const compactParameters = withDescriptions(parameters, {
  expectedHashes: "Optional: { path: read_file's hash }; fails if a file changed since.",
});

const COMPACT_DESCRIPTION = [
  "Change several files at once, all or nothing, with a patch:",
  "*** Begin Patch",
  "*** Add File: path (then +lines)",
  "*** Delete File: path",
  "*** Update File: path",
  "*** Move to: path (optional)",
  "@@ line above the change (optional)",
  " context",
  "-old",
  "+new",
  "*** End Patch",
  "Paths are workspace-relative; give 3 context lines.",
].join("\n");

/** The `apply_patch` tool. */
export type ApplyPatchTool = WorkcellTool<"apply_patch", ApplyPatchInput, ApplyPatchOutput, "write"> & { readonly [WORKSPACE_ROOT]: string };

/** Creates the `apply_patch` tool for one workspace root. */
export function createApplyPatchTool(
  root: string,
  options: ApplyPatchToolOptions = {},
): ApplyPatchTool {
  checkOptions("createApplyPatchTool", APPLY_PATCH_OPTIONS, options);
  const limit = options.maxContentBytes ?? DEFAULT_MAX_WRITE_BYTES;
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const hashList = (hashes: Record<string, string> | undefined) =>
    hashes === undefined ? undefined : Object.entries(hashes).map(([path, hash]) => ({ path, hash }));
  const gate = new Gate("createApplyPatchTool", options, ws.canonical);
  const spec: WriteSpec<ApplyPatchInput, ApplyPatchOutput> = {
    effect: "write",
    paths(input) {
      try {
        return binding.patchPaths(input.patch, ws.canonical);
      } catch (err) {
        const converted = fromConversion(err);
        throw converted === err ? fromThrown(err) : converted;
      }
    },
    preview: async (input, signal) =>
      toPreview(await callCore(signal, (cancel) => ws.previewPatch(input.patch, hashList(input.expectedHashes), limit, cancel, guard))),
    async run(input, context, files) {
      // Approved: every file the patch touches held to its preview hash (the model's own
      // expectedHashes were checked by the preview and are the same strings).
      const expected = files ? hashList(files) : hashList(input.expectedHashes);
      // Rust repeats every check of `validate`; the queue positions are taken synchronously here.
      return callCore(context?.signal, (cancel) => ws.applyPatch(input.patch, expected, limit, cancel, guard), context?.onProgress);
    },
  };
  return attachHooks({
    [WORKSPACE_ROOT]: ws.canonical,
    name: "apply_patch",
    effect: "write",
    description: options.descriptions === "full" ? DESCRIPTION : COMPACT_DESCRIPTION,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.apply_patch.output,
    validate(input: unknown): ApplyPatchInput {
      checkSchema(parameters, input);
      const { patch, expectedHashes } = input as ApplyPatchInput;
      let hashes: Record<string, string> | undefined;
      if (expectedHashes !== undefined) {
        const entries = Object.entries(expectedHashes);
        if (entries.length > 2 * MAX_PATCH_FILES) {
          throw invalidArguments(ArgumentsReason.INVALID_ARGUMENTS_SHAPE, "expectedHashes names more files than a patch may touch", {
            at: "arguments.expectedHashes",
          });
        }
        for (const [path, hash] of entries) checkSchema({ type: "string" }, hash, `arguments.expectedHashes.${path}`);
        // fromEntries defines own properties: a "__proto__" key stays a key.
        hashes = Object.fromEntries(entries) as Record<string, string>;
      }
      try {
        binding.checkPatchArguments(patch, hashList(hashes), limit, ws.canonical);
      } catch (err) {
        throw fromThrown(err);
      }
      return hashes === undefined ? { patch } : { patch, expectedHashes: hashes };
    },
    execute(input: ApplyPatchInput, context: ToolContext): Promise<ApplyPatchOutput> {
      return gate.execute("apply_patch", spec, input, context);
    },
  }, gate.hooks("apply_patch", spec));
}
