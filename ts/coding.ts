import { createReadTool, type ReadToolOptions } from "./read.js";
import type { AnyTool } from "./tool.js";
import { createWriteTool, type WriteToolOptions } from "./write.js";

/** Options for every tool of `createCodingTools`, by tool. */
export interface CodingToolsOptions {
  read?: ReadToolOptions;
  write?: WriteToolOptions;
}

/** All of workcell's tools for one workspace root. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): AnyTool[] {
  return [createReadTool(root, options.read), createWriteTool(root, options.write)];
}
