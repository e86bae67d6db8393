//! A pseudo-terminal for `tty: true`: 80 columns by 24 rows. The program gets the terminal as
//! its stdin, stdout and stderr; the host reads and writes the other side.

use std::io;
use std::os::fd::{FromRawFd as _, OwnedFd};

pub const COLUMNS: u16 = 80;
pub const ROWS: u16 = 24;

/// The two sides of a new terminal: (the host's side, the program's side), both close-on-exec,
/// the host's side non-blocking.
pub fn open() -> io::Result<(OwnedFd, OwnedFd)> {
    // SAFETY: plain libc calls on descriptors this function owns; ptsname_r writes into a
    // local buffer of the given size.
    unsafe {
        let m = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if m < 0 {
            return Err(io::Error::last_os_error());
        }
        let master = OwnedFd::from_raw_fd(m);
        if libc::grantpt(m) != 0 || libc::unlockpt(m) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut name = [0 as libc::c_char; 128];
        let r = libc::ptsname_r(m, name.as_mut_ptr(), name.len());
        if r != 0 {
            return Err(io::Error::from_raw_os_error(r));
        }
        let s = libc::open(name.as_ptr(), libc::O_RDWR | libc::O_NOCTTY | libc::O_CLOEXEC);
        if s < 0 {
            return Err(io::Error::last_os_error());
        }
        let slave = OwnedFd::from_raw_fd(s);
        let size = libc::winsize { ws_row: ROWS, ws_col: COLUMNS, ws_xpixel: 0, ws_ypixel: 0 };
        libc::ioctl(s, libc::TIOCSWINSZ, &size);
        let flags = libc::fcntl(m, libc::F_GETFL);
        libc::fcntl(m, libc::F_SETFL, flags | libc::O_NONBLOCK);
        Ok((master, slave))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_terminal_is_80_by_24() {
        let (_m, s) = super::open().unwrap();
        let mut size: libc::winsize = unsafe { std::mem::zeroed() };
        unsafe { libc::ioctl(std::os::fd::AsRawFd::as_raw_fd(&s), libc::TIOCGWINSZ, &mut size) };
        assert_eq!((size.ws_col, size.ws_row), (80, 24));
        assert_eq!(unsafe { libc::isatty(std::os::fd::AsRawFd::as_raw_fd(&s)) }, 1);
    }
}
