//! What a confined test runner may use besides the workspace and the system directories
//! ([`crate::sandbox::paths`]).
//!
//! Every runner: the directories of the program it runs (as given and resolved) and, of the
//! call's scratch directory, `home/` and `tmp/` (its HOME and TMPDIR) read and write, plus what
//! its plan names there: go's `gopath/` and `go-build/` read and write, node's reporter module
//! read only, vitest's report file (the file, written in place) read and write. Never the
//! scratch directory's top level: the runner cannot remove, rename or replace what the host
//! reads or runs from there, nor create anything beside it.
//!
//! - node and vitest: the Node.js that runs them (its directory).
//! - go: the Go installation the `go` program belongs to (`GOROOT`, found from the resolved
//!   program: `<goroot>/bin/go` with `<goroot>/src/runtime` beside it), read only; the host's
//!   `goCache` read and write (the build cache must be written; a shared one is shared with the
//!   tests), the host's `goModCache` read only.
//! - cargo: `RUSTUP_HOME` read only (the toolchains); of `CARGO_HOME` only `bin`, `registry`,
//!   `git` and the configuration files, read only. Not `credentials.toml` / `credentials` (the
//!   registry tokens), and nothing a test could write there to change the user's other builds.
//!   Cargo runs with its package cache lock unavailable, which it tolerates offline.
//!
//! The runner's grants are the least that lets the fixtures of each runner build and run; a
//! host adds more with `readPaths` / `writePaths`.

use std::path::{Path, PathBuf};

use crate::command::Scratch;
use crate::sandbox::{program_grants, Access, Grant};

use super::{Runner, TestsOptions};

/// Files and directories of `CARGO_HOME` a confined cargo may read.
pub const CARGO_HOME_READ: [&str; 5] = ["bin", "registry", "git", "config.toml", "config"];

/// The grants of one run of `runner` whose program is `program`.
pub fn runner_grants(runner: Runner, program: &Path, opts: &TestsOptions, scratch: &Scratch, in_scratch: &[Grant]) -> Vec<Grant> {
    let mut grants = program_grants(program);
    grants.push(Grant::new(scratch.home(), Access::ReadWrite));
    grants.push(Grant::new(scratch.tmp(), Access::ReadWrite));
    grants.extend(in_scratch.iter().cloned());
    match runner {
        Runner::Node | Runner::Vitest => {
            if program != opts.node_path {
                grants.extend(program_grants(&opts.node_path));
            }
        }
        Runner::Go => {
            if let Some(root) = go_root(program) {
                grants.push(Grant::new(root, Access::ReadExecute));
            }
            if let Some(cache) = &opts.go_cache {
                grants.push(Grant::new(cache, Access::ReadWrite));
            }
            if let Some(cache) = &opts.go_mod_cache {
                grants.push(Grant::new(cache, Access::ReadExecute));
            }
        }
        Runner::Cargo => {
            if let Some(home) = &opts.rustup_home {
                grants.push(Grant::new(home, Access::ReadExecute));
            }
            if let Some(home) = &opts.cargo_home {
                grants.extend(CARGO_HOME_READ.iter().map(|p| Grant::new(home.join(p), Access::ReadExecute)));
            }
        }
    }
    grants
}

/// The `GOROOT` of a `go` program: `<root>/bin/go` (resolved) with `<root>/src/runtime`.
pub fn go_root(program: &Path) -> Option<PathBuf> {
    let resolved = std::fs::canonicalize(program).ok()?;
    let root = resolved.parent().filter(|d| d.file_name().is_some_and(|n| n == "bin"))?.parent()?;
    (root != Path::new("/") && root.join("src").join("runtime").is_dir()).then(|| root.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(g: &[Grant]) -> Vec<(PathBuf, Access)> {
        g.iter().map(|g| (g.path.clone(), g.access)).collect()
    }

    #[test]
    fn go_root_needs_a_go_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("go/bin")).unwrap();
        std::fs::write(root.join("go/bin/go"), "").unwrap();
        assert_eq!(go_root(&root.join("go/bin/go")), None);
        std::fs::create_dir_all(root.join("go/src/runtime")).unwrap();
        assert_eq!(go_root(&root.join("go/bin/go")), Some(root.join("go")));
        // Through a symlink on the PATH, the installation it points to.
        std::fs::create_dir(root.join("bin")).unwrap();
        std::os::unix::fs::symlink(root.join("go/bin/go"), root.join("bin/go")).unwrap();
        assert_eq!(go_root(&root.join("bin/go")), Some(root.join("go")));
        assert_eq!(go_root(Path::new("/nonexistent/bin/go")), None);
    }

    #[test]
    fn cargo_gets_the_toolchains_but_not_the_credentials() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let mut opts = TestsOptions::new("/usr/bin", "/usr/bin/node");
        opts.cargo_home = Some("/h/.cargo".into());
        opts.rustup_home = Some("/h/.rustup".into());
        let got = paths(&runner_grants(Runner::Cargo, Path::new("/h/.cargo/bin/cargo"), &opts, &scratch, &[]));
        assert!(got.contains(&(PathBuf::from("/h/.rustup"), Access::ReadExecute)));
        assert!(got.contains(&(PathBuf::from("/h/.cargo/registry"), Access::ReadExecute)));
        assert!(got.contains(&(scratch.home(), Access::ReadWrite)));
        assert!(got.contains(&(scratch.tmp(), Access::ReadWrite)));
        // Never the scratch directory's top level.
        assert!(!got.iter().any(|(p, _)| p == scratch.path()));
        for (p, access) in &got {
            assert_ne!(p, Path::new("/h/.cargo"));
            assert!(!p.ends_with("credentials.toml") && !p.ends_with("credentials"));
            if p.starts_with("/h") {
                assert_eq!(*access, Access::ReadExecute, "{p:?}");
            }
        }
    }

    #[test]
    fn go_caches_from_the_host() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let mut opts = TestsOptions::new("/usr/bin", "/usr/bin/node");
        opts.go_cache = Some("/c/go-build".into());
        opts.go_mod_cache = Some("/c/mod".into());
        let got = paths(&runner_grants(Runner::Go, Path::new("/usr/bin/go"), &opts, &scratch, &[]));
        assert!(got.contains(&(PathBuf::from("/c/go-build"), Access::ReadWrite)));
        assert!(got.contains(&(PathBuf::from("/c/mod"), Access::ReadExecute)));
        // node's runner gets neither.
        let got = paths(&runner_grants(Runner::Node, Path::new("/usr/bin/node"), &opts, &scratch, &[]));
        assert!(!got.iter().any(|(p, _)| p.starts_with("/c")));
    }
}
