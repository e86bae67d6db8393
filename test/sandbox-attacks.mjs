// Hostile children for the sandbox, as a table: one row per attack, one request builder per
// tool (node_process and run_command; a tool is one more entry in TOOLS and a builder per
// row; run_tests runs run_command's rows from inside a node:test file). Each row knows how to tell, from the host's side, whether the attack escaped, so every
// row runs with the sandbox off (it must escape: the test can fail) and on (it must not).
//
// Plain JavaScript so that the same table also runs in a separate, unprivileged host process
// (test/sandbox-runner.mjs, started as `nobody`).
import { createHash, randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, realpath, rm, writeFile } from "node:fs/promises";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

// A node:test file that runs an argv and stores what it printed in the workspace: how run_tests
// runs the run_command rows (the test process and what it starts are the runner's children).
const hostileTest = (argv) => `import { test } from "node:test";
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
test("hostile", () => {
  const argv = ${JSON.stringify(argv)};
  const r = spawnSync(argv[0], argv.slice(1), { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  writeFileSync("hostile-output.json", JSON.stringify({ status: r.status, output: (r.stdout ?? "") + (r.stderr ?? "") + (r.error ? String(r.error) : "") }));
});
`;

/** How to create and call each tool. `call(tool, request, ctx)` returns node_process's shape. */
export const TOOLS = {
  run_tests: {
    create: (lib, root, options) => lib.createRunTestsTool(root, { timeoutMs: 20_000, ...options }),
    call: async (tool, request, ctx) => {
      const signal = new AbortController().signal;
      await writeFile(join(ctx.root, "hostile.test.mjs"), hostileTest(request.argv));
      const ran = () => {
        try {
          return JSON.parse(readFileSync(join(ctx.root, "hostile-output.json"), "utf8"));
        } catch {
          return { status: null, output: "" };
        }
      };
      try {
        const out = await tool.execute(tool.validate({ runner: "node", args: ["hostile.test.mjs"] }), { signal });
        const r = ran();
        return { ...out, exitCode: out.exitCode === 0 ? r.status : out.exitCode, stdout: r.output, stderr: out.failed ? out.report : "" };
      } catch (err) {
        if (err?.details) return { ...err.details, stdout: ran().output, stderr: err.details.output ?? "" };
        throw err;
      }
    },
  },
  run_command: {
    create: (lib, root, options) => lib.createRunCommandTool(root, { timeoutMs: 20_000, ...options }),
    call: async (tool, request) => {
      const signal = new AbortController().signal;
      try {
        const out = await tool.execute(tool.validate(request), { signal });
        // The shape the rows read (node_process's).
        return { ...out, stdout: out.output, stderr: "" };
      } catch (err) {
        if (err?.details) return { ...err.details, stdout: err.details.output ?? "", stderr: "" };
        throw err;
      }
    },
  },
  node_process: {
    create: (lib, root, options) => lib.createNodeProcessTool(root, { timeoutMs: 20_000, ...options }),
    /** Runs `request` (from a row's builder); returns the output (the error's details on a timeout). */
    call: async (tool, request) => {
      const signal = new AbortController().signal;
      try {
        return await tool.execute(tool.validate(request), { signal });
      } catch (err) {
        if (err?.details) return err.details;
        throw err;
      }
    },
  },
};

// The prologue of every node_process attack: the context arrives as its only argument; each
// avenue (the script's own call, a shell, a Node child without permission flags) is tried and
// its result or error code recorded.
const PRE = `
const c = JSON.parse(process.argv[1]);
const cp = require("child_process"), fs = require("fs"), net = require("net");
const out = {};
const quiet = { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] };
const tryit = async (k, f) => { try { out[k] = String(await f()); } catch (e) { out[k] = "ERR " + (e.code || e.status || e.message); } };
const sh = (script, ...args) => cp.execFileSync("sh", ["-c", script, "sh", ...args], quiet);
const nodeChild = (code, ...args) => cp.execFileSync(process.execPath, ["-e", code, ...args], quiet);
const done = () => console.log(JSON.stringify(out));
`;

const connectSnippet = (target) => `new Promise((resolve, reject) => {
  const s = net.connect(${target});
  s.on("connect", () => { s.end(); resolve("CONNECTED"); });
  s.on("error", reject);
})`;

/**
 * The attacks. `needs(features)` says whether the sandbox here has the layer that stops it;
 * `escaped(ctx, output)` looks from the host's side.
 */
export const ATTACKS = [
  {
    name: "read a canary outside the workspace (a stand-in for ~/.ssh)",
    needs: (f) => f.landlockAbi !== null,
    run_command: (c) => ({ argv: ["sh", "-c", 'cat "$1/id_rsa"; node -e "process.stdout.write(require(\'fs\').readFileSync(process.argv[1], \'utf8\'))" "$1/id_rsa"; true', "sh", c.outside] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          await tryit("fs", () => fs.readFileSync(c.outside + "/id_rsa", "utf8"));
          await tryit("cat", () => cp.execFileSync("cat", [c.outside + "/id_rsa"], quiet));
          await tryit("node", () => nodeChild("process.stdout.write(require('fs').readFileSync(process.argv[1], 'utf8'))", c.outside + "/id_rsa"));
          done();
        })();`,
    }),
    escaped: (ctx, out) => out.stdout.includes(ctx.canary),
  },
  {
    name: "write outside the workspace",
    needs: (f) => f.landlockAbi !== null,
    run_command: (c) => ({ argv: ["sh", "-c", 'touch "$1/sh.txt"; mkdir "$1/dir"; cp /dev/null "$1/fs.txt"; node -e "require(\'fs\').writeFileSync(process.argv[1], \'x\')" "$1/node.txt"; true', "sh", c.outside] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          await tryit("fs", () => fs.writeFileSync(c.outside + "/fs.txt", "x"));
          await tryit("mkdir", () => fs.mkdirSync(c.outside + "/dir"));
          await tryit("sh", () => sh('echo x > "$1/sh.txt"', c.outside));
          await tryit("node", () => nodeChild("require('fs').writeFileSync(process.argv[1], 'x')", c.outside + "/node.txt"));
          done();
        })();`,
    }),
    escaped: (ctx) => ["fs.txt", "dir", "sh.txt", "node.txt"].some((n) => existsSync(join(ctx.outside, n))),
  },
  {
    name: "rename or link a file out of the workspace",
    needs: (f) => f.landlockAbi !== null,
    run_command: (c) => ({ argv: ["sh", "-c", 'touch r1 r2 r3; mv r1 "$1/r1"; ln r2 "$1/r2"; node -e "require(\'fs\').renameSync(\'r3\', process.argv[1])" "$1/r3"; true', "sh", c.outside] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          fs.writeFileSync("r1", "x"); fs.writeFileSync("r2", "x"); fs.writeFileSync("r3", "x");
          await tryit("fs", () => fs.renameSync("r1", c.outside + "/r1"));
          await tryit("mv", () => sh('mv r2 "$1/r2"', c.outside));
          await tryit("ln", () => sh('ln r3 "$1/r3"', c.outside));
          done();
        })();`,
    }),
    escaped: (ctx) => ["r1", "r2", "r3"].some((n) => existsSync(join(ctx.outside, n))),
  },
  {
    name: "connect to a TCP listener on loopback",
    needs: (f) => f.landlockAbi !== null && f.landlockAbi >= 4,
    run_command: (c) => ({ argv: ["node", "-e", "const s = require('net').connect(+process.argv[1], '127.0.0.1', () => { console.log('CONNECTED'); s.end(); }); s.on('error', (e) => console.log(e.code))", String(c.port)] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          await tryit("net", () => ${connectSnippet("c.port, '127.0.0.1'")});
          await tryit("node", () => nodeChild("const s = require('net').connect(+process.argv[1], '127.0.0.1', () => { console.log('CONNECTED'); s.end(); }); s.on('error', (e) => { console.log(e.code); })", String(c.port)));
          done();
        })();`,
    }),
    escaped: (ctx) => ctx.connections.tcp > 0,
  },
  {
    name: "connect to the host's abstract UNIX socket",
    needs: (f) => f.landlockAbi !== null && f.landlockAbi >= 6,
    run_command: (c) => ({ argv: ["node", "-e", "const s = require('net').connect({ path: '\\0' + process.argv[1] }, () => { console.log('CONNECTED'); s.end(); }); s.on('error', (e) => console.log(e.code))", c.abstract] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          await tryit("net", () => ${connectSnippet("{ path: '\\0' + c.abstract }")});
          done();
        })();`,
    }),
    escaped: (ctx) => ctx.connections.abstract > 0,
  },
  {
    name: "send a signal to the host process",
    needs: (f) => f.pidNamespace || (f.landlockAbi !== null && f.landlockAbi >= 6),
    run_command: (c) => ({ argv: ["sh", "-c", 'kill -WINCH "$1"; true', "sh", String(c.hostPid)] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          await tryit("kill", () => process.kill(c.hostPid, "SIGWINCH"));
          await tryit("sh", () => sh('kill -WINCH "$1"', String(c.hostPid)));
          done();
        })();`,
    }),
    escaped: async (ctx) => {
      // Delivery is asynchronous: give the host's event loop a moment.
      await new Promise((r) => setTimeout(r, 200));
      return ctx.signals > 0;
    },
  },
  {
    name: "read the host's /proc/<pid>/environ",
    needs: (f) => f.landlockAbi !== null || (f.pidNamespace && f.procMount),
    run_command: (c) => ({ argv: ["sh", "-c", 'sha256sum "/proc/$1/environ"; true', "sh", String(c.hostPid)] }),
    node_process: () => ({
      source: `${PRE}
        const hash = (s) => require("crypto").createHash("sha256").update(s, "latin1").digest("hex");
        (async () => {
          await tryit("fs", () => hash(fs.readFileSync("/proc/" + c.hostPid + "/environ", "latin1")));
          await tryit("cat", () => hash(cp.execFileSync("cat", ["/proc/" + c.hostPid + "/environ"], { ...quiet, encoding: "latin1" })));
          done();
        })();`,
    }),
    escaped: (ctx, out) => out.stdout.includes(ctx.environHash),
  },
  {
    // The namespace's init (PID 1 inside) shares the host's memory: its command line is the
    // host's (an `--api-key=...` there would leak). A root child is in group 0, which
    // `hidepid=invisible` exempts: the private /proc hides what the child cannot ptrace.
    name: "read the host's command line, status and environment through /proc/1 (the init) or /proc/<host>",
    needs: (f) => f.landlockAbi !== null || (f.pidNamespace && f.procMount),
    run_command: (c) => ({ argv: ["sh", "-c", 'for p in 1 "$1"; do sha256sum "/proc/$p/cmdline"; cat "/proc/$p/cmdline" | tr "\\0" " "; echo; grep -s "^Name" "/proc/$p/status"; sha256sum "/proc/$p/environ"; done; true', "sh", String(c.hostPid)] }),
    node_process: () => ({
      source: `${PRE}
        const hash = (s) => require("crypto").createHash("sha256").update(s, "latin1").digest("hex");
        (async () => {
          for (const p of [1, c.hostPid]) {
            for (const f of ["cmdline", "status", "environ"]) {
              await tryit(f + p, () => hash(fs.readFileSync("/proc/" + p + "/" + f, "latin1")));
              await tryit("cat-" + f + p, () => { const b = cp.execFileSync("cat", ["/proc/" + p + "/" + f], { ...quiet, encoding: "latin1" }); return hash(b) + " " + b.replace(/\0/g, " "); });
            }
          }
          done();
        })();`,
    }),
    escaped: (ctx, out) => out.stdout.includes(ctx.cmdlineHash) || out.stdout.includes(ctx.environHash) || (ctx.argvSecret !== null && out.stdout.includes(ctx.argvSecret)),
  },
  {
    name: "start a setsid grandchild (and a double fork) that tries to outlive the call",
    needs: (f) => f.pidNamespace,
    run_command: (c) => ({ argv: ["sh", "-c", 'export WC_MARK="$1"; (setsid sh -c "touch ready; exec sleep 30" </dev/null >/dev/null 2>&1 &); while [ ! -e ready ]; do sleep 0.01; done; echo forked', "sh", c.mark] }),
    node_process: () => ({
      source: `${PRE}
        (async () => {
          const env = { ...process.env, WC_MARK: c.mark };
          await tryit("setsid", () => { cp.spawn("sleep", ["30"], { detached: true, stdio: "ignore", env }).unref(); return "started"; });
          // The shell waits until the grandchild has left the group (else the group kill
          // at the end of the call could beat its setsid).
          await tryit("double-fork", () => sh('(WC_MARK="$1" setsid sh -c "touch ready; exec sleep 30" </dev/null >/dev/null 2>&1 &); while [ ! -e ready ]; do sleep 0.01; done; echo forked', c.mark));
          done();
        })();`,
    }),
    // The sleeps carry the marker in their environment.
    escaped: async (ctx) => {
      const until = Date.now() + 1_000;
      let alive = aliveWith(ctx.mark);
      while (alive.length > 0 && Date.now() < until) {
        await new Promise((r) => setTimeout(r, 20));
        alive = aliveWith(ctx.mark);
      }
      for (const pid of alive) {
        try {
          process.kill(pid, "SIGKILL");
        } catch {
          // gone
        }
      }
      return alive.length > 0;
    },
  },
];

/** Legitimate work that must still run confined: `check(output)` returns true when it did. */
export const LEGIT = [
  {
    name: "node spawns node (spawn and fork)",
    run_command: () => ({ argv: ["node", "-e", "const cp = require('child_process'); require('fs').writeFileSync('child.cjs', 'process.send ? process.send(6 * 7) : console.log(6 * 7)'); const spawned = cp.execFileSync(process.execPath, ['child.cjs'], { encoding: 'utf8' }).trim(); cp.fork('./child.cjs').on('message', (m) => console.log(spawned, m))"] }),
    node_process: () => ({
      source: `
        const cp = require("child_process");
        require("fs").writeFileSync("child.cjs", "process.send ? process.send(6 * 7) : console.log(6 * 7)");
        const spawned = cp.execFileSync(process.execPath, ["child.cjs"], { encoding: "utf8" }).trim();
        cp.fork("./child.cjs").on("message", (m) => console.log(spawned, m));`,
    }),
    check: (out) => out.exitCode === 0 && out.stdout === "42 42\n",
  },
  {
    name: "create, rename and delete files and directories in the workspace",
    run_command: () => ({ argv: ["sh", "-c", "mkdir -p a/b/c && echo one > a/b/c/f.txt && mv a/b/c/f.txt a/g.txt && mv a/b a/d && ln -s g.txt a/link && printf '%s %s ' \"$(cat a/link)\" \"$(ls a | tr '\\n' ',' | sed 's/,$//')\" && rm a/link && rmdir a/d/c && rm -r a && { test -e a && echo true || echo false; }"] }),
    node_process: () => ({
      source: `
        const fs = require("fs");
        fs.mkdirSync("a/b/c", { recursive: true });
        fs.writeFileSync("a/b/c/f.txt", "one");
        fs.renameSync("a/b/c/f.txt", "a/g.txt");
        fs.renameSync("a/b", "a/d");
        // Node's permission model refuses fs.symlink to the script itself; a child may link.
        require("child_process").execFileSync("ln", ["-s", "g.txt", "a/link"]);
        const seen = [fs.readFileSync("a/link", "utf8"), fs.readdirSync("a").sort().join(",")];
        fs.unlinkSync("a/link");
        fs.rmdirSync("a/d/c");
        fs.rmSync("a", { recursive: true });
        console.log(seen.join(" "), fs.existsSync("a"));`,
    }),
    check: (out) => out.exitCode === 0 && out.stdout === "one d,g.txt,link false\n",
  },
  {
    name: "git init and commit in the workspace",
    run_command: () => ({ argv: ["sh", "-c", "git init -q repo && echo hello > repo/a.txt && git -C repo add a.txt && git -C repo -c user.name=t -c user.email=t@example.com commit -q -m first && git -C repo log --format=%s"] }),
    node_process: () => ({
      source: `
        const cp = require("child_process"), fs = require("fs");
        const git = (...a) => cp.execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.com", ...a], { encoding: "utf8" });
        git("init", "-q", "repo");
        fs.writeFileSync("repo/a.txt", "hello");
        git("-C", "repo", "add", "a.txt");
        git("-C", "repo", "commit", "-q", "-m", "first");
        console.log(git("-C", "repo", "log", "--format=%s").trim());`,
    }),
    check: (out) => out.exitCode === 0 && out.stdout === "first\n",
  },
  {
    name: "npm --version",
    run_command: () => ({ argv: ["npm", "--version"] }),
    node_process: () => ({
      source: `console.log(require("child_process").execFileSync("npm", ["--version"], { encoding: "utf8" }).trim())`,
    }),
    check: (out) => out.exitCode === 0 && /^\d+\.\d+\.\d+\n$/.test(out.stdout),
  },
];

// run_tests runs every run_command row from a test file.
for (const row of [...ATTACKS, ...LEGIT]) {
  if (row.run_command) row.run_tests = row.run_command;
}

/** Live processes whose environment or command line contains `mark`. */
export function aliveWith(mark) {
  const found = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "latin1");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      for (const file of ["environ", "cmdline"]) {
        if (readFileSync(`/proc/${name}/${file}`, "latin1").includes(mark)) {
          found.push(Number(name));
          break;
        }
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/**
 * A fresh setting for one run: a temporary parent with the workspace ROOT and an `outside`
 * directory holding a canary, a TCP listener and an abstract UNIX socket that count
 * connections, and a SIGWINCH counter on this (the host) process. `close()` removes it all.
 */
export async function setting() {
  const parent = await realpath(await mkdtemp(join(tmpdir(), "workcell-sandbox-test-")));
  const root = join(parent, "ROOT");
  const outside = join(parent, "outside");
  await mkdir(root);
  await mkdir(outside);
  const canary = `canary-${randomBytes(8).toString("hex")}`;
  await writeFile(join(outside, "id_rsa"), canary);
  const connections = { tcp: 0, abstract: 0 };
  const tcp = createServer((s) => {
    connections.tcp++;
    s.destroy();
  });
  await new Promise((r) => tcp.listen(0, "127.0.0.1", r));
  const abstract = `workcell-test-${randomBytes(8).toString("hex")}`;
  const unix = createServer((s) => {
    connections.abstract++;
    s.destroy();
  });
  await new Promise((r) => unix.listen({ path: `\0${abstract}` }, r));
  const onSignal = () => ctx.signals++;
  const ctx = {
    parent,
    root,
    outside,
    canary,
    connections,
    signals: 0,
    port: tcp.address().port,
    abstract,
    hostPid: process.pid,
    mark: `wc-mark-${randomBytes(8).toString("hex")}`,
    environHash: createHash("sha256").update(readFileSync("/proc/self/environ", "latin1"), "latin1").digest("hex"),
    cmdlineHash: createHash("sha256").update(readFileSync("/proc/self/cmdline", "latin1"), "latin1").digest("hex"),
    // A secret in the host's own argv (test/sandbox-runner.mjs is started with one).
    argvSecret: process.argv.find((a) => a.startsWith("--api-key="))?.slice("--api-key=".length) ?? null,
    close: async () => {
      process.off("SIGWINCH", onSignal);
      await new Promise((r) => tcp.close(r));
      await new Promise((r) => unix.close(r));
      await rm(parent, { recursive: true, force: true });
    },
  };
  process.on("SIGWINCH", onSignal);
  return ctx;
}

/** What the child was given: the parts of the context it may know. */
function childContext(ctx) {
  const { outside, port, abstract, hostPid, mark } = ctx;
  return JSON.stringify({ outside, port, abstract, hostPid, mark });
}

/**
 * On a simulated kernel without user or PID namespaces the protected paths (`.git`) cannot be
 * made read-only, and "auto" refuses to run unless the host protects nothing for processes:
 * those rows turn it off, as such a host would.
 */
function withoutNamespaceProtect(options) {
  const f = options?.sandboxFeatures;
  if (options?.protect === undefined && (f?.pidNamespace === false || f?.userNamespace === false)) return { ...options, protect: [] };
  return options;
}

/**
 * Runs one attack through one tool with `options` (sandbox mode...). Returns whether it
 * escaped, the output, and what is left in the workspace of the tool's own temporary files.
 */
export async function runAttack(lib, toolName, attack, options) {
  const ctx = await setting();
  try {
    const tool = TOOLS[toolName].create(lib, ctx.root, withoutNamespaceProtect(options));
    const request = attack[toolName](ctx);
    if (toolName === "node_process") request.arguments = [childContext(ctx)];
    const output = await TOOLS[toolName].call(tool, request, ctx);
    const escaped = await attack.escaped(ctx, output);
    const leftovers = (await readdir(ctx.root)).filter((n) => n.startsWith(".workcell-"));
    return { escaped, output, leftovers };
  } finally {
    await ctx.close();
  }
}

/** Runs one legitimate task; returns whether it worked and the output. */
export async function runLegit(lib, toolName, task, options) {
  const ctx = await setting();
  try {
    const tool = TOOLS[toolName].create(lib, ctx.root, withoutNamespaceProtect(options));
    const output = await TOOLS[toolName].call(tool, task[toolName](ctx), ctx);
    return { ok: task.check(output), output };
  } finally {
    await ctx.close();
  }
}
