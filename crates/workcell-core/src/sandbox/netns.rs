//! The network namespace of `network: { allow: [...] }`: loopback only, and on it the one way
//! out, the host's filtering proxy ([`crate::proxy`]).
//!
//! C (see [`super::launch`]) unshares a network namespace with its user, PID and mount
//! namespaces, and before it starts the namespace's init ([`enter`]):
//! 1. brings `lo` up (C has `CAP_NET_ADMIN` over the namespace it just made);
//! 2. makes a TCP listener on `127.0.0.1:`[`PROXY_PORT`] inside it;
//! 3. hands that listener to the host over the Unix socket it inherited (one end of a
//!    `socketpair` made for this call; `SCM_RIGHTS`), and closes both.
//!
//! So no process of the namespace holds the listener or the Unix socket (the init and the
//! program are started after C closed them), and nothing inside can reach an address outside:
//! the namespace has no other interface. The host accepts on the listener ([`Net::start`])
//! until C exits, which happens once the namespace's processes are all gone; each connection
//! is a socket of the namespace that the host reads and writes like any other, without a relay
//! process copying bytes in between.
//!
//! Everything in [`enter`] is raw system calls on the stack: C shares the host's memory.

use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd, RawFd};

use super::sys::{self, check, syscall6};
use crate::proxy::{self, PROXY_PORT};

/// One call's plan: the Unix socket pair, and the proxy session that will serve the listener.
pub struct Net {
    host: OwnedFd,
    child: OwnedFd,
    server: proxy::Server,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Net")
    }
}

impl Net {
    pub fn new(server: proxy::Server) -> io::Result<Net> {
        let mut fds = [-1; 2];
        // SAFETY: socketpair into a local array.
        if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: two new descriptors, ours.
        let (host, child) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        Ok(Net { host, child, server })
    }

    /// The end C inherits.
    pub fn child_fd(&self) -> RawFd {
        self.child.as_raw_fd()
    }

    /// In the host, once the program runs (C sent the listener before starting the init):
    /// receives the listener and serves it until the process `c` exits.
    pub fn start(&self, c: libc::pid_t) -> io::Result<()> {
        let listener = receive_fd(self.host.as_raw_fd())?;
        let pid = rustix::process::Pid::from_raw(c).ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK)?;
        // SAFETY: a descriptor just received, owned by nobody else.
        let listener = unsafe { std::net::TcpListener::from_raw_fd(listener.into_raw()) };
        self.server.serve(listener, Some(pidfd))
    }
}

/// A received descriptor.
struct Received(RawFd);

impl Received {
    fn into_raw(self) -> RawFd {
        let fd = self.0;
        std::mem::forget(self);
        fd
    }
}

impl Drop for Received {
    fn drop(&mut self) {
        // SAFETY: our own descriptor.
        unsafe { libc::close(self.0) };
    }
}

/// The `SCM_RIGHTS` control message of one descriptor.
#[repr(C, align(8))]
struct OneFd {
    hdr: libc::cmsghdr,
    fd: libc::c_int,
    _pad: libc::c_int,
}

fn receive_fd(sock: RawFd) -> io::Result<Received> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_mut_ptr().cast(), iov_len: 1 };
    // SAFETY: zeroed plain C structs, filled below.
    let mut cmsg: OneFd = unsafe { std::mem::zeroed() };
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut cmsg as *mut OneFd).cast();
    msg.msg_controllen = std::mem::size_of::<OneFd>() as _;
    // SAFETY: recvmsg into the buffers above.
    let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    if cmsg.hdr.cmsg_level != libc::SOL_SOCKET || cmsg.hdr.cmsg_type != libc::SCM_RIGHTS || (msg.msg_flags & libc::MSG_CTRUNC) != 0 {
        return Err(io::Error::other("the namespace's listener was not received"));
    }
    Ok(Received(cmsg.fd))
}

/// In C, right after it unshared the namespaces and wrote its id maps: `lo` up, the listener,
/// sent to the host through `sock`; both closed.
///
/// # Safety
/// Raw system calls on the stack only.
pub unsafe fn enter(sock: RawFd) -> Result<(), i32> {
    loopback_up()?;
    let l = listener()?;
    let r = send_fd(sock, l);
    sys::close(l);
    sys::close(sock);
    r
}

pub(super) unsafe fn loopback_up() -> Result<(), i32> {
    let s = check(syscall6(libc::SYS_socket, libc::AF_INET as usize, (libc::SOCK_DGRAM | libc::SOCK_CLOEXEC) as usize, 0, 0, 0, 0))? as libc::c_int;
    let mut req: libc::ifreq = std::mem::zeroed();
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    let mut r = check(syscall6(libc::SYS_ioctl, s as usize, libc::SIOCGIFFLAGS as usize, &mut req as *mut libc::ifreq as usize, 0, 0, 0));
    if r.is_ok() {
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        r = check(syscall6(libc::SYS_ioctl, s as usize, libc::SIOCSIFFLAGS as usize, &mut req as *mut libc::ifreq as usize, 0, 0, 0));
    }
    sys::close(s);
    r.map(drop)
}

unsafe fn listener() -> Result<libc::c_int, i32> {
    let l = check(syscall6(libc::SYS_socket, libc::AF_INET as usize, (libc::SOCK_STREAM | libc::SOCK_CLOEXEC) as usize, 0, 0, 0, 0))? as libc::c_int;
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = PROXY_PORT.to_be();
    addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    let r = check(syscall6(libc::SYS_bind, l as usize, &addr as *const libc::sockaddr_in as usize, std::mem::size_of::<libc::sockaddr_in>(), 0, 0, 0))
        .and_then(|_| check(syscall6(libc::SYS_listen, l as usize, 128, 0, 0, 0, 0)));
    match r {
        Ok(_) => Ok(l),
        Err(e) => {
            sys::close(l);
            Err(e)
        }
    }
}

/// Receives one descriptor sent with [`send_one_fd`] (without waiting; staged runs' tmpfs).
pub(crate) fn receive_one_fd(sock: RawFd) -> io::Result<OwnedFd> {
    let r = receive_fd(sock)?;
    // SAFETY: a descriptor just received, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(r.into_raw()) })
}

/// Sends one descriptor through a Unix socket (raw system calls: usable in C).
///
/// # Safety
/// Raw system calls on the stack only.
pub(crate) unsafe fn send_one_fd(sock: RawFd, fd: libc::c_int) -> Result<(), i32> {
    send_fd(sock, fd)
}

unsafe fn send_fd(sock: RawFd, fd: libc::c_int) -> Result<(), i32> {
    let byte = [0u8; 1];
    let mut iov = libc::iovec { iov_base: byte.as_ptr() as *mut libc::c_void, iov_len: 1 };
    let mut cmsg: OneFd = std::mem::zeroed();
    cmsg.hdr.cmsg_len = (std::mem::size_of::<libc::cmsghdr>() + std::mem::size_of::<libc::c_int>()) as _;
    cmsg.hdr.cmsg_level = libc::SOL_SOCKET;
    cmsg.hdr.cmsg_type = libc::SCM_RIGHTS;
    cmsg.fd = fd;
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = (&mut cmsg as *mut OneFd).cast();
    msg.msg_controllen = std::mem::size_of::<OneFd>() as _;
    check(syscall6(libc::SYS_sendmsg, sock as usize, &msg as *const libc::msghdr as usize, libc::MSG_NOSIGNAL as usize, 0, 0, 0)).map(drop)
}


/// The network namespace a tool set's processes share while its sessions' `ports` are in use
/// ([`super::ports`]): loopback only, so a port rule reaches the tool set's own listeners and
/// nothing of the host's (neither its loopback nor any other address).
///
/// It is pinned by two open `nsfs` descriptors: the namespace's owning user namespace and the
/// network namespace itself. No process keeps it: the one that made it ([`Keeper::new`]) exits
/// at once. A launch joins it ([`super::launch`]: `setns` into the user namespace, which gives
/// it `CAP_SYS_ADMIN` there, then into the network namespace) before it unshares its own user,
/// PID and mount namespaces as every launch does. The namespace is freed when the descriptors
/// are closed (the tool set closed) and the last process in it has exited.
pub struct Keeper {
    user: OwnedFd,
    net: OwnedFd,
}

impl std::fmt::Debug for Keeper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Keeper")
    }
}

/// What the process making a keeper needs and reports; in the host's memory.
struct KeeperArgs<'a> {
    plan: &'a super::pidns::NsPlan,
    user: libc::c_int,
    net: libc::c_int,
    errno: i32,
}

impl Keeper {
    /// Makes the namespace: a process sharing this one's memory and descriptor table
    /// (`CLONE_VM | CLONE_VFORK | CLONE_FILES`) unshares a user and a network namespace, maps
    /// its ids to themselves, brings `lo` up, opens both namespaces' files (into the shared
    /// table) and exits; this thread resumes then.
    pub fn new() -> io::Result<Keeper> {
        let plan = super::pidns::NsPlan::new(false);
        let mut args = KeeperArgs { plan: &plan, user: -1, net: -1, errno: 0 };
        // 64 KiB of stack, 16-byte aligned; only this call's child runs on it.
        let mut stack = vec![0u128; 4096];
        // SAFETY: every signal is blocked in this thread around the clone and the child never
        // unblocks them (it runs no handler of the host); it only makes raw system calls on
        // `args` and `plan`, which outlive it (this thread is suspended until it exits).
        unsafe {
            let top = stack.as_mut_ptr().add(stack.len()).cast::<libc::c_void>();
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
            let pid = libc::clone(keeper_main, top, libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_FILES | libc::SIGCHLD, (&mut args as *mut KeeperArgs).cast());
            let err = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
            if pid < 0 {
                return Err(err);
            }
            // It has exited already (this thread resumed when it did): collect it.
            let mut status = 0;
            libc::waitpid(pid, &mut status, libc::__WALL);
        }
        // SAFETY: plain reads of what the child wrote to this frame before it exited.
        let (user, net, errno) = unsafe { (std::ptr::read_volatile(&args.user), std::ptr::read_volatile(&args.net), std::ptr::read_volatile(&args.errno)) };
        // SAFETY: descriptors the child opened in this process's table, owned by nobody else.
        let own = |fd: libc::c_int| (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
        match (own(user), own(net)) {
            (Some(user), Some(net)) if errno == 0 => Ok(Keeper { user, net }),
            _ => Err(io::Error::from_raw_os_error(if errno == 0 { libc::EIO } else { errno })),
        }
    }

    /// The user namespace's and the network namespace's descriptors, for a launch to join.
    pub fn fds(&self) -> (RawFd, RawFd) {
        (self.user.as_raw_fd(), self.net.as_raw_fd())
    }
}

extern "C" fn keeper_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the host's KeeperArgs; the host's thread waits until this process exits.
    unsafe {
        let a = &mut *arg.cast::<KeeperArgs>();
        let r = sys::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET)
            .and_then(|()| a.plan.write_maps())
            .and_then(|()| loopback_up())
            .and_then(|()| sys::open(c"/proc/self/ns/user", libc::O_RDONLY | libc::O_CLOEXEC))
            .and_then(|user| {
                std::ptr::write_volatile(&mut a.user, user);
                sys::open(c"/proc/self/ns/net", libc::O_RDONLY | libc::O_CLOEXEC)
            });
        match r {
            Ok(net) => std::ptr::write_volatile(&mut a.net, net),
            Err(e) => std::ptr::write_volatile(&mut a.errno, e),
        }
        sys::exit(0)
    }
}

/// In C, before it unshares its own namespaces: joins a [`Keeper`]'s user namespace, then its
/// network namespace (`user`, `net`: the keeper's descriptors, inherited from the host).
///
/// # Safety
/// Raw system calls only.
pub unsafe fn join(user: RawFd, net: RawFd) -> Result<(), i32> {
    sys::setns(user, libc::CLONE_NEWUSER)?;
    sys::setns(net, libc::CLONE_NEWNET)
}
