import { callCore, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { LIST_OUTPUT_SCHEMA } from "./output-schemas.js";
import { Gate, gateReadTool, type ApprovalOptions } from "./approval.js";
import { pathProperty, validatePath } from "./paths.js";
import type { Tool, ToolContext } from "./tool.js";
import { COMMON_TOOL_OPTIONS, checkOptions, declareOptions, type CommonToolOptions, type OptionSpecOf } from "./options.js";

/**
 * The input of list_files: the directory (default the root), the depth (1-10) and the most entries.
 */
export interface ListInput {
  /** The directory to list; the workspace root when absent. */
  path?: string;
  /** Levels shown: 1 = the directory's own entries. Default 2, at most 10. */
  depth?: number;
  /** Most entries shown. Default 500, at most 5,000. */
  limit?: number;
  /** Leave out what `.gitignore` files ignore (and `.git`). Default true. */
  gitignore?: boolean;
}

/** The result of list_files: the entries, whether the list was cut, what was not shown and why. */
export interface ListOutput {
  /** The listed directory, normalized (`.` for the root). */
  path: string;
  /**
   * Workspace-relative entries in tree order: `dir/`, `file`, `link -> target` (a symlink with
   * its target text, never followed), `name [fifo]` (or socket, character device, ...).
   */
  entries: string[];
  /** True when some entries were not shown. */
  truncated: boolean;
  /** How many entries were not shown (a lower bound when the walk stopped early). */
  notShown: number;
  /** Why entries are missing and what to do about it. */
  note?: string;
}

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

const parameters: JsonSchema = {
  type: "object",
  properties: {
    path: pathProperty("The directory to list, relative to the workspace root, such as src. Omit it (or pass .) to list the root."),
    depth: {
      type: "integer",
      minimum: 1,
      maximum: 10,
      description: "How many levels to show: 1 lists only the directory's own entries. Default 2.",
    },
    limit: { type: "integer", minimum: 1, maximum: 5000, description: "Most entries to show. Default 500." },
    gitignore: {
      type: "boolean",
      description: "Leave out files that .gitignore ignores, and the .git directory. Default true; false shows everything.",
    },
  },
  additionalProperties: false,
};

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

/** Creates the `list_files` tool for one workspace root. */
export function createListTool(root: string, options: ListToolOptions = {}): Tool<ListInput, ListOutput> {
  checkOptions("createListTool", LIST_OPTIONS, options);
  const ws = openWorkspace(root);
  const gate = new Gate("createListTool", options, ws.canonical);
  return gateReadTool({
    name: "list_files",
    effect: "read",
    description: options.descriptions === "full" ? description : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: LIST_OUTPUT_SCHEMA,
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
      return callCore(context?.signal, (cancel) => ws.listFiles(input.path, input.depth, input.limit, input.gitignore, cancel));
    },
  }, gate, (i: ListInput) => [i.path ?? "."]);
}
