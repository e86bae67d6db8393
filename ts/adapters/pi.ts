// `workcell/pi`: workcell's tools as Pi `AgentTool`s (pi-agent-core's `Agent` and `agentLoop`).
// No import from Pi at all: the types below are structural copies of the parts of `AgentTool`
// we fill, so the result fits `@mariozechner/pi-agent-core` (0.7x, Node 20) and
// `@earendil-works/pi-agent-core` (1.x, Node 22) alike.
import type { JsonSchema } from "../schema.js";
import { namedTools, type AnyTool, type NamedTools, type Progress, type ToolOutput } from "../tool.js";
import { ToolCallError, runToolCall, toRegistry, toolTitle, type ToolsInput } from "./common.js";

export { ToolCallError };
export type { ToolsInput };

/** A text block of a Pi tool result. */
export interface PiTextContent {
  type: "text";
  text: string;
}

/** What a Pi tool's `execute` resolves with. */
export interface PiAgentToolResult<T = unknown> {
  /** What the model reads: the tool output's JSON. */
  content: PiTextContent[];
  /** The tool output as an object, for logs and user interfaces. */
  details: T;
}

/** The shape of Pi's `AgentTool` that `toPiTools` produces (`T`: its `details`, the tool's output). */
export interface PiAgentTool<T = unknown, Name extends string = string> {
  name: Name;
  /** Human-readable label for UI display (`read_file` -> `Read file`). */
  label: string;
  description: string;
  /**
   * The tool's JSON Schema. Pi's schemas are TypeBox schemas, which are JSON Schema objects;
   * Pi compiles a plain JSON Schema too, so it is passed through unchanged.
   */
  parameters: JsonSchema;
  execute(toolCallId: string, params: unknown, signal?: AbortSignal, onUpdate?: PiToolUpdateCallback): Promise<PiAgentToolResult<T>>;
}

/**
 * Pi's `onUpdate`: a partial result while the call runs. workcell gives the update's line and
 * the output so far (its last 16 KiB) as text, and the update itself as `details.progress`.
 */
export type PiToolUpdateCallback = (partial: PiAgentToolResult<{ progress: Progress }>) => void;

/** Output kept for the partial results given to `onUpdate`. */
const PARTIAL_OUTPUT = 16 * 1024;

/** The progress listener for one call that reports to Pi's `onUpdate`. */
function piUpdates(onUpdate: PiToolUpdateCallback): (update: Progress) => void {
  let output = "";
  return (update) => {
    if (update.output) {
      output += update.output;
      if (output.length > PARTIAL_OUTPUT) output = output.slice(output.length - PARTIAL_OUTPUT);
    }
    onUpdate({ content: [{ type: "text", text: output ? `${update.message}\n${output}` : update.message }], details: { progress: update } });
  };
}

/** The Pi tool made of each workcell tool of `T`, with its name and its output as `details`. */
export type PiToolOf<T extends AnyTool> = T extends AnyTool ? PiAgentTool<ToolOutput<T>, T["name"]> : never;

/**
 * Converts tools (or a registry) into Pi `AgentTool`s: `agent.state.tools = toPiTools(tools)`.
 * `execute` runs the tool's own validation and the tool with Pi's AbortSignal, and resolves with
 * `{ content: [{ type: "text", text: <output JSON> }], details: <output object> }`. Pi's
 * `onUpdate` (its fourth argument) gets partial results while the call runs.
 *
 * Failures follow Pi's rule for tools, "throw on failure": a recoverable one throws a
 * `ToolCallError` whose message is the `{"error":{code,message,hint}}` JSON, which Pi sends
 * to the model as an error result; a cancelled call rejects with an AbortError.
 */
export function toPiTools<T extends AnyTool>(tools: ToolsInput<T>): NamedTools<PiToolOf<T>>;
export function toPiTools(tools: ToolsInput): PiAgentTool[] {
  const registry = toRegistry(tools);
  return namedTools(registry.list().map((t) => ({
    name: t.name,
    label: toolTitle(t.name),
    description: t.description,
    parameters: t.parameters,
    async execute(toolCallId: string, params: unknown, signal?: AbortSignal, onUpdate?: PiToolUpdateCallback): Promise<PiAgentToolResult> {
      const progress = typeof onUpdate === "function" ? piUpdates(onUpdate) : undefined;
      const result = await runToolCall(registry, t.name, toolCallId, params, signal, progress);
      if (result.isError) throw new ToolCallError(result);
      return { content: [{ type: "text", text: result.content }], details: JSON.parse(result.content) as unknown };
    },
  })));
}
