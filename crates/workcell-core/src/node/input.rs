//! node_process's input limits, checked before any effect (in `validate` and again before
//! running).

use std::path::Path;

use super::{script_name, NodeRequest, RANDOM_HEX};
use crate::error::{Error, Reason, Result};
use crate::process;

/// Largest source, in UTF-8 bytes.
pub const MAX_SOURCE_BYTES: usize = 32_768;
/// Most arguments.
pub const MAX_ARGUMENTS: usize = 32;
/// Largest single argument, in UTF-8 bytes.
pub const MAX_ARGUMENT_BYTES: usize = 2_048;
/// Largest total of all arguments, in UTF-8 bytes.
pub const MAX_ARGUMENTS_BYTES: usize = 8_192;
/// Longest Windows command line (`[execPath, script, ...arguments]` quoted), in UTF-16 units.
pub const MAX_COMMAND_LINE_UNITS: usize = 30_000;
/// Checks the model's input against every limit. No effects; used by `validate` and again
/// before running.
pub fn check_request(req: &NodeRequest, exec_path: &Path, root: &Path) -> Result<()> {
    let source_bytes = req.source.len();
    if source_bytes > MAX_SOURCE_BYTES {
        return Err(Error::invalid(
            Reason::SourceTooLarge,
            format!("the source is {source_bytes} UTF-8 bytes; at most {MAX_SOURCE_BYTES} are accepted. Write longer code to a file in the workspace and require() it from a short script"),
        )
        .with_details(serde_json::json!({ "bytes": source_bytes, "limit": MAX_SOURCE_BYTES })));
    }
    let count = req.arguments.len();
    if count > MAX_ARGUMENTS {
        return Err(Error::invalid(
            Reason::TooManyArguments,
            format!("{count} arguments were given; at most {MAX_ARGUMENTS} are accepted. Pass data through a file in the workspace instead"),
        )
        .with_details(serde_json::json!({ "count": count, "limit": MAX_ARGUMENTS })));
    }
    let mut total = 0usize;
    for (index, arg) in req.arguments.iter().enumerate() {
        if arg.len() > MAX_ARGUMENT_BYTES {
            return Err(Error::invalid(
                Reason::ArgumentTooLarge,
                format!("argument {index} is {} UTF-8 bytes; each may have at most {MAX_ARGUMENT_BYTES}. Put large data in a file in the workspace and pass its path", arg.len()),
            )
            .with_details(serde_json::json!({ "index": index, "bytes": arg.len(), "limit": MAX_ARGUMENT_BYTES })));
        }
        if arg.contains('\0') {
            return Err(Error::invalid(
                Reason::InvalidArgumentsShape,
                format!("argument {index} contains a NUL character, which a command line cannot carry; remove it or pass the data through a file"),
            )
            .with_details(serde_json::json!({ "at": format!("arguments.arguments[{index}]"), "index": index })));
        }
        total += arg.len();
    }
    if total > MAX_ARGUMENTS_BYTES {
        return Err(Error::invalid(
            Reason::ArgumentsTooLarge,
            format!("the arguments add up to {total} UTF-8 bytes; at most {MAX_ARGUMENTS_BYTES} are accepted. Put large data in a file in the workspace and pass its path"),
        )
        .with_details(serde_json::json!({ "bytes": total, "limit": MAX_ARGUMENTS_BYTES })));
    }
    let units = command_line_units(req, exec_path, root);
    if units > MAX_COMMAND_LINE_UNITS {
        return Err(Error::invalid(
            Reason::CommandLineTooLong,
            format!("the command line would be {units} UTF-16 units on Windows; at most {MAX_COMMAND_LINE_UNITS} are accepted. Pass fewer or shorter arguments, or put the data in a file"),
        )
        .with_details(serde_json::json!({ "units": units, "limit": MAX_COMMAND_LINE_UNITS })));
    }
    Ok(())
}

/// The Windows command line of `[execPath, script path, ...arguments]`, in UTF-16 units.
pub fn command_line_units(req: &NodeRequest, exec_path: &Path, root: &Path) -> usize {
    let script = root.join(script_name(&"0".repeat(RANDOM_HEX)));
    let mut line = Vec::with_capacity(req.arguments.len() + 2);
    line.push(exec_path.to_string_lossy().into_owned());
    line.push(script.to_string_lossy().into_owned());
    line.extend(req.arguments.iter().cloned());
    process::windows_command_line_units(&line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(source: &str, arguments: &[&str]) -> NodeRequest {
        NodeRequest { source: source.into(), arguments: arguments.iter().map(|s| s.to_string()).collect(), timeout_ms: None }
    }

    fn reason(r: Result<()>) -> Option<String> {
        r.err().map(|e| e.reason().unwrap_or(e.code.as_str()).to_string())
    }

    const NODE: &str = "/usr/bin/node";
    const ROOT: &str = "/tmp/ws";

    fn check(r: &NodeRequest) -> Option<String> {
        reason(check_request(r, Path::new(NODE), Path::new(ROOT)))
    }

    #[test]
    fn source_limit_is_exact() {
        assert_eq!(check(&req(&"a".repeat(MAX_SOURCE_BYTES), &[])), None);
        assert_eq!(check(&req(&"a".repeat(MAX_SOURCE_BYTES + 1), &[])).as_deref(), Some("SOURCE_TOO_LARGE"));
        // Bytes, not characters: 10,923 × "é" (2 bytes) = 21,846 bytes is fine; 16,385 is not.
        assert_eq!(check(&req(&"é".repeat(16_384), &[])), None);
        assert_eq!(check(&req(&"é".repeat(16_385), &[])).as_deref(), Some("SOURCE_TOO_LARGE"));
    }

    #[test]
    fn argument_count_limit_is_exact() {
        let args: Vec<&str> = vec!["x"; MAX_ARGUMENTS];
        assert_eq!(check(&req("", &args)), None);
        let args: Vec<&str> = vec!["x"; MAX_ARGUMENTS + 1];
        assert_eq!(check(&req("", &args)).as_deref(), Some("TOO_MANY_ARGUMENTS"));
    }

    #[test]
    fn argument_size_limits_are_exact() {
        let max = "a".repeat(MAX_ARGUMENT_BYTES);
        let over = "a".repeat(MAX_ARGUMENT_BYTES + 1);
        assert_eq!(check(&req("", &[&max])), None);
        assert_eq!(check(&req("", &[&over])).as_deref(), Some("ARGUMENT_TOO_LARGE"));
        // Four of 2,048 make 8,192: accepted; one more byte anywhere is too much together.
        assert_eq!(check(&req("", &[&max, &max, &max, &max])), None);
        assert_eq!(check(&req("", &[&max, &max, &max, &max, "b"])).as_deref(), Some("ARGUMENTS_TOO_LARGE"));
        // UTF-8 bytes: 1,024 × "é" = 2,048 bytes.
        assert_eq!(check(&req("", &[&"é".repeat(1_024)])), None);
        assert_eq!(check(&req("", &[&format!("{}a", "é".repeat(1_024))])).as_deref(), Some("ARGUMENT_TOO_LARGE"));
    }

    #[test]
    fn nul_in_an_argument_is_refused() {
        let err = check_request(&req("", &["ok", "a\0b"]), Path::new(NODE), Path::new(ROOT)).unwrap_err();
        assert_eq!(err.reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        assert_eq!(err.details.unwrap()["index"], 1);
        assert!(err.hint.is_some());
    }

    #[test]
    fn command_line_limit_is_exact() {
        // The fixed part: execPath, the script path and the separating spaces.
        let base = command_line_units(&req("", &[]), Path::new(NODE), Path::new(ROOT));
        assert_eq!(base, NODE.len() + 1 + format!("{ROOT}/.workcell-node-{}.cjs", "0".repeat(16)).len());
        // Fill the line with 32 arguments of quote characters; each `"` quotes to `\"` and the
        // argument is wrapped in quotes. Pad the exec path so the total lands on the limit.
        let arg = "\"".repeat(256); // 8,192 bytes total, 32 × (512 + 2) units + 32 spaces
        let args: Vec<&str> = vec![&arg; 32];
        let fixed = command_line_units(&req("", &args), Path::new("/n"), Path::new(ROOT));
        let pad = MAX_COMMAND_LINE_UNITS - fixed;
        let exec_at_limit = format!("/n{}", "x".repeat(pad));
        let exec_over = format!("/n{}", "x".repeat(pad + 1));
        let at = command_line_units(&req("", &args), Path::new(&exec_at_limit), Path::new(ROOT));
        assert_eq!(at, MAX_COMMAND_LINE_UNITS);
        assert_eq!(reason(check_request(&req("", &args), Path::new(&exec_at_limit), Path::new(ROOT))), None);
        assert_eq!(
            reason(check_request(&req("", &args), Path::new(&exec_over), Path::new(ROOT))).as_deref(),
            Some("COMMAND_LINE_TOO_LONG")
        );
    }

    #[test]
    fn command_line_counts_utf16_units() {
        // "😀" is 4 UTF-8 bytes but 2 UTF-16 units.
        let with = command_line_units(&req("", &["😀"]), Path::new(NODE), Path::new(ROOT));
        let without = command_line_units(&req("", &[]), Path::new(NODE), Path::new(ROOT));
        assert_eq!(with - without, 3);
    }

    #[test]
    fn limits_are_checked_in_order() {
        let big = "a".repeat(MAX_SOURCE_BYTES + 1);
        let args: Vec<&str> = vec!["x"; 40];
        assert_eq!(check(&req(&big, &args)).as_deref(), Some("SOURCE_TOO_LARGE"));
    }
}
