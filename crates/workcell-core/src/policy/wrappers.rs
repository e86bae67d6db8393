//! Wrappers: programs and builtins that run another program (`env`, `xargs`, `nice`,
//! `timeout`, `command`, `exec`, `flock`, `watch`, `busybox`, `find -exec`...). Their options are
//! parsed as getopt does with a leading `+` (options stop at the first operand), and every word
//! up to the program they run must be literal: an expansion there could become an option or the
//! program itself. An option the policy does not know is refused rather than guessed at.

use super::argv::{check_variable_name, protected_variable, refuse, Arg, Checker};
use super::builtins::check_directory;
use super::grammar::Grammar;
use super::names;
use super::{Check, RefuseReason, Refusal};

pub(super) fn wrapper(node: &str, hint: impl Into<String>) -> Refusal {
    refuse(node, RefuseReason::Wrapper, hint)
}

#[derive(Default)]
pub(super) struct Spec {
    /// No allow-list entry needed: a shell builtin.
    builtin: bool,
    flags: &'static str,
    with_arg: &'static str,
    /// Short options whose argument, if any, is attached (`-i{}`).
    optional_arg: &'static str,
    long_flags: &'static [&'static str],
    long_with_arg: &'static [&'static str],
    long_optional: &'static [&'static str],
    /// Options after which no command runs (`command -v`, `taskset -p`, `--help`).
    no_command: &'static str,
    long_no_command: &'static [&'static str],
    /// Operands before the command (timeout's DURATION).
    operands: usize,
    /// `NAME=VALUE` operands before the command (env).
    assignments: bool,
    /// `-` alone is an option (env: same as -i).
    dash_is_flag: bool,
    /// `-N` / `--N` adjusts niceness (nice).
    numeric_adjustment: bool,
}

const HELP_VERSION: &[&str] = &["help", "version"];

pub(super) fn spec_for(lname: &str) -> Option<Spec> {
    Some(match lname {
        "command" => Spec { builtin: true, flags: "pvV", no_command: "vV", ..Spec::default() },
        "builtin" | "noglob" | "nocorrect" | "-" => Spec { builtin: true, ..Spec::default() },
        "exec" => Spec { builtin: true, flags: "cl", with_arg: "a", ..Spec::default() },
        "env" => Spec {
            flags: "iv0",
            with_arg: "uC",
            long_flags: &["ignore-environment", "null", "debug", "list-signal-handling"],
            long_with_arg: &["unset", "chdir"],
            long_optional: &["block-signal", "default-signal", "ignore-signal"],
            long_no_command: HELP_VERSION,
            assignments: true,
            dash_is_flag: true,
            ..Spec::default()
        },
        "nice" => Spec {
            with_arg: "n",
            long_with_arg: &["adjustment"],
            long_no_command: HELP_VERSION,
            numeric_adjustment: true,
            ..Spec::default()
        },
        "nohup" => Spec { long_no_command: HELP_VERSION, ..Spec::default() },
        "stdbuf" => Spec {
            with_arg: "ioe",
            long_with_arg: &["input", "output", "error"],
            long_no_command: HELP_VERSION,
            ..Spec::default()
        },
        "setsid" => Spec {
            flags: "cfwhV",
            no_command: "hV",
            long_flags: &["ctty", "fork", "wait"],
            long_no_command: HELP_VERSION,
            ..Spec::default()
        },
        "timeout" => Spec {
            flags: "fpv",
            with_arg: "ks",
            long_flags: &["foreground", "preserve-status", "verbose"],
            long_with_arg: &["kill-after", "signal"],
            long_no_command: HELP_VERSION,
            operands: 1,
            ..Spec::default()
        },
        "time" => Spec {
            flags: "apqvVlh",
            with_arg: "fo",
            no_command: "V",
            long_flags: &["append", "portability", "quiet", "verbose"],
            long_with_arg: &["format", "output"],
            long_no_command: HELP_VERSION,
            ..Spec::default()
        },
        "chrt" => Spec {
            flags: "abdefimoprRvhV",
            with_arg: "TPD",
            no_command: "pmhV",
            long_flags: &["all-tasks", "batch", "deadline", "ext", "fifo", "idle", "max", "other", "pid", "rr", "reset-on-fork", "verbose"],
            long_with_arg: &["sched-runtime", "sched-period", "sched-deadline"],
            long_no_command: HELP_VERSION,
            operands: 1,
            ..Spec::default()
        },
        "ionice" => Spec {
            flags: "thV",
            with_arg: "cnpPu",
            no_command: "pPuhV",
            long_flags: &["ignore"],
            long_with_arg: &["class", "classdata", "pid", "pgid", "uid"],
            long_no_command: &["help", "version", "pid", "pgid", "uid"],
            ..Spec::default()
        },
        "taskset" => Spec {
            flags: "acphV",
            no_command: "phV",
            long_flags: &["all-tasks", "cpu-list", "pid"],
            long_no_command: &["help", "version", "pid"],
            operands: 1,
            ..Spec::default()
        },
        "xargs" => Spec {
            flags: "0oprtx",
            with_arg: "adEILnPsJRS",
            optional_arg: "eil",
            long_flags: &["null", "open-tty", "interactive", "no-run-if-empty", "verbose", "exit", "show-limits"],
            long_with_arg: &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
            long_optional: &["eof", "replace", "max-lines"],
            long_no_command: HELP_VERSION,
            ..Spec::default()
        },
        "flock" => Spec {
            flags: "sexnoFuhV",
            with_arg: "wE",
            no_command: "hV",
            long_flags: &["shared", "exclusive", "unlock", "nonblock", "nb", "no-fork", "close", "verbose"],
            long_with_arg: &["timeout", "wait", "conflict-exit-code"],
            long_no_command: HELP_VERSION,
            operands: 1,
            ..Spec::default()
        },
        "watch" => Spec {
            flags: "bcCegprtwxhv",
            with_arg: "nq",
            optional_arg: "d",
            no_command: "hv",
            long_flags: &["beep", "color", "no-color", "errexit", "chgexit", "precise", "no-rerun", "no-title", "no-wrap", "no-linewrap", "exec"],
            long_with_arg: &["interval", "equexit"],
            long_optional: &["differences"],
            long_no_command: HELP_VERSION,
            ..Spec::default()
        },
        "prlimit" => Spec {
            flags: "hV",
            with_arg: "po",
            optional_arg: "AcdefilmnqrstuxyS",
            no_command: "phV",
            long_flags: &["noheadings", "raw", "verbose"],
            long_with_arg: &["pid", "output"],
            long_optional: &[
                "as", "core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss",
                "rtprio", "rttime", "sigpending", "stack",
            ],
            long_no_command: &["help", "version", "pid"],
            ..Spec::default()
        },
        "setarch" => Spec { long_no_command: &["help", "version", "list"], no_command: "hV", flags: "hV", operands: 1, ..Spec::default() },
        name if SETARCH_ALIASES.contains(&name) => setarch_options(),
        _ => return None,
    })
}

/// Names of setarch that fix the architecture (`linux64 CMD` is `setarch x86_64 CMD`).
pub(crate) const SETARCH_ALIASES: &[&str] = &[
    "linux32", "linux64", "i386", "i486", "i586", "i686", "x86_64", "ia64", "ppc", "ppc32", "ppc64", "ppcle",
    "ppc64le", "s390", "s390x", "sparc", "sparc32", "sparc32bash", "sparc64", "mips", "mips32", "mips64", "parisc",
    "parisc32", "parisc64", "alpha", "arm", "armh", "armv7l", "armv8l", "aarch64", "uname26",
];

/// The personality options of setarch (after its architecture) and of its aliases.
fn setarch_options() -> Spec {
    Spec {
        flags: "vRFZLXBIST3hV",
        no_command: "hV",
        long_flags: &[
            "verbose", "addr-no-randomize", "fdpic-funcptrs", "mmap-page-zero", "addr-compat-layout", "read-implies-exec",
            "32bit", "short-inode", "whole-seconds", "sticky-timeouts", "3gb", "4gb", "uname-2.6",
        ],
        long_no_command: &["help", "version", "list"],
        ..Spec::default()
    }
}

struct Parsed {
    /// Options seen, by their short letter or long name, with their argument.
    options: Vec<(String, Option<String>)>,
    /// Index of the first argument after the options, operands and assignments.
    next: usize,
    /// An option said that no command runs.
    no_command: bool,
}

impl Parsed {
    fn has(&self, opt: &str) -> bool {
        self.options.iter().any(|(o, _)| o == opt)
    }

    fn value(&self, opt: &str) -> Option<Option<&str>> {
        self.options.iter().rev().find(|(o, _)| o == opt).map(|(_, v)| v.as_deref())
    }
}

/// Resolves a long option name, exactly or by an unambiguous prefix as getopt_long does.
fn resolve_long(spec: &Spec, name: &str) -> Option<&'static str> {
    let all = || {
        spec.long_flags
            .iter()
            .chain(spec.long_with_arg)
            .chain(spec.long_optional)
            .chain(spec.long_no_command)
            .copied()
    };
    if let Some(exact) = all().find(|n| *n == name) {
        return Some(exact);
    }
    let mut prefixed = all().filter(|n| n.starts_with(name));
    let first = prefixed.next()?;
    if prefixed.any(|n| n != first) {
        return None;
    }
    Some(first)
}

/// Parses a wrapper's options, operands and assignments. Every word up to the command must be
/// static: an expansion there could become an option or the program itself.
fn parse_options(args: &[Arg], spec: &Spec, wrapper_name: &str) -> Check<Parsed> {
    let mut parsed = Parsed { options: Vec::new(), next: args.len(), no_command: false };
    let literal = |i: usize| -> Check<&str> {
        args[i].value().ok_or_else(|| {
            wrapper(
                &args[i].raw,
                format!("`{wrapper_name}` is followed by a word that expands at run time, so the program it runs cannot be known; write the options and the program name literally"),
            )
        })
    };
    let unknown = |word: &str| {
        wrapper(
            word,
            format!("`{wrapper_name}` with this option cannot be followed to the program it runs; call the program directly, or use only common options"),
        )
    };
    let mut i = 1;
    while i < args.len() {
        let word = literal(i)?;
        if word == "--" {
            i += 1;
            break;
        }
        if word == "-" && spec.dash_is_flag {
            parsed.options.push(("i".into(), None));
            i += 1;
            continue;
        }
        if spec.numeric_adjustment {
            let digits = word.trim_start_matches('-').trim_start_matches('+');
            if word.starts_with('-') && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) && word.len() - digits.len() <= 2 {
                parsed.options.push(("n".into(), Some(digits.to_string())));
                i += 1;
                continue;
            }
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, inline) = match long.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (long, None),
            };
            let name = resolve_long(spec, name).ok_or_else(|| unknown(word))?;
            let value = if spec.long_with_arg.contains(&name) {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        if i >= args.len() {
                            return Err(unknown(word));
                        }
                        Some(literal(i)?.to_string())
                    }
                }
            } else if spec.long_optional.contains(&name) {
                inline
            } else if inline.is_some() {
                return Err(unknown(word));
            } else {
                None
            };
            if spec.long_no_command.contains(&name) {
                parsed.no_command = true;
            }
            parsed.options.push((name.to_string(), value));
            i += 1;
            continue;
        }
        if word.len() > 1 && word.starts_with('-') {
            let cluster: Vec<char> = word[1..].chars().collect();
            let mut k = 0;
            while k < cluster.len() {
                let c = cluster[k];
                let rest: String = cluster[k + 1..].iter().collect();
                if spec.no_command.contains(c) {
                    parsed.no_command = true;
                }
                if spec.with_arg.contains(c) {
                    let value = if !rest.is_empty() {
                        rest
                    } else {
                        i += 1;
                        if i >= args.len() {
                            return Err(unknown(word));
                        }
                        literal(i)?.to_string()
                    };
                    parsed.options.push((c.to_string(), Some(value)));
                    break;
                }
                if spec.optional_arg.contains(c) {
                    parsed.options.push((c.to_string(), (!rest.is_empty()).then_some(rest)));
                    break;
                }
                if spec.flags.contains(c) {
                    parsed.options.push((c.to_string(), None));
                    k += 1;
                    continue;
                }
                return Err(unknown(word));
            }
            i += 1;
            continue;
        }
        break;
    }
    if !parsed.no_command {
        for _ in 0..spec.operands {
            if i < args.len() {
                literal(i)?;
                i += 1;
            }
        }
        if spec.assignments {
            while i < args.len() {
                let word = literal(i)?;
                match word.split_once('=') {
                    Some((name, _)) if !name.is_empty() => {
                        if names::is_protected_variable(name) {
                            return Err(protected_variable(&args[i].raw, name));
                        }
                        i += 1;
                    }
                    _ => break,
                }
            }
        }
    }
    parsed.next = i;
    Ok(parsed)
}

/// Primaries of find that take one argument: an expansion right after them is their operand.
const FIND_ARG_PRIMARIES: &[&str] = &[
    "-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex", "-lname",
    "-ilname", "-type", "-xtype", "-newer", "-anewer", "-cnewer", "-user", "-group", "-uid", "-gid",
    "-perm", "-size", "-mtime", "-atime", "-ctime", "-mmin", "-amin", "-cmin", "-used", "-links",
    "-inum", "-samefile", "-maxdepth", "-mindepth", "-fstype", "-context", "-printf", "-fprint",
    "-fprint0", "-fls", "-regextype", "-files0-from",
];
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

impl Checker<'_> {
    fn check_inner(&mut self, args: &[Arg], depth: usize) -> Check {
        if args.is_empty() {
            return Ok(());
        }
        self.check_argv(args, depth + 1)
    }

    pub(super) fn check_wrapper(&mut self, args: &[Arg], lname: &str, spec: &Spec, depth: usize) -> Check {
        if !spec.builtin {
            self.require_allowed(lname, &args[0].raw)?;
        }
        let parsed = parse_options(args, spec, lname)?;
        if parsed.no_command {
            return Ok(());
        }
        let inner = &args[parsed.next..];
        match lname {
            "xargs" => {
                if let Some(Some(name)) = parsed.value("process-slot-var") {
                    check_variable_name(name, name, "xargs --process-slot-var")?;
                }
                let replace = parsed
                    .value("I")
                    .flatten()
                    .or(parsed.value("J").flatten())
                    .or(parsed.value("i").map(|v| v.unwrap_or("{}")))
                    .or(parsed.value("replace").map(|v| v.unwrap_or("{}")));
                let Some(replace) = replace else {
                    // Append mode: the input becomes more arguments, so a wrapper or a shell
                    // in `inner` could take its program or script from it (`xargs xargs`,
                    // `xargs env`). Check the command as if it ended with an unknown word.
                    if inner.is_empty() {
                        return Ok(());
                    }
                    let mut appended = inner.to_vec();
                    appended.push(Arg::input());
                    return self.check_inner(&appended, depth);
                };
                if let Some(first) = inner.first() {
                    if !replace.is_empty() && first.value().is_some_and(|n| n.contains(replace)) {
                        return Err(wrapper(
                            &first.raw,
                            format!("xargs replaces `{replace}` in the command name with its input, so the program is chosen at run time; name the program literally"),
                        ));
                    }
                }
                // `xargs -I % sh -c %` would run its input as a script.
                let replaced: Vec<Arg> = inner.iter().map(|a| a.replacing(replace)).collect();
                self.check_inner(&replaced, depth)
            }
            "flock" => {
                // flock FILE -c 'script' runs the script with a shell.
                if let Some(first) = inner.first() {
                    if matches!(first.value(), Some("-c" | "--command")) {
                        let Some(script) = inner.get(1).and_then(Arg::value) else {
                            return Err(refuse(
                                inner.get(1).map_or(&first.raw, |a| &a.raw),
                                RefuseReason::NestedScript,
                                "the script given to `flock -c` must be a literal string",
                            ));
                        };
                        return self.check_script(script, depth + 1, Grammar::Posix);
                    }
                }
                self.check_inner(inner, depth)
            }
            "watch" if !(parsed.has("x") || parsed.has("exec")) => {
                // watch joins its arguments with spaces and runs them with `sh -c`.
                let mut script = String::new();
                for a in inner {
                    let Some(v) = a.value() else {
                        return Err(refuse(&a.raw, RefuseReason::NestedScript, "watch runs its arguments as a shell script; write them literally"));
                    };
                    if !script.is_empty() {
                        script.push(' ');
                    }
                    script.push_str(v);
                }
                if script.is_empty() {
                    return Ok(());
                }
                self.check_script(&script, depth + 1, Grammar::Posix)
            }
            "env" => {
                // env -C DIR runs the program elsewhere: its relative redirections and paths
                // are then outside the workspace.
                for key in ["C", "chdir"] {
                    if let Some(Some(dir)) = parsed.value(key) {
                        check_directory(&format!("env --chdir={dir}"), dir)?;
                    }
                }
                self.check_inner(inner, depth)
            }
            "setarch" => {
                // setarch ARCH [options] [program]: options come after the architecture.
                let after = parse_options(&args[parsed.next - 1..], &setarch_options(), lname)?;
                if after.no_command {
                    return Ok(());
                }
                self.check_inner(&args[parsed.next - 1 + after.next..], depth)
            }
            _ => self.check_inner(inner, depth),
        }
    }

    pub(super) fn check_busybox(&mut self, args: &[Arg], lname: &str, depth: usize) -> Check {
        self.require_allowed(lname, &args[0].raw)?;
        let Some(applet) = args.get(1) else { return Ok(()) };
        match applet.value() {
            None => Err(wrapper(&applet.raw, format!("the applet `{lname}` runs expands at run time; name it literally"))),
            Some("--list" | "--list-full" | "--help") => Ok(()),
            Some(v) if v.starts_with('-') => Err(wrapper(v, format!("`{lname}` with this option cannot be checked; run the applet by name"))),
            Some(_) => self.check_inner(&args[1..], depth),
        }
    }

    pub(super) fn check_find(&mut self, args: &[Arg], depth: usize) -> Check {
        self.require_allowed("find", &args[0].raw)?;
        if args.iter().any(|a| matches!(a.value(), Some("-execdir" | "-okdir"))) {
            // -execdir runs its command in the directory of each file found, beneath the
            // starting points: they must be directories inside the workspace, as for cd.
            let mut i = 1;
            while let Some(v) = args.get(i).and_then(Arg::value) {
                match v {
                    "-H" | "-L" | "-P" => i += 1,
                    "-D" => i += 2,
                    v if v.starts_with("-O") => i += 1,
                    _ => break,
                }
            }
            for arg in &args[i.min(args.len())..] {
                match arg.value() {
                    Some(v) if v.starts_with('-') || v == "(" || v == "!" || v == "," => break,
                    Some(v) => check_directory(&format!("find {v}"), v)?,
                    None => {
                        return Err(refuse(
                            &arg.raw,
                            RefuseReason::Directory,
                            "find -execdir runs commands beneath its starting points, which must be literal relative paths inside the workspace",
                        ))
                    }
                }
            }
        }
        // Every -exec family primary starts a command, checked even where find might read the
        // word differently (a primary's argument that happens to be spelled -exec): checking
        // more words as commands can only refuse more.
        let mut loose_expansions = 0;
        let mut in_exec = false;
        for (i, arg) in args.iter().enumerate().skip(1) {
            match arg.value() {
                Some(v) if FIND_EXEC.contains(&v) => {
                    let end = args[i + 1..]
                        .iter()
                        .position(|a| matches!(a.value(), Some(";" | "+")))
                        .map_or(args.len(), |p| i + 1 + p);
                    // find replaces {} in every argument: `-exec sh -c 'echo {}'` runs file names.
                    let replaced: Vec<Arg> = args[i + 1..end].iter().map(|a| a.replacing("{}")).collect();
                    self.check_inner(&replaced, depth)?;
                    in_exec = true;
                }
                Some(";" | "+") => in_exec = false,
                Some(_) => {}
                None => {
                    let after_primary = args[i - 1].value().is_some_and(|p| FIND_ARG_PRIMARIES.contains(&p));
                    if !arg.info.single_field {
                        return Err(wrapper(&arg.raw, "an unquoted expansion in a find command could add primaries such as -exec; quote it (\"$x\")"));
                    }
                    if after_primary {
                        continue;
                    }
                    loose_expansions += 1;
                    if !in_exec || loose_expansions > 1 {
                        return Err(wrapper(
                            &arg.raw,
                            "an expansion in this position of find could become a primary such as -exec; use literal paths and primaries, with expansions only as arguments of -name, -path and the like",
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
