// The deployment files (docs/deploy/): the Kubernetes manifest passes kubernetes-validate in
// strict mode against Kubernetes 1.37 (installed with pip when missing), keeps the settings that
// give the processes the whole sandbox, and the seccomp profile allows the calls the sandbox
// makes while refusing the ones it never needs.
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, test } from "vitest";

const DEPLOY = fileURLToPath(new URL("../docs/deploy/", import.meta.url));
const MANIFEST = join(DEPLOY, "workcell.k8s.yaml");
const KUBERNETES = "1.37.0";

/** The kubernetes-validate command, installing it with pip when missing; or why it cannot run. */
function validator(): { command: string[] } | { skip: string } {
  const probe = (args: string[]) => spawnSync(args[0]!, args.slice(1), { encoding: "utf8", timeout: 60_000 });
  const cli = ["python3", "-m", "kubernetes_validate"];
  if (probe([...cli, "--version"]).status === 0) return { command: cli };
  const pip = ["python3", "-m", "pip"];
  if (probe([...pip, "--version"]).status !== 0) return { skip: "python3 -m pip is not available to install kubernetes-validate" };
  const install = spawnSync(pip[0]!, [...pip.slice(1), "install", "--quiet", "--user", "kubernetes-validate"], { encoding: "utf8", timeout: 300_000 });
  if (install.status !== 0 || probe([...cli, "--version"]).status !== 0) {
    return { skip: `pip could not install kubernetes-validate (offline?): ${(install.stderr || install.stdout).trim().split("\n").at(-1)}` };
  }
  return { command: cli };
}

/** What a seccomp profile does with `name` on x86_64: its rule's action, or the default. */
function action(profile: { defaultAction: string; syscalls: { names: string[]; action: string }[] }, name: string): string {
  return profile.syscalls.find((rule) => rule.names.includes(name))?.action ?? profile.defaultAction;
}

describe("docs/deploy", () => {
  test("the Kubernetes manifest is valid for Kubernetes 1.37 (kubernetes-validate --strict)", { timeout: 400_000 }, (ctx) => {
    const v = validator();
    if ("skip" in v) {
      console.warn(`skipped: ${v.skip}`);
      ctx.skip();
      return;
    }
    const r = spawnSync(v.command[0]!, [...v.command.slice(1), "--strict", "--kubernetes-version", KUBERNETES, MANIFEST], { encoding: "utf8", timeout: 120_000 });
    expect(r.stdout + r.stderr).not.toMatch(/ERROR|failed/i);
    expect(r.status).toBe(0);
    for (const kind of ["secret", "persistentvolumeclaim", "deployment", "service"]) expect(r.stdout + r.stderr).toMatch(new RegExp(`passed for resource ${kind}/`));
  });

  test("the pod keeps the whole sandbox: its seccomp profile, a user namespace, an unmasked /proc, no AppArmor mount denial", () => {
    const yaml = readFileSync(MANIFEST, "utf8");
    expect(yaml).toMatch(/^ {6}hostUsers: false$/m);
    expect(yaml).toMatch(/^ {8}seccompProfile: \{ type: Localhost, localhostProfile: profiles\/workcell\.json \}$/m);
    expect(yaml).toMatch(/^ {8}appArmorProfile: \{ type: Unconfined \}$/m);
    expect(yaml).toMatch(/^ {12}procMount: Unmasked$/m);
    expect(yaml).toMatch(/^ {12}allowPrivilegeEscalation: false$/m);
    expect(yaml).toMatch(/^ {12}capabilities: \{ drop: \["ALL"\] \}$/m);
    expect(yaml).not.toMatch(/RuntimeDefault/);
    // The same for docker run.
    const dockerfile = readFileSync(join(DEPLOY, "Dockerfile"), "utf8");
    for (const opt of ["seccomp=docs/deploy/seccomp.json", "apparmor=unconfined", "systempaths=unconfined"]) expect(dockerfile).toContain(`--security-opt ${opt}`);
  });

  test("the seccomp profile allows the namespace, mount and Landlock calls and refuses what the sandbox never uses", () => {
    const profile = JSON.parse(readFileSync(join(DEPLOY, "seccomp.json"), "utf8"));
    expect(Object.keys(profile).sort()).toEqual(["archMap", "defaultAction", "syscalls"]);
    expect(profile.archMap.map((a: { architecture: string }) => a.architecture)).toEqual(["SCMP_ARCH_X86_64", "SCMP_ARCH_AARCH64"]);
    for (const rule of profile.syscalls) {
      expect(["SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO"]).toContain(rule.action);
      expect(rule.args ?? []).toEqual([]);
    }
    const sandbox = [
      "unshare", "clone", "clone3", "setns", "mount", "umount2", "open_tree", "move_mount", "mount_setattr",
      "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "prctl", "pidfd_open", "pidfd_send_signal",
      "waitid", "setrlimit", "prlimit64", "execve", "execveat", "openat2",
    ];
    expect(sandbox.filter((name) => action(profile, name) !== "SCMP_ACT_ALLOW")).toEqual([]);
    const never = ["bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key", "request_key", "init_module", "finit_module", "kexec_load", "io_uring_setup", "process_vm_readv", "process_vm_writev", "open_by_handle_at", "reboot", "pivot_root", "fsopen"];
    expect(never.filter((name) => action(profile, name) !== "SCMP_ACT_ERRNO")).toEqual([]);
  });
});
