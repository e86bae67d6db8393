//! Landlock: the filesystem and network confinement of a child, built in the parent with the
//! `landlock` crate and enforced in the child with two raw system calls.
//!
//! The ruleset handles every filesystem right the kernel's ABI knows (reading, writing,
//! executing, creating, removing, linking across directories, truncating, device ioctls), TCP
//! bind and connect when the network is blocked (ABI 4+; UDP too from ABI 10), and scopes
//! abstract UNIX sockets and signals to the sandbox (ABI 6+). Rules then allow:
//! - read and execute beneath the system directories and the program's own directories;
//! - everything beneath the workspace and the host's `writePaths`;
//! - reading and writing a few character devices (`/dev/null`...), reading the random devices;
//! - reading `/proc`, added in the child itself (see [`add_proc_rule`]) because the `/proc` a
//!   confined child sees is the private one mounted in its PID namespace; where there is none,
//!   only the child's own `/proc/<pid>` ([`add_self_rule`]) and a few system-wide files
//!   (`/proc/meminfo`, `/proc/cpuinfo`...).
//!
//! Anything not allowed is refused with `EACCES` (or `EXDEV` for a rename or link that would
//! leave the allowed hierarchy). Landlock also denies a confined process `ptrace` of any process
//! outside its domain (but not reading `/proc/<pid>/environ` of a same-user process: hence the
//! narrow `/proc` rules) and any change to its mount table.
//!
//! In the child, between fork and exec, only [`add_proc_rule`] / [`add_self_rule`] and
//! [`restrict`] run: `open`, `landlock_add_rule`, `close`, `prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self` on the ruleset's descriptor, as raw system calls, with no
//! allocation.

use std::io;
use std::os::fd::{AsFd, AsRawFd as _, BorrowedFd, OwnedFd, RawFd};
use std::path::Path;

use super::paths::{Access, Grant};
use super::sys;

use ::landlock::{
    Access as _, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible as _, NetPort, PathBeneath, Ruleset, RulesetAttr as _,
    RulesetCreatedAttr as _, Scope, ABI,
};

/// `LANDLOCK_CREATE_RULESET_VERSION`.
const CREATE_RULESET_VERSION: libc::c_uint = 1;
/// `LANDLOCK_RULE_PATH_BENEATH`.
const RULE_PATH_BENEATH: libc::c_int = 1;
/// `LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR`: what the child may do in `/proc`.
const PROC_ACCESS: u64 = (1 << 2) | (1 << 3);

/// The kernel's Landlock ABI version, `None` where Landlock is missing or disabled.
pub fn kernel_abi() -> Option<u32> {
    // SAFETY: the documented version query: no attribute, size 0, the version flag.
    let v = unsafe {
        libc::syscall(libc::SYS_landlock_create_ruleset, std::ptr::null::<libc::c_void>(), 0usize, CREATE_RULESET_VERSION)
    };
    (v > 0).then_some(v as u32)
}

fn rights(abi: ABI, access: Access, is_dir: bool) -> BitFlags<AccessFs> {
    let rights = match access {
        Access::ReadExecute => AccessFs::from_read(abi),
        Access::ReadWrite => AccessFs::from_all(abi),
        Access::DeviceReadWrite => AccessFs::from_file(abi) & !AccessFs::Execute,
        Access::DeviceRead => AccessFs::ReadFile.into(),
    };
    if is_dir {
        rights
    } else {
        // Directory rights cannot be granted on a file.
        rights & AccessFs::from_file(abi)
    }
}

fn open_path(path: &Path, no_follow: bool) -> io::Result<OwnedFd> {
    use rustix::fs::{open, Mode, OFlags};
    if no_follow {
        // A canonical path of the host's: no symlink in any component.
        return super::grants::open_no_symlinks(path);
    }
    Ok(open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())?)
}

fn is_dir(fd: BorrowedFd<'_>) -> bool {
    rustix::fs::fstat(fd).map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory).unwrap_or(false)
}

fn ruleset_error(e: ::landlock::RulesetError) -> io::Error {
    io::Error::other(format!("Landlock ruleset: {e}"))
}

/// Builds the ruleset for one child: `workspace` (an open handle to the verified root) is
/// granted everything; `grants` are opened now and skipped when they do not exist; with
/// `block_network`, TCP bind and connect are handled and nothing allows them. Returns the
/// ruleset's descriptor (close-on-exec), to be enforced in the child with [`restrict`].
/// The network part of a ruleset: with `block`, TCP bind and connect are handled and only
/// `bind` and `connect` (ports) are allowed (`connect` includes the filtering proxy's port, on
/// the loopback of the network namespace ([`super::netns`]), when there is one).
#[derive(Clone, Copy, Debug, Default)]
pub struct NetRules<'a> {
    pub block: bool,
    pub bind: &'a [u16],
    pub connect: &'a [u16],
}

/// `pinned` are grants opened when they were approved ([`super::grants::pin`]): the rules are
/// made from those descriptors, never from a path again.
pub fn build(abi: u32, workspace: BorrowedFd<'_>, grants: &[Grant], pinned: &[(BorrowedFd<'_>, Access)], net: &NetRules<'_>) -> io::Result<OwnedFd> {
    let block_network = net.block;
    let abi = ABI::from(abi as i32);
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(abi))
        .map_err(ruleset_error)?;
    if block_network && abi >= ABI::V4 {
        ruleset = ruleset.handle_access(AccessNet::from_all(abi)).map_err(ruleset_error)?;
    }
    if abi >= ABI::V6 {
        ruleset = ruleset.scope(Scope::from_all(abi)).map_err(ruleset_error)?;
    }
    let mut created = ruleset.create().map_err(ruleset_error)?;
    created = created.add_rule(PathBeneath::new(workspace, rights(abi, Access::ReadWrite, true))).map_err(ruleset_error)?;
    for grant in grants {
        let fd = match open_path(&grant.path, grant.no_follow) {
            Ok(fd) => fd,
            // Missing on this system (or, for a host's path, replaced by a symlink): no grant.
            Err(_) => continue,
        };
        let access = rights(abi, grant.access, is_dir(fd.as_fd()));
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(ruleset_error)?;
    }
    for (fd, access) in pinned {
        let access = rights(abi, *access, is_dir(*fd));
        created = created.add_rule(PathBeneath::new(*fd, access)).map_err(ruleset_error)?;
    }
    if block_network && abi >= ABI::V4 {
        for p in net.bind {
            created = created.add_rule(NetPort::new(*p, AccessNet::BindTcp)).map_err(ruleset_error)?;
        }
        for p in net.connect {
            created = created.add_rule(NetPort::new(*p, AccessNet::ConnectTcp)).map_err(ruleset_error)?;
        }
    }
    let fd: Option<OwnedFd> = created.into();
    fd.ok_or_else(|| io::Error::other("Landlock ruleset: the kernel did not create one"))
}

/// The access bits the workspace gets (read, write, make, remove: everything), for a rule added
/// in the child ([`add_workspace_rule`]).
pub fn workspace_access(abi: u32) -> u64 {
    rights(ABI::from(abi as i32), Access::ReadWrite, true).bits()
}

/// In the child: gives the directory open as `dir` the workspace's access (`access`, from
/// [`workspace_access`]). A staged run's overlay is mounted over the workspace after the
/// ruleset was built, and Landlock does not look at a mount point when it walks up from a file
/// (it skips hidden mount points), so the overlay's root needs a rule of its own.
///
/// # Safety
/// Raw system calls only; `ruleset` is the call's ruleset, not yet enforced.
pub unsafe fn add_workspace_rule(ruleset: RawFd, dir: RawFd, access: u64) -> Result<(), i32> {
    let attr = PathBeneathAttr { allowed_access: access, parent_fd: dir };
    sys::landlock_add_rule(ruleset, RULE_PATH_BENEATH, &attr as *const PathBeneathAttr as *const libc::c_void)
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// In the child: allows reading beneath the `/proc` it sees now: the private one of its PID
/// namespace, which shows only the call's own processes.
///
/// # Safety
/// Raw system calls on the stack only (`sandbox::sys`); `ruleset` must be the descriptor
/// returned by [`build`].
pub unsafe fn add_proc_rule(ruleset: RawFd) -> Result<(), i32> {
    add_read_rule(ruleset, c"/proc")
}

/// In the child, where `/proc` is the host's: allows reading this process's own
/// `/proc/<pid>` only (what `/proc/self` names now). Other processes' entries stay out of reach:
/// Landlock's ptrace restriction does not cover reading `/proc/<pid>/environ` or `cmdline` of
/// a process of the same user.
///
/// # Safety
/// As for [`add_proc_rule`].
pub unsafe fn add_self_rule(ruleset: RawFd) -> Result<(), i32> {
    add_read_rule(ruleset, c"/proc/self")
}

unsafe fn add_read_rule(ruleset: RawFd, path: &std::ffi::CStr) -> Result<(), i32> {
    let Ok(fd) = sys::open(path, libc::O_PATH | libc::O_CLOEXEC | libc::O_DIRECTORY) else {
        // No /proc at all: nothing to allow.
        return Ok(());
    };
    let attr = PathBeneathAttr { allowed_access: PROC_ACCESS, parent_fd: fd };
    let r = sys::landlock_add_rule(ruleset, RULE_PATH_BENEATH, &attr as *const PathBeneathAttr as *const libc::c_void);
    sys::close(fd);
    r
}

/// In the child: no new privileges (setuid and file capabilities stop working), then the
/// ruleset is enforced on this process and everything it starts.
///
/// # Safety
/// Raw system calls only; `ruleset` must be the descriptor returned by [`build`].
pub unsafe fn restrict(ruleset: RawFd) -> Result<(), i32> {
    sys::prctl(libc::PR_SET_NO_NEW_PRIVS, 1)?;
    sys::landlock_restrict_self(ruleset)
}

/// The raw descriptor of a built ruleset, for the child.
pub fn raw(fd: &OwnedFd) -> RawFd {
    fd.as_raw_fd()
}
