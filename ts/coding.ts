import { createNodeProcessTool, type NodeProcessToolOptions } from "./node-process.js";
import { createReadTool, type ReadToolOptions } from "./read.js";
import type { AnyTool } from "./tool.js";

/** Options for every tool of `createCodingTools`, by tool. */
export interface CodingToolsOptions {
  read?: ReadToolOptions;
  nodeProcess?: NodeProcessToolOptions;
}

/** All of workcell's tools for one workspace root. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): AnyTool[] {
  return [createReadTool(root, options.read), createNodeProcessTool(root, options.nodeProcess)];
}
