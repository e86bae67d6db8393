import { binding, fromThrown } from "./native.js";
import type { JsonSchema } from "./schema.js";


/**
 * Applies the path grammar (in Rust) to `path` and returns its normalized form. Throws
 * `TOOL_ARGUMENTS_INVALID` (`INVALID_RELATIVE_PATH` or `INVALID_UNICODE`); no effects.
 */
export function validatePath(path: string, _where = "path"): string {
  try {
    return binding.normalizePath(path);
  } catch (err) {
    throw fromThrown(err);
  }
}

/** The compact description of a path parameter. */
export const COMPACT_PATH = "Relative to the workspace root, such as src/index.ts.";
