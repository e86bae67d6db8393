//! Which addresses the proxy connects to without an entry naming them: public unicast only.
//!
//! Everything else (loopback, the private ranges, link-local, carrier-grade NAT, unspecified,
//! multicast, broadcast, the IETF protocol range and reserved ranges, and IPv6 forms that
//! embed such an IPv4 address) is refused unless an entry lists that address (an IP literal, or
//! `localhost` for the loopback addresses).
//!
//! The IPv4 documentation (192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24) and benchmarking
//! (198.18.0.0/15) ranges are not refused: no host of a network is there unless a network routes
//! them on purpose, which resolvers that answer with synthetic addresses (fake-IP DNS in front
//! of an egress proxy) and sandboxed build machines do for public names.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public, in words for the 403 body; `None` for a public address.
pub fn non_public(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_class(v4),
        IpAddr::V6(v6) => v6_class(v6),
    }
}

fn v4_class(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    if ip.is_loopback() {
        Some("a loopback address")
    } else if ip.is_private() {
        Some("a private address")
    } else if ip.is_link_local() {
        Some("a link-local address")
    } else if a == 100 && (64..128).contains(&b) {
        Some("a carrier-grade NAT (shared) address")
    } else if a == 0 {
        Some("an unspecified (this network) address")
    } else if ip.is_broadcast() || a >= 240 {
        Some("a reserved address")
    } else if ip.is_multicast() {
        Some("a multicast address")
    } else if a == 192 && b == 0 && c == 0 {
        Some("a special-purpose address")
    } else {
        None
    }
}

fn v6_class(ip: Ipv6Addr) -> Option<&'static str> {
    let s = ip.segments();
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) forms reach the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_class(v4);
    }
    if s[..6] == [0; 6] {
        return v4_class(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8));
    }
    // NAT64 (64:ff9b::/96) and 6to4 (2002::/16) embed an IPv4 address a gateway may reach.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        return v4_class(Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8));
    }
    if s[0] == 0x2002 {
        return v4_class(Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8));
    }
    if (s[0] & 0xfe00) == 0xfc00 {
        return Some("a private (unique local) address");
    }
    if (s[0] & 0xffc0) == 0xfe80 || (s[0] & 0xffc0) == 0xfec0 {
        return Some("a link-local address");
    }
    if (s[0] & 0xff00) == 0xff00 {
        return Some("a multicast address");
    }
    if s[0] == 0x2001 && s[1] == 0x0db8 {
        return Some("a documentation address");
    }
    // Only the global unicast range is public.
    if (s[0] & 0xe000) != 0x2000 {
        return Some("a reserved address");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_unicast_is_public() {
        for bad in [
            "127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "100.64.0.1",
            "0.0.0.0", "0.1.2.3", "255.255.255.255", "224.0.0.1", "240.0.0.1", "192.0.0.8", "::1", "::", "fc00::1",
            "fd12::1", "fe80::1", "ff02::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
            "64:ff9b::a9fe:a9fe", "2002:a00:1::", "2001:db8::1", "100::1",
        ] {
            assert!(non_public(bad.parse().unwrap()).is_some(), "{bad}");
        }
        for good in ["1.1.1.1", "8.8.8.8", "192.0.2.1", "203.0.113.80", "198.18.0.1", "104.16.0.1", "172.32.0.1", "100.128.0.1", "2606:4700::1111", "2a00:1450::1"] {
            assert_eq!(non_public(good.parse().unwrap()), None, "{good}");
        }
        assert_eq!(non_public("169.254.169.254".parse().unwrap()), Some("a link-local address"));
        assert_eq!(non_public("::ffff:127.0.0.1".parse().unwrap()), Some("a loopback address"));
    }
}
