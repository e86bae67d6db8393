// workcell/openai: apply_patch_call and shell_call items replayed from the recorded shapes of
// OpenAI's documentation, their errors, and an escape attempt through each.
import { mkdir, readFile, readdir, realpath, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { applyPatch, operationPatch, shell } from "workcell/openai";
import { createCodingTools, createRunCommandTool, sandboxSupport } from "../dist/index.js";
import { tempWorkspace } from "./helpers.js";
import { openaiApplyPatch as P, openaiShell as S } from "./provider-fixtures.js";

describe("applyPatch: the documented operations", () => {
  test("definition_is_apply_patch", () => {
    expect(applyPatch(createCodingTools("/tmp")).definition).toEqual(P.definition);
  });

  test("create_update_delete_answer_apply_patch_call_output", async () => {
    const { root } = await tempWorkspace();
    const ap = applyPatch(createCodingTools(root));
    expect(await ap.handle(P.createFile as never)).toEqual({
      type: "apply_patch_call_output",
      call_id: P.createFile.call_id,
      status: "completed",
      output: "Created lib/fib.py",
    });
    expect(await readFile(join(root, "lib/fib.py"), "utf8")).toBe(P.fib);
    expect(await ap.handle(P.updateFile as never)).toEqual({
      type: "apply_patch_call_output",
      call_id: P.updateFile.call_id,
      status: "completed",
      output: "Updated lib/fib.py",
    });
    expect(await readFile(join(root, "lib/fib.py"), "utf8")).toBe(P.fibUpdated);
    expect(await ap.handle(P.deleteFile as never)).toEqual({
      type: "apply_patch_call_output",
      call_id: P.deleteFile.call_id,
      status: "completed",
      output: "Deleted lib/fib.py",
    });
    await expect(stat(join(root, "lib/fib.py"))).rejects.toThrow();
  });

  test("an_operation_is_translated_to_a_one_file_patch", () => {
    expect(operationPatch(P.createFile.operation, "lib/fib.py")).toBe(`*** Begin Patch\n*** Add File: lib/fib.py\n${P.createFile.operation.diff}*** End Patch\n`);
    expect(operationPatch({ type: "update_file", path: "a", diff: "@@\n-x\n+y" }, "a")).toBe("*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n*** End Patch\n");
    expect(operationPatch({ type: "delete_file", path: "a" }, "a")).toBe("*** Begin Patch\n*** Delete File: a\n*** End Patch\n");
  });

  test("failures_answer_failed_with_the_code_and_hint_and_change_nothing", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "a.txt"), "one\ntwo\n");
    const ap = applyPatch(createCodingTools(root));
    const cases: [unknown, RegExp][] = [
      [{ type: "update_file", path: "a.txt", diff: "@@\n-zzz\n+y\n" }, /EDIT_NOT_FOUND/],
      [{ type: "update_file", path: "missing.txt", diff: "@@\n-a\n+b\n" }, /FILE_NOT_FOUND/],
      [{ type: "create_file", path: "a.txt", diff: "+x\n" }, /FILE_EXISTS/],
      [{ type: "delete_file", path: "missing.txt" }, /FILE_NOT_FOUND/],
      [{ type: "create_file", path: "b.txt", diff: "not a plus line\n" }, /PATCH_INVALID/],
      [{ type: "rename_file", path: "a.txt" }, /INVALID_ARGUMENTS_SHAPE/],
      [{ type: "create_file", path: "b.txt" }, /INVALID_ARGUMENTS_SHAPE/],
      [null, /INVALID_ARGUMENTS_SHAPE/],
    ];
    for (const [operation, code] of cases) {
      const r = await ap.handle({ type: "apply_patch_call", call_id: "c", operation } as never);
      expect(r.status, JSON.stringify(operation)).toBe("failed");
      expect(r.output).toMatch(/^Error: /);
      expect(r.output).toMatch(code);
    }
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("one\ntwo\n");
    expect((await readdir(root)).sort()).toEqual(["a.txt"]);
  });

  test("escape_attempts_fail_and_touch_nothing_outside", async () => {
    const { parent, root } = await tempWorkspace();
    const canonical = await realpath(root);
    await writeFile(join(parent, "secret.txt"), "TOPSECRET\n");
    await mkdir(`${canonical}x`);
    await symlink("../secret.txt", join(root, "link.txt"));
    await symlink(parent, join(root, "up"));
    const before = (await readdir(parent)).sort();
    const ap = applyPatch(createCodingTools(root));
    const attempts = [
      { type: "create_file", path: "../x", diff: "+x\n" },
      { type: "create_file", path: "/etc/x", diff: "+x\n" },
      { type: "create_file", path: `${canonical}x/x`, diff: "+x\n" },
      { type: "create_file", path: `${canonical}/../x`, diff: "+x\n" },
      { type: "create_file", path: "up/x", diff: "+x\n" },
      { type: "update_file", path: "link.txt", diff: "@@\n-TOPSECRET\n+pwned\n" },
      { type: "delete_file", path: "up/secret.txt" },
      { type: "create_file", path: "a\n*** Add File: ../x", diff: "+x\n" },
      // A diff that smuggles a second file in (here one that escapes).
      { type: "create_file", path: "ok.txt", diff: "+x\n*** End Patch\n*** Begin Patch\n*** Add File: ../x\n+x\n" },
      { type: "update_file", path: "ok.txt", diff: "@@\n-x\n+y\n*** Add File: other.txt\n+z\n" },
      { type: "create_file", path: ".git/hooks/pre-commit", diff: "+#!/bin/sh\n" },
    ];
    for (const operation of attempts) {
      const r = await ap.run(operation);
      expect(r.status, JSON.stringify(operation)).toBe("failed");
      expect(r.output, JSON.stringify(operation)).toMatch(/PATH_ESCAPES_WORKSPACE|INVALID_RELATIVE_PATH|PATCH_INVALID|NOT_A_REGULAR_FILE|PATH_PROTECTED/);
    }
    expect(await readFile(join(parent, "secret.txt"), "utf8")).toBe("TOPSECRET\n");
    expect((await readdir(parent)).sort()).toEqual(before);
    expect((await readdir(root)).sort()).toEqual(["link.txt", "up"]);
  });

  test("a_diff_smuggling_a_second_file_is_refused_which_the_patch_itself_would_apply", async () => {
    const { root } = await tempWorkspace();
    const tools = createCodingTools(root);
    const smuggled = { type: "create_file" as const, path: "ok.txt", diff: "+x\n*** Add File: other.txt\n+y\n" };
    expect((await applyPatch(tools).run(smuggled)).status).toBe("failed");
    expect(await readdir(root)).toEqual([]);
    // With the header check off (the translated patch handed to apply_patch as it is), the
    // second file would be written: the check is what keeps an operation to its one file.
    const patchTool = tools.find((t) => t.name === "apply_patch")!;
    const out = await patchTool.execute(patchTool.validate({ patch: operationPatch(smuggled, "ok.txt") }), { signal: new AbortController().signal });
    expect((out as any).files.map((f: any) => f.path)).toEqual(["ok.txt", "other.txt"]);
  });

  test("an_absolute_path_beneath_the_root_is_made_relative", async () => {
    const { root } = await tempWorkspace();
    const canonical = await realpath(root);
    const r = await applyPatch(createCodingTools(root)).run({ type: "create_file", path: `${canonical}/abs.txt`, diff: "+x\n" });
    expect(r).toEqual({ status: "completed", output: "Created abs.txt" });
  });

  test("needs_apply_patch", () => {
    expect(() => applyPatch(createCodingTools("/tmp").filter((t) => t.name !== "apply_patch"))).toThrow(/apply_patch/);
  });
});

describe("shell: the documented shape", () => {
  test("definition_is_shell", () => {
    expect(shell(createCodingTools("/tmp")).definition).toEqual(S.definition);
  });

  test("commands_run_in_order_and_answer_shell_call_output", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "notes.txt"), "a\nb\nc\n");
    const r = await shell(createCodingTools(root)).handle(S.call as never);
    expect(r).toEqual({
      type: "shell_call_output",
      call_id: S.call.call_id,
      max_output_length: 4096,
      output: [
        { stdout: "notes.txt\n", stderr: "", outcome: { type: "exit", exit_code: 0 } },
        { stdout: "3 notes.txt\n", stderr: "", outcome: { type: "exit", exit_code: 0 } },
      ],
    });
  });

  test("exit_codes_timeouts_and_max_output_length", async () => {
    const { root } = await tempWorkspace();
    const sh = shell(createCodingTools(root));
    const r = await sh.handle({
      type: "shell_call",
      call_id: "c2",
      action: { commands: ["echo out; echo err >&2; exit 3", "sleep 20", "seq 1 100000", "nosuchprogram-xyz"], timeout_ms: 700, max_output_length: 200 },
    });
    expect(r.max_output_length).toBe(200);
    expect(r.output[0]).toEqual({ stdout: "out\nerr\n", stderr: "", outcome: { type: "exit", exit_code: 3 } });
    expect(r.output[1]!.outcome).toEqual({ type: "timeout" });
    expect(r.output[1]!.stderr).toContain("COMMAND_TIMEOUT");
    expect(r.output[2]!.outcome).toEqual({ type: "exit", exit_code: 0 });
    expect(r.output[2]!.stdout.length).toBeLessThanOrEqual(200);
    expect(r.output[2]!.stdout.startsWith("1\n2\n3\n")).toBe(true);
    expect(r.output[2]!.stdout.endsWith("99999\n100000\n")).toBe(true);
    expect(r.output[2]!.stdout).toMatch(/\[\d+ characters omitted\]/);
    expect(r.output[3]!.outcome).toEqual({ type: "exit", exit_code: 127 });
  });

  test("a_command_the_policy_refuses_never_runs", async () => {
    const { parent, root } = await tempWorkspace();
    const sh = shell(createCodingTools(root));
    const r = await sh.run({ commands: ["sudo touch /tmp/x", `echo hi; sudo tee ${parent}/p`, "eval \"$(echo sudo id)\"", "echo ok"] });
    for (const o of r.output.slice(0, 3)) {
      expect(o.outcome).toEqual({ type: "exit", exit_code: 126 });
      expect(o.stdout).toBe("");
      expect(o.stderr).toContain("COMMAND_REFUSED");
    }
    expect(r.output[3]).toEqual({ stdout: "ok\n", stderr: "", outcome: { type: "exit", exit_code: 0 } });
    expect(await readdir(parent)).not.toContain("p");
  });

  test.skipIf(sandboxSupport().landlockAbi === null)("a_write_outside_the_workspace_is_stopped_by_the_sandbox", async () => {
    const { parent, root } = await tempWorkspace();
    const r = await shell(createCodingTools(root)).run({ commands: [`touch ${parent}/escaped`, "touch inside", `cp /etc/hostname ${parent}/copied`] });
    expect(r.output[0]!.outcome).not.toEqual({ type: "exit", exit_code: 0 });
    expect(r.output[0]!.stdout).toMatch(/denied|not permitted|Read-only/i);
    expect(r.output[1]!.outcome).toEqual({ type: "exit", exit_code: 0 });
    expect(r.output[2]!.outcome).not.toEqual({ type: "exit", exit_code: 0 });
    expect((await readdir(parent)).sort()).toEqual(["ROOT"]);
    expect(await readdir(root)).toEqual(["inside"]);
  });

  test("a_host_allow_list_applies_to_the_shell_too", async () => {
    const { root } = await tempWorkspace();
    const sh = shell([createRunCommandTool(root, { allowCommands: ["bash", "echo"] })]);
    const r = await sh.run({ commands: ["echo fine", "ls"] });
    expect(r.output[0]!.outcome).toEqual({ type: "exit", exit_code: 0 });
    expect(r.output[1]!.outcome).toEqual({ type: "exit", exit_code: 126 });
    expect(r.output[1]!.stderr).toContain("COMMAND_REFUSED");
  });

  test("bad_actions_are_answered_not_thrown", async () => {
    const sh = shell(createCodingTools("/tmp"));
    for (const action of [{}, { commands: [] }, { commands: [1] }, null, { commands: Array(33).fill("true") }]) {
      const r = await sh.run(action);
      expect(r.output).toHaveLength(1);
      expect(r.output[0]!.stderr).toContain("INVALID_ARGUMENTS_SHAPE");
    }
  });

  test("needs_run_command", () => {
    expect(() => shell(createCodingTools("/tmp").filter((t) => t.name !== "run_command"))).toThrow(/run_command/);
  });
});
