// `npm run bench`: runs every bench/<concern>.mjs, prints a table and writes bench/results.json.
// Pass names to run only some: `npm run bench -- read write`.
import { readdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createReporter } from "./lib.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const files = (await readdir(here))
  .filter((f) => f.endsWith(".mjs") && !["index.mjs", "lib.mjs"].includes(f))
  .filter((f) => only.length === 0 || only.includes(f.replace(/\.mjs$/, "")))
  .sort();

const h = createReporter();
for (const file of files) {
  console.log(`\n# ${file}`);
  const mod = await import(join(here, file));
  await mod.default(h);
}

const table = [
  "| benchmark | workcell | baseline | ratio | target | met |",
  "|---|---|---|---|---|---|",
  ...h.rows.map((r) => {
    const f = (v) => (typeof v === "number" ? (v >= 100 ? v.toFixed(0) : v.toFixed(2)) : String(v));
    return `| ${r.name} | ${f(r.subjectValue)} ${r.unit} | ${f(r.baselineValue)} ${r.unit} (${r.baseline}) | ${f(r.ratio)} | ${r.target} | ${r.pass ? "yes" : "no"} |`;
  }),
].join("\n");
console.log(`\n${table}\n`);

const results = {
  date: new Date().toISOString(),
  node: process.version,
  cpus: cpus().length,
  cpu: cpus()[0]?.model,
  rows: h.rows,
  table,
};
const out = only.length === 0 ? "results.json" : `results-${only.join("-")}.json`;
await writeFile(join(here, out), JSON.stringify(results, null, 2) + "\n");
console.log(`wrote bench/${out}`);
