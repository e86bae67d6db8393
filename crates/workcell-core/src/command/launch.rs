//! How run_command and run_tests start a program: the working directory beneath the root, the
//! environment built from nothing, and the one function that turns them into a [`SpawnSpec`].
//!
//! Both tools go through [`spawn_spec`] and then [`start`] (which is [`process::run`] with one
//! merged pipe); confinement (the sandbox) plugs in there, through the spec's pre-exec steps and
//! the [`Prepare`] hook, for both tools at once.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use crate::cancel::Cancel;
use crate::error::{Code, Error, Result};
use crate::process::Prepare;
use crate::path::RelPath;
use crate::process::{self, Finished, OutputPipes, RunOptions, Sink, SpawnSpec};
use crate::root::{Identity, Workspace};

use super::scratch::Scratch;

pub use crate::host_config::RESERVED_ENV;

/// A directory beneath the root for the child to run in: its canonical path and an open handle.
#[derive(Debug)]
pub struct WorkDir {
    /// Canonical path (inside the canonical root).
    pub path: PathBuf,
    /// The normalized relative path (`.` for the root), for messages and results.
    pub shown: String,
    handle: OwnedFd,
}

/// Parses the model's `cwd`: absent, or `.` (and spellings of it such as `./`), is the root;
/// anything else must pass the path grammar.
pub fn parse_cwd(cwd: Option<&str>) -> Result<Option<RelPath>> {
    match cwd {
        None => Ok(None),
        Some(c) if !c.is_empty() && c.split('/').all(|s| s.is_empty() || s == ".") && !c.starts_with('/') => Ok(None),
        Some(c) => crate::path::parse(c).map(Some),
    }
}

fn cwd_error(e: &io::Error, shown: &str) -> Error {
    let err = Error::from_io(e, shown);
    match e.raw_os_error() {
        Some(libc::ENOTDIR) => Error::new(Code::FileNotFound, format!("cwd {shown} is not a directory"))
            .with_hint("cwd must name a directory inside the workspace, such as packages/app; omit it to run in the workspace root")
            .with_details(serde_json::json!({ "errno": "ENOTDIR" })),
        Some(libc::ENOENT) => Error::new(Code::FileNotFound, format!("cwd {shown} does not exist"))
            .with_hint("create the directory first, or omit cwd to run in the workspace root; list the workspace to find the right path"),
        _ => err,
    }
}

/// Opens the working directory beneath the root (symlinks inside are followed, escapes
/// refused) and finds its canonical path.
pub fn open_workdir(ws: &Workspace, cwd: Option<&RelPath>) -> Result<WorkDir> {
    let shown = cwd.map(|c| c.as_str().to_string()).unwrap_or_else(|| ".".to_string());
    let dir = match cwd {
        None => ws.dir().try_clone().map_err(|e| cwd_error(&e, &shown))?,
        Some(rel) => ws.dir().open_dir(rel.as_str()).map_err(|e| cwd_error(&e, &shown))?,
    };
    let handle: OwnedFd = dir.into_std_file().into();
    let meta = rustix::fs::fstat(&handle).map_err(|e| cwd_error(&e.into(), &shown))?;
    let identity = Identity { dev: meta.st_dev as u64, ino: meta.st_ino as u64 };
    let path = match cwd {
        None => ws.canonical().to_path_buf(),
        Some(rel) => canonical_of(&handle).unwrap_or_else(|| ws.canonical().join(rel.as_str())),
    };
    // The path must still name the opened directory, inside the root.
    let now = std::fs::metadata(&path).map(|m| Identity::of_std(&m)).ok();
    if !path.starts_with(ws.canonical()) || now != Some(identity) {
        return Err(Error::target_changed(&shown));
    }
    Ok(WorkDir { path, shown, handle })
}

#[cfg(target_os = "linux")]
fn canonical_of(fd: &OwnedFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd as _;
    std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).ok()
}

#[cfg(not(target_os = "linux"))]
fn canonical_of(_fd: &OwnedFd) -> Option<PathBuf> {
    None
}

/// PATH, a private HOME and TMPDIR in `scratch`, then `extra` (names the host chose to pass).
pub fn base_environment(path: &OsStr, scratch: &Scratch, extra: &[(String, String)]) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = vec![
        ("PATH".into(), path.to_os_string()),
        ("HOME".into(), scratch.home().into_os_string()),
        ("TMPDIR".into(), scratch.tmp().into_os_string()),
    ];
    for (name, value) in extra {
        if RESERVED_ENV.contains(&name.as_str()) {
            continue;
        }
        env.retain(|(n, _)| n.as_os_str() != name.as_str());
        env.push((name.into(), value.into()));
    }
    env
}

/// What to start.
#[derive(Debug)]
pub struct Launch {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// `argv[0]` as the child sees it.
    pub arg0: OsString,
    pub args: Vec<OsString>,
    /// The whole environment.
    pub env: Vec<(OsString, OsString)>,
}

/// The spawn of a run_command or run_tests child: no shell, the environment given, one merged
/// output pipe, and the working directory entered through its open handle where the system
/// allows (`/proc/self/fd/<n>`, resolved by the child to exactly the directory that was
/// opened), so a directory swapped for a symlink after it was resolved cannot move the child
/// elsewhere; elsewhere by its canonical path. No pre-exec step is needed for that, so the
/// spawn stays a `posix_spawn` (no copy of the host's page tables). `workdir` must stay alive
/// until the child is started. This is the place confinement steps are added for both tools.
pub fn spawn_spec(launch: Launch, workdir: &WorkDir) -> SpawnSpec {
    let cwd = if proc_fd_usable() {
        use std::os::fd::AsRawFd as _;
        PathBuf::from(format!("/proc/self/fd/{}", workdir.handle.as_raw_fd()))
    } else {
        workdir.path.clone()
    };
    let mut spec = SpawnSpec::new(launch.program, cwd).output(OutputPipes::Merged);
    spec.arg0 = Some(launch.arg0);
    spec.args = launch.args;
    spec.env = launch.env;
    spec
}

/// Whether `/proc/self/fd` can name open descriptors (Linux with /proc mounted); checked once.
fn proc_fd_usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| cfg!(target_os = "linux") && Path::new("/proc/self/fd").is_dir())
}

/// Runs `spec` (after the host's `prepare` hook) through the process machinery, with one merged
/// pipe into `sink`. A failure to start is `COMMAND_NOT_FOUND` when the program is gone, an
/// `IO_ERROR` naming the errno otherwise.
pub async fn start<S: Sink>(
    mut spec: SpawnSpec,
    prepare: Option<&Prepare>,
    root: &Path,
    run: &RunOptions,
    cancel: &Cancel,
    sink: S,
) -> Result<Finished<S>> {
    if let Some(prepare) = prepare {
        prepare(&mut spec, root)?;
    }
    let program = spec.program.display().to_string();
    let name = spec.arg0.as_ref().map(|a| a.to_string_lossy().into_owned()).unwrap_or_else(|| program.clone());
    process::run(spec, run, cancel, sink, None).await.map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) => Error::new(Code::CommandNotFound, format!("{name} could not be started: {program} no longer exists"))
            .with_hint("the program was removed while the call started; check that it is installed and try again"),
        Some(errno) => Error::io_errno(errno, &program).with_hint(format!(
            "{name} could not be started; check that it is an executable program for this machine, or report this to the user"
        )),
        None => Error::new(Code::IoError, format!("could not start {program}: {e}"))
            .with_hint("the program could not be started; report this to the user"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_dot_is_the_root_and_the_rest_follows_the_grammar() {
        assert_eq!(parse_cwd(None).unwrap(), None);
        for root in [".", "./", ".//.", "./."] {
            assert_eq!(parse_cwd(Some(root)).unwrap(), None, "{root:?}");
        }
        assert_eq!(parse_cwd(Some("./src//a/")).unwrap().unwrap().as_str(), "src/a");
        for bad in ["", "/", "/tmp", "..", "a/../b", "C:x", "a\\b"] {
            assert_eq!(parse_cwd(Some(bad)).unwrap_err().reason(), Some("INVALID_RELATIVE_PATH"), "{bad:?}");
        }
    }

    #[test]
    fn environment_is_built_from_nothing() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = Scratch::create(parent.path()).unwrap();
        let env = base_environment(
            OsStr::new("/usr/bin"),
            &scratch,
            &[("LANG".into(), "C".into()), ("HOME".into(), "/root".into()), ("LANG".into(), "C.UTF-8".into())],
        );
        assert_eq!(
            env,
            vec![
                ("PATH".into(), "/usr/bin".into()),
                ("HOME".into(), scratch.home().into_os_string()),
                ("TMPDIR".into(), scratch.tmp().into_os_string()),
                ("LANG".into(), "C.UTF-8".into()),
            ]
        );
        let check = |env: &[(String, String)]| crate::host_config::check_env(env, RESERVED_ENV);
        assert!(check(&[("HOME".into(), "x".into())]).is_err());
        assert!(check(&[("A=B".into(), "x".into())]).is_err());
        assert!(check(&[("A".into(), "x\0".into())]).is_err());
        assert!(check(&[("LANG".into(), "C".into())]).is_ok());
    }
}
