// Loader and fixture builder for the public path-confinement tables (Go's os.Root tests and
// cap-std's tests) kept in ../shared/corpus beside the repository. They are read where they
// are, never copied into the project; on a clone without them the corpus tests skip.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, lstat, mkdir, readFile, readdir, readlink, symlink, writeFile } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface SetupEntry {
  kind: "dir" | "file" | "symlink" | "socket" | "fifo" | "chmod";
  path: string;
  target?: string;
  content?: string;
  mode?: string;
}

export interface CorpusCase {
  id: string;
  name: string;
  source: string;
  setup: SetupEntry[];
  open: string;
  op?: "read" | "write";
  expect: string;
  platforms: string[];
  tags: string[];
  note?: string;
  accept_also?: string[];
  root_override?: string;
}

export const corpusDir = resolve(dirname(fileURLToPath(import.meta.url)), "../../shared/corpus");
export const corpusFiles = ["go-root-cases.json", "capstd-cases.json"];

/** All cases of both tables, or null when the tables are not beside the repository. */
export function loadCorpus(): CorpusCase[] | null {
  const paths = corpusFiles.map((f) => join(corpusDir, f));
  if (!paths.every((p) => existsSync(p))) return null;
  return paths.flatMap((p) => (JSON.parse(readFileSync(p, "utf8")) as { cases: CorpusCase[] }).cases);
}

/** Whether a case's expectation applies on this platform. */
export function appliesHere(c: CorpusCase): boolean {
  return c.platforms.some((p) => p === "all" || p === "unix" || p === process.platform);
}

/** Replaces `$ABS` with the root's absolute path. */
export function expand(text: string, root: string): string {
  return text.split("$ABS").join(root);
}

/** Builds a case's fixture: ROOT-relative paths, "../x" lands beside ROOT (outside it). */
export async function buildFixture(c: CorpusCase, root: string): Promise<void> {
  for (const entry of c.setup) {
    const at = join(root, entry.path);
    await mkdir(dirname(at), { recursive: true });
    switch (entry.kind) {
      case "dir":
        await mkdir(at, { recursive: true });
        break;
      case "file":
        await writeFile(at, entry.content ?? entry.path);
        break;
      case "symlink":
        await symlink(expand(entry.target ?? "", root), at);
        break;
      case "fifo":
        execFileSync("mkfifo", [at]);
        break;
      case "socket":
        execFileSync("python3", ["-c", "import socket,sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])", at]);
        break;
      case "chmod":
        await chmod(at, parseInt(entry.mode ?? "0", 8));
        break;
    }
  }
}

/**
 * A snapshot of everything under `parent` except the subtree `skip`: type, link target and
 * file content, so a test can prove nothing outside the root was read into a result or changed.
 */
export async function snapshotOutside(parent: string, skip: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  async function walk(dir: string): Promise<void> {
    for (const name of await readdir(dir)) {
      const p = join(dir, name);
      if (p === skip) continue;
      const st = await lstat(p);
      if (st.isSymbolicLink()) out.set(p, `link:${await readlink(p)}`);
      else if (st.isDirectory()) {
        out.set(p, `dir:${st.mode}`);
        await walk(p);
      } else if (st.isFile()) out.set(p, `file:${st.mode}:${(await readFile(p)).toString("base64")}`);
      else out.set(p, `other:${st.mode}`);
    }
  }
  await walk(parent);
  return out;
}

/** Contents of the regular files outside the root (the canaries a read must never return). */
export function canaryContents(snapshot: Map<string, string>): string[] {
  return [...snapshot.values()]
    .filter((v) => v.startsWith("file:"))
    .map((v) => Buffer.from(v.slice(v.indexOf(":", 5) + 1), "base64").toString("utf8"));
}
