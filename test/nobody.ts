// A copy of the built package that `nobody` can read, for tests that run a host as an
// unprivileged user: a clone usually sits in a home directory or a `mktemp -d`, both 0700, which
// `nobody` cannot enter.
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const AS_NOBODY = ["--reuid=65534", "--regid=65534", "--clear-groups"];

/**
 * Copies the built package (dist, the native addon, package.json) and the named files of test/
 * to a 0755 directory under the temporary directory. Returns it, or why `nobody` cannot reach
 * even the copy (the caller skips with that notice). The caller removes `dir`.
 */
export function packageNobodyCanRead(testFiles: readonly string[] = []): { dir: string } | { reason: string } {
  const repo = fileURLToPath(new URL("..", import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), "workcell-nobody-"));
  chmodSync(dir, 0o755);
  cpSync(join(repo, "dist"), join(dir, "dist"), { recursive: true });
  mkdirSync(join(dir, "native"));
  for (const f of readdirSync(join(repo, "native"))) {
    if (f.endsWith(".cjs") || f.endsWith(".node")) cpSync(join(repo, "native", f), join(dir, "native", f));
  }
  cpSync(join(repo, "package.json"), join(dir, "package.json"));
  mkdirSync(join(dir, "test"));
  for (const f of testFiles) cpSync(join(repo, "test", f), join(dir, "test", f));
  const probe = spawnSync("setpriv", [...AS_NOBODY, "test", "-r", join(dir, "dist", "index.js")], { cwd: "/" });
  if (probe.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    return { reason: `nobody cannot read ${dir} (a directory above ${tmpdir()} is not searchable by others)` };
  }
  return { dir };
}
