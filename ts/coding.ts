import { createReadTool, type ReadToolOptions } from "./read.js";
import { createListTool, type ListToolOptions } from "./list.js";
import { createSearchTool, type SearchToolOptions } from "./search.js";
import type { AnyTool } from "./tool.js";

/** Options for every tool of `createCodingTools`, by tool. */
export interface CodingToolsOptions {
  read?: ReadToolOptions;
  list?: ListToolOptions;
  search?: SearchToolOptions;
}

/** All of workcell's tools for one workspace root. */
export function createCodingTools(root: string, options: CodingToolsOptions = {}): AnyTool[] {
  return [
    createReadTool(root, options.read),
    createListTool(root, options.list),
    createSearchTool(root, options.search),
  ];
}
