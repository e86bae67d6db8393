import { callCore, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import { Gate, gateReadTool, type ApprovalOptions } from "./approval.js";
import { validatePath } from "./paths.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, type OptionSpecOf } from "./options.js";
import type { ListFilesInput, ListFilesOutput } from "./generated/contract.js";
export type { ListFilesInput, ListFilesOutput } from "./generated/contract.js";

/** `ListInput`: the same as `ListFilesInput` (generated from the core). */
export type ListInput = ListFilesInput;

/** `ListOutput`: the same as `ListFilesOutput` (generated from the core). */
export type ListOutput = ListFilesOutput;

/** Options of `createListTool` (and `list` of `createCodingTools`). */
export interface ListToolOptions extends CommonToolOptions {}

/** The options of createListTool (see ts/options.ts). */
export const LIST_OPTIONS = declareOptions("createListTool", {
  ...COMMON_TOOL_OPTIONS,
} as const satisfies OptionSpecOf<ListToolOptions>);

/**
 * Validates the directory a walk starts from: a workspace path, or a spelling of the root
 * itself (`.`, `./`, empty), which gives `undefined`. The Rust core applies the same rule.
 */
export function validateStartPath(path: string, where: string): string | undefined {
  if (!path.startsWith("/") && path.split("/").every((s) => s === "" || s === ".")) return undefined;
  return validatePath(path, where);
}

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.list_files.input, {
  path: "The directory to list, relative to the workspace root, such as src. Omit it (or pass .) to list the root.",
  depth: "How many levels to show: 1 lists only the directory's own entries. Default 2.",
  limit: "Most entries to show. Default 500.",
  gitignore: "Leave out files that .gitignore ignores, and the .git directory. Default true; false shows everything.",
});

const description = [
  "List the files and directories beneath a directory of the workspace (the root by default).",
  "Entries are paths relative to the workspace root, in tree order: directories end with /, symlinks show as `name -> target` and are never followed or entered, FIFOs, sockets and devices show their type in brackets.",
  "Shows depth levels (default 2, max 10) and at most limit entries (default 500, max 5,000), shallowest first; files ignored by .gitignore are left out unless gitignore is false.",
  "When entries are left out, truncated is true and note says how many and why; list a subdirectory with path to see more.",
  "Paths use / between names (src/lib); absolute paths, .., backslashes and drive letters are refused.",
  "Returns { path, entries, truncated, notShown, note? }.",
].join(" ");

const compactParameters = withDescriptions(parameters, {
  path: "The directory, relative to the workspace root (default: the root).",
  depth: "Levels shown (default 2).",
  limit: "Most entries (default 500).",
  gitignore: "false: show what .gitignore ignores too.",
});

const compactDescription = "List the files beneath a directory as workspace-relative paths, directories ending in /; note says what was left out.";

/** The `list_files` tool. */
export type ListFilesTool = WorkcellTool<"list_files", ListFilesInput, ListFilesOutput, "read">;

/** Creates the `list_files` tool for one workspace root. */
export function createListTool(root: string, options: ListToolOptions = {}): ListFilesTool {
  checkOptions("createListTool", LIST_OPTIONS, options);
  const ws = openWorkspace(root);
  const gate = new Gate("createListTool", options, ws.canonical);
  return gateReadTool<ListInput, ListOutput, ListFilesTool>({
    name: "list_files",
    effect: "read",
    description: options.descriptions === "full" ? description : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.list_files.output,
    validate(input: unknown): ListInput {
      checkSchema(parameters, input);
      const { path, depth, limit, gitignore } = input as ListInput;
      const out: ListInput = {};
      const start = path === undefined ? undefined : validateStartPath(path, "arguments.path");
      if (start !== undefined) out.path = start;
      if (depth !== undefined) out.depth = depth;
      if (limit !== undefined) out.limit = limit;
      if (gitignore !== undefined) out.gitignore = gitignore;
      return out;
    },
    async execute(input: ListInput, context: ToolContext): Promise<ListOutput> {
      return callCore(context?.signal, (cancel) => ws.listFiles(input.path, input.depth, input.limit, input.gitignore, cancel), context?.onProgress);
    },
  }, gate, (i: ListInput) => [i.path ?? "."]);
}
