//! One command: its name, the wrappers that run another program, shells given a script, and
//! the builtins whose arguments bash evaluates.
//!
//! A command reaches this module as a list of [`Arg`]s: from the tool's argv (every item a
//! literal) or from a simple command in a script (words that may expand). Whatever decides
//! which program runs must be static; arguments that are only data may be anything.

use super::names::{self, DYNAMIC_CODE, EXEMPT_BUILTINS, PARSED_SHELLS, UNCHECKED_RUNNERS};
use super::words::{Dynamic, WordInfo};
use super::{Check, Policy, RefuseReason, Refusal, MAX_NESTING};

/// One word of a command.
#[derive(Clone, Debug)]
pub(crate) struct Arg {
    /// The word as written (for messages).
    pub raw: String,
    pub info: WordInfo,
    /// An assignment argument of a declaration builtin (`export A=$x`), already checked.
    pub assignment: bool,
}

impl Arg {
    pub fn literal(value: &str) -> Self {
        Arg { raw: value.to_string(), info: WordInfo::literal(value), assignment: false }
    }

    pub fn value(&self) -> Option<&str> {
        self.info.static_value()
    }

    /// This argument as a wrapper passes it on when it replaces `pattern` with its input: an
    /// argument containing the pattern becomes dynamic.
    fn replacing(&self, pattern: &str) -> Arg {
        if pattern.is_empty() || !self.value().is_some_and(|v| v.contains(pattern)) {
            return self.clone();
        }
        Arg {
            info: WordInfo { value: Err(Dynamic::Input), single_field: true, numeric_safe: false, static_prefix: String::new() },
            ..self.clone()
        }
    }
}

pub(crate) struct Checker<'p> {
    pub policy: &'p Policy,
    /// Scripts are being checked on the dedicated stack.
    pub on_script_stack: bool,
}

// ---------------------------------------------------------------------------------------------
// Refusals

pub(crate) fn refuse(node: &str, reason: RefuseReason, hint: impl Into<String>) -> Refusal {
    Refusal::new(node, reason, hint)
}

pub(crate) fn too_deep(node: &str) -> Refusal {
    refuse(
        node,
        RefuseReason::TooComplex,
        format!("commands are nested more than {MAX_NESTING} levels deep (scripts in scripts, wrappers in wrappers); write a flatter command"),
    )
}

fn not_static(arg: &Arg, kind: Dynamic) -> Refusal {
    let hint = match kind {
        Dynamic::Substitution => "a command substitution in command position runs a program chosen at run time; call the program by its literal name, such as ls".to_string(),
        _ => format!(
            "the command name is built from {} at run time; write the program's name literally, such as rm",
            kind.describe()
        ),
    };
    refuse(&arg.raw, RefuseReason::NotStatic, hint)
}

fn variable_name(node: &str, what: &str) -> Refusal {
    refuse(
        node,
        RefuseReason::VariableName,
        format!("{what} must be a literal variable name (letters, digits, _), because bash evaluates subscripts in names as code; write the name out"),
    )
}

pub(crate) fn protected_variable(node: &str, name: &str) -> Refusal {
    let instead = if name == "PATH" || name == "path" {
        "; run tools installed in the project through npx or npm run, and other programs by name"
    } else {
        ""
    };
    refuse(
        node,
        RefuseReason::ProtectedVariable,
        format!("assigning {name} would change which programs run or run code the policy never saw; leave {name} as it is{instead}"),
    )
}

fn arithmetic(node: &str) -> Refusal {
    refuse(
        node,
        RefuseReason::Arithmetic,
        "bash evaluates this value as arithmetic, and arithmetic on a variable can run code hidden in its value; compare literal numbers, $? or $#, or compute with expr or awk",
    )
}

fn wrapper(node: &str, hint: impl Into<String>) -> Refusal {
    refuse(node, RefuseReason::Wrapper, hint)
}

/// Checks a name used where the shell assigns or reads a variable by name.
pub(crate) fn check_variable_name(node: &str, name: &str, what: &str) -> Check {
    if !names::is_identifier(name) {
        return Err(variable_name(node, what));
    }
    if names::is_protected_variable(name) {
        return Err(protected_variable(node, name));
    }
    Ok(())
}

fn check_variable_arg(arg: &Arg, what: &str) -> Check {
    match arg.value() {
        Some(name) => check_variable_name(&arg.raw, name, what),
        None => Err(variable_name(&arg.raw, what)),
    }
}

// ---------------------------------------------------------------------------------------------
// Option parsing for wrappers (getopt with a leading `+`: options stop at the first operand)

#[derive(Default)]
struct Spec {
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

fn spec_for(lname: &str) -> Option<Spec> {
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
        _ => return None,
    })
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

// ---------------------------------------------------------------------------------------------
// test / [ operators

const TEST_UNARY: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-n", "-p", "-r", "-s", "-t", "-u", "-w", "-x",
    "-z", "-G", "-L", "-N", "-O", "-S",
];
const TEST_BINARY: &[&str] = &["=", "==", "!=", "<", ">", "-nt", "-ot", "-ef"];
const TEST_ARITH: &[&str] = &["-eq", "-ne", "-lt", "-le", "-gt", "-ge"];
const TEST_NAME: &[&str] = &["-v", "-R"];

/// Whether a printf format converts an argument as a number (which bash evaluates as
/// arithmetic).
fn format_has_numeric_conversion(format: &str) -> bool {
    let b = format.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'%' {
            i += 1;
            continue;
        }
        i += 1;
        if b.get(i) == Some(&b'%') {
            i += 1;
            continue;
        }
        while i < b.len() && b"-+ #0'".contains(&b[i]) {
            i += 1;
        }
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.' || b[i] == b'*') {
            if b[i] == b'*' {
                return true;
            }
            i += 1;
        }
        match b.get(i) {
            Some(b'd' | b'i' | b'o' | b'u' | b'x' | b'X' | b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' | b'(') => return true,
            _ => i += 1,
        }
    }
    false
}

impl<'p> Checker<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Checker { policy, on_script_stack: false }
    }

    /// The tool's argv: every item is a literal.
    pub fn check_top(&mut self, argv: &[String]) -> Check {
        let args: Vec<Arg> = argv.iter().map(|a| Arg::literal(a)).collect();
        self.check_argv(&args, 0)
    }

    fn require_allowed(&self, lname: &str, node: &str) -> Check {
        if self.policy.allows(lname) {
            return Ok(());
        }
        Err(refuse(
            node,
            RefuseReason::NotAllowListed,
            format!(
                "this program is not in the allowed commands ({}); use one of those, or ask the user to allow it",
                self.policy.allow_summary()
            ),
        ))
    }

    /// Checks one command (`args` is not empty).
    pub fn check_argv(&mut self, args: &[Arg], depth: usize) -> Check {
        let Some(first) = args.first() else { return Ok(()) };
        if depth > MAX_NESTING {
            return Err(too_deep(&first.raw));
        }
        let name = match &first.info.value {
            Ok(v) => v.as_str(),
            Err(kind) => return Err(not_static(first, *kind)),
        };
        if name.is_empty() {
            let node = if first.raw.is_empty() { "''" } else { first.raw.as_str() };
            return Err(refuse(node, RefuseReason::InvalidName, "the command name is empty; pass a program name such as ls"));
        }
        if name.contains('/') {
            let base = name.rsplit('/').find(|s| !s.is_empty()).unwrap_or("ls");
            return Err(refuse(
                &first.raw,
                RefuseReason::PathInName,
                format!("programs are named, not given by path; pass the bare name (`{base}`), which is looked up on PATH"),
            ));
        }
        if !names::is_program_name(name) {
            return Err(refuse(
                &first.raw,
                RefuseReason::InvalidName,
                "this is not a plain program name; use a bare name of letters, digits and . _ + - such as python3",
            ));
        }
        let lname = name.to_ascii_lowercase();
        if self.policy.denies(&lname) {
            return Err(refuse(
                &first.raw,
                RefuseReason::DenyListed,
                format!("`{lname}` is on the deny list and cannot run, directly, through a wrapper or inside a script; do the work without it, or ask the user to run it"),
            ));
        }
        if let Some(hint) = names::lookup(DYNAMIC_CODE, &lname) {
            return Err(refuse(&first.raw, RefuseReason::DynamicCode, hint));
        }
        if names::contains(UNCHECKED_RUNNERS, &lname) && !self.policy.names_explicitly(&lname) {
            return Err(refuse(
                &first.raw,
                RefuseReason::UncheckedRunner,
                format!("`{lname}` runs other programs or code in ways the policy cannot check; run the program directly, or ask the user to add {lname} to the allowed commands"),
            ));
        }
        if names::contains(PARSED_SHELLS, &lname) {
            return self.check_shell(args, &lname, depth);
        }
        match lname.as_str() {
            "find" => return self.check_find(args, depth),
            "busybox" | "toybox" => return self.check_busybox(args, &lname, depth),
            _ => {}
        }
        if let Some(spec) = spec_for(&lname) {
            return self.check_wrapper(args, &lname, &spec, depth);
        }
        if names::contains(EXEMPT_BUILTINS, &lname) {
            return self.check_builtin(&lname, args, depth);
        }
        self.require_allowed(&lname, &first.raw)
    }

    // -----------------------------------------------------------------------------------------
    // Shells

    fn check_shell(&mut self, args: &[Arg], lname: &str, depth: usize) -> Check {
        let node = &args[0].raw;
        let mut has_c = false;
        let mut i = 1;
        while i < args.len() {
            let Some(word) = args[i].value() else {
                if has_c {
                    break;
                }
                return Err(refuse(
                    &args[i].raw,
                    RefuseReason::NestedScript,
                    format!("the options or script of `{lname}` expand at run time and cannot be checked; pass [\"{lname}\", \"-c\", \"<literal script>\"]"),
                ));
            };
            if word == "--" || word == "-" {
                i += 1;
                break;
            }
            if let Some(long) = word.strip_prefix("--") {
                match long {
                    "norc" | "noprofile" | "posix" | "login" | "noediting" | "restricted" | "verbose" | "debugger"
                    | "dump-strings" | "dump-po-strings" | "pretty-print" => {}
                    "help" | "version" => return self.require_allowed(lname, node),
                    "rcfile" | "init-file" => i += 1,
                    _ => {
                        return Err(wrapper(
                            word,
                            format!("`{lname}` with this option cannot be checked; pass the script with -c, such as [\"{lname}\", \"-c\", \"npm test\"]"),
                        ))
                    }
                }
                i += 1;
                continue;
            }
            if word.len() > 1 && (word.starts_with('-') || word.starts_with('+')) {
                let plus = word.starts_with('+');
                let mut option_args = 0;
                for c in word[1..].chars() {
                    match c {
                        // `+c` runs the script too.
                        'c' => has_c = true,
                        'o' | 'O' => option_args += 1,
                        'i' | 's' if !plus => {
                            return Err(refuse(
                                word,
                                RefuseReason::NestedScript,
                                format!("`{lname} {word}` reads commands from stdin, which cannot be checked; pass [\"{lname}\", \"-c\", \"<script>\"]"),
                            ))
                        }
                        'k' if !plus => return Err(keyword_option(word)),
                        c if c.is_ascii_alphabetic() => {}
                        _ => return Err(wrapper(word, format!("`{lname}` with this option cannot be checked; pass the script with -c"))),
                    }
                }
                for _ in 0..option_args {
                    i += 1;
                    match args.get(i).and_then(Arg::value) {
                        Some("keyword") if !plus => return Err(keyword_option(word)),
                        Some(_) => {}
                        None => {
                            return Err(wrapper(
                                args.get(i).map_or(word, |a| a.raw.as_str()),
                                format!("`{lname} -o` needs a literal option name"),
                            ))
                        }
                    }
                }
                i += 1;
                continue;
            }
            break;
        }
        if has_c {
            let Some(script_arg) = args.get(i) else {
                return Err(refuse(node, RefuseReason::NestedScript, format!("`{lname} -c` needs a script; pass [\"{lname}\", \"-c\", \"<script>\"]")));
            };
            let Some(script) = script_arg.value() else {
                return Err(refuse(
                    &script_arg.raw,
                    RefuseReason::NestedScript,
                    format!("the script given to `{lname} -c` is built at run time and cannot be checked; pass the script text literally"),
                ));
            };
            return self.check_script(script, depth + 1, lname == "zsh");
        }
        if i < args.len() {
            // A script file: the shell is a program running code the policy cannot see.
            return self.require_allowed(lname, node);
        }
        Err(refuse(
            node,
            RefuseReason::NestedScript,
            format!("`{lname}` without -c reads commands from stdin, which cannot be checked; pass [\"{lname}\", \"-c\", \"<script>\"]"),
        ))
    }

    // -----------------------------------------------------------------------------------------
    // Wrappers

    fn check_inner(&mut self, args: &[Arg], depth: usize) -> Check {
        if args.is_empty() {
            return Ok(());
        }
        self.check_argv(args, depth + 1)
    }

    fn check_wrapper(&mut self, args: &[Arg], lname: &str, spec: &Spec, depth: usize) -> Check {
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
                let Some(replace) = replace else { return self.check_inner(inner, depth) };
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
                        return self.check_script(script, depth + 1, false);
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
                self.check_script(&script, depth + 1, false)
            }
            _ => self.check_inner(inner, depth),
        }
    }

    fn check_busybox(&mut self, args: &[Arg], lname: &str, depth: usize) -> Check {
        self.require_allowed(lname, &args[0].raw)?;
        let Some(applet) = args.get(1) else { return Ok(()) };
        match applet.value() {
            None => Err(wrapper(&applet.raw, format!("the applet `{lname}` runs expands at run time; name it literally"))),
            Some("--list" | "--list-full" | "--help") => Ok(()),
            Some(v) if v.starts_with('-') => Err(wrapper(v, format!("`{lname}` with this option cannot be checked; run the applet by name"))),
            Some(_) => self.check_inner(&args[1..], depth),
        }
    }

    fn check_find(&mut self, args: &[Arg], depth: usize) -> Check {
        self.require_allowed("find", &args[0].raw)?;
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

    // -----------------------------------------------------------------------------------------
    // Builtins

    fn check_builtin(&mut self, lname: &str, args: &[Arg], depth: usize) -> Check {
        let rest = &args[1..];
        match lname {
            "read" => check_read(rest),
            "mapfile" | "readarray" => check_mapfile(rest),
            "printf" => check_printf(rest),
            "test" => check_test(rest),
            "[" => {
                let operands = match rest.last().and_then(Arg::value) {
                    Some("]") => &rest[..rest.len() - 1],
                    _ => rest,
                };
                check_test(operands)
            }
            "let" => {
                for a in rest {
                    if !a.value().is_some_and(super::words::arith_text_safe) {
                        return Err(arithmetic(&a.raw));
                    }
                }
                Ok(())
            }
            "unset" => check_unset(rest),
            "export" | "declare" | "typeset" | "local" | "readonly" => check_declare(lname, rest),
            "getopts" => {
                single_field_argument(rest.first())?;
                match rest.get(1) {
                    Some(name) => check_variable_arg(name, "the variable getopts sets"),
                    None => Ok(()),
                }
            }
            "wait" => check_wait(rest),
            "cd" | "pushd" => check_cd(lname, rest),
            "set" => check_set(rest),
            "trap" => self.check_trap(rest, depth),
            "hash" => {
                for a in rest {
                    match a.value() {
                        Some(v) if v.starts_with('-') && v.contains('p') => {
                            return Err(refuse(&a.raw, RefuseReason::DynamicCode, "hash -p makes a name run another program; call programs by their own names"))
                        }
                        Some(_) => {}
                        None => return Err(refuse(&a.raw, RefuseReason::DynamicCode, "hash takes literal names here")),
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn check_trap(&mut self, args: &[Arg], depth: usize) -> Check {
        let mut i = 0;
        while let Some(v) = args.get(i).and_then(Arg::value) {
            match v {
                "--" => {
                    i += 1;
                    break;
                }
                "-p" | "-l" | "-P" => i += 1,
                _ => break,
            }
        }
        let operands = &args[i..];
        let Some(action) = operands.first() else { return Ok(()) };
        let Some(code) = action.value() else {
            return Err(refuse(&action.raw, RefuseReason::DynamicCode, "a trap action built at run time cannot be checked; write the action literally, such as trap 'rm -f tmp.txt' EXIT"));
        };
        // `trap SIG` (one operand) and `trap - SIG` reset; `trap '' SIG` ignores.
        if operands.len() == 1 || code == "-" || code.trim().is_empty() {
            return Ok(());
        }
        self.check_script(code, depth + 1, false)
    }
}

fn keyword_option(node: &str) -> Refusal {
    refuse(
        node,
        RefuseReason::ShellOption,
        "the keyword option turns arguments such as PATH=x into assignments, which the policy cannot follow; leave it off",
    )
}

/// Walks option clusters of a builtin: `with_arg` letters take the rest of the cluster or the
/// next word. Returns the index of the first operand, calling `on_option` for each option.
fn builtin_options(
    args: &[Arg],
    with_arg: &str,
    mut on_option: impl FnMut(char, Option<&Arg>, Option<&str>) -> Check,
) -> Check<usize> {
    let mut i = 0;
    while i < args.len() {
        let Some(word) = args[i].value() else {
            return Err(refuse(&args[i].raw, RefuseReason::VariableName, "options of this builtin must be literal words; an expansion here could turn into an option"));
        };
        if word == "--" {
            return Ok(i + 1);
        }
        if word.len() < 2 || !word.starts_with('-') {
            return Ok(i);
        }
        let chars: Vec<char> = word[1..].chars().collect();
        for (k, &c) in chars.iter().enumerate() {
            if with_arg.contains(c) {
                if k + 1 < chars.len() {
                    let rest: String = chars[k + 1..].iter().collect();
                    on_option(c, None, Some(&rest))?;
                } else {
                    i += 1;
                    on_option(c, args.get(i), None)?;
                }
                break;
            }
            on_option(c, None, None)?;
        }
        i += 1;
    }
    Ok(i)
}

/// An option argument that may expand: one field, so it cannot become another option.
fn single_field_argument(arg: Option<&Arg>) -> Check {
    match arg {
        Some(a) if a.value().is_none() && !a.info.single_field => Err(refuse(
            &a.raw,
            RefuseReason::VariableName,
            "quote this expansion (\"$x\") so that it stays one argument",
        )),
        _ => Ok(()),
    }
}

fn check_read(args: &[Arg]) -> Check {
    let operands = builtin_options(args, "adinNptu", |c, arg, inline| match c {
        'a' => match (arg, inline) {
            (_, Some(name)) => check_variable_name(name, name, "the array read fills"),
            (Some(a), None) => check_variable_arg(a, "the array read fills"),
            (None, None) => Ok(()),
        },
        _ => single_field_argument(arg),
    })?;
    for a in &args[operands.min(args.len())..] {
        check_variable_arg(a, "each variable read sets")?;
    }
    Ok(())
}

fn check_mapfile(args: &[Arg]) -> Check {
    let operands = builtin_options(args, "dnOsuCc", |c, arg, _inline| match c {
        'C' => Err(refuse(
            arg.map_or("mapfile -C", |a| a.raw.as_str()),
            RefuseReason::DynamicCode,
            "mapfile -C runs a callback string as code; process the lines in a loop instead",
        )),
        _ => single_field_argument(arg),
    })?;
    for a in &args[operands.min(args.len())..] {
        check_variable_arg(a, "the array mapfile fills")?;
    }
    Ok(())
}

fn check_unset(args: &[Arg]) -> Check {
    let mut functions = false;
    let operands = builtin_options(args, "", |c, _, _| {
        if c == 'f' {
            functions = true;
        }
        Ok(())
    })?;
    for a in &args[operands.min(args.len())..] {
        if functions {
            if a.value().is_none() {
                return Err(variable_name(&a.raw, "the function unset removes"));
            }
        } else {
            check_variable_arg(a, "each variable unset removes")?;
        }
    }
    Ok(())
}

fn check_declare(lname: &str, args: &[Arg]) -> Check {
    let mut options_done = false;
    for a in args {
        if a.assignment {
            options_done = true;
            continue;
        }
        let Some(word) = a.value() else {
            // `export "NAME=$value"`: the name is literal, only the value expands.
            match a.info.static_prefix.split_once('=') {
                Some((name, _)) if a.info.single_field && names::is_identifier(name) => {
                    check_variable_name(&a.raw, name, &format!("each name `{lname}` declares"))?;
                    options_done = true;
                    continue;
                }
                _ => return Err(variable_name(&a.raw, &format!("each name `{lname}` declares"))),
            }
        };
        if !options_done && word == "--" {
            options_done = true;
            continue;
        }
        if !options_done && word.len() > 1 && (word.starts_with('-') || word.starts_with('+')) {
            let attrs = &word[1..];
            let forbidden = if lname == "export" { "" } else { "in" };
            if let Some(c) = attrs.chars().find(|c| forbidden.contains(*c)) {
                let what = if c == 'i' { "integer variables evaluate every assignment as arithmetic" } else { "name references evaluate their value as a variable name" };
                return Err(refuse(&a.raw, RefuseReason::Arithmetic, format!("`{lname} -{c}`: {what}, which can run code; use plain variables")));
            }
            continue;
        }
        options_done = true;
        let name = word.split_once('=').map_or(word, |(n, _)| n);
        check_variable_name(&a.raw, name, &format!("each name `{lname}` declares"))?;
    }
    Ok(())
}

fn check_wait(args: &[Arg]) -> Check {
    let mut name_next = false;
    for (i, a) in args.iter().enumerate() {
        if name_next {
            check_variable_arg(a, "the variable wait -p sets")?;
            name_next = false;
            continue;
        }
        match a.value() {
            Some(v) if v.starts_with('-') && v.contains('p') => name_next = true,
            Some(_) => {}
            None if a.info.numeric_safe || (a.info.single_field && i + 1 == args.len()) => {}
            None => return Err(variable_name(&a.raw, "arguments of wait other than the last")),
        }
    }
    Ok(())
}

fn check_cd(lname: &str, args: &[Arg]) -> Check {
    let mut i = 0;
    while let Some(v) = args.get(i).and_then(Arg::value) {
        if v == "--" {
            i += 1;
            break;
        }
        if v.len() > 1 && v.starts_with('-') && v[1..].chars().all(|c| matches!(c, 'L' | 'P' | 'e' | '@')) {
            i += 1;
            continue;
        }
        break;
    }
    let hint = "cd only into a relative path inside the workspace, such as cd src (no .., no absolute path, no ~ or $HOME)";
    let Some(dir) = args.get(i) else {
        if lname == "pushd" {
            return Ok(());
        }
        return Err(refuse(lname, RefuseReason::Directory, format!("cd without a directory goes to HOME, outside the workspace; {hint}")));
    };
    let Some(path) = dir.value() else {
        return Err(refuse(&dir.raw, RefuseReason::Directory, format!("the directory expands at run time; {hint}")));
    };
    if lname == "pushd" && (path.starts_with('+') || path.starts_with('-')) && path[1..].bytes().all(|b| b.is_ascii_digit()) {
        // Rotating the stack only revisits directories pushed (and checked) before.
        return Ok(());
    }
    if path == "-" || crate::path::parse(path).is_err() {
        return Err(refuse(&format!("{lname} {}", dir.raw), RefuseReason::Directory, hint));
    }
    Ok(())
}

fn check_set(args: &[Arg]) -> Check {
    let mut i = 0;
    while i < args.len() {
        let Some(v) = args[i].value() else {
            return Err(refuse(&args[i].raw, RefuseReason::ShellOption, "set with an expansion before -- could turn it into options; write set -- \"$x\" to set positional parameters"));
        };
        if v == "--" || v == "-" {
            return Ok(());
        }
        if v.len() > 1 && (v.starts_with('-') || v.starts_with('+')) {
            let plus = v.starts_with('+');
            if !plus && v[1..].contains('k') {
                return Err(keyword_option(v));
            }
            if v[1..].contains('o') {
                i += 1;
                match args.get(i).map(|a| a.value()) {
                    Some(Some("keyword")) if !plus => return Err(keyword_option("set -o keyword")),
                    Some(Some(_)) | None => {}
                    Some(None) => return Err(refuse(&args[i].raw, RefuseReason::ShellOption, "set -o takes a literal option name")),
                }
            }
            i += 1;
            continue;
        }
        // Positional parameters start here: data.
        return Ok(());
    }
    Ok(())
}

fn check_printf(args: &[Arg]) -> Check {
    let mut i = 0;
    if let Some(first) = args.first() {
        match first.value() {
            Some("-v") => {
                match args.get(1) {
                    Some(name) => check_variable_arg(name, "the variable printf -v sets")?,
                    None => return Ok(()),
                }
                i = 2;
            }
            Some(v) if v.starts_with("-v") => {
                check_variable_name(&first.raw, &v[2..], "the variable printf -v sets")?;
                i = 1;
            }
            _ => {}
        }
    }
    if args.get(i).and_then(Arg::value) == Some("--") {
        i += 1;
    }
    let Some(format) = args.get(i) else { return Ok(()) };
    let data = &args[i + 1..];
    match format.value() {
        Some(f) => {
            if format_has_numeric_conversion(f) {
                if let Some(bad) = data.iter().find(|a| !a.info.numeric_safe) {
                    return Err(arithmetic(&bad.raw));
                }
            }
            Ok(())
        }
        None => {
            // A format that expands could be -v, or convert the arguments as numbers.
            let prefix = &format.info.static_prefix;
            if format.info.single_field && data.is_empty() && !prefix.is_empty() && !prefix.starts_with('-') {
                Ok(())
            } else {
                Err(refuse(
                    &format.raw,
                    RefuseReason::Arithmetic,
                    "printf's format must be literal (it can convert arguments as numbers, which bash evaluates as code); write printf '%s\\n' \"$x\"",
                ))
            }
        }
    }
}

/// `test` / `[`: numeric operators evaluate their operands as arithmetic, `-v` / `-R` evaluate
/// a name, and an expansion that could itself become such an operator is refused.
fn check_test(args: &[Arg]) -> Check {
    let value = |i: usize| args.get(i).and_then(Arg::value);
    for (i, a) in args.iter().enumerate() {
        match a.value() {
            Some(op) if TEST_ARITH.contains(&op) => {
                for j in [i.wrapping_sub(1), i + 1] {
                    if let Some(operand) = args.get(j) {
                        if !operand.info.numeric_safe {
                            return Err(arithmetic(&operand.raw));
                        }
                    }
                }
            }
            Some(op) if TEST_NAME.contains(&op) => {
                if let Some(name) = args.get(i + 1) {
                    check_variable_arg(name, &format!("the operand of test {op}"))?;
                }
            }
            Some(_) => {}
            None => {
                if a.info.numeric_safe {
                    continue;
                }
                if !a.info.single_field {
                    return Err(refuse(&a.raw, RefuseReason::VariableName, "quote expansions in a test (\"$x\") so that each stays one operand"));
                }
                let prev = if i > 0 { value(i - 1) } else { None };
                let next = value(i + 1);
                let operand = args.len() == 1
                    || prev.is_some_and(|p| TEST_UNARY.contains(&p) || TEST_BINARY.contains(&p) || TEST_ARITH.contains(&p))
                    || next.is_some_and(|n| TEST_BINARY.contains(&n) || TEST_ARITH.contains(&n))
                    || (prev == Some("!") && i + 1 == args.len());
                if !operand {
                    return Err(refuse(
                        &a.raw,
                        RefuseReason::VariableName,
                        "in a test, an expansion must be the operand of a literal operator, as in [ -n \"$x\" ] or [ \"$a\" = \"$b\" ], or it could become an operator",
                    ));
                }
            }
        }
    }
    Ok(())
}
