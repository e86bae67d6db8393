import { execFileSync } from "node:child_process";
import { chmod, lstat, mkdir, readFile, readdir, readlink, rename, rm, stat, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  ToolError,
  ToolRegistry,
  createCodingTools,
  createWriteTool,
  executeToolCall,
  isAbortError,
} from "../dist/index.js";
import { call, content, ctx, tempWorkspace, walk } from "./helpers.js";

type WriteTool = ReturnType<typeof createWriteTool>;

async function writeErr(tool: WriteTool, input: unknown, { validate = true } = {}): Promise<ToolError> {
  const run = async () => tool.execute(validate ? tool.validate(input) : (input as any), ctx());
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ToolError);
  return err as ToolError;
}

/** Every entry beneath `dir` with its type, mode, size and content or link text. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function go(d: string, rel: string): Promise<void> {
    for (const name of (await readdir(d)).sort()) {
      const p = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const s = await lstat(p);
      if (s.isSymbolicLink()) out[r] = `link:${await readlink(p)}`;
      else if (s.isDirectory()) {
        out[r] = `dir:${(s.mode & 0o7777).toString(8)}`;
        await go(p, r);
      } else if (s.isFile()) out[r] = `file:${(s.mode & 0o7777).toString(8)}:${(await readFile(p)).toString("base64")}`;
      else out[r] = `other:${s.mode.toString(8)}`;
    }
  }
  await go(dir, "");
  return out;
}

/** Entries named like our temporary files anywhere beneath `dir`. */
async function temps(dir: string): Promise<string[]> {
  const all = await walk(dir);
  return all.filter((p) => p.split("/").pop()!.startsWith(".workcell-tmp-"));
}

const mode = async (p: string) => (await stat(p)).mode & 0o7777;

describe("write_file", () => {
  test("creates, then replaces, reporting the normalized path, UTF-8 bytes and created", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createWriteTool(root);
    expect(await tool.execute(tool.validate({ path: "./src//a.txt", content: "héllo" }), ctx())).toEqual({
      path: "src/a.txt",
      bytes: 6,
      created: true,
    });
    expect(await tool.execute(tool.validate({ path: "src/a.txt", content: "\ufeffa\u0000b😀" }), ctx())).toEqual({
      path: "src/a.txt",
      bytes: 10,
      created: false,
    });
    expect(await readFile(join(root, "src/a.txt"), "utf8")).toBe("\ufeffa\u0000b😀");
    expect(await tool.execute(tool.validate({ path: "empty", content: "" }), ctx())).toEqual({ path: "empty", bytes: 0, created: true });
    expect(await temps(parent)).toEqual([]);
  });

  test("65,536 UTF-8 bytes is accepted; one more is CONTENT_TOO_LARGE before any effect, also past validate", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root);
    expect((await tool.execute(tool.validate({ path: "max", content: "a".repeat(65_536) }), ctx())).bytes).toBe(65_536);
    const cases = ["a".repeat(65_537), "€".repeat(21_846) /* 65,538 bytes in 21,846 UTF-16 units */, "😀".repeat(16_385)];
    for (const big of cases) {
      for (const validate of [true, false]) {
        const err = await writeErr(tool, { path: "new/dir/over", content: big }, { validate });
        expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
        expect(err.message).toBe("CONTENT_TOO_LARGE");
        expect(err.hint).toMatch(/65536|65,536/);
      }
    }
    expect(await readdir(root)).toEqual(["max"]);
  });

  test("maxContentBytes lowers the limit, enforced in Rust too", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root, { maxContentBytes: 10 });
    expect(tool.description).toContain("at most 10 UTF-8 bytes");
    await tool.execute(tool.validate({ path: "ok", content: "0123456789" }), ctx());
    for (const validate of [true, false]) {
      expect((await writeErr(tool, { path: "no", content: "0123456789a" }, { validate })).message).toBe("CONTENT_TOO_LARGE");
    }
    expect(await readdir(root)).toEqual(["ok"]);
    expect(() => createWriteTool(root, { maxContentBytes: -1 })).toThrow(TypeError);
  });

  test("content with a lone surrogate is INVALID_UNICODE before any effect, also past validate", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root);
    for (const bad of ["a\ud800b", "\udc00", "x".repeat(100) + "\ud83d"]) {
      for (const validate of [true, false]) {
        const err = await writeErr(tool, { path: "d/f.txt", content: bad }, { validate });
        expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
        expect(err.message).toBe("INVALID_UNICODE");
      }
    }
    expect(await readdir(root)).toEqual([]);
  });

  test("the path grammar, and a trailing /, are INVALID_RELATIVE_PATH before any effect, also past validate", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createWriteTool(root);
    const before = await snapshot(parent);
    for (const path of [
      "../outside.txt", "a/../b", "/etc/passwd", "//server/share/x", "a\\b", "C:/x", "c:x", "a:b", "nul.txt", "Com1.tar.gz",
      "foo.", "foo ", "a\u0000b", "", ".", "./", "dir/", "dir/.", "new/", "a<b",
    ]) {
      for (const validate of [true, false]) {
        const err = await writeErr(tool, { path, content: "x" }, { validate });
        expect([err.code, err.message], JSON.stringify(path)).toEqual(["TOOL_ARGUMENTS_INVALID", "INVALID_RELATIVE_PATH"]);
        expect(err.hint).toBeTruthy();
      }
    }
    expect(await snapshot(parent)).toEqual(before);
  });

  test("the wrong argument shape is INVALID_ARGUMENTS_SHAPE", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root);
    for (const input of [{ path: "a" }, { content: "x" }, { path: "a", content: 1 }, { path: "a", content: "x", mode: 0o777 }, null, "a"]) {
      expect(() => tool.validate(input)).toThrow(expect.objectContaining({ code: "TOOL_ARGUMENTS_INVALID", message: "INVALID_ARGUMENTS_SHAPE" }));
    }
  });

  test("missing parent directories are created beneath the root, also through an inside symlink", async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(root, "real"));
    await symlink("real", join(root, "alias"));
    const tool = createWriteTool(root);
    await tool.execute({ path: "a/b/c/d.txt", content: "deep" }, ctx());
    await tool.execute({ path: "alias/x/y.txt", content: "via link" }, ctx());
    expect(await readFile(join(root, "a/b/c/d.txt"), "utf8")).toBe("deep");
    expect(await readFile(join(root, "real/x/y.txt"), "utf8")).toBe("via link");
    expect((await lstat(join(root, "alias"))).isSymbolicLink()).toBe(true);
    expect(await temps(parent)).toEqual([]);
  });

  test("a parent or a final symlink leading outside is PATH_ESCAPES_WORKSPACE and nothing outside changes", async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(parent, "OUT"));
    await writeFile(join(parent, "secret.txt"), "outside");
    await writeFile(join(root, "inside.txt"), "inside");
    await symlink("../OUT", join(root, "outdir"));
    await symlink(join(parent, "OUT"), join(root, "absdir"));
    await symlink("../secret.txt", join(root, "up"));
    await symlink(join(parent, "secret.txt"), join(root, "abs"));
    await symlink(join(root, "inside.txt"), join(root, "abs-inside"));
    await symlink("../missing.txt", join(root, "up-dangling"));
    const tool = createWriteTool(root);
    const before = await snapshot(parent);
    for (const path of ["outdir/x.txt", "outdir/new/dir/x.txt", "absdir/x.txt", "up", "abs", "abs-inside", "up-dangling"]) {
      expect((await writeErr(tool, { path, content: "pwned" })).code, path).toBe("PATH_ESCAPES_WORKSPACE");
    }
    expect(await snapshot(parent)).toEqual(before);
  });

  test("a final symlink inside is written through: its target is replaced and the link stays", async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(root, "d"));
    await writeFile(join(root, "d/real.txt"), "old");
    await chmod(join(root, "d/real.txt"), 0o755);
    await symlink("d/real.txt", join(root, "link"));
    await symlink("d/new.txt", join(root, "dangling"));
    const tool = createWriteTool(root);
    expect(await tool.execute({ path: "link", content: "new" }, ctx())).toEqual({ path: "link", bytes: 3, created: false });
    expect(await readlink(join(root, "link"))).toBe("d/real.txt");
    expect(await readFile(join(root, "d/real.txt"), "utf8")).toBe("new");
    expect(await mode(join(root, "d/real.txt"))).toBe(0o755);
    expect(await tool.execute({ path: "dangling", content: "made" }, ctx())).toEqual({ path: "dangling", bytes: 4, created: true });
    expect(await readFile(join(root, "d/new.txt"), "utf8")).toBe("made");
    expect(await readlink(join(root, "dangling"))).toBe("d/new.txt");
    expect(await temps(parent)).toEqual([]);
  });

  test("a symlink loop is SYMLINK_LOOP", async () => {
    const { root } = await tempWorkspace();
    await symlink("b", join(root, "a"));
    await symlink("a", join(root, "b"));
    expect((await writeErr(createWriteTool(root), { path: "a", content: "x" })).code).toBe("SYMLINK_LOOP");
  });

  test("a directory, FIFO, socket or device at the target is NOT_A_REGULAR_FILE, without blocking", async () => {
    const { parent, root } = await tempWorkspace();
    await mkdir(join(root, "dir"));
    execFileSync("mkfifo", [join(root, "fifo")]);
    await symlink("fifo", join(root, "to-fifo"));
    const server: Server = createServer();
    await new Promise<void>((resolve) => server.listen(join(root, "sock"), resolve));
    let device = false;
    try {
      execFileSync("mknod", [join(root, "null"), "c", "1", "3"], { stdio: "ignore" });
      device = true;
    } catch {
      console.warn("write.test: mknod is not permitted here; the device case is skipped");
    }
    try {
      const tool = createWriteTool(root);
      const kinds: [string, string][] = [["dir", "directory"], ["fifo", "fifo"], ["to-fifo", "fifo"], ["sock", "socket"]];
      if (device) kinds.push(["null", "character device"]);
      for (const [path, kind] of kinds) {
        const err = await writeErr(tool, { path, content: "x" });
        expect(err.code, path).toBe("NOT_A_REGULAR_FILE");
        expect(err.details).toEqual({ type: kind });
      }
      expect((await lstat(join(root, "fifo"))).isFIFO()).toBe(true);
      expect(await temps(parent)).toEqual([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("an executable stays executable, other modes are kept, a new file is 0644 whatever the umask", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "run.sh"), "#!/bin/sh\n");
    await chmod(join(root, "run.sh"), 0o755);
    await writeFile(join(root, "private"), "p");
    await chmod(join(root, "private"), 0o600);
    await writeFile(join(root, "group"), "g");
    await chmod(join(root, "group"), 0o664);
    const tool = createWriteTool(root);
    const old = process.umask(0o077);
    try {
      await tool.execute({ path: "run.sh", content: "#!/bin/sh\necho hi\n" }, ctx());
      await tool.execute({ path: "private", content: "q" }, ctx());
      await tool.execute({ path: "group", content: "h" }, ctx());
      await tool.execute({ path: "new.txt", content: "n" }, ctx());
    } finally {
      process.umask(old);
    }
    expect(await mode(join(root, "run.sh"))).toBe(0o755);
    expect(await mode(join(root, "private"))).toBe(0o600);
    expect(await mode(join(root, "group"))).toBe(0o664);
    expect(await mode(join(root, "new.txt"))).toBe(0o644);
    expect(execFileSync(join(root, "run.sh"), { encoding: "utf8" })).toBe("hi\n");
  });

  test("planted symlinks and files at likely temp names never redirect the write and are left alone", async () => {
    const { parent, root } = await tempWorkspace();
    await writeFile(join(parent, "secret.txt"), "outside");
    const planted = [".workcell-tmp-", ".workcell-tmp-0", ".workcell-tmp-00000000", ".workcell-tmp-tmp", `.workcell-tmp-${process.pid}`];
    for (const [i, name] of planted.entries()) {
      if (i % 2 === 0) await symlink(join(parent, "secret.txt"), join(root, name));
      else await writeFile(join(root, name), "planted");
    }
    const before = await snapshot(parent);
    const tool = createWriteTool(root);
    for (let i = 0; i < 50; i++) await tool.execute({ path: "target", content: `v${i}` }, ctx());
    expect(await readFile(join(root, "target"), "utf8")).toBe("v49");
    const after = await snapshot(parent);
    delete after["ROOT/target"];
    expect(after).toEqual(before);
  });

  test("the root replaced after the tool was created is WORKSPACE_ROOT_CHANGED and never written", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createWriteTool(root);
    await rename(root, join(parent, "moved"));
    await mkdir(root);
    for (let i = 0; i < 5; i++) expect((await writeErr(tool, { path: "a/b.txt", content: "x" })).code).toBe("WORKSPACE_ROOT_CHANGED");
    expect(await readdir(root)).toEqual([]);
    expect(await readdir(join(parent, "moved"))).toEqual([]);
  });

  test("an already aborted signal rejects with AbortError before any effect", async () => {
    const { root } = await tempWorkspace();
    const tool = createWriteTool(root);
    const ac = new AbortController();
    ac.abort();
    const err = await tool.execute({ path: "new/dir/file", content: "x" }, ctx(ac.signal)).catch((e: unknown) => e);
    expect(isAbortError(err)).toBe(true);
    const registry = new ToolRegistry([tool]);
    const viaRegistry = await executeToolCall(registry, call("write_file", { path: "other", content: "x" }), ac.signal).catch((e: unknown) => e);
    expect(isAbortError(viaRegistry)).toBe(true);
    expect(await readdir(root)).toEqual([]);
  });

  test("a call aborted while queued behind others rejects with AbortError; the others complete in order", async () => {
    const { parent, root } = await tempWorkspace();
    const tool = createWriteTool(root);
    const controllers = Array.from({ length: 40 }, () => new AbortController());
    const calls = controllers.map((ac, i) => tool.execute({ path: "q.txt", content: `${i}` }, ctx(ac.signal)));
    controllers[39]!.abort();
    const results = await Promise.allSettled(calls);
    expect(results[39]!.status).toBe("rejected");
    expect(isAbortError((results[39] as PromiseRejectedResult).reason)).toBe(true);
    expect(results.slice(0, 39).every((r) => r.status === "fulfilled")).toBe(true);
    expect(await readFile(join(root, "q.txt"), "utf8")).toBe("38");
    expect(await temps(parent)).toEqual([]);
  });

  test("the failure experiment: write_file to ../outside.txt through executeToolCall", async () => {
    const { parent, root } = await tempWorkspace();
    const registry = new ToolRegistry(createCodingTools(root));
    const result = await executeToolCall(registry, call("write_file", { path: "../outside.txt", content: "escaped" }), new AbortController().signal);
    expect(result.isError).toBe(true);
    const { error } = content(result);
    expect(error.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(error.message).toBe("INVALID_RELATIVE_PATH");
    expect(error.hint).toBeTruthy();
    await expect(stat(join(parent, "outside.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    expect(await readdir(parent)).toEqual(["ROOT"]);
    expect(await readdir(root)).toEqual([]);
  });

  test("executeToolCall serializes the output; createCodingTools includes write_file", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry(createCodingTools(root, { descriptions: "full" }));
    const def = registry.definitions().find((d) => d.name === "write_file")!;
    expect(def.parameters).toMatchObject({ type: "object", additionalProperties: false, required: ["path", "content"] });
    expect(def.description).toMatch(/65,536/);
    expect(def.description).toMatch(/relative to the workspace/);
    const result = await executeToolCall(registry, call("write_file", JSON.stringify({ path: "x/y.md", content: "# hi\n" })), new AbortController().signal);
    expect(result).toMatchObject({ type: "toolResult", name: "write_file", isError: false });
    expect(content(result)).toEqual({ path: "x/y.md", bytes: 5, created: true });
    const read = await executeToolCall(registry, call("read_file", { path: "x/y.md" }), new AbortController().signal);
    expect(content(read).content).toBe("# hi\n");
    await rm(join(root, "x"), { recursive: true });
  });
});
