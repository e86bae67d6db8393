//! The command policy: decides, before any effect, whether an argv may run.
//!
//! [`check_command`] is a pure function of the argv and a [`Policy`]. It never runs, resolves
//! or reads anything. It refuses with `TOOL_ARGUMENTS_INVALID` whose message is
//! `COMMAND_REFUSED`, a hint telling the model what to do instead, and details
//! `{ command, reason }` naming the refused node and a stable reason code (see [`RefuseReason`]).
//!
//! What it checks, one module per concern:
//! - [`argv`]: one command: its name (a literal bare name, not deny-listed, allow-listed when an
//!   allow-list is set) and shells given `-c` (their script is parsed);
//! - [`wrappers`]: programs that run another program (`env`, `xargs`, `nice`, `timeout`,
//!   `command`, `exec`, `find -exec`...), followed to the program they run;
//! - [`builtins`]: builtins whose arguments bash evaluates as code or names (`read`,
//!   `printf -v`, `test -eq`, `declare`, `cd`, `trap`, `set -k`...).
//! - [`script`]: a shell script, parsed with brush-parser; every command node is checked as
//!   above, redirection targets must be workspace-relative paths, `$(...)`, backticks and
//!   process substitutions are walked.
//! - [`words`]: shell words: their value after quote removal when it is static, and the code
//!   hidden inside them (substitutions, parameter expansions, arithmetic).
//! - [`names`]: the tables (builtins, wrappers, shells, protected variables).
//!
//! What it cannot see: code a program reads at run time (a script file given to an interpreter,
//! `npm` scripts, a Makefile, `git` aliases, values read from files that bash later evaluates in
//! an arithmetic context). The policy judges the text it is given; confinement of what a
//! permitted program then does belongs to the sandbox.

mod argv;
mod builtins;
mod grammar;
mod names;
mod script;
mod words;
mod wrappers;

#[cfg(test)]
mod tests;

use serde_json::json;

use crate::error::{Error, Reason, Result};

pub use names::{DEFAULT_DENY_COMMANDS, EXEMPT_BUILTINS, UNCHECKED_RUNNERS};

/// Most argv items accepted.
pub const MAX_ARGV_ITEMS: usize = 64;
/// Default largest argv item, in UTF-8 bytes (a `sh -c` script is one item).
pub const DEFAULT_MAX_ARGUMENT_BYTES: usize = 32_768;
/// Default largest argv, all items together, in UTF-8 bytes.
pub const DEFAULT_MAX_ARGV_BYTES: usize = 65_536;
/// Most nesting constructs (`(`, `{`, `[`, `!`, backticks, `if`, `while`, `case`...) one script
/// may contain. It bounds the parser's recursion, so a hostile script cannot exhaust the stack.
pub const MAX_SCRIPT_OPENERS: usize = 512;
/// Deepest nesting of scripts (`$(...)` inside `bash -c` inside `$(...)`...) and of wrappers.
pub const MAX_NESTING: usize = 16;

/// Stack on which scripts are parsed and walked: the parser recurses once per nesting construct
/// (at most [`MAX_SCRIPT_OPENERS`] in all, nested scripts being parts of their parent's text),
/// and unoptimized builds use large frames. Reserved, not committed: only what a check touches
/// is used. A command without a script never allocates it.
pub(crate) const SCRIPT_STACK_BYTES: usize = 64 << 20;

/// Which commands may run. The host's JSON (`{ denyCommands?, allowCommands? }`) deserializes
/// over the default: a missing deny-list is [`DEFAULT_DENY_COMMANDS`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct Policy {
    /// Program names that never run, directly, through a wrapper or inside a script. Compared
    /// case-insensitively (ASCII). Default: [`DEFAULT_DENY_COMMANDS`].
    pub deny_commands: Vec<String>,
    /// When set, the only program names that may run (shell builtins in [`EXEMPT_BUILTINS`] and
    /// parsed `sh -c` scripts need no entry; wrapper programs such as `env` or `xargs` do).
    /// Naming a program in [`UNCHECKED_RUNNERS`] here is the only way to permit it.
    pub allow_commands: Option<Vec<String>>,
    /// Largest argv item in UTF-8 bytes (`ARGUMENT_TOO_LARGE`).
    #[serde(skip)]
    pub max_argument_bytes: usize,
    /// Largest argv, items together, in UTF-8 bytes (`ARGUMENTS_TOO_LARGE`).
    #[serde(skip)]
    pub max_argv_bytes: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            deny_commands: DEFAULT_DENY_COMMANDS.iter().map(|s| s.to_string()).collect(),
            allow_commands: None,
            max_argument_bytes: DEFAULT_MAX_ARGUMENT_BYTES,
            max_argv_bytes: DEFAULT_MAX_ARGV_BYTES,
        }
    }
}

impl Policy {
    /// A policy with the default deny-list and no allow-list.
    pub fn new() -> Self {
        Policy::default()
    }

    pub fn with_deny<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.deny_commands = names.into_iter().map(Into::into).collect();
        self
    }

    pub fn with_allow<I: IntoIterator<Item = S>, S: Into<String>>(mut self, names: I) -> Self {
        self.allow_commands = Some(names.into_iter().map(Into::into).collect());
        self
    }

    pub(crate) fn denies(&self, lname: &str) -> bool {
        self.deny_commands.iter().any(|d| d.eq_ignore_ascii_case(lname))
    }

    /// Whether the allow-list permits `lname` (always true without an allow-list).
    pub(crate) fn allows(&self, lname: &str) -> bool {
        match &self.allow_commands {
            None => true,
            Some(list) => list.iter().any(|a| a.eq_ignore_ascii_case(lname)),
        }
    }

    /// Whether the allow-list names `lname` explicitly.
    pub(crate) fn names_explicitly(&self, lname: &str) -> bool {
        self.allow_commands.as_ref().is_some_and(|list| list.iter().any(|a| a.eq_ignore_ascii_case(lname)))
    }

    /// The allow-list for hints, shortened.
    pub(crate) fn allow_summary(&self) -> String {
        let list = self.allow_commands.as_deref().unwrap_or(&[]);
        if list.is_empty() {
            return "none".to_string();
        }
        let mut out = list.iter().take(12).map(String::as_str).collect::<Vec<_>>().join(", ");
        if list.len() > 12 {
            out.push_str(&format!(" and {} more", list.len() - 12));
        }
        out
    }
}

/// Why a command was refused: the `reason` in the error's details.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RefuseReason {
    /// The program is on the deny-list.
    DenyListed,
    /// An allow-list is set and does not name the program.
    NotAllowListed,
    /// A program that runs other programs in ways the policy cannot follow (`strace`, `su`...).
    UncheckedRunner,
    /// The command name is built at run time (variable, substitution, glob, brace expansion).
    NotStatic,
    /// The command name contains `/`.
    PathInName,
    /// The command name is empty or has characters no program name needs.
    InvalidName,
    /// Syntax that only bash reads as such, in a script for a POSIX shell (`$'`, `&>`, `[[`...).
    ShellGrammar,
    /// A here-document where shells disagree about where its body ends.
    HereDocument,
    /// A duplication of a file descriptor above 2 that the script did not open itself.
    Descriptor,
    /// Code built or loaded at run time: `eval`, `source`, `alias`, `${!x}`, `${x@P}`...
    DynamicCode,
    /// A shell's `-c` script is not a literal, or a shell would read commands from stdin.
    NestedScript,
    /// A wrapper's options or operands cannot be followed to the program it runs.
    Wrapper,
    /// The script does not parse.
    ParseError,
    /// The script is too deeply nested or contains too many nesting constructs.
    TooComplex,
    /// A redirection target is not a workspace-relative path, `/dev/null` or an fd.
    RedirectTarget,
    /// `cd` or `pushd` would leave the workspace.
    Directory,
    /// Arithmetic (or a numeric test) on values bash would evaluate as code.
    Arithmetic,
    /// A variable name position holds something other than a literal identifier.
    VariableName,
    /// An assignment to a variable that changes how commands are found or run (`PATH`, `PS4`...).
    ProtectedVariable,
    /// A shell option that changes how words become commands (`set -k`).
    ShellOption,
}

impl RefuseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            RefuseReason::DenyListed => "deny_listed",
            RefuseReason::NotAllowListed => "not_allow_listed",
            RefuseReason::UncheckedRunner => "unchecked_runner",
            RefuseReason::NotStatic => "not_static",
            RefuseReason::PathInName => "path_in_name",
            RefuseReason::InvalidName => "invalid_name",
            RefuseReason::DynamicCode => "dynamic_code",
            RefuseReason::ShellGrammar => "shell_grammar",
            RefuseReason::HereDocument => "here_document",
            RefuseReason::Descriptor => "descriptor",
            RefuseReason::NestedScript => "nested_script",
            RefuseReason::Wrapper => "wrapper",
            RefuseReason::ParseError => "parse_error",
            RefuseReason::TooComplex => "too_complex",
            RefuseReason::RedirectTarget => "redirect_target",
            RefuseReason::Directory => "directory",
            RefuseReason::Arithmetic => "arithmetic",
            RefuseReason::VariableName => "variable_name",
            RefuseReason::ProtectedVariable => "protected_variable",
            RefuseReason::ShellOption => "shell_option",
        }
    }
}

/// A refusal inside the checker, before it becomes an [`Error`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Refusal {
    pub node: String,
    pub reason: RefuseReason,
    pub hint: String,
}

/// Longest node text quoted back in a hint or in details.
const MAX_NODE_CHARS: usize = 160;

pub(crate) fn shorten(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(MAX_NODE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

impl Refusal {
    pub fn new(node: &str, reason: RefuseReason, hint: impl Into<String>) -> Self {
        Refusal { node: shorten(node), reason, hint: hint.into() }
    }

    fn into_error(self) -> Error {
        // The message is the reason code; the hint names the refused node and the way forward.
        Error::invalid(Reason::CommandRefused, format!("refused `{}`: {}", self.node, self.hint))
            .with_details(json!({ "command": self.node, "reason": self.reason.as_str() }))
    }
}

pub(crate) type Check<T = ()> = std::result::Result<T, Refusal>;

/// Decides whether `argv` may run under `policy`. Pure: no effects, no lookups.
///
/// Shape and size errors come first: an empty argv is `INVALID_ARGUMENTS_SHAPE`, more than
/// [`MAX_ARGV_ITEMS`] items `TOO_MANY_ARGUMENTS`, a NUL in an item `INVALID_ARGUMENTS_SHAPE`, an
/// item over `max_argument_bytes` `ARGUMENT_TOO_LARGE`, all items over `max_argv_bytes`
/// `ARGUMENTS_TOO_LARGE`. Every policy decision is `COMMAND_REFUSED` with details
/// `{ command, reason }`.
pub fn check_command(argv: &[String], policy: &Policy) -> Result<()> {
    check_shape(argv, policy)?;
    // A panic inside the parser (a bug there) becomes a refusal, never a crash of the host.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| argv::Checker::new(policy).check_top(argv)));
    match outcome {
        Ok(Ok(())) => Ok(()),
        Ok(Err(refusal)) => Err(refusal.into_error()),
        Err(_panic) => Err(Refusal::new(
            argv.first().map(String::as_str).unwrap_or(""),
            RefuseReason::ParseError,
            "the command could not be analysed; write it more simply, or pass the program and its arguments as separate argv items without a shell",
        )
        .into_error()),
    }
}

fn check_shape(argv: &[String], policy: &Policy) -> Result<()> {
    if argv.is_empty() {
        return Err(Error::invalid(
            Reason::InvalidArgumentsShape,
            "argv must hold at least the program name, such as [\"npm\", \"test\"]",
        ));
    }
    if argv.len() > MAX_ARGV_ITEMS {
        return Err(Error::invalid(
            Reason::TooManyArguments,
            format!("argv has {} items; at most {MAX_ARGV_ITEMS} are accepted: pass fewer arguments, or write them to a file the program reads", argv.len()),
        )
        .with_details(json!({ "items": argv.len(), "limit": MAX_ARGV_ITEMS })));
    }
    let mut total = 0usize;
    for (index, item) in argv.iter().enumerate() {
        if item.contains('\0') {
            return Err(Error::invalid(
                Reason::InvalidArgumentsShape,
                format!("argv[{index}] contains a NUL character, which cannot be passed to a program; remove it"),
            )
            .with_details(json!({ "index": index })));
        }
        if item.len() > policy.max_argument_bytes {
            return Err(Error::invalid(
                Reason::ArgumentTooLarge,
                format!(
                    "argv[{index}] is {} bytes; each item may be at most {} bytes: write long content to a file with write_file and pass its path",
                    item.len(),
                    policy.max_argument_bytes
                ),
            )
            .with_details(json!({ "index": index, "bytes": item.len(), "limit": policy.max_argument_bytes })));
        }
        total += item.len();
    }
    if total > policy.max_argv_bytes {
        return Err(Error::invalid(
            Reason::ArgumentsTooLarge,
            format!(
                "argv is {total} bytes in all; at most {} are accepted: write long content to a file with write_file and pass its path",
                policy.max_argv_bytes
            ),
        )
        .with_details(json!({ "bytes": total, "limit": policy.max_argv_bytes })));
    }
    Ok(())
}
