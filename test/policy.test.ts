import { describe, expect, test } from "vitest";
import { DEFAULT_DENY_COMMANDS, ToolError, checkCommand, type CommandCheck } from "../dist/index.js";
import { assertCommandAllowed } from "../dist/policy.js";

function refused(check: CommandCheck): Exclude<CommandCheck, { allowed: true }> {
  expect(check.allowed).toBe(false);
  if (check.allowed) throw new Error("unreachable");
  expect(check.code).toBe("TOOL_ARGUMENTS_INVALID");
  expect(check.hint.length).toBeGreaterThan(10);
  return check;
}

function reasonOf(argv: string[], policy?: Parameters<typeof checkCommand>[1]): string | undefined {
  const check = checkCommand(argv, policy);
  if (check.allowed) return undefined;
  expect(check.message).toBe("COMMAND_REFUSED");
  return (check.details as { reason: string }).reason;
}

const sh = (script: string) => ["sh", "-c", script];

describe("checkCommand", () => {
  test("accepts plain commands and checked scripts", () => {
    expect(checkCommand(["npm", "test"])).toEqual({ allowed: true });
    expect(checkCommand(["git", "commit", "-m", "fix `x` and $(y)"])).toEqual({ allowed: true });
    for (const script of [
      "a && b | c",
      "npm test 2>&1 | tail -n 50",
      "FOO=bar cmd > out.txt",
      "echo 'quoted $(sudo id)' \"$HOME\"",
      "cat <<'EOF'\n$(sudo id)\nEOF",
      'bash -c "echo nested"',
    ]) {
      expect(checkCommand(sh(script)), script).toEqual({ allowed: true });
    }
    // Process substitution is bash syntax: bash -c, not sh -c.
    expect(checkCommand(["bash", "-c", "diff <(sort a) <(sort b)"])).toEqual({ allowed: true });
  });

  test("refuses the deny-list directly, through wrappers, quoting and scripts", () => {
    const denyRm = { denyCommands: [...DEFAULT_DENY_COMMANDS, "rm"] };
    for (const argv of [
      ["sudo", "ls"],
      ["SUDO", "ls"],
      ["env", "sudo", "id"],
      ["xargs", "sudo"],
      ["timeout", "5", "sudo", "id"],
      sh("ls | sudo tee x"),
      sh("echo $(sudo id)"),
      sh("echo `sudo id`"),
      sh('bash -c "sudo id"'),
    ]) {
      expect(reasonOf(argv), argv.join(" ")).toBe("deny_listed");
    }
    for (const script of ["\\rm x", "r''m x", "command rm x", "env rm x", "xargs rm", "find . -exec rm {} \\;"]) {
      expect(reasonOf(sh(script), denyRm), script).toBe("deny_listed");
    }
  });

  test("a refusal names the node and says what to do instead", () => {
    const check = refused(checkCommand(sh("make && echo done > /etc/passwd")));
    expect(check.message).toBe("COMMAND_REFUSED");
    expect(check.details).toEqual({ command: "> /etc/passwd", reason: "redirect_target" });
    expect(check.hint).toContain("> /etc/passwd");
    expect(check.hint).toMatch(/out\.txt|\/dev\/null/);
    expect(JSON.parse(JSON.stringify(check))).toEqual(check);
  });

  test("refuses dynamic command names, paths, eval and dynamic nested scripts", () => {
    expect(reasonOf(["/bin/rm", "x"])).toBe("path_in_name");
    expect(reasonOf(sh("$(echo ls)"))).toBe("not_static");
    expect(reasonOf(sh("`echo ls`"))).toBe("not_static");
    expect(reasonOf(sh('eval "$x"'))).toBe("dynamic_code");
    expect(reasonOf(sh("source env.sh"))).toBe("dynamic_code");
    expect(reasonOf(sh('bash -c "$script"'))).toBe("nested_script");
    expect(reasonOf(sh("echo x > ../x"))).toBe("redirect_target");
    expect(reasonOf(sh("echo 'unterminated"))).toBe("parse_error");
    expect(reasonOf(sh("PATH=/tmp ls"))).toBe("protected_variable");
  });

  test("the allow-list covers every command run, builtins and checked scripts excepted", () => {
    const policy = { allowCommands: ["npm", "git"] };
    expect(checkCommand(["npm", "test"], policy)).toEqual({ allowed: true });
    expect(checkCommand(sh("cd src && npm test && git status; echo ok"), policy)).toEqual({ allowed: true });
    expect(reasonOf(["curl", "x"], policy)).toBe("not_allow_listed");
    expect(reasonOf(sh("npm test | tail"), policy)).toBe("not_allow_listed");
    expect(reasonOf(["env", "npm", "test"], policy)).toBe("not_allow_listed");
    const check = refused(checkCommand(["curl"], policy));
    expect(check.hint).toContain("npm, git");
  });

  test("a custom deny-list replaces the default, privilege tools stay refused", () => {
    expect(reasonOf(["curl"], { denyCommands: ["curl"] })).toBe("deny_listed");
    expect(checkCommand(["ls"], { denyCommands: [] })).toEqual({ allowed: true });
    expect(reasonOf(["sudo", "ls"], { denyCommands: [] })).toBe("unchecked_runner");
    expect(DEFAULT_DENY_COMMANDS).toEqual(["sudo", "su", "doas", "pkexec"]);
    expect(Object.isFrozen(DEFAULT_DENY_COMMANDS)).toBe(true);
  });

  test("malformed argv is a shape error, never a throw", () => {
    expect(refused(checkCommand([])).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refused(checkCommand("ls" as never)).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refused(checkCommand(["ls", 1 as never])).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refused(checkCommand(["echo", "a\u0000b"])).message).toBe("INVALID_ARGUMENTS_SHAPE");
    expect(refused(checkCommand(["echo", "\ud800"])).message).toBe("INVALID_UNICODE");
    const many = ["echo", ...Array.from({ length: 63 }, (_, i) => String(i))];
    expect(checkCommand(many)).toEqual({ allowed: true });
    const tooMany = refused(checkCommand([...many, "x"]));
    expect(tooMany.message).toBe("TOO_MANY_ARGUMENTS");
    expect(tooMany.details).toEqual({ items: 65, limit: 64 });
    expect(refused(checkCommand(["echo", "a".repeat(32_769)])).message).toBe("ARGUMENT_TOO_LARGE");
    const third = "a".repeat(21_846);
    expect(refused(checkCommand(["echo", third, third, third])).message).toBe("ARGUMENTS_TOO_LARGE");
  });

  test("a malformed policy is a TypeError (host configuration)", () => {
    expect(() => checkCommand(["ls"], { allowCommands: "ls" as never })).toThrow(TypeError);
    expect(() => checkCommand(["ls"], { denyCommands: [1 as never] })).toThrow(TypeError);
    expect(() => checkCommand(["ls"], null as never)).toThrow(TypeError);
  });

  test("deeply nested scripts are refused, not a crash", () => {
    const deep = `echo ${"$(".repeat(10_000)}x${")".repeat(10_000)}`;
    expect(reasonOf(sh(deep))).toBe("too_complex");
    expect(reasonOf(sh("echo 99999999999>x"))).toBe("parse_error");
  });

  test("assertCommandAllowed throws the refusal as a ToolError", () => {
    expect(() => assertCommandAllowed(["ls"])).not.toThrow();
    let caught: unknown;
    try {
      assertCommandAllowed(sh("sudo id"));
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ToolError);
    const err = caught as ToolError;
    expect(err.code).toBe("TOOL_ARGUMENTS_INVALID");
    expect(err.message).toBe("COMMAND_REFUSED");
    expect(err.details).toEqual({ command: "sudo", reason: "deny_listed" });
    expect(err.hint).toContain("sudo");
  });

  test("the shell named in argv decides the grammar: POSIX shells refuse bash-only syntax", () => {
    const allowLs = { allowCommands: ["ls"] };
    for (const script of [
      "echo $'\\'\nsudo -u root id\necho \\'' #'",
      "true &>/dev/null sudo id",
      "[[ a || sudo == x ]]",
      "[[ x > /outside/file ]]",
    ]) {
      expect(reasonOf(sh(script)), script).toBe("shell_grammar");
      expect(reasonOf(["dash", "-c", script], allowLs), script).toBe("shell_grammar");
    }
    expect(checkCommand(["bash", "-c", "[[ -f x ]] && ls &> out.txt"])).toEqual({ allowed: true });
  });

  test("here-documents bash could end elsewhere are refused", () => {
    for (const script of [
      "echo $(cat <<EOF\nx\nEOF)\nsudo csub\nEOF\n)",
      "x=$(cat <<'EOF'\nx\nEOF)\nsudo csub\nEOF\n)",
      "x=$(cat <<-EOF\n\tx\n\tEOF)\nsudo csub\nEOF\n)",
    ]) {
      expect(reasonOf(["bash", "-c", script]), script).toBe("here_document");
    }
    expect(checkCommand(["bash", "-c", "cat <<EOF\n$(date)\nEOF"])).toEqual({ allowed: true });
  });

  test("xargs cannot hand its input to a wrapper; unknown runners and directory changes are checked", () => {
    const policy = { allowCommands: ["xargs", "env", "ls", "find"] };
    expect(reasonOf(sh("echo id -u | xargs xargs"), policy)).toBe("wrapper");
    expect(reasonOf(sh("echo uname -a | xargs env"), policy)).toBe("wrapper");
    expect(checkCommand(sh("echo a | xargs ls"), policy)).toEqual({ allowed: true });
    expect(reasonOf(["prlimit", "--nofile=10", "sudo", "id"])).toBe("deny_listed");
    expect(reasonOf(["setarch", "x86_64", "sudo"])).toBe("deny_listed");
    expect(reasonOf(["linux64", "sudo"])).toBe("deny_listed");
    for (const runner of ["start-stop-daemon", "numactl", "chpst", "daemonize"]) {
      expect(reasonOf([runner, "ls"]), runner).toBe("unchecked_runner");
    }
    expect(reasonOf(["env", "-C", "/tmp", "sh", "-c", "echo x > f"])).toBe("directory");
    expect(reasonOf(["env", "--chdir=/tmp", "ls"])).toBe("directory");
    expect(reasonOf(["find", "/tmp", "-execdir", "ls", ";"])).toBe("directory");
  });

  test("descriptors above 2 the script did not open are refused; nesting is capped", () => {
    expect(reasonOf(sh("echo x >&3"))).toBe("descriptor");
    expect(checkCommand(sh("exec 3>out.txt; echo x >&3"))).toEqual({ allowed: true });
    const deep = `echo ${'"${x:-'.repeat(2000)}x${'}"'.repeat(2000)}`;
    expect(reasonOf(["bash", "-c", deep])).toBe("too_complex");
  });
});
