// The tools' schemas are the ones generated from the core's definitions
// (crates/workcell-core/src/contract, `npm run generate`): each tool's `parameters` is its
// generated input schema with hand-written descriptions (compact or full), its `outputSchema`
// the generated output schema, and a bad input is refused as the generated schema says.
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { createCodingTools, createRunCommandTool } from "../dist/index.js";
import { TOOL_SCHEMAS } from "../dist/generated/contract.js";
import { invalid, tempWorkspace } from "./helpers.js";

/** `schema` without its descriptions. */
function shape(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(shape);
  if (schema === null || typeof schema !== "object") return schema;
  return Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "description").map(([k, v]) => [k, shape(v)]));
}

/** The generated input schema of `name`, less `grants` (listed only where the host lets calls ask). */
function generatedInput(name: keyof typeof TOOL_SCHEMAS): unknown {
  const input = TOOL_SCHEMAS[name].input as { properties: Record<string, unknown> };
  const { grants: _, ...properties } = input.properties;
  return { ...input, properties };
}

describe("the generated contract", () => {
  test("every tool's parameters and outputSchema are the generated ones, compact and full", async () => {
    const { parent, root } = await tempWorkspace();
    for (const descriptions of ["compact", "full"] as const) {
      const tools = createCodingTools(root, { descriptions, checkpoints: { storeDir: join(parent, "store") } });
      expect(tools.map((t) => t.name).sort()).toEqual(Object.keys(TOOL_SCHEMAS).sort());
      for (const tool of tools) {
        const name = tool.name as keyof typeof TOOL_SCHEMAS;
        expect(shape(tool.parameters), `${tool.name} (${descriptions})`).toEqual(generatedInput(name));
        expect(tool.outputSchema, tool.name).toBe(TOOL_SCHEMAS[name].output);
        if (descriptions === "full") {
          for (const [prop, sub] of Object.entries(tool.parameters.properties ?? {})) {
            expect((sub as { description?: string }).description, `${tool.name}.${prop} has a description`).toBeTruthy();
          }
        }
      }
    }
  });

  test("a process tool lists grants only where the host lets calls ask", async () => {
    const { root } = await tempWorkspace();
    const plain = createCodingTools(root).find((t) => t.name === "run_command")!;
    expect(plain.parameters.properties).not.toHaveProperty("grants");
    const asking = createRunCommandTool(root, { approvalFor: { grant: "ask" }, approve: () => false });
    expect(shape(asking.parameters.properties!.grants)).toEqual(TOOL_SCHEMAS.run_command.input.properties.grants);
  });

  test("the generated limits refuse a value out of range before any effect", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const list = tools.find((t) => t.name === "list_files")!;
    expect(invalid(() => list.validate({ depth: 11 })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    const start = tools.find((t) => t.name === "start_process")!;
    expect(invalid(() => start.validate({ argv: ["cat"], ports: [0] })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => start.validate({ argv: ["cat"], waitMs: 30_001 })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    const stop = tools.find((t) => t.name === "stop_process")!;
    expect(invalid(() => stop.validate({ id: "p1", signal: "SIGHUP" })).message).toBe("INVALID_ARGUMENTS_SHAPE");
  });
});
