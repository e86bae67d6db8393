// The approval gate: a "yes" covers exactly the change shown (hashes checked in the core under
// the targets' locks), denials and aborts, rules, and audit events without content.
import { createHash } from "node:crypto";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolRegistry,
  createApplyPatchTool,
  createCodingTools,
  createEditTool,
  createMoveFileTool,
  createReadTool,
  createRunCommandTool,
  createWriteTool,
  executeToolCall,
  hashFile,
  type ApprovalRequest,
  type AuditEvent,
} from "../dist/index.js";
import { call, content, ctx, rejection, tempWorkspace } from "./helpers.js";

describe("a change approved is the change applied", () => {
  test("approve_edits_the_file_before_answering_write_file_is_target_changed_and_the_file_kept", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    const seen: ApprovalRequest[] = [];
    const tool = createWriteTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req) => {
        seen.push(req);
        await writeFile(join(root, "a.txt"), "changed by someone\n");
        return true;
      },
    });
    const err = await rejection(tool.execute(tool.validate({ path: "a.txt", content: "two\n" }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("changed by someone\n");
    expect(seen[0]!.summary).toBe("write_file a.txt: +1 -1");
    expect(seen[0]!.diff).toContain("-one\n+two\n");
    expect(seen[0]!.files).toEqual({ "a.txt": createHash("sha256").update("one\n").digest("hex") });
    // The attack with the gate off: the same late change is overwritten (so the refusal is the hash's).
    const open = createWriteTool(root);
    await open.execute(open.validate({ path: "a.txt", content: "two\n" }), ctx());
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("two\n");
  });

  test("approve_edits_the_file_before_answering_edit_file_is_target_changed", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.ts"), "let a = 1;\nlet b = 2;\n");
    const tool = createEditTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req) => {
        expect(req.summary).toBe("edit_file a.ts: +1 -1");
        expect(req.files!["a.ts"]).toBe(await hashFile(root, "a.ts"));
        // Still matches the edit: without the hash the edit would apply to the new content.
        await writeFile(join(root, "a.ts"), "let a = 1;\nlet b = 3;\n");
        return { allow: true };
      },
    });
    const err = await rejection(tool.execute(tool.validate({ path: "a.ts", edits: [{ oldText: "a = 1", newText: "a = 9" }] }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "a.ts"), "utf8")).toBe("let a = 1;\nlet b = 3;\n");
  });

  test("approve_edits_one_file_of_a_patch_before_answering_nothing_is_written", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    await writeFile(join(root, "b.txt"), "bee\n");
    let request: ApprovalRequest | undefined;
    const tool = createApplyPatchTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req) => {
        request = req;
        await writeFile(join(root, "b.txt"), "bee\nplus\n");
        return true;
      },
    });
    const patch = [
      "*** Begin Patch",
      "*** Update File: a.txt",
      "@@",
      "-one",
      "+uno",
      "*** Update File: b.txt",
      "*** Move to: moved/b.txt",
      "@@",
      "-bee",
      "+abeille",
      "*** Add File: c.txt",
      "+new",
      "*** End Patch",
    ].join("\n");
    const err = await rejection(tool.execute(tool.validate({ patch }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    // Every file the patch touches is in the request; a move both its names.
    expect(Object.keys(request!.files!)).toEqual(["a.txt", "b.txt", "moved/b.txt", "c.txt"]);
    expect(request!.files!["moved/b.txt"]).toBe("absent");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n");
    expect(await readFile(join(root, "b.txt"), "utf8")).toBe("bee\nplus\n");
    await expect(readFile(join(root, "c.txt"))).rejects.toThrow();
  });

  test("a_preview_creates_nothing_and_an_approved_write_lands", async () => {
    const { root } = await tempWorkspace();
    const requests: ApprovalRequest[] = [];
    const tool = createWriteTool(root, { approvalFor: { write: "ask" }, approve: (r) => (requests.push(r), true) });
    const out = await tool.execute(tool.validate({ path: "deep/new.txt", content: "x\n" }), ctx());
    expect(out).toEqual({ path: "deep/new.txt", bytes: 2, created: true });
    expect(requests[0]!.files).toEqual({ "deep/new.txt": "absent" });
    expect(requests[0]!.summary).toBe("write_file deep/new.txt: new file, +1 -0");
  });

  test("a_file_created_while_approval_of_a_new_file_waits_is_not_overwritten", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root, {
      approvalFor: { write: "ask" },
      approve: async () => {
        await writeFile(join(root, "n.txt"), "planted\n");
        return true;
      },
    });
    expect((await rejection(tool.execute(tool.validate({ path: "n.txt", content: "mine\n" }), ctx()))).code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "n.txt"), "utf8")).toBe("planted\n");
  });

  test("move_file_approval_covers_both_names", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a"), "A");
    const tool = createMoveFileTool(root, {
      approvalFor: { write: "ask" },
      approve: async (req) => {
        expect(req.files).toEqual({ a: await hashFile(root, "a"), b: "absent" });
        await writeFile(join(root, "b"), "B");
        return true;
      },
    });
    expect((await rejection(tool.execute(tool.validate({ from: "a", to: "b", overwrite: true }), ctx()))).code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "b"), "utf8")).toBe("B");
    expect(await readFile(join(root, "a"), "utf8")).toBe("A");
  });

  test("a_slow_approval_holds_no_lock_other_writes_to_the_same_file_go_on", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "f.txt"), "0\n");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const asking = createWriteTool(root, { approvalFor: { write: "ask" }, approve: async () => (await gate, true) });
    const plain = createWriteTool(root);
    const slow = asking.execute(asking.validate({ path: "f.txt", content: "slow\n" }), ctx());
    // The same target, written while the person thinks: not blocked.
    await plain.execute(plain.validate({ path: "f.txt", content: "fast\n" }), ctx());
    expect(await readFile(join(root, "f.txt"), "utf8")).toBe("fast\n");
    release();
    expect((await rejection(slow)).code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "f.txt"), "utf8")).toBe("fast\n");
  });
});

describe("denied, thrown, aborted", () => {
  test("denied_is_approval_denied_with_the_reason_and_a_hint_not_to_retry", async () => {
    const { root } = await tempWorkspace();
    const reg = new ToolRegistry(
      createCodingTools(root, { approvalFor: { write: "ask" }, approve: () => ({ allow: false, reason: "not on Fridays" }) }),
    );
    const r = await executeToolCall(reg, call("write_file", { path: "a.txt", content: "x" }), new AbortController().signal);
    expect(r.isError).toBe(true);
    const e = content(r).error;
    expect(e.code).toBe("APPROVAL_DENIED");
    expect(e.message).toContain("not on Fridays");
    expect(e.hint).toMatch(/do not retry the same call/);
    await expect(readFile(join(root, "a.txt"))).rejects.toThrow();
    const plain = await executeToolCall(reg, call("write_file", { path: "b.txt", content: "x" }), new AbortController().signal);
    expect(content(plain).error.code).toBe("APPROVAL_DENIED");
    expect(content(plain).error.message).toBe("the user denied this call: not on Fridays");
  });

  test("approve_throwing_is_approval_denied_and_nothing_runs", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root, {
      approvalFor: { write: "ask" },
      approve: () => {
        throw new Error("dialog crashed");
      },
    });
    const err = await rejection(tool.execute(tool.validate({ path: "a.txt", content: "x" }), ctx()));
    expect(err.code).toBe("APPROVAL_DENIED");
    expect(err.message).toContain("dialog crashed");
    await expect(readFile(join(root, "a.txt"))).rejects.toThrow();
    const odd = createWriteTool(root, { approvalFor: { write: "ask" }, approve: () => "yes" as never });
    expect((await rejection(odd.execute(odd.validate({ path: "a.txt", content: "x" }), ctx()))).code).toBe("APPROVAL_DENIED");
  });

  test("abort_while_waiting_for_approval_is_an_abort_error_and_approve_sees_the_abort", async () => {
    const { root } = await tempWorkspace();
    let inner: AbortSignal | undefined;
    const tool = createWriteTool(root, {
      approvalFor: { write: "ask" },
      approve: (_req, { signal }) => {
        inner = signal;
        return new Promise<boolean>(() => {});
      },
    });
    const ac = new AbortController();
    const p = tool.execute(tool.validate({ path: "a.txt", content: "x" }), ctx(ac.signal));
    await new Promise((r) => setTimeout(r, 50));
    ac.abort();
    const err = await rejection(p);
    expect(err.name).toBe("AbortError");
    expect(inner!.aborted).toBe(true);
    await expect(readFile(join(root, "a.txt"))).rejects.toThrow();
  });

  test("ask_without_approve_is_a_type_error_at_creation", async () => {
    const { root } = await tempWorkspace();
    expect(() => createCodingTools(root, { approvalFor: { write: "ask" } })).toThrow(TypeError);
    expect(() => createRunCommandTool(root, { approvalFor: { process: "ask" } })).toThrow(/needs approve/);
    expect(() => createCodingTools(root, { approvalFor: { grant: "ask" } })).toThrow(TypeError);
    expect(() => createCodingTools(root, { rules: [{ decision: "ask" }] })).toThrow(TypeError);
    expect(() => createCodingTools(root, { approvalFor: { write: "maybe" as never }, approve: () => true })).toThrow(TypeError);
    expect(() => createCodingTools(root, { approvalFor: { wirte: "ask" } as never, approve: () => true })).toThrow(/approvalFor.wirte/);
    expect(() => createCodingTools(root, { rules: [{ path: "[", decision: "deny" }] })).toThrow(TypeError);
    expect(() => createCodingTools(root, { rules: [{ argv: ["**", "x"], decision: "deny" }] })).toThrow(TypeError);
    expect(() => createCodingTools(root, { approve: "yes" as never })).toThrow(TypeError);
    expect(() => createCodingTools(root, { onAudit: 1 as never })).toThrow(TypeError);
  });
});

describe("rules", () => {
  test("rules_match_argv_prefix_star_double_star_and_path_globs_first_match_wins", async () => {
    const { root } = await tempWorkspace();
    const asked: string[] = [];
    const reg = new ToolRegistry(
      createCodingTools(root, {
        approvalFor: { write: "ask", process: "ask" },
        approve: (req) => (asked.push(req.summary), true),
        rules: [
          { tool: "run_command", argv: ["git", "status", "**"], decision: "allow" },
          { argv: ["echo", "*"], decision: "allow" },
          { argv: ["echo", "**"], decision: "deny" },
          { path: "docs/**", decision: "allow" },
          { path: "**/*.lock", decision: "deny" },
        ],
      }),
    );
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    // "*": exactly one word; "**": the rest.
    expect((await run("run_command", { argv: ["echo", "hi"] })).exitCode).toBe(0);
    expect((await run("run_command", { argv: ["echo", "hi", "there"] })).error.code).toBe("APPROVAL_DENIED");
    expect(asked).toEqual([]);
    await run("run_command", { argv: ["true"] });
    expect(asked).toEqual(["run_command true"]);
    // Globs of the guard's kind; the first match wins.
    await mkdir(join(root, "docs"));
    expect((await run("write_file", { path: "docs/x.lock", content: "x" })).created).toBe(true);
    expect((await run("write_file", { path: "Cargo.lock", content: "x" })).error.code).toBe("APPROVAL_DENIED");
    expect((await run("write_file", { path: "DOCS/y.md", content: "x" })).error).toBeUndefined();
    // A patch is allowed by a path rule only when every file it touches matches.
    const patch = "*** Begin Patch\n*** Add File: docs/a.md\n+a\n*** Add File: src/b.ts\n+b\n*** End Patch";
    await run("apply_patch", { patch });
    expect(asked.at(-1)).toMatch(/^apply_patch 2 files/);
    expect(asked.length).toBe(2);
  });

  test("a_deny_rule_refuses_without_asking_even_a_read", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, ".env"), "SECRET=1");
    let asked = 0;
    const tool = createReadTool(root, { rules: [{ path: ".env", decision: "deny" }], approve: () => (asked++, true) });
    const err = await rejection(tool.execute(tool.validate({ path: ".env" }), ctx()));
    expect(err.code).toBe("APPROVAL_DENIED");
    expect(err.hint).toMatch(/do not retry/);
    expect(asked).toBe(0);
  });
});

describe("onAudit", () => {
  test("on_audit_gets_one_event_per_call_of_every_tool_without_content", async () => {
    const { root } = await tempWorkspace();
    const events: AuditEvent[] = [];
    const secret = "TOP-SECRET-CONTENT-4242";
    const reg = new ToolRegistry(
      createCodingTools(root, {
        approvalFor: { write: "ask" },
        approve: () => true,
        onAudit: (e) => events.push(e),
      }),
    );
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    await run("write_file", { path: "a.txt", content: `${secret}\n` });
    await run("read_file", { path: "a.txt" });
    await run("edit_file", { path: "a.txt", edits: [{ oldText: secret, newText: `${secret}-2` }] });
    await run("read_file", { path: "missing.txt" });
    await run("node_process", { source: `console.log(${JSON.stringify(secret)})` });
    expect(events.map((e) => [e.tool, e.effect, e.decision, e.code])).toEqual([
      ["write_file", "write", "approved", undefined],
      ["read_file", "read", "allow", undefined],
      ["edit_file", "write", "approved", undefined],
      ["read_file", "read", "allow", "FILE_NOT_FOUND"],
      ["node_process", "process", "allow", undefined],
    ]);
    for (const e of events) {
      expect(JSON.stringify(e)).not.toContain(secret);
      expect(typeof e.time).toBe("string");
      expect(e.durationMs).toBeGreaterThanOrEqual(0);
    }
    expect(events[0]!.summary).toBe("write_file a.txt: new file, +1 -0");
    expect(events[0]!.hashes).toEqual({ "a.txt": "absent" });
    expect(events[2]!.hashes!["a.txt"]).toMatch(/^[0-9a-f]{64}$/);
  });

  test("a_throwing_on_audit_does_not_change_the_result", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root, {
      onAudit: () => {
        throw new Error("audit sink down");
      },
    });
    expect(await tool.execute(tool.validate({ path: "a.txt", content: "x" }), ctx())).toEqual({ path: "a.txt", bytes: 1, created: true });
    const failing = createWriteTool(root, { onAudit: () => Promise.reject(new Error("async sink down")) as never });
    expect(await failing.execute(failing.validate({ path: "b.txt", content: "y" }), ctx())).toEqual({ path: "b.txt", bytes: 1, created: true });
  });
});

describe("adapters", () => {
  const usage = {
    inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
    outputTokens: { total: 5, text: 5, reasoning: undefined },
  };
  const toolCallStep = (toolName: string, input: unknown, toolCallId = "call-1") => ({
    content: [{ type: "tool-call" as const, toolCallId, toolName, input: JSON.stringify(input) }],
    finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
    usage,
    warnings: [],
  });
  const textStep = (text: string) => ({ content: [{ type: "text" as const, text }], finishReason: { unified: "stop" as const, raw: "stop" }, usage, warnings: [] });

  async function sdkRound(root: string, changeBeforeAnswer: boolean) {
    const { generateText, stepCountIs } = await import("ai");
    const { MockLanguageModelV3 } = await import("ai/test");
    const { toAISDKTools } = await import("workcell/ai");
    const model = new MockLanguageModelV3({ doGenerate: [toolCallStep("write_file", { path: "a.txt", content: "two\n" }), textStep("done")] });
    const shown: ApprovalRequest[] = [];
    const tools = toAISDKTools(createCodingTools(root), { needsApproval: { write: true }, onApprovalRequest: (r) => shown.push(r) });
    const first = await generateText({ model, tools, prompt: "change it", stopWhen: stepCountIs(3) });
    const request = first.content.find((p) => p.type === "tool-approval-request") as any;
    expect(request).toBeDefined();
    expect(request.toolCall).toMatchObject({ toolName: "write_file", toolCallId: "call-1" });
    expect(shown[0]).toMatchObject({ toolCallId: "call-1", summary: "write_file a.txt: +1 -1" });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\n");
    if (changeBeforeAnswer) await writeFile(join(root, "a.txt"), "edited meanwhile\n");
    const second = await generateText({
      model,
      tools,
      messages: [
        { role: "user", content: "change it" },
        ...first.response.messages,
        { role: "tool", content: [{ type: "tool-approval-response", approvalId: request.approvalId, approved: true }] },
      ],
      stopWhen: stepCountIs(3),
    });
    return second;
  }

  test("ai_sdk_generate_text_with_mock_model_through_an_approval_request_and_response", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    const second = await sdkRound(root, false);
    expect(second.text).toBe("done");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("two\n");
    // The approved call's result, as the model gets it with the next step.
    const result = (second.response.messages[0]!.content as any[]).find((p) => p.type === "tool-result");
    expect(result).toMatchObject({ toolCallId: "call-1", toolName: "write_file" });
    expect(result.output).toEqual({ type: "json", value: { path: "a.txt", bytes: 4, created: false } });
  });

  test("ai_sdk_approval_keeps_the_hash_check_at_execution", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    const second = await sdkRound(root, true);
    const result = (second.response.messages[0]!.content as any[]).find((p) => p.type === "tool-result");
    expect(result.output.type).toMatch(/^error/);
    expect(JSON.stringify(result.output)).toContain("TARGET_CHANGED");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("edited meanwhile\n");
  });

  async function mcpPair(capabilities: Record<string, unknown>, answer?: (message: string) => unknown, fallback?: "deny" | "allow") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { InMemoryTransport } = await import("@modelcontextprotocol/sdk/inMemory.js");
    const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
    const { createMcpServer, createMcpApprover } = await import("workcell/mcp");
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\n");
    const approver = createMcpApprover(fallback ? { fallback } : {});
    const server = createMcpServer(createCodingTools(root, { approve: approver.approve, approvalFor: { write: "ask" } }));
    approver.attach(server);
    const [c, s] = InMemoryTransport.createLinkedPair();
    await server.connect(s);
    const client = new Client({ name: "t", version: "1" }, { capabilities });
    if (answer) client.setRequestHandler(ElicitRequestSchema, async (req) => answer((req.params as { message: string }).message) as never);
    await client.connect(c);
    const write = async (content: string) => {
      const r = (await client.callTool({ name: "write_file", arguments: { path: "a.txt", content } })) as { content: { text: string }[]; isError?: boolean };
      return JSON.parse(r.content[0]!.text);
    };
    return { root, write, close: async () => (await client.close(), await server.close()) };
  }

  test("mcp_asks_through_elicitation_with_the_diff_and_the_answer_decides", async () => {
    const messages: string[] = [];
    let yes = true;
    const pair = await mcpPair({ elicitation: {} }, (message) => {
      messages.push(message);
      return yes ? { action: "accept", content: { approve: true } } : { action: "accept", content: { approve: false, reason: "keep one" } };
    });
    try {
      expect(await pair.write("two\n")).toEqual({ path: "a.txt", bytes: 4, created: false });
      expect(messages[0]).toContain("write_file a.txt: +1 -1");
      expect(messages[0]).toContain("-one\n+two\n");
      yes = false;
      const denied = await pair.write("three\n");
      expect(denied.error.code).toBe("APPROVAL_DENIED");
      expect(denied.error.message).toContain("keep one");
      expect(await readFile(join(pair.root, "a.txt"), "utf8")).toBe("two\n");
    } finally {
      await pair.close();
    }
  });

  test("mcp_without_elicitation_follows_the_server_option_default_deny", async () => {
    const denyPair = await mcpPair({});
    try {
      expect((await denyPair.write("two\n")).error.code).toBe("APPROVAL_DENIED");
      expect(await readFile(join(denyPair.root, "a.txt"), "utf8")).toBe("one\n");
    } finally {
      await denyPair.close();
    }
    const allowPair = await mcpPair({}, undefined, "allow");
    try {
      expect((await allowPair.write("two\n")).created).toBe(false);
    } finally {
      await allowPair.close();
    }
  });
});
