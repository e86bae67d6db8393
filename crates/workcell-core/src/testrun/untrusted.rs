//! Reading a file a confined runner wrote: vitest's JSON report.
//!
//! The host creates the file itself, empty, in the call's scratch directory before the run
//! ([`ReportFile::create`]), and records its device and inode. The runner is granted write
//! access to that one file ([`super::confine`]): it can fill and truncate it, but not remove,
//! rename or replace it, nor create anything beside it (the scratch directory itself is not
//! granted; only `home/`, `tmp/` and the caches below it are). Where the sandbox is off or the
//! kernel has no Landlock, the runner could replace it, so the read never trusts the name:
//! - the file is opened beneath a handle to the scratch directory that was opened before the
//!   runner started (a scratch directory renamed or replaced by a symlink changes nothing),
//!   with `O_NOFOLLOW | O_NONBLOCK` (a symlink is refused, a FIFO never blocks);
//! - it must be a regular file with the device and inode the host created (a hard link, a
//!   replacement or a FIFO is refused);
//! - at most the cap is read (`st_size` is checked first, and reading stops at cap + 1 bytes
//!   for a file that grows);
//! - it runs on a blocking thread ([`read_on_blocking_thread`]), never on the runtime's.
//!
//! A refusal is a [`ReportProblem`], which makes the run `incomplete`, never `passed`.

use std::fs::File;
use std::io::Read as _;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{fstat, open, openat, FileType, Mode, OFlags};

use crate::error::{Code, Error, Result};

/// Why a report file could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportProblem {
    /// Nothing is there any more.
    Missing,
    /// A symlink, a FIFO, a directory or another kind of file is there.
    NotRegular(&'static str),
    /// A regular file that is not the one the host created.
    Replaced,
    /// Larger than the cap.
    TooLarge { bytes: u64, cap: u64 },
    /// Empty: the runner wrote nothing.
    Empty,
    Io(String),
}

impl ReportProblem {
    /// One sentence for the report.
    pub fn describe(&self, what: &str) -> String {
        match self {
            ReportProblem::Missing => format!("{what} was removed during the run"),
            ReportProblem::NotRegular(kind) => format!("{what} was replaced by a {kind} during the run and was not read"),
            ReportProblem::Replaced => format!("{what} was replaced by another file during the run and was not read"),
            ReportProblem::TooLarge { bytes, cap } => format!("{what} is {bytes} bytes, over the {cap}-byte limit, and was not read"),
            ReportProblem::Empty => format!("{what} is empty: the runner did not write it"),
            ReportProblem::Io(e) => format!("{what} could not be read: {e}"),
        }
    }
}

/// A file the host created for the runner to write, read back with [`ReportFile::read`].
#[derive(Debug)]
pub struct ReportFile {
    dir: OwnedFd,
    name: String,
    path: PathBuf,
    dev: u64,
    ino: u64,
}

fn io_error(e: impl std::fmt::Display, what: &Path) -> Error {
    Error::new(Code::IoError, format!("could not prepare {}: {e}", what.display())).with_hint("the host's temporary directory must be writable; report this to the user")
}

fn kind_of(mode: u32) -> &'static str {
    match FileType::from_raw_mode(mode) {
        FileType::Symlink => "symlink",
        FileType::Fifo => "FIFO",
        FileType::Directory => "directory",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        _ => "special file",
    }
}

impl ReportFile {
    /// Creates `<dir>/<name>` (empty, mode 0600, `O_EXCL | O_NOFOLLOW`) beneath a handle to
    /// `dir` opened now, and records its identity.
    pub fn create(dir: &Path, name: &str) -> Result<ReportFile> {
        let dir_fd = open(dir, OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY, Mode::empty()).map_err(|e| io_error(e, dir))?;
        let path = dir.join(name);
        let file = openat(&dir_fd, name, OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::WRONLY, Mode::from_raw_mode(0o600))
            .map_err(|e| io_error(e, &path))?;
        let st = fstat(&file).map_err(|e| io_error(e, &path))?;
        Ok(ReportFile { dir: dir_fd, name: name.to_string(), path, dev: st.st_dev, ino: st.st_ino })
    }

    /// Its path, for the runner's command line.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads at most `cap` bytes of the file, if it is still the one created (see the module's
    /// documentation). Blocking: call it through [`read_on_blocking_thread`].
    pub fn read(&self, cap: u64) -> std::result::Result<Vec<u8>, ReportProblem> {
        let fd = match openat(&self.dir, self.name.as_str(), OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::NOENT) => return Err(ReportProblem::Missing),
            Err(rustix::io::Errno::LOOP) => return Err(ReportProblem::NotRegular("symlink")),
            Err(e) => return Err(ReportProblem::Io(e.to_string())),
        };
        let st = fstat(&fd).map_err(|e| ReportProblem::Io(e.to_string()))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(ReportProblem::NotRegular(kind_of(st.st_mode)));
        }
        if st.st_dev != self.dev || st.st_ino != self.ino {
            return Err(ReportProblem::Replaced);
        }
        if st.st_size as u64 > cap {
            return Err(ReportProblem::TooLarge { bytes: st.st_size as u64, cap });
        }
        let mut bytes = Vec::with_capacity(st.st_size.max(0) as usize);
        File::from(fd).take(cap + 1).read_to_end(&mut bytes).map_err(|e| ReportProblem::Io(e.to_string()))?;
        if bytes.len() as u64 > cap {
            return Err(ReportProblem::TooLarge { bytes: bytes.len() as u64, cap });
        }
        if bytes.is_empty() {
            return Err(ReportProblem::Empty);
        }
        Ok(bytes)
    }
}

/// Runs `f` on a blocking thread of the runtime (never on an async worker), so that no file
/// operation on what a runner left can stall the host's other calls.
pub async fn read_on_blocking_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::new(Code::IoError, format!("the report reader failed: {e}")).with_hint("run the tests again"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn setup() -> (tempfile::TempDir, PathBuf, ReportFile, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("scratch");
        std::fs::create_dir(&dir).unwrap();
        let canary = tmp.path().join("canary.txt");
        std::fs::write(&canary, "CANARY-SECRET").unwrap();
        let report = ReportFile::create(&dir, "report.json").unwrap();
        (tmp, dir, report, canary)
    }

    /// What the host did before: open the path and read it, following symlinks and blocking.
    fn naive_read(path: &Path) -> std::io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    #[test]
    fn the_report_written_in_place_is_read() {
        let (_t, _d, report, _) = setup();
        std::fs::write(report.path(), b"{\"ok\":1}").unwrap();
        assert_eq!(report.read(1024).unwrap(), b"{\"ok\":1}");
        assert_eq!(report.read(4), Err(ReportProblem::TooLarge { bytes: 8, cap: 4 }));
        std::fs::write(report.path(), b"").unwrap();
        assert_eq!(report.read(1024), Err(ReportProblem::Empty));
    }

    #[test]
    fn a_report_replaced_by_a_symlink_to_a_canary_is_not_read() {
        let (_t, _d, report, canary) = setup();
        std::fs::remove_file(report.path()).unwrap();
        std::os::unix::fs::symlink(&canary, report.path()).unwrap();
        // The attack works on the old read...
        assert_eq!(naive_read(report.path()).unwrap(), b"CANARY-SECRET");
        // ...and not on this one.
        assert_eq!(report.read(1024), Err(ReportProblem::NotRegular("symlink")));
        // A hard link to the canary, or a copy: another inode.
        std::fs::remove_file(report.path()).unwrap();
        std::fs::hard_link(&canary, report.path()).unwrap();
        assert_eq!(naive_read(report.path()).unwrap(), b"CANARY-SECRET");
        assert_eq!(report.read(1024), Err(ReportProblem::Replaced));
    }

    #[test]
    fn a_report_replaced_by_a_fifo_does_not_block() {
        let (_t, _d, report, _) = setup();
        std::fs::remove_file(report.path()).unwrap();
        nix::unistd::mkfifo(report.path(), nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        // The old read blocks on the FIFO's open until a writer comes.
        let path = report.path().to_path_buf();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(naive_read(&path).map(|b| b.len())).unwrap());
        assert!(rx.recv_timeout(Duration::from_millis(300)).is_err(), "the naive read should block");
        assert_eq!(report.read(1024), Err(ReportProblem::NotRegular("FIFO")));
        // Release the blocked reader.
        drop(std::fs::OpenOptions::new().write(true).open(report.path()).unwrap());
        assert!(rx.recv_timeout(Duration::from_secs(5)).is_ok());
    }

    #[test]
    fn a_scratch_directory_swapped_for_a_symlink_changes_nothing() {
        let (t, dir, report, _) = setup();
        std::fs::write(report.path(), b"real").unwrap();
        let elsewhere = t.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::fs::write(elsewhere.join("report.json"), b"forged").unwrap();
        std::fs::rename(&dir, t.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &dir).unwrap();
        assert_eq!(report.read(1024).unwrap(), b"real");
    }
}
