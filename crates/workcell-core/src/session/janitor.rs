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
# dash's kill builtin cannot name a process group: procps' kill can.
if [ "$1" -gt 1 ]; then
  for k in /bin/kill /usr/bin/kill; do [ -x "$k" ] && "$k" -s KILL -- "-$1" 2>/dev/null && break; done
fi
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn gone(pid: i32) -> bool {
        // A zombie child counts as gone: it was killed, only not collected yet.
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
    }

    #[test]
    fn the_janitor_kills_the_group_and_removes_the_scratch_when_the_host_side_closes() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("workcell-scratch-test");
        std::fs::create_dir_all(scratch.join("home/locked")).unwrap();
        std::fs::set_permissions(scratch.join("home/locked"), std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        let mut group = Command::new("/bin/sh").args(["-c", "sleep 300 & sleep 300"]).process_group(0).spawn().unwrap();
        let pgid = group.id() as i32;
        let mut j = Janitor::start(pgid, &scratch).unwrap();
        // The host's end closes without "done": what a dead host looks like.
        drop(j.pipe.take());
        let until = Instant::now() + Duration::from_secs(5);
        while (scratch.exists() || !gone(pgid)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(pgid), "the group was killed");
        assert!(!scratch.exists(), "the scratch directory was removed");
        let _ = group.wait();
    }

    #[test]
    fn a_normal_end_dismisses_the_janitor() {
        let dir = tempfile::tempdir().unwrap();
        let scratch = dir.path().join("workcell-scratch-kept");
        std::fs::create_dir(&scratch).unwrap();
        let j = Janitor::start(0, &scratch).unwrap();
        let pid = j.pid();
        drop(j);
        let until = Instant::now() + Duration::from_secs(5);
        while !gone(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(pid));
        assert!(scratch.exists(), "a dismissed janitor removes nothing");
    }
}
