// workcell/anthropic: text_editor_20250728 and bash_20250124 replayed from the recorded shapes
// of Anthropic's documentation, their errors, and an escape attempt through each.
import { mkdir, readFile, readdir, stat, symlink, writeFile } from "node:fs/promises";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, onTestFinished, test } from "vitest";
import { BASH_ARGV, bash, bashScript, textEditor, utf8Chunks } from "workcell/anthropic";
import * as pkg from "../dist/index.js";
import { createCodingTools } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";
import { packageNobodyCanRead } from "./nobody.js";
import { fakeSessionTools, type FakeSessions } from "./process-session-fake.js";
import { PRIMES_PY, anthropicBash, anthropicTextEditor as F } from "./provider-fixtures.js";

async function primesWorkspace() {
  const ws = await tempWorkspace();
  await writeFile(join(ws.root, "primes.py"), PRIMES_PY);
  return { ...ws, editor: textEditor(createCodingTools(ws.root)) };
}

describe("textEditor: the documented commands", () => {
  test("definition_is_text_editor_20250728", () => {
    const editor = textEditor(createCodingTools("/tmp"));
    expect(editor.definition).toEqual(F.definition);
    expect(textEditor(createCodingTools("/tmp"), { maxCharacters: 10000 }).definition).toEqual({ ...F.definition, max_characters: 10000 });
  });

  test("view_file_answers_the_walkthrough_tool_result", async () => {
    const { editor } = await primesWorkspace();
    expect(await editor.answer(F.viewFile.toolUse)).toEqual(F.viewFile.result);
  });

  test("view_range_numbers_from_its_first_line_and_minus_one_reads_to_the_end", async () => {
    const { editor } = await primesWorkspace();
    expect(await editor.handle(F.viewRange.input)).toEqual({ content: F.viewRange.content, is_error: false });
    const tail = await editor.handle({ command: "view", path: "primes.py", view_range: [21, -1] });
    expect(tail).toEqual({ content: "21:             primes.append(num)\n22:     return primes", is_error: false });
    const bad = await editor.handle({ command: "view", path: "primes.py", view_range: [30, 31] });
    expect(bad.is_error).toBe(true);
    expect(bad.content).toContain("[1, 22]");
    expect((await editor.handle({ command: "view", path: "primes.py", view_range: [5, 2] })).is_error).toBe(true);
    expect((await editor.handle({ command: "view", path: "primes.py", view_range: [1] })).is_error).toBe(true);
  });

  test("invalid_view_ranges_are_answered_in_the_reference_words_and_past_the_last_line_is_refused", async () => {
    const { editor } = await primesWorkspace();
    const err = (content: string) => ({ content, is_error: true });
    expect(await editor.handle({ command: "view", path: "primes.py", view_range: [1] })).toEqual(
      err("Error: Invalid `view_range`. It should be a list of two integers."),
    );
    expect(await editor.handle({ command: "view", path: "primes.py", view_range: [0, 5] })).toEqual(
      err("Error: Invalid `view_range`: [0, 5]. Its first element `0` should be within the range of lines of the file: [1, 22]"),
    );
    expect(await editor.handle({ command: "view", path: "primes.py", view_range: [30, 31] })).toEqual(
      err("Error: Invalid `view_range`: [30, 31]. Its first element `30` should be within the range of lines of the file: [1, 22]"),
    );
    expect(await editor.handle({ command: "view", path: "primes.py", view_range: [20, 23] })).toEqual(
      err("Error: Invalid `view_range`: [20, 23]. Its second element `23` should be smaller than the number of lines in the file: `22`"),
    );
    expect(await editor.handle({ command: "view", path: "primes.py", view_range: [5, 2] })).toEqual(
      err("Error: Invalid `view_range`: [5, 2]. Its second element `2` should be larger or equal than its first `5`"),
    );
    // Up to the last line, and -1, are fine.
    expect((await editor.handle({ command: "view", path: "primes.py", view_range: [21, 22] })).content).toBe(
      "21:             primes.append(num)\n22:     return primes",
    );
    expect((await editor.handle({ command: "view", path: "primes.py", view_range: [22, -1] })).is_error).toBe(false);
    expect(await editor.handle({ command: "undo_edit", path: "primes.py" })).toEqual(
      err("Error: Unrecognized command undo_edit. The allowed commands for the str_replace_based_edit_tool tool are: view, create, str_replace, insert"),
    );
    expect(await editor.handle({ command: "insert", path: "primes.py", insert_text: "x" })).toEqual(
      err("Error: Parameter `insert_line` is required for command: insert"),
    );
  });

  test("view_directory_lists_two_levels_without_hidden_items", async () => {
    const { root, editor } = await primesWorkspace();
    await mkdir(join(root, "src/lib/deep"), { recursive: true });
    await writeFile(join(root, "src/main.py"), "");
    await writeFile(join(root, "src/lib/util.py"), "");
    await writeFile(join(root, "src/lib/deep/hidden-by-depth.py"), "");
    await writeFile(join(root, "src/.env"), "SECRET=1");
    const r = await editor.handle(F.viewDirectory.input);
    expect(r).toEqual({
      content: "Here's the files and directories up to 2 levels deep in src, excluding hidden items:\nsrc/lib/\nsrc/lib/deep/\nsrc/lib/util.py\nsrc/main.py",
      is_error: false,
    });
    expect((await editor.handle({ command: "view", path: "src", view_range: [1, 2] })).is_error).toBe(true);
    const { realpath } = await import("node:fs/promises");
    for (const path of [".", "./", await realpath(root), `${await realpath(root)}/`]) {
      const top = await editor.handle({ command: "view", path });
      expect(top.content, path).toBe(
        "Here's the files and directories up to 2 levels deep in ., excluding hidden items:\nprimes.py\nsrc/\nsrc/lib/\nsrc/main.py",
      );
    }
  });

  test("str_replace_answers_the_walkthrough_tool_result_and_edits", async () => {
    const { root, editor } = await primesWorkspace();
    expect(await editor.answer(F.strReplace.toolUse)).toEqual(F.strReplace.result);
    expect(await readFile(join(root, "primes.py"), "utf8")).toBe(PRIMES_PY.replace("limit + 1)\n", "limit + 1):\n"));
  });

  test("create_writes_a_new_file_and_refuses_to_overwrite", async () => {
    const { root, editor } = await primesWorkspace();
    expect(await editor.handle(F.create.input)).toEqual({ content: "File created successfully at: test_primes.py", is_error: false });
    expect(await readFile(join(root, "test_primes.py"), "utf8")).toBe(F.create.input.file_text);
    const again = await editor.handle({ ...F.create.input, file_text: "clobbered" });
    expect(again.is_error).toBe(true);
    expect(again.content).toMatch(/^Error: File already exists at: test_primes.py\. Cannot overwrite files using command `create`\./);
    expect(await readFile(join(root, "test_primes.py"), "utf8")).toBe(F.create.input.file_text);
  });

  test("insert_at_line_0_puts_the_text_at_the_top_and_after_n_elsewhere", async () => {
    const { root, editor } = await primesWorkspace();
    const r = await editor.handle(F.insert.input);
    expect(r).toEqual({ content: "The text was inserted after line 0 of primes.py.", is_error: false });
    expect(await readFile(join(root, "primes.py"), "utf8")).toBe(F.insert.input.new_str + PRIMES_PY);
    await writeFile(join(root, "n.txt"), "a\nb");
    expect((await editor.handle({ command: "insert", path: "n.txt", insert_line: 1, insert_text: "between" })).is_error).toBe(false);
    expect((await editor.handle({ command: "insert", path: "n.txt", insert_line: 3, insert_text: "last" })).is_error).toBe(false);
    expect(await readFile(join(root, "n.txt"), "utf8")).toBe("a\nbetween\nb\nlast\n");
    const out = await editor.handle({ command: "insert", path: "n.txt", insert_line: 9, insert_text: "x" });
    expect(out).toEqual({ content: "Error: Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 4]", is_error: true });
  });
});

describe("textEditor: the documented errors", () => {
  test("missing_file_is_file_not_found", async () => {
    const { editor } = await primesWorkspace();
    for (const input of [
      { command: "view", path: "nope.py" },
      { command: "str_replace", path: "nope.py", old_str: "a", new_str: "b" },
      { command: "insert", path: "nope.py", insert_line: 0, insert_text: "a" },
    ]) {
      const r = await editor.handle(input);
      expect(r.is_error).toBe(true);
      expect((r.content as string).split("\n")[0]).toBe(F.errors.fileNotFound);
    }
  });

  test("three_matches_and_no_match_use_the_documented_wording", async () => {
    const { root, editor } = await primesWorkspace();
    const three = await editor.handle({ command: "str_replace", path: "primes.py", old_str: "return False", new_str: "return 0" });
    expect(three).toEqual({ content: F.errors.multipleMatches, is_error: true });
    const none = await editor.handle({ command: "str_replace", path: "primes.py", old_str: "not in the file", new_str: "x" });
    expect(none).toEqual({ content: F.errors.noMatch, is_error: true });
    expect(await readFile(join(root, "primes.py"), "utf8")).toBe(PRIMES_PY);
  });

  test("unknown_command_and_bad_shapes_are_errors_not_throws", async () => {
    const { editor } = await primesWorkspace();
    for (const input of [
      { command: "undo_edit", path: "primes.py" },
      { command: "view" },
      { command: "create", path: "x.py" },
      { command: "str_replace", path: "primes.py" },
      { command: "insert", path: "primes.py", insert_text: "x" },
      null,
      "view primes.py",
    ]) {
      const r = await editor.handle(input);
      expect(r.is_error).toBe(true);
      expect(typeof r.content).toBe("string");
      expect(r.content as string).toMatch(/^Error: /);
    }
  });
});

describe("textEditor: permission denied", () => {
  // Root writes anywhere, so as root the check runs as an unprivileged user (setpriv).
  test("permission_denied_uses_the_documented_wording", async () => {
    const { execFileSync } = await import("node:child_process");
    const { chmod, chown, mkdtemp } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const root = await mkdtemp(join(tmpdir(), "workcell-perm-"));
    await mkdir(join(root, "ro"));
    await writeFile(join(root, "ro/h.txt"), "hello\n");
    const asRoot = process.getuid?.() === 0;
    if (asRoot) {
      await chown(root, 65534, 65534);
      await chown(join(root, "ro"), 65534, 65534);
      await chown(join(root, "ro/h.txt"), 65534, 65534);
    }
    await chmod(join(root, "ro"), 0o555);
    // As root the host runs as nobody, from a copy of the package it can read (a clone in a
    // 0700 directory is out of its reach).
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
    const script = `
      const { createCodingTools } = await import(${JSON.stringify(pathToFileURL(join(pkgDir, "dist", "index.js")).href)});
      const { textEditor } = await import(${JSON.stringify(pathToFileURL(join(pkgDir, "dist", "adapters", "anthropic.js")).href)});
      const ed = textEditor(createCodingTools(${JSON.stringify(root)}));
      const out = [];
      out.push(await ed.handle({ command: "str_replace", path: "ro/h.txt", old_str: "hello", new_str: "bye" }));
      out.push(await ed.handle({ command: "create", path: "ro/new.txt", file_text: "x" }));
      out.push(await ed.handle({ command: "insert", path: "ro/h.txt", insert_line: 0, insert_text: "x" }));
      console.log(JSON.stringify(out));`;
    const argv = ["--input-type=module", "-e", script];
    const stdout = asRoot
      ? execFileSync("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", process.execPath, ...argv], { encoding: "utf8", env: { PATH: process.env.PATH, HOME: "/tmp" } })
      : execFileSync(process.execPath, argv, { encoding: "utf8" });
    for (const r of JSON.parse(stdout)) expect(r).toEqual({ content: "Error: Permission denied. Cannot write to file.", is_error: true });
    expect(await readFile(join(root, "ro/h.txt"), "utf8")).toBe("hello\n");
    await chmod(join(root, "ro"), 0o755);
  });
});

describe("textEditor: paths and escapes", () => {
  test("absolute_path_beneath_the_canonical_root_is_made_relative", async () => {
    const { root, editor } = await primesWorkspace();
    const { realpath } = await import("node:fs/promises");
    const canonical = await realpath(root);
    expect((await editor.handle({ command: "view", path: `${canonical}/primes.py` })).content).toBe(F.viewFile.result.content);
    expect((await editor.handle({ command: "create", path: `${canonical}/abs.txt`, file_text: "x" })).is_error).toBe(false);
    expect(await readFile(join(root, "abs.txt"), "utf8")).toBe("x");
  });

  test("escape_attempts_are_refused_and_change_nothing", async () => {
    const { parent, root, editor } = await primesWorkspace();
    const { realpath } = await import("node:fs/promises");
    const canonical = await realpath(root);
    await writeFile(join(parent, "secret.txt"), "TOPSECRET");
    // A sibling whose name starts with the root's: a prefix check without the "/" would let it in.
    await mkdir(`${canonical}x`);
    await writeFile(`${canonical}x/secret.txt`, "sibling");
    expect(`${canonical}x/secret.txt`.startsWith(canonical)).toBe(true);
    await symlink("../secret.txt", join(root, "link.txt"));
    await symlink(parent, join(root, "up"));
    const before = await readdir(parent);
    const attempts = [
      { command: "view", path: "/etc/passwd" },
      { command: "view", path: `${canonical}x/secret.txt` },
      { command: "view", path: `${canonical}/../secret.txt` },
      { command: "view", path: "../secret.txt" },
      { command: "view", path: "link.txt" },
      { command: "view", path: "up/secret.txt" },
      { command: "view", path: "up" },
      { command: "create", path: "../evil.txt", file_text: "x" },
      { command: "create", path: "/tmp/evil.txt", file_text: "x" },
      { command: "create", path: "up/evil.txt", file_text: "x" },
      { command: "str_replace", path: "link.txt", old_str: "TOPSECRET", new_str: "pwned" },
      { command: "insert", path: "link.txt", insert_line: 0, insert_text: "pwned" },
    ];
    for (const input of attempts) {
      const r = await editor.handle(input);
      expect(r.is_error, JSON.stringify(input)).toBe(true);
      expect(r.content as string, JSON.stringify(input)).toMatch(/PATH_ESCAPES_WORKSPACE|INVALID_RELATIVE_PATH/);
      expect(r.content as string).not.toContain("TOPSECRET");
      expect(r.content as string).not.toContain("sibling");
    }
    expect(await readFile(join(parent, "secret.txt"), "utf8")).toBe("TOPSECRET");
    expect(await readdir(parent)).toEqual(before);
    await expect(stat("/tmp/evil.txt")).rejects.toThrow();
  });

  test("protected_paths_stay_protected_through_the_editor", async () => {
    const { root } = await tempWorkspace();
    const editor = textEditor(createCodingTools(root));
    const r = await editor.handle({ command: "create", path: ".git/config", file_text: "[core]" });
    expect(r.is_error).toBe(true);
    expect(r.content as string).toContain("PATH_PROTECTED");
    await expect(stat(join(root, ".git/config"))).rejects.toThrow();
  });

  test("needs_its_four_tools_and_checks_options", () => {
    const tools = createCodingTools("/tmp");
    expect(() => textEditor(tools.filter((t) => t.name !== "edit_file"))).toThrow(/edit_file/);
    expect(() => textEditor(tools, { maxCharacter: 3 } as never)).toThrow(TypeError);
    expect(() => textEditor(tools, { maxCharacters: 0 })).toThrow(TypeError);
  });

  test("max_characters_cuts_a_long_view_with_where_to_continue", async () => {
    const { root } = await primesWorkspace();
    const editor = textEditor(createCodingTools(root), { maxCharacters: 60 });
    const r = await editor.handle({ command: "view", path: "primes.py" });
    expect(r.content).toBe('1: def is_prime(n):\n2:     """Check if a number is prime."""\n[the view was cut at 60 characters; continue with view_range [3, -1]]');
  });

  test("a_file_over_one_view_is_shown_from_the_top_with_where_to_continue", async () => {
    const { root } = await tempWorkspace();
    const line = "x".repeat(99) + "\n";
    await writeFile(join(root, "big.txt"), line.repeat(1000));
    const editor = textEditor(createCodingTools(root));
    const r = await editor.handle({ command: "view", path: "big.txt" });
    expect(r.is_error).toBe(false);
    const text = r.content as string;
    expect(text.startsWith(`1: ${"x".repeat(99)}\n2: `)).toBe(true);
    expect(text).toMatch(/continue with view_range \[656, -1\]\]$/);
    const next = await editor.handle({ command: "view", path: "big.txt", view_range: [656, -1] });
    expect((next.content as string).split("\n").at(-1)).toBe(`1000: ${"x".repeat(99)}`);
  });
});

// ---- bash ------------------------------------------------------------------------------------

let fakes: FakeSessions[] = [];
afterEach(() => {
  for (const f of fakes) f.close();
  fakes = [];
});

async function fakeBash(options?: Parameters<typeof bash>[1]) {
  const { root } = await tempWorkspace();
  const fake = fakeSessionTools(root);
  fakes.push(fake);
  return { root, fake, sh: bash(fake.tools, options) };
}

describe("bash over one process session", () => {
  test("definition_is_bash_20250124", async () => {
    const { sh } = await fakeBash();
    expect(sh.definition).toEqual(anthropicBash.definition);
  });

  test("the_same_shell_serves_every_call_and_restart_starts_a_fresh_one", async () => {
    const { root, fake, sh } = await fakeBash();
    await writeFile(join(root, "a.py"), "");
    await writeFile(join(root, "b.py"), "");
    const ls = await sh.answer({ ...anthropicBash.command, input: { command: "ls *.py" } });
    expect(ls).toEqual({ type: "tool_result", tool_use_id: anthropicBash.command.id, content: "a.py\nb.py", is_error: false });
    expect((await sh.handle({ command: "mkdir -p sub && cd sub && X=kept" })).is_error).toBe(false);
    expect(await sh.handle({ command: 'pwd; echo "$X"' })).toEqual({ content: `${await import("node:fs/promises").then((f) => f.realpath(root))}/sub\nkept`, is_error: false });
    expect(fake.calls.filter((c) => c.name === "start_process")).toHaveLength(1);
    expect(fake.calls[0]!.input.argv).toEqual([...BASH_ARGV]);
    expect(await sh.answer(anthropicBash.restart)).toEqual({ type: "tool_result", tool_use_id: anthropicBash.restart.id, content: "tool has been restarted.", is_error: false });
    expect(fake.running()).toEqual([]);
    expect(await sh.handle({ command: 'echo "[$X]"' })).toEqual({ content: "[]", is_error: false });
    expect(fake.calls.filter((c) => c.name === "start_process")).toHaveLength(2);
    await sh.close();
    expect(fake.running()).toEqual([]);
  });

  test("a_command_reading_stdin_does_not_eat_the_sentinel", async () => {
    const { sh } = await fakeBash({ timeoutMs: 10_000 });
    expect(await sh.handle({ command: "cat; read line; echo after" })).toEqual({ content: "after", is_error: false });
    expect(await sh.handle({ command: "echo still here" })).toEqual({ content: "still here", is_error: false });
  });

  test("non_zero_exit_is_reported_and_stderr_is_in_the_output", async () => {
    const { sh } = await fakeBash();
    expect(await sh.handle({ command: "echo out; echo err >&2; false" })).toEqual({ content: "out\nerr\n[exit code 1]", is_error: false });
  });

  test("a_refused_command_never_reaches_the_shell", async () => {
    const { fake, sh } = await fakeBash();
    for (const command of ["sudo id", "echo hi; sudo rm -rf /", "}; sudo id; {", "echo $(sudo id)"]) {
      const r = await sh.handle({ command });
      expect(r.is_error, command).toBe(true);
      expect(r.content as string).toContain("COMMAND_REFUSED");
    }
    expect(fake.calls.filter((c) => c.name === "write_process")).toEqual([]);
    expect(fake.calls.filter((c) => c.name === "start_process")).toEqual([]);
    // The same check off (a shell fed the text directly) would have run it: the wrapper is what
    // the policy sees, braces and all.
    expect(pkg.checkCommand(["bash", "-c", bashScript("}; sudo id; {", "S")]).allowed).toBe(false);
  });

  test("an_unfinished_command_is_refused_instead_of_hanging_the_shell", async () => {
    const { fake, sh } = await fakeBash();
    for (const command of ["echo 'unterminated", "echo a \\", "cat <<EOF\nno end", "if true; then"]) {
      const r = await sh.handle({ command });
      expect(r.is_error, command).toBe(true);
    }
    expect(fake.calls.filter((c) => c.name === "write_process")).toEqual([]);
  });

  test("a_long_command_is_written_in_pieces_of_at_most_8192_bytes", async () => {
    const { fake, sh } = await fakeBash();
    const word = "é".repeat(9000);
    const r = await sh.handle({ command: `echo ${word} | wc -c` });
    expect(r).toEqual({ content: String(Buffer.byteLength(word) + 1), is_error: false });
    const writes = fake.calls.filter((c) => c.name === "write_process").map((c) => c.input.input as string);
    expect(writes.length).toBeGreaterThan(2);
    for (const w of writes) expect(Buffer.byteLength(w)).toBeLessThanOrEqual(8192);
    expect(utf8Chunks("aé€😀", 3)).toEqual(["aé", "€", "😀"]);
    expect(utf8Chunks("😀😀", 4)).toEqual(["😀", "😀"]);
  });

  test("output_is_bounded_with_the_start_and_the_end_kept", async () => {
    const { sh } = await fakeBash({ maxOutputChars: 2000 });
    const r = await sh.handle({ command: "echo START; seq 1 200000; echo END" });
    const text = r.content as string;
    expect(r.is_error).toBe(false);
    expect(text.length).toBeLessThanOrEqual(2000);
    expect(text.startsWith("START\n1\n2\n")).toBe(true);
    expect(text.endsWith("200000\nEND")).toBe(true);
    expect(text).toMatch(/\[\d+ characters omitted\]/);
  });

  test("a_command_over_the_timeout_stops_the_shell_and_the_next_starts_fresh", async () => {
    const { fake, sh } = await fakeBash({ timeoutMs: 300 });
    const r = await sh.handle({ command: "echo begun; sleep 30" });
    expect(r.is_error).toBe(true);
    expect(r.content as string).toMatch(/^begun\nError: the command did not finish within 0.3 s/);
    expect(fake.running()).toEqual([]);
    expect(await sh.handle({ command: "echo next" })).toEqual({ content: "next", is_error: false });
  });

  test("a_shell_that_ended_between_commands_is_replaced_once_and_the_answer_says_so", async () => {
    const { fake, sh } = await fakeBash();
    expect(await sh.handle({ command: "X=1; echo one" })).toEqual({ content: "one", is_error: false });
    // The session ends behind the helper's back (its lifetime, or the tools closed) and is
    // removed from the table: the next write finds no process.
    const stop = fake.tools.find((t) => t.name === "stop_process")!;
    await stop.execute({ id: "p1", signal: "SIGKILL" }, { signal: new AbortController().signal });
    fake.forget("p1");
    expect(await sh.handle({ command: 'echo "two[$X]"' })).toEqual({
      content: "[the previous shell had ended; this command ran in a new one]\ntwo[]",
      is_error: false,
    });
    expect(fake.calls.filter((c) => c.name === "start_process")).toHaveLength(2);
  });

  test("exit_ends_the_shell_and_the_next_command_starts_a_new_one", async () => {
    const { sh } = await fakeBash();
    const r = await sh.handle({ command: "echo bye; exit 4" });
    expect(r).toEqual({ content: "bye\nError: the shell exited (exit code 4); the next command starts a new shell", is_error: true });
    expect(await sh.handle({ command: "echo again" })).toEqual({ content: "again", is_error: false });
  });

  test("cancellation_rejects_and_stops_the_shell", async () => {
    const { fake, sh } = await fakeBash();
    const ac = new AbortController();
    const p = sh.handle({ command: "sleep 30" }, ac.signal);
    await new Promise((r) => setTimeout(r, 200));
    ac.abort();
    await expect(p).rejects.toMatchObject({ name: "AbortError" });
    expect(fake.running()).toEqual([]);
  });

  test("bad_inputs_are_errors", async () => {
    const { sh } = await fakeBash();
    for (const input of [{}, { command: "" }, { command: 3 }, null, []]) {
      expect((await sh.handle(input)).is_error).toBe(true);
    }
  });

  test("needs_the_session_tools_and_checks_options", async () => {
    expect(() => bash(createCodingTools("/tmp").filter((t) => !t.name.endsWith("_process")))).toThrow(/start_process/);
    const { fake } = await fakeBash();
    expect(() => bash(fake.tools, { timeout: 5 } as never)).toThrow(TypeError);
    expect(() => bash(fake.tools, { timeoutMs: 0 })).toThrow(TypeError);
  });
});

describe("bash over createProcessTools", () => {
  test("bash_runs_in_a_confined_session_and_keeps_its_state", async () => {
    const { parent, root } = await tempWorkspace();
    const create = (pkg as any).createProcessTools as (root: string) => any[];
    const tools = create(root);
    const sh = bash(tools);
    try {
      expect(await sh.handle({ command: "mkdir -p d && cd d && echo hi > f" })).toEqual({ content: "", is_error: false });
      expect(await sh.handle({ command: "pwd; cat f" })).toMatchObject({ content: expect.stringMatching(/\/d\nhi$/), is_error: false });
      const out = await sh.handle({ command: `echo x > ${parent}/escaped.txt` });
      // Refused by the command policy (a redirect outside the workspace) before the sandbox.
      expect(out.content as string).toMatch(/COMMAND_REFUSED|denied|Read-only|not permitted|exit code/i);
      await expect(stat(join(parent, "escaped.txt"))).rejects.toThrow();
      expect((await sh.handle({ command: "sudo id" })).content as string).toContain("COMMAND_REFUSED");
      expect(await sh.handle({ restart: true })).toEqual({ content: "tool has been restarted.", is_error: false });
      expect((await sh.handle({ command: "pwd" })).content).toBe(await import("node:fs/promises").then((f) => f.realpath(root)));
    } finally {
      await sh.close();
    }
  });
});

describe("bash wrapper against the shell", () => {
  // Generated commands from the pieces that can unbalance a wrapper (braces, quotes, line
  // continuations, here-documents, comments, substitutions). Whenever the command policy allows
  // the wrapped text, bash reading it as a script must reach the sentinel line; the same
  // inputs without the check include ones that never do (so the check is what guarantees it).
  test("policy_allowed_wrapper_always_reaches_the_sentinel_in_bash", async () => {
    const { spawnSync } = await import("node:child_process");
    const pieces = ["echo a", "echo a", " ", " x", ";", ";", "\n", "\n", "true", "cat", "{", "}", "'", '"', "\\", "#", "<<E", "E", "$(", ")", "(", "`", "&&", "|", "&"];
    let seed = 20250124;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let allowed = 0;
    let brokenWithoutCheck = 0;
    let refusedRuns = 0;
    for (let i = 0; i < 600; i++) {
      const command = Array.from({ length: 1 + rand(6) }, () => pieces[rand(pieces.length)]).join("");
      if (command.trim().length === 0) continue;
      const script = bashScript(command, "SENTINEL_X");
      const ok = pkg.checkCommand(["bash", "-c", script]).allowed;
      if (!ok && refusedRuns++ >= 80) continue;
      const run = spawnSync("bash", ["-s"], { input: script, encoding: "utf8", timeout: 3000, env: { PATH: process.env.PATH } });
      const reached = /(^|\n)SENTINEL_X \d+\n/.test(run.stdout ?? "");
      if (ok) {
        allowed += 1;
        expect(reached, JSON.stringify(command)).toBe(true);
      } else if (!reached) {
        brokenWithoutCheck += 1;
      }
    }
    expect(allowed).toBeGreaterThan(50);
    expect(brokenWithoutCheck).toBeGreaterThan(10);
  }, 120_000);
});
