// An approved grant is fixed when it is approved (contract §21): its paths are opened then, with
// no symlink followed in any component, and the sandbox is built from those open directories,
// never from the path string again. The attack: a grant of a directory inside the workspace
// (harmless to approve), then a parent component swapped for a symlink to a directory outside,
// between the approval and the run, or between two runs of a remembered grant.
import { spawnSync } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, lstat, mkdir, mkdtemp, readdir, realpath, rename, rm, stat, symlink, unlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, executeToolCall, sandboxSupport, type AnyTool, type ApprovalRequest } from "../dist/index.js";
import { call, content, tempWorkspace } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";

const landlock = sandboxSupport().landlockAbi !== null;
const cleanup: string[] = [];
const sets: AnyTool[][] = [];
afterEach(async () => {
  for (const t of sets.splice(0)) await closeTools(t);
  for (const d of cleanup.splice(0)) await rm(d, { recursive: true, force: true });
});

async function outsideDir(): Promise<string> {
  const d = await realpath(await mkdtemp(join(tmpdir(), "workcell-pin-")));
  cleanup.push(d);
  await mkdir(join(d, "cache"));
  return d;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** What a confined session can do to its own workspace: `sub` becomes a symlink to `outside`. */
async function swap(root: string, outside: string): Promise<void> {
  await rename(join(root, "sub"), join(root, `sub-${Date.now()}-${Math.random()}`));
  await symlink(outside, join(root, "sub"));
}

function toolSet(root: string, approve: (r: ApprovalRequest) => unknown) {
  const set = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: approve as never, processes: { timeoutMs: 20_000 } } as never);
  sets.push(set);
  const reg = new ToolRegistry(set);
  return (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
}

/** One run of each process tool writing `<root>/sub/cache/<tag>-<tool>`; the names it used. */
async function everyTool(run: (name: string, args: unknown) => Promise<any>, root: string, tag: string, grants?: unknown) {
  const target = (tool: string) => join(root, "sub", "cache", `${tag}-${tool}`);
  const g = grants ? { grants } : {};
  await writeFile(join(root, "w.test.mjs"), `import { test } from "node:test"; import { writeFileSync } from "node:fs";\ntest("w", () => writeFileSync(${JSON.stringify(target("run_tests"))}, "x"));\n`);
  const results: Record<string, any> = {};
  results.run_command = await run("run_command", { argv: ["touch", target("run_command")], ...g });
  results.node_process = await run("node_process", { source: "require('fs').writeFileSync(process.argv[1], 'x')", arguments: [target("node_process")], ...g });
  results.run_tests = await run("run_tests", { runner: "node", args: ["w.test.mjs"], ...g });
  results.start_process = await run("start_process", { argv: ["touch", target("start_process")], waitMs: 15_000, ...g });
  return results;
}

const TOOLS = ["run_command", "node_process", "run_tests", "start_process"];

describe("grants are pinned when approved", () => {
  test.skipIf(!landlock)("a_grant_of_a_real_directory_writes_there", async () => {
    const { root } = await tempWorkspace();
    const outside = await outsideDir();
    const run = toolSet(root, () => true);
    // A real directory outside the workspace, granted per call: every tool writes there.
    const target = (tool: string) => join(outside, "cache", tool);
    const grants = { writePaths: [join(outside, "cache")] };
    await writeFile(join(root, "w.test.mjs"), `import { test } from "node:test"; import { writeFileSync } from "node:fs";\ntest("w", () => writeFileSync(${JSON.stringify(target("run_tests"))}, "x"));\n`);
    expect((await run("run_command", { argv: ["touch", target("run_command")], grants })).exitCode).toBe(0);
    expect((await run("node_process", { source: "require('fs').writeFileSync(process.argv[1], 'x')", arguments: [target("node_process")], grants })).exitCode).toBe(0);
    expect((await run("run_tests", { runner: "node", args: ["w.test.mjs"], grants })).status).toBe("passed");
    expect((await run("start_process", { argv: ["touch", target("start_process")], waitMs: 15_000, grants })).exitCode).toBe(0);
    for (const t of TOOLS) expect(await exists(target(t)), t).toBe(true);
  }, 60_000);

  test.skipIf(!landlock)("a_grant_does_not_follow_a_symlink_planted_after_approval", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "sub", "cache"), { recursive: true });
    const outside = await outsideDir();
    // While the person reads the request, the path's parent becomes a symlink to outside.
    const run = toolSet(root, async () => {
      await swap(root, outside);
      return true;
    });
    const grants = { writePaths: [join(root, "sub", "cache")] };
    for (const tool of TOOLS) {
      const args =
        tool === "run_command"
          ? { argv: ["touch", join(root, "sub", "cache", "x")] }
          : tool === "node_process"
            ? { source: "require('fs').writeFileSync(process.argv[1], 'x')", arguments: [join(root, "sub", "cache", "x")] }
            : tool === "run_tests"
              ? { runner: "node" }
              : { argv: ["touch", join(root, "sub", "cache", "x")], waitMs: 15_000 };
      // Put a real `sub/cache` back for each call's approval.
      if ((await lstat(join(root, "sub"))).isSymbolicLink()) await unlink(join(root, "sub"));
      await mkdir(join(root, "sub", "cache"), { recursive: true });
      // The pin, after the yes, finds a symlink in the path: refused, nothing run.
      const r = await run(tool, { ...args, grants });
      expect(r.error?.code, `${tool}: ${JSON.stringify(r)}`).toBe("TARGET_CHANGED");
      expect(r.error.hint).toMatch(/ask again/);
    }
    expect(await readdir(join(outside, "cache"))).toEqual([]);
  }, 60_000);

  test.skipIf(!landlock)("a_remembered_grant_does_not_follow_a_symlink_planted_between_runs", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "sub", "cache"), { recursive: true });
    const outside = await outsideDir();
    const asked: ApprovalRequest[] = [];
    // The first request is approved for the session; any later one is denied.
    const run = toolSet(root, (r) => (asked.push(r), asked.length === 1 ? { allow: true, remember: "session" } : false));
    const grants = { writePaths: [join(root, "sub", "cache")] };
    // Approved and remembered: each tool writes into the granted directory.
    const first = await everyTool(run, root, "before", grants);
    for (const t of TOOLS) expect(await exists(join(root, "sub", "cache", `before-${t}`)), `${t}: ${JSON.stringify(first[t])}`).toBe(true);
    expect(asked).toHaveLength(1);
    // Then `sub` becomes a symlink to a directory outside: every later call of every tool
    // under the remembered grant is refused by the kernel there.
    await swap(root, outside);
    const later = await everyTool(run, root, "after");
    expect(asked).toHaveLength(1);
    for (const t of TOOLS) {
      if (t === "run_tests") expect(later[t].status, `${t}: ${JSON.stringify(later[t])}`).not.toBe("passed");
      else expect(later[t].exitCode, `${t}: ${JSON.stringify(later[t])}`).not.toBe(0);
    }
    // Naming the path again asks the person, showing where it leads now.
    const again = await run("run_command", { argv: ["touch", join(root, "sub", "cache", "again")], grants });
    expect(again.error?.code).toBe("APPROVAL_DENIED");
    expect(asked[1]!.grants).toEqual({ writePaths: [join(outside, "cache")] });
    expect(await readdir(join(outside, "cache"))).toEqual([]);
  }, 120_000);

  test.skipIf(!landlock)("a_remembered_grant_does_not_follow_a_symlink_planted_between_runs_on_an_unprivileged_host", async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(root, "sub", "cache"), { recursive: true });
    const outside = await outsideDir();
    for (const d of [parent, root, join(root, "sub"), join(root, "sub", "cache"), outside, join(outside, "cache")]) await chmod(d, 0o777);
    const copy = packageNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      return;
    }
    onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
    const script = join(parent, "host.mjs");
    await writeFile(
      script,
      `import { createCodingTools, closeTools, ToolRegistry, executeToolCall } from ${JSON.stringify(join(copy.dir, "dist", "index.js"))};
import { renameSync, symlinkSync } from "node:fs";
const [root, outside] = process.argv.slice(2);
const tools = createCodingTools(root, { approvalFor: { grant: "ask" }, approve: () => ({ allow: true, remember: "session" }) });
const reg = new ToolRegistry(tools);
const run = async (name, args) => JSON.parse((await executeToolCall(reg, { id: "c", name, arguments: args }, new AbortController().signal)).content);
const grants = { writePaths: [root + "/sub/cache"] };
const first = await run("run_command", { argv: ["touch", root + "/sub/cache/a"], grants });
renameSync(root + "/sub", root + "/sub-old");
symlinkSync(outside, root + "/sub");
const second = await run("run_command", { argv: ["touch", root + "/sub/cache/b"] });
const third = await run("node_process", { source: "require('fs').writeFileSync(process.argv[1], 'x')", arguments: [root + "/sub/cache/c"] });
await closeTools(tools);
console.log(JSON.stringify({ first: first.exitCode, second: second.exitCode, third: third.exitCode }));
`,
    );
    await chmod(script, 0o644);
    const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, script, root, outside], { encoding: "utf8", cwd: "/" });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<string, number>;
    expect(got.first).toBe(0);
    expect(await exists(join(root, "sub-old", "cache", "a"))).toBe(true);
    expect(got.second).not.toBe(0);
    expect(got.third).not.toBe(0);
    expect(await readdir(join(outside, "cache"))).toEqual([]);
  }, 60_000);
});
