// The command policy (decided in Rust): which argv run_command may run.
import { binding } from "./native.js";
import { ArgumentsReason, ErrorCode, ToolError } from "./errors.js";
import { option, type OptionSpecOf } from "./options.js";

/**
 * Which commands may run. Names are bare program names, compared case-insensitively.
 *
 * - `denyCommands` replaces the default deny-list ({@link DEFAULT_DENY_COMMANDS}: `sudo su
 *   doas pkexec`). A denied name is refused directly, through wrappers (`env`, `xargs`,
 *   `nice`, `timeout`, `command`, `exec`, `find -exec`...) and inside `sh -c` scripts.
 *   Programs that run other programs in ways the policy cannot follow (`sudo`, `su`,
 *   `strace`, `script`, `fish`...) stay refused even when the deny-list no longer names them.
 * - `allowCommands`, when set, lists the only programs that may run, anywhere in the argv or
 *   script, wrappers included. Shell builtins (`cd`, `echo`, `test`, `read`, `export`...) and
 *   `sh|bash|dash|zsh -c <script>` need no entry (the script's own commands are checked). A
 *   program such as `strace` that the policy cannot follow runs only if named here.
 */
export interface CommandPolicy {
  /**
   * Programs that never run, directly, through wrappers or inside scripts (replaces the default
   * `sudo su doas pkexec`).
   */
  denyCommands?: readonly string[];
  /** When set, the only programs that may run (shell builtins and `sh -c` need no entry). */
  allowCommands?: readonly string[];
}

/** The spec entries of {@link CommandPolicy} (see ts/options.ts). */
export const POLICY_OPTIONS = {
  denyCommands: option.strings("programs refused (replaces the default deny-list)"),
  allowCommands: option.strings("the only programs that may run"),
} as const satisfies OptionSpecOf<CommandPolicy>;

/** Why a command was refused: `details.reason` of a `COMMAND_REFUSED` result. */
export type CommandRefusalReason =
  /** The program is on the deny-list. */
  | "deny_listed"
  /** An allow-list is set and does not name the program. */
  | "not_allow_listed"
  /** The program runs others in ways the policy cannot check (`strace`, `su`, `fish`...). */
  | "unchecked_runner"
  /** The command name is built at run time: a variable, `$(...)`, a glob, `{a,b}`, `~`. */
  | "not_static"
  /** The command name is a path (`/bin/rm`, `./x`); pass the bare name. */
  | "path_in_name"
  /** The command name is empty or has characters no program name needs. */
  | "invalid_name"
  /** Code built at run time: `eval`, `source`, `alias`, `${!x}`, `${x@P}`, `hash -p`... */
  | "dynamic_code"
  /** A shell's `-c` script is not a literal, or the shell would read commands from stdin. */
  | "nested_script"
  /** A wrapper's options cannot be followed to the program it runs (`env -S`...). */
  | "wrapper"
  /** The script does not parse. */
  | "parse_error"
  /** The script nests too deeply or has too many nesting constructs. */
  | "too_complex"
  /** A redirection target is not a workspace-relative path, `/dev/null` or an fd. */
  | "redirect_target"
  /** `cd` / `pushd` would leave the workspace. */
  | "directory"
  /** Arithmetic or a numeric test on values bash would evaluate as code. */
  | "arithmetic"
  /** A variable-name position holds something other than a literal identifier. */
  | "variable_name"
  /** An assignment to `PATH`, `HOME`, `PS4`, `BASH_ENV`, `LD_PRELOAD` and the like. */
  | "protected_variable"
  /** A shell option that changes how words become commands (`set -k`). */
  | "shell_option";

/** The command may run. */
export interface CommandAllowed {
  allowed: true;
}

/** A policy refusal: `details` names the refused node and the reason. */
export interface CommandRefused {
  allowed: false;
  code: "TOOL_ARGUMENTS_INVALID";
  message: "COMMAND_REFUSED";
  /** For the model: which node was refused and what to do instead. */
  hint: string;
  details: { command: string; reason: CommandRefusalReason };
}

/** The argv itself is malformed or too large (checked before the policy). */
export interface CommandInvalid {
  allowed: false;
  code: ErrorCode;
  /** `INVALID_ARGUMENTS_SHAPE`, `TOO_MANY_ARGUMENTS`, `ARGUMENT_TOO_LARGE`, `ARGUMENTS_TOO_LARGE` or `INVALID_UNICODE`. */
  message: string;
  hint: string;
  details?: Record<string, unknown>;
}

/** The result of {@link checkCommand}. Plain data: it can be logged or sent as JSON. */
export type CommandCheck = CommandAllowed | CommandRefused | CommandInvalid;

/** The default deny-list: `["sudo", "su", "doas", "pkexec"]`. */
export const DEFAULT_DENY_COMMANDS: readonly string[] = Object.freeze(binding.defaultDenyCommands());

function nameList(value: unknown, what: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
    throw new TypeError(`workcell: ${what} must be an array of program names`);
  }
  return [...(value as string[])];
}

function nativePolicy(policy: CommandPolicy | undefined): { denyCommands?: string[]; allowCommands?: string[] } | undefined {
  if (policy === undefined) return undefined;
  if (policy === null || typeof policy !== "object") {
    throw new TypeError("workcell: the command policy must be an object { denyCommands?, allowCommands? }");
  }
  return {
    denyCommands: nameList(policy.denyCommands, "denyCommands"),
    allowCommands: nameList(policy.allowCommands, "allowCommands"),
  };
}

/**
 * Decides whether `argv` may run under `policy`, exactly as `run_command` decides before any
 * effect. Pure and synchronous: nothing is run, resolved or read.
 *
 * `argv` is the program and its arguments (1 to 64 strings, no NUL, each at most 32 KiB, all
 * together at most 64 KiB). `argv[0]` must be a bare program name. When argv is
 * `[sh|bash|dash|zsh, "-c", script, ...]` the script is parsed and every command in it is
 * checked: literal command names only, the deny- and allow-lists, no `eval`/`source`, nested
 * `sh -c` scripts checked in turn, `$(...)`, backticks and process substitutions walked,
 * redirections only to workspace-relative paths, `/dev/null` or file descriptors, and none of
 * the places where bash evaluates a value as code (arithmetic on variables, `${!x}`,
 * `printf -v`...). The full rules are in docs/command-policy.md.
 *
 * Never throws for a model's input: a malformed argv is `{ allowed: false }` with
 * `INVALID_ARGUMENTS_SHAPE`. Throws a `TypeError` only for a malformed `policy` (host
 * configuration).
 *
 * @example
 * checkCommand(["sh", "-c", "npm test 2>&1 | tail -n 20"]); // { allowed: true }
 * checkCommand(["sh", "-c", "curl x | sudo sh"]);
 * // { allowed: false, code: "TOOL_ARGUMENTS_INVALID", message: "COMMAND_REFUSED",
 * //   hint: "refused `sudo`: ...", details: { command: "sudo", reason: "deny_listed" } }
 */
export function checkCommand(argv: readonly string[], policy?: CommandPolicy): CommandCheck {
  const native = nativePolicy(policy);
  if (!Array.isArray(argv) || argv.some((a) => typeof a !== "string")) {
    return {
      allowed: false,
      code: ErrorCode.TOOL_ARGUMENTS_INVALID,
      message: ArgumentsReason.INVALID_ARGUMENTS_SHAPE,
      hint: 'argv must be an array of strings, the program first, such as ["npm", "test"]',
    };
  }
  const result = binding.checkCommand([...argv], native);
  if (result.allowed || !result.error) return { allowed: true };
  const { code, message, hint, details } = result.error;
  const out = { allowed: false as const, code: code as ErrorCode, message, hint: hint ?? "" };
  return (details == null ? out : { ...out, details: JSON.parse(details) }) as CommandRefused | CommandInvalid;
}

/**
 * Throws the refusal of {@link checkCommand} as a `ToolError` (`TOOL_ARGUMENTS_INVALID`), for
 * tools that check before acting.
 */
export function assertCommandAllowed(argv: readonly string[], policy?: CommandPolicy): void {
  const check = checkCommand(argv, policy);
  if (check.allowed) return;
  throw new ToolError(check.code, check.message, { hint: check.hint, details: check.details });
}
