// What commands may touch inside the workspace (contract §21): the protected globs (default
// every `.git`) are read-only for every process a tool starts, nested repositories included, and
// the top-level `.git` cannot be created; an approved grant of the path opens it for one call;
// where no mount namespace can make them read-only, "auto" refuses unless the host protects
// nothing for processes.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { chmod, mkdir, rm, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import { afterEach, describe, expect, onTestFinished, test } from "vitest";
import { ToolRegistry, closeTools, createCodingTools, createRunCommandTool, executeToolCall, sandboxSupport, type AnyTool } from "../dist/index.js";
import { call, content, ctx, tempWorkspace } from "./helpers.js";
import { AS_NOBODY, packageNobodyCanRead } from "./nobody.js";

const s = sandboxSupport();
const namespaces = s.pidNamespace && s.userNamespace && s.landlockAbi !== null;
const sets: AnyTool[][] = [];
afterEach(async () => {
  for (const t of sets.splice(0)) await closeTools(t);
});

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.org", ...args], { cwd, encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** A workspace that is a repository with one commit and a nested repository `vendor/lib`. */
async function repos(): Promise<string> {
  const { root } = await tempWorkspace();
  git(root, "init", "-q");
  await writeFile(join(root, "a.txt"), "a\n");
  git(root, "add", "a.txt");
  git(root, "commit", "-qm", "first");
  await mkdir(join(root, "vendor", "lib"), { recursive: true });
  git(join(root, "vendor", "lib"), "init", "-q");
  return root;
}

function toolSet(root: string, processes: Record<string, unknown>, approve?: () => unknown) {
  const set = createCodingTools(root, { processes: { timeoutMs: 20_000, ...processes }, ...(approve ? { approvalFor: { grant: "ask" }, approve } : {}) } as never);
  sets.push(set);
  const reg = new ToolRegistry(set);
  return (name: string, args: unknown) => executeToolCall(reg, call(name, args), new AbortController().signal).then(content);
}

/** Each process tool tries to plant a hook and rewrite both repositories' configs; the results. */
async function plant(run: (name: string, args: unknown) => Promise<any>, root: string) {
  const targets = (tool: string) => [
    [join(root, ".git", "hooks", `pre-commit-${tool}`), `# planted by ${tool}`],
    [join(root, ".git", "config"), `# planted by ${tool}`],
    [join(root, "vendor", "lib", ".git", "config"), `# planted by ${tool}`],
  ];
  const js = (tool: string) =>
    targets(tool)
      .map(([f, text]) => `try { require("fs").appendFileSync(${JSON.stringify(f)}, ${JSON.stringify(text)}); } catch (e) { console.log(e.code); }`)
      .join("\n");
  // The command policy takes redirects to relative paths only (the commands run in the root).
  const sh = (tool: string) => targets(tool).map(([f, text]) => `printf %s ${JSON.stringify(text)} >> ${relative(root, f!)}`).join("; ");
  await writeFile(join(root, "plant.test.cjs"), `const { test } = require("node:test");\ntest("plant", () => {\n${js("run_tests")}\n});\n`);
  const out: Record<string, any> = {};
  out.run_command = await run("run_command", { argv: ["sh", "-c", sh("run_command")] });
  out.node_process = await run("node_process", { source: js("node_process") });
  out.run_tests = await run("run_tests", { runner: "node", args: ["plant.test.cjs"] });
  out.start_process = await run("start_process", { argv: ["sh", "-c", sh("start_process")], waitMs: 15_000 });
  const landed = (tool: string) => targets(tool).map(([f, text]) => existsSync(f!) && readFileSync(f!, "utf8").includes(text!));
  return { out, landed };
}

const TOOLS = ["run_command", "node_process", "run_tests", "start_process"];

/** Waits for a condition (polling, bounded). */
async function until(check: () => boolean, ms = 10_000): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 25));
  }
  return check();
}

describe("protected paths are read-only for commands", () => {
  test.skipIf(!namespaces)("commands_cannot_plant_git_hooks_or_rewrite_git_config_nested_repositories_included", async () => {
    const root = await repos();
    const { out, landed } = await plant(toolSet(root, {}), root);
    for (const t of TOOLS) {
      expect(landed(t), `${t}: ${JSON.stringify(out[t])}`).toEqual([false, false, false]);
      expect(out[t].sandbox.protect, t).toBe("read-only");
    }
    expect(out.run_command.output).toContain("Read-only file system");
    expect(out.node_process.stdout).toContain("EROFS");
  }, 120_000);

  test.skipIf(!namespaces)("with_protect_off_for_processes_the_same_commands_plant_them", async () => {
    // The attack above, with the protection off: it lands (so that test can fail).
    const root = await repos();
    const { out, landed } = await plant(toolSet(root, { protect: [] }), root);
    for (const t of TOOLS) {
      expect(landed(t), `${t}: ${JSON.stringify(out[t])}`).toEqual([true, true, true]);
      expect(out[t].sandbox.protect, t).toBe("none");
    }
  }, 120_000);

  test.skipIf(!namespaces)("an_unprivileged_host_cannot_have_git_hooks_planted_either", async () => {
    const root = await repos();
    spawnSync("chmod", ["-R", "a+rwX", join(root, "..")]);
    const copy = packageNobodyCanRead();
    if ("reason" in copy) {
      console.warn(`skipped the unprivileged-host run: ${copy.reason}`);
      return;
    }
    onTestFinished(() => rmSync(copy.dir, { recursive: true, force: true }));
    const script = join(root, "..", "host.mjs");
    await writeFile(
      script,
      `import { createRunCommandTool } from ${JSON.stringify(join(copy.dir, "dist", "index.js"))};
const [root] = process.argv.slice(2);
const out = {};
const swap = createRunCommandTool(root);
const swapped = await swap.execute(swap.validate({ argv: ["sh", "-c", "mv vendor/lib vendor/lib-old && mkdir -p vendor/lib && cp -r vendor/lib-old/.git vendor/lib/.git"] }), { signal: new AbortController().signal });
out.swap = { exitCode: swapped.exitCode, output: swapped.output };
for (const protect of [undefined, []]) {
  const tool = createRunCommandTool(root, protect ? { protect } : {});
  const r = await tool.execute(tool.validate({ argv: ["sh", "-c", "printf x >> .git/hooks/pre-commit && printf x >> vendor/lib/.git/config"] }), { signal: new AbortController().signal });
  out[protect ? "off" : "on"] = { exitCode: r.exitCode, output: r.output, protect: r.sandbox.protect };
}
console.log(JSON.stringify(out));
`,
    );
    await chmod(script, 0o644);
    const r = spawnSync("setpriv", [...AS_NOBODY, process.execPath, script, root], { encoding: "utf8", cwd: "/" });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout.trim().split("\n").at(-1)!) as Record<"on" | "off" | "swap", { exitCode: number; output: string; protect: string }>;
    // The nested repository cannot be moved away to put a copy in its place.
    expect(got.swap.exitCode, got.swap.output).not.toBe(0);
    expect(got.swap.output).toMatch(/busy/i);
    expect(readdirSync(join(root, "vendor"))).toEqual(["lib"]);
    expect(got.on.exitCode, got.on.output).not.toBe(0);
    expect(got.on.output).toMatch(/Read-only file system/);
    expect(got.on.protect).toBe("read-only");
    // The same command with protection off plants them (so the refusal above is the mount's).
    expect(got.off.exitCode, got.off.output).toBe(0);
    expect(readFileSync(join(root, ".git", "hooks", "pre-commit"), "utf8")).toBe("x");
  }, 60_000);

  test.skipIf(!namespaces)("a_nested_repository_cannot_be_moved_away_and_replaced_by_a_copy_with_a_planted_hook", async () => {
    const root = await repos();
    // The nested repository (or a directory above it) renamed away, a copy of it with a hook
    // put at its old path: the person's next `git commit` there would run the hook.
    const swap = (dir: string) =>
      `mv ${dir} ${dir}-old && mkdir -p vendor/lib && cp -r ${dir}-old${dir === "vendor" ? "/lib" : ""}/.git vendor/lib/.git && printf '#!/bin/sh\\n' > vendor/lib/.git/hooks/pre-commit`;
    const hook = join(root, "vendor", "lib", ".git", "hooks", "pre-commit");
    const on = toolSet(root, {});
    for (const dir of ["vendor/lib", "vendor"]) {
      const r = await on("run_command", { argv: ["sh", "-c", swap(dir)] });
      expect(r.exitCode, `${dir}: ${r.output}`).not.toBe(0);
      expect(r.output).toMatch(/busy/i);
      expect(existsSync(hook), dir).toBe(false);
      expect(readdirSync(join(root, "vendor")), dir).toEqual(["lib"]);
    }
    const n = await on("node_process", { source: `try { require("fs").renameSync("vendor", "v2"); } catch (e) { console.log(e.code); }` });
    expect(n.stdout).toContain("EBUSY");
    // Moving a file out of the directory that holds it still works (mv copies across the mount).
    await writeFile(join(root, "vendor", "lib", "f.txt"), "f\n");
    const mv = await on("run_command", { argv: ["mv", "vendor/lib/f.txt", "f.txt"] });
    expect(mv.exitCode, mv.output).toBe(0);
    expect(readFileSync(join(root, "f.txt"), "utf8")).toBe("f\n");
    // With protection off for processes, the same command plants the hook.
    const off = toolSet(root, { protect: [] });
    const planted = await off("run_command", { argv: ["sh", "-c", swap("vendor/lib")] });
    expect(planted.exitCode, planted.output).toBe(0);
    expect(existsSync(hook)).toBe(true);
  }, 60_000);

  test.skipIf(!namespaces)("a_command_cannot_create_a_top_level_git", async () => {
    const { root } = await tempWorkspace();
    const script = "mkdir -p .git/hooks && printf '#!/bin/sh\\n' > .git/hooks/pre-commit";
    const on = toolSet(root, {});
    const r = await on("run_command", { argv: ["sh", "-c", script] });
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/Read-only file system/);
    // Nothing is left behind: the stand-in is gone once no process uses it.
    expect(existsSync(join(root, ".git"))).toBe(false);
    // A session holds it (an empty directory) while it runs, and cannot write in it.
    const s1 = await on("start_process", { argv: ["sh", "-c", "mkdir .git/hooks; echo tried; sleep 30"], waitFor: "tried", waitMs: 15_000 });
    expect(s1.running, JSON.stringify(s1)).toBe(true);
    expect(s1.output).toMatch(/Read-only file system/);
    expect(readdirSync(join(root, ".git"))).toEqual([]);
    expect((await on("stop_process", { id: s1.id })).running).toBe(false);
    await expect(until(() => !existsSync(join(root, ".git")))).resolves.toBe(true);
    // With protection off, the same command creates it.
    const off = toolSet(root, { protect: [] });
    expect((await off("run_command", { argv: ["sh", "-c", script] })).exitCode).toBe(0);
    expect(existsSync(join(root, ".git", "hooks", "pre-commit"))).toBe(true);
  }, 60_000);

  test.skipIf(!namespaces)("git_status_and_log_work_and_git_commit_works_with_an_approved_grant_of_the_git_dir", async () => {
    const root = await repos();
    let asked = 0;
    const run = toolSet(root, {}, () => (asked++, true));
    const status = await run("run_command", { argv: ["git", "status", "--short"] });
    expect(status.exitCode, status.output).toBe(0);
    const log = await run("run_command", { argv: ["git", "log", "--oneline"] });
    expect(log.exitCode, log.output).toBe(0);
    expect(log.output).toContain("first");
    await writeFile(join(root, "b.txt"), "b\n");
    const commit = ["sh", "-c", "git add b.txt && git -c user.name=m -c user.email=m@example.org commit -qm second"];
    const refused = await run("run_command", { argv: commit });
    expect(refused.exitCode).not.toBe(0);
    expect(refused.output).toMatch(/Read-only file system/);
    const granted = await run("run_command", { argv: commit, grants: { writePaths: [join(root, ".git")] } });
    expect(granted.exitCode, granted.output).toBe(0);
    expect(asked).toBe(1);
    expect(git(root, "log", "--oneline")).toContain("second");
    // One call only: the next one is read-only again.
    const after = await run("run_command", { argv: ["sh", "-c", "echo x >> .git/config"] });
    expect(after.exitCode).not.toBe(0);
  }, 60_000);

  test.skipIf(!namespaces)("without_a_mount_namespace_auto_refuses_unless_protect_is_empty_and_off_says_so", async () => {
    const { root } = await tempWorkspace();
    const noNs = { sandboxFeatures: { pidNamespace: false } };
    const refused = createRunCommandTool(root, noNs);
    const err = await refused.execute(refused.validate({ argv: ["true"] }), ctx()).then(
      () => undefined,
      (e: unknown) => e as { code: string; hint?: string; details?: { missing: string[] } },
    );
    expect(err?.code).toBe("SANDBOX_UNAVAILABLE");
    expect(err?.details?.missing).toEqual(["mount-namespace"]);
    expect(err?.hint).toMatch(/protect: \[\]/);
    const bare = createRunCommandTool(root, { ...noNs, protect: [] });
    const ok = await bare.execute(bare.validate({ argv: ["true"] }), ctx());
    expect(ok.exitCode).toBe(0);
    expect(ok.sandbox.protect).toBe("none");
    const off = createRunCommandTool(root, { sandbox: "off" });
    const offResult = await off.execute(off.validate({ argv: ["sh", "-c", "mkdir .git"] }), ctx());
    expect(offResult.exitCode).toBe(0);
    expect(offResult.sandbox.protect).toBe("open");
  });

  test.skipIf(!namespaces)("the_protect_walk_costs_little_on_a_tree_of_a_few_thousand_files", async () => {
    const { root } = await tempWorkspace();
    git(root, "init", "-q");
    for (let d = 0; d < 50; d++) {
      await mkdir(join(root, `d${d}`, "sub"), { recursive: true });
      await Promise.all(Array.from({ length: 100 }, (_, i) => writeFile(join(root, `d${d}`, i % 2 ? "sub" : "", `f${i}`), "x")));
    }
    const time = async (protect?: string[]) => {
      const tool = createRunCommandTool(root, protect ? { protect } : {});
      const ms: number[] = [];
      for (let i = 0; i < 15; i++) {
        const t = performance.now();
        expect((await tool.execute(tool.validate({ argv: ["true"] }), ctx())).exitCode).toBe(0);
        ms.push(performance.now() - t);
      }
      return ms.sort((a, b) => a - b)[7]!;
    };
    const without = await time([]);
    const withWalk = await time();
    console.log(`run_command true on 5,000 files: ${withWalk.toFixed(2)} ms with protect (median), ${without.toFixed(2)} ms with protect: [] (+${(withWalk - without).toFixed(2)} ms)`);
    expect(withWalk).toBeLessThan(without + 250);
    await rm(join(root, "d0"), { recursive: true });
  }, 120_000);
});
