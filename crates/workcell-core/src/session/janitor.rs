//! What ends a session when the host itself is gone (it exited without closing its tools, or
//! was killed, SIGKILL included).
//!
//! The namespace's processes die with the host through `PR_SET_PDEATHSIG` (see
//! [`crate::sandbox::pidns`]); nothing in the host survives to remove the scratch directory,
//! and without a namespace nothing kills the process group. So each session has a janitor: a
//! small `sh` in a process group of its own whose stdin is a pipe only the host holds. When
//! the session ends normally the host writes `done` and the janitor exits; when the host dies
//! the pipe reaches end of file and the janitor kills the session's process group (where
//! there is no namespace) and removes the scratch directory.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};

const SCRIPT: &str = r#"read -r line
[ "$line" = done ] && exit 0
[ "$1" -gt 1 ] && kill -KILL -- "-$1" 2>/dev/null
i=0
while [ -e "$2" ] && [ "$i" -lt 30 ]; do
  chmod -R u+rwx "$2" 2>/dev/null; rm -rf "$2" 2>/dev/null
  i=$((i+1)); [ -e "$2" ] && sleep 0.1
done
exit 0"#;

/// A running janitor.
#[derive(Debug)]
pub struct Janitor {
    pipe: Option<std::fs::File>,
    pid: i32,
}

impl Janitor {
    /// Starts one for the process group `pgid` (0: none to kill, a namespace ends it) and the
    /// scratch directory `dir`. `None` where no `sh` can be started (the session still ends
    /// with everything else; only a host death would leave it).
    pub fn start(pgid: i32, dir: &Path) -> Option<Janitor> {
        let (r, w) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).ok()?;
        let child = Command::new("/bin/sh")
            .arg("-c")
            .arg(SCRIPT)
            .arg("workcell-janitor")
            .arg(pgid.to_string())
            .arg(dir)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .current_dir("/")
            .stdin(Stdio::from(OwnedFd::from(r)))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .ok()?;
        Some(Janitor { pipe: Some(std::fs::File::from(OwnedFd::from(w))), pid: child.id() as i32 })
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }
}

impl Drop for Janitor {
    /// The session ended normally: the janitor leaves without doing anything.
    fn drop(&mut self) {
        if let Some(mut p) = self.pipe.take() {
            let _ = p.write_all(b"done\n");
        }
        crate::process::reap::reap_in_background(self.pid);
    }
}
