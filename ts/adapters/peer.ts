// The optional peer dependencies of the adapters (the AI SDK, the MCP SDK, the providers'
// packages). Each adapter loads its own with `requirePeer` when its module loads, so a missing
// one is an Error saying which package to install, instead of the loader's bare
// ERR_MODULE_NOT_FOUND (which a static `import` gives before any of the adapter's code runs).
// Loading with `require` keeps the adapters free of top-level await, so `require("workcell/ai")`
// works where Node can require ES modules.
import { createRequire } from "node:module";

const requireHere = createRequire(import.meta.url);

/** The `code` of the Error thrown when an optional peer dependency is not installed. */
export const PEER_MISSING = "WORKCELL_PEER_MISSING";

/**
 * Loads `specifier` (the package `pkg` or one of its subpaths) for the adapter `entry`. When
 * `pkg` itself cannot be found, throws an Error with code `WORKCELL_PEER_MISSING` whose message
 * says to install it (`workcell/ai needs ai, an optional peer dependency: install ai (npm
 * install ai)`); any other failure (a dependency of the peer missing, an error while it loads)
 * is thrown as it is.
 */
export function requirePeer<T>(specifier: string, entry: string, pkg: string = specifier, what = ""): T {
  try {
    return requireHere(specifier) as T;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const message = err instanceof Error ? err.message : String(err);
    if ((code === "MODULE_NOT_FOUND" || code === "ERR_MODULE_NOT_FOUND") && message.includes(`'${specifier}'`)) {
      throw Object.assign(
        new Error(`workcell: ${entry} needs ${pkg}${what}, an optional peer dependency: install ${pkg} (npm install ${pkg})`, { cause: err }),
        { code: PEER_MISSING },
      );
    }
    throw err;
  }
}
