// Every public export (of every entry point in package.json's `exports`) and every option (the
// properties of the exported `*Options` types, nested option groups included) has JSDoc, as a
// user's editor shows it: counted with the TypeScript compiler API over the built .d.ts files
// (scripts/jsdoc-count.mjs; `node scripts/jsdoc-count.mjs` lists what lacks it).
import { expect, test } from "vitest";
import { undocumented } from "../scripts/jsdoc-count.mjs";

test("every public export and option has JSDoc (100%)", { timeout: 120_000 }, () => {
  const { exports, options, missing } = undocumented() as { exports: number; options: number; missing: string[] };
  // The count covers the whole surface: the main entry and the adapters, and the options
  // of every factory (createCodingTools' per-tool groups and the approval options among them).
  expect(exports).toBeGreaterThan(150);
  expect(options).toBeGreaterThan(100);
  expect(missing).toEqual([]);
});
