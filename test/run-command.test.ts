import { existsSync } from "node:fs";
import { mkdir, readdir, realpath, symlink, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { describe, expect, test } from "vitest";
import { ToolRegistry, createCodingTools, createRunCommandTool, executeToolCall, isAbortError } from "../dist/index.js";
import { call, content, ctx, invalid, rejection, tempWorkspace } from "./helpers.js";
import { withScratch as setup } from "./process-helpers.js";

type RunTool = ReturnType<typeof createRunCommandTool>;

async function run(tool: RunTool, input: unknown, signal?: AbortSignal) {
  return tool.execute(tool.validate(input), ctx(signal));
}

describe("run_command: running", () => {
  test("returns the contract's shape; a non-zero exit is data", async () => {
    const { root, scratchDir } = await setup();
    const tool = createRunCommandTool(root, { scratchDir });
    const out = await run(tool, { argv: ["sh", "-c", "echo out; echo err >&2; exit 3"] });
    expect(Object.keys(out).sort()).toEqual(
      ["durationMs", "exitCode", "omittedBytes", "output", "sandbox", "signal", "timedOut", "timeoutMs", "truncated"].sort(),
    );
    expect(out).toMatchObject({ exitCode: 3, signal: null, output: "out\nerr\n", truncated: false, omittedBytes: 0, timedOut: false, timeoutMs: 30_000 });
    expect(out.durationMs).toBeGreaterThanOrEqual(0);
    expect(await readdir(scratchDir)).toEqual([]);
  });

  test("node --version and git init && git status run inside the workspace", async () => {
    const { root, scratchDir } = await setup();
    // `.git` is read-only for commands (and cannot be created) unless the host protects nothing.
    const tool = createRunCommandTool(root, { scratchDir, protect: [] });
    const node = await run(tool, { argv: ["node", "--version"] });
    expect(node.exitCode).toBe(0);
    expect(node.output).toMatch(/^v\d+\.\d+\.\d+\n$/);
    const git = await run(tool, { argv: ["sh", "-c", "git init && git status"] });
    expect(git.exitCode, git.output).toBe(0);
    expect(git.output).toContain("No commits yet");
    expect(git.output).toContain(`${await realpath(root)}/.git/`);
    expect(existsSync(join(root, ".git", "HEAD"))).toBe(true);
    const pwd = await run(tool, { argv: ["pwd"] });
    expect(pwd.output).toBe(`${await realpath(root)}\n`);
  });

  test("cwd: a directory inside, by its canonical path; escapes and non-directories refused", async () => {
    const { root, parent, scratchDir } = await setup();
    await mkdir(join(root, "pkg", "app"), { recursive: true });
    await symlink("pkg/app", join(root, "alias"));
    await symlink("..", join(root, "up"));
    await writeFile(join(root, "file.txt"), "x");
    await mkdir(join(parent, "outside"));
    const tool = createRunCommandTool(root, { scratchDir });
    const canonical = await realpath(root);
    expect((await run(tool, { argv: ["pwd"], cwd: "pkg/app" })).output).toBe(`${canonical}/pkg/app\n`);
    expect((await run(tool, { argv: ["pwd"], cwd: "alias" })).output).toBe(`${canonical}/pkg/app\n`);
    expect((await run(tool, { argv: ["pwd"], cwd: "." })).output).toBe(`${canonical}\n`);
    for (const cwd of ["..", "../outside", "/tmp", "pkg/../..", "C:\\x", ""]) {
      expect(invalid(() => tool.validate({ argv: ["pwd"], cwd })).message).toBe("INVALID_RELATIVE_PATH");
    }
    const escape = await rejection(run(tool, { argv: ["pwd"], cwd: "up" }));
    expect(escape).toMatchObject({ code: "PATH_ESCAPES_WORKSPACE", hint: expect.any(String) });
    const file = await rejection(run(tool, { argv: ["pwd"], cwd: "file.txt" }));
    expect(file).toMatchObject({ code: "FILE_NOT_FOUND", message: "cwd file.txt is not a directory" });
    expect(await readdir(scratchDir)).toEqual([]);
  });

  test("a missing program is COMMAND_NOT_FOUND with a hint; names with / are refused", async () => {
    const { root, scratchDir } = await setup();
    const registry = new ToolRegistry([createRunCommandTool(root, { scratchDir })]);
    const missing = content(await executeToolCall(registry, call("run_command", { argv: ["no-such-program-xyz"] }), new AbortController().signal));
    expect(missing.error).toMatchObject({ code: "COMMAND_NOT_FOUND", hint: expect.stringContaining("bare program name") });
    const path = content(await executeToolCall(registry, call("run_command", { argv: ["/bin/ls"] }), new AbortController().signal));
    expect(path.error).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "COMMAND_REFUSED", details: { reason: "path_in_name" } });
  });
});

describe("run_command: environment", () => {
  test("HOME is private (not the host's) and the scratch directory is gone afterwards", async () => {
    const { root } = await tempWorkspace();
    const tool = createRunCommandTool(root);
    const out = await run(tool, { argv: ["sh", "-c", 'echo "$HOME"; echo "$TMPDIR"; touch "$HOME/data"; ls "$HOME"'] });
    const [home, tmp, data] = out.output.split("\n");
    expect(home).not.toBe(homedir());
    expect(home).not.toBe(process.env.HOME);
    expect(home!.startsWith(await realpath(root))).toBe(false);
    expect(dirname(tmp!)).toBe(dirname(home!));
    expect(dirname(home!)).toMatch(/workcell-scratch-[0-9a-f]{16}$/);
    expect(data).toBe("data");
    expect(existsSync(dirname(home!))).toBe(false);
  });

  test("a host secret is invisible unless named in inheritEnv", async () => {
    const { root, scratchDir } = await setup();
    process.env.WC_TEST_API_KEY = "sk-run-command-secret";
    process.env.WC_TEST_LANG = "shown";
    try {
      const plain = createRunCommandTool(root, { scratchDir });
      const seen = await run(plain, { argv: ["sh", "-c", "env; cat /proc/self/environ"] });
      expect(seen.output).not.toContain("sk-run-command-secret");
      expect(seen.output).not.toContain("WC_TEST_LANG");
      const names = seen.output
        .split("\n")
        .filter((l) => /^[A-Z_]+=/.test(l))
        .map((l) => l.split("=")[0])
        .filter((n) => !["PWD", "SHLVL", "_", "OLDPWD"].includes(n!));
      expect([...new Set(names)].sort()).toEqual(["HOME", "PATH", "TMPDIR"]);
      const named = createRunCommandTool(root, { scratchDir, inheritEnv: ["WC_TEST_LANG", "WC_NOT_SET"] });
      const env = await run(named, { argv: ["env"] });
      expect(env.output).toContain("WC_TEST_LANG=shown\n");
      expect(env.output).not.toContain("WC_NOT_SET");
      expect(env.output).not.toContain("sk-run-command-secret");
      // PATH is the host's by default; the option replaces it.
      expect(env.output).toContain(`PATH=${process.env.PATH}\n`);
      const custom = createRunCommandTool(root, { scratchDir, path: "/usr/bin:/bin" });
      expect((await run(custom, { argv: ["sh", "-c", 'echo "$PATH"'] })).output).toBe("/usr/bin:/bin\n");
    } finally {
      delete process.env.WC_TEST_API_KEY;
      delete process.env.WC_TEST_LANG;
    }
  });

  test("options that would break the environment's rules are refused at creation", async () => {
    const { root } = await tempWorkspace();
    for (const name of ["HOME", "PATH", "TMPDIR", "A=B", ""]) {
      expect(() => createRunCommandTool(root, { inheritEnv: [name] })).toThrow(TypeError);
    }
    await mkdir(join(root, "tmp"));
    expect(() => createRunCommandTool(root, { scratchDir: join(root, "tmp") })).toThrow(/inside the workspace/);
    expect(() => createRunCommandTool(root, { scratchDir: root })).toThrow(/inside the workspace/);
    expect(() => createRunCommandTool(root, { timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createRunCommandTool(root, { timeoutMs: 5_000, maxTimeoutMs: 1_000 })).toThrow(TypeError);
    expect(() => createRunCommandTool(root, { outputHeadBytes: 0, outputTailBytes: 0 })).toThrow(TypeError);
  });
});

describe("run_command: policy and arguments", () => {
  test("policy refusals reach the model with hints, before any effect", async () => {
    const { root, scratchDir } = await setup();
    const registry = new ToolRegistry([createRunCommandTool(root, { scratchDir })]);
    const cases: [string[], string][] = [
      [["sudo", "touch", "made"], "deny_listed"],
      [["sh", "-c", "touch made && sudo ls"], "deny_listed"],
      [["sh", "-c", "touch made > /etc/x"], "redirect_target"],
      [["sh", "-c", "$(echo touch) made"], "not_static"],
      [["bash", "-c", "eval 'touch made'"], "dynamic_code"],
      [["xargs", "sudo"], "deny_listed"],
    ];
    for (const [argv, reason] of cases) {
      const result = await executeToolCall(registry, call("run_command", { argv }), new AbortController().signal);
      expect(result.isError).toBe(true);
      const { error } = content(result);
      expect(error, argv.join(" ")).toMatchObject({ code: "TOOL_ARGUMENTS_INVALID", message: "COMMAND_REFUSED", details: { reason } });
      expect(error.hint).toMatch(/^refused `/);
    }
    expect(existsSync(join(root, "made"))).toBe(false);
    expect(await readdir(scratchDir)).toEqual([]);

    const allowOnly = createRunCommandTool(root, { scratchDir, allowCommands: ["echo", "ls"] });
    expect(invalid(() => allowOnly.validate({ argv: ["touch", "made"] })).message).toBe("COMMAND_REFUSED");
    expect(allowOnly.description).toContain("Only these programs may run: echo, ls");
    expect((await run(allowOnly, { argv: ["sh", "-c", "echo hi && ls >/dev/null && echo ok"] })).output).toBe("hi\nok\n");
    const denyTouch = createRunCommandTool(root, { scratchDir, denyCommands: ["touch"], descriptions: "full" });
    expect(invalid(() => denyTouch.validate({ argv: ["sh", "-c", "touch made"] })).details).toMatchObject({ reason: "deny_listed" });
    expect(denyTouch.description).toContain("These programs are refused: touch.");
  });

  test("argv shape: 1 to 64 strings, no NUL, timeoutMs a positive integer", async () => {
    const { root, scratchDir } = await setup();
    const tool = createRunCommandTool(root, { scratchDir });
    expect(invalid(() => tool.validate({ argv: [] })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: Array(65).fill("x") })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo", "a\0b"] })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo", "\ud800"] })).message).toBe("INVALID_UNICODE");
    expect(invalid(() => tool.validate({ argv: "echo hi" })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo"], command: "x" })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo"], timeoutMs: 0 })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo"], timeoutMs: 1.5 })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(invalid(() => tool.validate({ argv: ["echo", "x".repeat(40_000)] })).message).toBe("ARGUMENT_TOO_LARGE");
    // Arguments arrive as given: no splitting, globbing or expansion.
    const args = ["two words", "*", "$HOME", "", "a\"b", ";|&", "--"];
    const out = await run(tool, { argv: ["printf", "[%s]", ...args] });
    expect(out.output).toBe(args.map((a) => `[${a}]`).join(""));
  });

  test("a timeout above the maximum is clamped and said in the result", async () => {
    const { root, scratchDir } = await setup();
    const tool = createRunCommandTool(root, { scratchDir, timeoutMs: 1_000, maxTimeoutMs: 2_000 });
    const out = await run(tool, { argv: ["true"], timeoutMs: 3_600_000 });
    expect(out.timeoutMs).toBe(2_000);
    expect(out.note).toMatch(/clamped to 2000 ms/);
    const within = await run(tool, { argv: ["true"], timeoutMs: 1_500 });
    expect(within.timeoutMs).toBe(1_500);
    expect(within.note).toBeUndefined();
    const started = performance.now();
    const err = await rejection(run(tool, { argv: ["sleep", "30"], timeoutMs: 3_600_000 }));
    expect(performance.now() - started).toBeLessThan(2_000 + 1_000);
    expect(err).toMatchObject({ code: "COMMAND_TIMEOUT", details: { timeoutMs: 2_000, timedOut: true, note: expect.stringContaining("clamped") } });
    expect(createRunCommandTool(root, { scratchDir, timeoutMs: 1_000, maxTimeoutMs: 2_000, descriptions: "full" }).description).toContain("2000 ms");
  });

  test("createCodingTools includes run_command; processes.timeoutMs feeds it, its own option wins", async () => {
    const { root } = await tempWorkspace();
    const shared = createCodingTools(root, { processes: { timeoutMs: 1_234 } }).find((t) => t.name === "run_command")!;
    expect(shared.description).toContain("within 1234 ms");
    const own = createCodingTools(root, { processes: { timeoutMs: 1_234 }, runCommand: { timeoutMs: 4_321 } }).find((t) => t.name === "run_command")!;
    expect(own.description).toContain("within 4321 ms");
    const registry = new ToolRegistry(createCodingTools(root));
    const def = registry.definitions().find((d) => d.name === "run_command")!;
    expect(def.parameters).toMatchObject({ type: "object", required: ["argv"], additionalProperties: false });
    const result = await executeToolCall(registry, call("run_command", JSON.stringify({ argv: ["echo", "hi"] })), new AbortController().signal);
    expect(content(result)).toMatchObject({ exitCode: 0, output: "hi\n" });
  });
});

describe("run_command: cancellation", () => {
  test("an abort rejects with AbortError promptly; an aborted signal runs nothing", async () => {
    const { root, scratchDir } = await setup();
    const tool = createRunCommandTool(root, { scratchDir });
    const ac = new AbortController();
    const started = performance.now();
    setTimeout(() => ac.abort(), 200);
    const err = await rejection(run(tool, { argv: ["sleep", "30"] }, ac.signal));
    expect(isAbortError(err)).toBe(true);
    expect(performance.now() - started).toBeLessThan(200 + 800);
    const aborted = new AbortController();
    aborted.abort();
    const before = await rejection(run(tool, { argv: ["touch", "made"] }, aborted.signal));
    expect(isAbortError(before)).toBe(true);
    expect(existsSync(join(root, "made"))).toBe(false);
    expect(await readdir(scratchDir)).toEqual([]);
  });
});

test("a workspace that contains the host's temporary directory still gets a scratch directory outside it", async () => {
  const { root } = await tempWorkspace();
  const inner = join(root, "tmp");
  await mkdir(inner);
  const saved = process.env.TMPDIR;
  process.env.TMPDIR = inner;
  try {
    const tool = createRunCommandTool(root);
    const out = await tool.execute(tool.validate({ argv: ["sh", "-c", 'echo "$HOME"'] }), ctx());
    expect(out.output.startsWith(await realpath(root))).toBe(false);
    expect(out.output).toMatch(/workcell-scratch-[0-9a-f]{16}\/home\n$/);
    expect(await readdir(inner)).toEqual([]);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
  }
});
