import { readdir, realpath, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import {
  AbortError,
  ToolError,
  ToolRegistry,
  createCodingTools,
  createNodeProcessTool,
  executeToolCall,
  isAbortError,
} from "../dist/index.js";
import { binding } from "../dist/native.js";
import { call, content, ctx, invalid, rejection, tempWorkspace } from "./helpers.js";
import { scriptLeftovers } from "./process-helpers.js";

type NodeTool = ReturnType<typeof createNodeProcessTool>;

async function run(tool: NodeTool, source: string, args?: string[], signal?: AbortSignal) {
  return tool.execute(tool.validate(args === undefined ? { source } : { source, arguments: args }), ctx(signal));
}

describe("node_process: running", () => {
  test("returns exit code and both streams in the contract's shape", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const out = await run(tool, "console.log('out'); console.error('err')");
    expect(Object.keys(out).sort()).toEqual(
      ["durationMs", "exitCode", "sandbox", "signal", "stderr", "stderrTruncated", "stdout", "stdoutTruncated", "timedOut"].sort(),
    );
    expect(out).toMatchObject({
      exitCode: 0,
      signal: null,
      stdout: "out\n",
      stderr: "err\n",
      stdoutTruncated: false,
      stderrTruncated: false,
      timedOut: false,
    });
    expect(out.durationMs).toBeGreaterThan(0);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("argv.slice(1), execPath and cwd inside the child are exactly as the contract says", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const args = ["--", "-e", "", "two words", "ünïcødé 😀", "--version", "-p", "--inspect", "$HOME", "a\"b\\", "*", "\n"];
    const out = await run(
      tool,
      "console.log(JSON.stringify({ argv: process.argv.slice(1), execPath: process.execPath, cwd: process.cwd(), main: require.main === module, file: require('path').basename(__filename) }))",
      args,
    );
    const seen = JSON.parse(out.stdout);
    expect(seen.argv).toEqual(args);
    expect(seen.execPath).toBe(process.execPath);
    expect(seen.cwd).toBe(await realpath(root));
    expect(seen.main).toBe(true);
    expect(seen.file).toMatch(/^\.workcell-node-[0-9a-f]{16}\.cjs$/);
    // No arguments at all: argv.slice(1) is empty.
    const none = await run(tool, "console.log(JSON.stringify(process.argv.slice(1)))");
    expect(JSON.parse(none.stdout)).toEqual([]);
  });

  test("the script keeps its own semantics: directives, hashbang, line numbers, execArgv", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const strict = await run(tool, '"use strict";\nconsole.log((function () { return this; })() === undefined)');
    expect(strict.stdout).toBe("true\n");
    const sloppy = await run(tool, "console.log((function () { return this; })() === undefined)");
    expect(sloppy.stdout).toBe("false\n");
    const hashbang = await run(tool, "#!/usr/bin/env node\n'use strict'\nconsole.log(process.argv.slice(1).join(','), this === module.exports)", ["a", "b"]);
    expect(hashbang.stdout).toBe("a,b true\n");
    const thrown = await run(tool, "const a = 1;\n\nthrow new Error('third line')");
    expect(thrown.stderr).toMatch(/\.workcell-node-[0-9a-f]{16}\.cjs:3\b/);
    const forkSource =
      "require('fs').writeFileSync('child.cjs', 'console.log(JSON.stringify([process.execArgv, process.argv.slice(2)]))');" +
      "require('child_process').fork('./child.cjs', ['--', '-e', ''], { stdio: 'inherit' });" +
      "console.log(JSON.stringify(process.execArgv));";
    // Without the sandbox nothing is in execArgv; with it, only Node's permission flags, which
    // fork() passes on: the forked child runs under the same permissions with its own exact argv.
    const plain = createNodeProcessTool(root, { timeoutMs: 10_000, sandbox: "off" });
    expect((await run(plain, forkSource)).stdout).toBe('[]\n[[],["--","-e",""]]\n');
    const forked = await run(tool, forkSource);
    const [parentArgv, child] = forked.stdout.trim().split("\n").map((l) => JSON.parse(l));
    expect(forked.sandbox.nodePermission).toBe(true);
    expect(parentArgv.length).toBeGreaterThan(0);
    expect(parentArgv.every((a: string) => a.startsWith("--") && !a.includes(".workcell-node-"))).toBe(true);
    expect(child).toEqual([parentArgv, ["--", "-e", ""]]);
  });

  test("a non-zero exit and an uncaught exception are normal results", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    expect((await run(tool, "process.exit(3)")).exitCode).toBe(3);
    const thrown = await run(tool, "throw new Error('boom')");
    expect(thrown.exitCode).toBe(1);
    expect(thrown.stderr).toContain("Error: boom");
    const killed = await run(tool, "process.kill(process.pid, 'SIGTERM')");
    expect(killed).toMatchObject({ exitCode: null, signal: "SIGTERM" });
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("the script can use files in the workspace", async () => {
    const { root } = await tempWorkspace();
    await writeFile(join(root, "lib.js"), "module.exports = 41;");
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const out = await run(tool, "require('fs').writeFileSync('out.txt', String(require('./lib.js') + 1))");
    expect(out.exitCode).toBe(0);
    expect((await readdir(root)).sort()).toEqual(["lib.js", "out.txt"]);
  });

  // `import('vite')` failed in node_process on a read of /proc/sys/fs/binfmt_misc/WSLInterop
  // that Node's permission model refused, while run_command (Landlock only) could read it.
  test("a_package_probing_the_system_is_not_refused_by_the_permission_model_where_landlock_allows_the_read", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const probe = (path: string, op: "read" | "list" | "write") =>
      `try { require('fs').${op === "read" ? "readFileSync" : op === "list" ? "readdirSync" : "writeFileSync"}(${JSON.stringify(path)}${op === "write" ? ", 'x'" : ""}); console.log('ok') } catch (e) { console.log(e.code) }`;
    const cases: [string, "read" | "list" | "write"][] = [
      ["/proc/sys/fs/binfmt_misc/WSLInterop", "read"],
      ["/etc/passwd", "read"],
      ["/usr/lib", "list"],
      ["/tmp", "list"],
      ["/usr/workcell-never", "write"],
    ];
    const out = await run(tool, cases.map(([p, op]) => probe(p, op)).join(";\n"));
    const codes = out.stdout.trim().split("\n");
    if (!out.sandbox.nodePermission || out.sandbox.filesystem !== "confined") return;
    // What every confined process may read: the kernel's answer, never the permission model's.
    expect(codes[0], out.stderr).not.toBe("ERR_ACCESS_DENIED");
    expect(codes[1]).toBe("ok");
    expect(codes[2]).toBe("ok");
    // What stays refused: reads outside the system directories and every write outside.
    expect(codes[3]).toBe("ERR_ACCESS_DENIED");
    expect(codes[4]).toBe("ERR_ACCESS_DENIED");
  });
});

describe("node_process: environment", () => {
  test("a secret in the host environment is not visible; only PATH is", async () => {
    const { root } = await tempWorkspace();
    process.env.OPENAI_API_KEY = "sk-test-secret-value";
    try {
      const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
      const out = await run(
        tool,
        // /proc/self/environ through a child: the permission model keeps the script's own fs
        // calls inside the workspace.
        "console.log(JSON.stringify({ env: process.env, key: process.env.OPENAI_API_KEY ?? null, environ: require('child_process').execFileSync('cat', ['/proc/self/environ'], { encoding: 'latin1' }) }))",
      );
      const seen = JSON.parse(out.stdout);
      expect(seen.key).toBeNull();
      expect(Object.keys(seen.env)).toEqual(["PATH"]);
      expect(seen.env.PATH).toBe(process.env.PATH);
      expect(seen.environ).not.toContain("sk-test-secret-value");
    } finally {
      delete process.env.OPENAI_API_KEY;
    }
  });

  test("options.env adds names from the host or explicit pairs, nothing else", async () => {
    const { root } = await tempWorkspace();
    process.env.WC_SHARED = "shared-value";
    process.env.OPENAI_API_KEY = "sk-test-secret-value";
    try {
      const names = createNodeProcessTool(root, { timeoutMs: 10_000, env: ["WC_SHARED", "WC_ABSENT"] });
      const a = JSON.parse((await run(names, "console.log(JSON.stringify(process.env))")).stdout);
      expect(a).toEqual({ PATH: process.env.PATH, WC_SHARED: "shared-value" });
      const pairs = createNodeProcessTool(root, { timeoutMs: 10_000, env: { NODE_ENV: "test", LANG: "C.UTF-8" } });
      const b = JSON.parse((await run(pairs, "console.log(JSON.stringify(process.env))")).stdout);
      expect(b).toEqual({ PATH: process.env.PATH, NODE_ENV: "test", LANG: "C.UTF-8" });
    } finally {
      delete process.env.WC_SHARED;
      delete process.env.OPENAI_API_KEY;
    }
  });

  test("bad options throw at creation", async () => {
    const { root } = await tempWorkspace();
    expect(() => createNodeProcessTool(root, { timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { timeoutMs: 1.5 })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { maxOutputBytes: -1 })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { env: ["A=B"] })).toThrow(TypeError);
    expect(() => createNodeProcessTool(root, { env: { A: "x\0" } })).toThrow(TypeError);
    expect(() => createNodeProcessTool(join(root, "missing"))).toThrow();
  });
});

describe("node_process: limits, checked before any effect", () => {
  test("source: 32,768 UTF-8 bytes accepted, 32,769 SOURCE_TOO_LARGE", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const max = "//" + "é".repeat(16_383); // 2 + 32,766 = 32,768 bytes
    expect(Buffer.byteLength(max)).toBe(32_768);
    expect((await run(tool, max)).exitCode).toBe(0);
    const err = invalid(() => tool.validate({ source: max + "x" }));
    expect(err.message).toBe("SOURCE_TOO_LARGE");
  });

  test("at most 32 arguments: TOO_MANY_ARGUMENTS", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    expect(tool.validate({ source: "", arguments: Array(32).fill("a") }).arguments).toHaveLength(32);
    expect(invalid(() => tool.validate({ source: "", arguments: Array(33).fill("a") })).message).toBe("TOO_MANY_ARGUMENTS");
  });

  test("each argument at most 2,048 UTF-8 bytes, 8,192 together", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    const max = "€".repeat(682) + "ab"; // 3 × 682 + 2 = 2,048 bytes
    expect(Buffer.byteLength(max)).toBe(2_048);
    tool.validate({ source: "", arguments: [max] });
    expect(invalid(() => tool.validate({ source: "", arguments: [max + "a"] })).message).toBe("ARGUMENT_TOO_LARGE");
    tool.validate({ source: "", arguments: [max, max, max, max] });
    expect(invalid(() => tool.validate({ source: "", arguments: [max, max, max, max, "a"] })).message).toBe(
      "ARGUMENTS_TOO_LARGE",
    );
  });

  test("a NUL in an argument is refused", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    const err = invalid(() => tool.validate({ source: "", arguments: ["ok", "a\0b"] }));
    expect(err.message).toBe("INVALID_ARGUMENTS_SHAPE");
  });

  test("lone surrogates are INVALID_UNICODE; wrong shapes are INVALID_ARGUMENTS_SHAPE", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    expect(invalid(() => tool.validate({ source: "\ud800" })).message).toBe("INVALID_UNICODE");
    expect(invalid(() => tool.validate({ source: "", arguments: ["\udc00"] })).message).toBe("INVALID_UNICODE");
    for (const bad of [{}, { source: 1 }, { source: "", arguments: "x" }, { source: "", arguments: [1] }, { source: "", cwd: "." }]) {
      expect(invalid(() => tool.validate(bad)).message).toBe("INVALID_ARGUMENTS_SHAPE");
    }
  });

  test("Rust enforces the limits too: execute without validate refuses and writes nothing", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    for (const input of [
      { source: "x".repeat(32_769) },
      { source: "", arguments: Array(33).fill("a") },
      { source: "", arguments: ["a".repeat(2_049)] },
      { source: "", arguments: Array(5).fill("a".repeat(2_048)) },
      { source: "", arguments: ["\0"] },
    ]) {
      const err = await rejection(tool.execute(input, ctx()));
      expect(err).toBeInstanceOf(ToolError);
      expect((err as ToolError).code).toBe("TOOL_ARGUMENTS_INVALID");
    }
    expect(await readdir(root)).toEqual([]);
  });

  test("the Windows-quoted command line: 30,000 UTF-16 units accepted, 30,001 COMMAND_LINE_TOO_LONG", async () => {
    const { root } = await tempWorkspace();
    const ws = new binding.NativeWorkspace(root);
    // libuv's quoting (CommandLineToArgvW's inverse), to find the exact boundary independently.
    const quote = (a: string): string => {
      if (a === "") return '""';
      if (!/[ \t"]/.test(a)) return a;
      if (!/["\\]/.test(a)) return `"${a}"`;
      let out = '"';
      let bs = 0;
      for (const c of a) {
        if (c === "\\") bs++;
        else if (c === '"') {
          out += "\\".repeat(bs * 2 + 1) + '"';
          bs = 0;
        } else {
          out += "\\".repeat(bs) + c;
          bs = 0;
        }
      }
      return out + "\\".repeat(bs * 2) + '"';
    };
    const script = join(ws.canonical, ".workcell-node-0000000000000000.cjs");
    const args = Array(32).fill('"'.repeat(200) + " 😀");
    const units = (exec: string) => [exec, script, ...args].map(quote).join(" ").length;
    const pad = 30_000 - units("/n");
    const atLimit = "/n" + "x".repeat(pad);
    expect(units(atLimit)).toBe(30_000);
    ws.checkNodeProcess(atLimit, "", args);
    let thrown: unknown;
    try {
      ws.checkNodeProcess(atLimit + "x", "", args);
    } catch (err) {
      thrown = err;
    }
    expect(JSON.parse((thrown as Error).message)).toMatchObject({
      code: "TOOL_ARGUMENTS_INVALID",
      message: "COMMAND_LINE_TOO_LONG",
    });
    // With the host's real execPath the other limits keep the line far below the cap.
    createNodeProcessTool(root).validate({ source: "", arguments: args });
  });
});

describe("node_process: output", () => {
  test("caps per stream, each with its own flag", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000, maxStdoutBytes: 10, maxStderrBytes: 100 });
    const out = await run(tool, "process.stdout.write('x'.repeat(50)); process.stderr.write('y'.repeat(50))");
    expect(out).toMatchObject({ stdout: "x".repeat(10), stdoutTruncated: true, stderr: "y".repeat(50), stderrTruncated: false });
    const both = createNodeProcessTool(root, { timeoutMs: 10_000, maxOutputBytes: 4 });
    expect(await run(both, "process.stdout.write('abcdef'); process.stderr.write('ghijkl')")).toMatchObject({
      stdout: "abcd",
      stderr: "ghij",
      stdoutTruncated: true,
      stderrTruncated: true,
    });
  });

  test("defaults: 32,768 bytes per stream", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const out = await run(tool, "process.stdout.write('a'.repeat(32768)); process.stderr.write('b'.repeat(32769))");
    expect(out).toMatchObject({ stdoutTruncated: false, stderrTruncated: true });
    expect(out.stdout).toHaveLength(32_768);
    expect(out.stderr).toBe("b".repeat(32_768));
  });
});

describe("node_process: timeout and cancellation", () => {
  test("timeout: NODE_PROCESS_TIMEOUT with partial output in details, recoverable through executeToolCall", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry([createNodeProcessTool(root, { timeoutMs: 1_000 })]);
    const result = await executeToolCall(
      registry,
      call("node_process", { source: "console.log('partial'); setInterval(() => {}, 1000)" }),
      new AbortController().signal,
    );
    expect(result.isError).toBe(true);
    const { error } = content(result);
    expect(error.code).toBe("NODE_PROCESS_TIMEOUT");
    expect(error.hint).toBeTruthy();
    expect(error.details).toMatchObject({ stdout: "partial\n", timedOut: true, signal: "SIGKILL", exitCode: null, timeoutMs: 1_000 });
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("the default timeout is 500 ms", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root);
    const err = await rejection(run(tool, "for (;;) {}"));
    expect((err as ToolError).code).toBe("NODE_PROCESS_TIMEOUT");
    expect((err as ToolError).details).toMatchObject({ timeoutMs: 500 });
    expect((err as { details: { durationMs: number } }).details.durationMs).toBeGreaterThanOrEqual(500);
  });

  test("an already-aborted signal rejects before anything is written or spawned", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 10_000 });
    const ac = new AbortController();
    ac.abort();
    const err = await rejection(run(tool, "require('fs').writeFileSync('ran', '')", [], ac.signal));
    expect(isAbortError(err)).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(await readdir(root)).toEqual([]);
    const registry = new ToolRegistry([tool]);
    await expect(
      executeToolCall(registry, call("node_process", { source: "require('fs').writeFileSync('ran', '')" }), ac.signal),
    ).rejects.toSatisfy(isAbortError);
    await new Promise((r) => setTimeout(r, 300));
    expect(await readdir(root)).toEqual([]);
  });

  test("an abort settles the call within 250 ms and removes the script", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 30_000 });
    const ac = new AbortController();
    const pending = run(tool, "process.stdout.write('ready\\n'); setInterval(() => {}, 1000)", [], ac.signal);
    await new Promise((r) => setTimeout(r, 400));
    const abortedAt = performance.now();
    ac.abort();
    const err = await rejection(pending);
    const took = performance.now() - abortedAt;
    expect(err).toBeInstanceOf(AbortError);
    expect((err as Error).name).toBe("AbortError");
    expect(took).toBeLessThan(250);
    expect(scriptLeftovers(root)).toEqual([]);
  });
});

describe("node_process: timeoutMs per call, clamped to the host's maxTimeoutMs", () => {
  test("a model's timeoutMs: 5000 is no longer refused as an unknown property", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry([createNodeProcessTool(root, { timeoutMs: 10_000 })]);
    const result = await executeToolCall(registry, { id: "1", name: "node_process", arguments: { source: "console.log('ok')", timeoutMs: 5000 } });
    expect(result.isError, result.content).toBe(false);
    expect(content(result)).toMatchObject({ exitCode: 0, stdout: "ok\n" });
    expect(content(result).note).toBeUndefined();
    const def = registry.definitions()[0]!;
    expect(Object.keys(def.parameters.properties!)).toContain("timeoutMs");
    for (const bad of [0, 1.5, "500", -1]) {
      expect(invalid(() => registry.get("node_process")!.validate({ source: "", timeoutMs: bad })).message).toBe("INVALID_ARGUMENTS_SHAPE");
    }
  });

  test("a per-call timeout below the host's applies", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 30_000 });
    const started = performance.now();
    const err = await rejection(tool.execute(tool.validate({ source: "for (;;) {}", timeoutMs: 700 }), ctx()));
    expect((err as ToolError).code).toBe("NODE_PROCESS_TIMEOUT");
    expect((err as ToolError).details).toMatchObject({ timeoutMs: 700, timedOut: true });
    expect(performance.now() - started).toBeLessThan(15_000);
    expect(scriptLeftovers(root)).toEqual([]);
  });

  test("a per-call timeout above the host's is clamped: by default a model cannot raise it", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 800 });
    const err = await rejection(tool.execute(tool.validate({ source: "for (;;) {}", timeoutMs: 5000 }), ctx()));
    expect((err as ToolError).code).toBe("NODE_PROCESS_TIMEOUT");
    expect((err as ToolError).details).toMatchObject({ timeoutMs: 800 });
    // A call that ends in time is told that its timeout was clamped.
    const roomy = createNodeProcessTool(root, { timeoutMs: 20_000 });
    const out = await roomy.execute(roomy.validate({ source: "", timeoutMs: 60_000 }), ctx());
    expect(out.note).toBe("timeoutMs 60000 is above this tool's maximum of 20000 ms and was clamped to 20000 ms");
  });

  test("a host's maxTimeoutMs lets a call ask for more, up to it", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 1, maxTimeoutMs: 60_000 });
    expect(tool.description).toContain("within 1 ms unless timeoutMs asks otherwise (at most 60000 ms)");
    const out = await tool.execute(tool.validate({ source: "console.log('done')", timeoutMs: 30_000 }), ctx());
    expect(out).toMatchObject({ exitCode: 0, stdout: "done\n" });
    expect(out.note).toBeUndefined();
    expect(() => createNodeProcessTool(root, { timeoutMs: 2_000, maxTimeoutMs: 1_000 })).toThrow(/timeoutMs \(2000\) is above maxTimeoutMs \(1000\)/);
    expect(() => createNodeProcessTool(root, { maxTimeoutMs: 0 })).toThrow(TypeError);
  });

  test("the clamp is the core's: a host that skips validate gets it too", async () => {
    const { root } = await tempWorkspace();
    const tool = createNodeProcessTool(root, { timeoutMs: 800 });
    const err = await rejection(tool.execute({ source: "for (;;) {}", timeoutMs: 5000 }, ctx()));
    expect((err as ToolError).details).toMatchObject({ timeoutMs: 800 });
    const bad = await rejection(tool.execute({ source: "require('fs').writeFileSync('ran', '')", timeoutMs: 0.5 }, ctx()));
    expect((bad as ToolError).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(await readdir(root)).toEqual([]);
  });
});

describe("node_process: registry", () => {
  test("createCodingTools passes the shared process timeout; the tool's own option wins", async () => {
    const { root } = await tempWorkspace();
    const shared = createCodingTools(root, { processes: { timeoutMs: 1_234 } }).find((t) => t.name === "node_process")!;
    expect(shared.description).toContain("within 1234 ms");
    const own = createCodingTools(root, { processes: { timeoutMs: 1_234 }, nodeProcess: { timeoutMs: 4_321 } }).find(
      (t) => t.name === "node_process",
    )!;
    expect(own.description).toContain("within 4321 ms");
    const err = await rejection(shared.execute({ source: "for (;;) {}" }, ctx()));
    expect((err as ToolError).details).toMatchObject({ timeoutMs: 1_234 });
  });

  test("createCodingTools includes node_process with a JSON Schema", async () => {
    const { root } = await tempWorkspace();
    const registry = new ToolRegistry(createCodingTools(root, { nodeProcess: { timeoutMs: 10_000 }, descriptions: "full" }));
    const def = registry.definitions().find((d) => d.name === "node_process")!;
    expect(def.parameters).toMatchObject({ type: "object", required: ["source"], additionalProperties: false });
    expect(def.description).toMatch(/32,768/);
    const result = await executeToolCall(
      registry,
      call("node_process", JSON.stringify({ source: "console.log(process.argv.slice(1).join('+'))", arguments: ["a", "b"] })),
      new AbortController().signal,
    );
    expect(result.isError).toBe(false);
    expect(content(result)).toMatchObject({ exitCode: 0, stdout: "a+b\n" });
  });
});
