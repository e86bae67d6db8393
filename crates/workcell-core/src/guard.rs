//! The write guard: paths the writing tools (`write_file`, `edit_file`) refuse.
//!
//! - `protect`: globs over workspace-relative paths (default [`DEFAULT_PROTECT`]: `**/.git/**`,
//!   every git directory at any depth, so a nested repository such as `vendor/lib/.git` is
//!   covered too: a `core.fsmonitor` or hook planted there would run outside any sandbox at the
//!   next `git status`). A pattern `P/**` also protects `P` itself (so `**/.git/**` covers a
//!   `.git` file, as in a linked worktree or a submodule, and replacing a `.git` directory's
//!   name). Matching is case-insensitive (a
//!   case-insensitive file system would otherwise let `.GIT/config` through) and `*` does not
//!   cross `/`.
//! - `refuse_links`: a write whose path passes through any symlink (a parent directory or the
//!   final name) is refused.
//!
//! Both refusals are `PATH_PROTECTED`. A pattern is matched twice: against the normalized path
//! as the model named it, before anything happens, and against the path the write really
//! lands on, read back from the open directory handle the write uses (so a symlink
//! `x -> .git/config` or `d -> .git` cannot get around it). Before each missing parent
//! directory is created, where it would really appear is checked the same way, so no directory
//! is created inside a protected tree through a link either.

use std::ffi::OsStr;
use std::os::fd::AsFd;
use std::path::PathBuf;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use crate::error::{Code, Error, Result};
use crate::path::RelPath;
use crate::root::Workspace;

/// `NAME` when `pattern` is `**/NAME/**` or `**/NAME` with `NAME` one literal ASCII name (no
/// glob metacharacter, no separator): such a pattern matches exactly the paths whose last
/// component is `NAME` (ASCII case ignored), or that lie beneath one.
fn literal_name(pattern: &str) -> Option<&str> {
    let rest = pattern.strip_prefix("**/")?;
    let name = rest.strip_suffix("/**").unwrap_or(rest);
    let literal = !name.is_empty()
        && name != "."
        && name != ".."
        && name.is_ascii()
        && !name.bytes().any(|b| b"*?[]{}\\/!".contains(&b) || b.is_ascii_control());
    literal.then_some(name)
}

/// The patterns protected when the host gives none.
pub const DEFAULT_PROTECT: &[&str] = &["**/.git/**"];

#[derive(Debug)]
pub struct Guard {
    set: GlobSet,
    /// For each compiled glob, the pattern the host wrote.
    origin: Vec<String>,
    /// The host's patterns, as given.
    patterns: Vec<String>,
    /// When every pattern is `**/NAME/**` or `**/NAME` with a literal ASCII `NAME`: the names
    /// (an entry matches when its own name is one of them, ASCII case ignored).
    names: Option<Vec<String>>,
    refuse_links: bool,
}

impl Guard {
    /// Compiles `protect`; an invalid glob is an error naming it (a host configuration error).
    pub fn new<S: AsRef<str>>(protect: &[S], refuse_links: bool) -> std::result::Result<Guard, String> {
        let mut builder = GlobSetBuilder::new();
        let mut origin = Vec::new();
        for pattern in protect {
            let pattern = pattern.as_ref();
            let mut variants = vec![pattern.to_string()];
            if let Some(base) = pattern.strip_suffix("/**") {
                if !base.is_empty() {
                    variants.push(base.to_string());
                }
            }
            for v in variants {
                let glob = GlobBuilder::new(&v)
                    .literal_separator(true)
                    .case_insensitive(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| format!("invalid protect glob {pattern:?}: {e}"))?;
                builder.add(glob);
                origin.push(pattern.to_string());
            }
        }
        let set = builder.build().map_err(|e| format!("invalid protect globs: {e}"))?;
        let patterns: Vec<String> = protect.iter().map(|p| p.as_ref().to_string()).collect();
        let names = patterns.iter().map(|p| literal_name(p).map(str::to_string)).collect();
        Ok(Guard { set, origin, patterns, names, refuse_links })
    }

    /// The default guard: [`DEFAULT_PROTECT`], links allowed.
    pub fn default_guard() -> Guard {
        Guard::new(DEFAULT_PROTECT, false).expect("the default globs compile")
    }

    /// The host pattern `rel` matches, if any.
    pub fn matched(&self, rel: &str) -> Option<&str> {
        self.set.matches(rel).first().map(|&i| self.origin[i].as_str())
    }

    /// Whether the workspace-relative `rel` (any bytes) matches a pattern.
    pub fn matches_path(&self, rel: &std::path::Path) -> bool {
        self.set.is_match(rel)
    }

    /// The host's patterns, as given.
    pub fn patterns(&self) -> &[String] {
        &self.patterns
    }

    /// The literal names when every pattern is `**/NAME/**` or `**/NAME` (see the field).
    pub fn literal_names(&self) -> Option<&[String]> {
        self.names.as_deref()
    }

    fn check_rel(&self, shown: &str, rel: &str) -> Result<()> {
        match self.matched(rel) {
            Some(pattern) => Err(protected(shown, pattern, rel)),
            None => Ok(()),
        }
    }

    /// Checks before any effect: the path as named and, with `refuse_links`, that no existing
    /// component is a symlink. (Where directories really get created and where the file really
    /// lands are checked by [`Guard::check_mkdir`] and [`Guard::check_landing`].)
    pub fn check_before(&self, ws: &Workspace, path: &RelPath) -> Result<()> {
        let shown = path.as_str();
        self.check_rel(shown, shown)?;
        let segments: Vec<&str> = path.segments().collect();
        if self.refuse_links {
            let mut prefix = String::new();
            for seg in &segments {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(seg);
                match ws.dir().symlink_metadata(&prefix) {
                    Ok(m) if m.is_symlink() => return Err(through_link(shown, &prefix)),
                    Ok(m) if m.is_dir() => continue,
                    // Missing, a file, or an error the resolution reports properly.
                    _ => break,
                }
            }
        }
        Ok(())
    }

    /// Checks a directory about to be created: `lexical` (a prefix of `path`'s parents) would
    /// appear as the last name of `lexical` inside `base`.
    pub fn check_mkdir(&self, ws: &Workspace, path: &RelPath, base: &impl AsFd, lexical: &str) -> Result<()> {
        let shown = path.as_str();
        let mut real = real_rel(ws, base, shown)?;
        let name = lexical.rsplit('/').next().unwrap_or(lexical);
        real.push(name);
        // The rest of the path below the new directory.
        let rest = shown.strip_prefix(lexical).unwrap_or("").trim_start_matches('/');
        let real_dir = real.to_string_lossy().into_owned();
        if !rest.is_empty() {
            real.push(rest);
        }
        let real = real.to_string_lossy().into_owned();
        self.check_rel(shown, &real_dir)?;
        self.check_rel(shown, &real)?;
        if self.refuse_links && real_dir != lexical {
            return Err(through_link(shown, lexical).with_details(serde_json::json!({ "resolvesTo": real_dir })));
        }
        Ok(())
    }

    /// Checks the resolved target: a name in an open directory beneath the root.
    pub fn check_landing(&self, ws: &Workspace, path: &RelPath, dir: &impl AsFd, name: &OsStr) -> Result<()> {
        let shown = path.as_str();
        let mut real = real_rel(ws, dir, shown)?;
        real.push(name);
        let real = real.to_string_lossy().into_owned();
        self.check_rel(shown, &real)?;
        if self.refuse_links && real != shown {
            // The path went through a symlink (perhaps one swapped in after the first check).
            return Err(through_link(shown, &real).with_details(serde_json::json!({ "resolvesTo": real })));
        }
        Ok(())
    }
}

/// The location of an open directory relative to the workspace root (empty for the root).
fn real_rel(ws: &Workspace, dir: &impl AsFd, shown: &str) -> Result<PathBuf> {
    let abs = fd_path(dir).map_err(|e| Error::from_io(&e, shown))?;
    match abs.strip_prefix(ws.canonical()) {
        Ok(rel) => Ok(rel.to_path_buf()),
        Err(_) => Err(Error::escape(shown)),
    }
}

#[cfg(target_os = "linux")]
fn fd_path(dir: &impl AsFd) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd as _;
    std::fs::read_link(format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()))
}

#[cfg(target_os = "macos")]
fn fd_path(dir: &impl AsFd) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd as _;
    use std::os::unix::ffi::OsStrExt as _;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes into buf.
    let r = unsafe { libc::fcntl(dir.as_fd().as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) };
    if r == -1 {
        return Err(std::io::Error::last_os_error());
    }
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(PathBuf::from(OsStr::from_bytes(&buf[..len])))
}

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn fd_path(_dir: &impl AsFd) -> std::io::Result<PathBuf> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

pub(crate) fn protected(shown: &str, pattern: &str, real: &str) -> Error {
    let via = if real == shown { String::new() } else { format!(" (it leads to {real})") };
    Error::new(Code::PathProtected, format!("{shown} is protected from writes{via}"))
        .with_hint(format!(
            "the host protects paths matching {pattern}; writing tools may not change them: write somewhere else, or ask the user to make this change"
        ))
        .with_details(serde_json::json!({ "pattern": pattern, "resolvesTo": real }))
}

fn through_link(shown: &str, link: &str) -> Error {
    Error::new(Code::PathProtected, format!("{shown} passes through a symlink ({link}); this workspace refuses writes through symlinks"))
        .with_hint("write to the real path of the file, without symlinks on the way; list the directory to see where the link leads")
        .with_details(serde_json::json!({ "symlink": link }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::Cancel;
    use crate::write::{write, WriteRequest, MAX_WRITE_BYTES};
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::sync::Arc;

    fn setup() -> (tempfile::TempDir, PathBuf, Arc<Workspace>) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap().join("ROOT");
        fs::create_dir_all(root.join(".git")).unwrap();
        fs::write(root.join(".git/config"), "[core]\n").unwrap();
        let ws = Arc::new(Workspace::open(&root).unwrap());
        (tmp, root, ws)
    }

    async fn guarded(ws: &Arc<Workspace>, guard: &Arc<Guard>, path: &str, content: &str) -> Result<crate::write::WriteOutput> {
        let req = WriteRequest::new(path, content.into(), MAX_WRITE_BYTES)?.with_guard(Some(guard.clone()));
        crate::write::write_file(ws.clone(), req, crate::write::ticket(), Cancel::new()).await
    }

    #[test]
    fn patterns_cover_the_directory_itself_case_insensitively() {
        let g = Guard::default_guard();
        for p in [".git", ".git/config", ".git/hooks/pre-commit", ".GIT/config"] {
            assert_eq!(g.matched(p), Some("**/.git/**"), "{p}");
        }
        for p in [".github/x", "git/config", ".gitignore", "a/.gitmodules", "a.git/config", "x/my.git"] {
            assert_eq!(g.matched(p), None, "{p}");
        }
        let g = Guard::new(&["*.lock", "secrets/**"], false).unwrap();
        assert!(g.matched("Cargo.lock").is_some());
        assert!(g.matched("a/Cargo.lock").is_none(), "* must not cross /");
        assert!(g.matched("secrets").is_some());
        assert!(Guard::new(&["a/[b"], false).is_err());
    }

    #[test]
    fn the_default_covers_nested_repositories() {
        let g = Guard::default_guard();
        for p in ["vendor/lib/.git/config", "vendor/lib/.git", "a/b/c/.git/hooks/pre-commit", "sub/.GIT/config"] {
            assert_eq!(g.matched(p), Some("**/.git/**"), "{p}");
        }
        // The old default, `.git/**`, only covered the top-level repository.
        let old = Guard::new(&[".git/**"], false).unwrap();
        assert_eq!(old.matched("vendor/lib/.git/config"), None);
    }

    #[tokio::test]
    async fn a_nested_repository_config_cannot_be_planted() {
        // The attack: a core.fsmonitor command in a vendored repository's config runs, outside
        // any sandbox, the next time the user or an IDE runs `git status` there.
        let (_t, root, ws) = setup();
        fs::create_dir_all(root.join("vendor/lib/.git")).unwrap();
        fs::write(root.join("vendor/lib/.git/config"), "[core]\n").unwrap();
        let planted = "[core]\n\tfsmonitor = \"sh -c 'id > /tmp/pwned'\"\n";
        let guard = Arc::new(Guard::default_guard());
        for p in ["vendor/lib/.git/config", "vendor/lib/.git/hooks/pre-commit", "vendor/lib/.git", "vendor/new/.git/config"] {
            let err = guarded(&ws, &guard, p, planted).await.unwrap_err();
            assert_eq!(err.code, Code::PathProtected, "{p}: {err:?}");
        }
        assert_eq!(fs::read_to_string(root.join("vendor/lib/.git/config")).unwrap(), "[core]\n");
        assert!(!root.join("vendor/lib/.git/hooks").exists());
        assert!(!root.join("vendor/new").exists());
        // Through a link into the nested repository, too.
        symlink("vendor/lib/.git", root.join("g")).unwrap();
        assert_eq!(guarded(&ws, &guard, "g/config", planted).await.unwrap_err().code, Code::PathProtected);
        // With the protection off the same write lands (so the refusals above are the guard's).
        let off = Arc::new(Guard::new(&[".git/**"], false).unwrap());
        guarded(&ws, &off, "vendor/lib/.git/config", planted).await.unwrap();
        assert_eq!(fs::read_to_string(root.join("vendor/lib/.git/config")).unwrap(), planted);
    }

    #[tokio::test]
    async fn protected_paths_and_links_into_them_are_refused() {
        let (_t, root, ws) = setup();
        let guard = Arc::new(Guard::default_guard());
        symlink(".git/config", root.join("x")).unwrap();
        symlink(".git", root.join("d")).unwrap();
        symlink(".", root.join("here")).unwrap();
        for p in [".git/config", ".git", ".git/new/file", "x", "d/config", "d/hooks/new/file", "here/.git/config"] {
            let err = guarded(&ws, &guard, p, "pwned").await.unwrap_err();
            assert_eq!(err.code, Code::PathProtected, "{p}: {err:?}");
            assert!(err.hint.is_some());
        }
        assert_eq!(fs::read_to_string(root.join(".git/config")).unwrap(), "[core]\n");
        assert!(!root.join(".git/new").exists());
        assert!(!root.join(".git/hooks").exists(), "a directory was created inside .git through a link");
        // Without the guard the same write goes through (the test can fail).
        write(ws.clone(), "x", "through", Cancel::new()).await.unwrap();
        assert_eq!(fs::read_to_string(root.join(".git/config")).unwrap(), "through");
        // Other paths are fine.
        guarded(&ws, &guard, "src/ok.txt", "ok").await.unwrap();
    }

    #[test]
    fn a_link_swapped_in_after_the_first_look_creates_nothing_in_a_protected_tree() {
        // As if `d` had been a real directory during check_before and became a link to .git
        // right after: resolution itself consults the guard before each mkdir and at the end.
        let (_t, root, ws) = setup();
        symlink(".git", root.join("d")).unwrap();
        let guard = Guard::default_guard();
        let cancel = Cancel::new();
        for p in ["d/new/deeper/file", "d/config"] {
            let rel = crate::parse_path(p).unwrap();
            let err = match crate::write::resolve_guarded(&ws, &rel, &cancel, Some(&guard)) {
                Err(e) => e,
                Ok(r) => guard.check_landing(&ws, &rel, &r.dir, &r.name).unwrap_err(),
            };
            assert_eq!(err.code, Code::PathProtected, "{p}");
        }
        assert!(!root.join(".git/new").exists());
        // The same with refuse_links only: no directory is created behind the link.
        let links = Guard::new(&[] as &[&str], true).unwrap();
        fs::create_dir(root.join("real")).unwrap();
        symlink("real", root.join("r")).unwrap();
        let rel = crate::parse_path("r/new/file").unwrap();
        let err = crate::write::resolve_guarded(&ws, &rel, &cancel, Some(&links)).unwrap_err();
        assert_eq!(err.code, Code::PathProtected);
        assert!(!root.join("real/new").exists());
        // Unguarded resolution does create it (so the refusals above are the guard's).
        crate::write::resolve_guarded(&ws, &rel, &cancel, None).unwrap();
        assert!(root.join("real/new").is_dir());
    }

    #[tokio::test]
    async fn refuse_links_refuses_any_symlink_on_the_way() {
        let (_t, root, ws) = setup();
        fs::create_dir(root.join("real")).unwrap();
        fs::write(root.join("real/f"), "f").unwrap();
        symlink("real", root.join("dirlink")).unwrap();
        symlink("real/f", root.join("filelink")).unwrap();
        let guard = Arc::new(Guard::new(&[] as &[&str], true).unwrap());
        for p in ["dirlink/f", "filelink", "dirlink/new/g"] {
            let err = guarded(&ws, &guard, p, "x").await.unwrap_err();
            assert_eq!(err.code, Code::PathProtected, "{p}");
        }
        assert_eq!(fs::read_to_string(root.join("real/f")).unwrap(), "f");
        assert!(!root.join("real/new").exists());
        guarded(&ws, &guard, "real/f", "direct").await.unwrap();
        assert_eq!(fs::read_to_string(root.join("real/f")).unwrap(), "direct");
        // Without refuse_links, links inside are followed.
        let open = Arc::new(Guard::new(&[] as &[&str], false).unwrap());
        guarded(&ws, &open, "filelink", "via link").await.unwrap();
        assert_eq!(fs::read_to_string(root.join("real/f")).unwrap(), "via link");
    }
}
