import { createReadTool, type ReadToolOptions } from "./read.js";
import type { AnyTool } from "./tool.js";

/** Options for every tool of `createCodingTools`, by tool. */
export interface CodingToolsOptions {
  read?: ReadToolOptions;
}

/** All of workcell's tools for one workspace root. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): AnyTool[] {
  return [createReadTool(root, options.read)];
}
