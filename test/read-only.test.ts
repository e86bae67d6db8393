// Read-only files: write_file, edit_file, apply_patch, move_file's overwrite and Anthropic's
// text editor replace a file only where the caller could open it for writing. As root the host
// runs as nobody (setpriv), from a copy of the package it can read; root itself may write a
// 0444 file, as its open() may, and the file keeps its owner and mode.
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { chmod, chown, mkdir, mkdtemp, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { describe, expect, onTestFinished, test } from "vitest";
import { createCodingTools } from "../dist/index.js";
import { ctx } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";

const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

/** A workspace owned by `owner` (nobody as root) with `ro.txt` 0444 and `rw.txt` 0644. */
async function workspace(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "workcell-read-only-"));
  onTestFinished(() => rmSync(root, { recursive: true, force: true }));
  await chmod(root, 0o755);
  await writeFile(join(root, "ro.txt"), "read only\n");
  await writeFile(join(root, "rw.txt"), "writable\n");
  await mkdir(join(root, "sub"));
  if (asRoot) for (const f of ["", "ro.txt", "rw.txt", "sub"]) await chown(join(root, f), NOBODY, NOBODY);
  await chmod(join(root, "ro.txt"), 0o444);
  return root;
}

/** The calls, in a host run as the unprivileged user; each answer (or error code and message). */
const SCRIPT = `
  const [pkg, root] = process.argv.slice(1);
  const { createCodingTools } = await import(pkg + "/dist/index.js");
  const { textEditor } = await import(pkg + "/dist/adapters/anthropic.js");
  const tools = createCodingTools(root);
  const by = (n) => tools.find((t) => t.name === n);
  const c = { signal: new AbortController().signal };
  const run = (n, args) => by(n).execute(by(n).validate(args), c).then((v) => ({ ok: v }), (e) => ({ code: e.code, message: e.message, hint: e.hint }));
  const out = {};
  out.write = await run("write_file", { path: "ro.txt", content: "replaced\\n" });
  out.edit = await run("edit_file", { path: "ro.txt", edits: [{ oldText: "read only", newText: "edited" }] });
  out.patch = await run("apply_patch", { patch: "*** Begin Patch\\n*** Update File: rw.txt\\n@@\\n-writable\\n+changed\\n*** Update File: ro.txt\\n@@\\n-read only\\n+patched\\n*** End Patch" });
  out.moveOver = await run("move_file", { from: "rw.txt", to: "ro.txt", overwrite: true });
  const ed = textEditor(tools);
  out.strReplace = await ed.handle({ command: "str_replace", path: "ro.txt", old_str: "read only", new_str: "bye" });
  out.insert = await ed.handle({ command: "insert", path: "ro.txt", insert_line: 0, insert_text: "x" });
  out.move = await run("move_file", { from: "ro.txt", to: "sub/moved.txt" });
  out.delete = await run("delete_file", { path: "sub/moved.txt" });
  console.log(JSON.stringify(out));`;

describe("read-only files", () => {
  test("read_only_files_are_not_replaced_by_write_edit_patch_move_or_the_text_editor_for_an_unprivileged_host", async () => {
    const root = await workspace();
    let pkgDir = fileURLToPath(new URL("..", import.meta.url));
    if (asRoot) {
      const copy = packageNobodyCanRead();
      if ("reason" in copy) {
        console.warn(`skipped the unprivileged run: ${copy.reason}`);
        return;
      }
      onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
      pkgDir = copy.dir;
    }
    const argv = ["--input-type=module", "-e", SCRIPT, pathToFileURL(pkgDir).href.replace(/\/$/, ""), root];
    const stdout = asRoot
      ? execFileSync("setpriv", [...AS_NOBODY, process.execPath, ...argv], { encoding: "utf8", cwd: "/", env: { PATH: process.env.PATH, HOME: "/tmp" } })
      : execFileSync(process.execPath, argv, { encoding: "utf8" });
    const out = JSON.parse(stdout.trim().split("\n").at(-1)!);
    for (const k of ["write", "edit", "patch", "moveOver"]) {
      expect(out[k], k).toMatchObject({ code: "IO_ERROR" });
      expect(out[k].message, k).toMatch(/^EACCES: .*read-only/);
      expect(out[k].hint, k).toContain("chmod u+w");
    }
    for (const k of ["strReplace", "insert"]) expect(out[k], k).toEqual({ content: "Error: Permission denied. Cannot write to file.", is_error: true });
    // Nothing changed (the patch was all or nothing), until the read-only file was moved and
    // deleted: names are the directory's.
    expect(await readFile(join(root, "rw.txt"), "utf8")).toBe("writable\n");
    expect(out.move).toMatchObject({ ok: { from: "ro.txt", to: "sub/moved.txt" } });
    expect(out.delete).toMatchObject({ ok: { path: "sub/moved.txt" } });
    expect((await readdir(root)).sort()).toEqual(["rw.txt", "sub"]);
  });

  test("a_read_only_file_written_where_open_would_allow_it_keeps_its_owner_and_mode", async () => {
    const root = await workspace();
    const tools = createCodingTools(root);
    const write = tools.find((t) => t.name === "write_file")!;
    const file = join(root, asRoot ? "ro.txt" : "rw.txt");
    const before = await stat(file);
    await write.execute(write.validate({ path: asRoot ? "ro.txt" : "rw.txt", content: "new\n" }), ctx());
    const after = await stat(file);
    expect(await readFile(file, "utf8")).toBe("new\n");
    expect([after.mode & 0o777, after.uid, after.gid]).toEqual([before.mode & 0o777, before.uid, before.gid]);
    expect(after.ino).not.toBe(before.ino);
  });
});
