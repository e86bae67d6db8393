// `prepare` (npm install / npm ci in a clone, and a git-URL install): builds the native addon
// (Rust, release profile) and the TypeScript layer. A source checkout has no prebuilt binary, so
// this always builds; it says so in one line first, because the Rust build takes minutes.
import { spawnSync } from "node:child_process";

const cargo = spawnSync("cargo", ["--version"], { encoding: "utf8" });
if (cargo.error || cargo.status !== 0) {
  console.error(
    "workcell: cannot build from source: cargo is not on PATH. A source checkout (a clone or a git URL) has no " +
      "prebuilt native addon; install a Rust toolchain (https://rustup.rs, Rust 1.85 or newer) and run npm install again, " +
      "or install the published package (npm install workcell), which has prebuilt binaries.",
  );
  process.exit(1);
}
console.error(
  `workcell: building the native addon (Rust, release profile, ${cargo.stdout.trim()}) and the TypeScript layer from source, ` +
    "because a source checkout has no prebuilt binary; this takes a few minutes.",
);
const build = spawnSync("npm", ["run", "build"], { stdio: "inherit" });
process.exit(build.status ?? 1);
