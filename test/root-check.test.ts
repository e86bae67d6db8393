// The workspace is the one the tools were made for (contract §4): a root renamed away with a
// symlink left at its old name (pointing to it) is WORKSPACE_ROOT_CHANGED for every tool of the
// set, file and process tools alike, and nothing is done in the renamed directory.
import { existsSync } from "node:fs";
import { readdir, rename, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, executeToolCall } from "../dist/index.js";
import { call } from "./helpers.js";
import { withScratch } from "./process-helpers.js";

const CALLS: Record<string, unknown> = {
  read_file: { path: "a.txt" },
  list_files: {},
  search_files: { pattern: "a" },
  write_file: { path: "b.txt", content: "x" },
  edit_file: { path: "a.txt", edits: [{ oldText: "a", newText: "b" }] },
  apply_patch: { patch: "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch\n" },
  move_file: { from: "a.txt", to: "m.txt" },
  delete_file: { path: "a.txt" },
  make_directory: { path: "d" },
  node_process: { source: "require('fs').writeFileSync('n.txt', 'x')" },
  run_command: { argv: ["touch", "c.txt"] },
  run_tests: { runner: "node" },
  start_process: { argv: ["touch", "s.txt"] },
  checkpoint: {},
};

describe("the root check", () => {
  test("a_root_renamed_away_with_a_symlink_at_its_old_name_is_refused_by_every_tool", async () => {
    const { parent, root, scratchDir } = await withScratch();
    await writeFile(join(root, "a.txt"), "a\n");
    const tools = createCodingTools(root, { sessions: { scratchDir }, runCommand: { scratchDir }, checkpoints: true });
    onTestFinished(() => closeTools(tools));
    const reg = new ToolRegistry(tools);
    await rename(root, join(parent, "moved"));
    await symlink("moved", root);
    for (const [name, args] of Object.entries(CALLS)) {
      const r = await executeToolCall(reg, call(name, args), new AbortController().signal);
      expect(r.isError, `${name}: ${r.content}`).toBe(true);
      expect(JSON.parse(r.content).error.code, name).toBe("WORKSPACE_ROOT_CHANGED");
    }
    expect(await readdir(join(parent, "moved"))).toEqual(["a.txt"]);
    expect(existsSync(join(parent, "moved", "a.txt"))).toBe(true);
  }, 60_000);
});
