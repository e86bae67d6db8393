//! One command: its name (static, bare, not deny-listed, allow-listed), then by kind: a shell
//! given a script ([`Checker::check_shell`]), a wrapper (see `wrappers`), a builtin whose
//! arguments bash evaluates (see `builtins`), or a program.
//!
//! A command reaches this module as a list of [`Arg`]s: from the tool's argv (every item a
//! literal) or from a simple command in a script (words that may expand). Whatever decides
//! which program runs must be static; arguments that are only data may be anything.

use super::builtins::keyword_option;
use super::grammar::Grammar;
use super::names::{self, DYNAMIC_CODE, EXEMPT_BUILTINS, PARSED_SHELLS};
use super::words::{Dynamic, WordInfo};
use super::wrappers::{spec_for, wrapper};
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

    /// Words a wrapper appends from its input at run time (`xargs` without `-I`): any number
    /// of fields, any text.
    pub fn input() -> Self {
        Arg {
            raw: "<input appended at run time>".to_string(),
            info: WordInfo { value: Err(Dynamic::Input), single_field: false, numeric_safe: false, static_prefix: String::new() },
            assignment: false,
        }
    }

    pub fn value(&self) -> Option<&str> {
        self.info.static_value()
    }

    /// This argument as a wrapper passes it on when it replaces `pattern` with its input: an
    /// argument containing the pattern becomes dynamic.
    pub(super) fn replacing(&self, pattern: &str) -> Arg {
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
    /// The grammar of the script being walked (a trap action runs in the same shell).
    pub grammar: Grammar,
    /// File descriptors above 2 the script opened with `exec` (they stay open).
    pub exec_fds: Vec<i32>,
    /// File descriptors above 2 opened by the redirections of the command being walked.
    pub local_fds: Vec<i32>,
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

pub(super) fn variable_name(node: &str, what: &str) -> Refusal {
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

pub(super) fn check_variable_arg(arg: &Arg, what: &str) -> Check {
    match arg.value() {
        Some(name) => check_variable_name(&arg.raw, name, what),
        None => Err(variable_name(&arg.raw, what)),
    }
}

impl<'p> Checker<'p> {
    pub fn new(policy: &'p Policy) -> Self {
        Checker { policy, on_script_stack: false, grammar: Grammar::Posix, exec_fds: Vec::new(), local_fds: Vec::new() }
    }

    /// The tool's argv: every item is a literal.
    pub fn check_top(&mut self, argv: &[String]) -> Check {
        let args: Vec<Arg> = argv.iter().map(|a| Arg::literal(a)).collect();
        self.check_argv(&args, 0)
    }

    pub(super) fn require_allowed(&self, lname: &str, node: &str) -> Check {
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
        if names::is_unchecked_runner(&lname) && !self.policy.names_explicitly(&lname) {
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
            return self.check_script(script, depth + 1, Grammar::of_shell(lname));
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
}
