//! Builtins whose arguments bash evaluates: numbers in `test`/`[`/`printf`/`let` (arithmetic,
//! which runs code hidden in a variable's value), variable names in `read`, `printf -v`,
//! `unset`, `declare`, `mapfile`, `getopts`, `wait -p`, `test -v`; directories of `cd`; the
//! keyword option of `set`; the action of `trap` (parsed as a script).

use super::argv::{check_variable_arg, check_variable_name, refuse, variable_name, Arg, Checker};
use super::names;
use super::{Check, RefuseReason, Refusal};

fn arithmetic(node: &str) -> Refusal {
    refuse(
        node,
        RefuseReason::Arithmetic,
        "bash evaluates this value as arithmetic, and arithmetic on a variable can run code hidden in its value; compare literal numbers, $? or $#, or compute with expr or awk",
    )
}

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

impl Checker<'_> {
    pub(super) fn check_builtin(&mut self, lname: &str, args: &[Arg], depth: usize) -> Check {
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
        self.check_script(code, depth + 1, self.grammar)
    }
}

pub(super) fn keyword_option(node: &str) -> Refusal {
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
    if path == "-" {
        return Err(refuse(&format!("{lname} {}", dir.raw), RefuseReason::Directory, hint));
    }
    check_directory(&format!("{lname} {}", dir.raw), path)
}

/// A directory a command changes into (`cd`, `env -C`, the starting points of
/// `find -execdir`): a relative path inside the workspace.
pub(super) fn check_directory(node: &str, path: &str) -> Check {
    if path != "." && path != "./" && crate::path::parse(path).is_err() {
        return Err(refuse(
            node,
            RefuseReason::Directory,
            "change only into a relative path inside the workspace, such as src (no .., no absolute path, no ~ or $HOME)",
        ));
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
