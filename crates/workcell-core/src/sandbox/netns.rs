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

unsafe fn loopback_up() -> Result<(), i32> {
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

