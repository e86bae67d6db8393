// What a person approves is every byte of what runs (the request carries the whole input,
// script and per-file diffs; the MCP view shows all of it or refuses), and every call of every
// tool goes through one gate: rules, approval, audit (no side door through the process
// sessions, the AI SDK's approval flow, or the provider adapters' own parsing).
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { closeTools, createApplyPatchTool, createCodingTools, createNodeProcessTool, createProcessTools, createWriteTool, type ApprovalRequest, type AuditEvent } from "../dist/index.js";
import { ctx, mcpApprover, rejection, tempWorkspace } from "./helpers.js";
import { aliveWith, marker, withScratch } from "./process-helpers.js";

async function until(check: () => boolean | Promise<boolean>, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

/** The attack patch: long additions first, then a one-line change of src/auth.js. */
function paddedPatch(files: string[], lines: number, width: number): string {
  const add = Array.from({ length: lines }, (_, i) => `+${`line ${i} `.padEnd(width, "x")}`).join("\n");
  return [
    "*** Begin Patch",
    ...files.flatMap((f) => [`*** Add File: ${f}`, add]),
    "*** Update File: src/auth.js",
    "@@ export function allowed(token) {",
    "-  return check(token);",
    "+  return true;",
    "*** End Patch",
    "",
  ].join("\n");
}

describe("a yes covers every byte of what runs", () => {
  test("a_second_line_hidden_behind_padding_in_write_process_input_is_shown_to_the_approver", async () => {
    const { root, scratchDir } = await withScratch();
    const seen: ApprovalRequest[] = [];
    const events: AuditEvent[] = [];
    const mcp = await mcpApprover();
    const tools = createProcessTools(root, {
      scratchDir,
      approvalFor: { process: "ask" },
      approve: async (req, c) => {
        seen.push(req);
        return mcp.approve(req, c);
      },
      onAudit: (e) => events.push(e),
    });
    onTestFinished(() => closeTools(tools));
    const [start, , write] = tools as unknown as [any, any, any];
    // A REPL that runs each line it reads (a shell reading stdin is refused by the command policy).
    const started = await start.execute(start.validate({ argv: ["node", "-i"] }), ctx());
    const input = `console.log("build started") // ${" ".repeat(300)}\nrequire("fs").writeFileSync("HIDDEN", "")\n`;
    await write.execute(write.validate({ id: started.id, input }), ctx());
    const req = seen[1]!;
    expect(req.tool).toBe("write_process");
    expect(req.stdin).toBe(input);
    // The MCP view shows every line, each on its own: the second line cannot hide.
    const message = mcp.asked[1]!;
    expect(message).toContain(`   2 ${JSON.stringify('require("fs").writeFileSync("HIDDEN", "")')}`);
    expect(message).toContain("all 2 lines");
    // The yes covers it: the line runs.
    expect(await until(() => existsSync(join(root, "HIDDEN")))).toBe(true);
    // The summary (the audit's too) counts the input and never carries it.
    expect(req.summary).toBe(`write_process ${started.id}: ${Buffer.byteLength(input)} bytes, 2 lines`);
    const audit = events.find((e) => e.tool === "write_process")!;
    expect(audit.summary).not.toContain("console");
    expect(JSON.stringify(events)).not.toContain("HIDDEN");
  });

  test("a_node_process_script_over_16_kib_is_shown_whole_by_the_mcp_view", async () => {
    const { root } = await tempWorkspace();
    const mcp = await mcpApprover();
    const tool = createNodeProcessTool(root, { approvalFor: { process: "ask" }, approve: mcp.approve });
    const source = `// ${"padding ".repeat(2300)}\nrequire("fs").writeFileSync("TAIL", "ran");\n`;
    expect(source.length).toBeGreaterThan(16 * 1024);
    const out = await tool.execute(tool.validate({ source }), ctx());
    expect(out.exitCode).toBe(0);
    expect(mcp.asked[0]).toContain('require("fs").writeFileSync("TAIL", "ran");');
    expect(mcp.asked[0]).not.toContain("cut at");
    expect(await readFile(join(root, "TAIL"), "utf8")).toBe("ran");
  });

  test("a_change_behind_a_2000_line_addition_reaches_the_approver_and_the_mcp_view_or_is_refused", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "src"));
    const auth = "export function allowed(token) {\n  return check(token);\n}\n";
    await writeFile(join(root, "src/auth.js"), auth);
    const seen: ApprovalRequest[] = [];
    const mcp = await mcpApprover();
    const events: AuditEvent[] = [];
    const tool = createApplyPatchTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req, c) => {
        seen.push(req);
        return mcp.approve(req, c);
      },
      onAudit: (e) => events.push(e),
    });
    // Fits the MCP message: asked, with both files' headers and the whole change of src/auth.js.
    await tool.execute(tool.validate({ patch: paddedPatch(["docs/notes.md"], 2000, 24) }), ctx());
    const req = seen[0]!;
    expect(req.summary).toBe("apply_patch 2 files: +2001 -1 (+docs/notes.md, src/auth.js)");
    expect(req.diff).toContain("+++ b/src/auth.js\n@@ -1,3 +1,3 @@\n export function allowed(token) {\n-  return check(token);\n+  return true;\n");
    expect(req.diffs!.map((d) => [d.path, d.added, d.removed])).toEqual([
      ["docs/notes.md", 2000, 0],
      ["src/auth.js", 1, 1],
    ]);
    expect(mcp.asked[0]).toContain("  src/auth.js: +1 -1");
    expect(mcp.asked[0]).toContain("-  return check(token);\n+  return true;");
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toContain("return true;");
    // Too long for the MCP message: the approver still gets every byte, the view refuses
    // without asking, and nothing is written.
    await writeFile(join(root, "src/auth.js"), auth);
    const patch = paddedPatch(["docs/more.md", "docs/most.md"], 2000, 18);
    const err = await rejection(tool.execute(tool.validate({ patch }), ctx()));
    expect(err.code).toBe("APPROVAL_VIEW_INCOMPLETE");
    expect(err.details.files.map((f: { path: string }) => f.path)).toEqual(["docs/more.md", "docs/most.md", "src/auth.js"]);
    expect(seen[1]!.diff).toContain("-  return check(token);\n+  return true;\n");
    expect(mcp.asked).toHaveLength(1);
    expect(existsSync(join(root, "docs/more.md"))).toBe(false);
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toBe(auth);
    expect(events.at(-1)).toMatchObject({ tool: "apply_patch", decision: "refused", code: "APPROVAL_VIEW_INCOMPLETE" });
  });

  test("every_line_of_a_large_write_file_reaches_the_approver_and_the_mcp_view", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "big.txt"), "old\n");
    const seen: ApprovalRequest[] = [];
    const mcp = await mcpApprover();
    const tool = createWriteTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req, c) => {
        seen.push(req);
        return mcp.approve(req, c);
      },
    });
    const content = `${"filler line\n".repeat(2500)}TAIL LINE\n`;
    expect(content.length).toBeGreaterThan(16 * 1024);
    await tool.execute(tool.validate({ path: "big.txt", content }), ctx());
    expect(seen[0]!.diff!.endsWith("+filler line\n+TAIL LINE\n")).toBe(true);
    expect(seen[0]!.summary).toBe("write_file big.txt: +2501 -1");
    expect(mcp.asked[0]).toContain("+TAIL LINE");
  });
});

describe("one gate for every call", () => {
  test("a_deny_rule_stops_read_process_stop_process_and_list_processes_and_every_call_is_audited", async () => {
    const { root, scratchDir } = await withScratch();
    const events: AuditEvent[] = [];
    const tools = createProcessTools(root, {
      scratchDir,
      rules: [
        { tool: "stop_process", decision: "deny" },
        { tool: "read_process", decision: "deny" },
        { tool: "list_processes", decision: "deny" },
      ],
      onAudit: (e) => events.push(e),
    });
    onTestFinished(() => closeTools(tools));
    const [start, read, , stop, list] = tools as unknown as [any, any, any, any, any];
    const mark = marker();
    const started = await start.execute(start.validate({ argv: ["sh", "-c", `sleep 30; : ${mark}`] }), ctx());
    for (const [tool, input] of [
      [stop, { id: started.id }],
      [read, { id: started.id }],
      [list, {}],
    ] as const) {
      const err = await rejection(tool.execute(tool.validate(input), ctx()));
      expect(err.code).toBe("APPROVAL_DENIED");
    }
    // The denied stop did not stop it.
    expect(aliveWith(mark).length).toBeGreaterThan(0);
    expect(events.map((e) => [e.tool, e.decision, e.code])).toEqual([
      ["start_process", "allow", undefined],
      ["stop_process", "refused", "APPROVAL_DENIED"],
      ["read_process", "refused", "APPROVAL_DENIED"],
      ["list_processes", "refused", "APPROVAL_DENIED"],
    ]);
    expect(events[1]!.summary).toBe(`stop_process ${started.id}`);
    // Without rules they run, asked by no approvalFor, and are audited too.
    const more: AuditEvent[] = [];
    const plain = createProcessTools(root, { scratchDir, approvalFor: { process: "ask" }, approve: () => true, onAudit: (e) => more.push(e) });
    onTestFinished(() => closeTools(plain));
    const [s2, r2, , st2, l2] = plain as unknown as [any, any, any, any, any];
    const p = await s2.execute(s2.validate({ argv: ["sleep", "30"] }), ctx());
    await r2.execute(r2.validate({ id: p.id, waitMs: 0 }), ctx());
    expect((await l2.execute(l2.validate({}), ctx())).processes).toHaveLength(1);
    expect((await st2.execute(st2.validate({ id: p.id, signal: "SIGKILL" }), ctx())).running).toBe(false);
    expect(more.map((e) => [e.tool, e.decision])).toEqual([
      ["start_process", "approved"],
      ["read_process", "allow"],
      ["list_processes", "allow"],
      ["stop_process", "allow"],
    ]);
  });
});

describe("the AI SDK's approval flow", () => {
  const opts = (toolCallId: string) => ({ toolCallId, messages: [], abortSignal: new AbortController().signal });

  test("calls_approved_through_needs_approval_are_audited", async () => {
    const { root } = await tempWorkspace();
    const { toAISDKTools } = await import("workcell/ai");
    const events: AuditEvent[] = [];
    const tools = toAISDKTools(createCodingTools(root, { onAudit: (e) => events.push(e) }), { needsApproval: { write: true } }) as any;
    const input = { path: "a.txt", content: "one\n" };
    expect(await tools.write_file.needsApproval(input, opts("c1"))).toBe(true);
    await tools.write_file.execute(input, opts("c1"));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ tool: "write_file", decision: "approved", summary: "write_file a.txt: new file, +1 -0", hashes: { "a.txt": "absent" } });
    // A call with no request kept is refused, and that is audited too.
    await expect(tools.write_file.execute({ path: "b.txt", content: "x" }, opts("c2"))).rejects.toThrow(/APPROVAL_DENIED/);
    expect(events[1]).toMatchObject({ tool: "write_file", decision: "refused", code: "APPROVAL_DENIED" });
    expect(existsSync(join(root, "b.txt"))).toBe(false);
  });

  test("a_preview_kept_for_a_denied_tool_call_id_is_not_reused_for_another_input", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    const { toAISDKTools } = await import("workcell/ai");
    const shown: ApprovalRequest[] = [];
    const tools = toAISDKTools(createCodingTools(root), { needsApproval: { write: true }, onApprovalRequest: (r) => shown.push(r) }) as any;
    // Shown and denied (the SDK never calls execute for it): its preview stays kept.
    expect(await tools.write_file.needsApproval({ path: "a.txt", content: "harmless\n" }, opts("same-id"))).toBe(true);
    // A later call with the same id and other content is not run on that preview.
    const evil = { path: "a.txt", content: "unseen\n" };
    await expect(tools.write_file.execute(evil, opts("same-id"))).rejects.toThrow(/APPROVAL_DENIED/);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n");
    // Asked about, it gets its own preview, shown.
    expect(await tools.write_file.needsApproval(evil, opts("same-id"))).toBe(true);
    expect(shown).toHaveLength(2);
    expect(shown[1]!.diff).toContain("+unseen\n");
    await tools.write_file.execute(evil, opts("same-id"));
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("unseen\n");
  });
});

describe("provider adapters parse with the core", () => {
  test("an_update_file_with_an_indented_move_header_is_refused_and_moves_nothing", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "notes.txt"), "a\n");
    const { applyPatch } = await import("workcell/openai");
    const ap = applyPatch(createCodingTools(root));
    for (const [diff, other] of [
      [" *** Move to: conftest.py\n@@\n-a\n+b\n", "conftest.py"],
      ["\t*** Move to: conftest.py\n@@\n-a\n+b\n", "conftest.py"],
      ["@@\n-a\n+b\n*** Add File: other.py\n+x\n", "other.py"],
    ]) {
      const r = await ap.run({ type: "update_file", path: "notes.txt", diff });
      expect(r.status, diff).toBe("failed");
      expect(r.output).toContain("PATCH_INVALID");
      expect(r.output).toContain(other);
    }
    expect(existsSync(join(root, "conftest.py"))).toBe(false);
    expect(existsSync(join(root, "other.py"))).toBe(false);
    expect(await readFile(join(root, "notes.txt"), "utf8")).toBe("a\n");
    // A change of the named file still applies.
    expect((await ap.run({ type: "update_file", path: "notes.txt", diff: "@@\n-a\n+b\n" })).status).toBe("completed");
    expect(await readFile(join(root, "notes.txt"), "utf8")).toBe("b\n");
  });
});
