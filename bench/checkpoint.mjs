// Checkpoints (contract §19) against git's own snapshot, on the same tree: 20,000 files of
// about 1 KiB in 200 directories, 10 of them changed between snapshots.
//
// - incremental: `create` after 10 files changed, against `git add -A && git write-tree` into
//   a throwaway index that already holds the previous snapshot (git's stat cache, the index,
//   against workcell's);
// - cold: the first checkpoint into an empty store, against the same git commands into an
//   empty index and object store;
// - rewind of the 10 files (a diff, then the rewind with its hash) against
//   `git checkout <tree> -- <the 10 paths>`;
// - memory: the host's RSS growth over a cold checkpoint of the tree (target under 64 MiB).
//
// Each side runs ROUNDS times in alternation; the rows report medians.
import { execFileSync } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createCheckpoints } from "../dist/index.js";

const FILES = 20_000;
const DIRS = 200;
const CHANGED = 10;
const ROUNDS = 5;

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function timed(fn) {
  const t = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t) / 1e6;
}

function git(gitDir, root, args) {
  return execFileSync("git", args, {
    cwd: root,
    env: { ...process.env, GIT_DIR: gitDir, GIT_WORK_TREE: root, GIT_INDEX_FILE: join(gitDir, "index") },
    maxBuffer: 64 << 20,
  }).toString();
}

export default async function checkpointBench(h) {
  try {
    execFileSync("git", ["--version"]);
  } catch {
    console.log("  git is not installed: skipped");
    return;
  }
  const { dir, cleanup } = await h.tempDir("workcell-bench-ckpt-");
  try {
    const root = join(dir, "root");
    for (let d = 0; d < DIRS; d++) await mkdir(join(root, `d${d}`), { recursive: true });
    const line = "x".repeat(63) + "\n";
    for (let i = 0; i < FILES; i++) await writeFile(join(root, `d${i % DIRS}`, `f${i}.txt`), `file ${i}\n` + line.repeat(16));
    let n = 0;
    const change = async () => {
      n++;
      const paths = [];
      for (let k = 0; k < CHANGED; k++) {
        const i = (n * 997 + k * 131) % FILES;
        const rel = `d${i % DIRS}/f${i}.txt`;
        paths.push(rel);
        await writeFile(join(root, rel), `changed ${n} ${k}\n` + line.repeat(16));
      }
      return paths;
    };

    // Cold: an empty store / an empty git directory each round.
    const cold = { workcell: [], git: [] };
    const rss = [];
    for (let r = 0; r < ROUNDS; r++) {
      const storeDir = join(dir, `cold-store-${r}`);
      const before = process.memoryUsage().rss;
      cold.workcell.push(await timed(() => createCheckpoints(root, { storeDir }).create()));
      rss.push((process.memoryUsage().rss - before) / (1 << 20));
      const gitDir = join(dir, `cold-git-${r}`);
      execFileSync("git", ["init", "-q", "--bare", gitDir]);
      cold.git.push(await timed(async () => {
        git(gitDir, root, ["add", "-A"]);
        git(gitDir, root, ["write-tree"]);
      }));
    }

    // Incremental: one store and one index, 10 files changed before each round.
    const storeDir = join(dir, "store");
    const cps = createCheckpoints(root, { storeDir });
    await cps.create();
    const gitDir = join(dir, "git");
    execFileSync("git", ["init", "-q", "--bare", gitDir]);
    git(gitDir, root, ["add", "-A"]);
    git(gitDir, root, ["write-tree"]);
    // The stat caches trust files older than their last walk: let both see the tree settle.
    await new Promise((r) => setTimeout(r, 2500));
    await cps.create();
    git(gitDir, root, ["add", "-A"]);
    const inc = { workcell: [], git: [] };
    for (let r = 0; r < ROUNDS; r++) {
      await change();
      await new Promise((res) => setTimeout(res, 2100));
      inc.workcell.push(await timed(() => cps.create()));
      inc.git.push(await timed(async () => {
        git(gitDir, root, ["add", "-A"]);
        git(gitDir, root, ["write-tree"]);
      }));
    }

    // Rewind of 10 files against git checkout of them.
    const rew = { workcell: [], git: [] };
    for (let r = 0; r < ROUNDS; r++) {
      const { id } = await cps.create();
      const tree = git(gitDir, root, ["write-tree"]).trim();
      let paths = await change();
      rew.workcell.push(await timed(async () => {
        const d = await cps.diff(id);
        await cps.rewind(id, { expectedHash: d.hash });
      }));
      paths = await change();
      rew.git.push(await timed(async () => {
        git(gitDir, root, ["checkout", tree, "--", ...paths]);
      }));
      // Back to the checkpoint's state for the next round.
      const d = await cps.diff(id);
      if (d.files.length > 0) await cps.rewind(id, { expectedHash: d.hash });
    }

    const row = (name, side, target, check) => {
      const w = median(side.workcell);
      const g = median(side.git);
      h.row({ name, subject: "workcell", baseline: "git", unit: "ms", subjectValue: w, baselineValue: g, ratio: w / g, target, pass: check(w / g) });
    };
    row(`checkpoint, ${FILES} files, ${CHANGED} changed (vs git add -A && git write-tree)`, inc, "<= 1", (x) => x <= 1);
    row(`first checkpoint, ${FILES} files (vs git add -A && git write-tree, cold)`, cold, "report", () => true);
    row(`rewind ${CHANGED} files (diff + rewind vs git checkout TREE -- paths)`, rew, "report", () => true);
    const grow = Math.max(...rss);
    h.row({ name: `host RSS growth, cold checkpoint of ${FILES} files`, subject: "workcell", baseline: "64 MiB", unit: "MiB", subjectValue: grow, baselineValue: 64, ratio: grow / 64, target: "< 1", pass: grow < 64 });
  } finally {
    await cleanup();
  }
}
