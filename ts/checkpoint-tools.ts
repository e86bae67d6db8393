// The model's checkpoint tools (contract §19): checkpoint, list_checkpoints, diff_checkpoint
// (effect read: they change nothing in the workspace) and rewind_checkpoint (effect write: asks
// under approvalFor.write, and the diff the person approves is the change the rewind makes:
// the rewind runs only while the change set still has the approved hash).
import { Gate, attachHooks, gateReadTool, type ApprovalOptions, type WriteSpec } from "./approval.js";
import { createCheckpoints, type CheckpointCreated, type CheckpointDiff, type CheckpointRewound, type CheckpointSummary, type CheckpointsOptions } from "./checkpoints.js";
import { ToolError } from "./errors.js";
import type { DescriptionStyle } from "./common-options.js";
import { checkSchema, type JsonSchema } from "./schema.js";
import type { Tool, ToolContext } from "./tool.js";

/** One of the checkpoint tools (contract §19). */
export type CheckpointTool =
  | Tool<"checkpoint", { label?: string }, CheckpointCreated>
  | Tool<"list_checkpoints", Record<string, never>, { checkpoints: CheckpointSummary[] }>
  | Tool<"diff_checkpoint", { id: string }, CheckpointDiff>
  | Tool<"rewind_checkpoint", { id: string; expectedHash: string }, CheckpointRewound>;

/** The options of the checkpoint tools. */
export interface CheckpointToolsOptions extends ApprovalOptions {
  descriptions?: DescriptionStyle;
  /** The checkpoints' own options (store, bounds, exclude, protect). */
  checkpoints?: CheckpointsOptions;
}

const string: JsonSchema = { type: "string" };
const count: JsonSchema = { type: "integer", minimum: 0 };
const action: JsonSchema = { type: "string", enum: ["added", "modified", "deleted", "mode", "type"] };
function object(properties: Record<string, JsonSchema>, required: readonly string[] = Object.keys(properties)): JsonSchema {
  return { type: "object", properties, required, additionalProperties: false };
}
const summaryItem = object({ id: string, label: string, createdAt: count, files: count, bytes: count }, ["id", "createdAt", "files", "bytes"]);
const changed = { type: "array", items: object({ path: string, action }) } as JsonSchema;

export const CHECKPOINT_OUTPUT_SCHEMA: JsonSchema = object(
  {
    id: string,
    label: string,
    createdAt: count,
    files: count,
    bytes: count,
    notKept: { type: "array", items: object({ path: string, bytes: count }) },
    dropped: { type: "array", items: string },
  },
  ["id", "createdAt", "files", "bytes", "notKept", "dropped"],
);
export const LIST_CHECKPOINTS_OUTPUT_SCHEMA: JsonSchema = object({ checkpoints: { type: "array", items: summaryItem } });
export const DIFF_CHECKPOINT_OUTPUT_SCHEMA: JsonSchema = object(
  { summary: string, diff: string, files: changed, hash: string, truncated: { type: "boolean" } },
  ["summary", "diff", "files", "hash"],
);
export const REWIND_CHECKPOINT_OUTPUT_SCHEMA: JsonSchema = object({ id: string, summary: string, files: changed });

const idProperty: JsonSchema = { type: "string", minLength: 1, maxLength: 64, description: "A checkpoint id, as checkpoint or list_checkpoints returned it." };

const checkpointParameters: JsonSchema = {
  type: "object",
  properties: { label: { type: "string", maxLength: 256, description: "A short name for the checkpoint, such as before refactoring." } },
  additionalProperties: false,
};
const listParameters: JsonSchema = { type: "object", properties: {}, additionalProperties: false };
const diffParameters: JsonSchema = { type: "object", properties: { id: idProperty }, required: ["id"], additionalProperties: false };
const rewindParameters: JsonSchema = {
  type: "object",
  properties: {
    id: idProperty,
    expectedHash: { type: "string", minLength: 1, maxLength: 128, description: "The hash diff_checkpoint returned for the change set you reviewed." },
  },
  required: ["id", "expectedHash"],
  additionalProperties: false,
};

/** The four checkpoint tools for one workspace root, sharing one store. */
export function createCheckpointTools(root: string, options: CheckpointToolsOptions = {}): CheckpointTool[] {
  const cps = createCheckpoints(root, options.checkpoints);
  const gate = new Gate("createCheckpointTools", options, root);
  const full = options.descriptions === "full";
  const checkpoint = gateReadTool<{ label?: string }, CheckpointCreated, Tool<"checkpoint", { label?: string }, CheckpointCreated>>(
    {
      name: "checkpoint",
      effect: "read",
      description: full
        ? "Record the whole workspace as it is now (every file and symlink, except what .gitignore, .ignore and the host exclude; .git never), so that diff_checkpoint shows what changed since and rewind_checkpoint can put it back. Changes nothing in the workspace. Returns { id, label?, createdAt, files, bytes, notKept, dropped }."
        : "Record the workspace now, to see later what changed (diff_checkpoint) and undo it (rewind_checkpoint).",
      parameters: checkpointParameters,
      outputSchema: CHECKPOINT_OUTPUT_SCHEMA,
      validate(input: unknown) {
        checkSchema(checkpointParameters, input);
        const { label } = input as { label?: string };
        return label === undefined ? {} : { label };
      },
      execute: (input, context: ToolContext) => cps.create(input, { signal: context?.signal }),
    },
    gate,
    () => ["."],
  );
  const list = gateReadTool<Record<string, never>, { checkpoints: CheckpointSummary[] }, Tool<"list_checkpoints", Record<string, never>, { checkpoints: CheckpointSummary[] }>>(
    {
      name: "list_checkpoints",
      effect: "read",
      description: "List the checkpoints of this workspace, oldest first: { checkpoints: [{ id, label?, createdAt, files, bytes }] }.",
      parameters: listParameters,
      outputSchema: LIST_CHECKPOINTS_OUTPUT_SCHEMA,
      validate(input: unknown) {
        checkSchema(listParameters, input);
        return {};
      },
      execute: async (_input, context: ToolContext) => ({ checkpoints: await cps.list({ signal: context?.signal }) }),
    },
    gate,
    () => ["."],
  );
  const diff = gateReadTool<{ id: string }, CheckpointDiff, Tool<"diff_checkpoint", { id: string }, CheckpointDiff>>(
    {
      name: "diff_checkpoint",
      effect: "read",
      description: full
        ? "Show everything that changed in the workspace since a checkpoint, whoever changed it: { summary, diff, files: [{ path, action }], hash, truncated? } with action added, modified, deleted, mode or type. The diff is at most 1 MiB; binary files are named. Pass hash to rewind_checkpoint to undo exactly this change set."
        : "What changed since a checkpoint: files with actions, a unified diff, and the hash rewind_checkpoint needs.",
      parameters: diffParameters,
      outputSchema: DIFF_CHECKPOINT_OUTPUT_SCHEMA,
      validate(input: unknown) {
        checkSchema(diffParameters, input);
        return { id: (input as { id: string }).id };
      },
      execute: (input, context: ToolContext) => cps.diff(input.id, { signal: context?.signal }),
    },
    gate,
    () => ["."],
  );
  type RewindInput = { id: string; expectedHash: string };
  const spec: WriteSpec<RewindInput, CheckpointRewound> = {
    effect: "write",
    paths: () => ["."],
    async preview(input, signal) {
      // The change the rewind makes: from the workspace now back to the checkpoint.
      const p = await cps.diff(input.id, { signal, reverse: true });
      const files: Record<string, string> = {};
      for (const f of p.files) Object.defineProperty(files, f.path, { value: p.hash, enumerable: true, writable: true, configurable: true });
      return { summary: p.summary, diff: p.diff, files };
    },
    async run(input, context, files) {
      // Approved: the change set shown must be the one the model names, and still be the
      // workspace's (the core recomputes it and refuses any other).
      if (files !== undefined && Object.values(files).some((h) => h !== input.expectedHash)) {
        throw new ToolError("TARGET_CHANGED", "the change set approved is not the one expectedHash names; nothing was rewound", {
          hint: "call diff_checkpoint again and rewind with the hash it returns",
        });
      }
      return cps.rewind(input.id, { expectedHash: input.expectedHash }, { signal: context?.signal });
    },
  };
  const rewind: Tool<"rewind_checkpoint", RewindInput, CheckpointRewound> = attachHooks(
    {
      name: "rewind_checkpoint",
      effect: "write",
      description: full
        ? "Put the workspace back as it was at a checkpoint: every path diff_checkpoint listed (content, mode, symlink text; deleted files recreated, added files removed), all or nothing, and only while the workspace is still what that diff showed (expectedHash; TARGET_CHANGED otherwise). Files not listed are not touched. Returns { id, summary, files }."
        : "Undo every change since a checkpoint, all or nothing; expectedHash is diff_checkpoint's hash.",
      parameters: rewindParameters,
      outputSchema: REWIND_CHECKPOINT_OUTPUT_SCHEMA,
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

