// Every call of every tool goes through one gate: the host's rules, then approval, then one
// audit event. A deny rule naming a tool stops every call of it before any effect, whichever
// tool it is (reading, writing, process, session, checkpoint) and whichever way the call comes
// (the tool itself, the registry, an adapter such as Anthropic's text editor), and each refused
// call is audited, with a summary that never carries the content.
import { existsSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, executeToolCall, type AuditEvent } from "../dist/index.js";
import { call } from "./helpers.js";
import { withScratch } from "./process-helpers.js";

/** A valid call of each tool, each with an effect a test can see if it ran. */
const CALLS: Record<string, unknown> = {
  read_file: { path: "a.txt" },
  list_files: {},
  search_files: { pattern: "SECRET" },
  write_file: { path: "w.txt", content: "SECRET\n" },
  edit_file: { path: "a.txt", edits: [{ oldText: "one", newText: "SECRET" }] },
  apply_patch: { patch: "*** Begin Patch\n*** Add File: p.txt\n+SECRET\n*** End Patch\n" },
  move_file: { from: "a.txt", to: "moved.txt" },
  delete_file: { path: "a.txt" },
  make_directory: { path: "made" },
  node_process: { source: "require('fs').writeFileSync('node.txt', 'SECRET')" },
  run_command: { argv: ["touch", "cmd.txt"] },
  run_tests: { runner: "node" },
  start_process: { argv: ["touch", "started.txt"] },
  read_process: { id: "p1" },
  write_process: { id: "p1", input: "SECRET\n" },
  stop_process: { id: "p1" },
  list_processes: {},
  checkpoint: { label: "SECRET" },
  list_checkpoints: {},
  diff_checkpoint: { id: "c1" },
  rewind_checkpoint: { id: "c1", expectedHash: "h" },
  apply_staged: { id: "s1", expectedHash: "h" },
  discard_staged: { id: "s1" },
};

describe("one gate for every call of every tool", () => {
  test("a_deny_rule_stops_every_tool_of_the_set_before_any_effect_and_every_refusal_is_audited", async () => {
    const { root, scratchDir } = await withScratch();
    await writeFile(join(root, "a.txt"), "one\n");
    const events: AuditEvent[] = [];
    const base = { sessions: { scratchDir }, runCommand: { scratchDir }, checkpoints: true, onAudit: (e: AuditEvent) => events.push(e) };
    const all = createCodingTools(root, base);
    onTestFinished(() => closeTools(all));
    const names = all.map((t) => t.name);
    // Every tool of the set has a call here (a new tool must be added to CALLS).
    expect(names.filter((n) => !(n in CALLS))).toEqual([]);
    // One tool set per tool, denying only that tool by a rule.
    for (const name of names) {
      const tools = createCodingTools(root, { ...base, rules: [{ tool: name, decision: "deny" }] });
      onTestFinished(() => closeTools(tools));
      const before = events.length;
      const r = await executeToolCall(new ToolRegistry(tools), call(name, CALLS[name]), new AbortController().signal);
      expect(r.isError, `${name}: ${r.content}`).toBe(true);
      expect(JSON.parse(r.content).error.code, name).toBe("APPROVAL_DENIED");
      const got = events.slice(before);
      expect(got.map((e) => [e.tool, e.decision, e.code]), name).toEqual([[name, "refused", "APPROVAL_DENIED"]]);
      expect(got[0]!.summary, name).not.toContain("SECRET");
    }
    // Nothing ran: the workspace is as it was.
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n");
    for (const f of ["w.txt", "p.txt", "moved.txt", "made", "node.txt", "cmd.txt", "started.txt"]) expect(existsSync(join(root, f)), f).toBe(false);
  }, 60_000);

  test("a_deny_rule_holds_through_the_anthropic_text_editor_and_is_audited", async () => {
    const { root } = await withScratch();
    await writeFile(join(root, "a.txt"), "one\n");
    const events: AuditEvent[] = [];
    const tools = createCodingTools(root, {
      rules: [
        { tool: "write_file", decision: "deny" },
        { tool: "edit_file", decision: "deny" },
      ],
      onAudit: (e) => events.push(e),
    });
    onTestFinished(() => closeTools(tools));
    const { textEditor } = await import("workcell/anthropic");
    const ed = textEditor(tools);
    for (const cmd of [
      { command: "create", path: "new.txt", file_text: "SECRET\n" },
      { command: "str_replace", path: "a.txt", old_str: "one", new_str: "SECRET" },
      { command: "insert", path: "a.txt", insert_line: 0, insert_text: "SECRET\n" },
    ]) {
      const r = (await ed.handle(cmd as never)) as { is_error?: boolean; content: string };
      expect(r.is_error, `${cmd.command}: ${r.content}`).toBe(true);
    }
    // (insert reads the file first, through read_file, which the rules allow.)
    expect(events.filter((e) => e.tool !== "read_file").map((e) => [e.tool, e.decision, e.code])).toEqual([
      ["write_file", "refused", "APPROVAL_DENIED"],
      ["edit_file", "refused", "APPROVAL_DENIED"],
      ["write_file", "refused", "APPROVAL_DENIED"],
    ]);
    expect(JSON.stringify(events)).not.toContain("SECRET");
    expect(existsSync(join(root, "new.txt"))).toBe(false);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n");
  });
});
