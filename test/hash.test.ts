import { createHash } from "node:crypto";
import { mkdir, readdir, symlink, truncate, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolError, hashFile, isAbortError } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";

const sha256 = (data: string | Buffer): string => createHash("sha256").update(data).digest("hex");

async function hashErr(root: string, path: string): Promise<ToolError> {
  const err = await hashFile(root, path).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

describe("hashFile", () => {
  test("absent, the SHA-256 of a regular file, and what is not a regular file", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "hello\n");
    await writeFile(join(root, "empty"), "");
    await mkdir(join(root, "dir"));
    execFileSync("mkfifo", [join(root, "pipe")]);
    expect(await hashFile(root, "missing.txt")).toBe("absent");
    expect(await hashFile(root, "dir/missing.txt")).toBe("absent");
    expect(await hashFile(root, "a.txt")).toBe(sha256("hello\n"));
    expect(await hashFile(root, "./a.txt")).toBe(sha256("hello\n"));
    expect(await hashFile(root, "empty")).toBe(sha256(""));
    expect(await hashFile(root, "dir")).toBe("not a regular file: directory");
    const started = Date.now();
    expect(await hashFile(root, "pipe")).toBe("not a regular file: fifo");
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  test("the hash follows the content", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a"), "v1");
    const before = await hashFile(root, "a");
    await writeFile(join(root, "a"), "v2");
    const after = await hashFile(root, "a");
    expect(after).not.toBe(before);
    expect(after).toBe(sha256("v2"));
  });

  test("a final symlink inside is followed (writes go through it); escaping links and loops are refused", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(root, "target.txt"), "inside");
    await writeFile(join(parent, "secret.txt"), "outside");
    await mkdir(join(root, "d"));
    await symlink("target.txt", join(root, "link"));
    await symlink("d", join(root, "dirlink"));
    await symlink("nowhere", join(root, "dangling"));
    await symlink("../secret.txt", join(root, "rel-out"));
    await symlink(join(parent, "secret.txt"), join(root, "abs-out"));
    await symlink(join(root, "target.txt"), join(root, "abs-in"));
    await symlink("loop", join(root, "loop"));
    expect(await hashFile(root, "link")).toBe(sha256("inside"));
    expect(await hashFile(root, "dirlink")).toBe("not a regular file: directory");
    expect(await hashFile(root, "dangling")).toBe("absent");
    expect((await hashErr(root, "rel-out")).code).toBe("PATH_ESCAPES_WORKSPACE");
    expect((await hashErr(root, "abs-out")).code).toBe("PATH_ESCAPES_WORKSPACE");
    // Absolute symlinks are refused even when they point inside.
    expect((await hashErr(root, "abs-in")).code).toBe("PATH_ESCAPES_WORKSPACE");
    expect((await hashErr(root, "loop")).code).toBe("SYMLINK_LOOP");
  });

  test("bad paths, big files, aborted signals", async () => {
    const { root } = await tempWorkspace();
    for (const p of ["../x", "/etc/passwd", "a\\b", "nul.txt", ""]) {
      const err = await hashErr(root, p);
      expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
      expect(err.message).toBe("INVALID_RELATIVE_PATH");
    }
    expect((await hashErr(root, "a\ud800")).message).toBe("INVALID_UNICODE");
    await writeFile(join(root, "huge"), "");
    await truncate(join(root, "huge"), 64 * 1024 * 1024 + 1);
    expect((await hashErr(root, "huge")).code).toBe("FILE_TOO_LARGE");
    const ac = new AbortController();
    ac.abort();
    expect(isAbortError(await hashFile(root, "huge", { signal: ac.signal }).catch((e: unknown) => e))).toBe(true);
    await expect(hashFile(join(root, "missing-root"), "a")).rejects.toBeInstanceOf(ToolError);
  });
});

test("hashing many paths holds no descriptors open afterwards", async () => {
  const { root } = await tempWorkspace();
  await writeFile(join(root, "a"), "x");
  const fds = async () => (await readdir("/proc/self/fd")).length;
  const before = await fds();
  for (let i = 0; i < 2000; i++) await hashFile(root, i % 2 ? "a" : "missing");
  expect(await fds()).toBeLessThan(before + 50);
});
