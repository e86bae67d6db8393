// What every tool object carries besides its call (contract §10), and what execute does when a
// host skips validate: the one definition of each tool's parameters drives the cases, so a new
// tool or parameter is covered without editing this file.
import { describe, expect, test } from "vitest";
import { createCodingTools, effectOf, ToolError } from "../dist/index.js";
import type { JsonSchema } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

/** A value of another JSON type than the schema's. */
function wrongType(schema: JsonSchema): unknown {
  switch (schema.type) {
    case "string":
      return 42;
    case "array":
      return "not an array";
    case "object":
      return 7;
    default:
      return "not a number or boolean";
  }
}

describe("tool descriptor", () => {
  test("every tool has an effect: read for the readers (read_process and list_processes included), write for the writers, process for the rest", async () => {
    const { root } = await tempWorkspace();
    const effects = Object.fromEntries(createCodingTools(root).map((t) => [t.name, t.effect]));
    expect(effects).toEqual({
      read_file: "read",
      list_files: "read",
      search_files: "read",
      write_file: "write",
      edit_file: "write",
      apply_patch: "write",
      move_file: "write",
      delete_file: "write",
      make_directory: "write",
      node_process: "process",
      run_command: "process",
      run_tests: "process",
      start_process: "process",
      read_process: "read",
      write_process: "process",
      stop_process: "process",
      list_processes: "read",
      apply_staged: "write",
      discard_staged: "read",
    });
    expect(effectOf({})).toBe("process");
    expect(effectOf({ effect: "bogus" as never })).toBe("process");
  });

  test("execute_with_wrong_types_is_tool_arguments_invalid_not_a_napi_conversion_error", async () => {
    const { root } = await tempWorkspace();
    let cases = 0;
    for (const tool of createCodingTools(root)) {
      const props = (tool.parameters.properties ?? {}) as Record<string, JsonSchema>;
      for (const [name, schema] of Object.entries(props)) {
        // The other parameters well typed where required, this one wrong.
        const input: Record<string, unknown> = {};
        for (const req of (tool.parameters.required ?? []) as string[]) {
          const s = props[req]!;
          input[req] = s.type === "array" ? [] : s.type === "string" ? "a.txt" : 1;
        }
        input[name] = wrongType(schema);
        const err = await tool.execute(input as never, ctx()).then(
          () => undefined,
          (e: unknown) => e,
        );
        cases++;
        if (err === undefined) continue; // a wrong value the tool could still use (coerced by JS)
        expect(err, `${tool.name}.${name}`).toBeInstanceOf(ToolError);
        expect((err as ToolError).code, `${tool.name}.${name}: ${(err as Error).message}`).not.toMatch(/Expected$/);
        expect((err as Error).message, `${tool.name}.${name}`).not.toMatch(/Failed to convert/);
      }
    }
    expect(cases).toBeGreaterThan(10);
  });
});
