// Generated from crates/workcell-core/src/contract by `npm run generate`; do not edit.

/** A tool error as the core serializes it. */
export interface CoreError {
  code: string;
  message: string;
  hint?: string;
  details?: unknown;
}

/** What a call passed through from the core resolves to. */
export type Outcome<T> = { ok: T } | { error: CoreError };

/** The output of `start_process`. */
export type StartProcessOutput = ProcessOutput;

/** The output of `read_process`. */
export type ReadProcessOutput = ProcessOutput;

/** The output of `stop_process`. */
export type StopProcessOutput = ProcessOutput;

/** The output of `checkpoint`. */
export type CheckpointOutput = CheckpointCreated;

/** The output of `diff_checkpoint`. */
export type DiffCheckpointOutput = CheckpointDiff;

/** The output of `rewind_checkpoint`. */
export type RewindCheckpointOutput = CheckpointRewound;

/** The output of `apply_staged`. */
export type ApplyStagedOutput = AppliedOutput;

/** The output of `discard_staged`. */
export type DiscardStagedOutput = DiscardedOutput;

/** The input of `read_file`. */
export interface ReadFileInput {
  path: string;
  /** First line of a window, from 1. With `offset` or `limit`, a window of lines is read. */
  offset?: number;
  /** Most lines in the window. */
  limit?: number;
}

/** The input of `list_files`. */
export interface ListFilesInput {
  /** The directory to list (default: the root). */
  path?: string;
  depth?: number;
  limit?: number;
  /** Whether `.gitignore` rules apply (default true). */
  gitignore?: boolean;
}

/** The input of `search_files`. */
export interface SearchFilesInput {
  pattern: string;
  path?: string;
  glob?: string;
  ignoreCase?: boolean;
  literal?: boolean;
  limit?: number;
}

/** The input of `write_file`. */
export interface WriteFileInput {
  path: string;
  content: string;
  /** read_file's `hash` of the file: the write happens only if the file still has it. */
  expectedHash?: string;
}

/** The input of `edit_file`. */
export interface EditFileInput {
  path: string;
  edits: {
    oldText: string;
    newText: string;
  }[];
  expectedHash?: string;
}

/** The input of `apply_patch`. */
export interface ApplyPatchInput {
  patch: string;
  /** `{ path: hash }` from read_file (`"absent"`: the file must not exist). */
  expectedHashes?: Record<string, string>;
}

/** The input of `move_file`. */
export interface MoveFileInput {
  from: string;
  to: string;
  overwrite?: boolean;
}

/** The input of `delete_file`. */
export interface DeleteFileInput {
  path: string;
}

/** The input of `make_directory`. */
export interface MakeDirectoryInput {
  path: string;
}

/** The input of `node_process`. */
export interface NodeProcessInput {
  source: string;
  arguments?: string[];
  /** Clamped to the tool's maximum. */
  timeoutMs?: number;
  grants?: Grants;
  /** Run staged: the workspace is unchanged and the result carries the change (apply_staged). */
  stage?: boolean;
}

/** What a process call may ask the person for (only where the host lets calls ask): absolute
 * paths to write or read, the network, or the sandbox off. */
export interface Grants {
  writePaths?: string[];
  readPaths?: string[];
  network?: boolean;
  /** The sandbox a call may ask to turn off (the only value). */
  sandbox?: "off";
}

/** The input of `run_command`. */
export interface RunCommandInput {
  argv: string[];
  cwd?: string;
  /** Clamped to the tool's maximum. */
  timeoutMs?: number;
  grants?: Grants;
  /** Run staged: the workspace is unchanged and the result carries the change (apply_staged). */
  stage?: boolean;
}

/** The input of `run_tests`. */
export interface RunTestsInput {
  /** The test runners run_tests knows. */
  runner: "vitest" | "node" | "go" | "cargo";
  args?: string[];
  timeoutMs?: number;
  grants?: Grants;
  /** Run staged: the workspace is unchanged and the result carries the change (apply_staged). */
  stage?: boolean;
}

/** The input of `start_process`. */
export interface StartProcessInput {
  argv: string[];
  cwd?: string;
  tty?: boolean;
  timeoutMs?: number;
  waitFor?: string;
  waitMs?: number;
  ports?: number[];
  watch?: string[];
  grants?: Grants;
}

/** The input of `read_process`. */
export interface ReadProcessInput {
  id: string;
  cursor?: number;
  waitFor?: string;
  waitMs?: number;
}

/** The input of `write_process`. */
export interface WriteProcessInput {
  id: string;
  input: string;
  closeStdin?: boolean;
}

/** The input of `stop_process`. */
export interface StopProcessInput {
  id: string;
  /** The signals stop_process sends. */
  signal?: "SIGTERM" | "SIGINT" | "SIGKILL";
}

/** The input of `list_processes`. */
export type ListProcessesInput = Record<string, never>;

/** The input of `checkpoint`. */
export interface CheckpointInput {
  /** A short name for the checkpoint, such as `before refactoring`. */
  label?: string;
}

/** The input of `list_checkpoints`. */
export type ListCheckpointsInput = Record<string, never>;

/** The input of `diff_checkpoint`. */
export interface DiffCheckpointInput {
  /** A checkpoint id, as `checkpoint` or `list_checkpoints` returned it. */
  id: string;
}

/** The input of `rewind_checkpoint`. */
export interface RewindCheckpointInput {
  /** A checkpoint id, as `checkpoint` or `list_checkpoints` returned it. */
  id: string;
  /** The `hash` `diff_checkpoint` returned for the change set reviewed. */
  expectedHash: string;
}

/** The input of `apply_staged`. */
export interface ApplyStagedInput {
  /** The staged change's id (the run's `staged.id`). */
  id: string;
  /** The hash shown with it (`staged.hash`). */
  expectedHash: string;
}

/** The input of `discard_staged`. */
export interface DiscardStagedInput {
  id: string;
}

/** read_file's result: a whole text file, a window of lines, or an image. */
export type ReadFileOutput = ReadFileText | ReadFileWindow | ReadFileImage;

/** `ReadFileText`, a shape of the tools' contract. */
export interface ReadFileText {
  path: string;
  content: string;
  bytes: number;
  /** The `hashFile` string of the bytes returned (pass it as `expectedHash`). */
  hash: string;
}

/** `ReadFileWindow`, a shape of the tools' contract. */
export interface ReadFileWindow {
  /** The normalized path. */
  path: string;
  /** The lines of the window, each with its line terminator. */
  content: string;
  /** UTF-8 byte length of `content` (at most 65,536). */
  bytes: number;
  /** The `hashFile` string of the whole file (pass it as `expectedHash`). */
  hash: string;
  /** Size of the file in bytes, as it was when opened. */
  fileBytes: number;
  /** The 1-based number of the first line in `content` (the requested offset). */
  offset: number;
  /** How many lines `content` holds. */
  lines: number;
  /** The line to pass as `offset` to read on; absent when the window reached the end. */
  nextOffset?: number;
  /** The number of lines in the file; present when the read reached the end of the file. */
  totalLines?: number;
}

/** An image read by `read_file` (PNG, JPEG, GIF or WebP, recognized by content). */
export interface ReadFileImage {
  path: string;
  /** `image/png`, `image/jpeg`, `image/gif` or `image/webp`. */
  mimeType: "image/png" | "image/jpeg" | "image/gif" | "image/webp";
  /** The file's bytes, base64 (standard alphabet, padded). */
  data: string;
  /** The file's size in bytes. */
  bytes: number;
  /** The `hashFile` string of the bytes. */
  hash: string;
}

/** The output of `list_files`. */
export interface ListFilesOutput {
  /** The listed directory, normalized (`.` for the root). */
  path: string;
  /** Workspace-relative entries: `dir/`, `file`, `link -> target`, `name [fifo]`. */
  entries: string[];
  /** True when some entries were not shown. */
  truncated: boolean;
  /** How many entries were not shown (a lower bound when the walk stopped early). */
  notShown: number;
  note?: string;
}

/** The output of `search_files`. */
export interface SearchFilesOutput {
  /** `path:line: text`, in tree order. */
  matches: string[];
  /** True when matches were left out (limit, output cap, or the search stopped early). */
  truncated: boolean;
  /** Files searched (binary ones included). */
  filesSearched: number;
  note?: string;
}

/** The output of `write_file`. */
export interface WriteFileOutput {
  /** The normalized path, as given (a symlink's name, not its target's). */
  path: string;
  /** UTF-8 byte length of the content written. */
  bytes: number;
  /** Whether the file did not exist before. */
  created: boolean;
}

/** The output of `edit_file`. */
export interface EditFileOutput {
  /** The normalized path, as given. */
  path: string;
  /** Number of edits applied. */
  edits: number;
  /** UTF-8 byte length of the file after the edit. */
  bytes: number;
  /** Unified diff of the change (bounded). */
  diff: string;
}

/** The output of `apply_patch`. */
export interface ApplyPatchOutput {
  files: {
    /** The path as the patch names it (normalized). */
    path: string;
    /** `"add"`, `"delete"` or `"update"`. */
    action: "add" | "delete" | "update";
    /** An Update's `*** Move to` path. */
    movedTo?: string;
    /** UTF-8 byte length of the file after the patch (absent for a delete). */
    bytes?: number;
  }[];
  /** Unified diff of every file (bounded, see [`crate::diff`]). */
  diff: string;
  /** Set when a hunk matched only in a tolerant pass (which file, which pass). */
  note?: string;
}

/** The output of `move_file`. */
export interface MoveFileOutput {
  from: string;
  to: string;
  /** Whether something at `to` was replaced (only with `overwrite`). */
  replaced: boolean;
}

/** The output of `delete_file`. */
export interface DeleteFileOutput {
  path: string;
  /** `"file"`, `"symlink"` or `"directory"`. */
  kind: "file" | "symlink" | "directory";
}

/** The output of `make_directory`. */
export interface MakeDirectoryOutput {
  path: string;
  /** Whether the directory did not exist before. */
  created: boolean;
}

/** node_process's result: the run (with its `note`), and the denials. */
export interface NodeProcessOutput {
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  /** Always false here: a timeout is the `NODE_PROCESS_TIMEOUT` error. */
  timedOut: boolean;
  durationMs: number;
  /** What confined the child. */
  sandbox: SandboxReport;
  /** With `network: { allow }`: the connections through the proxy. */
  network?: NetworkCounts;
  /** Set when the requested timeout was above the host's maximum and was clamped. */
  note?: string;
  /** A staged run's change (contract §20): the workspace is unchanged until it is applied. */
  staged?: StagedOutput;
  /** What the sandbox refused, as the output shows it (with a `note` on the next step). */
  denials?: SandboxDenial[];
}

/** The `sandbox` field of a result. */
export interface SandboxReport {
  /** The Landlock ABI the child was confined with; `None` without Landlock. */
  landlockAbi: number | null;
  /** Whether the child's file access was confined (Landlock). */
  filesystem: "confined" | "open";
  /** Whether the child could use the network. */
  network: "blocked" | "allowed" | "filtered" | "open";
  /** How the call's processes are contained. */
  processes: "namespace" | "group";
  /** Whether Node.js's permission model was on (node_process only). */
  nodePermission: boolean;
  /** The resource caps and how each was enforced. */
  limits: SandboxLimitsReport;
  /** Whether the protected paths were read-only for the processes. */
  protect: "read-only" | "partial" | "none" | "open";
}

/** The `sandbox.limits` field of a result. */
export interface SandboxLimitsReport {
  processes: SandboxLimitReport;
  memoryBytes: SandboxLimitReport;
  fileBytes: SandboxLimitReport;
}

/** One limit as enforced. */
export interface SandboxLimitReport {
  max: number;
  /** How a limit is enforced. */
  by: "rlimit" | "cgroup-v2" | "cgroup-v1" | "none";
}

/** The connections of one call: what was let through and what was refused. */
export interface NetworkCounts {
  /** Requests and tunnels the allowlist let through (whether the destination then answered or not). */
  allowed: number;
  /** Requests refused: not listed, a non-public address, malformed, oversized, over the cap. */
  refused: number;
}

/** What a staged run's result carries (§19's diff shape and the change's id). */
export interface StagedOutput {
  /** Pass it to apply_staged or discard_staged. */
  id: string;
  summary: string;
  /** The unified diff of the change (at most 1 MiB). */
  diff: string;
  /** Every path the change touches (a directory's ends in `/`). */
  files: StagedFile[];
  /** Identifies this change set: apply_staged's `expectedHash`. */
  hash: string;
  truncated?: boolean;
}

/** One path of a staged change (a directory's ends in `/`). */
export interface StagedFile {
  path: string;
  action: StagedAction;
}

/** What a staged change does to one path (§19's actions). */
export type StagedAction = "added" | "modified" | "deleted" | "mode" | "type";

/** `SandboxDenial`, a shape of the tools' contract. */
export interface SandboxDenial {
  /** `"write"`, `"read"` or `"network"`. */
  kind: "write" | "read" | "network";
  path?: string;
}

/** A process tool's result as the tool returns it: the core's result and the sandbox denials
 * its output showed (read by the JS layer from the core's `sandboxDenials`). */
export interface RunCommandOutput {
  exitCode: number | null;
  signal: string | null;
  /** stdout and stderr as written, head and tail kept. */
  output: string;
  truncated: boolean;
  omittedBytes: number;
  /** Always false in a result: a timeout is the `COMMAND_TIMEOUT` error. */
  timedOut: boolean;
  durationMs: number;
  /** The timeout in force, in milliseconds. */
  timeoutMs: number;
  /** Said when the requested timeout was clamped. */
  note?: string;
  /** What confined the command. */
  sandbox: SandboxReport;
  /** With `network: { allow }`: the connections through the proxy. */
  network?: NetworkCounts;
  /** A staged run's change (contract §20): the workspace is unchanged until it is applied. */
  staged?: StagedOutput;
  /** What the sandbox refused, as the output shows it (with a `note` on the next step). */
  denials?: SandboxDenial[];
}

/** A process tool's result as the tool returns it: the core's result and the sandbox denials
 * its output showed (read by the JS layer from the core's `sandboxDenials`). */
export interface RunTestsOutput {
  /** `passed`, `failed` or `incomplete` ([`verdict::decide`]). */
  status: "passed" | "failed" | "incomplete";
  report: string;
  passed: number;
  failed: number;
  skipped: number;
  failures: {
    name: string;
    file?: string;
    output: string;
  }[];
  buildErrors: string[];
  exitCode: number | null;
  durationMs: number;
  timeoutMs: number;
  note?: string;
  /** What confined the runner. */
  sandbox: SandboxReport;
  /** With `network: { allow }`: the connections through the proxy. */
  network?: NetworkCounts;
  /** A staged run's change (contract §20): the workspace is unchanged until it is applied. */
  staged?: StagedOutput;
  /** What the sandbox refused, as the output shows it (with a `note` on the next step). */
  denials?: SandboxDenial[];
}

/** start_process, read_process and stop_process. */
export interface ProcessOutput {
  id: string;
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  output: string;
  cursor: number;
  omittedBytes: number;
  matched: boolean;
  alerts: {
    keyword: string;
    line: string;
  }[];
  alertsOmitted: number;
  durationMs: number;
  /** What was in force for this session (its grants included). */
  sandbox: SandboxReport;
  note?: string;
  /** What the sandbox refused, as the output shows it (with a `note` on the next step). */
  denials?: SandboxDenial[];
}

/** What write_process returns. */
export interface WriteProcessOutput {
  id: string;
  /** Bytes written to the process's stdin. */
  bytes: number;
}

/** What list_processes returns. */
export interface ListProcessesOutput {
  processes: ProcessInfo[];
}

/** One row of list_processes. */
export interface ProcessInfo {
  id: string;
  argv: string[];
  running: boolean;
  exitCode: number | null;
  signal: string | null;
  /** ISO 8601, UTC. */
  startedAt: string;
  durationMs: number;
}

/** What `create` returns: the new checkpoint, what was not kept, the checkpoints dropped to
 * stay within `maxBytes`. */
export interface CheckpointCreated {
  id: string;
  label?: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Files and symlinks recorded. */
  files: number;
  /** Their size in bytes. */
  bytes: number;
  /** Files over `maxFileBytes`, not kept. */
  notKept: {
    path: string;
    bytes: number;
  }[];
  /** Checkpoints dropped to stay within `maxBytes`. */
  dropped: string[];
}

/** `list_checkpoints`'s result: the checkpoints of the workspace, oldest first. */
export interface ListCheckpointsOutput {
  checkpoints: CheckpointSummary[];
}

/** One checkpoint as `list` shows it. */
export interface CheckpointSummary {
  id: string;
  label?: string;
  /** Milliseconds since the epoch. */
  createdAt: number;
  /** Files and symlinks recorded. */
  files: number;
  /** Their size in bytes. */
  bytes: number;
}

/** What changed since a checkpoint: the complete file list, a bounded unified diff, and the
 * hash `rewind` needs. */
export interface CheckpointDiff {
  /** One line for a person. */
  summary: string;
  /** Unified diff, at most 1 MiB (then `truncated` and `[N more bytes]`); binary files named. */
  diff: string;
  /** Every changed path. */
  files: {
    path: string;
    action: CheckpointAction;
  }[];
  /** Identifies this change set: pass it to `rewind` as `expectedHash`. */
  hash: string;
  truncated?: boolean;
}

/** What happened to a path since the checkpoint (`mode`: only its permission bits; `type`: a
 * file became a symlink or the reverse). */
export type CheckpointAction = "added" | "modified" | "deleted" | "mode" | "type";

/** What `rewind` did: every path it put back. */
export interface CheckpointRewound {
  id: string;
  /** One line for a person. */
  summary: string;
  /** The paths the rewind changed, with what it did to each. */
  files: {
    path: string;
    action: CheckpointAction;
  }[];
}

/** apply_staged's result. */
export interface AppliedOutput {
  id: string;
  summary: string;
  files: StagedFile[];
}

/** discard_staged's result. */
export interface DiscardedOutput {
  id: string;
  discarded: boolean;
}

/** What `read_file` returns: a text file's content or an image. */
export type ReadResult = ReadFileText | ReadFileImage;

/** What a person is shown before a writing call runs. Serializes as `{ summary, diff?,
 * diffs?: [{ path, diff, added, removed }], files: [{ path, hash }] }`. */
export interface ApprovalPreview {
  /** One line: `edit_file src/a.ts: +3 -1`. */
  summary: string;
  /** The unified diff of the whole change, every changed line of every file (never cut);
   * `None` where there is no content change to show (move_file, make_directory). */
  diff?: string;
  /** Each file's part of `diff`, in call order (`diff` is their concatenation). */
  diffs?: {
    /** The path the call names (a move's source; its destination is in the diff's `+++` line). */
    path: string;
    /** The file's whole unified diff: its `---`/`+++` header lines, then every hunk. */
    diff: string;
    /** Lines added and removed. */
    added: number;
    removed: number;
  }[];
  /** `(path, approval string)` of every path the call touches, in call order. */
  files: {
    path: string;
    hash: string;
  }[];
}

/** Every tool's input and output, by tool name. */
export interface ToolShapes {
  read_file: { input: ReadFileInput; output: ReadFileOutput };
  list_files: { input: ListFilesInput; output: ListFilesOutput };
  search_files: { input: SearchFilesInput; output: SearchFilesOutput };
  write_file: { input: WriteFileInput; output: WriteFileOutput };
  edit_file: { input: EditFileInput; output: EditFileOutput };
  apply_patch: { input: ApplyPatchInput; output: ApplyPatchOutput };
  move_file: { input: MoveFileInput; output: MoveFileOutput };
  delete_file: { input: DeleteFileInput; output: DeleteFileOutput };
  make_directory: { input: MakeDirectoryInput; output: MakeDirectoryOutput };
  node_process: { input: NodeProcessInput; output: NodeProcessOutput };
  run_command: { input: RunCommandInput; output: RunCommandOutput };
  run_tests: { input: RunTestsInput; output: RunTestsOutput };
  start_process: { input: StartProcessInput; output: StartProcessOutput };
  read_process: { input: ReadProcessInput; output: ReadProcessOutput };
  write_process: { input: WriteProcessInput; output: WriteProcessOutput };
  stop_process: { input: StopProcessInput; output: StopProcessOutput };
  list_processes: { input: ListProcessesInput; output: ListProcessesOutput };
  checkpoint: { input: CheckpointInput; output: CheckpointOutput };
  list_checkpoints: { input: ListCheckpointsInput; output: ListCheckpointsOutput };
  diff_checkpoint: { input: DiffCheckpointInput; output: DiffCheckpointOutput };
  rewind_checkpoint: { input: RewindCheckpointInput; output: RewindCheckpointOutput };
  apply_staged: { input: ApplyStagedInput; output: ApplyStagedOutput };
  discard_staged: { input: DiscardStagedInput; output: DiscardStagedOutput };
}
