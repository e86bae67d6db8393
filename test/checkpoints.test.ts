// Checkpoints (contract §19) through the package: the §19 shapes and codes, the options
// checked at creation, cancellation, a store that survives a host SIGKILLed at random
// moments, and a second host process that lists and rewinds.
import { spawn } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, test } from "vitest";
import { ToolRegistry, createCheckpoints, createCodingTools, executeToolCall, type ApprovalRequest } from "../dist/index.js";
import { main } from "../dist/cli.js";
import { call, content, ctx, rejection, tempWorkspace } from "./helpers.js";

const PKG = pathToFileURL(resolve("dist/index.js")).href;

async function setup(): Promise<{ parent: string; root: string; storeDir: string }> {
  const { parent, root } = await tempWorkspace();
  await writeFile(join(root, "a.txt"), "alpha\n");
  await writeFile(join(root, "b.txt"), "bravo\n");
  return { parent, root, storeDir: join(parent, "store") };
}

/** Runs a Node script with the package's URL and `args`; resolves to its stdout. */
function node(script: string, args: string[]): Promise<string> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [script, PKG, ...args], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    child.on("exit", (code) => (code === 0 ? res(out) : rej(new Error(`exited ${code}: ${out}`))));
  });
}

describe("createCheckpoints", () => {
  test("create, diff and rewind with the §19 shapes", async () => {
    const { root, storeDir } = await setup();
    const cps = createCheckpoints(root, { storeDir });
    const created = await cps.create({ label: "start" });
    expect(created).toMatchObject({ label: "start", files: 2, bytes: 12, notKept: [], dropped: [] });
    expect(created.id).toMatch(/^[0-9a-f]{12}-[0-9a-f]{8}$/);
    expect(typeof created.createdAt).toBe("number");
    await writeFile(join(root, "a.txt"), "alpha changed\n");
    await writeFile(join(root, "c.txt"), "charlie\n");
    const d = await cps.diff(created.id);
    expect(d.files).toEqual([
      { path: "a.txt", action: "modified" },
      { path: "c.txt", action: "added" },
    ]);
    expect(d.diff).toContain("+alpha changed");
    expect(d.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(d.truncated).toBeUndefined();
    const preview = await cps.diff(created.id, { reverse: true });
    expect(preview.hash).toBe(d.hash);
    expect(preview.diff).toContain("-alpha changed");
    const out = await cps.rewind(created.id, { expectedHash: d.hash });
    expect(out.files).toEqual([
      { path: "a.txt", action: "modified" },
      { path: "c.txt", action: "deleted" },
    ]);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("alpha\n");
    expect((await cps.diff(created.id)).files).toEqual([]);
    expect(await cps.list()).toEqual([{ id: created.id, label: "start", createdAt: created.createdAt, files: 2, bytes: 12 }]);
  });

  test("a stale hash is TARGET_CHANGED and an unknown or dropped id CHECKPOINT_NOT_FOUND", async () => {
    const { root, storeDir } = await setup();
    const cps = createCheckpoints(root, { storeDir });
    const { id } = await cps.create();
    await writeFile(join(root, "a.txt"), "one\n");
    const d = await cps.diff(id);
    await writeFile(join(root, "a.txt"), "two\n");
    const stale = await rejection(cps.rewind(id, { expectedHash: d.hash }));
    expect(stale).toMatchObject({ code: "TARGET_CHANGED" });
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("two\n");
    await cps.drop(id);
    for (const bad of [id, "nope", "../x"]) {
      const err = await rejection(cps.diff(bad));
      expect(err).toMatchObject({ code: "CHECKPOINT_NOT_FOUND", hint: expect.stringContaining("list") });
    }
  });

  test("options are checked at creation: a TypeError naming the option", async () => {
    const { root, storeDir } = await setup();
    expect(() => createCheckpoints(root, { storeDir: join(root, "store") })).toThrow(TypeError);
    expect(() => createCheckpoints(root, { storeDir: join(root, "store") })).toThrow(/storeDir/);
    expect(() => createCheckpoints(root, { storeDir, exclude: ["ok", "["] })).toThrow(/exclude\[1\]/);
    expect(() => createCheckpoints(root, { storeDir, maxBytes: 0 })).toThrow(/maxBytes/);
    expect(() => createCheckpoints(root, { storeDir, maxFileBytes: -1 })).toThrow(/maxFileBytes/);
    expect(() => createCheckpoints(root, { storeDir, protect: "x" as never })).toThrow(/protect/);
    expect(() => createCheckpoints(root, { storDir: storeDir } as never)).toThrow(/storDir.*storeDir/);
    // A directory that is neither empty nor a store is never used.
    expect(() => createCheckpoints(root, { storeDir: "/" })).toThrow(TypeError);
  });

  test("an aborted signal rejects with an AbortError and changes nothing", async () => {
    const { root, storeDir } = await setup();
    const cps = createCheckpoints(root, { storeDir });
    const { id } = await cps.create();
    await writeFile(join(root, "a.txt"), "changed\n");
    const d = await cps.diff(id);
    const signal = AbortSignal.abort();
    expect(await rejection(cps.create({}, { signal }))).toMatchObject({ name: "AbortError" });
    expect(await rejection(cps.rewind(id, { expectedHash: d.hash }, { signal }))).toMatchObject({ name: "AbortError" });
    expect((await cps.list()).length).toBe(1);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("changed\n");
    cps.close();
    await expect(cps.list()).rejects.toThrow(/closed/);
  });

  test("a second host process lists and rewinds", async () => {
    const { parent, root, storeDir } = await setup();
    const cps = createCheckpoints(root, { storeDir });
    const { id } = await cps.create({ label: "first host" });
    await writeFile(join(root, "a.txt"), "changed by someone\n");
    const script = join(parent, "second.mjs");
    await writeFile(
      script,
      `const { createCheckpoints } = await import(process.argv[2]);
const cps = createCheckpoints(process.argv[3], { storeDir: process.argv[4] });
const list = await cps.list();
const d = await cps.diff(list[0].id);
const r = await cps.rewind(list[0].id, { expectedHash: d.hash });
process.stdout.write(JSON.stringify({ list, files: r.files }));`,
    );
    const out = JSON.parse(await node(script, [root, storeDir]));
    expect(out.list).toMatchObject([{ id, label: "first host" }]);
    expect(out.files).toEqual([{ path: "a.txt", action: "modified" }]);
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("alpha\n");
  });

  test("a store survives a host SIGKILLed at random moments", async () => {
    const { parent, root, storeDir } = await setup();
    await mkdir(join(root, "d"));
    for (let i = 0; i < 200; i++) await writeFile(join(root, "d", `f${i}.txt`), `file ${i}\n`.repeat(50));
    const script = join(parent, "host.mjs");
    // Changes files and creates checkpoints in a loop (the oldest dropped past maxBytes);
    // "ready" after the first one.
    await writeFile(
      script,
      `import { writeFileSync } from "node:fs";
const { createCheckpoints } = await import(process.argv[2]);
const [root, storeDir] = [process.argv[3], process.argv[4]];
const cps = createCheckpoints(root, { storeDir, maxBytes: 400000 });
for (let n = 0; ; n++) {
  for (let i = 0; i < 20; i++) writeFileSync(root + "/d/f" + ((n * 20 + i) % 200) + ".txt", ("run " + n + " " + i + "\\n").repeat(40));
  await cps.create({ label: "run " + n });
  if (n === 0) process.stdout.write("ready\\n");
}`,
    );
    for (let kill = 0; kill < 10; kill++) {
      const child = spawn(process.execPath, [script, PKG, root, storeDir], { stdio: ["ignore", "pipe", "inherit"] });
      const exited = new Promise<NodeJS.Signals | null>((res) => child.on("exit", (_c, s) => res(s)));
      await new Promise<void>((res, rej) => {
        let out = "";
        child.stdout!.on("data", (d) => {
          out += d;
          if (out.includes("ready")) res();
        });
        child.on("exit", (code) => rej(new Error(`host exited early (${code})`)));
      });
      await new Promise((r) => setTimeout(r, Math.random() * 300));
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      // Every checkpoint listed is whole (list reads each manifest's header; a damaged one
      // would be IO_ERROR), and the oldest and newest diff: each object they name is there.
      const cps = createCheckpoints(root, { storeDir, maxBytes: 400000 });
      const list = await cps.list();
      expect(list.length).toBeGreaterThan(0);
      for (const c of [list[0]!, ...list.slice(-2)]) await cps.diff(c.id);
    }
    const cps = createCheckpoints(root, { storeDir, maxBytes: 400000 });
    const first = (await cps.list())[0]!;
    const d = await cps.diff(first.id);
    await cps.rewind(first.id, { expectedHash: d.hash });
    expect((await cps.diff(first.id)).files).toEqual([]);
  }, 180_000);

  test("the model's tools: the rewind asks under approvalFor.write with the diff it applies", async () => {
    const { root, storeDir } = await setup();
    const asked: ApprovalRequest[] = [];
    const tools = createCodingTools(root, {
      checkpoints: { storeDir },
      approvalFor: { write: "ask" },
      approve: (request) => {
        asked.push(request);
        return true;
      },
    });
    const registry = new ToolRegistry(tools);
    for (const name of ["checkpoint", "list_checkpoints", "diff_checkpoint", "rewind_checkpoint"]) expect(registry.get(name)).toBeDefined();
    expect(registry.get("checkpoint")!.effect).toBe("read");
    expect(registry.get("diff_checkpoint")!.effect).toBe("read");
    expect(registry.get("rewind_checkpoint")!.effect).toBe("write");
    const signal = ctx().signal;
    const created = content(await executeToolCall(registry, call("checkpoint", { label: "before" }), signal));
    await writeFile(join(root, "a.txt"), "alpha changed\n");
    const listed = content(await executeToolCall(registry, call("list_checkpoints", {}), signal));
    expect(listed.checkpoints).toMatchObject([{ id: created.id, label: "before" }]);
    const d = content(await executeToolCall(registry, call("diff_checkpoint", { id: created.id }), signal));
    expect(d.files).toEqual([{ path: "a.txt", action: "modified" }]);
    expect(asked).toEqual([]);
    const preview = await createCheckpoints(root, { storeDir }).diff(created.id, { reverse: true });
    const r = await executeToolCall(registry, call("rewind_checkpoint", { id: created.id, expectedHash: d.hash }), signal);
    expect(r.isError, r.content).toBe(false);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.tool).toBe("rewind_checkpoint");
    expect(asked[0]!.diff).toBe(preview.diff);
    expect(asked[0]!.diff).toContain("-alpha changed");
    expect(await readFile(join(root, "a.txt"), "utf8")).toBe("alpha\n");
    const unknown = content(await executeToolCall(registry, call("diff_checkpoint", { id: "nope" }), signal));
    expect(unknown.error).toMatchObject({ code: "CHECKPOINT_NOT_FOUND" });
  });

  test("workcell checkpoints create, list, diff and rewind", async () => {
    const { root, storeDir } = await setup();
    const printed: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    process.stdout.write = ((chunk: string) => {
      printed.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    try {
      expect(await main(["checkpoints", "create", "--root", root, "--store", storeDir, "--label", "cli"])).toBe(0);
      const id = printed.join("").split(/\s+/)[0]!;
      await writeFile(join(root, "b.txt"), "bravo changed\n");
      printed.length = 0;
      expect(await main(["checkpoints", "list", "--root", root, "--store", storeDir])).toBe(0);
      expect(printed.join("")).toContain(id);
      printed.length = 0;
      expect(await main(["checkpoints", "diff", id, "--root", root, "--store", storeDir])).toBe(0);
      const hash = /hash ([0-9a-f]{64})/.exec(printed.join(""))![1]!;
      expect(printed.join("")).toContain("modified b.txt");
      expect(await main(["checkpoints", "rewind", id, "--hash", hash, "--root", root, "--store", storeDir])).toBe(0);
    } finally {
      process.stdout.write = write;
    }
    expect(await readFile(join(root, "b.txt"), "utf8")).toBe("bravo\n");
  });
});
