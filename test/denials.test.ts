// Sandbox-denial hints: a confined process that fails on a refusal gets `denials` and a `note`
// whose first suggestion is grants (where the host allows them) or working inside the
// workspace, never leaving the sandbox; a passing command never gets a note.
import { mkdtemp, realpath, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, test } from "vitest";
import { closeTools, createCodingTools, createNodeProcessTool, createRunCommandTool, createRunTestsTool, sandboxDenials, sandboxSupport } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";
import { writeFile } from "node:fs/promises";

const support = sandboxSupport();
const landlock = support.landlockAbi !== null;
const netBlocked = (support.landlockAbi ?? 0) >= 4;
const cleanup: string[] = [];
afterEach(async () => {
  for (const d of cleanup.splice(0)) await rm(d, { recursive: true, force: true });
});

async function outsideDir(): Promise<string> {
  const d = await realpath(await mkdtemp(join(tmpdir(), "workcell-denial-")));
  cleanup.push(d);
  return d;
}

/** The note never starts with leaving the sandbox, and mentions it only after the first step. */
function expectSafeNote(note: string, grants: boolean): void {
  expect(note).not.toMatch(/^[^.]*sandbox: "off"/);
  const first = note.indexOf("Next step: ");
  expect(first).toBeGreaterThan(0);
  const step = note.slice(first);
  if (grants) expect(step).toMatch(/^Next step: if the command needs this, call it again with grants: \{ (writePaths|readPaths|network)/);
  else expect(step).toMatch(/^Next step: work inside the workspace/);
  const off = note.search(/sandbox: "off"|outside the sandbox/);
  expect(off).toBeGreaterThan(note.indexOf("work inside the workspace"));
}

const rcCases: { marker: string; argv: (dir: string) => string[]; kind: "write" | "read" | "network"; needs: boolean; path?: boolean }[] = [
  { marker: "Permission denied", argv: (d) => ["touch", join(d, "x")], kind: "write", needs: landlock, path: true },
  { marker: "EACCES", argv: (d) => ["node", "-e", `require('fs').writeFileSync(${JSON.stringify(join(d, "y"))}, 'x')`], kind: "write", needs: landlock, path: true },
  { marker: "EPERM", argv: () => ["node", "-e", "try { process.kill(1, 'SIGKILL') } catch (e) { console.error(e.message); process.exit(1) }"], kind: "write", needs: support.pidNamespace },
  { marker: "connect EACCES", argv: () => ["node", "-e", "require('net').connect(80, '127.0.0.1').on('error', (e) => { console.error(e.message); process.exit(1) })"], kind: "network", needs: netBlocked },
  { marker: "getaddrinfo", argv: () => ["node", "-e", "require('dns').lookup('workcell-no-such-host.invalid', (e) => { console.error(e && e.message); process.exit(1) })"], kind: "network", needs: netBlocked },
];

describe("sandbox-denial hints", () => {
  for (const c of rcCases) {
    test.skipIf(!c.needs)(`a_confined_command_hitting_${c.marker.replace(/\W+/g, "_")}_gets_${c.kind}_denials_and_a_safe_note`, async () => {
      const { root } = await tempWorkspace();
      const dir = await outsideDir();
      for (const grants of [false, true]) {
        const tool = grants ? createRunCommandTool(root, { approvalFor: { grant: "ask" }, approve: () => true }) : createRunCommandTool(root);
        const r = await tool.execute(tool.validate({ argv: c.argv(dir) }), ctx());
        expect(r.exitCode).not.toBe(0);
        expect(r.output).toContain(c.marker);
        expect(r.denials?.[0]?.kind, r.output).toBe(c.kind);
        if (c.path) expect(r.denials![0]!.path).toBe(join(dir, c.argv(dir)[0] === "touch" ? "x" : "y"));
        expectSafeNote(r.note!, grants);
      }
    });
  }

  test.skipIf(!landlock)("node_process_refused_by_the_permission_model_or_the_kernel_names_the_path", async () => {
    const { root } = await tempWorkspace();
    const dir = await outsideDir();
    const tool = createNodeProcessTool(root, { timeoutMs: 5000 });
    const target = join(dir, "z");
    const r = await tool.execute(tool.validate({ source: `require('fs').writeFileSync(${JSON.stringify(target)}, 'x')` }), ctx());
    expect(r.exitCode).not.toBe(0);
    expect(r.denials).toEqual([{ kind: "write", path: target }]);
    expectSafeNote(r.note!, false);
  });

  test.skipIf(!landlock)("a_read_refused_by_the_node_permission_model_names_the_path_and_whether_run_command_may_read_it", async () => {
    const { root } = await tempWorkspace();
    const dir = await outsideDir();
    const secret = join(dir, "secret.txt");
    await writeFile(secret, "x");
    const tool = createNodeProcessTool(root, { timeoutMs: 5000 });
    const r = await tool.execute(tool.validate({ source: `require('fs').readFileSync(${JSON.stringify(secret)})` }), ctx());
    expect(r.exitCode).not.toBe(0);
    if (!r.sandbox.nodePermission) return; // this Node.js has no permission model: Landlock refused it
    expect(r.denials).toEqual([{ kind: "read", path: secret }]);
    expect(r.note).toContain(`Node.js's permission model (node_process only) refused reading ${JSON.stringify(secret)}.`);
    expect(r.note).toContain(`run_command may not read ${JSON.stringify(secret)} either`);
    // And run_command is indeed refused the same read.
    const run = createRunCommandTool(root);
    const c = await run.execute(run.validate({ argv: ["cat", secret] }), ctx());
    expect(c.exitCode).not.toBe(0);
  });

  test("a_passing_command_never_gets_a_note_even_if_it_prints_a_marker", async () => {
    const { root } = await tempWorkspace();
    const tool = createRunCommandTool(root);
    const r = await tool.execute(tool.validate({ argv: ["echo", "touch: cannot touch '/etc/x': Permission denied"] }), ctx());
    expect(r.exitCode).toBe(0);
    expect(r.note).toBeUndefined();
    expect(r.denials).toBeUndefined();
    const np = createNodeProcessTool(root);
    const n = await np.execute(np.validate({ source: "console.error('EACCES: permission denied, open \\'/etc/x\\'')" }), ctx());
    expect(n.exitCode).toBe(0);
    expect(n.note).toBeUndefined();
  });

  test("an_unconfined_command_gets_no_hint", async () => {
    const { root } = await tempWorkspace();
    const tool = createRunCommandTool(root, { sandbox: "off" });
    const r = await tool.execute(tool.validate({ argv: ["sh", "-c", "echo 'Permission denied /etc/x' >&2; exit 1"] }), ctx());
    expect(r.exitCode).toBe(1);
    expect(r.denials).toBeUndefined();
    expect(r.note).toBeUndefined();
  });

  test.skipIf(!landlock)("run_tests_failing_on_a_denial_gets_the_hint", async () => {
    const { root } = await tempWorkspace();
    const dir = await outsideDir();
    await writeFile(
      join(root, "t.test.mjs"),
      `import test from "node:test";\nimport { writeFileSync } from "node:fs";\ntest("writes outside", () => { writeFileSync(${JSON.stringify(join(dir, "t"))}, "x"); });\n`,
    );
    const tool = createRunTestsTool(root, { timeoutMs: 60_000 });
    const r = await tool.execute(tool.validate({ runner: "node", args: ["t.test.mjs"] }), ctx());
    expect(r.status).toBe("failed");
    expect(r.denials).toContainEqual({ kind: "write", path: join(dir, "t") });
    expectSafeNote(r.note!, false);
  });

  test("each_marker_text_is_recognized_by_the_core_function_the_process_tools_share", () => {
    const none = { max: 0, by: "none" as const };
    const report = {
      landlockAbi: 6,
      filesystem: "confined" as const,
      network: "blocked" as const,
      processes: "namespace" as const,
      nodePermission: false,
      limits: { processes: none, memoryBytes: none, fileBytes: none },
      protect: "read-only" as const,
    };
    const cases: [string, string][] = [
      ["touch: cannot touch '/etc/x': Permission denied", "write"],
      ["mkdir: cannot create directory '/opt/y': Operation not permitted", "write"],
      ["cannot create /usr/z: Read-only file system", "write"],
      ["Error: EACCES: permission denied, open '/root/.npmrc'", "write"],
      ["Error: EPERM: operation not permitted, mkdir '/srv/cache'", "write"],
      ["cat: /root/secret: Permission denied", "read"],
      ["curl: (6) Could not resolve host: example.com", "network"],
      ["Error: connect ECONNREFUSED 127.0.0.1:80", "network"],
      ["connect: Network is unreachable", "network"],
      ["Error: getaddrinfo EAI_AGAIN registry.npmjs.org", "network"],
      ["Error: connect EACCES 93.184.216.34:443", "network"],
      ["Error: connect EPERM 10.0.0.1:22", "network"],
    ];
    for (const [line, kind] of cases) {
      const h = sandboxDenials([line], false, "/work/ws", report, true);
      expect(h?.denials[0]?.kind, line).toBe(kind);
      expectSafeNote(h!.note, true);
      expect(sandboxDenials([line], true, "/work/ws", report, true), line).toBeUndefined();
    }
  });
});

// A dev server started by run_command failed with `listen EACCES 127.0.0.1:5173` and the result
// said `denials: [{ kind: "write" }]` with "refused file access outside the workspace".
describe("a refused listen", () => {
  const server = (port: number) => ["node", "-e", `require('http').createServer().listen(${port}, '127.0.0.1').on('error', (e) => { console.error('Error: ' + e.message); process.exit(1) })`];
  test.skipIf(!netBlocked)("a_refused_listen_is_a_network_denial_that_names_the_ports_the_host_allows", async () => {
    const { root } = await tempWorkspace();
    const withPorts = createCodingTools(root, { sessions: { ports: [5173] } });
    const without = createCodingTools(root);
    try {
      for (const [tools, allowed] of [[withPorts, true], [without, false]] as const) {
        const run = tools.find((t) => t.name === "run_command")!;
        const r = (await run.execute(run.validate({ argv: server(5173) }), ctx())) as { exitCode: number; output: string; denials?: { kind: string }[]; note?: string };
        expect(r.exitCode, r.output).not.toBe(0);
        expect(r.output).toMatch(/listen E(ACCES|PERM)/);
        expect(r.denials).toEqual([{ kind: "network" }]);
        expect(r.note).not.toContain("outside the workspace");
        if (allowed) expect(r.note).toContain("start_process and ports: [5173]");
        else expect(r.note).toContain("Ports are not available here");
      }
    } finally {
      await closeTools(withPorts);
      await closeTools(without);
    }
  });
  test("the_core_names_the_port_of_each_runtime's_listen_refusal", () => {
    const report = { filesystem: "confined", network: "blocked" } as Parameters<typeof sandboxDenials>[3];
    for (const [line, port] of [["Error: listen EACCES: permission denied 127.0.0.1:5173", 5173], ["listen tcp :8080: bind: permission denied", 8080]] as const) {
      const h = sandboxDenials([line], false, "/work/ws", report, true, [port]);
      expect(h?.denials).toEqual([{ kind: "network" }]);
      expect(h?.note).toContain(`start_process and ports: [${port}]`);
    }
  });
});
