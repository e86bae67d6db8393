//! The model's `args` for a runner, checked before any effect.
//!
//! Sizes first, as for node_process's arguments: at most [`MAX_ARGS`] strings, each at most
//! [`MAX_ARG_BYTES`] UTF-8 bytes, [`MAX_ARGS_BYTES`] together, no NUL. Then each runner has an
//! allow-list of options: selection and filtering (package patterns, file filters, `-run`,
//! `-t`, test names, features...). Everything that would change the reporter or the output
//! format, point the runner at files outside the workspace, or run another program (`-exec`,
//! `-toolexec`, `--config` with code, `--reporter`, `--nocapture`, test-binary flags...) is
//! refused with `COMMAND_REFUSED` and a hint listing what is accepted.

use serde_json::json;

use super::Runner;
use crate::error::{Error, Reason, Result};

/// Most arguments.
pub const MAX_ARGS: usize = 32;
/// Largest argument, in UTF-8 bytes.
pub const MAX_ARG_BYTES: usize = 2_048;
/// Largest total of all arguments, in UTF-8 bytes.
pub const MAX_ARGS_BYTES: usize = 8_192;

/// How an option takes its value.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// No value (`-v`; `-v=true` is accepted too).
    Flag,
    /// A value, as `--name=value` or in the next argument.
    Value,
    /// A value that is a workspace-relative path or pattern.
    PathValue,
}

struct Spec {
    names: &'static [&'static str],
    kind: Kind,
}

const fn f(names: &'static [&'static str]) -> Spec {
    Spec { names, kind: Kind::Flag }
}
const fn v(names: &'static [&'static str]) -> Spec {
    Spec { names, kind: Kind::Value }
}
const fn p(names: &'static [&'static str]) -> Spec {
    Spec { names, kind: Kind::PathValue }
}

const GO: &[Spec] = &[
    v(&["-run", "--run"]),
    v(&["-skip", "--skip"]),
    v(&["-count", "--count"]),
    v(&["-parallel", "--parallel"]),
    v(&["-cpu", "--cpu"]),
    v(&["-covermode", "--covermode"]),
    p(&["-coverpkg", "--coverpkg"]),
    v(&["-tags", "--tags"]),
    v(&["-shuffle", "--shuffle"]),
    v(&["-bench", "--bench"]),
    v(&["-benchtime", "--benchtime"]),
    v(&["-list", "--list"]),
    v(&["-vet", "--vet"]),
    v(&["-p", "--p"]),
    f(&["-v", "--v"]),
    f(&["-short", "--short"]),
    f(&["-failfast", "--failfast"]),
    f(&["-race", "--race"]),
    f(&["-cover", "--cover"]),
    f(&["-benchmem", "--benchmem"]),
    f(&["-trimpath", "--trimpath"]),
    f(&["-a", "--a"]),
    f(&["-fullpath", "--fullpath"]),
];

const VITEST: &[Spec] = &[
    v(&["-t", "--testNamePattern", "--test-name-pattern"]),
    v(&["--project"]),
    v(&["--shard"]),
    v(&["--retry"]),
    v(&["--bail"]),
    v(&["--environment"]),
    v(&["--pool"]),
    v(&["--maxWorkers", "--max-workers"]),
    v(&["--sequence.seed"]),
    p(&["--dir"]),
    p(&["-c", "--config"]),
    f(&["--passWithNoTests", "--pass-with-no-tests"]),
    f(&["--allowOnly", "--allow-only"]),
    f(&["--globals"]),
    f(&["-u", "--update"]),
    f(&["--sequence.shuffle"]),
    f(&["--isolate", "--no-isolate"]),
    f(&["--fileParallelism", "--no-file-parallelism", "--file-parallelism"]),
    f(&["--silent"]),
];

const NODE: &[Spec] = &[
    v(&["--test-name-pattern"]),
    v(&["--test-skip-pattern"]),
    v(&["--test-concurrency"]),
    v(&["--test-shard"]),
    f(&["--test-only"]),
];

const CARGO: &[Spec] = &[
    v(&["-p", "--package"]),
    v(&["--exclude"]),
    v(&["--bin"]),
    v(&["--test"]),
    v(&["--example"]),
    v(&["--bench"]),
    v(&["-F", "--features"]),
    v(&["-j", "--jobs"]),
    v(&["--profile"]),
    f(&["--workspace", "--all"]),
    f(&["--lib"]),
    f(&["--bins"]),
    f(&["--tests"]),
    f(&["--examples"]),
    f(&["--benches"]),
    f(&["--doc"]),
    f(&["--all-targets"]),
    f(&["--all-features"]),
    f(&["--no-default-features"]),
    f(&["-r", "--release"]),
    f(&["--locked"]),
    f(&["--frozen"]),
    f(&["--offline"]),
    f(&["--no-run"]),
];

/// libtest options accepted after `--`.
const LIBTEST: &[Spec] = &[
    v(&["--skip"]),
    v(&["--test-threads"]),
    f(&["--exact"]),
    f(&["--ignored"]),
    f(&["--include-ignored"]),
];

fn specs(runner: Runner) -> &'static [Spec] {
    match runner {
        Runner::Go => GO,
        Runner::Vitest => VITEST,
        Runner::Node => NODE,
        Runner::Cargo => CARGO,
    }
}

fn summary(list: &[Spec]) -> String {
    list.iter().map(|s| if s.kind == Kind::Flag { s.names[0].to_string() } else { format!("{} <value>", s.names[0]) }).collect::<Vec<_>>().join(", ")
}

fn positional_help(runner: Runner) -> &'static str {
    match runner {
        Runner::Go => "package patterns such as ./... or ./internal/store",
        Runner::Vitest => "file filters such as src/utils",
        Runner::Node => "test files such as test/a.test.js",
        Runner::Cargo => "a test name filter, and after -- libtest's --exact, --skip <name>, --ignored, --include-ignored, --test-threads <n> and filters",
    }
}

fn refuse(runner: Runner, index: usize, arg: &str, why: &str) -> Error {
    let shown: String = arg.chars().take(80).collect();
    Error::invalid(
        Reason::CommandRefused,
        format!(
            "refused `{shown}`: {why}. run_tests builds the {} command itself (its reporter, timeouts and output format are fixed); args may hold {} and these options: {}",
            runner.as_str(),
            positional_help(runner),
            summary(specs(runner))
        ),
    )
    .with_details(json!({ "command": runner.as_str(), "argument": shown, "index": index, "reason": "test_argument" }))
}

/// A workspace-relative path or pattern: not an option, no leading `/`, no `..` segment, no
/// backslash, colon or control character.
fn relative_pattern(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.starts_with('/')
        && !s.starts_with('~')
        && !s.chars().any(|c| c == '\\' || c == ':' || c.is_control())
        && !s.split('/').any(|seg| seg == "..")
}

/// Checks sizes, then every argument against the runner's allow-list.
pub fn check_args(runner: Runner, args: &[String]) -> Result<()> {
    if args.len() > MAX_ARGS {
        return Err(Error::invalid(
            Reason::TooManyArguments,
            format!("{} args were given; at most {MAX_ARGS} are accepted: select fewer packages or files", args.len()),
        )
        .with_details(json!({ "count": args.len(), "limit": MAX_ARGS })));
    }
    let mut total = 0;
    for (index, arg) in args.iter().enumerate() {
        if arg.contains('\0') {
            return Err(Error::invalid(
                Reason::InvalidArgumentsShape,
                format!("args[{index}] contains a NUL character, which cannot be passed to a program; remove it"),
            )
            .with_details(json!({ "index": index })));
        }
        if arg.len() > MAX_ARG_BYTES {
            return Err(Error::invalid(
                Reason::ArgumentTooLarge,
                format!("args[{index}] is {} bytes; each may be at most {MAX_ARG_BYTES}", arg.len()),
            )
            .with_details(json!({ "index": index, "bytes": arg.len(), "limit": MAX_ARG_BYTES })));
        }
        total += arg.len();
    }
    if total > MAX_ARGS_BYTES {
        return Err(Error::invalid(
            Reason::ArgumentsTooLarge,
            format!("args are {total} bytes together; at most {MAX_ARGS_BYTES} are accepted"),
        )
        .with_details(json!({ "bytes": total, "limit": MAX_ARGS_BYTES })));
    }

    let mut list = specs(runner);
    let mut after_separator = false;
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if runner == Runner::Cargo && arg == "--" && !after_separator {
            after_separator = true;
            list = LIBTEST;
            i += 1;
            continue;
        }
        if !arg.starts_with('-') || arg == "-" {
            let ok = match runner {
                Runner::Cargo => !arg.is_empty(),
                Runner::Go => relative_pattern(arg) && !arg.contains(['*', '?', '[']) || is_import_path(arg),
                _ => relative_pattern(arg),
            };
            if !ok {
                return Err(refuse(runner, i, arg, "a path or pattern must stay inside the workspace (relative, no .., no leading / or ~)"));
            }
            i += 1;
            continue;
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (arg.as_str(), None),
        };
        let Some(spec) = list.iter().find(|s| s.names.contains(&name)) else {
            return Err(refuse(runner, i, arg, "this option is not accepted"));
        };
        match spec.kind {
            Kind::Flag => {
                if inline.is_some_and(|v| !["true", "false"].contains(&v)) {
                    return Err(refuse(runner, i, arg, "this option takes no value"));
                }
                i += 1;
            }
            Kind::Value | Kind::PathValue => {
                let (value, used) = match inline {
                    Some(v) => (v, 1),
                    None => match args.get(i + 1) {
                        Some(v) => (v.as_str(), 2),
                        None => return Err(refuse(runner, i, arg, "this option needs a value")),
                    },
                };
                if spec.kind == Kind::PathValue && !value.split(',').all(|p| relative_pattern(p) || is_import_path(p)) {
                    return Err(refuse(runner, i, arg, "its value must be a path inside the workspace"));
                }
                if name.ends_with("pool") && !["threads", "forks", "vmThreads", "vmForks"].contains(&value) {
                    return Err(refuse(runner, i, arg, "the pool must be threads, forks, vmThreads or vmForks"));
                }
                i += used;
            }
        }
    }
    Ok(())
}

/// A Go import path such as `example.com/mod/pkg` or `net/http/...` (no leading `.` or `/`).
fn is_import_path(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with(['.', '/', '-', '~'])
        && s.split('/').all(|seg| !seg.is_empty() && seg != ".." && seg != ".")
        && s.chars().all(|c| c.is_ascii_alphanumeric() || "._~+-/".contains(c))
}

/// Whether `args` name a package or pattern for go (otherwise `./...` is added).
pub fn go_has_pattern(args: &[String]) -> bool {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if !arg.starts_with('-') {
            return true;
        }
        let takes_value = !arg.contains('=')
            && GO.iter().any(|s| s.kind != Kind::Flag && s.names.contains(&arg.as_str()));
        i += if takes_value { 2 } else { 1 };
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(runner: Runner, args: &[&str]) -> Option<String> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check_args(runner, &args).err().map(|e| e.reason().unwrap().to_string())
    }

    #[test]
    fn sizes_are_bounded() {
        assert_eq!(check(Runner::Go, &["./..."; 33]).as_deref(), Some("TOO_MANY_ARGUMENTS"));
        assert_eq!(check(Runner::Go, &[&"a".repeat(2_049)]).as_deref(), Some("ARGUMENT_TOO_LARGE"));
        let big = "a".repeat(2_048);
        assert_eq!(check(Runner::Cargo, &[&big, &big, &big, &big, "b"]).as_deref(), Some("ARGUMENTS_TOO_LARGE"));
        assert_eq!(check(Runner::Node, &["a\0b"]).as_deref(), Some("INVALID_ARGUMENTS_SHAPE"));
    }

    #[test]
    fn selection_and_filters_are_accepted() {
        for (runner, args) in [
            (Runner::Go, vec!["-run", "TestX|TestY", "./internal/...", "-v", "-count=3", "-race", "example.com/m/pkg"]),
            (Runner::Go, vec!["-run=^TestA$", "-short", "-tags", "integration", "./..."]),
            (Runner::Vitest, vec!["src/utils", "-t", "adds numbers", "--testNamePattern=x", "--bail", "1", "--pool=forks"]),
            (Runner::Vitest, vec!["--config", "vitest.config.ts", "--project", "unit", "-u"]),
            (Runner::Node, vec!["test/a.test.js", "test/**/*.test.mjs", "--test-name-pattern", "adds", "--test-only"]),
            (Runner::Cargo, vec!["parser", "-p", "core", "--features=x,y", "--lib", "--", "--exact", "--skip", "slow", "--test-threads=1"]),
        ] {
            assert_eq!(check(runner, &args), None, "{args:?}");
        }
    }

    #[test]
    fn reporters_other_programs_and_outside_paths_are_refused() {
        for (runner, args) in [
            (Runner::Go, vec!["-exec", "sh"]),
            (Runner::Go, vec!["-toolexec=strace"]),
            (Runner::Go, vec!["-json=false"]),
            (Runner::Go, vec!["-timeout", "1h"]),
            (Runner::Go, vec!["-o", "/tmp/x"]),
            (Runner::Go, vec!["-coverprofile=/etc/x"]),
            (Runner::Go, vec!["-args", "-test.v"]),
            (Runner::Go, vec!["../other/..."]),
            (Runner::Go, vec!["/abs/pkg"]),
            (Runner::Go, vec!["-C", "/"]),
            (Runner::Go, vec!["-modfile=../go.mod"]),
            (Runner::Go, vec!["-coverpkg", "../x"]),
            (Runner::Vitest, vec!["--reporter=verbose"]),
            (Runner::Vitest, vec!["--outputFile", "x.json"]),
            (Runner::Vitest, vec!["--testTimeout=1"]),
            (Runner::Vitest, vec!["--config", "/etc/vitest.config.ts"]),
            (Runner::Vitest, vec!["--dir", "../elsewhere"]),
            (Runner::Vitest, vec!["--pool", "custom-pool.js"]),
            (Runner::Vitest, vec!["--watch"]),
            (Runner::Vitest, vec!["--coverage.reportsDirectory=/tmp"]),
            (Runner::Vitest, vec!["../outside.test.ts"]),
            (Runner::Node, vec!["--test-reporter=spec"]),
            (Runner::Node, vec!["--import", "/tmp/evil.mjs"]),
            (Runner::Node, vec!["--require=./x.js"]),
            (Runner::Node, vec!["-e", "process.exit()"]),
            (Runner::Node, vec!["--test-timeout=1"]),
            (Runner::Node, vec!["/etc/passwd"]),
            (Runner::Cargo, vec!["--config", "target.x86_64-unknown-linux-gnu.runner='sh'"]),
            (Runner::Cargo, vec!["--manifest-path", "../Cargo.toml"]),
            (Runner::Cargo, vec!["-Zunstable-options"]),
            (Runner::Cargo, vec!["--message-format=json"]),
            (Runner::Cargo, vec!["-q"]),
            (Runner::Cargo, vec!["--", "--nocapture"]),
            (Runner::Cargo, vec!["--", "--format=json"]),
            (Runner::Cargo, vec!["--", "--logfile", "/tmp/x"]),
            (Runner::Go, vec!["-run"]),
            (Runner::Go, vec!["-v=yes"]),
        ] {
            assert_eq!(check(runner, &args).as_deref(), Some("COMMAND_REFUSED"), "{runner:?} {args:?}");
        }
        let err = check_args(Runner::Vitest, &["--reporter=dot".to_string()]).unwrap_err();
        assert!(err.hint.unwrap().contains("-t <value>"));
        assert_eq!(err.details.unwrap()["argument"], "--reporter=dot");
    }

    #[test]
    fn go_patterns_are_detected() {
        let s = |a: &[&str]| go_has_pattern(&a.iter().map(|x| x.to_string()).collect::<Vec<_>>());
        assert!(!s(&[]));
        assert!(!s(&["-run", "TestX", "-v"]));
        assert!(!s(&["-run=TestX"]));
        assert!(s(&["-run", "TestX", "./pkg"]));
        assert!(s(&["./..."]));
    }
}
