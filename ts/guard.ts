import { binding } from "./native.js";
import { option, type OptionSpecOf } from "./options.js";

/** The write guard of the writing tools (write_file, edit_file). */
export interface WriteGuardOptions {
  /**
   * Globs over workspace-relative paths that no writing tool may change (default
   * `DEFAULT_PROTECT`: every `.git` at any depth, nested repositories included; `[]`
   * protects nothing). `P/**` also protects `P` itself; matching is
   * case-insensitive and `*` does not cross `/`. Checked against the path as named and against
   * the file the write really lands on after symlinks inside the workspace are followed.
   * Refusals are `PATH_PROTECTED`.
   */
  protect?: string[];
  /** Refuse (`PATH_PROTECTED`) any write whose path passes through a symlink. Default false. */
  refuseLinksOnWrite?: boolean;
}

/** The spec entries of {@link WriteGuardOptions} (see ts/options.ts). */
export const GUARD_OPTIONS = {
  protect: option.strings("globs no writing tool may change (default every .git)"),
  refuseLinksOnWrite: option.boolean("refuse writes through symlinks"),
} as const satisfies OptionSpecOf<WriteGuardOptions>;

/**
 * The default protected globs: every git directory (or `.git` file) at any depth, so that a
 * nested repository's config or hooks cannot be planted either.
 */
export const DEFAULT_PROTECT: readonly string[] = Object.freeze(["**/.git/**"]);

/**
 * Compiles the guard once per tool (in Rust); throws a TypeError for an invalid glob. An empty
 * guard (no globs, links allowed) is `undefined`: nothing to check.
 */
export function makeWriteGuard(options: WriteGuardOptions): InstanceType<typeof binding.WriteGuard> | undefined {
  // The types were checked against GUARD_OPTIONS by the factory; the globs compile in Rust.
  const protect = options.protect ?? DEFAULT_PROTECT;
  const refuse = options.refuseLinksOnWrite ?? false;
  if (protect.length === 0 && !refuse) return undefined;
  try {
    return new binding.WriteGuard([...protect], refuse);
  } catch (err) {
    throw new TypeError(err instanceof Error ? err.message : String(err));
  }
}

/** The compact description of `expectedHash`. */
export const COMPACT_EXPECTED_HASH = 'Optional: read_file\'s hash; the call fails if the file changed since ("absent": must not exist).';

/** The full description of the optional `expectedHash` property. */
export const EXPECTED_HASH =
  'Optional. Write only if the file still has this approval hash ("absent" for a file that must not exist yet); otherwise the call fails with TARGET_CHANGED and nothing is written.';
