//! The staged run's overlay, made in the sandbox's mount namespace before anything of the
//! program runs (contract §20).
//!
//! The host prepares a [`Layer`] (a staged run makes it); C (the sandbox's first child, see
//! [`crate::sandbox::launch`]), right after it unshared its user and mount namespaces, calls
//! [`Layer::mount`], which:
//!
//! 1. opens the workspace root by its canonical path (no symlink followed) and checks it is the
//!    directory the host opened (device and inode; else `ESTALE`);
//! 2. takes a read-only copy of each protected path (§21) from the real workspace
//!    ([`crate::sandbox::protect::Protect::clone_trees`]);
//! 3. mounts a tmpfs over the root, bounded by `maxStagedBytes` (`size=`: the process gets
//!    `ENOSPC` past it) and private (`mode=0700`), and makes `upper` (the root's permission
//!    bits) and `work` in it;
//! 4. sends the tmpfs to the host through a socket (`SCM_RIGHTS`): the host reads the upper
//!    layer through that descriptor after the run, when the namespace is gone;
//! 5. mounts overlayfs over the root: the real root (through its descriptor) as the only lower
//!    layer, `upper` and `work` in the tmpfs, `userxattr` (the options an unprivileged user
//!    namespace needs: redirect_dir stays `nofollow`, index and metacopy off, so a renamed directory is
//!    `EXDEV` to the process and whole files are copied up);
//! 6. gives the overlay's root the workspace's Landlock rule (the ruleset, built before, names
//!    the real root, a mount point Landlock skips when it walks up from a file), then mounts
//!    the read-only copies of step 2 over the protected paths in the overlay, so they stay
//!    read-only as in an unstaged run;
//! 7. moves the process's working directory into the overlay (its old one was the real
//!    directory, which would bypass the overlay).
//!
//! Everything here runs between clone and exec in a process sharing the host's memory: raw
//! system calls on data the host prepared, no allocation. The tmpfs and the overlay exist only
//! in the namespace; the host and the person see nothing until the change is applied.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

use crate::sandbox::sys::{self, check, syscall6};

/// The host's half of one staged run's overlay.
#[derive(Debug)]
pub struct Layer {
    root_path: CString,
    root_id: (u64, u64),
    root_mode: u32,
    tmpfs_options: CString,
    /// The working directory relative to the root (empty for the root itself).
    cwd_rel: CString,
    host: OwnedFd,
    child: OwnedFd,
    /// The step that failed in C and its errno (0: none), written by C (shared memory).
    failed_step: AtomicI32,
    failed_errno: AtomicI32,
    /// The workspace's Landlock access bits (0: no Landlock), for the overlay root's rule.
    landlock_access: std::sync::atomic::AtomicU64,
}

/// What C reports when a step fails: which step (for the error naming what is missing).
pub const STEP_ROOT: i32 = 1;
pub const STEP_TMPFS: i32 = 2;
pub const STEP_OVERLAY: i32 = 3;
pub const STEP_PROTECT: i32 = 4;
pub const STEP_CWD: i32 = 5;
pub const STEP_LANDLOCK: i32 = 6;

impl Layer {
    /// Prepares the overlay of a run in `ws` whose working directory is `cwd_rel` (relative to
    /// the root), bounded by `max_bytes`.
    pub fn new(ws: &crate::root::Workspace, cwd_rel: &[u8], max_bytes: u64) -> std::io::Result<Layer> {
        use std::os::unix::ffi::OsStrExt as _;
        let st = rustix::fs::fstat(ws.dir())?;
        let root_path = CString::new(ws.canonical().as_os_str().as_bytes()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        let cwd_rel = CString::new(cwd_rel).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
        // tmpfs counts whole pages: at least one.
        let size = max_bytes.max(4096);
        let tmpfs_options = CString::new(format!("size={size},mode=0700")).expect("no NUL");
        let mut fds = [-1; 2];
        // SAFETY: socketpair into a local array.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: two new descriptors, ours.
        let (host, child) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Layer {
            root_path,
            root_id: (st.st_dev as u64, st.st_ino as u64),
            root_mode: st.st_mode as u32 & 0o7777,
            tmpfs_options,
            cwd_rel,
            host,
            child,
            failed_step: AtomicI32::new(0),
            failed_errno: AtomicI32::new(0),
            landlock_access: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// Where Landlock confines the run (ABI `abi`): the overlay's root gets the workspace's rule.
    pub fn set_landlock(&self, abi: Option<u32>) {
        let access = abi.map_or(0, crate::sandbox::landlock::workspace_access);
        self.landlock_access.store(access, Ordering::SeqCst);
    }

    /// The step C failed at and its errno, if any.
    pub fn failure(&self) -> Option<(i32, i32)> {
        match self.failed_step.load(Ordering::SeqCst) {
            0 => None,
            s => Some((s, self.failed_errno.load(Ordering::SeqCst))),
        }
    }

    /// After the run: the tmpfs C sent (its `upper` is the change), if it got that far.
    pub fn take_upper(&self) -> std::io::Result<OwnedFd> {
        crate::sandbox::netns::receive_one_fd(self.host.as_raw_fd())
    }

    fn fail(&self, step: i32, errno: i32) -> i32 {
        self.failed_step.store(step, Ordering::SeqCst);
        self.failed_errno.store(errno, Ordering::SeqCst);
        errno
    }

    /// In C, in its own user and mount namespaces: see the module's documentation.
    ///
    /// # Safety
    /// Raw system calls only, between clone and exec.
    pub unsafe fn mount(&self, protect: Option<&crate::sandbox::protect::Protect>, ruleset: RawFd) -> Result<(), i32> {
        let root = sys::open_absolute_no_links(&self.root_path).map_err(|e| self.fail(STEP_ROOT, e))?;
        let r = self.mount_at(root, protect, ruleset);
        sys::close(root);
        r
    }

    unsafe fn mount_at(&self, root: RawFd, protect: Option<&crate::sandbox::protect::Protect>, ruleset: RawFd) -> Result<(), i32> {
        match sys::identity(root) {
            Ok(id) if id == self.root_id => {}
            Ok(_) => return Err(self.fail(STEP_ROOT, libc::ESTALE)),
            Err(e) => return Err(self.fail(STEP_ROOT, e)),
        }
        if let Some(p) = protect {
            p.clone_trees(root).map_err(|e| self.fail(STEP_PROTECT, e))?;
        }
        let mut root_link = Buf::new();
        root_link.push(b"/proc/self/fd/");
        root_link.push_num(root as u64);
        sys::mount(Some(c"workcell-stage"), root_link.c(), Some(c"tmpfs"), libc::MS_NOSUID | libc::MS_NODEV, Some(&self.tmpfs_options))
            .map_err(|e| self.fail(STEP_TMPFS, e))?;
        let t = sys::open_absolute_no_links(&self.root_path).map_err(|e| self.fail(STEP_TMPFS, e))?;
        let r = self.fill_tmpfs(root, t, protect, ruleset);
        sys::close(t);
        r
    }

    unsafe fn fill_tmpfs(&self, root: RawFd, t: RawFd, protect: Option<&crate::sandbox::protect::Protect>, ruleset: RawFd) -> Result<(), i32> {
        mkdir(t, c"upper", self.root_mode).map_err(|e| self.fail(STEP_TMPFS, e))?;
        mkdir(t, c"work", 0o700).map_err(|e| self.fail(STEP_TMPFS, e))?;
        crate::sandbox::netns::send_one_fd(self.child.as_raw_fd(), t).map_err(|e| self.fail(STEP_TMPFS, e))?;
        let mut opts = Buf::new();
        opts.push(b"lowerdir=/proc/self/fd/");
        opts.push_num(root as u64);
        opts.push(b",upperdir=/proc/self/fd/");
        opts.push_num(t as u64);
        opts.push(b"/upper,workdir=/proc/self/fd/");
        opts.push_num(t as u64);
        opts.push(b"/work,userxattr,index=off,metacopy=off");
        sys::mount(Some(c"workcell-stage"), &self.root_path, Some(c"overlay"), 0, Some(opts.c())).map_err(|e| self.fail(STEP_OVERLAY, e))?;
        let ov = sys::open_absolute_no_links(&self.root_path).map_err(|e| self.fail(STEP_OVERLAY, e))?;
        let r = (|| {
            let access = self.landlock_access.load(Ordering::SeqCst);
            if ruleset >= 0 && access != 0 {
                crate::sandbox::landlock::add_workspace_rule(ruleset, ov, access).map_err(|e| self.fail(STEP_LANDLOCK, e))?;
            }
            if let Some(p) = protect {
                p.attach_trees(ov).map_err(|e| self.fail(STEP_PROTECT, e))?;
            }
            if self.cwd_rel.as_bytes().is_empty() {
                fchdir(ov).map_err(|e| self.fail(STEP_CWD, e))
            } else {
                let cwd = sys::open_beneath(ov, &self.cwd_rel).map_err(|e| self.fail(STEP_CWD, e))?;
                let r = fchdir(cwd).map_err(|e| self.fail(STEP_CWD, e));
                sys::close(cwd);
                r
            }
        })();
        sys::close(ov);
        r
    }
}

unsafe fn mkdir(dir: RawFd, name: &CStr, mode: u32) -> Result<(), i32> {
    check(syscall6(libc::SYS_mkdirat, dir as usize, name.as_ptr() as usize, 0o700, 0, 0, 0))?;
    // Not the umask's bits: the ones asked for.
    check(syscall6(libc::SYS_fchmodat, dir as usize, name.as_ptr() as usize, mode as usize, 0, 0, 0)).map(drop)
}

unsafe fn fchdir(fd: RawFd) -> Result<(), i32> {
    check(syscall6(libc::SYS_fchdir, fd as usize, 0, 0, 0, 0, 0)).map(drop)
}

/// A NUL-terminated string built on the stack (no allocation in C).
struct Buf {
    bytes: [u8; 256],
    len: usize,
}

impl Buf {
    fn new() -> Buf {
        Buf { bytes: [0; 256], len: 0 }
    }

    fn push(&mut self, s: &[u8]) {
        for &b in s {
            if self.len < self.bytes.len() - 1 {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
    }

    fn push_num(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        let d = digits;
        self.push(&d[i..]);
    }

    fn c(&mut self) -> &CStr {
        self.bytes[self.len] = 0;
        CStr::from_bytes_until_nul(&self.bytes[..=self.len]).unwrap_or(c"")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_stack_string_formats_numbers() {
        let mut b = super::Buf::new();
        b.push(b"fd/");
        b.push_num(0);
        b.push(b",");
        b.push_num(1234567);
        assert_eq!(b.c().to_bytes(), b"fd/0,1234567");
    }
}
