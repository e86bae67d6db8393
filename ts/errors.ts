/** Stable error codes of workcell's tools. See the README for the meaning of each. */
export const ErrorCode = {
  TOOL_NOT_FOUND: "TOOL_NOT_FOUND",
  TOOL_ARGUMENTS_INVALID: "TOOL_ARGUMENTS_INVALID",
  WORKSPACE_ROOT_CHANGED: "WORKSPACE_ROOT_CHANGED",
  PATH_ESCAPES_WORKSPACE: "PATH_ESCAPES_WORKSPACE",
  FILE_NOT_FOUND: "FILE_NOT_FOUND",
  NOT_A_REGULAR_FILE: "NOT_A_REGULAR_FILE",
  FILE_TOO_LARGE: "FILE_TOO_LARGE",
  INVALID_UTF8: "INVALID_UTF8",
  SYMLINK_LOOP: "SYMLINK_LOOP",
  TARGET_CHANGED: "TARGET_CHANGED",
  NODE_PROCESS_TIMEOUT: "NODE_PROCESS_TIMEOUT",
  COMMAND_NOT_FOUND: "COMMAND_NOT_FOUND",
  COMMAND_TIMEOUT: "COMMAND_TIMEOUT",
  SANDBOX_UNAVAILABLE: "SANDBOX_UNAVAILABLE",
  EDIT_NOT_FOUND: "EDIT_NOT_FOUND",
  EDIT_NOT_UNIQUE: "EDIT_NOT_UNIQUE",
  PATH_PROTECTED: "PATH_PROTECTED",
  TESTS_TIMED_OUT: "TESTS_TIMED_OUT",
  TEST_RUNNER_FAILED: "TEST_RUNNER_FAILED",
  FILE_EXISTS: "FILE_EXISTS",
  PROCESS_LIMIT: "PROCESS_LIMIT",
  PROCESS_NOT_FOUND: "PROCESS_NOT_FOUND",
  CHECKPOINT_NOT_FOUND: "CHECKPOINT_NOT_FOUND",
  STAGED_NOT_FOUND: "STAGED_NOT_FOUND",
  APPROVAL_DENIED: "APPROVAL_DENIED",
  APPROVAL_VIEW_INCOMPLETE: "APPROVAL_VIEW_INCOMPLETE",
  IO_ERROR: "IO_ERROR",
} as const;
/** One of the stable error codes: `ToolError.code` (comparing it with anything else is a type error). */
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** Reason codes: the `message` of a `TOOL_ARGUMENTS_INVALID` error. */
export const ArgumentsReason = {
  INVALID_ARGUMENTS_SHAPE: "INVALID_ARGUMENTS_SHAPE",
  INVALID_RELATIVE_PATH: "INVALID_RELATIVE_PATH",
  INVALID_UNICODE: "INVALID_UNICODE",
  CONTENT_TOO_LARGE: "CONTENT_TOO_LARGE",
  SOURCE_TOO_LARGE: "SOURCE_TOO_LARGE",
  TOO_MANY_ARGUMENTS: "TOO_MANY_ARGUMENTS",
  ARGUMENT_TOO_LARGE: "ARGUMENT_TOO_LARGE",
  ARGUMENTS_TOO_LARGE: "ARGUMENTS_TOO_LARGE",
  COMMAND_LINE_TOO_LONG: "COMMAND_LINE_TOO_LONG",
  COMMAND_REFUSED: "COMMAND_REFUSED",
  PATCH_INVALID: "PATCH_INVALID",
  PORT_NOT_ALLOWED: "PORT_NOT_ALLOWED",
  STAGE_NOT_ALLOWED: "STAGE_NOT_ALLOWED",
  GRANT_NOT_ALLOWED: "GRANT_NOT_ALLOWED",
} as const;
export type ArgumentsReason = (typeof ArgumentsReason)[keyof typeof ArgumentsReason];

/** The JSON form of a `ToolError`: what the model gets under `error`. */
export interface ToolErrorJSON {
  code: ErrorCode;
  message: string;
  hint?: string;
  details?: unknown;
}

/** A recoverable tool failure: the model gets `code`, `message`, `hint` and `details`. */
export class ToolError extends Error {
  override name = "ToolError";
  readonly code: ErrorCode;
  readonly hint?: string;
  readonly details?: unknown;

  constructor(code: ErrorCode, message: string, options: { hint?: string; details?: unknown } = {}) {
    super(message);
    this.code = code;
    if (options.hint !== undefined) this.hint = options.hint;
    if (options.details !== undefined) this.details = options.details;
  }

  /** The JSON form sent to the model: `{ code, message, hint?, details? }`. */
  toJSON(): ToolErrorJSON {
    const out: ToolErrorJSON = {
      code: this.code,
      message: this.message,
    };
    if (this.hint !== undefined) out.hint = this.hint;
    if (this.details !== undefined) out.details = this.details;
    return out;
  }
}

/** `TOOL_ARGUMENTS_INVALID` with a reason code as its message. */
export function invalidArguments(reason: ArgumentsReason, hint: string, details?: unknown): ToolError {
  return new ToolError(ErrorCode.TOOL_ARGUMENTS_INVALID, reason, { hint, details });
}

/** The error a cancelled call rejects with: an `Error` whose `name` is `"AbortError"`. */
export class AbortError extends Error {
  override name = "AbortError";
  constructor(message = "The operation was aborted", options?: { cause?: unknown }) {
    super(message, options);
  }
}

export function abortError(signal?: AbortSignal): AbortError {
  return new AbortError("The operation was aborted", signal?.reason === undefined ? undefined : { cause: signal.reason });
}

/**
 * Whether `err` is a cancellation (an Error named `AbortError`, as every call rejects with when its
 * signal aborts).
 */
export function isAbortError(err: unknown): boolean {
  return err instanceof Error && err.name === "AbortError";
}
