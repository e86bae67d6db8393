// A host SIGKILLed in the middle of write_file or apply_patch: every file is whole (its old or
// its new content), and no `.workcell-tmp-*` entry outlives the next call in that directory
// (contract §9). The host is a real Node process using the built package, killed at random
// moments many times (a bounded number).
import { spawn } from "node:child_process";
import { mkdir, readFile, readdir, writeFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { expect, test } from "vitest";
import { createApplyPatchTool, createWriteTool } from "../dist/index.js";
import { ctx, tempWorkspace } from "./helpers.js";

const PKG = pathToFileURL(resolve("dist/index.js")).href;
const BIG = 4 * 1024 * 1024;
const WRITE_FILES = 4;
const PATCH_FILES = 50;
const PATCH_LINES = 40;

/** The two versions of each file: every file must be one of them after any kill. */
const bigVersion = (i: number, v: number) => `${v ? "B" : "A"}${i}`.repeat(BIG / 2);
const patchLines = (i: number, v: number) =>
  Array.from({ length: PATCH_LINES }, (_, k) => `line ${k} of file ${i}: version ${v ? "B" : "A"}`);
const patchVersion = (i: number, v: number) => patchLines(i, v).join("\n") + "\n";

/** The host: writes or patches in a loop until killed; prints "ready" after its first call. */
const HOST = `
import { readFileSync } from "node:fs";
import { join } from "node:path";
const { createApplyPatchTool, createWriteTool } = await import(process.argv[2]);
const [root, mode] = [process.argv[3], process.argv[4]];
const ctx = { signal: new AbortController().signal };
const BIG = ${BIG}, WRITE_FILES = ${WRITE_FILES}, PATCH_FILES = ${PATCH_FILES}, PATCH_LINES = ${PATCH_LINES};
const bigVersion = ${bigVersion.toString()};
const patchLines = ${patchLines.toString()};
let first = true;
const ready = () => { if (first) { first = false; process.stdout.write("ready\\n"); } };
if (mode === "write") {
  const tool = createWriteTool(root, { maxContentBytes: 16 * 1024 * 1024 });
  const contents = [0, 1].map((v) => Array.from({ length: WRITE_FILES }, (_, i) => bigVersion(i, v)));
  for (let n = 0; ; n++) {
    await Promise.all(contents[n % 2].map((content, i) => tool.execute({ path: "w/f" + i + ".txt", content }, ctx)));
    ready();
  }
} else {
  const tool = createApplyPatchTool(root);
  for (;;) {
    let patch = "*** Begin Patch\\n";
    for (let i = 0; i < PATCH_FILES; i++) {
      const path = "p/f" + i + ".txt";
      const now = readFileSync(join(root, path), "utf8").includes("version B") ? 1 : 0;
      patch += "*** Update File: " + path + "\\n@@\\n";
      patch += patchLines(i, now).map((l) => "-" + l).join("\\n") + "\\n";
      patch += patchLines(i, 1 - now).map((l) => "+" + l).join("\\n") + "\\n";
    }
    await tool.execute({ patch: patch + "*** End Patch" }, ctx);
    ready();
  }
}
`;

async function tempsUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.name.startsWith(".workcell-tmp-")) out.push(join(dir, e.name));
    if (e.isDirectory()) out.push(...(await tempsUnder(join(dir, e.name))));
  }
  return out;
}

/** Starts the host, waits for its first call to finish, kills it at a random moment after. */
async function killHostOnce(script: string, root: string, mode: string): Promise<void> {
  const child = spawn(process.execPath, [script, PKG, root, mode], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise<NodeJS.Signals | null>((res) => child.on("exit", (_code, signal) => res(signal)));
  await new Promise<void>((res, rej) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += d;
      if (out.includes("ready")) res();
    });
    child.on("exit", (code) => rej(new Error(`host exited early (${code})`)));
  });
  await new Promise((r) => setTimeout(r, Math.random() * 150));
  child.kill("SIGKILL");
  expect(await exited).toBe("SIGKILL");
}

async function expectWhole(root: string, dir: string, n: number, version: (i: number, v: number) => string) {
  for (let i = 0; i < n; i++) {
    const text = await readFile(join(root, dir, `f${i}.txt`), "utf8");
    expect(text === version(i, 0) || text === version(i, 1), `${dir}/f${i}.txt is whole`).toBe(true);
  }
}

test("a host killed while writing big files leaves every file whole and no temp after the next write", async () => {
  const { parent, root } = await tempWorkspace();
  const script = join(parent, "host.mjs");
  await writeFile(script, HOST);
  await mkdir(join(root, "w"));
  for (let i = 0; i < WRITE_FILES; i++) await writeFile(join(root, "w", `f${i}.txt`), bigVersion(i, 0));
  for (let kill = 0; kill < 10; kill++) {
    await killHostOnce(script, root, "write");
    await expectWhole(root, "w", WRITE_FILES, bigVersion);
  }
  // The next call in that directory sweeps whatever a killed host had named.
  await createWriteTool(root).execute({ path: "w/after.txt", content: "x" }, ctx());
  expect(await tempsUnder(root)).toEqual([]);
}, 120_000);

test("a host killed mid-patch leaves every file whole, and its staged names are swept by the next call", async () => {
  const { parent, root } = await tempWorkspace();
  const script = join(parent, "host.mjs");
  await writeFile(script, HOST);
  await mkdir(join(root, "p"));
  for (let i = 0; i < PATCH_FILES; i++) await writeFile(join(root, "p", `f${i}.txt`), patchVersion(i, 0));
  // Kill until some kills landed while names were staged (the kept old contents exist for the
  // whole install), at most 40 kills.
  let killsThatLeftNames = 0;
  for (let kill = 0; kill < 40 && (kill < 10 || killsThatLeftNames < 3); kill++) {
    await killHostOnce(script, root, "patch");
    await expectWhole(root, "p", PATCH_FILES, patchVersion);
    // Without the sweep these would stay: the check below would fail.
    if ((await tempsUnder(root)).length > 0) killsThatLeftNames++;
  }
  expect(killsThatLeftNames).toBeGreaterThan(0);
  const now = (await readFile(join(root, "p/f0.txt"), "utf8")).includes("version B") ? 1 : 0;
  const patch =
    "*** Begin Patch\n*** Update File: p/f0.txt\n@@\n" +
    patchLines(0, now).map((l) => "-" + l).join("\n") + "\n" +
    patchLines(0, 1 - now).map((l) => "+" + l).join("\n") + "\n*** End Patch";
  await createApplyPatchTool(root).execute({ patch }, ctx());
  expect(await tempsUnder(root)).toEqual([]);
  await expectWhole(root, "p", PATCH_FILES, patchVersion);
}, 180_000);
