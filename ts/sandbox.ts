// The sandbox options every process tool takes, the report every result carries, and what the
// host's Node.js offers for its permission model. The decisions are made in Rust
// (crates/workcell-core/src/sandbox/); this file only checks shapes and canonicalizes paths at
// creation.
import { DEFAULT_PROTECT } from "./guard.js";
import { binding } from "./native.js";
import { checkOptions, factoryName, option, type OptionKind, type OptionSpecOf } from "./options.js";
import type { SandboxFeatureLimit, SandboxLimits } from "../native/binding.js";
export type { NetworkCounts, SandboxLimitReport, SandboxLimitsReport, SandboxReport } from "./generated/contract.js";

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
  /**
   * Let the child use the network (TCP connect and bind are blocked by default): `true` opens
   * it; `{ allow: [...] }` gives the processes a network namespace of their own whose only way
   * out is workcell's filtering proxy (`HTTP_PROXY`/`HTTPS_PROXY`), which lets through only the
   * listed hosts: `"registry.example.org"`, `"*.example.com"`, `"host:8080"`,
   * `"localhost:PORT"`, an IP address, or a preset (`"npm"`, `"crates"`, `"pypi"`, `"github"`).
   * See docs/network.md.
   */
  network?: boolean | NetworkAllow;
  /** Absolute paths (directories or files) the child may also read. Checked and resolved at creation. */
  readPaths?: readonly string[];
  /** Absolute paths the child may also read and write. Checked and resolved at creation. */
  writePaths?: readonly string[];
  /**
   * Globs of workspace paths read-only for every process (default `["**\/.git/**"]`, as the
   * write guard's): every match when a process starts, at any depth, and the top-level `.git`
   * even if created later. `[]`: none (needed where the system cannot enforce it).
   */
  protect?: readonly string[];
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



/** The default caps on this machine, from the core. */
export function sandboxLimitDefaults(): Required<SandboxLimitOptions> {
  const d = binding.sandboxLimits(undefined);
  return { processes: d.processes!, memoryBytes: d.memoryBytes!, fileBytes: d.fileBytes! };
}

/** `network: { allow }`: the hosts the processes may reach through the proxy. */
export interface NetworkAllow {
  allow: readonly string[];
}


/**
 * A system with fewer sandbox features than this one (`sandboxFeatures`): each `false` or `null`
 * takes a feature away, for tests and diagnostics.
 */
export interface SandboxFeatureOverride {
  /** The highest Landlock ABI to use; `null`: a kernel without Landlock. */
  landlockAbi?: number | null;
  /** `false`: a system without PID namespaces. */
  pidNamespace?: boolean;
  /** `false`: a system without unprivileged user namespaces. */
  userNamespace?: boolean;
  /** `false`: a system where a private `/proc` cannot be mounted. */
  procMount?: boolean;
  /** `false`: a system where the host can create no cgroup. */
  cgroups?: boolean;
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

/** The spec entries of {@link SandboxToolOptions} (see ts/options.ts). */
export const SANDBOX_OPTIONS = {
  sandbox: option.enum(["auto", "required", "off"], "the sandbox mode"),
  network: option.oneOf(
    [{ type: "boolean" }, { type: "object", spec: { allow: option.strings("hosts, *.domains, host:port entries and presets") } }],
    "true: the network; { allow }: only these hosts, through workcell's proxy",
  ),
  readPaths: option.paths("absolute paths the processes may also read"),
  writePaths: option.paths("absolute paths the processes may also read and write"),
  protect: option.strings("globs of workspace paths read-only for the processes (default every .git)"),
  limits: option.object(
    {
      // The core's ranges (it checks them again when the tool is made).
      processes: option.integer(1, binding.SANDBOX_MAX_PROCESSES, "processes and threads at once"),
      memoryBytes: option.integer(binding.SANDBOX_MIN_MEMORY_BYTES, Number.MAX_SAFE_INTEGER, "memory of the tree, in bytes"),
      fileBytes: option.integer(1, Number.MAX_SAFE_INTEGER, "size of any one file written, in bytes"),
    } satisfies OptionSpecOf<SandboxLimitOptions>,
    "resource caps of each process tree",
  ),
  sandboxFeatures: option.object(
    {
      landlockAbi: option.oneOf(
        [{ type: "integer", min: 0, max: 2 ** 32 - 1 }, { type: "null" }] satisfies OptionKind[],
        "the Landlock ABI to use at most (null: none)",
      ),
      pidNamespace: option.boolean("whether a PID namespace may be used"),
      userNamespace: option.boolean("whether a user namespace may be used"),
      procMount: option.boolean("whether a private /proc may be mounted"),
      cgroups: option.boolean("whether cgroups may be made for the limits"),
    } satisfies OptionSpecOf<SandboxFeatureOverride>,
    "simulate a system with fewer sandbox features",
  ),
} as const satisfies OptionSpecOf<SandboxToolOptions>;

export interface NativeSandboxOptions {
  sandbox: SandboxMode;
  network: boolean;
  networkAllow?: string[];
  readPaths: string[];
  writePaths: string[];
  sandboxLimit?: SandboxFeatureLimit;
  /** The process table whose sessions' ports the processes may connect to (same tool set). */
  portGroup?: number;
  limits: SandboxLimits;
  /** Approved grants pinned in the core (`GrantPin` ids). */
  grantHandles?: number[];
  /** Globs read-only for the processes. */
  protect: string[];
}

/**
 * Internal: the key under which `createCodingTools` gives the tool set's other process tools
 * the port group of its process sessions (not a public option).
 */
export const PORT_GROUP: unique symbol = Symbol("workcell.portGroup");

/**
 * Internal: the key under which `createCodingTools` tells the tool set's other process tools
 * which ports its process sessions may listen on (named in the note of a refused `listen`).
 */
export const LISTEN_PORTS: unique symbol = Symbol("workcell.listenPorts");

/** The ports a tool's refused `listen` may be pointed to: its sessions' allowed ports. */
export function listenPorts(options: object): number[] {
  const ports = (options as { [LISTEN_PORTS]?: unknown })[LISTEN_PORTS];
  return Array.isArray(ports) ? ports.filter((p): p is number => Number.isSafeInteger(p)) : [];
}

function grantPaths(factory: string, key: string, value: readonly string[] | undefined): string[] {
  if (value === undefined) return [];
  return value.map((p: string, i) => {
    try {
      return binding.sandboxGrantPath(p);
    } catch (err) {
      throw new TypeError(`workcell: ${factory}: ${key}[${i}]: ${(err as Error).message.replace(/^workcell: /, "")}`);
    }
  });
}

/** Checks the sandbox options at creation; returns them in the native shape. */
export function sandboxOptions(own: string, options: SandboxToolOptions): NativeSandboxOptions {
  const factory = factoryName(own);
  // The factory checked its whole spec; this repeats the sandbox part for callers that did not.
  const ownOptions: Record<string, unknown> = {};
  for (const k of Object.keys(SANDBOX_OPTIONS)) ownOptions[k] = (options as Record<string, unknown>)[k];
  checkOptions(factory, SANDBOX_OPTIONS, ownOptions);
  const sandbox = options.sandbox ?? "auto";
  const net = options.network;
  let networkAllow: string[] | undefined;
  if (net !== undefined && typeof net !== "boolean") {
    // Its shape was checked against SANDBOX_OPTIONS above; `allow` itself is required.
    const allow = (net as NetworkAllow).allow;
    if (!Array.isArray(allow)) {
      throw new TypeError(`workcell: ${factory} option network.allow must be an array of strings`);
    }
    if (sandbox === "off") {
      throw new TypeError(`workcell: ${factory} option network.allow needs the sandbox: with sandbox "off" nothing could enforce it`);
    }
    try {
      binding.sandboxNetworkAllow([...allow]);
    } catch (err) {
      throw new TypeError(`workcell: ${factory}: ${(err as Error).message.replace(/^workcell: /, "")}`);
    }
    networkAllow = [...allow];
  }
  const result: NativeSandboxOptions = {
    sandbox,
    network: net === true,
    readPaths: grantPaths(factory, "readPaths", options.readPaths),
    writePaths: grantPaths(factory, "writePaths", options.writePaths),
    limits: limitOptions(factory, options.limits),
    protect: [...(options.protect ?? DEFAULT_PROTECT)],
  };
  if (networkAllow !== undefined) result.networkAllow = networkAllow;
  const group = (options as { [PORT_GROUP]?: unknown })[PORT_GROUP];
  if (typeof group === "number") result.portGroup = group;
  const f = options.sandboxFeatures;
  if (f !== undefined) {
    const abi = f.landlockAbi;
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

/** `limits` (its shape checked against SANDBOX_OPTIONS, its ranges in the core) with the defaults filled in. */
function limitOptions(factory: string, value: SandboxLimitOptions | undefined): SandboxLimits {
  try {
    return binding.sandboxLimits(value === undefined ? undefined : { ...value });
  } catch (err) {
    throw new TypeError(`${(err as Error).message} (${factory})`);
  }
}

/** What the host's Node.js offers for its permission model (the core's `NodePermission`). */
export interface NodePermissionSupport {
  /** `--permission` or `--experimental-permission`. */
  flag: string;
  allowAddons: boolean;
  allowWasi: boolean;
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

/**
 * Set by createCodingTools on node_process's and run_tests's options when run_command's compact
 * description already says what the sandbox does: theirs then refer to it (said once, not three
 * times). A symbol, so it is no option key a host can pass.
 */
export const SANDBOX_SAID_BY: unique symbol = Symbol("workcell.sandboxSaidBy");

/** The tool whose description says the sandbox sentence, with the settings that sentence names. */
export interface SandboxSaid {
  tool: string;
  sandbox: SandboxMode;
  network: boolean | NetworkAllow;
}

/** The network a tool's processes get, in the words of the compact description. */
function networkWords(network: boolean | NetworkAllow | undefined, allow?: readonly string[]): string {
  const list = allow ?? (typeof network === "object" ? network.allow : undefined);
  if (list !== undefined) return "limited to the host's allowlist through an HTTP proxy (HTTP_PROXY)";
  return network === true ? "allowed" : "blocked";
}

/** The compact sandbox sentence; `said`: a tool whose description already says the same one. */
export function describeSandboxCompact(options: NativeSandboxOptions, said?: SandboxSaid): string {
  if (options.sandbox === "off") return "It runs without a sandbox, as the user.";
  const network = networkWords(options.network, options.networkAllow);
  if (said !== undefined && said.sandbox === options.sandbox && networkWords(said.network) === network) return `Sandboxed as ${said.tool}.`;
  return `Sandboxed: files outside the workspace are off-limits (system files readable), the network is ${network}, nothing outlives the call.`;
}

/** One sentence for a tool's description: what the sandbox does to the model's processes. */
export function describeSandbox(options: NativeSandboxOptions): string {
  if (options.sandbox === "off") return "It runs without a sandbox, as the user.";
  const network = options.networkAllow
    ? "the network is limited to the hosts the user allows, through a proxy set in HTTP_PROXY/HTTPS_PROXY (tools that ignore it cannot connect; a refusal is an HTTP 403 saying why)"
    : options.network
      ? "the network is allowed"
      : "the network is blocked";
  return `It runs in a sandbox where the system allows: files outside the workspace cannot be read or written (system directories are readable), ${network}, and nothing it starts outlives the call; \`sandbox\` in the result says what was enforced.`;
}
