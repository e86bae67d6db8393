// `prepack` / `postpack`: what `npm pack` and `npm publish` put in the tarball.
//
//   node scripts/pack-manifest.mjs strip     (prepack)
//   node scripts/pack-manifest.mjs restore   (postpack)
//
// strip makes sure the build is there and no older than its sources (building what is missing
// or stale), then writes package.json without `scripts` and `devDependencies`: they serve a
// source checkout only (`prepare` builds one, and in a packed package it would make npm warn
// about an install script on every tarball install; a tarball has the build already). The
// original is kept beside it and put back by restore (and by the next strip, should a pack have
// been interrupted). Under `npm publish`, restore leaves the stripped manifest in place: npm
// reads package.json again after packing and sends that to the registry, so the registry's
// copy matches the tarball's; `node scripts/pack-manifest.mjs restore` (or the next pack) puts
// the original back.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const PKG = join(ROOT, "package.json");
const KEPT = join(ROOT, "package.json.before-pack");

/** Newest modification time among the files under `dir` whose name passes `keep`. */
function newest(dir, keep) {
  let t = 0;
  if (!existsSync(dir)) return t;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && keep(entry.name)) t = Math.max(t, statSync(join(entry.parentPath ?? entry.path, entry.name)).mtimeMs);
  }
  return t;
}

function run(script, why) {
  console.error(`workcell: npm run ${script} before packing: ${why}`);
  const r = spawnSync("npm", ["run", script], { cwd: ROOT, stdio: "inherit" });
  if (r.status !== 0) process.exit(r.status ?? 1);
}

function restore() {
  if (existsSync(KEPT)) renameSync(KEPT, PKG);
}

const mode = process.argv[2];
if (mode === "restore") {
  if (process.env.npm_command === "publish" && process.env.npm_lifecycle_event === "postpack") {
    console.error("workcell: package.json stays stripped for the registry; `node scripts/pack-manifest.mjs restore` puts it back");
  } else {
    restore();
  }
} else if (mode === "strip") {
  restore();
  const pkg = JSON.parse(readFileSync(PKG, "utf8"));
  const addons = existsSync(join(ROOT, "native")) ? readdirSync(join(ROOT, "native")).filter((f) => f.endsWith(".node")) : [];
  const rustSources = Math.max(newest(join(ROOT, "src"), (n) => n.endsWith(".rs")), newest(join(ROOT, "crates", "workcell-core", "src"), (n) => n.endsWith(".rs")));
  // At publish time the binaries live in the per-platform packages (npm/<platform>/, listed in
  // optionalDependencies by napi pre-publish); a local pack carries the one built here.
  const published = Object.keys(pkg.optionalDependencies ?? {}).length > 0;
  if (!published && addons.length === 0) run("build:native", "no native addon has been built");
  else if (!published && existsSync(join(ROOT, "crates")) && addons.every((a) => statSync(join(ROOT, "native", a)).mtimeMs < rustSources)) {
    run("build:native", "the native addon is older than its Rust sources");
  }
  const dist = join(ROOT, "dist", "index.js");
  if (!existsSync(dist) || statSync(dist).mtimeMs < newest(join(ROOT, "ts"), (n) => n.endsWith(".ts"))) {
    run("build:ts", existsSync(dist) ? "dist/ is older than ts/" : "dist/ has not been built");
  }
  // package.json is never missing or half-written meanwhile: copy, then rename over it.
  copyFileSync(PKG, KEPT);
  delete pkg.scripts;
  delete pkg.devDependencies;
  writeFileSync(`${PKG}.tmp`, `${JSON.stringify(pkg, null, 2)}\n`);
  renameSync(`${PKG}.tmp`, PKG);
} else {
  console.error("usage: node scripts/pack-manifest.mjs strip|restore");
  process.exit(2);
}
