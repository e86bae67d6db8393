// The sandbox options every process tool takes, the report every result carries, and what the
// host's Node.js offers for its permission model. The decisions are made in Rust
// (crates/workcell-core/src/sandbox/); this file only checks shapes and canonicalizes paths at
// creation.
import { binding } from "./native.js";
import type { NodePermissionSupport, SandboxFeatureLimit, SandboxLimits } from "../native/binding.js";

/** `"auto"`: apply what the system offers; `"required"`: refuse to run without it; `"off"`. */
export type SandboxMode = "auto" | "required" | "off";

/** Sandbox options of the tools that start processes. */
export interface SandboxToolOptions {
  /**
   * `"auto"` (default) confines the child as far as this system allows and reports it;
   * `"required"` makes every call fail with `SANDBOX_UNAVAILABLE` where file confinement
   * (Landlock), network blocking (Landlock ABI 4) or process containment (PID namespace) is
   * missing; `"off"` applies nothing.
   */
  sandbox?: SandboxMode;
  /** Let the child use the network (TCP connect and bind are blocked by default). */
  network?: boolean;
  /** Absolute paths (directories or files) the child may also read. Checked and resolved at creation. */
  readPaths?: readonly string[];
  /** Absolute paths the child may also read and write. Checked and resolved at creation. */
  writePaths?: readonly string[];
  /**
   * Simulate a system with fewer sandbox features than the probe found (tests, diagnostics):
   * `landlockAbi: null` is a kernel without Landlock. Never adds a feature.
   */
  sandboxFeatures?: SandboxFeatureOverride;
  /**
   * Resource caps on the whole process tree of a call (see {@link SandboxLimitOptions}); each
   * missing cap takes its default ({@link sandboxLimitDefaults}).
   */
  limits?: SandboxLimitOptions;
}

/** Resource caps of a confined process tree. */
export interface SandboxLimitOptions {
  /** Processes and threads at once (default 512). */
  processes?: number;
  /** Memory of the tree, in bytes (default half the physical memory, rounded down to a whole MiB; at least 64 MiB). */
  memoryBytes?: number;
  /** Size of any one file a process writes, in bytes (default 4 GiB). */
  fileBytes?: number;
}

/** How one cap was enforced. */
export interface SandboxLimitReport {
  max: number;
  /** `"rlimit"` (a resource limit on each process), `"cgroup-v2"` / `"cgroup-v1"` (the whole tree), `"none"` (not enforced). */
  by: "rlimit" | "cgroup-v2" | "cgroup-v1" | "none";
}

/** The caps of a call (`sandbox.limits`). */
export interface SandboxLimitsReport {
  processes: SandboxLimitReport;
  memoryBytes: SandboxLimitReport;
  fileBytes: SandboxLimitReport;
}

/** The default caps on this machine, from the core. */
export function sandboxLimitDefaults(): Required<SandboxLimitOptions> {
  const d = binding.sandboxLimits(undefined);
  return { processes: d.processes!, memoryBytes: d.memoryBytes!, fileBytes: d.fileBytes! };
}

export interface SandboxFeatureOverride {
  landlockAbi?: number | null;
  pidNamespace?: boolean;
  userNamespace?: boolean;
  procMount?: boolean;
  /** `false`: a system where the host can create no cgroup. */
  cgroups?: boolean;
}

/** What confined a call's processes (the `sandbox` field of a result). */
export interface SandboxReport {
  /** The Landlock ABI the child was confined with; null without Landlock. */
  landlockAbi: number | null;
  /** `"confined"`: only the workspace, the granted paths and what programs need; `"open"`: anything the user may access. */
  filesystem: "confined" | "open";
  /** `"blocked"`: TCP connect/bind refused; `"allowed"` by the host; `"open"`: not blocked. */
  network: "blocked" | "allowed" | "open";
  /** `"namespace"`: nothing the call started outlives it; `"group"`: its process group is killed. */
  processes: "namespace" | "group";
  /** Whether Node.js's permission model also checked the script's own file access. */
  nodePermission: boolean;
  /** The resource caps and how each was enforced. */
  limits: SandboxLimitsReport;
}

/** The sandbox features this system offers (probed once per process). */
export interface SandboxSupport {
  landlockAbi: number | null;
  pidNamespace: boolean;
  userNamespace: boolean;
  procMount: boolean;
}

/** Probes what the sandbox can use on this system. */
export function sandboxSupport(): SandboxSupport {
  const f = binding.sandboxFeatures();
  return {
    landlockAbi: f.landlockAbi ?? null,
    pidNamespace: f.pidNamespace,
    userNamespace: f.userNamespace,
    procMount: f.procMount,
  };
}

export interface NativeSandboxOptions {
  sandbox: SandboxMode;
  network: boolean;
  readPaths: string[];
  writePaths: string[];
  sandboxLimit?: SandboxFeatureLimit;
  limits: SandboxLimits;
}

function grantPaths(factory: string, name: string, value: unknown): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((p) => typeof p === "string")) {
    throw new TypeError(`workcell: ${factory} option ${name} must be an array of absolute paths`);
  }
  return value.map((p: string) => {
    try {
      return binding.sandboxGrantPath(p);
    } catch (err) {
      throw new TypeError((err as Error).message);
    }
  });
}

/** Checks the sandbox options at creation; returns them in the native shape. */
export function sandboxOptions(factory: string, options: SandboxToolOptions): NativeSandboxOptions {
  const sandbox = options.sandbox ?? "auto";
  if (!["auto", "required", "off"].includes(sandbox)) {
    throw new TypeError(`workcell: ${factory} option sandbox must be "auto", "required" or "off"`);
  }
  if (options.network !== undefined && typeof options.network !== "boolean") {
    throw new TypeError(`workcell: ${factory} option network must be a boolean`);
  }
  const result: NativeSandboxOptions = {
    sandbox,
    network: options.network ?? false,
    readPaths: grantPaths(factory, "readPaths", options.readPaths),
    writePaths: grantPaths(factory, "writePaths", options.writePaths),
    limits: limitOptions(factory, options.limits),
  };
  const f = options.sandboxFeatures;
  if (f !== undefined) {
    if (typeof f !== "object" || f === null) throw new TypeError(`workcell: ${factory} option sandboxFeatures must be an object`);
    const abi = f.landlockAbi;
    if (abi !== undefined && abi !== null && !(Number.isSafeInteger(abi) && abi >= 0 && abi < 2 ** 32)) {
      throw new TypeError(`workcell: ${factory} option sandboxFeatures.landlockAbi must be a non-negative integer or null`);
    }
    for (const k of ["pidNamespace", "userNamespace", "procMount", "cgroups"] as const) {
      if (f[k] !== undefined && typeof f[k] !== "boolean") {
        throw new TypeError(`workcell: ${factory} option sandboxFeatures.${k} must be a boolean`);
      }
    }
    result.sandboxLimit = {
      landlockAbi: abi === null ? 0 : abi,
      pidNamespace: f.pidNamespace,
      userNamespace: f.userNamespace,
      procMount: f.procMount,
      cgroups: f.cgroups,
    };
  }
  return result;
}

/** Checks `limits` (shape here, ranges in the core) and fills in the defaults. */
function limitOptions(factory: string, value: unknown): SandboxLimits {
  if (value === undefined) return binding.sandboxLimits(undefined);
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new TypeError(`workcell: ${factory} option limits must be an object { processes?, memoryBytes?, fileBytes? }`);
  }
  const v = value as Record<string, unknown>;
  for (const k of Object.keys(v)) {
    if (!["processes", "memoryBytes", "fileBytes"].includes(k)) throw new TypeError(`workcell: ${factory} option limits has an unknown key ${JSON.stringify(k)}`);
    if (v[k] !== undefined && !(typeof v[k] === "number" && Number.isSafeInteger(v[k]))) {
      throw new TypeError(`workcell: ${factory} option limits.${k} must be an integer`);
    }
  }
  try {
    return binding.sandboxLimits({ processes: v.processes as number | undefined, memoryBytes: v.memoryBytes as number | undefined, fileBytes: v.fileBytes as number | undefined });
  } catch (err) {
    throw new TypeError(`${(err as Error).message} (${factory})`);
  }
}

let permission: NodePermissionSupport | null | undefined;

/**
 * The host's Node.js permission model: `--permission` (22.13+) or `--experimental-permission`
 * (20, 21, 22 before 22.13), if `--disable-warning` exists to keep its start-up warnings out of
 * the script's stderr.
 */
export function nodePermissionSupport(): NodePermissionSupport | undefined {
  if (permission === undefined) {
    const flags = process.allowedNodeEnvironmentFlags;
    const flag = flags.has("--permission") ? "--permission" : flags.has("--experimental-permission") ? "--experimental-permission" : null;
    permission =
      flag && flags.has("--disable-warning") && flags.has("--allow-child-process") && flags.has("--allow-worker")
        ? { flag, allowAddons: flags.has("--allow-addons"), allowWasi: flags.has("--allow-wasi") }
        : null;
  }
  return permission ?? undefined;
}

/** Converts the native report. */
export function toSandboxReport(r: {
  landlockAbi?: number | null;
  filesystem: string;
  network: string;
  processes: string;
  nodePermission: boolean;
  limits: { processes: { max: number; by: string }; memoryBytes: { max: number; by: string }; fileBytes: { max: number; by: string } };
}): SandboxReport {
  const limit = (l: { max: number; by: string }): SandboxLimitReport => ({ max: l.max, by: l.by as SandboxLimitReport["by"] });
  return {
    landlockAbi: r.landlockAbi ?? null,
    filesystem: r.filesystem as SandboxReport["filesystem"],
    network: r.network as SandboxReport["network"],
    processes: r.processes as SandboxReport["processes"],
    nodePermission: r.nodePermission,
    limits: { processes: limit(r.limits.processes), memoryBytes: limit(r.limits.memoryBytes), fileBytes: limit(r.limits.fileBytes) },
  };
}

/** One sentence for a tool's description: what the sandbox does to the model's processes. */
export function describeSandbox(options: NativeSandboxOptions): string {
  if (options.sandbox === "off") return "It runs without a sandbox, as the user.";
  const network = options.network ? "the network is allowed" : "the network is blocked";
  return `It runs in a sandbox where the system allows: files outside the workspace cannot be read or written (system directories are readable), ${network}, and nothing it starts outlives the call; \`sandbox\` in the result says what was enforced.`;
}
