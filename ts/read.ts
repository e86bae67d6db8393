import { binding, callNative, openWorkspace } from "./native.js";
import { checkSchema, type JsonSchema } from "./schema.js";
import { pathProperty, validatePath } from "./paths.js";
import type { Tool, ToolContext } from "./tool.js";

export interface ReadInput {
  path: string;
}

export interface ReadOutput {
  /** The normalized path. */
  path: string;
  content: string;
  /** UTF-8 byte length of the file. */
  bytes: number;
}

export interface ReadToolOptions {}

const parameters: JsonSchema = {
  type: "object",
  properties: { path: pathProperty("The file to read, relative to the workspace root, such as src/index.ts.") },
  required: ["path"],
  additionalProperties: false,
};

const description = [
  "Read a UTF-8 text file from the workspace.",
  "The path is relative to the workspace root and uses / between names (src/index.ts); absolute paths, .., backslashes, drive letters and Windows device names are refused, and symlinks may not lead outside the workspace.",
  "Only regular files of at most 65,536 bytes of valid UTF-8 are returned.",
  "Returns { path, content, bytes }.",
].join(" ");

/** Creates the `read_file` tool for one workspace root. */
export function createReadTool(root: string, _options: ReadToolOptions = {}): Tool<ReadInput, ReadOutput> {
  const ws = openWorkspace(root);
  return {
    name: "read_file",
    description,
    parameters,
    validate(input: unknown): ReadInput {
      checkSchema(parameters, input);
      const { path } = input as ReadInput;
      validatePath(path, "arguments.path");
      return { path };
    },
    async execute(input: ReadInput, context: ToolContext): Promise<ReadOutput> {
      const r = await callNative(context?.signal, (cancel) => ws.readFile(input.path, cancel));
      return { path: r.path!, content: r.content!, bytes: r.bytes! };
    },
  };
}

