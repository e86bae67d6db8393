// Per-call grants on start_process (contract §12): refused unless the host lets calls ask; an
// approved grant widens the sandbox of that one session, enforced by the kernel (Landlock); the
// next start without grants runs with the tools' options only; `remember: "session"` keeps it
// for the tool set; the adapters derive the `grants` parameter from the tool.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, mkdtemp, realpath, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { generateText } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { afterEach, describe, expect, onTestFinished, test } from "vitest";
import { toAISDKTools } from "workcell/ai";
import { createMcpServer } from "workcell/mcp";
import {
  ToolRegistry,
  closeTools,
  createCodingTools,
  createProcessTools,
  executeToolCall,
  sandboxSupport,
  withGrants,
  type AnyTool,
  type ApprovalRequest,
  type AuditEvent,
} from "../dist/index.js";
import { call, content, ctx, invalid, rejection, tempWorkspace } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";

const landlock = sandboxSupport().landlockAbi !== null;
const cleanup: string[] = [];
const sets: AnyTool[][] = [];
afterEach(async () => {
  for (const t of sets.splice(0)) await closeTools(t);
  for (const d of cleanup.splice(0)) await rm(d, { recursive: true, force: true });
});

async function outsideDir(): Promise<string> {
  const d = await realpath(await mkdtemp(join(tmpdir(), "workcell-session-grant-")));
  cleanup.push(d);
  return d;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

function tools(root: string, options: Parameters<typeof createProcessTools>[1] = {}) {
  const set = createProcessTools(root, options);
  sets.push(set);
  return { set, start: set.start_process, list: set.list_processes };
}

/** A start that touches `path` and returns when the process has exited. */
const touch = (path: string) => ({ argv: ["touch", path], waitMs: 10_000 });

describe("start_process grants", () => {
  test("start_process_grant_refused_with_grant_not_allowed_by_default_before_anything_starts", async () => {
    const { root } = await tempWorkspace();
    const out = await outsideDir();
    const audits: AuditEvent[] = [];
    const { start, list } = tools(root, { onAudit: (e) => audits.push(e) });
    expect(Object.keys(start.parameters.properties as object)).not.toContain("grants");
    const err = invalid(() => start.validate({ ...touch(join(out, "a")), grants: { writePaths: [out] } }));
    expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(err.message).toBe("GRANT_NOT_ALLOWED");
    expect(err.hint).toMatch(/work inside the workspace/);
    // An input that skipped validate is refused by the gate: nothing starts.
    const refused = await rejection(start.execute({ ...touch(join(out, "a")), grants: { writePaths: [out] } }, ctx()));
    expect(refused.message).toBe("GRANT_NOT_ALLOWED");
    expect(audits.at(-1)).toMatchObject({ tool: "start_process", decision: "refused", code: "TOOL_ARGUMENTS_INVALID" });
    expect(((await list.execute({}, ctx())) as { processes: unknown[] }).processes).toEqual([]);
    expect(await exists(join(out, "a"))).toBe(false);
  });

  test("start_process_grant_paths_are_resolved_and_checked_like_the_options", async () => {
    const { root } = await tempWorkspace();
    const out = await outsideDir();
    const { start } = tools(root, { approvalFor: { grant: "ask" }, approve: () => true });
    expect(Object.keys(start.parameters.properties as object)).toContain("grants");
    for (const grants of [{ writePaths: ["relative/dir"] }, { readPaths: ["/no/such/dir/anywhere"] }, { shell: true }, { sandbox: "on" }]) {
      expect(invalid(() => start.validate({ argv: ["true"], grants })).message, JSON.stringify(grants)).toBe("INVALID_ARGUMENTS_SHAPE");
    }
    const v = start.validate({ argv: ["true"], grants: { writePaths: [`${out}/.`], network: true } }) as { grants: unknown };
    expect(v.grants).toEqual({ writePaths: [out], network: true });
  });

  test.skipIf(!landlock)("start_process_granted_write_path_opens_for_that_session_only_the_next_start_is_refused_by_the_kernel", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const other = await outsideDir();
    const requests: ApprovalRequest[] = [];
    const { start } = tools(root, { approvalFor: { grant: "ask" }, approve: (r) => (requests.push(r), true) });
    const a = join(granted, "a.txt");
    const b = join(other, "b.txt");
    // One start with the grant: exactly the granted directory is writable.
    const first = (await start.execute(start.validate({ argv: ["touch", a, b], waitMs: 10_000, grants: { writePaths: [granted] } }), ctx()));
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ tool: "start_process", effect: "process", argv: ["touch", a, b], grants: { writePaths: [granted] } });
    expect(requests[0]!.summary).toContain("start_process touch");
    expect(first).toMatchObject({ running: false, sandbox: { filesystem: "confined" } });
    expect(await exists(a)).toBe(true);
    expect(await exists(b)).toBe(false);
    expect(first.output).toContain(`touch: cannot touch '${b}': Permission denied`);
    // The next start, without grants: the process's own EACCES from the kernel, and the hint.
    const c = join(granted, "c.txt");
    const second = (await start.execute(start.validate(touch(c)), ctx()));
    expect(requests).toHaveLength(1);
    expect(second.exitCode).not.toBe(0);
    expect(second.output).toContain(`touch: cannot touch '${c}': Permission denied`);
    expect(await exists(c)).toBe(false);
    expect(second.denials).toEqual([{ kind: "write", path: c }]);
    expect(second.note).toMatch(/grants/);
    // The hints are part of the published result shape (MCP's structuredContent is checked against it).
    const check = new AjvJsonSchemaValidator().getValidator(start.outputSchema as Record<string, unknown>)(second);
    expect(check.valid, check.errorMessage).toBe(true);
    expect(String(second.note).indexOf('sandbox: "off"')).toBeGreaterThan(String(second.note).indexOf("grants"));
    // The same start with the sandbox off writes: the refusal above is the sandbox's.
    const open = tools(root, { sandbox: "off" }).start;
    const opened = (await open.execute(open.validate(touch(c)), ctx()));
    expect(opened).toMatchObject({ exitCode: 0, sandbox: { filesystem: "open" } });
    expect(opened.denials).toBeUndefined();
    expect(await exists(c)).toBe(true);
  });

  test.skipIf(!landlock)("start_process_granted_sandbox_off_is_what_its_sandbox_report_says", async () => {
    const { root } = await tempWorkspace();
    const { start } = tools(root, { approvalFor: { grant: "ask" }, approve: () => true });
    const off = (await start.execute(start.validate({ argv: ["true"], waitMs: 10_000, grants: { sandbox: "off" } }), ctx()));
    expect(off).toMatchObject({ exitCode: 0, sandbox: { filesystem: "open", network: "open", processes: "group" } });
    const next = (await start.execute(start.validate({ argv: ["true"], waitMs: 10_000 }), ctx()));
    expect(next).toMatchObject({ exitCode: 0, sandbox: { filesystem: "confined" } });
  });

  test.skipIf(!landlock)("start_process_remember_session_makes_the_grant_apply_to_later_starts_of_the_set", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    let asked = 0;
    const coding = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => (asked++, { allow: true, remember: "session" }) });
    sets.push(coding);
    const reg = new ToolRegistry(coding);
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    expect(await run("start_process", { ...touch(join(granted, "1")), grants: { writePaths: [granted] } })).toMatchObject({ exitCode: 0 });
    // A later start without grants keeps it, and so do the set's other process tools.
    expect(await run("start_process", touch(join(granted, "2")))).toMatchObject({ exitCode: 0 });
    expect(await run("run_command", { argv: ["touch", join(granted, "3")] })).toMatchObject({ exitCode: 0 });
    expect(asked).toBe(1);
    for (const n of ["1", "2", "3"]) expect(await exists(join(granted, n)), n).toBe(true);
    // Another tool set does not have it: the kernel refuses.
    const { start } = tools(root);
    expect(await start.execute(start.validate(touch(join(granted, "4"))), ctx())).toMatchObject({ running: false, exitCode: 1 });
    expect(await exists(join(granted, "4"))).toBe(false);
  });

  test.skipIf(!landlock)("start_process_a_remembered_grant_of_a_removed_directory_does_not_stop_later_starts", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const coding = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => ({ allow: true, remember: "session" }) });
    sets.push(coding);
    const reg = new ToolRegistry(coding);
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    expect(await run("start_process", { ...touch(join(granted, "1")), grants: { writePaths: [granted] } })).toMatchObject({ exitCode: 0 });
    await rm(granted, { recursive: true });
    expect(await run("start_process", { argv: ["true"], waitMs: 10_000 })).toMatchObject({ exitCode: 0, sandbox: { filesystem: "confined" } });
  });

  test.skipIf(!landlock)("start_process_a_grant_remembered_by_run_command_applies_to_a_later_start", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const coding = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => ({ allow: true, remember: "session" }) });
    sets.push(coding);
    const reg = new ToolRegistry(coding);
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    expect(await run("run_command", { argv: ["touch", join(granted, "1")], grants: { writePaths: [granted] } })).toMatchObject({ exitCode: 0 });
    expect(await run("start_process", touch(join(granted, "2")))).toMatchObject({ exitCode: 0 });
    expect(await exists(join(granted, "2"))).toBe(true);
  });

  test("a_granted_network_or_sandbox_off_replaces_the_hosts_allowlist_as_the_core_does_for_sessions", () => {
    const host = { sandbox: "auto" as const, network: false, networkAllow: ["npm"], readPaths: [], writePaths: [], limits: {}, protect: [] };
    // An allowlist with network: true, or without the sandbox, is a misconfiguration the core refuses.
    expect(withGrants(host, { network: true })).toMatchObject({ network: true });
    expect(withGrants(host, { network: true }).networkAllow).toBeUndefined();
    expect(withGrants(host, { sandbox: "off" })).toMatchObject({ sandbox: "off" });
    expect(withGrants(host, { sandbox: "off" }).networkAllow).toBeUndefined();
    // Approved paths travel as pinned handles, never as paths.
    expect(withGrants(host, { handles: [7] })).toMatchObject({ networkAllow: ["npm"], grantHandles: [7], writePaths: [] });
  });

  test("start_process_grants_parameter_reaches_the_mcp_and_ai_sdk_adapters", async () => {
    const { root } = await tempWorkspace();
    const asking = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => true });
    const plain = createCodingTools(root);
    sets.push(asking, plain);
    const props = (schema: unknown) => Object.keys((schema as { properties: object }).properties);
    // AI SDK: what generateText sends the model.
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    for (const [set, has] of [[asking, true], [plain, false]] as const) {
      const model = new MockLanguageModelV3({
        doGenerate: { content: [{ type: "text", text: "ok" }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] },
      });
      await generateText({ model, tools: toAISDKTools(set), prompt: "hi" });
      const sent = model.doGenerateCalls[0]!.tools!.find((t) => t.name === "start_process") as { inputSchema: unknown };
      expect(props(sent.inputSchema).includes("grants")).toBe(has);
    }
    // MCP: tools/list as the SDK client sees it.
    for (const [set, has] of [[asking, true], [plain, false]] as const) {
      const server = createMcpServer(set);
      const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
      await server.connect(serverSide);
      const client = new Client({ name: "workcell-test", version: "1.0.0" });
      await client.connect(clientSide);
      const { tools: listed } = await client.listTools();
      const startTool = listed.find((t) => t.name === "start_process")!;
      expect(props(startTool.inputSchema).includes("grants")).toBe(has);
      await client.close();
      await server.close();
    }
  });

  // The same as an unprivileged host (the directory is writable by nobody, so a refusal is
  // Landlock's, not the file's mode), and with the sandbox off to show the run can fail.
  test.skipIf(!landlock || process.getuid?.() !== 0)("start_process_grant_as_an_unprivileged_host_opens_one_session_only", async () => {
    const { parent: top, root } = await tempWorkspace();
    const granted = await outsideDir();
    const parent = await outsideDir();
    await chmod(top, 0o755);
    for (const d of [root, granted, parent]) await chmod(d, 0o777);
    const copy = packageNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      return;
    }
    onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
    const script = join(parent, "host.mjs");
    await writeFile(
      script,
      `import { createProcessTools, closeTools } from ${JSON.stringify(join(copy.dir, "dist", "index.js"))};
const [root, granted, sandbox] = process.argv.slice(2);
const tools = createProcessTools(root, { sandbox, approvalFor: { grant: "ask" }, approve: () => true });
const start = tools[0];
const c = { signal: new AbortController().signal };
const go = async (name, grants) => {
  const r = await start.execute(start.validate({ argv: ["touch", granted + "/" + name], waitMs: 10000, ...(grants ? { grants } : {}) }), c);
  return { exitCode: r.exitCode, output: r.output, filesystem: r.sandbox.filesystem };
};
const first = await go("a", { writePaths: [granted] });
const second = await go("b");
await closeTools(tools);
console.log(JSON.stringify({ first, second }));
`,
    );
    await chmod(script, 0o644);
    const run = (sandbox: string) => {
      const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, script, root, granted, sandbox], { encoding: "utf8", cwd: "/" });
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<"first" | "second", { exitCode: number; output: string; filesystem: string }>;
    };
    const confined = run("auto");
    expect(confined.first).toMatchObject({ exitCode: 0, filesystem: "confined" });
    expect(await exists(join(granted, "a"))).toBe(true);
    expect(confined.second.exitCode).not.toBe(0);
    expect(confined.second.output).toContain("Permission denied");
    expect(await exists(join(granted, "b"))).toBe(false);
    const open = run("off");
    expect(open.second).toMatchObject({ exitCode: 0, filesystem: "open" });
    expect(await exists(join(granted, "b"))).toBe(true);
  }, 30_000);
});
