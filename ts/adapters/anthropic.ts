// `workcell/anthropic`: the tools Anthropic's models are trained on, answered by workcell's
// confined tools. `textEditor(tools)` is `text_editor_20250728` (str_replace_based_edit_tool)
// over read_file, write_file, edit_file and list_files; `bash(tools)` is `bash_20250124` over
// one process session (start_process, read_process, write_process, stop_process). Plain
// objects in the shapes of Anthropic's Messages API: no dependency.
import { ErrorCode, ToolError } from "../errors.js";
import type { ReadImageOutput } from "../image.js";
import type { ToolRegistry } from "../registry.js";
import { isImageOutput } from "../image.js";
import type { ToolsInput } from "./common.js";
import {
  callTool,
  cutMiddle,
  errorText,
  randomToken,
  requireTools,
  rootOf,
  validateWith,
  workspacePath,
  type Called,
} from "./provider-tools.js";

/** A text block of a `tool_result`. */
export interface AnthropicTextBlock {
  type: "text";
  text: string;
}

/** An image block of a `tool_result` (base64 data). */
export interface AnthropicImageBlock {
  type: "image";
  source: { type: "base64"; media_type: ReadImageOutput["mimeType"]; data: string };
}

/** What a `tool_result` carries: `content` (text, or blocks for an image) and `is_error`. */
export interface AnthropicToolAnswer {
  content: string | (AnthropicTextBlock | AnthropicImageBlock)[];
  is_error: boolean;
}

/** A `tool_use` block of an assistant message. */
export interface AnthropicToolUse {
  type?: "tool_use";
  id: string;
  name: string;
  input: unknown;
}

/** The `tool_result` block answering a `tool_use`. */
export interface AnthropicToolResultBlock extends AnthropicToolAnswer {
  type: "tool_result";
  tool_use_id: string;
}

/** The input of `text_editor_20250728`, as the model sends it. */
export interface TextEditorInput {
  command: "view" | "create" | "str_replace" | "insert";
  path: string;
  view_range?: number[];
  file_text?: string;
  old_str?: string;
  new_str?: string;
  insert_line?: number;
  insert_text?: string;
}

/** Options of `textEditor`. */
export interface TextEditorOptions {
  /**
   * Most characters of a file `view` returns (Anthropic's `max_characters`): longer views are
   * cut with a note saying how to see the rest. Sent in the definition too. Default: no cap
   * beyond read_file's own (65,536 bytes per view).
   */
  maxCharacters?: number;
}

/** `text_editor_20250728` answered by workcell. */
export interface TextEditor {
  /** The tool entry for `messages.create({ tools })`. */
  readonly definition: { type: "text_editor_20250728"; name: "str_replace_based_edit_tool"; max_characters?: number };
  /** Runs one call's `input`; resolves with the answer, rejects only with an AbortError. */
  handle(input: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer>;
  /** `handle` for a whole `tool_use` block: the `tool_result` block to send back. */
  answer(toolUse: AnthropicToolUse, signal?: AbortSignal): Promise<AnthropicToolResultBlock>;
}

const EDITOR_TOOLS = ["read_file", "write_file", "edit_file", "list_files"] as const;
const COMMANDS = ["view", "create", "str_replace", "insert"];
/** read_file's largest `offset`: a read there returns no line and the file's line count. */
const MAX_LINE_NUMBER = 4_294_967_295;

function fail(text: string): AnthropicToolAnswer {
  return { content: text, is_error: true };
}

function ok(content: AnthropicToolAnswer["content"]): AnthropicToolAnswer {
  return { content, is_error: false };
}

/** A workcell failure in Anthropic's documented wording where there is one. */
function editorError(error: ToolError, path: string): AnthropicToolAnswer {
  switch (error.code) {
    case ErrorCode.FILE_NOT_FOUND:
      return fail(`Error: File not found\n${path} does not exist; view a directory (such as .) to see what is there`);
    case ErrorCode.EDIT_NOT_FOUND:
      return fail("Error: No match found for replacement. Please check your text and try again.");
    case ErrorCode.EDIT_NOT_UNIQUE: {
      const count = (error.details as { count?: unknown } | undefined)?.count;
      const n = typeof count === "number" ? count : "several";
      return fail(`Error: Found ${n} matches for replacement text. Please provide more context to make a unique match.`);
    }
    case ErrorCode.IO_ERROR:
      if (/EACCES|EPERM|EROFS/.test(error.message)) return fail("Error: Permission denied. Cannot write to file.");
      return fail(errorText(error));
    default:
      return fail(errorText(error));
  }
}

function shape(message: string): AnthropicToolAnswer {
  return fail(`Error: ${message}`);
}

/** `content` with a line number before each line (`1: first line`), the first numbered `first`. */
function numbered(content: string, first: number): string {
  if (content.length === 0) return "";
  const lines = content.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines.map((line, i) => `${first + i}: ${line.endsWith("\r") ? line.slice(0, -1) : line}`).join("\n");
}

interface TextRead {
  path: string;
  content: string;
  hash: string;
  bytes: number;
  offset?: number;
  lines?: number;
  nextOffset?: number;
  totalLines?: number;
}

function imageBlocks(img: ReadImageOutput): AnthropicToolAnswer {
  return ok([
    { type: "image", source: { type: "base64", media_type: img.mimeType, data: img.data } },
    { type: "text", text: `${img.path}: ${img.mimeType}, ${img.bytes} bytes` },
  ]);
}

/** Creates `text_editor_20250728` over `tools` (read_file, write_file, edit_file, list_files). */
export function textEditor(tools: ToolsInput, options: TextEditorOptions = {}): TextEditor {
  const registry = requireTools("textEditor", tools, EDITOR_TOOLS, "pass createCodingTools(root), or those four tools of one workspace");
  if (typeof options !== "object" || options === null) throw new TypeError("workcell: textEditor options must be an object");
  for (const key of Object.keys(options)) {
    if (key !== "maxCharacters") throw new TypeError(`workcell: textEditor option ${key}: unknown option; the option is maxCharacters`);
  }
  const max = options.maxCharacters;
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) {
    throw new TypeError("workcell: textEditor option maxCharacters must be a positive integer");
  }
  const root = rootOf(registry, ["read_file"]);

  // The view cut at `max` characters, at a line's end, with where to continue (`first` is the
  // number of the view's first line).
  const capped = (text: string, first: number): string => {
    if (max === undefined || text.length <= max) return text;
    let cut = text.slice(0, max);
    if (text[max] !== "\n") {
      const nl = cut.lastIndexOf("\n");
      cut = nl > 0 ? cut.slice(0, nl) : "";
    }
    const next = first + (cut.length === 0 ? 0 : cut.split("\n").length);
    return `${cut}${cut.length === 0 ? "" : "\n"}[the view was cut at ${max} characters; continue with view_range [${next}, -1]]`;
  };

  const view = async (path: string, range: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    // The workspace root itself (`.`, `./`, or its absolute path) is a directory to list.
    if (path.split("/").every((segment) => segment === "" || segment === ".")) {
      if (range !== undefined) return shape("The `view_range` parameter is not allowed when `path` points to a directory.");
      return listing(".", signal);
    }
    if (range !== undefined) {
      // Invalid ranges are answered in the reference implementation's words, in its order:
      // the shape, the first element, the second past the end, the second before the first.
      if (!Array.isArray(range) || range.length !== 2 || !range.every((n) => Number.isSafeInteger(n))) {
        return shape("Invalid `view_range`. It should be a list of two integers.");
      }
      const [start, end] = range as [number, number];
      const firstOutside = (total: number) =>
        shape(`Invalid \`view_range\`: [${start}, ${end}]. Its first element \`${start}\` should be within the range of lines of the file: [1, ${total}]`);
      if (start < 1) {
        // The file's line count: a read past any line (read_file's largest offset).
        const c = await callTool<TextRead | ReadImageOutput>(registry, "read_file", { path, offset: MAX_LINE_NUMBER }, signal);
        if (!c.ok) return viewFailure(c, path, range, signal);
        if (isImageOutput(c.value)) return imageBlocks(c.value);
        return firstOutside(c.value.totalLines ?? 0);
      }
      const backwards = end !== -1 && end < start;
      const input: Record<string, unknown> = { path, offset: start };
      if (end !== -1) input.limit = backwards ? 1 : end - start + 1;
      const r = await callTool<TextRead | ReadImageOutput>(registry, "read_file", input, signal);
      if (!r.ok) return viewFailure(r, path, range, signal);
      if (isImageOutput(r.value)) return imageBlocks(r.value);
      const w = r.value;
      if (w.lines === 0 && w.totalLines !== undefined && start > Math.max(w.totalLines, 1)) return firstOutside(w.totalLines);
      // Past the last line: refused, as the reference does (the answer says how many lines there are).
      if (!backwards && end !== -1 && w.nextOffset === undefined && w.totalLines !== undefined && end > Math.max(w.totalLines, 1)) {
        return shape(
          `Invalid \`view_range\`: [${start}, ${end}]. Its second element \`${end}\` should be smaller than the number of lines in the file: \`${w.totalLines}\``,
        );
      }
      if (backwards) {
        return shape(`Invalid \`view_range\`: [${start}, ${end}]. Its second element \`${end}\` should be larger or equal than its first \`${start}\``);
      }
      let text = capped(numbered(w.content, start), start);
      if (w.nextOffset !== undefined && (end === -1 || w.nextOffset <= end)) {
        text += `\n[the view stopped at line ${w.nextOffset - 1} (at most 65,536 bytes per view); continue with view_range [${w.nextOffset}, ${end}]]`;
      }
      return ok(text);
    }
    const r = await callTool<TextRead | ReadImageOutput>(registry, "read_file", { path }, signal);
    if (!r.ok) return viewFailure(r, path, undefined, signal);
    if (isImageOutput(r.value)) return imageBlocks(r.value);
    return ok(capped(numbered(r.value.content, 1), 1));
  };

  // A directory is listed; a file too large to view whole is shown from its first line.
  const viewFailure = async (r: Called<unknown> & { ok: false }, path: string, range: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    const e = r.error;
    if (e.code === ErrorCode.NOT_A_REGULAR_FILE && (e.details as { type?: unknown } | undefined)?.type === "directory") {
      if (range !== undefined) return shape("The `view_range` parameter is not allowed when `path` points to a directory.");
      return listing(path.replace(/\/+$/, "") || ".", signal);
    }
    if (e.code === ErrorCode.FILE_TOO_LARGE && range === undefined) {
      const w = await callTool<TextRead>(registry, "read_file", { path, offset: 1 }, signal);
      if (!w.ok) return editorError(w.error, path);
      let text = capped(numbered(w.value.content, 1), 1);
      if (w.value.nextOffset !== undefined) {
        text += `\n[the file is longer than one view (65,536 bytes); this is lines 1-${w.value.nextOffset - 1}; continue with view_range [${w.value.nextOffset}, -1]]`;
      }
      return ok(text);
    }
    return editorError(e, path);
  };

  const listing = async (path: string, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    const input: Record<string, unknown> = { depth: 2 };
    if (path !== ".") input.path = path;
    const r = await callTool<{ path: string; entries: string[]; truncated: boolean; notShown: number; note?: string }>(
      registry,
      "list_files",
      input,
      signal,
    );
    if (!r.ok) return editorError(r.error, path);
    const hidden = (entry: string) => entry.split("/").some((segment) => segment.startsWith("."));
    const entries = r.value.entries.filter((e) => !hidden(e));
    const shown = r.value.path === "." ? "." : r.value.path;
    const lines = [`Here's the files and directories up to 2 levels deep in ${shown}, excluding hidden items:`, ...entries];
    // Entries deeper than two levels are left out by design; only a cut listing is reported.
    const onlyDepth = r.value.note !== undefined && /^\d+ entries not shown \(\d+ deeper than depth \d+\)/.test(r.value.note) && !/limit/.test(r.value.note.split(";")[0]!);
    if (r.value.truncated && !onlyDepth) lines.push(`[${r.value.notShown} more entries not shown${r.value.note ? `: ${r.value.note}` : ""}]`);
    return ok(lines.join("\n"));
  };

  const create = async (path: string, text: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    if (typeof text !== "string") return shape("Parameter `file_text` is required for command: create");
    const r = await callTool<{ path: string }>(registry, "write_file", { path, content: text, expectedHash: "absent" }, signal);
    if (r.ok) return ok(`File created successfully at: ${r.value.path}`);
    if (r.error.code === ErrorCode.TARGET_CHANGED) {
      return fail(`Error: File already exists at: ${path}. Cannot overwrite files using command \`create\`.\nchange it with str_replace or insert (view it first)`);
    }
    return editorError(r.error, path);
  };

  const replace = async (path: string, oldStr: unknown, newStr: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    if (typeof oldStr !== "string") return shape("Parameter `old_str` is required for command: str_replace");
    if (newStr !== undefined && typeof newStr !== "string") return shape("Parameter `new_str` must be a string");
    const r = await callTool(registry, "edit_file", { path, edits: [{ oldText: oldStr, newText: newStr ?? "" }] }, signal);
    return r.ok ? ok("Successfully replaced text at exactly one location.") : editorError(r.error, path);
  };

  const insert = async (path: string, line: unknown, text: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    if (!Number.isSafeInteger(line)) return shape("Parameter `insert_line` is required for command: insert");
    if (typeof text !== "string") return shape("Parameter `insert_text` is required for command: insert");
    const r = await callTool<TextRead | ReadImageOutput>(registry, "read_file", { path }, signal);
    if (!r.ok) return editorError(r.error, path);
    if (isImageOutput(r.value)) return shape(`${path} is an image; only text files can be edited`);
    const content = r.value.content;
    // Line starts: insert_line N puts the text after line N (0 = the top).
    const starts = [0];
    for (let i = content.indexOf("\n"); i !== -1 && i + 1 < content.length; i = content.indexOf("\n", i + 1)) starts.push(i + 1);
    const total = content.length === 0 ? 0 : starts.length;
    const n = line as number;
    if (n < 0 || n > total) {
      return shape(`Invalid \`insert_line\` parameter: ${n}. It should be within the range of lines of the file: [0, ${total}]`);
    }
    const eol = content.includes("\r\n") ? "\r\n" : "\n";
    const block = text.endsWith("\n") ? text : text + eol;
    let next: string;
    if (n === total) {
      next = content.length === 0 || content.endsWith("\n") ? content + block : content + eol + block;
    } else {
      const at = starts[n]!;
      next = content.slice(0, at) + block + content.slice(at);
    }
    const w = await callTool(registry, "write_file", { path, content: next, expectedHash: r.value.hash }, signal);
    if (!w.ok) return editorError(w.error, path);
    return ok(`The text was inserted after line ${n} of ${r.value.path}.`);
  };

  const handle = async (input: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    if (typeof input !== "object" || input === null || Array.isArray(input)) {
      return shape("the input must be an object with command and path");
    }
    const i = input as Record<string, unknown>;
    if (typeof i.command !== "string" || !COMMANDS.includes(i.command)) {
      const got = typeof i.command === "string" ? i.command : "(none)";
      return shape(`Unrecognized command ${got}. The allowed commands for the str_replace_based_edit_tool tool are: view, create, str_replace, insert`);
    }
    if (typeof i.path !== "string") return shape(`Parameter \`path\` is required for command: ${i.command}`);
    const p = workspacePath(i.path, root);
    if (!p.ok) return fail(errorText(p.error));
    const path = p.path as string;
    switch (i.command) {
      case "view":
        return view(path, i.view_range, signal);
      case "create":
        return create(path, i.file_text, signal);
      case "str_replace":
        return replace(path, i.old_str, i.new_str, signal);
      default:
        return insert(path, i.insert_line, i.insert_text ?? i.new_str, signal);
    }
  };

  const definition: TextEditor["definition"] =
    max === undefined
      ? { type: "text_editor_20250728", name: "str_replace_based_edit_tool" }
      : { type: "text_editor_20250728", name: "str_replace_based_edit_tool", max_characters: max };
  return {
    definition: Object.freeze(definition),
    handle,
    answer: async (toolUse, signal) => ({ type: "tool_result", tool_use_id: toolUse.id, ...(await handle(toolUse.input, signal)) }),
  };
}

// ---- bash_20250124 --------------------------------------------------------------------------

/** Options of `bash`. */
export interface BashOptions {
  /** Longest a command may run before the shell is stopped, in milliseconds (default 120,000). */
  timeoutMs?: number;
  /** Most characters of output returned per command: the start and the end are kept (default 32,768). */
  maxOutputChars?: number;
}

/** `bash_20250124` answered by workcell: one persistent shell in a process session. */
export interface Bash {
  /** The tool entry for `messages.create({ tools })`. */
  readonly definition: { type: "bash_20250124"; name: "bash" };
  /** Runs one call's `input` (`{ command }` or `{ restart: true }`); rejects only with an AbortError. */
  handle(input: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer>;
  /** `handle` for a whole `tool_use` block: the `tool_result` block to send back. */
  answer(toolUse: AnthropicToolUse, signal?: AbortSignal): Promise<AnthropicToolResultBlock>;
  /** Stops the shell (the next command starts a new one). */
  close(): Promise<void>;
}

const SESSION_TOOLS = ["start_process", "read_process", "write_process", "stop_process"] as const;
/** The shell, reading the commands workcell writes to its stdin, one at a time. */
export const BASH_ARGV: readonly string[] = Object.freeze(["bash", "/dev/stdin"]);
/** Largest `input` of one write_process call, in UTF-8 bytes. */
const MAX_WRITE_BYTES = 8_192;
/** Longest wait of one read_process call, in milliseconds. */
const MAX_WAIT_MS = 30_000;

interface ProcessState {
  id: string;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  output: string;
  cursor: number;
}

/** `text` in pieces of at most `max` UTF-8 bytes, never splitting a character. */
export function utf8Chunks(text: string, max: number): string[] {
  const out: string[] = [];
  let piece = "";
  let bytes = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch, "utf8");
    if (bytes + n > max) {
      out.push(piece);
      piece = "";
      bytes = 0;
    }
    piece += ch;
    bytes += n;
  }
  if (piece.length > 0) out.push(piece);
  return out;
}

/**
 * The text written to the shell for one command: the command in a group with stdin from
 * /dev/null (so a command that reads stdin never eats what follows) and stderr on stdout (so
 * everything it writes comes before the sentinel), then a line with the sentinel and the exit
 * status.
 */
export function bashScript(command: string, sentinel: string): string {
  return `{ ${command}\n} </dev/null 2>&1\nprintf '\\n%s %s\\n' '${sentinel}' "$?"\n`;
}

/**
 * Creates `bash_20250124` over the process session tools of `tools` (start_process,
 * read_process, write_process, stop_process: `createProcessTools(root)` or
 * `createCodingTools(root)`). One shell serves every call, one command at a time; `restart`
 * starts a new one. Each command, wrapped as it is written, is first checked by
 * start_process's own validation as `["bash", "-c", text]` (the command policy), then written
 * to the shell; its end is found by a random sentinel line, and its output is bounded.
 */
export function bash(tools: ToolsInput, options: BashOptions = {}): Bash {
  const registry = requireTools("bash", tools, SESSION_TOOLS, "pass createCodingTools(root) or createProcessTools(root)");
  if (typeof options !== "object" || options === null) throw new TypeError("workcell: bash options must be an object");
  for (const key of Object.keys(options)) {
    if (key !== "timeoutMs" && key !== "maxOutputChars") {
      throw new TypeError(`workcell: bash option ${key}: unknown option; the options are timeoutMs and maxOutputChars`);
    }
  }
  const timeoutMs = options.timeoutMs ?? 120_000;
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > 2 ** 32 - 1) {
    throw new TypeError("workcell: bash option timeoutMs must be an integer from 1 to 4294967295");
  }
  const maxOutput = options.maxOutputChars ?? 32_768;
  if (!Number.isSafeInteger(maxOutput) || maxOutput < 64 || maxOutput > 16 * 1024 * 1024) {
    throw new TypeError("workcell: bash option maxOutputChars must be an integer from 64 to 16777216");
  }
  return bashOver(registry, timeoutMs, maxOutput);
}

function bashOver(registry: ToolRegistry, timeoutMs: number, maxOutput: number): Bash {
  let session: { id: string; cursor: number } | undefined;
  let queue: Promise<unknown> = Promise.resolve();

  const stop = async () => {
    const s = session;
    session = undefined;
    if (s !== undefined) await callTool(registry, "stop_process", { id: s.id, signal: "SIGKILL" }, undefined);
  };

  const start = async (signal?: AbortSignal): Promise<Called<{ id: string; cursor: number }>> => {
    const r = await callTool<ProcessState>(registry, "start_process", { argv: [...BASH_ARGV] }, signal);
    if (!r.ok) return r;
    if (!r.value.running) {
      return {
        ok: false,
        error: new ToolError(ErrorCode.IO_ERROR, `the shell exited as it started (exit code ${r.value.exitCode}): ${r.value.output.slice(0, 500)}`, {
          hint: "bash could not be started here; ask the user to check that bash is installed",
        }),
      };
    }
    return { ok: true, value: { id: r.value.id, cursor: r.value.cursor } };
  };

  // Writes the pieces in order: "written", or the failure and whether it was the first piece
  // (then nothing reached the shell).
  const write = async (id: string, pieces: string[], signal?: AbortSignal): Promise<"written" | { error: ToolError; first: boolean }> => {
    for (const [i, piece] of pieces.entries()) {
      let w: Called<unknown>;
      try {
        w = await callTool(registry, "write_process", { id, input: piece }, signal);
      } catch (err) {
        await stop();
        throw err;
      }
      if (!w.ok) return { error: w.error, first: i === 0 };
    }
    return "written";
  };

  const run = async (command: string, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    const sentinel = `__workcell_${randomToken(16)}__`;
    const script = bashScript(command, sentinel);
    // The command policy sees exactly the text the shell will run.
    const refused = validateWith(registry, "start_process", { argv: ["bash", "-c", script] });
    if (refused !== undefined) return fail(errorText(refused));
    // A shell that ended since the last command (its lifetime, the tools closed) is replaced
    // once, before anything of this command was written; the answer says so.
    let note = "";
    for (let attempt = 0; ; attempt++) {
      if (session === undefined) {
        const started = await start(signal);
        if (!started.ok) return fail(errorText(started.error));
        session = started.value;
        if (attempt > 0) note = "[the previous shell had ended; this command ran in a new one]\n";
      }
      const first = await write(session.id, utf8Chunks(script, MAX_WRITE_BYTES), signal);
      if (first === "written") break;
      await stop();
      if (first.first && attempt === 0) continue;
      return fail(`${errorText(first.error)}\nthe shell was stopped; the next command starts a new one`);
    }
    const s = session!;
    const end = new RegExp(`(?:^|\\n)${sentinel} (\\d+)\\n`);
    const deadline = Date.now() + timeoutMs;
    let head = "";
    let tail = "";
    let omitted = 0;
    const half = Math.floor(maxOutput / 2);
    for (;;) {
      const left = deadline - Date.now();
      if (left <= 0) {
        await stop();
        const out = joined(head, omitted, tail, maxOutput);
        return fail(
          `${out}${out ? "\n" : ""}Error: the command did not finish within ${timeoutMs / 1000} s; the shell was stopped and the next command starts a new one (the working directory and variables are reset)`,
        );
      }
      let r: Called<ProcessState>;
      try {
        r = await callTool<ProcessState>(
          registry,
          "read_process",
          { id: s.id, cursor: s.cursor, waitFor: `${sentinel} \\d+\\n`, waitMs: Math.max(1, Math.min(MAX_WAIT_MS, left)) },
          signal,
        );
      } catch (err) {
        // Cancelled mid-command: the command may still run, so the shell goes.
        await stop();
        throw err;
      }
      if (!r.ok) {
        await stop();
        return fail(`${errorText(r.error)}\nthe shell was stopped; the next command starts a new one`);
      }
      s.cursor = r.value.cursor;
      tail += r.value.output;
      const m = end.exec(tail);
      if (m !== null) {
        tail = tail.slice(0, m.index);
        const code = Number(m[1]);
        const out = joined(head, omitted, tail, maxOutput);
        return ok(note + (code === 0 ? out : `${out}${out ? "\n" : ""}[exit code ${code}]`));
      }
      if (!r.value.running) {
        session = undefined;
        const out = joined(head, omitted, tail, maxOutput);
        const how = r.value.signal ? `killed by ${r.value.signal}` : `exit code ${r.value.exitCode}`;
        return fail(`${out}${out ? "\n" : ""}Error: the shell exited (${how}); the next command starts a new shell`);
      }
      // Keep the first half and a bounded tail; what falls between is counted. The tail keeps
      // enough to hold a sentinel line split across reads.
      if (head.length < half) {
        const take = Math.min(half - head.length, Math.max(0, tail.length - 256));
        head += tail.slice(0, take);
        tail = tail.slice(take);
      }
      const keep = half + 256;
      if (head.length >= half && tail.length > keep) {
        omitted += tail.length - keep;
        tail = tail.slice(tail.length - keep);
      }
    }
  };

  const handle = (input: unknown, signal?: AbortSignal): Promise<AnthropicToolAnswer> => {
    const next = queue.then(async (): Promise<AnthropicToolAnswer> => {
      if (typeof input !== "object" || input === null || Array.isArray(input)) {
        return fail("Error: the input must be { command } or { restart: true }");
      }
      const i = input as Record<string, unknown>;
      if (i.restart === true) {
        await stop();
        return ok("tool has been restarted.");
      }
      if (typeof i.command !== "string" || i.command.trim().length === 0) {
        return fail("Error: no command provided.");
      }
      return run(i.command, signal);
    });
    queue = next.catch(() => undefined);
    return next;
  };

  return {
    definition: Object.freeze({ type: "bash_20250124" as const, name: "bash" as const }),
    handle,
    answer: async (toolUse, signal) => ({ type: "tool_result", tool_use_id: toolUse.id, ...(await handle(toolUse.input, signal)) }),
    close: () => {
      const next = queue.then(stop);
      queue = next.catch(() => undefined);
      return next;
    },
  };
}

/** The kept start, a marker for what was left out, and the kept end, within `max` characters. */
function joined(head: string, omitted: number, tail: string, max: number): string {
  let text = omitted > 0 ? `${head}\n[${omitted} characters omitted]\n${tail}` : head + tail;
  // As a terminal shows it: no final line break.
  if (text.endsWith("\n")) text = text.slice(0, -1);
  return cutMiddle(text, max).text;
}
