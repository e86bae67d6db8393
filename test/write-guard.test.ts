import { mkdir, readFile, readdir, rename, rm, symlink, unlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolError, createCodingTools, createEditTool, createWriteTool, hashFile } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

async function fails(p: Promise<unknown>): Promise<ToolError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

async function repo(): Promise<{ root: string; parent: string }> {
  const ws = await tempWorkspace();
  await mkdir(join(ws.root, ".git"));
  await writeFile(join(ws.root, ".git/config"), "[core]\n");
  return ws;
}

async function noTemps(dir: string): Promise<void> {
  const names = await readdir(dir, { recursive: true });
  expect(names.filter((n) => String(n).split("/").pop()!.startsWith(".workcell-tmp-"))).toEqual([]);
}

describe("write guard", () => {
  test("the default protects .git and everything in it, for write_file and edit_file", async () => {
    const { root } = await repo();
    const write = createWriteTool(root);
    const edit = createEditTool(root);
    for (const path of [".git/config", ".git", ".git/hooks/pre-commit", "./.git//config", ".GIT/config"]) {
      const err = await fails(write.execute(write.validate({ path, content: "x" }), ctx()));
      expect(err.code).toBe("PATH_PROTECTED");
      expect(err.hint).toMatch(/\.git\/\*\*/);
    }
    const err = await fails(edit.execute(edit.validate({ path: ".git/config", edits: [{ oldText: "[core]", newText: "[x]" }] }), ctx()));
    expect(err.code).toBe("PATH_PROTECTED");
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    expect(existsSync(join(root, ".git/hooks"))).toBe(false);
    // Names that only look alike are not protected.
    await write.execute(write.validate({ path: ".github/workflow.yml", content: "x" }), ctx());
    await write.execute(write.validate({ path: "sub/.gitmodules", content: "x" }), ctx());
    await noTemps(root);
  });

  test("the default protects nested repositories: a planted core.fsmonitor in vendor/lib/.git/config is refused", async () => {
    const { root } = await repo();
    await mkdir(join(root, "vendor/lib/.git"), { recursive: true });
    await writeFile(join(root, "vendor/lib/.git/config"), "[core]\n");
    const planted = "[core]\n\tfsmonitor = \"sh -c 'id > /tmp/pwned'\"\n";
    const write = createWriteTool(root);
    const edit = createEditTool(root);
    for (const path of ["vendor/lib/.git/config", "vendor/lib/.git", "vendor/lib/.git/hooks/post-checkout", "a/b/.GIT/config"]) {
      const err = await fails(write.execute(write.validate({ path, content: planted }), ctx()));
      expect(err.code).toBe("PATH_PROTECTED");
      expect(err.hint).toContain("**/.git/**");
    }
    const err = await fails(
      edit.execute(edit.validate({ path: "vendor/lib/.git/config", edits: [{ oldText: "[core]\n", newText: planted }] }), ctx()),
    );
    expect(err.code).toBe("PATH_PROTECTED");
    expect(await readFile(join(root, "vendor/lib/.git/config"), "utf8")).toBe("[core]\n");
    expect(existsSync(join(root, "a/b"))).toBe(false);
    // The old default (top-level .git only) lets the attack through: the refusal is the new default's.
    const old = createWriteTool(root, { protect: [".git/**"] });
    await old.execute(old.validate({ path: "vendor/lib/.git/config", content: planted }), ctx());
    expect(await readFile(join(root, "vendor/lib/.git/config"), "utf8")).toBe(planted);
    await noTemps(root);
  });

  test("a symlink inside the workspace cannot carry a write into a protected path", async () => {
    const { root } = await repo();
    await symlink(".git/config", join(root, "x"));
    await symlink(".git", join(root, "d"));
    await mkdir(join(root, "sub"));
    await symlink("../.git/config", join(root, "sub/cfg"));
    const write = createWriteTool(root);
    const edit = createEditTool(root);
    for (const path of ["x", "d/config", "d/hooks/post-checkout", "sub/cfg"]) {
      const err = await fails(write.execute(write.validate({ path, content: "pwned" }), ctx()));
      expect(err.code, path).toBe("PATH_PROTECTED");
      expect((err.details as any).resolvesTo).toMatch(/^\.git/);
    }
    const err = await fails(edit.execute(edit.validate({ path: "x", edits: [{ oldText: "[core]", newText: "pwned" }] }), ctx()));
    expect(err.code).toBe("PATH_PROTECTED");
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    expect(existsSync(join(root, ".git/hooks"))).toBe(false);
    // With protection turned off the same link is written through: the refusal above is the guard's.
    const open = createWriteTool(root, { protect: [] });
    await open.execute(open.validate({ path: "x", content: "through\n" }), ctx());
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("through\n");
    await noTemps(root);
  });

  test("racing a directory against a link to .git never lands a write (or a directory) in .git", async () => {
    const { root } = await repo();
    await mkdir(join(root, "d"));
    const write = createWriteTool(root);
    const edit = createEditTool(root);
    let done = false;
    let swaps = 0;
    const attacker = (async () => {
      while (!done) {
        try {
          await rename(join(root, "d"), join(root, "d.real"));
          await symlink(".git", join(root, "d"));
          await new Promise((r) => setImmediate(r));
          await unlink(join(root, "d"));
          await rename(join(root, "d.real"), join(root, "d"));
          swaps++;
        } catch {
          // a writer created d meanwhile; put things back and go on
          await rm(join(root, "d"), { recursive: true, force: true }).catch(() => {});
          await rename(join(root, "d.real"), join(root, "d")).catch(() => {});
        }
      }
    })();
    const outcomes: Record<string, number> = {};
    // Writers run in small batches until the attacker has swapped often enough and some write
    // has met the link.
    for (let i = 0; (swaps < 300 || !outcomes.PATH_PROTECTED) && i < 20_000; ) {
      const batch: Promise<unknown>[] = [];
      for (let k = 0; k < 8; k++, i++) {
        const path = ["d/config", `d/sub${i % 5}/x`, "d/HEAD"][i % 3];
        const p =
          i % 4 === 3
            ? edit.execute(edit.validate({ path: "d/config", edits: [{ oldText: "[core]", newText: "pwned" }] }), ctx())
            : write.execute(write.validate({ path, content: "pwned\n" }), ctx());
        batch.push(
          p.then(
            () => (outcomes.ok = (outcomes.ok ?? 0) + 1),
            (e: any) => (outcomes[e.code] = (outcomes[e.code] ?? 0) + 1),
          ),
        );
      }
      await Promise.all(batch);
    }
    done = true;
    await attacker;
    console.log(`guard race: ${swaps} swaps, outcomes ${JSON.stringify(outcomes)}`);
    expect(outcomes.PATH_PROTECTED ?? 0).toBeGreaterThan(0);
    expect(await readFile(join(root, ".git/config"), "utf8")).toBe("[core]\n");
    expect((await readdir(join(root, ".git"))).sort()).toEqual(["config"]);
    await noTemps(root);
  });

  test("custom globs replace the default", async () => {
    const { root } = await repo();
    const tools = createCodingTools(root, { guard: { protect: ["*.lock", "secrets/**"] } });
    const write = tools.find((t) => t.name === "write_file")!;
    for (const path of ["Cargo.lock", "secrets", "secrets/key.pem"]) {
      const err = await fails(write.execute(write.validate({ path, content: "x" }), ctx()));
      expect(err.code, path).toBe("PATH_PROTECTED");
    }
    await write.execute(write.validate({ path: "sub/Cargo.lock", content: "x" }), ctx());
    await write.execute(write.validate({ path: ".git/config", content: "allowed" }), ctx());
    expect(() => createWriteTool(root, { protect: ["a/[b"] })).toThrow(TypeError);
  });

  test("refuseLinksOnWrite refuses any symlink on the way", async () => {
    const { root } = await tempWorkspace();
    await mkdir(join(root, "real"));
    await writeFile(join(root, "real/f.txt"), "f\n");
    await symlink("real", join(root, "dir"));
    await symlink("real/f.txt", join(root, "file"));
    const write = createWriteTool(root, { refuseLinksOnWrite: true });
    const edit = createEditTool(root, { refuseLinksOnWrite: true });
    for (const path of ["dir/f.txt", "file", "dir/new/g.txt"]) {
      const err = await fails(write.execute(write.validate({ path, content: "x" }), ctx()));
      expect(err.code, path).toBe("PATH_PROTECTED");
      expect(err.hint).toContain("real path");
    }
    const err = await fails(edit.execute(edit.validate({ path: "file", edits: [{ oldText: "f", newText: "g" }] }), ctx()));
    expect(err.code).toBe("PATH_PROTECTED");
    expect(existsSync(join(root, "real/new"))).toBe(false);
    expect(await readFile(join(root, "real/f.txt"), "utf8")).toBe("f\n");
    await write.execute(write.validate({ path: "real/f.txt", content: "direct\n" }), ctx());
    // Default: links inside are followed.
    const plain = createEditTool(root);
    await plain.execute(plain.validate({ path: "file", edits: [{ oldText: "direct", newText: "via link" }] }), ctx());
    expect(await readFile(join(root, "real/f.txt"), "utf8")).toBe("via link\n");
    await noTemps(root);
  });
});

describe("expectedHash on write_file", () => {
  test("refuses after a concurrent change and allows it otherwise", async () => {
    const { root } = await tempWorkspace();
    const write = createWriteTool(root);
    expect(await hashFile(root, "n.txt")).toBe("absent");
    await write.execute(write.validate({ path: "n.txt", content: "v1", expectedHash: "absent" }), ctx());
    // "absent" no longer holds.
    let err = await fails(write.execute(write.validate({ path: "n.txt", content: "v2", expectedHash: "absent" }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    const seen = await hashFile(root, "n.txt");
    await writeFile(join(root, "n.txt"), "v1 changed by someone else");
    err = await fails(write.execute(write.validate({ path: "n.txt", content: "v2", expectedHash: seen }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    expect(err.hint).toContain("read it again");
    expect(await readFile(join(root, "n.txt"), "utf8")).toBe("v1 changed by someone else");
    await write.execute(write.validate({ path: "n.txt", content: "v2", expectedHash: await hashFile(root, "n.txt") }), ctx());
    expect(await readFile(join(root, "n.txt"), "utf8")).toBe("v2");
    await noTemps(root);
  });

  test("hashFile of a symlink names what a write through it replaces", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "real.txt"), "real");
    await symlink("real.txt", join(root, "l"));
    const write = createWriteTool(root);
    const edit = createEditTool(root);
    const h = await hashFile(root, "l");
    expect(h).toBe(await hashFile(root, "real.txt"));
    await write.execute(write.validate({ path: "l", content: "real 2", expectedHash: h }), ctx());
    await edit.execute(edit.validate({ path: "l", edits: [{ oldText: "2", newText: "3" }], expectedHash: await hashFile(root, "l") }), ctx());
    expect(await readFile(join(root, "real.txt"), "utf8")).toBe("real 3");
    const err = await fails(write.execute(write.validate({ path: "l", content: "x", expectedHash: h }), ctx()));
    expect(err.code).toBe("TARGET_CHANGED");
    expect((err.details as any).actualHash).toBe(await hashFile(root, "real.txt"));
  });

  test("is checked under the lock: of two writes approved against one hash, only the first lands", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "t.txt"), "base");
    const write = createWriteTool(root);
    const h = await hashFile(root, "t.txt");
    const results = await Promise.allSettled([
      write.execute(write.validate({ path: "t.txt", content: "first", expectedHash: h }), ctx()),
      write.execute(write.validate({ path: "t.txt", content: "second", expectedHash: h }), ctx()),
    ]);
    expect(results[0].status).toBe("fulfilled");
    expect(results[1].status).toBe("rejected");
    expect((results[1] as PromiseRejectedResult).reason.code).toBe("TARGET_CHANGED");
    expect(await readFile(join(root, "t.txt"), "utf8")).toBe("first");
  });
});
