// Staged runs (contract §20) through the package: stage: true on the three process tools, the
// host's options, applyStaged / discardStaged and the tools, review mode's yes and no, closing,
// an unprivileged host, and a checkpoint around an applied staged run.
import { spawnSync } from "node:child_process";
import { chmod, chown, lstat, mkdir, readFile, readdir, readlink, writeFile } from "node:fs/promises";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { applyStaged, closeTools, createCheckpoints, createCodingTools, createRunCommandTool, discardStaged, sandboxSupport, type ApprovalRequest } from "../dist/index.js";
import { ctx, rejection, tempWorkspace } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";

const support = sandboxSupport();
const canStage = support.pidNamespace && support.userNamespace;

const SCRIPT =
  "echo new > new.txt; printf 'changed\\n' > mod.txt; rm del.txt; mv ren.txt renamed.txt; chmod 755 exec.sh; ln -s ../outside link; mkdir empty; rm -r dir; (echo x > .git/config) 2>/dev/null; true";

async function setup(): Promise<{ parent: string; root: string }> {
  const { parent, root } = await tempWorkspace();
  for (const [p, c] of [["mod.txt", "old\n"], ["del.txt", "gone\n"], ["ren.txt", "moving\n"], ["exec.sh", "#!/bin/sh\n"], ["dir/a.txt", "a\n"], [".git/config", "[core]\n"]] as const) {
    await mkdir(join(root, p, ".."), { recursive: true });
    await writeFile(join(root, p), c);
  }
  await chmod(join(root, "exec.sh"), 0o644);
  return { parent, root };
}

/** Every entry (not .git): kind, mode and content or link text. */
async function tree(root: string, dir = root, out: Record<string, string> = {}): Promise<Record<string, string>> {
  for (const name of (await readdir(dir)).sort()) {
    const p = join(dir, name);
    const rel = p.slice(root.length + 1);
    if (rel === ".git") continue;
    const st = await lstat(p);
    const mode = (st.mode & 0o7777).toString(8);
    if (st.isSymbolicLink()) out[rel] = `link ${await readlink(p)}`;
    else if (st.isDirectory()) {
      out[rel] = `dir ${mode}`;
      await tree(root, p, out);
    } else out[rel] = `file ${mode} ${await readFile(p, "utf8")}`;
  }
  return out;
}

describe.skipIf(!canStage)("staged runs", () => {
  test("run_command with stage: true leaves the workspace unchanged; applyStaged applies the change byte for byte", async () => {
    const { root } = await setup();
    const tools = createCodingTools(root);
    onTestFinished(() => closeTools(tools));
    const before = await tree(root);
    const out = await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", SCRIPT], stage: true }), ctx());
    expect(out.exitCode).toBe(0);
    expect(await tree(root)).toEqual(before);
    const s = out.staged!;
    expect(s.files).toEqual([
      { path: "del.txt", action: "deleted" },
      { path: "dir/", action: "deleted" },
      { path: "dir/a.txt", action: "deleted" },
      { path: "empty/", action: "added" },
      { path: "exec.sh", action: "mode" },
      { path: "link", action: "added" },
      { path: "mod.txt", action: "modified" },
      { path: "new.txt", action: "added" },
      { path: "ren.txt", action: "deleted" },
      { path: "renamed.txt", action: "added" },
    ]);
    expect(s.diff).toContain("+changed");
    expect(s.hash).toMatch(/^[0-9a-f]{64}$/);
    // The same script unstaged, in a copy: what the apply must give.
    const control = await setup();
    const unstaged = createRunCommandTool(control.root);
    await unstaged.execute(unstaged.validate({ argv: ["sh", "-c", SCRIPT] }), ctx());
    const applied = await applyStaged(tools, s.id, { expectedHash: s.hash });
    expect(applied.files).toEqual(s.files);
    expect(await tree(root)).toEqual(await tree(control.root));
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    expect(await rejection(applyStaged(tools, s.id, { expectedHash: s.hash }))).toMatchObject({ code: "STAGED_NOT_FOUND" });
  });

  test("a_target_changed_between_the_run_and_the_apply_is_TARGET_CHANGED_with_nothing_applied, and discard leaves nothing", async () => {
    const { root } = await setup();
    const tools = createCodingTools(root);
    onTestFinished(() => closeTools(tools));
    const s = (await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", SCRIPT], stage: true }), ctx())).staged!;
    await writeFile(join(root, "mod.txt"), "a person's edit\n");
    const before = await tree(root);
    expect(await rejection(applyStaged(tools, s.id, { expectedHash: s.hash }))).toMatchObject({ code: "TARGET_CHANGED" });
    expect(await tree(root)).toEqual(before);
    // Through the tools: discard, then the id is gone.
    expect(await tools.discard_staged.execute({ id: s.id }, ctx())).toEqual({ id: s.id, discarded: true });
    expect(await rejection(tools.apply_staged.execute({ id: s.id, expectedHash: s.hash }, ctx()))).toMatchObject({ code: "STAGED_NOT_FOUND" });
    expect(await rejection(discardStaged(tools, s.id))).toMatchObject({ code: "STAGED_NOT_FOUND" });
  });

  test("node_process and run_tests stage too; stage: \"never\" refuses stage: true before any effect", async () => {
    const { root } = await setup();
    const tools = createCodingTools(root, { runCommand: { stage: "never" } });
    onTestFinished(() => closeTools(tools));
    const n = await tools.node_process.execute(tools.node_process.validate({ source: "require('fs').writeFileSync('from-node.txt', 'hi')", stage: true }), ctx());
    expect(n.staged!.files).toEqual([{ path: "from-node.txt", action: "added" }]);
    await expect(readFile(join(root, "from-node.txt"))).rejects.toThrow();
    expect(() => tools.run_command.validate({ argv: ["true"], stage: true })).toThrow(expect.objectContaining({ code: "TOOL_ARGUMENTS_INVALID", message: "STAGE_NOT_ALLOWED" }));
    await tools.apply_staged.execute({ id: n.staged!.id, expectedHash: n.staged!.hash }, ctx());
    expect(await readFile(join(root, "from-node.txt"), "utf8")).toBe("hi");
  });

  test("review mode: yes applies the change the run made, no discards it (APPROVAL_DENIED with the run's output)", async () => {
    const { root } = await setup();
    const requests: ApprovalRequest[] = [];
    let answer = true;
    const tools = createCodingTools(root, {
      approvalFor: { process: "review" },
      approve: (r) => {
        requests.push(r);
        return answer;
      },
    });
    onTestFinished(() => closeTools(tools));
    const yes = await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", "echo yes > yes.txt; echo ran"] }), ctx());
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ tool: "run_command", effect: "process", argv: ["sh", "-c", "echo yes > yes.txt; echo ran"] });
    expect(requests[0]!.diff).toContain("+yes");
    expect(Object.keys(requests[0]!.files!)).toEqual(["yes.txt"]);
    expect(yes.staged).toBeUndefined();
    expect(yes.note).toContain("applied");
    expect(await readFile(join(root, "yes.txt"), "utf8")).toBe("yes\n");
    answer = false;
    const err = await rejection(tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", "echo no > no.txt; echo the-output"] }), ctx()));
    expect(err).toMatchObject({ code: "APPROVAL_DENIED" });
    expect(err.details.result.output).toContain("the-output");
    await expect(readFile(join(root, "no.txt"))).rejects.toThrow();
    // A run that changed nothing is not asked about.
    await tools.run_command.execute(tools.run_command.validate({ argv: ["true"] }), ctx());
    expect(requests).toHaveLength(2);
  });

  test("apply_staged asks under approvalFor.write with the whole change", async () => {
    const { root } = await setup();
    const requests: ApprovalRequest[] = [];
    const tools = createCodingTools(root, { approvalFor: { write: "ask" }, approve: (r) => (requests.push(r), true) });
    onTestFinished(() => closeTools(tools));
    const s = (await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", "echo a > a.txt"], stage: true }), ctx())).staged!;
    await tools.apply_staged.execute(tools.apply_staged.validate({ id: s.id, expectedHash: s.hash }), ctx());
    expect(requests).toHaveLength(1);
    expect(requests[0]).toMatchObject({ tool: "apply_staged", effect: "write", diff: s.diff, files: { "a.txt": s.hash } });
  });

  test("no staged data is left after closeTools", async () => {
    const { root } = await setup();
    const tools = createCodingTools(root);
    const s = (await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", "echo a > a.txt"], stage: true }), ctx())).staged!;
    await closeTools(tools);
    expect(await rejection(applyStaged(tools, s.id, { expectedHash: s.hash }))).toMatchObject({ code: "STAGED_NOT_FOUND" });
  });

  test("a checkpoint before and after an applied staged run differs by exactly the staged change", async () => {
    const { parent, root } = await setup();
    const cps = createCheckpoints(root, { storeDir: join(parent, "store") });
    const tools = createCodingTools(root);
    onTestFinished(() => closeTools(tools));
    const before = await cps.create();
    const s = (await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", SCRIPT], stage: true }), ctx())).staged!;
    await applyStaged(tools, s.id, { expectedHash: s.hash });
    const d = await cps.diff(before.id);
    // Checkpoints record files and symlinks, not directories.
    expect(d.files).toEqual(s.files.filter((f) => !f.path.endsWith("/")));
  });

  test("progress streams a staged run's output as it does an unstaged one's", async () => {
    const { root } = await setup();
    const tools = createCodingTools(root);
    onTestFinished(() => closeTools(tools));
    const updates: { output?: string }[] = [];
    const out = await tools.run_command.execute(
      tools.run_command.validate({ argv: ["sh", "-c", "for i in 1 2 3 4 5 6; do echo step $i; echo $i >> log.txt; sleep 0.1; done"], stage: true }),
      { ...ctx(), onProgress: (u) => void updates.push(u) },
    );
    expect(out.staged!.files).toEqual([{ path: "log.txt", action: "added" }]);
    expect(updates.filter((u) => u.output).length).toBeGreaterThanOrEqual(2);
    expect(out.output.startsWith(updates.map((u) => u.output ?? "").join(""))).toBe(true);
  });

  test("stage: \"always\" stages every run; a change not applied within stagedTtlMs expires", async () => {
    const { root } = await setup();
    const tool = createRunCommandTool(root, { stage: "always", stagedTtlMs: 200 });
    onTestFinished(() => closeTools([tool]));
    const s = (await tool.execute(tool.validate({ argv: ["sh", "-c", "echo a > a.txt"] }), ctx())).staged!;
    expect(s.files).toEqual([{ path: "a.txt", action: "added" }]);
    // Kept until its time is up (a wrong hash is refused and the change kept), then gone.
    expect(await rejection(applyStaged([tool], s.id, { expectedHash: "0" }))).toMatchObject({ code: "TARGET_CHANGED" });
    for (;;) {
      const e = await rejection(applyStaged([tool], s.id, { expectedHash: "0" }));
      if (e.code === "STAGED_NOT_FOUND") break;
      await new Promise((r) => setTimeout(r, 25));
    }
    await expect(readFile(join(root, "a.txt"))).rejects.toThrow();
  });

  test("options: a bad stage value is a TypeError naming the option", () => {
    expect(() => createCodingTools("/tmp", { processes: { stage: "sometimes" as never } })).toThrow(/processes\.stage/);
    expect(() => createRunCommandTool("/tmp", { maxStagedBytes: 1 })).toThrow(/maxStagedBytes/);
  });

  // An unprivileged host, on files it owns (a root host on files of others: EOVERFLOW, see
  // docs/staged-runs.md).
  test.skipIf(process.getuid?.() !== 0)("as an unprivileged host", async () => {
    const { parent, root } = await setup();
    await chmod(parent, 0o755);
    for (const p of ["", "mod.txt", "del.txt", "ren.txt", "exec.sh", "dir", "dir/a.txt", ".git", ".git/config"]) await chown(join(root, p), 65534, 65534);
    const copy = packageNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      return;
    }
    onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
    const script = join(parent, "host.mjs");
    await writeFile(
      script,
      `import { createCodingTools, applyStaged, closeTools } from ${JSON.stringify(join(copy.dir, "dist", "index.js"))};
const tools = createCodingTools(process.argv[2]);
const c = { signal: new AbortController().signal };
const r = await tools.run_command.execute(tools.run_command.validate({ argv: ["sh", "-c", process.argv[3]], stage: true }), c);
const files = r.staged.files;
await applyStaged(tools, r.staged.id, { expectedHash: r.staged.hash });
await closeTools(tools);
console.log(JSON.stringify({ exitCode: r.exitCode, files }));
`,
    );
    await chmod(script, 0o644);
    const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, script, root, SCRIPT], { encoding: "utf8", cwd: "/" });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as { exitCode: number; files: { path: string }[] };
    expect(got.exitCode).toBe(0);
    expect(got.files.map((f) => f.path)).toContain("renamed.txt");
    expect(await readFile(join(root, "mod.txt"), "utf8")).toBe("changed\n");
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
  }, 30_000);
});
