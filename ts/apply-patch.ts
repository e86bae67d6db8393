import { binding, callNative, fromConversion, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, type JsonSchema } from "./schema.js";
import { ArgumentsReason, invalidArguments } from "./errors.js";
import type { Tool, ToolContext } from "./tool.js";
import { makeWriteGuard, type WriteGuardOptions } from "./guard.js";
import { DEFAULT_MAX_WRITE_BYTES } from "./write.js";
import { checkOptionKeys } from "./file-ops.js";
import { APPROVAL_OPTION_KEYS, Gate, attachHooks, toPreview, type ApprovalOptions, type WriteSpec } from "./approval.js";

export interface ApplyPatchInput {
  /** The patch text, from `*** Begin Patch` to `*** End Patch`. */
  patch: string;
  /** Apply only if each named file still has this approval hash (see `hashFile`); `"absent"` for a file that must not exist. */
  expectedHashes?: Record<string, string>;
}

export interface PatchedFile {
  /** The path as the patch names it (normalized). */
  path: string;
  action: "add" | "delete" | "update";
  /** An Update's `*** Move to` path. */
  movedTo?: string;
  /** UTF-8 byte length of the file after the patch (absent for a delete). */
  bytes?: number;
}

export interface ApplyPatchOutput {
  files: PatchedFile[];
  /** Unified diff of every file (LF, 3 lines of context), cut at 8 KiB with a note; `diff omitted` for a change too large to diff. */
  diff: string;
  /** Set when a hunk matched only while ignoring whitespace or Unicode punctuation. */
  note?: string;
}

/** Largest patch accepted, in UTF-8 bytes, and most files per patch. */
export const MAX_PATCH_BYTES = 262_144;
export const MAX_PATCH_FILES = 100;
const CEILING_MAX_WRITE_BYTES = 16 * 1024 * 1024;

export interface ApplyPatchToolOptions extends WriteGuardOptions, ApprovalOptions {
  /** Largest file a patch may produce or update, in UTF-8 bytes (default 65,536, write_file's limit; at most 16 MiB). */
  maxContentBytes?: number;
}

const parameters: JsonSchema = {
  type: "object",
  properties: {
    patch: { type: "string", description: "The patch, from *** Begin Patch to *** End Patch." },
    expectedHashes: {
      type: "object",
      description: 'Optional: { path: hash } from read_file; the patch applies only if each file still has it ("absent": must not exist).',
    },
  },
  required: ["patch"],
  additionalProperties: false,
};

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

/** Creates the `apply_patch` tool for one workspace root. */
export function createApplyPatchTool(
  root: string,
  options: ApplyPatchToolOptions = {},
): Tool<ApplyPatchInput, ApplyPatchOutput> & { readonly effect: "write" } {
  checkOptionKeys(options, ["maxContentBytes", "protect", "refuseLinksOnWrite", ...APPROVAL_OPTION_KEYS]);
  const limit = options.maxContentBytes ?? DEFAULT_MAX_WRITE_BYTES;
  if (!Number.isSafeInteger(limit) || limit < 0 || limit > CEILING_MAX_WRITE_BYTES) {
    throw new TypeError(`workcell: maxContentBytes must be an integer from 0 to ${CEILING_MAX_WRITE_BYTES}`);
  }
  const guard = makeWriteGuard(options);
  const ws = openWorkspace(root);
  const hashList = (hashes: Record<string, string> | undefined) =>
    hashes === undefined ? undefined : Object.entries(hashes).map(([path, hash]) => ({ path, hash }));
  const gate = new Gate("createApplyPatchTool", options, ws.canonical);
  const spec: WriteSpec<ApplyPatchInput, ApplyPatchOutput> = {
    effect: "write",
    paths(input) {
      try {
        return binding.patchPaths(input.patch);
      } catch (err) {
        const converted = fromConversion(err);
        throw converted === err ? fromThrown(err) : converted;
      }
    },
    preview: async (input, signal) =>
      toPreview(await callNative(signal, (cancel) => ws.previewPatch(input.patch, hashList(input.expectedHashes), limit, cancel, guard))),
    async run(input, context, files) {
      // Approved: every file the patch touches held to its preview hash (the model's own
      // expectedHashes were checked by the preview and are the same strings).
      const expected = files ? hashList(files) : hashList(input.expectedHashes);
      // Rust repeats every check of `validate`; the queue positions are taken synchronously here.
      const r = await callNative(context?.signal, (cancel) => ws.applyPatch(input.patch, expected, limit, cancel, guard));
      const out = r.files!.map((f) => {
        const o: PatchedFile = { path: f.path, action: f.action as PatchedFile["action"] };
        if (f.movedTo != null) o.movedTo = f.movedTo;
        if (f.bytes != null) o.bytes = f.bytes;
        return o;
      });
      return r.note != null ? { files: out, diff: r.diff!, note: r.note } : { files: out, diff: r.diff! };
    },
  };
  return attachHooks({
    name: "apply_patch",
    effect: "write",
    description: DESCRIPTION,
    parameters,
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
        binding.checkPatchArguments(patch, hashList(hashes), limit);
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
