// The JSON Schema of every tool's successful result: each tool object carries its own as
// `outputSchema` (next to `parameters`), MCP lists it and answers with `structuredContent`, and
// test/output-schema.test.ts checks the tools' real results against it, so a result that
// gains, loses or retypes a field fails there until its schema says so.
import { nullable, type JsonSchema } from "./schema.js";

const string: JsonSchema = { type: "string" };
const boolean: JsonSchema = { type: "boolean" };
const count: JsonSchema = { type: "integer", minimum: 0 };
const strings: JsonSchema = { type: "array", items: string };

function object(properties: Record<string, JsonSchema>, required: readonly string[] = Object.keys(properties)): JsonSchema {
  return { type: "object", properties, required, additionalProperties: false };
}

/**
 * The `sandbox` report of the process tools. Open to more fields (each names one more layer of
 * confinement); the ones here are always present.
 */
export const SANDBOX_REPORT_SCHEMA: JsonSchema = {
  type: "object",
  properties: {
    landlockAbi: nullable({ type: "integer", minimum: 1 }),
    filesystem: { type: "string", enum: ["confined", "open"] },
    network: { type: "string", enum: ["blocked", "allowed", "open", "filtered"] },
    processes: { type: "string", enum: ["namespace", "group"] },
    nodePermission: boolean,
    protect: { type: "string", enum: ["read-only", "partial", "none", "open"] },
  },
  required: ["landlockAbi", "filesystem", "network", "processes", "nodePermission"],
};

export const READ_OUTPUT_SCHEMA: JsonSchema = object(
  {
    path: string,
    content: string,
    bytes: count,
    hash: string,
    fileBytes: count,
    offset: { type: "integer", minimum: 1 },
    lines: count,
    nextOffset: { type: "integer", minimum: 1 },
    totalLines: count,
    // An image (PNG, JPEG, GIF, WebP) instead of text: `mimeType` and `data` (base64) in place of
    // `content`; MCP answers with the image as a block and leaves `data` out of structuredContent.
    mimeType: string,
    data: string,
  },
  ["path", "bytes", "hash"],
);

export const LIST_OUTPUT_SCHEMA: JsonSchema = object(
  { path: string, entries: strings, truncated: boolean, notShown: count, note: string },
  ["path", "entries", "truncated", "notShown"],
);

export const SEARCH_OUTPUT_SCHEMA: JsonSchema = object(
  { matches: strings, truncated: boolean, filesSearched: count, note: string },
  ["matches", "truncated", "filesSearched"],
);

export const WRITE_OUTPUT_SCHEMA: JsonSchema = object({ path: string, bytes: count, created: boolean });

export const EDIT_OUTPUT_SCHEMA: JsonSchema = object({ path: string, edits: { type: "integer", minimum: 1 }, bytes: count, diff: string });

export const APPLY_PATCH_OUTPUT_SCHEMA: JsonSchema = object(
  {
    files: {
      type: "array",
      items: object(
        { path: string, action: { type: "string", enum: ["add", "delete", "update"] }, movedTo: string, bytes: count },
        ["path", "action"],
      ),
    },
    diff: string,
    note: string,
  },
  ["files", "diff"],
);

export const MOVE_FILE_OUTPUT_SCHEMA: JsonSchema = object({ from: string, to: string, replaced: boolean });

export const DELETE_FILE_OUTPUT_SCHEMA: JsonSchema = object({ path: string, kind: { type: "string", enum: ["file", "symlink", "directory"] } });

export const MAKE_DIRECTORY_OUTPUT_SCHEMA: JsonSchema = object({ path: string, created: boolean });

const exitCode = nullable({ type: "integer" });
const signal = nullable(string);

/** With `network: { allow }`: the connections through the proxy. */
const network: JsonSchema = object({ allowed: count, refused: count });

/** Sandbox denials the output showed (with a `note` on the next step). */
const denials: JsonSchema = {
  type: "array",
  items: object({ kind: { type: "string", enum: ["write", "read", "network"] }, path: string }, ["kind"]),
};

export const NODE_PROCESS_OUTPUT_SCHEMA: JsonSchema = object(
  {
    exitCode,
    signal,
    stdout: string,
    stderr: string,
    stdoutTruncated: boolean,
    stderrTruncated: boolean,
    timedOut: boolean,
    durationMs: count,
    note: string,
    sandbox: SANDBOX_REPORT_SCHEMA,
    network,
    denials,
  },
  ["exitCode", "signal", "stdout", "stderr", "stdoutTruncated", "stderrTruncated", "timedOut", "durationMs", "sandbox"],
);

export const RUN_COMMAND_OUTPUT_SCHEMA: JsonSchema = object(
  {
    exitCode,
    signal,
    output: string,
    truncated: boolean,
    omittedBytes: count,
    timedOut: boolean,
    durationMs: count,
    timeoutMs: count,
    note: string,
    sandbox: SANDBOX_REPORT_SCHEMA,
    network,
    denials,
  },
  ["exitCode", "signal", "output", "truncated", "omittedBytes", "timedOut", "durationMs", "timeoutMs", "sandbox"],
);

export const RUN_TESTS_OUTPUT_SCHEMA: JsonSchema = object(
  {
    status: { type: "string", enum: ["passed", "failed", "incomplete"] },
    report: string,
    passed: count,
    failed: count,
    skipped: count,
    failures: { type: "array", items: object({ name: string, file: string, output: string }, ["name", "output"]) },
    buildErrors: strings,
    exitCode,
    durationMs: count,
    timeoutMs: count,
    note: string,
    sandbox: SANDBOX_REPORT_SCHEMA,
    network,
    denials,
  },
  ["status", "report", "passed", "failed", "skipped", "failures", "buildErrors", "exitCode", "durationMs", "timeoutMs", "sandbox"],
);

/** start_process, read_process and stop_process. */
export const PROCESS_OUTPUT_SCHEMA: JsonSchema = object(
  {
    id: string,
    running: boolean,
    exitCode,
    signal,
    output: string,
    cursor: count,
    omittedBytes: count,
    matched: boolean,
    alerts: { type: "array", items: object({ keyword: string, line: string }) },
    alertsOmitted: count,
    durationMs: count,
    sandbox: SANDBOX_REPORT_SCHEMA,
    note: string,
    denials,
  },
  ["id", "running", "exitCode", "signal", "output", "cursor", "omittedBytes", "matched", "alerts", "alertsOmitted", "durationMs", "sandbox"],
);

export const WRITE_PROCESS_OUTPUT_SCHEMA: JsonSchema = object({ id: string, bytes: count });

export const LIST_PROCESSES_OUTPUT_SCHEMA: JsonSchema = object({
  processes: {
    type: "array",
    items: object({ id: string, argv: strings, running: boolean, exitCode, signal, startedAt: string, durationMs: count }),
  },
});
