// Per-call grants: refused unless the host lets calls ask; an approved grant opens exactly its
// paths for exactly that call, enforced by the kernel (Landlock), like the sandbox options.
import { mkdtemp, readFile, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import {
  ToolRegistry,
  createCodingTools,
  createNodeProcessTool,
  createRunCommandTool,
  executeToolCall,
  sandboxSupport,
  type ApprovalRequest,
} from "../dist/index.js";
import { call, content, ctx, invalid, rejection, tempWorkspace } from "./helpers.js";

const landlock = sandboxSupport().landlockAbi !== null;
const cleanup: string[] = [];
afterEach(async () => {
  for (const d of cleanup.splice(0)) await rm(d, { recursive: true, force: true });
});

async function outsideDir(): Promise<string> {
  const d = await realpath(await mkdtemp(join(tmpdir(), "workcell-grant-")));
  cleanup.push(d);
  return d;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

describe("grants", () => {
  test("grants_refused_with_grant_not_allowed_by_default", async () => {
    const { root } = await tempWorkspace();
    const out = await outsideDir();
    for (const tool of createCodingTools(root).filter((t) => ["node_process", "run_command", "run_tests"].includes(t.name))) {
      const base = tool.name === "node_process" ? { source: "1" } : tool.name === "run_command" ? { argv: ["true"] } : { runner: "node" };
      const err = invalid(() => tool.validate({ ...base, grants: { writePaths: [out] } }));
      expect(err.code, tool.name).toBe("TOOL_ARGUMENTS_INVALID");
      expect(err.message, tool.name).toBe("GRANT_NOT_ALLOWED");
      expect(err.hint).toMatch(/work inside the workspace/);
      // Not in the schema either when the host does not allow asking.
      expect(Object.keys(tool.parameters.properties as object)).not.toContain("grants");
    }
  });

  test("grant_paths_are_resolved_and_checked_like_the_options", async () => {
    const { root } = await tempWorkspace();
    const tool = createRunCommandTool(root, { approvalFor: { grant: "ask" }, approve: () => true });
    expect(Object.keys(tool.parameters.properties as object)).toContain("grants");
    expect(invalid(() => tool.validate({ argv: ["true"], grants: { writePaths: ["relative/dir"] } })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["true"], grants: { writePaths: ["/no/such/dir/anywhere"] } })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["true"], grants: { shell: true } })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["true"], grants: { sandbox: "on" } })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    const out = await outsideDir();
    const v = tool.validate({ argv: ["true"], grants: { writePaths: [`${out}/.`], network: true } });
    expect(v.grants).toEqual({ writePaths: [out], network: true });
  });

  test.skipIf(!landlock)("a_granted_write_path_opens_exactly_that_path_for_exactly_that_call_the_next_is_refused_by_the_kernel", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const other = await outsideDir();
    const requests: ApprovalRequest[] = [];
    const tool = createRunCommandTool(root, { approvalFor: { grant: "ask" }, approve: (r) => (requests.push(r), true) });
    const a = join(granted, "a.txt");
    const b = join(other, "b.txt");
    // One call with the grant: the granted directory is writable, the other one is not.
    const first = await tool.execute(tool.validate({ argv: ["touch", a, b], grants: { writePaths: [granted] } }), ctx());
    expect(requests).toHaveLength(1);
    expect(requests[0]!.grants).toEqual({ writePaths: [granted] });
    expect(requests[0]!.argv).toEqual(["touch", a, b]);
    expect(await exists(a)).toBe(true);
    expect(await exists(b)).toBe(false);
    expect(first.exitCode).not.toBe(0);
    expect(first.output).toContain(`touch: cannot touch '${b}': Permission denied`);
    // The next call, without grants: the process's own EACCES from the kernel.
    const c = join(granted, "c.txt");
    const second = await tool.execute(tool.validate({ argv: ["touch", c] }), ctx());
    expect(second.sandbox).toMatchObject({ filesystem: "confined" });
    expect(second.exitCode).not.toBe(0);
    expect(second.output).toContain(`touch: cannot touch '${c}': Permission denied`);
    expect(await exists(c)).toBe(false);
    expect(requests).toHaveLength(1);
    // The same call with the sandbox off goes through (so the refusal above is the sandbox's).
    const open = createRunCommandTool(root, { sandbox: "off" });
    expect((await open.execute(open.validate({ argv: ["touch", c] }), ctx())).exitCode).toBe(0);
  });

  test.skipIf(!landlock)("node_process_granted_write_path_for_one_call", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const tool = createNodeProcessTool(root, { timeoutMs: 5000, approvalFor: { grant: "ask" }, approve: () => true });
    const source = "try { require('fs').writeFileSync(process.argv[1], 'x'); } catch (e) { console.error(e.code); process.exit(3); }";
    const f = join(granted, "n.txt");
    const ok = await tool.execute(tool.validate({ source, arguments: [f], grants: { writePaths: [granted] } }), ctx());
    expect(ok.exitCode).toBe(0);
    expect(await readFile(f, "utf8")).toBe("x");
    const g = join(granted, "m.txt");
    const refused = await tool.execute(tool.validate({ source, arguments: [g] }), ctx());
    expect(refused.exitCode).toBe(3);
    expect(await exists(g)).toBe(false);
  });

  test("a_denied_grant_runs_nothing", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    const tool = createRunCommandTool(root, { approvalFor: { grant: "ask" }, approve: () => ({ allow: false, reason: "no writes to my home" }) });
    const err = await rejection(tool.execute(tool.validate({ argv: ["touch", join(granted, "x")], grants: { writePaths: [granted] } }), ctx()));
    expect(err.code).toBe("APPROVAL_DENIED");
    expect(err.message).toContain("no writes to my home");
    expect(await exists(join(granted, "x"))).toBe(false);
  });

  test.skipIf(!landlock)("remember_session_keeps_a_grant_for_every_process_tool_of_the_set", async () => {
    const { root } = await tempWorkspace();
    const granted = await outsideDir();
    let asked = 0;
    const reg = new ToolRegistry(
      createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => (asked++, { allow: true, remember: "session" }) }),
    );
    const run = (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
    expect((await run("run_command", { argv: ["touch", join(granted, "1")], grants: { writePaths: [granted] } })).exitCode).toBe(0);
    // Later calls of the set, even another tool and without grants, keep it; nothing is asked again.
    expect((await run("run_command", { argv: ["touch", join(granted, "2")] })).exitCode).toBe(0);
    const src = "require('fs').writeFileSync(process.argv[1], 'x')";
    expect((await run("node_process", { source: src, arguments: [join(granted, "3")], grants: { writePaths: [granted] } })).exitCode).toBe(0);
    expect(asked).toBe(1);
    expect(await exists(join(granted, "3"))).toBe(true);
    // Another tool set does not have it.
    const fresh = createRunCommandTool(root);
    expect((await fresh.execute(fresh.validate({ argv: ["touch", join(granted, "4")] }), ctx())).exitCode).not.toBe(0);
  });
});
