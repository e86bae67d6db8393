import { validatePath } from "./paths.js";
import { binding, callCore } from "./native.js";

/** Options of `hashFile`. */
export interface HashFileOptions {
  /** Cancels the hash; the promise rejects with an AbortError. */
  signal?: AbortSignal;
}

/**
 * The approval hash of `path` in the workspace `root`: `"absent"`, `"not a regular file: <type>"`
 * or the lowercase hex SHA-256 of the file's content.
 *
 * A host shows the user a proposed write with this string and later passes it back as
 * `expectedHash`, so the write happens only if the target is still what the user saw. The final
 * component is examined without following it first (a directory, FIFO, socket or device is
 * described, never opened); a final symlink that resolves inside the workspace is followed,
 * because the write tools write through it and the hash must describe the file they would
 * replace. Rejects with a ToolError for a path that breaks the grammar
 * (`TOOL_ARGUMENTS_INVALID`), leads outside (`PATH_ESCAPES_WORKSPACE`), loops
 * (`SYMLINK_LOOP`), a file over 64 MiB (`FILE_TOO_LARGE`) or a file swapped while it was read
 * (`TARGET_CHANGED`); with an AbortError when `signal` aborts.
 */
export async function hashFile(root: string, path: string, options: HashFileOptions = {}): Promise<string> {
  if (typeof root !== "string" || root.length === 0) {
    throw new TypeError("workcell: the workspace root must be a non-empty path string");
  }
  if (typeof path !== "string") throw new TypeError("workcell: hashFile needs a path string");
  validatePath(path, "path");
  // The root is opened, checked and closed again inside the native call.
  return callCore(options.signal, (cancel) => binding.hashFile(root, path, cancel));
}
