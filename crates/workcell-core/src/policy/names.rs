//! The policy's tables: which names are builtins, wrappers, shells, runners, and which
//! variables a script may not assign. Names are compared in ASCII lowercase, because a
//! case-insensitive file system (macOS) finds `/usr/bin/sudo` for `SUDO`.

/// The default deny-list.
pub const DEFAULT_DENY_COMMANDS: &[&str] = &["sudo", "su", "doas", "pkexec"];

/// Shell builtins that run without an allow-list entry: they act inside the shell itself.
/// Several still have their arguments checked (see `argv::Checker::check_builtin`).
pub const EXEMPT_BUILTINS: &[&str] = &[
    ":", "true", "false", "cd", "pwd", "echo", "printf", "test", "[", "read", "set", "shift", "unset",
    "export", "local", "declare", "typeset", "readonly", "exit", "return", "break", "continue",
    "getopts", "wait", "type", "umask", "ulimit", "times", "shopt", "pushd", "popd", "dirs", "let",
    "mapfile", "readarray", "hash", "jobs", "trap", "unalias", "command", "builtin", "exec",
    "noglob", "nocorrect", "-",
];

/// Builtins that run code built or loaded at run time. Always refused.
pub(crate) const DYNAMIC_CODE: &[(&str, &str)] = &[
    ("eval", "eval runs a string as code, which cannot be checked; write the commands out directly"),
    ("source", "source runs a file's commands, which cannot be checked; write the commands out directly"),
    (".", "`.` (source) runs a file's commands, which cannot be checked; write the commands out directly"),
    ("alias", "aliases change what a word runs after the check; call the command directly"),
    ("fc", "fc re-runs history as code; write the command out directly"),
    ("r", "r re-runs history as code; write the command out directly"),
    ("enable", "enable loads builtins from shared objects; call programs directly"),
    ("bind", "bind attaches commands to keys; call the command directly"),
    ("complete", "completion builtins run commands indirectly; call the command directly"),
    ("compgen", "completion builtins run commands indirectly; call the command directly"),
    ("compopt", "completion builtins run commands indirectly; call the command directly"),
    ("emulate", "emulate can run a string as code; write the commands out directly"),
    ("sched", "sched runs commands later, outside the check; run the command directly"),
    ("zmodload", "zmodload loads shell modules; call programs directly"),
    ("autoload", "autoload loads functions from files, which cannot be checked; define or call the command directly"),
];

/// Programs that run other programs in ways the policy does not follow. Refused unless the
/// allow-list names them explicitly (the host then accepts what they run).
pub const UNCHECKED_RUNNERS: &[&str] = &[
    "sudo", "su", "doas", "pkexec", "sudoedit", "run0", "pfexec", "ksu", "gksu", "gksudo", "kdesu",
    "machinectl", "runuser", "sg", "newgrp", "setpriv", "capsh", "chroot",
    "unshare", "nsenter", "script", "strace", "ltrace", "gdb", "lldb", "valgrind", "perf", "at",
    "batch", "crontab", "systemd-run", "tmux", "screen", "parallel", "sem", "expect", "unbuffer",
    "rlwrap", "faketime", "fakeroot", "fakechroot", "eatmydata", "torsocks", "proxychains",
    "proxychains4", "firejail", "bwrap", "proot", "sandbox-exec", "caffeinate", "arch",
    "dbus-run-session", "dbus-launch", "xvfb-run", "entr", "catchsegv", "ssh-agent",
    // Runners with options the policy does not follow: they start a program as another user,
    // in another namespace, context or cgroup, later, or remotely.
    "start-stop-daemon", "chpst", "daemonize", "numactl", "runcon", "cgexec", "schedtool", "uclampset",
    "choom", "hwloc-bind", "cpulimit", "trickle", "tsocks", "torify", "nocache", "systemd-nspawn",
    "systemd-inhibit", "schroot", "su-exec", "gosu", "setuidgid", "envuidgid", "softlimit", "envdir",
    "setlock", "pgrphack", "s6-setuidgid", "s6-envdir", "s6-softlimit", "ssh", "sshpass", "rsh", "mosh",
    "lxc-attach", "lxc-execute", "flatpak-spawn", "run-parts", "chronic", "ifne", "pee", "lckdo",
    "mispipe", "zrun", "watchexec", "please", "calife", "beesu", "xdg-su", "op",
    "ld.so", "ld-linux.so.2", "ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "qemu-x86_64",
    "qemu-aarch64", "qemu-i386", "qemu-arm",
    // Shells whose syntax the policy does not parse.
    "fish", "csh", "tcsh", "nu", "elvish", "xonsh", "pwsh", "powershell", "rc", "es", "ion",
];

/// Shells whose `-c` script is parsed (with bash grammar, a superset of what they accept).
pub(crate) const PARSED_SHELLS: &[&str] =
    &["sh", "bash", "dash", "zsh", "ksh", "mksh", "ksh93", "oksh", "lksh", "pdksh", "ash", "rbash", "posh", "yash"];

/// Variables a script may not assign: they change how command names are found (`PATH`,
/// `BASH_CMDS`, `CDPATH`), run code the check never saw (`PS4`, `PROMPT_COMMAND`, `BASH_ENV`,
/// `ENV`, `ZDOTDIR`, `HOME` for startup files, `LD_PRELOAD`), or change shell parsing.
pub(crate) const PROTECTED_VARIABLES: &[&str] = &[
    "PATH", "path", "HOME", "ENV", "BASH_ENV", "CDPATH", "cdpath", "PS0", "PS1", "PS2", "PS3", "PS4",
    "PROMPT", "RPROMPT", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "BASH_CMDS", "BASH_ALIASES",
    "BASH_LOADABLES_PATH", "ZDOTDIR", "FPATH", "fpath", "module_path", "LD_PRELOAD",
    "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "DYLD_LIBRARY_PATH",
    "DYLD_FRAMEWORK_PATH",
];

/// Redirection targets outside the path grammar that are still fine.
pub(crate) const DEVICE_TARGETS: &[&str] = &["/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"];

pub(crate) fn lookup<'a>(table: &'a [(&'a str, &'a str)], lname: &str) -> Option<&'a str> {
    table.iter().find(|(n, _)| *n == lname).map(|(_, h)| *h)
}

/// Whether `lname` is an unchecked runner: in [`UNCHECKED_RUNNERS`], or a user-mode emulator or
/// dynamic loader (`qemu-*`, `ld-linux*`), which run the program file they are given.
pub(crate) fn is_unchecked_runner(lname: &str) -> bool {
    UNCHECKED_RUNNERS.contains(&lname) || lname.starts_with("qemu-") || lname.starts_with("ld-linux")
}

pub(crate) fn contains(table: &[&str], lname: &str) -> bool {
    table.contains(&lname)
}

/// A literal shell identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// Whether `name` may be assigned by a script.
pub(crate) fn is_protected_variable(name: &str) -> bool {
    PROTECTED_VARIABLES.contains(&name) || name.starts_with("LD_") || name.starts_with("DYLD_") || name.starts_with("BASH_FUNC_")
}

/// Characters a program name may contain: what real programs use (`g++`, `python3.12`,
/// `x86_64-linux-gnu-gcc`, `:`, `[`). Anything else (spaces, quotes, globs, `=`, `%`, non-ASCII)
/// is refused rather than guessed at.
pub(crate) fn is_program_name(name: &str) -> bool {
    name == "["
        || (!name.is_empty()
            && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-' | b':')))
}
