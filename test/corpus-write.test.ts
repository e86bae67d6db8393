// The write cases of the shared path-confinement corpora (../shared/corpus/ from the repository
// root), run against the real write_file tool. Each case gets a fresh parent/ROOT; canaries sit
// next to ROOT, and the whole tree outside ROOT is compared before and after every case.
//
// Verdicts, and how this project reads them:
// - Our grammar is stricter than the corpora's sources: any path it refuses (`..` anywhere, an
//   absolute or Windows form, a reserved name, a trailing dot or space, ...) must be refused as
//   TOOL_ARGUMENTS_INVALID / INVALID_RELATIVE_PATH, whatever the case expected. write_file also
//   refuses a path ending in `/` (it names a directory); that is only accepted where the case
//   expects a refusal.
// - ok:<p>: the call succeeds and ROOT/<p> holds the content (a final symlink stays a link).
// - escape: PATH_ESCAPES_WORKSPACE. error: any other refusal (not an escape, not "not found").
// - notexist: contract section 7 creates missing parent directories, so such a write succeeds
//   and creates the file at the path given (counted separately in the summary).
// Whatever the verdict, nothing outside ROOT may be created or changed, no .workcell-tmp-*
// may remain, and a refused call leaves ROOT as it was.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, lstat, mkdir, readFile, readlink, symlink, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, test } from "vitest";
import { ToolError, createWriteTool, normalizePath } from "../dist/index.js";
import { ctx, tempWorkspace, walk } from "./helpers.js";

interface SetupEntry {
  kind: "dir" | "file" | "symlink" | "socket" | "fifo";
  path: string;
  target?: string;
  content?: string;
  mode?: number | string;
}

interface Case {
  id: string;
  name: string;
  source: string;
  setup: SetupEntry[];
  open: string;
  op?: string;
  expect: string;
  platforms: string[];
  tags?: string[];
  accept_also?: string[];
  root_override?: string;
  note?: string;
}

const corpusDir = fileURLToPath(new URL("../../shared/corpus/", import.meta.url));
const corpora = ["go-root-cases.json", "capstd-cases.json"];
const platformNames = new Set(["all", "unix", process.platform, process.platform === "darwin" ? "macos" : "posix"]);

type Verdict = "grammar" | "ok" | "notexist-created" | "escape" | "error";
const summary = new Map<string, Record<string, number>>();
function count(corpus: string, key: string): void {
  const row = summary.get(corpus) ?? {};
  row[key] = (row[key] ?? 0) + 1;
  summary.set(corpus, row);
}

/** Our grammar's verdict, computed with the shared grammar (normalizePath) plus write's `/` rule. */
function grammarRefuses(open: string): "grammar" | "trailing-slash" | undefined {
  try {
    normalizePath(open);
  } catch (err) {
    if (err instanceof ToolError && err.code === "TOOL_ARGUMENTS_INVALID") return "grammar";
    throw err;
  }
  const last = open.split("/").pop()!;
  if (open.includes("/") && (last === "" || last === ".")) return "trailing-slash";
  return undefined;
}

async function setUp(root: string, entries: SetupEntry[]): Promise<Server[]> {
  const servers: Server[] = [];
  for (const e of entries) {
    const p = join(root, e.path);
    await mkdir(dirname(p), { recursive: true });
    switch (e.kind) {
      case "dir":
        await mkdir(p, { recursive: true });
        break;
      case "file":
        await writeFile(p, e.content ?? e.path);
        break;
      case "symlink":
        await symlink(e.target!.replaceAll("$ABS", root), p);
        break;
      case "fifo":
        execFileSync("mkfifo", [p]);
        break;
      case "socket": {
        const server = createServer();
        await new Promise<void>((resolve) => server.listen(p, resolve));
        servers.push(server);
        break;
      }
    }
    if (e.mode !== undefined && e.kind !== "symlink") {
      await chmod(p, typeof e.mode === "string" ? parseInt(e.mode, 8) : e.mode);
    }
  }
  return servers;
}

/** Canaries next to ROOT: names a misdirected write would most likely hit. */
async function plantCanaries(parent: string): Promise<void> {
  for (const name of ["target", "s_target", "new", "file", "outside.txt"]) {
    await writeFile(join(parent, name), `canary ${name}\n`).catch(() => undefined);
  }
  await mkdir(join(parent, "CANARY_DIR"), { recursive: true });
  await writeFile(join(parent, "CANARY_DIR/target"), "canary dir\n");
}

/** Every entry beneath `dir` with its type, mode and content or link text; ROOT excluded on request. */
async function snapshot(dir: string, excludeRoot: boolean): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const rel of await walk(dir)) {
    if (excludeRoot && (rel === "ROOT" || rel.startsWith("ROOT/"))) continue;
    const p = join(dir, rel);
    const s = await lstat(p);
    if (s.isSymbolicLink()) out[rel] = `link:${await readlink(p)}`;
    else if (s.isDirectory()) out[rel] = `dir:${(s.mode & 0o7777).toString(8)}`;
    else if (s.isFile()) out[rel] = `file:${(s.mode & 0o7777).toString(8)}:${s.size}:${(await readFile(p)).toString("base64")}`;
    else out[rel] = `other:${s.mode.toString(8)}`;
  }
  return out;
}

async function temps(dir: string): Promise<string[]> {
  return (await walk(dir)).filter((p) => p.split("/").pop()!.startsWith(".workcell-tmp-"));
}

function acceptedCodes(verdict: string): Set<string> | "any-refusal" {
  if (verdict === "escape") return new Set(["PATH_ESCAPES_WORKSPACE"]);
  if (verdict === "notexist") return new Set(["FILE_NOT_FOUND"]);
  return "any-refusal";
}

function codeMatches(code: string, verdicts: string[]): boolean {
  return verdicts.some((v) => {
    const accepted = acceptedCodes(v);
    return accepted === "any-refusal" ? !["PATH_ESCAPES_WORKSPACE", "FILE_NOT_FOUND"].includes(code) : accepted.has(code);
  });
}

async function runCase(corpus: string, c: Case): Promise<void> {
  const { parent, root } = await tempWorkspace();
  await plantCanaries(parent);
  const servers = await setUp(root, c.setup);
  try {
    const outsideBefore = await snapshot(parent, true);
    const rootBefore = await snapshot(root, false);
    const open = c.open.replaceAll("$ABS", root);
    const content = `written by ${c.id}\n`;
    const tool = createWriteTool(root);
    const outcome = await (async () => tool.execute(tool.validate({ path: open, content }), ctx()))()
      .then((output) => ({ output, error: undefined as ToolError | undefined }))
      .catch((error: unknown) => {
        if (!(error instanceof ToolError)) throw error;
        return { output: undefined, error };
      });
    const what = `${c.id} (${c.name}) open=${JSON.stringify(c.open)} expect=${c.expect}`;
    const got = outcome.error ? `${outcome.error.code}/${outcome.error.message}` : `ok ${JSON.stringify(outcome.output)}`;

    let verdict: Verdict;
    const strict = grammarRefuses(open);
    if (strict) {
      verdict = "grammar";
      if (strict === "trailing-slash") {
        // Only where the case itself expects a refusal.
        expect(c.expect.startsWith("ok:"), `${what}: refused for its trailing / though the case expects success`).toBe(false);
      }
      expect([outcome.error?.code, outcome.error?.message], `${what}: got ${got}`).toEqual(["TOOL_ARGUMENTS_INVALID", "INVALID_RELATIVE_PATH"]);
    } else if (c.expect.startsWith("ok:") || c.expect === "notexist") {
      verdict = c.expect === "notexist" ? "notexist-created" : "ok";
      const where = c.expect === "notexist" ? normalizePath(open) : c.expect.slice(3);
      expect(outcome.error, `${what}: got ${got}`).toBeUndefined();
      expect(outcome.output).toEqual({
        path: normalizePath(open),
        bytes: Buffer.byteLength(content),
        created: !rootBefore[where],
      });
      expect((await lstat(join(root, where))).isFile(), `${what}: ROOT/${where} is not a regular file`).toBe(true);
      expect(await readFile(join(root, where), "utf8"), what).toBe(content);
      // A final-component symlink is written through and stays a link.
      const given = normalizePath(open);
      if (rootBefore[given]?.startsWith("link:")) {
        expect((await lstat(join(root, given))).isSymbolicLink(), `${what}: the link was replaced`).toBe(true);
      }
    } else {
      verdict = c.expect === "escape" ? "escape" : "error";
      expect(outcome.error, `${what}: got ${got}`).toBeDefined();
      const verdicts = [c.expect, ...(c.accept_also ?? [])];
      expect(codeMatches(outcome.error!.code, verdicts), `${what}: got ${got}`).toBe(true);
      expect(outcome.error!.hint, `${what}: no hint`).toBeTruthy();
      expect(await snapshot(root, false), `${what}: a refused write changed ROOT`).toEqual(rootBefore);
    }
    expect(await snapshot(parent, true), `${what}: something outside ROOT changed`).toEqual(outsideBefore);
    expect(await temps(parent), `${what}: temporary files left`).toEqual([]);
    count(corpus, verdict);
  } finally {
    for (const s of servers) await new Promise((resolve) => s.close(resolve));
  }
}

for (const file of corpora) {
  const path = join(corpusDir, file);
  if (!existsSync(path)) {
    console.warn(`corpus-write: ${path} is absent; its write cases are skipped (the corpora live in ../shared/corpus/ next to the repository)`);
    describe.skip(`corpus ${file} (absent)`, () => {
      test("absent", () => {});
    });
    continue;
  }
  const corpus = JSON.parse(readFileSync(path, "utf8")) as { cases: Case[] };
  const writes = corpus.cases.filter((c) => c.op === "write");
  describe(`corpus ${file}: write cases`, () => {
    test("has write cases", () => {
      expect(writes.length).toBeGreaterThan(0);
    });
    for (const c of writes) {
      const applies = c.platforms.some((p) => platformNames.has(p));
      const grammarOnly = !applies && grammarRefuses(c.open.replaceAll("$ABS", "/abs")) !== undefined;
      if (c.root_override || (!applies && !grammarOnly)) {
        test.skip(`${c.id} ${c.name} (${c.root_override ? "root_override" : `platforms ${c.platforms.join(",")}`})`, () => {});
        count(file, "skipped");
        continue;
      }
      // The grammar is platform-independent: a refused path is refused on every platform.
      test(`${c.id} ${c.name}`, () => runCase(file, c));
    }
  });
}

afterAll(() => {
  const parts = [...summary.entries()].map(
    ([file, row]) =>
      `${file}: ${Object.entries(row)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ")}`,
  );
  console.log(`corpus-write summary: ${parts.join("; ") || "no corpus found"}`);
});
