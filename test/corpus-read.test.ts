// Every read case of the Go os.Root and cap-std path-confinement tables, run against the real
// read_file tool. Where workcell's grammar is stricter (any `..`, Windows forms and device
// names are refused on every platform) the expectation becomes a refusal with
// TOOL_ARGUMENTS_INVALID / INVALID_RELATIVE_PATH. Whatever the verdict, nothing outside the
// root is ever returned or changed.
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { ToolError, createReadTool, normalizePath, type ReadOutput } from "../dist/index.js";
import { appliesHere, buildFixture, canaryContents, expand, loadCorpus, snapshotOutside, type CorpusCase } from "./corpus.js";
import { ctx, tempWorkspace } from "./helpers.js";

const corpus = loadCorpus();
const counts = { run: 0, ok: 0, refused: 0, skipped: 0, tightened: 0 };

function grammarRefuses(path: string): boolean {
  try {
    normalizePath(path);
    return false;
  } catch {
    return true;
  }
}

type Verdict = "ok" | "escape" | "notexist" | "invalid" | "error";

function verdictOf(err: unknown): Verdict {
  if (!(err instanceof ToolError)) throw err;
  switch (err.code) {
    case "PATH_ESCAPES_WORKSPACE":
      return "escape";
    case "FILE_NOT_FOUND":
      return "notexist";
    case "TOOL_ARGUMENTS_INVALID":
      expect(err.message).toMatch(/^(INVALID_RELATIVE_PATH|INVALID_UNICODE)$/);
      return "invalid";
    default:
      return "error";
  }
}

function skipReason(c: CorpusCase): string | null {
  if (!appliesHere(c)) return `expectation is for ${c.platforms.join(", ")} only`;
  if (c.tags.includes("run-as-non-root") && process.getuid?.() === 0) return "needs a non-root user (root bypasses mode 0000)";
  return null;
}

async function runCase(c: CorpusCase): Promise<void> {
  // ROOT sits two levels below the case's private parent, so fixtures such as "../../x" still
  // land inside the parent, where the snapshot watches them.
  const { parent } = await tempWorkspace();
  const made = join(parent, "p1", "p2", "ROOT");
  await mkdir(made, { recursive: true });
  const root = c.root_override ?? made;
  await buildFixture(c, made);
  const before = await snapshotOutside(parent, made);
  const canaries = canaryContents(before).filter((s) => s.length > 0);
  const open = expand(c.open, made);
  const tool = createReadTool(root);

  let got: Verdict;
  let content: string | undefined;
  try {
    const out = (await tool.execute(tool.validate({ path: open }), ctx())) as ReadOutput;
    got = "ok";
    content = out.content;
  } catch (err) {
    got = verdictOf(err);
  }
  counts.run++;
  if (got === "ok") counts.ok++;
  else counts.refused++;

  // Nothing outside the root is ever returned or changed.
  if (content !== undefined) {
    for (const canary of canaries) {
      if (canary !== content) continue;
      // A canary may equal an inside file's content only when it is that file.
      const expectedPath = c.expect.startsWith("ok:") ? c.expect.slice(3) : null;
      expect(expectedPath, `${c.id}: returned the content of a file outside the root`).not.toBeNull();
    }
  }
  expect(await snapshotOutside(parent, made), `${c.id}: something outside the root changed`).toEqual(before);

  const kind = c.expect.split(":")[0] as "ok" | "escape" | "notexist" | "error";
  const accepted = new Set<string>([kind, ...(c.accept_also ?? [])]);
  if (grammarRefuses(open)) {
    counts.tightened += kind === "ok" || kind === "notexist" ? 1 : 0;
    expect(got, `${c.id} ${JSON.stringify(c.open)}: the grammar refuses it`).toBe("invalid");
    return;
  }
  if (kind === "ok") {
    expect(got, `${c.id} ${JSON.stringify(c.open)} should be readable`).toBe("ok");
    expect(content).toBe(await readFile(join(made, c.expect.slice(3)), "utf8"));
  } else if (kind === "notexist") {
    expect(got, `${c.id} ${JSON.stringify(c.open)}`).toBe("notexist");
  } else if (kind === "escape") {
    expect(accepted.has("error") ? got !== "ok" : got === "escape", `${c.id} ${JSON.stringify(c.open)}: got ${got}`).toBe(true);
  } else {
    expect(got, `${c.id} ${JSON.stringify(c.open)} should be refused`).not.toBe("ok");
  }
}

if (!corpus) {
  console.warn("workcell: ../shared/corpus is not beside this clone; the path-confinement corpus tests are skipped.");
}

describe.skipIf(!corpus)("path-confinement corpus: read_file", () => {
  const cases = (corpus ?? []).filter((c) => (c.op ?? "read") === "read");
  for (const c of cases) {
    const why = skipReason(c);
    if (why) {
      counts.skipped++;
      test.skip(`${c.id} ${c.name} (${why})`, () => {});
      continue;
    }
    test(`${c.id} ${c.name}: ${JSON.stringify(c.open)} -> ${c.expect}`, () => runCase(c));
  }
  afterAll(() => {
    console.log(
      `corpus read cases: ${counts.run} run (${counts.ok} read, ${counts.refused} refused; ${counts.tightened} of them refused by the stricter grammar), ${counts.skipped} skipped`,
    );
  });
});
