// rewind_checkpoint asks with every byte of the change it makes (each file's whole diff, never
// cut; binary files named by their hashes and sizes), the MCP view shows all of it or refuses,
// and what was approved is what is applied (the change set's hash binds it). Checkpoints
// report progress (contract §18) to createCheckpoints' and the tools' onProgress.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, onTestFinished, test } from "vitest";
import { createCheckpoints, createCodingTools, type ApprovalRequest, type Progress } from "../dist/index.js";
import { ctx, mcpApprover, rejection, tempWorkspace } from "./helpers.js";

const AUTH = "export function allowed(token) {\n  return check(token);\n}\n";

/** A workspace with src/auth.js, a checkpoint of it, then `pad` large additions and a one-line change. */
async function changedSinceCheckpoint(pad: number) {
  const { parent, root } = await tempWorkspace();
  const storeDir = join(parent, "store");
  await mkdir(join(root, "src"));
  await writeFile(join(root, "src/auth.js"), AUTH);
  const { id } = await createCheckpoints(root, { storeDir }).create();
  const line = "x".repeat(99) + "\n";
  for (let i = 1; i <= pad; i++) await writeFile(join(root, `a${i}.txt`), line.repeat(6000));
  await writeFile(join(root, "src/auth.js"), AUTH.replace("check(token)", "true"));
  return { root, storeDir, id };
}

function rewindTool(root: string, storeDir: string, approve: (r: ApprovalRequest, c: { signal: AbortSignal }) => unknown) {
  const tools = createCodingTools(root, { checkpoints: { storeDir }, approvalFor: { write: "ask" }, approve: approve as never });
  return { diff: tools.diff_checkpoint, rewind: tools.rewind_checkpoint };
}

describe("rewind_checkpoint asks with the whole change", () => {
  test("a_rewind_behind_a_large_addition_shows_the_later_small_change_and_the_mcp_view_refuses", async () => {
    const { root, storeDir, id } = await changedSinceCheckpoint(2);
    const seen: ApprovalRequest[] = [];
    const mcp = await mcpApprover();
    const { diff, rewind } = rewindTool(root, storeDir, (req, c) => {
      seen.push(req);
      return mcp.approve(req, c);
    });
    const d = await diff.execute(diff.validate({ id }), ctx());
    // diff_checkpoint's own result stays bounded at 1 MiB.
    expect(d.truncated).toBe(true);
    const err = await rejection(rewind.execute(rewind.validate({ id, expectedHash: d.hash }), ctx()));
    // The approver was given every byte: each file's whole diff, the small change last.
    const req = seen[0]!;
    expect(req.diffs!.map((f) => [f.path, f.added, f.removed])).toEqual([
      ["a1.txt", 0, 6000],
      ["a2.txt", 0, 6000],
      ["src/auth.js", 1, 1],
    ]);
    expect(req.diff).toContain("-  return true;\n+  return check(token);\n");
    expect(req.diff).not.toContain("more bytes]");
    expect(Object.values(req.files!)).toEqual([d.hash, d.hash, d.hash]);
    // Too long for the MCP message: refused without asking, nothing rewound.
    expect(err.code).toBe("APPROVAL_VIEW_INCOMPLETE");
    expect(mcp.asked).toHaveLength(0);
    expect(existsSync(join(root, "a1.txt"))).toBe(true);
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toContain("return true;");
  });

  test("a_binary_file_is_named_with_its_hashes_and_sizes_and_the_mcp_view_shows_a_small_rewind_whole", async () => {
    const { root, storeDir, id } = await changedSinceCheckpoint(0);
    await writeFile(join(root, "blob.bin"), Buffer.from([0, 1, 2]));
    const mcp = await mcpApprover();
    const seen: ApprovalRequest[] = [];
    const { diff, rewind } = rewindTool(root, storeDir, (req, c) => {
      seen.push(req);
      return mcp.approve(req, c);
    });
    const d = await diff.execute(diff.validate({ id }), ctx());
    const out = await rewind.execute(rewind.validate({ id, expectedHash: d.hash }), ctx());
    expect(out.files).toEqual([
      { path: "blob.bin", action: "deleted" },
      { path: "src/auth.js", action: "modified" },
    ]);
    const sha = "ae4b3280e56e2faf83f414a6e3dabe9d5fbe18976544c05fed121accb85b53fc"; // sha256 of 00 01 02
    expect(seen[0]!.diffs![0]!.diff).toContain(`content not shown as lines (binary): sha256 ${sha} (3 bytes) becomes absent`);
    expect(mcp.asked[0]).toContain("  src/auth.js: +1 -1");
    expect(mcp.asked[0]).toContain("-  return true;\n+  return check(token);");
    expect(mcp.asked[0]).toContain(sha);
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toBe(AUTH);
    expect(existsSync(join(root, "blob.bin"))).toBe(false);
  });

  test("what_the_approver_saw_is_what_the_rewind_applies_or_nothing", async () => {
    const { root, storeDir, id } = await changedSinceCheckpoint(1);
    let sneak = true;
    const { diff, rewind } = rewindTool(root, storeDir, async () => {
      // While the person looks, the workspace changes: the approved change set is no longer it.
      if (sneak) await writeFile(join(root, "src/auth.js"), "export const allowed = () => true;\n");
      return true;
    });
    const d = await diff.execute(diff.validate({ id }), ctx());
    const err = await rejection(rewind.execute(rewind.validate({ id, expectedHash: d.hash }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    expect(existsSync(join(root, "a1.txt"))).toBe(true);
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toBe("export const allowed = () => true;\n");
    // Asked again on the workspace as it is: applied.
    sneak = false;
    const again = await diff.execute(diff.validate({ id }), ctx());
    await rewind.execute(rewind.validate({ id, expectedHash: again.hash }), ctx());
    expect(await readFile(join(root, "src/auth.js"), "utf8")).toBe(AUTH);
    expect(existsSync(join(root, "a1.txt"))).toBe(false);
  });
});

const hasFlock = spawnSync("flock", ["--version"]).status === 0;

/** Holds the store's lock from another process until `release()`. */
async function holdStore(storeDir: string): Promise<{ release(): Promise<void> }> {
  // `-o`: the command does not inherit the lock; the lock goes with flock itself.
  const child: ChildProcess = spawn("flock", ["-x", "-o", join(storeDir, "lock"), "sh", "-c", "echo held; exec sleep 600"], {
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  await new Promise<void>((res, rej) => {
    child.stdout!.on("data", (d: Buffer) => d.toString().includes("held") && res());
    child.on("exit", (code) => rej(new Error(`flock exited ${code}`)));
  });
  const exited = new Promise<void>((res) => child.on("exit", () => res()));
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    process.kill(-child.pid!, "SIGKILL");
    await exited;
  };
  onTestFinished(release);
  return { release };
}

/** Resolves once `check()` holds (polled), rejecting after `ms`. */
async function until(check: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe.skipIf(!hasFlock)("checkpoints report progress", () => {
  test("create_diff_and_rewind_report_progress_to_onProgress_and_the_tools_context", async () => {
    const { parent, root } = await tempWorkspace();
    const storeDir = join(parent, "store");
    for (let i = 0; i < 200; i++) await writeFile(join(root, `f${i}.txt`), `file ${i}\n`);
    const cps = createCheckpoints(root, { storeDir });
    const tools = createCodingTools(root, { checkpoints: { storeDir } });
    // Each call waits for the store while another process holds it, saying so; once the store
    // is free it runs, and its result is what it would be unwatched.
    const watch = async <T>(run: (onProgress: (u: Progress) => void) => Promise<T>): Promise<{ out: T; updates: Progress[] }> => {
      const held = await holdStore(storeDir);
      const updates: Progress[] = [];
      const pending = run((u) => void updates.push(u));
      await until(() => updates.length > 0);
      await held.release();
      const out = await pending;
      expect(updates[0]!.message).toBe("waiting for the checkpoint store: another process is using it");
      return { out, updates };
    };
    const created = await watch((onProgress) => cps.create({}, { onProgress }));
    expect(created.out.files).toBe(200);
    await writeFile(join(root, "f0.txt"), "changed\n");
    const diffed = await watch((onProgress) => cps.diff(created.out.id, { onProgress }));
    expect(diffed.out.files).toEqual([{ path: "f0.txt", action: "modified" }]);
    const viaTool = await watch((onProgress) => tools.diff_checkpoint.execute({ id: created.out.id }, { ...ctx(), onProgress }));
    expect(viaTool.out.hash).toBe(diffed.out.hash);
    await watch((onProgress) => tools.checkpoint.execute({}, { ...ctx(), onProgress }));
    const rewound = await watch((onProgress) => tools.rewind_checkpoint.execute({ id: created.out.id, expectedHash: diffed.out.hash }, { ...ctx(), onProgress }));
    expect(rewound.out.files).toEqual([{ path: "f0.txt", action: "modified" }]);
    expect(await readFile(join(root, "f0.txt"), "utf8")).toBe("file 0\n");
  }, 60_000);
});
