//! Errors with stable codes.
//!
//! Every refusal the tools can produce is one [`Code`]. The code strings are part of the public
//! contract (hosts and models match on them), so they never change once published. An error
//! also carries a human message, a hint that tells the model what to do next, and optional
//! structured details (JSON).

use std::fmt;
use std::io;

/// A stable error code. `as_str` gives the contract's spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    ToolArgumentsInvalid,
    WorkspaceRootChanged,
    PathEscapesWorkspace,
    FileNotFound,
    NotARegularFile,
    FileTooLarge,
    InvalidUtf8,
    SymlinkLoop,
    TargetChanged,
    NodeProcessTimeout,
    CommandNotFound,
    CommandTimeout,
    SandboxUnavailable,
    EditNotFound,
    EditNotUnique,
    PathProtected,
    TestsTimedOut,
    /// run_tests: the runner could not start or run (not installed, broken configuration).
    TestRunnerFailed,
    /// apply_patch's Add File, move_file without overwrite: something already has the name.
    FileExists,
    /// start_process: the table already runs `maxProcesses` processes.
    ProcessLimit,
    /// read/write/stop_process: no process has that id (never started, or finished and removed).
    ProcessNotFound,
    /// Checkpoints: no checkpoint has that id (never created, dropped, or dropped to stay
    /// within `maxBytes`).
    CheckpointNotFound,
    /// Staged runs: no staged change has that id (never made, applied, discarded or expired).
    StagedNotFound,
    IoError,
    /// Not a tool error: the call was cancelled. The JS layer turns it into an AbortError.
    Cancelled,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::ToolArgumentsInvalid => "TOOL_ARGUMENTS_INVALID",
            Code::WorkspaceRootChanged => "WORKSPACE_ROOT_CHANGED",
            Code::PathEscapesWorkspace => "PATH_ESCAPES_WORKSPACE",
            Code::FileNotFound => "FILE_NOT_FOUND",
            Code::NotARegularFile => "NOT_A_REGULAR_FILE",
            Code::FileTooLarge => "FILE_TOO_LARGE",
            Code::InvalidUtf8 => "INVALID_UTF8",
            Code::SymlinkLoop => "SYMLINK_LOOP",
            Code::TargetChanged => "TARGET_CHANGED",
            Code::NodeProcessTimeout => "NODE_PROCESS_TIMEOUT",
            Code::CommandNotFound => "COMMAND_NOT_FOUND",
            Code::CommandTimeout => "COMMAND_TIMEOUT",
            Code::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            Code::EditNotFound => "EDIT_NOT_FOUND",
            Code::EditNotUnique => "EDIT_NOT_UNIQUE",
            Code::PathProtected => "PATH_PROTECTED",
            Code::TestsTimedOut => "TESTS_TIMED_OUT",
            Code::TestRunnerFailed => "TEST_RUNNER_FAILED",
            Code::FileExists => "FILE_EXISTS",
            Code::ProcessLimit => "PROCESS_LIMIT",
            Code::ProcessNotFound => "PROCESS_NOT_FOUND",
            Code::CheckpointNotFound => "CHECKPOINT_NOT_FOUND",
            Code::StagedNotFound => "STAGED_NOT_FOUND",
            Code::IoError => "IO_ERROR",
            Code::Cancelled => "ABORTED",
        }
    }
}

/// Reason codes carried in the message of a `TOOL_ARGUMENTS_INVALID` error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    InvalidArgumentsShape,
    InvalidRelativePath,
    InvalidUnicode,
    ContentTooLarge,
    SourceTooLarge,
    TooManyArguments,
    ArgumentTooLarge,
    ArgumentsTooLarge,
    CommandLineTooLong,
    CommandRefused,
    /// apply_patch: the patch text does not follow the format (the hint names the line).
    PatchInvalid,
    /// start_process: a port the host does not allow (`options.ports`).
    PortNotAllowed,
    /// `stage: true` where the host set `stage: "never"`.
    StageNotAllowed,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::InvalidArgumentsShape => "INVALID_ARGUMENTS_SHAPE",
            Reason::InvalidRelativePath => "INVALID_RELATIVE_PATH",
            Reason::InvalidUnicode => "INVALID_UNICODE",
            Reason::ContentTooLarge => "CONTENT_TOO_LARGE",
            Reason::SourceTooLarge => "SOURCE_TOO_LARGE",
            Reason::TooManyArguments => "TOO_MANY_ARGUMENTS",
            Reason::ArgumentTooLarge => "ARGUMENT_TOO_LARGE",
            Reason::ArgumentsTooLarge => "ARGUMENTS_TOO_LARGE",
            Reason::CommandLineTooLong => "COMMAND_LINE_TOO_LONG",
            Reason::CommandRefused => "COMMAND_REFUSED",
            Reason::PatchInvalid => "PATCH_INVALID",
            Reason::PortNotAllowed => "PORT_NOT_ALLOWED",
            Reason::StageNotAllowed => "STAGE_NOT_ALLOWED",
        }
    }
}

/// A recoverable tool error (or a cancellation). Serializes as `{ code, message, hint?,
/// details? }` (the `code` as [`Code::as_str`]), the shape the model gets.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Error {
    #[serde(serialize_with = "code_str")]
    pub code: Code,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// Its numbers serialize as JS numbers, never BigInts ([`crate::json::value`]).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "details_js")]
    pub details: Option<serde_json::Value>,
}

fn details_js<S: serde::Serializer>(d: &Option<serde_json::Value>, s: S) -> std::result::Result<S::Ok, S::Error> {
    match d {
        Some(v) => crate::json::value(v, s),
        None => s.serialize_none(),
    }
}

fn code_str<S: serde::Serializer>(code: &Code, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_str(code.as_str())
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Error { code, message: message.into(), hint: None, details: None }
    }

    /// `TOOL_ARGUMENTS_INVALID` whose message is the reason code.
    pub fn invalid(reason: Reason, hint: impl Into<String>) -> Self {
        Error::new(Code::ToolArgumentsInvalid, reason.as_str()).with_hint(hint)
    }

    pub fn cancelled() -> Self {
        Error::new(Code::Cancelled, "the call was cancelled")
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn with_details(mut self, details: serde_json::Value) -> Self {
        self.details = Some(details);
        self
    }

    /// The reason code when this is a `TOOL_ARGUMENTS_INVALID` error.
    pub fn reason(&self) -> Option<&str> {
        (self.code == Code::ToolArgumentsInvalid).then_some(self.message.as_str())
    }

    pub fn is_cancelled(&self) -> bool {
        self.code == Code::Cancelled
    }

    pub fn escape(path: &str) -> Self {
        Error::new(Code::PathEscapesWorkspace, format!("{} leads outside the workspace", shown_name(path)))
            .with_hint("paths and the symlinks they pass through must stay inside the workspace; use a path such as src/index.ts")
    }

    pub fn not_found(path: &str) -> Self {
        Error::new(Code::FileNotFound, format!("{} does not exist", shown_name(path)))
            .with_hint("check the spelling; list the directory or search the workspace to find the file")
    }

    pub fn not_regular(path: &str, kind: &str) -> Self {
        Error::new(Code::NotARegularFile, format!("{} is not a regular file: {kind}", shown_name(path)))
            .with_hint("only regular files can be read or written; pass the path of a file, not a directory, link loop, FIFO, socket or device")
            .with_details(serde_json::json!({ "type": kind }))
    }

    pub fn root_changed(message: impl Into<String>) -> Self {
        Error::new(Code::WorkspaceRootChanged, message).with_hint(
            "the workspace directory was moved, replaced or deleted after the tools were created; stop and ask the user to recreate the tools",
        )
    }

    pub fn target_changed(path: &str) -> Self {
        Error::new(Code::TargetChanged, format!("{} changed while the call was using it", shown_name(path)))
            .with_hint("another process is modifying this path; read it again and retry")
    }

    /// Maps an I/O error met while working on `path` to a stable code.
    pub fn from_io(err: &io::Error, path: &str) -> Self {
        // cap-std reports an escape (openat2's EXDEV, an absolute symlink, a `..` above the
        // root) as PermissionDenied without an errno.
        if err.raw_os_error().is_none() && err.kind() == io::ErrorKind::PermissionDenied {
            return Error::escape(path);
        }
        match err.raw_os_error() {
            Some(libc::EXDEV) => Error::escape(path),
            Some(libc::ENOENT) => Error::not_found(path),
            Some(libc::ELOOP) => Error::new(Code::SymlinkLoop, format!("{}: too many levels of symbolic links", shown_name(path)))
                .with_hint("the path passes through a symlink loop (more than 40 hops); use the real path of the file"),
            Some(libc::EISDIR) => Error::not_regular(path, "directory"),
            Some(libc::ENXIO) | Some(libc::ENODEV) => Error::not_regular(path, "socket or device"),
            Some(libc::ENOTDIR) => Error::new(Code::FileNotFound, format!("{}: a parent component is not a directory", shown_name(path)))
                .with_hint("a component of the path is a file, not a directory; list the workspace to find the right path")
                .with_details(serde_json::json!({ "errno": "ENOTDIR" })),
            Some(errno) => Error::io_errno(errno, path),
            None => Error::new(Code::IoError, format!("{}: {err}", shown_name(path)))
                .with_hint("the operating system refused the operation; try a different path or report the problem to the user"),
        }
    }

    /// `IO_ERROR` naming the errno (`EACCES`, `EPERM` for an immutable file, `EROFS`): the
    /// caller could not open this existing file for writing, so a tool does not replace it.
    pub fn read_only(errno: i32, path: &str) -> Self {
        let name = errno_name(errno);
        Error::new(
            Code::IoError,
            format!("{name}: {}: the file is read-only for this process (it could not be opened for writing), so it was not changed", shown_name(path)),
        )
        .with_hint("the file is read-only: leave it as it is, or ask the user to make it writable (chmod u+w) if it should change")
        .with_details(serde_json::json!({ "errno": name, "readOnly": true }))
    }

    pub fn io_errno(errno: i32, path: &str) -> Self {
        let name = errno_name(errno);
        Error::new(Code::IoError, format!("{name}: {}: {}", shown_name(path), io::Error::from_raw_os_error(errno)))
            .with_hint(match errno {
                libc::EACCES | libc::EPERM => "permission denied; choose a file the workspace owner can access",
                libc::ENOSPC | libc::EDQUOT => "the disk is full; free space or write less",
                libc::EROFS => "the file system is read-only",
                _ => "the operating system refused the operation; try a different path or report the problem to the user",
            })
            .with_details(serde_json::json!({ "errno": name }))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for Error {}

/// A file name or path as the model reads it: every control character escaped, so a name can
/// never forge a line, a field or a terminal sequence in a result (a file named
/// `a.txt:1: ok\nb` cannot pass for a second `path:line: text` match). The one function every
/// tool uses wherever it shows a path it did not get from the model (walk results, symlink
/// targets, notes) or echoes one in an error message:
/// - `\` becomes `\\` (so the escaping is unambiguous; paths with a backslash cannot be
///   named in a call anyway);
/// - `\n`, `\r`, `\t` become `\n`, `\r`, `\t` (a backslash and a letter);
/// - other C0 controls (U+0000 to U+001F) and DEL (U+007F) become `\xNN` (two hex digits);
/// - C1 controls (U+0080 to U+009F) and the line and paragraph separators U+2028, U+2029 become
///   `\u{NN}` (hex digits of the code point).
///
/// Bytes that are not UTF-8 were already replaced by U+FFFD where the name was read.
pub fn shown_name(name: &str) -> std::borrow::Cow<'_, str> {
    let escaped = |c: char| c == '\\' || c.is_control() || c == '\u{2028}' || c == '\u{2029}';
    // Printable ASCII without a backslash (most names) is shown as it is, without decoding.
    if name.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'\\') || !name.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\0'..='\u{1f}' | '\u{7f}' => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if escaped(c) => {
                use std::fmt::Write as _;
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The symbolic name of an errno value (`EACCES`), or `E<number>`.
pub fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::EXDEV => "EXDEV",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EISDIR => "EISDIR",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENFILE => "ENFILE",
        libc::ETXTBSY => "ETXTBSY",
        libc::EFBIG => "EFBIG",
        libc::ENOSPC => "ENOSPC",
        libc::EROFS => "EROFS",
        libc::EMLINK => "EMLINK",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTEMPTY => "ENOTEMPTY",
        libc::ELOOP => "ELOOP",
        libc::EDQUOT => "EDQUOT",
        libc::ENOSYS => "ENOSYS",
        libc::ESTALE => "ESTALE",
        _ => return format!("E{errno}"),
    };
    name.to_string()
}

/// The tool error for an unusable host configuration (a message from the checks of
/// [`crate::host_config`]).
pub fn misconfigured(message: String) -> Error {
    Error::new(Code::IoError, message).with_hint("the tool is misconfigured; report this to the user")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_names_escape_every_control_character() {
        assert_eq!(shown_name("src/a.rs"), "src/a.rs");
        assert!(matches!(shown_name("plain/é.txt"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(shown_name("a\nb:1: ok"), "a\\nb:1: ok");
        assert_eq!(shown_name("t\tr\r"), "t\\tr\\r");
        assert_eq!(shown_name("\u{1b}]0;x\u{7}"), "\\x1b]0;x\\x07");
        assert_eq!(shown_name("del\u{7f}"), "del\\x7f");
        assert_eq!(shown_name("csi\u{9b}2J nel\u{85}"), "csi\\u{9b}2J nel\\u{85}");
        assert_eq!(shown_name("ls\u{2028}ps\u{2029}"), "ls\\u{2028}ps\\u{2029}");
        assert_eq!(shown_name("back\\slash"), "back\\\\slash");
        // Injective: the escaped form of a name never equals another name's.
        assert_ne!(shown_name("a\nb"), shown_name("a\\nb"));
        // Every control character is escaped: none survives.
        let all: String = (0u32..0x250).filter_map(char::from_u32).collect();
        assert!(!shown_name(&all).chars().any(|c| c.is_control()));
        // Error messages that echo a path use it.
        assert_eq!(Error::not_found("a\u{7f}b").message, "a\\x7fb does not exist");
        assert!(Error::io_errno(libc::EACCES, "x\u{85}").message.contains("x\\u{85}"));
    }

    #[test]
    fn codes_are_the_contract_spelling() {
        assert_eq!(Code::PathEscapesWorkspace.as_str(), "PATH_ESCAPES_WORKSPACE");
        assert_eq!(Code::WorkspaceRootChanged.as_str(), "WORKSPACE_ROOT_CHANGED");
        assert_eq!(Reason::InvalidRelativePath.as_str(), "INVALID_RELATIVE_PATH");
        assert_eq!(Reason::CommandLineTooLong.as_str(), "COMMAND_LINE_TOO_LONG");
    }

    #[test]
    fn io_errors_map_to_stable_codes() {
        let e = |n| Error::from_io(&io::Error::from_raw_os_error(n), "p").code;
        assert_eq!(e(libc::ENOENT), Code::FileNotFound);
        assert_eq!(e(libc::EXDEV), Code::PathEscapesWorkspace);
        assert_eq!(e(libc::ELOOP), Code::SymlinkLoop);
        assert_eq!(e(libc::EISDIR), Code::NotARegularFile);
        assert_eq!(e(libc::EACCES), Code::IoError);
        let denied = Error::from_io(&io::Error::from_raw_os_error(libc::EACCES), "p");
        assert!(denied.message.starts_with("EACCES"));
        let cap_escape = io::Error::new(io::ErrorKind::PermissionDenied, "a path led outside of the filesystem");
        assert_eq!(Error::from_io(&cap_escape, "p").code, Code::PathEscapesWorkspace);
    }

    #[test]
    fn every_hint_is_present_for_file_errors() {
        for err in [Error::escape("a"), Error::not_found("a"), Error::not_regular("a", "fifo"), Error::target_changed("a")] {
            assert!(err.hint.as_deref().is_some_and(|h| !h.is_empty()));
        }
    }
}
