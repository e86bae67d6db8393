//! The addresses of this machine's own interfaces, which the proxy refuses like loopback: a
//! listed name resolving to one of them (a public address on an interface, or one in a range
//! the proxy otherwise treats as public) would reach the host's own services bound to
//! `0.0.0.0` or `::`. Read with `getifaddrs` for each decision that needs them, so an address
//! added or removed since is seen; an entry listing the address itself still allows it.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Every IPv4 and IPv6 address of the interfaces of this process's network namespace (the
/// host's); empty where they cannot be read.
pub fn addresses() -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills a list that freeifaddrs releases; each entry is read only while
    // the list lives, and `ifa_addr` is checked for its family before it is cast.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return out;
        }
        let mut cur = list;
        while !cur.is_null() {
            let a = (*cur).ifa_addr;
            if !a.is_null() {
                match (*a).sa_family as libc::c_int {
                    libc::AF_INET => {
                        let sin = &*a.cast::<libc::sockaddr_in>();
                        out.push(IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr))));
                    }
                    libc::AF_INET6 => {
                        let sin6 = &*a.cast::<libc::sockaddr_in6>();
                        out.push(IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr)));
                    }
                    _ => {}
                }
            }
            cur = (*cur).ifa_next;
        }
        libc::freeifaddrs(list);
    }
    out
}

/// Whether `ip` is one of `mine` (an IPv4-mapped IPv6 address as its IPv4 address).
pub fn contains(mine: &[IpAddr], ip: IpAddr) -> bool {
    mine.iter().any(|m| m.to_canonical() == ip.to_canonical())
}
