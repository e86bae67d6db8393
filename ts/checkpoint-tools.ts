// The model's checkpoint tools (contract §19): checkpoint, list_checkpoints, diff_checkpoint
// (effect read: they change nothing in the workspace) and rewind_checkpoint (effect write: asks
// under approvalFor.write, and the diff the person approves is the change the rewind makes:
// the rewind runs only while the change set still has the approved hash).
import { Gate, attachHooks, gateReadTool, toPreview, type ApprovalOptions, type WriteSpec } from "./approval.js";
import { createCheckpoints, rewindApproval, type CheckpointsOptions } from "./checkpoints.js";
import { ToolError } from "./errors.js";
import type { DescriptionStyle } from "./common-options.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import type * as C from "./generated/contract.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import type { Tool, ToolContext } from "./tool.js";

// The tools' shapes are the core's (crates/workcell-core/src/contract/checkpoints.rs).
export type {
  CheckpointInput,
  CheckpointOutput,
  DiffCheckpointInput,
  DiffCheckpointOutput,
  ListCheckpointsInput,
  ListCheckpointsOutput,
  RewindCheckpointInput,
  RewindCheckpointOutput,
} from "./generated/contract.js";
/** One of the checkpoint tools (contract §19). */
export type CheckpointTool =
  | Tool<"checkpoint", C.CheckpointInput, C.CheckpointOutput>
  | Tool<"list_checkpoints", C.ListCheckpointsInput, C.ListCheckpointsOutput>
  | Tool<"diff_checkpoint", C.DiffCheckpointInput, C.DiffCheckpointOutput>
  | Tool<"rewind_checkpoint", C.RewindCheckpointInput, C.RewindCheckpointOutput>;

/** The options of the checkpoint tools. */
export interface CheckpointToolsOptions extends ApprovalOptions {
  /** Which description each tool gives the model: "compact" (default) or "full". */
  descriptions?: DescriptionStyle;
  /** The checkpoints' own options (store, bounds, exclude, protect). */
  checkpoints?: CheckpointsOptions;
}

const idText = "A checkpoint id, as checkpoint or list_checkpoints returned it.";
const checkpointParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.checkpoint.input, {
  label: "A short name for the checkpoint, such as before refactoring.",
});
const listParameters: JsonSchema = TOOL_SCHEMAS.list_checkpoints.input;
const diffParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.diff_checkpoint.input, { id: idText });
const rewindParameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.rewind_checkpoint.input, {
  id: idText,
  expectedHash: "The hash diff_checkpoint returned for the change set you reviewed.",
});

/** The four checkpoint tools for one workspace root, sharing one store. */
export function createCheckpointTools(root: string, options: CheckpointToolsOptions = {}): CheckpointTool[] {
  const cps = createCheckpoints(root, options.checkpoints);
  const gate = new Gate("createCheckpointTools", options, root);
  const full = options.descriptions === "full";
  const checkpoint = gateReadTool<C.CheckpointInput, C.CheckpointOutput, Tool<"checkpoint", C.CheckpointInput, C.CheckpointOutput>>(
    {
      name: "checkpoint",
      effect: "read",
      description: full
        ? "Record the whole workspace as it is now (every file and symlink, except what .gitignore, .ignore and the host exclude; .git never), so that diff_checkpoint shows what changed since and rewind_checkpoint can put it back. Changes nothing in the workspace. Returns { id, label?, createdAt, files, bytes, notKept, dropped }."
        : "Record the workspace now, to see later what changed (diff_checkpoint) and undo it (rewind_checkpoint).",
      parameters: checkpointParameters,
      outputSchema: TOOL_SCHEMAS.checkpoint.output,
      validate(input: unknown) {
        checkSchema(checkpointParameters, input);
        const { label } = input as { label?: string };
        return label === undefined ? {} : { label };
      },
      execute: (input, context: ToolContext) => cps.create(input, { signal: context?.signal, onProgress: context?.onProgress }),
    },
    gate,
    () => ["."],
  );
  const list = gateReadTool<C.ListCheckpointsInput, C.ListCheckpointsOutput, Tool<"list_checkpoints", C.ListCheckpointsInput, C.ListCheckpointsOutput>>(
    {
      name: "list_checkpoints",
      effect: "read",
      description: "List the checkpoints of this workspace, oldest first: { checkpoints: [{ id, label?, createdAt, files, bytes }] }.",
      parameters: listParameters,
      outputSchema: TOOL_SCHEMAS.list_checkpoints.output,
      validate(input: unknown) {
        checkSchema(listParameters, input);
        return {};
      },
      execute: async (_input, context: ToolContext) => ({ checkpoints: await cps.list({ signal: context?.signal }) }),
    },
    gate,
    () => ["."],
  );
  const diff = gateReadTool<C.DiffCheckpointInput, C.DiffCheckpointOutput, Tool<"diff_checkpoint", C.DiffCheckpointInput, C.DiffCheckpointOutput>>(
    {
      name: "diff_checkpoint",
      effect: "read",
      description: full
        ? "Show everything that changed in the workspace since a checkpoint, whoever changed it: { summary, diff, files: [{ path, action }], hash, truncated? } with action added, modified, deleted, mode or type. The diff is at most 1 MiB; binary files are named. Pass hash to rewind_checkpoint to undo exactly this change set."
        : "What changed since a checkpoint: files with actions, a unified diff, and the hash rewind_checkpoint needs.",
      parameters: diffParameters,
      outputSchema: TOOL_SCHEMAS.diff_checkpoint.output,
      validate(input: unknown) {
        checkSchema(diffParameters, input);
        return { id: (input as { id: string }).id };
      },
      execute: (input, context: ToolContext) => cps.diff(input.id, { signal: context?.signal, onProgress: context?.onProgress }),
    },
    gate,
    () => ["."],
  );
  type RewindInput = C.RewindCheckpointInput;
  const spec: WriteSpec<RewindInput, C.RewindCheckpointOutput> = {
    effect: "write",
    paths: () => ["."],
    async preview(input, signal) {
      // The change the rewind makes, whole (every file's complete diff; binary and large
      // files named by hash and size), each path with the change set's hash.
      return toPreview(await rewindApproval(cps, input.id, { signal }));
    },
    async run(input, context, files) {
      // Approved: the change set shown must be the one the model names, and still be the
      // workspace's (the core recomputes it and refuses any other).
      if (files !== undefined && Object.values(files).some((h) => h !== input.expectedHash)) {
        throw new ToolError("TARGET_CHANGED", "the change set approved is not the one expectedHash names; nothing was rewound", {
          hint: "call diff_checkpoint again and rewind with the hash it returns",
        });
      }
      return cps.rewind(input.id, { expectedHash: input.expectedHash }, { signal: context?.signal, onProgress: context?.onProgress });
    },
  };
  const rewind: Tool<"rewind_checkpoint", RewindInput, C.RewindCheckpointOutput> = attachHooks(
    {
      name: "rewind_checkpoint",
      effect: "write",
      description: full
        ? "Put the workspace back as it was at a checkpoint: every path diff_checkpoint listed (content, mode, symlink text; deleted files recreated, added files removed), all or nothing, and only while the workspace is still what that diff showed (expectedHash; TARGET_CHANGED otherwise). Files not listed are not touched. Returns { id, summary, files }."
        : "Undo every change since a checkpoint, all or nothing; expectedHash is diff_checkpoint's hash.",
      parameters: rewindParameters,
      outputSchema: TOOL_SCHEMAS.rewind_checkpoint.output,
      validate(input: unknown): RewindInput {
        checkSchema(rewindParameters, input);
        const { id, expectedHash } = input as RewindInput;
        return { id, expectedHash };
      },
      execute(input: RewindInput, context: ToolContext) {
        return gate.execute("rewind_checkpoint", spec, input, context);
      },
    },
    gate.hooks("rewind_checkpoint", spec),
  );
  return [checkpoint, list, diff, rewind];
}

