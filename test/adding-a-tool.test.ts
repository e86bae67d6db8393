// docs/adding-a-tool.md names files a contributor edits or reads: every one of them exists
// (a path in backticks, and each cell of the table of tools under its column's folder).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const DOC = "docs/adding-a-tool.md";
const TOP = ["crates/", "src/", "ts/", "test/", "docs/", "bench/", "native/", "scripts/", "examples/"];

/** The repository paths a text names: backticked, starting at a top folder, no placeholder. */
function namedPaths(text: string): string[] {
  const out = new Set<string>();
  for (const [, code] of text.matchAll(/`([^`]+)`/g)) {
    for (const word of code!.split(/[\s(),]+/)) {
      if (!TOP.some((t) => word.startsWith(t)) || word.includes("<") || word.includes("::")) continue;
      out.add(word.replace(/[.:;]+$/, ""));
    }
  }
  return [...out];
}

/** The cells of the table of tools, each under its column's folder. */
function tablePaths(text: string): string[] {
  const out: string[] = [];
  let roots: (string | undefined)[] | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith("|")) {
      roots = undefined;
      continue;
    }
    const cells = line.split("|").slice(1, -1);
    if (roots === undefined) {
      // The header: a column's folder is the path in its backticks.
      roots = cells.map((c) => /`([^`]+\/)`/.exec(c)?.[1]);
      continue;
    }
    cells.forEach((cell, i) => {
      const root = roots![i];
      if (root === undefined) return;
      for (const [, name] of cell.matchAll(/`([^`]+)`/g)) {
        out.push(root + name!);
      }
    });
  }
  return out;
}

test("every file docs/adding-a-tool.md names exists", () => {
  const text = readFileSync(join(ROOT, DOC), "utf8");
  const paths = [...namedPaths(text), ...tablePaths(text)];
  expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toEqual([]);
  // The page names the layers' files and the table names a file per tool and layer.
  expect(paths.length).toBeGreaterThan(40);
});

test("the check would see a file that does not exist", () => {
  const text = "Edit `crates/workcell-core/src/delete_file.rs` and `ts/list.ts` (not `ws.<method>`).\n\n" +
    "| tool | core (`crates/workcell-core/src/`) | factory (`ts/`) |\n|---|---|---|\n| delete_file | `delete_file.rs` | `delete-file.ts` |\n";
  const paths = [...namedPaths(text), ...tablePaths(text)];
  expect(paths).toEqual([
    "crates/workcell-core/src/delete_file.rs",
    "ts/list.ts",
    "crates/workcell-core/src/",
    "ts/",
    "crates/workcell-core/src/delete_file.rs",
    "ts/delete-file.ts",
  ]);
  expect(paths.filter((p) => !existsSync(join(ROOT, p)))).toEqual([
    "crates/workcell-core/src/delete_file.rs",
    "crates/workcell-core/src/delete_file.rs",
    "ts/delete-file.ts",
  ]);
});
