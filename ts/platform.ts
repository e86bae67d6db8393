// The error a user meets when the native addon does not load: which platform this is, which
// platforms have prebuilt binaries (package.json's napi.targets), and how to build from source.

/** napi's name for a Rust target triple: `x86_64-unknown-linux-gnu` is `linux-x64-gnu`. */
export function napiPlatformName(triple: string): string {
  const [cpu = "", ...rest] = triple.split("-");
  const arch =
    ({ x86_64: "x64", aarch64: "arm64", i686: "ia32", armv7: "arm", riscv64gc: "riscv64", powerpc64le: "ppc64", s390x: "s390x", loongarch64: "loong64" } as Record<string, string>)[cpu] ?? cpu;
  const tail = rest.join("-");
  if (tail.includes("apple-darwin")) return `darwin-${arch}`;
  if (tail.includes("windows")) return `win32-${arch}-${tail.endsWith("gnu") ? "gnu" : "msvc"}`;
  if (tail.includes("freebsd")) return `freebsd-${arch}`;
  if (tail.includes("android")) return `android-${arch}`;
  if (tail.includes("linux")) {
    const abi = tail.split("-").pop() ?? "gnu";
    return `linux-${arch}-${abi}`;
  }
  return triple;
}

/** This process's platform in napi's naming (with the libc on Linux). */
export function currentPlatformName(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform === "linux") {
    const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
    const musl = !report?.header?.glibcVersionRuntime;
    if (process.arch === "arm") return `${base}-${musl ? "musleabihf" : "gnueabihf"}`;
    return `${base}-${musl ? "musl" : "gnu"}`;
  }
  if (process.platform === "win32") return `${base}-msvc`;
  return base;
}

function causes(err: unknown): string[] {
  const out: string[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 32; e = (e as { cause?: unknown }).cause, depth++) {
    out.push(e.message.split("\n")[0]!);
  }
  return out;
}

/**
 * The error thrown in place of napi's "Cannot find native binding" (which blames npm): `load` is
 * the loader's error, kept as `cause`; `require` reads the package's own package.json.
 */
export function addonLoadError(load: unknown, require: NodeJS.Require): Error {
  let targets: string[] = [];
  let name = "workcell";
  try {
    const pkg = require("../package.json") as { name?: string; napi?: { targets?: string[] } };
    targets = pkg.napi?.targets ?? [];
    name = pkg.name ?? name;
  } catch {
    // the list is left empty
  }
  const here = currentPlatformName();
  const prebuilt = targets.map(napiPlatformName);
  const build =
    "To build from source (a Rust toolchain, https://rustup.rs, and a few minutes): clone the workcell " +
    "repository, run `npm install` there (it builds the addon), then `npm pack` and install the tarball " +
    "it writes; see the README's install section.";
  let message: string;
  if (prebuilt.includes(here)) {
    const reasons = causes(load).slice(1);
    message =
      `workcell: the prebuilt native addon for ${here} did not load. It comes in the optional dependency ` +
      `${name}-${here}: reinstall on this machine without --omit=optional / --no-optional (a node_modules ` +
      `copied from another platform lacks it). What failed: ${reasons.length > 0 ? reasons.join("; ") : causes(load).join("; ")}. ${build}`;
  } else {
    message =
      `workcell: no native addon for this platform (${here}, Node.js ${process.version}). ` +
      `Prebuilt binaries exist for: ${prebuilt.length > 0 ? prebuilt.join(", ") : "(none listed)"}. ${build}`;
  }
  const error = new Error(message);
  (error as { code?: string }).code = "WORKCELL_ADDON_UNAVAILABLE";
  error.cause = load;
  return error;
}
