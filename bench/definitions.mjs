// What the tool definitions cost a model per request: the JSON of `registry.definitions()` for
// createCodingTools' default tools, in bytes per tool, compact (the default) and full, against
// the budget of 700 bytes per tool (Pi's coding tools: 685 bytes per tool).
import { createCodingTools, ToolRegistry } from "../dist/index.js";

const BUDGET = 700;
const PI_BYTES_PER_TOOL = 685;

/** Bytes per tool of the definitions' JSON, and the whole. */
export function definitionBytes(root, options) {
  const defs = new ToolRegistry(createCodingTools(root, options)).definitions();
  const total = Buffer.byteLength(JSON.stringify(defs));
  return { total, tools: defs.length, perTool: total / defs.length };
}

export default async function bench(h) {
  const { dir, cleanup } = await h.tempDir();
  try {
    for (const style of ["compact", "full"]) {
      const d = definitionBytes(dir, { descriptions: style });
      h.row({
        name: `tool definitions, ${style}${style === "compact" ? " (default)" : ""}, bytes per tool`,
        subject: `createCodingTools, descriptions: "${style}" (${d.tools} tools, ${d.total} bytes)`,
        baseline: "Pi's coding tools",
        unit: "bytes",
        subjectValue: d.perTool,
        baselineValue: PI_BYTES_PER_TOOL,
        ratio: d.perTool / PI_BYTES_PER_TOOL,
        target: style === "compact" ? `<= ${BUDGET} bytes per tool` : "(reference)",
        pass: style === "compact" ? d.perTool <= BUDGET : true,
      });
    }
  } finally {
    await cleanup();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { createReporter } = await import("./lib.mjs");
  await bench(createReporter());
}
