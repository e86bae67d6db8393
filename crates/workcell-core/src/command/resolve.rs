//! Finding a program on the PATH the child gets, in Rust, before anything is spawned.
//!
//! Only absolute PATH entries are searched: an empty or relative entry would mean the working
//! directory, which is inside the workspace the model writes to. A candidate must be a regular
//! file (after following symlinks) that the host may execute. The path found is executed as it
//! is (not canonicalized), and the child's `argv[0]` stays the bare name, as a shell does, so
//! multi-call programs that dispatch on their name keep working.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The directories of `path` that are searched: absolute entries only, in order, without
/// repeats.
pub fn search_dirs(path: &OsStr) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    for dir in std::env::split_paths(path) {
        if dir.is_absolute() && !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Whether `candidate` is a regular file this process may execute.
fn executable(candidate: &Path) -> bool {
    match std::fs::metadata(candidate) {
        Ok(meta) if meta.is_file() && meta.permissions().mode() & 0o111 != 0 => {
            rustix::fs::access(candidate, rustix::fs::Access::EXEC_OK).is_ok()
        }
        _ => false,
    }
}

/// The first executable `dir/name` over the searched directories of `path`. `name` must be a
/// bare name (no `/`, not empty, not `.` or `..`): anything else is never found.
pub fn find_program(name: &str, path: &OsStr) -> Option<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        return None;
    }
    search_dirs(path).into_iter().map(|dir| dir.join(name)).find(|candidate| executable(candidate))
}

/// Directories named in the `COMMAND_NOT_FOUND` hint when they are searched: the standard
/// system ones. Others (a user's `~/.local/bin`, a project's tool directory) are only counted,
/// so the hint tells the model what to do without describing the host's file system.
const STANDARD_DIRS: &[&str] = &["/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"];

/// The `COMMAND_NOT_FOUND` error for `name` not found on `path`.
pub fn not_found(name: &str, path: &OsStr) -> crate::error::Error {
    use crate::error::{Code, Error};
    let dirs = search_dirs(path);
    let standard: Vec<&str> = STANDARD_DIRS.iter().copied().filter(|s| dirs.iter().any(|d| d == Path::new(s))).collect();
    let others = dirs.len() - standard.len();
    let searched = match (standard.is_empty(), others) {
        (_, _) if dirs.is_empty() => "PATH is empty".to_string(),
        (true, n) => format!("{n} PATH director{} searched", if n == 1 { "y" } else { "ies" }),
        (false, 0) => format!("searched {}", standard.join(", ")),
        (false, n) => format!("searched {} and {n} other director{}", standard.join(", "), if n == 1 { "y" } else { "ies" }),
    };
    Error::new(Code::CommandNotFound, format!("{name}: no such program on this tool's PATH"))
        .with_hint(format!(
            "check the spelling, or use a program that is installed here ({searched}); argv[0] must be a bare program name. Project tools are usually reached through their runner (npx <tool>, npm run <script>, cargo <cmd>); ask the user to install or expose a missing program"
        ))
        .with_details(serde_json::json!({ "command": name, "searched": dirs.len() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn finds_executables_in_order_and_skips_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        // In a: a non-executable file and a directory with the name; in b: the executable.
        fs::write(a.join("tool"), "#!/bin/sh\n").unwrap();
        fs::create_dir(a.join("dir-tool")).unwrap();
        fs::write(b.join("tool"), "#!/bin/sh\n").unwrap();
        fs::set_permissions(b.join("tool"), fs::Permissions::from_mode(0o755)).unwrap();
        fs::write(b.join("dir-tool"), "").unwrap();
        fs::set_permissions(b.join("dir-tool"), fs::Permissions::from_mode(0o700)).unwrap();
        let path = std::env::join_paths([&a, &b]).unwrap();
        assert_eq!(find_program("tool", &path), Some(b.join("tool")));
        assert_eq!(find_program("dir-tool", &path), Some(b.join("dir-tool")));
        assert_eq!(find_program("missing", &path), None);
        // Once a is executable too, it wins.
        fs::set_permissions(a.join("tool"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(find_program("tool", &path), Some(a.join("tool")));
    }

    #[test]
    fn relative_and_empty_entries_are_not_searched() {
        // "", "." and a relative name would all mean a working directory.
        assert_eq!(search_dirs(OsStr::new(":.:rel:/usr/bin:/usr/bin:./")), vec![PathBuf::from("/usr/bin")]);
        assert_eq!(find_program("sh", OsStr::new(":.:bin:usr/bin")), None);
    }

    #[test]
    fn command_not_found_hint_does_not_list_the_hosts_home_directories() {
        let path = OsStr::new("/home/alice/.local/bin:/usr/bin:/opt/secret-project/bin:/bin");
        let err = not_found("nope", path);
        let hint = err.hint.clone().unwrap();
        assert!(!hint.contains("alice") && !hint.contains("secret-project"), "{hint}");
        assert!(hint.contains("/usr/bin") && hint.contains("2 other directories"), "{hint}");
        let details = err.details.unwrap().to_string();
        assert!(!details.contains("alice") && !details.contains("secret"), "{details}");
        let only_home = not_found("nope", OsStr::new("/home/alice/bin"));
        assert!(only_home.hint.unwrap().contains("1 PATH directory searched"));
        assert!(not_found("nope", OsStr::new("")).hint.unwrap().contains("PATH is empty"));
    }

    #[test]
    fn names_with_a_slash_are_never_found() {
        for name in ["", ".", "..", "/bin/sh", "bin/sh", "./sh", "sh\0"] {
            assert_eq!(find_program(name, OsStr::new("/bin:/usr/bin")), None, "{name:?}");
        }
        assert!(find_program("sh", OsStr::new("/bin:/usr/bin")).is_some());
    }
}
