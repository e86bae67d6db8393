import { binding, callCore, fromThrown, openWorkspace } from "./native.js";
import { checkSchema, withDescriptions, type JsonSchema } from "./schema.js";
import { TOOL_SCHEMAS } from "./generated/contract.js";
import { Gate, gateReadTool, type ApprovalOptions } from "./approval.js";

import { validateStartPath } from "./list.js";
import type { Tool, ToolContext, WorkcellTool } from "./tool.js";
import { COMMON_TOOL_OPTIONS, type CommonToolOptions } from "./common-options.js";
import { checkOptions, declareOptions, option, type OptionSpecOf } from "./options.js";
import type { SearchFilesInput, SearchFilesOutput } from "./generated/contract.js";
export type { SearchFilesInput, SearchFilesOutput } from "./generated/contract.js";

/** `SearchInput`: the same as `SearchFilesInput` (generated from the core). */
export type SearchInput = SearchFilesInput;

/** `SearchOutput`: the same as `SearchFilesOutput` (generated from the core). */
export type SearchOutput = SearchFilesOutput;

/** Options of `createSearchTool` (and `search` of `createCodingTools`). */
export interface SearchToolOptions extends CommonToolOptions {
  /** Leave out files that .gitignore ignores (and `.git`). Default true. */
  gitignore?: boolean;
}

/** The options of createSearchTool (see ts/options.ts). */
export const SEARCH_OPTIONS = declareOptions("createSearchTool", {
  ...COMMON_TOOL_OPTIONS,
  gitignore: option.boolean("leave out what .gitignore ignores (default true)"),
} as const satisfies OptionSpecOf<SearchToolOptions>);

const parameters: JsonSchema = withDescriptions(TOOL_SCHEMAS.search_files.input, {
  pattern: "What to search for: a regular expression (Rust regex syntax, like ripgrep), matched line by line.",
  path: "The directory or file to search, relative to the workspace root, such as src. Omit it (or pass .) to search everything.",
  glob: "Only search files whose path matches this glob, such as *.ts, src/**/*.rs, or !*.min.js to exclude.",
  ignoreCase: "Match letters case-insensitively. Default false.",
  literal: "Treat pattern as plain text, not a regular expression. Default false.",
  limit: "Most matching lines to return. Default 100.",
});

const description = [
  "Search the workspace's files for lines matching a regular expression (ripgrep's engine and syntax), or plain text with literal: true.",
  "Returns each matching line as `path:line: text`, paths relative to the workspace root, in tree order; a line longer than 500 characters is cut and ends with …",
  "Files ignored by .gitignore, binary files and anything behind a symlink are not searched.",
  "At most limit matches (default 100, max 1,000) and 64 KiB of text are returned; when more exist, truncated is true and note says so: narrow the pattern, path or glob.",
  "One search reads at most 512 MiB and runs at most 20 s; past that it stops, truncated is true and note says so. Control characters in file names are shown escaped (\\n, \\xNN).",
  "An invalid pattern is refused with the parser's message in the hint.",
  "Returns { matches, truncated, filesSearched, note? }.",
].join(" ");

const compactParameters = withDescriptions(parameters, {
  pattern: "A regular expression (Rust syntax), or text with literal: true.",
  path: "A directory or file (default: everything).",
  glob: "Only paths matching it, such as *.ts or !*.min.js.",
  ignoreCase: "Case-insensitive.",
  literal: "pattern is plain text.",
  limit: "Most matches (default 100).",
});

const compactDescription =
  "Search file contents line by line (ripgrep's engine); returns `path:line: text` matches. Ignored and binary files are skipped; note says when results were cut.";

/** The `search_files` tool. */
export type SearchFilesTool = WorkcellTool<"search_files", SearchFilesInput, SearchFilesOutput, "read">;

/** Creates the `search_files` tool for one workspace root. */
export function createSearchTool(root: string, options: SearchToolOptions = {}): SearchFilesTool {
  checkOptions("createSearchTool", SEARCH_OPTIONS, options);
  const ws = openWorkspace(root);
  const gitignore = options.gitignore ?? true;
  const gate = new Gate("createSearchTool", options, ws.canonical);
  return gateReadTool<SearchInput, SearchOutput, SearchFilesTool>({
    name: "search_files",
    effect: "read",
    description: options.descriptions === "full" ? description : compactDescription,
    parameters: options.descriptions === "full" ? parameters : compactParameters,
    outputSchema: TOOL_SCHEMAS.search_files.output,
    validate(input: unknown): SearchInput {
      checkSchema(parameters, input);
      const { pattern, path, glob, ignoreCase, literal, limit } = input as SearchInput;
      // The pattern and glob are compiled (in Rust) here, so a bad one is refused before any effect.
      try {
        binding.checkSearchPattern(pattern, glob, ignoreCase, literal);
      } catch (err) {
        throw fromThrown(err);
      }
      const out: SearchInput = { pattern };
      const start = path === undefined ? undefined : validateStartPath(path, "arguments.path");
      if (start !== undefined) out.path = start;
      if (glob !== undefined) out.glob = glob;
      if (ignoreCase !== undefined) out.ignoreCase = ignoreCase;
      if (literal !== undefined) out.literal = literal;
      if (limit !== undefined) out.limit = limit;
      return out;
    },
    async execute(input: SearchInput, context: ToolContext): Promise<SearchOutput> {
      return callCore(context?.signal, (cancel) =>
        ws.searchFiles(
          input.pattern,
          input.path,
          input.glob,
          { ignoreCase: input.ignoreCase, literal: input.literal, limit: input.limit, gitignore },
          cancel,
        ),
        context?.onProgress,
      );
    },
  }, gate, (i: SearchInput) => [i.path ?? "."]);
}
