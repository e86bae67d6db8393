//! Node.js's own permission model, the second layer for node_process: file system calls made
//! by the script itself are checked by Node against the workspace (and the host's grants),
//! on every platform Node runs on, Landlock or not.
//!
//! The child runs as
//!
//! ```text
//! node --permission|--experimental-permission
//!      --allow-fs-read=<workspace> --allow-fs-write=<workspace> [host grants]
//!      --allow-fs-read=/dev/null --allow-fs-write=/dev/null
//!      --allow-child-process --allow-worker [--allow-addons: with Landlock] [--allow-wasi]
//!      --disable-warning=ExperimentalWarning --disable-warning=SecurityWarning
//!      ./.workcell-node-<random>.cjs <arguments...>
//! ```
//!
//! The flags come before the script, so Node parses them and `process.argv` is unchanged
//! (`process.argv.slice(1)` is still exactly the arguments); they show in `process.execArgv`,
//! which `child_process.fork` passes on, so forked Node children run under the same
//! permissions. Spawning processes, workers and WASI stay allowed (the scripts need them: node
//! spawning node, git, npm); what such a process does is only confined by Landlock. Native
//! addons are allowed only where Landlock confines the child too: an addon's code makes system
//! calls the permission model never sees. Where Landlock is missing this layer is the only one
//! for the script's own file access, and it has known ways out that remain: a `Worker` started
//! with `execArgv: []` runs without the permission flags (Node passes the model on to workers
//! only through execArgv in some versions), and a child process is not confined at all.
//! The permission model also does not follow symbolic links it did not create... see the
//! README's threat model for what it does not cover.
//!
//! Paths that Node would read as something else are not passed: a comma (older Node 20 split
//! the flag's value on it) or a `*` (a wildcard). A call whose grants contain one runs without
//! this layer and reports `nodePermission: false`.

use std::ffi::OsString;
use std::path::Path;

/// What the host's Node.js supports (found by the host, from
/// `process.allowedNodeEnvironmentFlags`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePermission {
    /// `--permission` (Node 22.13+, 23.5+) or `--experimental-permission` (Node 20, 21, 22
    /// before 22.13).
    pub flag: String,
    /// `--allow-addons` exists.
    pub allow_addons: bool,
    /// `--allow-wasi` exists.
    pub allow_wasi: bool,
}

/// The permission flag names accepted.
pub const FLAGS: [&str; 2] = ["--permission", "--experimental-permission"];

impl NodePermission {
    /// Checks the host's description.
    pub fn validate(&self) -> Result<(), String> {
        if !FLAGS.contains(&self.flag.as_str()) {
            return Err(format!("the Node.js permission flag must be one of {FLAGS:?}, got {:?}", self.flag));
        }
        Ok(())
    }

    /// The Node flags for a child that may read `read` (and `write`) and write `write`; `None`
    /// when a path cannot be expressed exactly. `landlock`: whether Landlock confines the child
    /// too; without it this layer is the only one for the script's own calls, and native addons
    /// (which run outside the permission model) are not allowed.
    pub fn args(&self, read: &[&Path], write: &[&Path], landlock: bool) -> Option<Vec<OsString>> {
        let expressible = |p: &&Path| {
            let b = p.as_os_str().as_encoded_bytes();
            !b.contains(&b',') && !b.contains(&b'*') && p.is_absolute()
        };
        if !read.iter().chain(write).all(expressible) {
            return None;
        }
        let flag = |name: &str, p: &Path| {
            let mut s = OsString::from(name);
            s.push(p.as_os_str());
            s
        };
        let mut args = vec![OsString::from(&self.flag)];
        for p in read.iter().chain(write).chain([&Path::new("/dev/null")]) {
            args.push(flag("--allow-fs-read=", p));
        }
        for p in write.iter().chain([&Path::new("/dev/null")]) {
            args.push(flag("--allow-fs-write=", p));
        }
        args.push("--allow-child-process".into());
        args.push("--allow-worker".into());
        if self.allow_addons && landlock {
            args.push("--allow-addons".into());
        }
        if self.allow_wasi {
            args.push("--allow-wasi".into());
        }
        // The permission model's own start-up warnings would otherwise open every stderr.
        args.push("--disable-warning=ExperimentalWarning".into());
        args.push("--disable-warning=SecurityWarning".into());
        Some(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn np() -> NodePermission {
        NodePermission { flag: "--experimental-permission".into(), allow_addons: true, allow_wasi: false }
    }

    #[test]
    fn flags_grant_the_workspace_and_dev_null() {
        let ws = Path::new("/w s/ROOT");
        let args = np().args(&[Path::new("/data")], &[ws], true).unwrap();
        let args: Vec<String> = args.into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(
            args,
            [
                "--experimental-permission",
                "--allow-fs-read=/data",
                "--allow-fs-read=/w s/ROOT",
                "--allow-fs-read=/dev/null",
                "--allow-fs-write=/w s/ROOT",
                "--allow-fs-write=/dev/null",
                "--allow-child-process",
                "--allow-worker",
                "--allow-addons",
                "--disable-warning=ExperimentalWarning",
                "--disable-warning=SecurityWarning",
            ]
        );
    }

    #[test]
    fn addons_are_refused_where_landlock_is_missing() {
        let with = np().args(&[], &[Path::new("/w")], true).unwrap();
        assert!(with.iter().any(|a| a == "--allow-addons"));
        let without = np().args(&[], &[Path::new("/w")], false).unwrap();
        assert!(!without.iter().any(|a| a == "--allow-addons"));
        assert!(without.iter().any(|a| a == "--allow-child-process"));
    }

    #[test]
    fn paths_node_would_misread_turn_the_layer_off() {
        assert!(np().args(&[], &[Path::new("/a,b")], true).is_none());
        assert!(np().args(&[Path::new("/a*")], &[Path::new("/w")], true).is_none());
        assert!(np().args(&[], &[Path::new("relative")], true).is_none());
    }

    #[test]
    fn only_known_flags() {
        assert!(np().validate().is_ok());
        assert!(NodePermission { flag: "--permission".into(), ..np() }.validate().is_ok());
        assert!(NodePermission { flag: "--allow-fs-read=/".into(), ..np() }.validate().is_err());
    }
}
