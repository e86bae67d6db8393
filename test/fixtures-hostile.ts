// A workspace with traps planted inside: symlinks that escape (relative and absolute, to a
// directory and to a file), a symlink loop, a self-loop directory link and FIFOs. Secrets live
// next to ROOT, in the test's own temporary parent.
import { mkdir, symlink, writeFile } from "node:fs/promises";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { tempWorkspace } from "./helpers.js";

export const SECRET = "TOPSECRET";

export async function hostileWorkspace(): Promise<{ parent: string; root: string }> {
  const { parent, root } = await tempWorkspace();
  await mkdir(join(parent, "outside"));
  await writeFile(join(parent, "outside/secret.txt"), `${SECRET} in outside\n`);
  await writeFile(join(parent, "secret.txt"), `${SECRET} in parent\n`);
  await mkdir(join(root, "src"));
  await writeFile(join(root, "src/a.ts"), "export const needle = 1;\nconst hay = 2;\n");
  await writeFile(join(root, "README.md"), "needle in the readme\n");
  await symlink("../outside", join(root, "reldir"));
  await symlink(join(parent, "outside"), join(root, "absdir"));
  await symlink("../secret.txt", join(root, "relfile"));
  await symlink(join(parent, "secret.txt"), join(root, "absfile"));
  await symlink("../../outside", join(root, "src/deeprel"));
  await symlink("loop-b", join(root, "loop-a"));
  await symlink("loop-a", join(root, "loop-b"));
  await symlink(".", join(root, "src/self"));
  execFileSync("mkfifo", [join(root, "pipe")]);
  execFileSync("mkfifo", [join(root, "src/pipe.ts")]);
  return { parent, root };
}
