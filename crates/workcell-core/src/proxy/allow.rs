//! The host's allowlist: which hosts and ports the proxy lets a confined process reach.
//!
//! Entries (checked at tool creation; a bad one is the host's error, never a silent default):
//!
//! | entry | allows |
//! |---|---|
//! | `registry.example.org` | that host, ports 80 and 443 |
//! | `*.example.com` | any name below `example.com` (not `example.com` itself), ports 80 and 443 |
//! | `host:8080`, `*.example.com:8443` | the same, on that port only |
//! | `localhost:PORT` | the loopback addresses (127.0.0.1, ::1) on that port, named `localhost`, `127.0.0.1` or `[::1]` |
//! | `10.0.0.5:3000`, `[fd00::5]:443` | that address (private ones included: the entry lists it) |
//! | `npm`, `crates`, `pypi`, `github` | the hosts those clients use ([`PRESETS`]), ports 80 and 443 |
//!
//! A name entry only ever reaches public addresses: where a listed name resolves to a
//! loopback, private or link-local address, the connection is refused unless another entry
//! lists that address itself (see [`super::addr`]).

use std::net::IpAddr;

/// The hosts each preset stands for.
pub const PRESETS: &[(&str, &[&str])] = &[
    ("npm", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    ("crates", &["crates.io", "index.crates.io", "static.crates.io"]),
    ("pypi", &["pypi.org", "files.pythonhosted.org"]),
    ("github", &["github.com", "api.github.com", "codeload.github.com", "*.githubusercontent.com"]),
];

/// At most this many entries (presets count once).
pub const MAX_ENTRIES: usize = 256;
/// The longest entry, in bytes.
pub const MAX_ENTRY_BYTES: usize = 260;

/// What an entry's host part names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostRule {
    /// One name, lowercase, without a trailing dot.
    Exact(String),
    /// Names below this domain (`*.domain`).
    Below(String),
    /// One address (an IP literal).
    Addr(IpAddr),
    /// `localhost`: 127.0.0.1 and ::1, never resolved through DNS.
    Localhost,
}

/// One parsed entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub host: HostRule,
    /// `None`: ports 80 and 443.
    pub port: Option<u16>,
    /// The entry as the host wrote it (named in refusals and reports).
    pub text: String,
}

/// The parsed allowlist.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

/// The addresses `localhost` stands for.
pub const LOOPBACK: [IpAddr; 2] = [IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), IpAddr::V6(std::net::Ipv6Addr::LOCALHOST)];

impl Allowlist {
    /// Parses the host's entries; the message names the first bad one.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Allowlist, String> {
        if entries.len() > MAX_ENTRIES {
            return Err(format!("network.allow has {} entries; at most {MAX_ENTRIES}", entries.len()));
        }
        let mut out = Vec::new();
        for e in entries {
            let e = e.as_ref();
            if let Some((_, hosts)) = PRESETS.iter().find(|(name, _)| *name == e) {
                for h in *hosts {
                    let mut entry = parse_entry(h).expect("preset hosts are valid");
                    entry.text = format!("{e} ({h})");
                    out.push(entry);
                }
                continue;
            }
            out.push(parse_entry(e).map_err(|why| format!("network.allow entry {e:?} {why}"))?);
        }
        Ok(Allowlist { entries: out })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The first entry that allows `host` (already normalized: see [`normalize_host`]) on `port`.
    pub fn find(&self, host: &Target, port: u16) -> Option<&Entry> {
        self.entries.iter().find(|e| e.port_ok(port) && e.host_matches(host))
    }

    /// The entry that lists address `ip` itself on `port` (what lets a private address through).
    pub fn lists_addr(&self, ip: IpAddr, port: u16) -> Option<&Entry> {
        self.entries.iter().find(|e| {
            e.port_ok(port)
                && match &e.host {
                    HostRule::Addr(a) => same_addr(*a, ip),
                    HostRule::Localhost => LOOPBACK.iter().any(|l| same_addr(*l, ip)),
                    _ => false,
                }
        })
    }
}

/// Equal, with an IPv4-mapped IPv6 address the same as its IPv4 address.
fn same_addr(a: IpAddr, b: IpAddr) -> bool {
    a.to_canonical() == b.to_canonical()
}

impl Entry {
    fn port_ok(&self, port: u16) -> bool {
        match self.port {
            Some(p) => p == port,
            None => port == 80 || port == 443,
        }
    }

    fn host_matches(&self, target: &Target) -> bool {
        match (&self.host, target) {
            (HostRule::Exact(h), Target::Name(n)) => h == n,
            (HostRule::Below(d), Target::Name(n)) => n.len() > d.len() + 1 && n.ends_with(d.as_str()) && n.as_bytes()[n.len() - d.len() - 1] == b'.',
            (HostRule::Addr(a), Target::Addr(ip)) => same_addr(*a, *ip),
            (HostRule::Localhost, Target::Name(n)) => n == "localhost",
            (HostRule::Localhost, Target::Addr(ip)) => LOOPBACK.iter().any(|l| same_addr(*l, *ip)),
            _ => false,
        }
    }
}

/// A request's host: a name (lowercase, no trailing dot) or an address literal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Name(String),
    Addr(IpAddr),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Name(n) => f.write_str(n),
            Target::Addr(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Target::Addr(a) => write!(f, "{a}"),
        }
    }
}

/// A request's host part (`name`, `1.2.3.4`, `[::1]`), checked like an entry's.
pub fn normalize_host(host: &str) -> Option<Target> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner.parse::<std::net::Ipv6Addr>().ok().map(|a| Target::Addr(IpAddr::V6(a)));
    }
    if let Ok(v4) = host.parse::<std::net::Ipv4Addr>() {
        return Some(Target::Addr(IpAddr::V4(v4)));
    }
    let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    valid_name(&name).then_some(Target::Name(name))
}

/// A DNS name: labels of letters, digits, `-` and `_`, 1 to 63 bytes, not starting or ending
/// with `-`; at most 253 bytes. Numeric-only last labels are refused (they look like addresses
/// some resolvers would parse: `1.2.3` or `0x7f.1`).
fn valid_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 253 {
        return false;
    }
    let labels: Vec<&str> = name.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !labels.iter().all(label_ok) {
        return false;
    }
    let last = labels[labels.len() - 1];
    !(last.bytes().all(|b| b.is_ascii_digit()) || (last.starts_with("0x") && last[2..].bytes().all(|b| b.is_ascii_hexdigit())))
}

fn parse_entry(e: &str) -> Result<Entry, &'static str> {
    if e.is_empty() || e.len() > MAX_ENTRY_BYTES || !e.is_ascii() {
        return Err("must be a host name, `*.domain`, an IP address or a preset, optionally with `:port` (ASCII, at most 260 bytes)");
    }
    if e.contains(['/', '@', ' ', '?', '#', '\\']) || e.contains("://") {
        return Err("must be a host (and port), not a URL");
    }
    // The port: after the last ':' outside brackets.
    let (host, port) = if let Some(rest) = e.strip_prefix('[') {
        let end = rest.find(']').ok_or("has an unclosed `[`")?;
        let after = &rest[end + 1..];
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':').ok_or("has text after `]` that is not `:port`")?),
        };
        (&e[..end + 2], port)
    } else {
        match e.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h, Some(p)),
            Some(_) => return Err("is an IPv6 address without brackets (write `[addr]:port`)"),
            None => (e, None),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err("has a port that is not a number from 1 to 65535"),
        },
    };
    let host = if let Some(domain) = host.strip_prefix("*.") {
        let domain = domain.strip_suffix('.').unwrap_or(domain).to_ascii_lowercase();
        if !valid_name(&domain) || !domain.contains('.') {
            return Err("must name a domain of at least two labels after `*.` (such as `*.example.com`)");
        }
        HostRule::Below(domain)
    } else if host.contains('*') {
        return Err("may only use `*` as a whole first label (`*.example.com`)");
    } else {
        match normalize_host(host) {
            Some(Target::Addr(ip)) => HostRule::Addr(ip),
            Some(Target::Name(n)) if n == "localhost" => HostRule::Localhost,
            Some(Target::Name(n)) => HostRule::Exact(n),
            None => return Err("is not a valid host name or IP address"),
        }
    };
    Ok(Entry { host, port, text: e.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(n: &str) -> Target {
        normalize_host(n).unwrap()
    }

    #[test]
    fn entries_parse_and_match() {
        let a = Allowlist::parse(&["Registry.Example.org", "*.example.com", "api.test:8443", "localhost:3000", "10.0.0.5:22", "[fd00::5]:443"]).unwrap();
        assert!(a.find(&name("registry.example.org."), 443).is_some());
        assert!(a.find(&name("registry.example.org"), 80).is_some());
        assert!(a.find(&name("registry.example.org"), 8080).is_none());
        assert!(a.find(&name("a.b.example.com"), 443).is_some());
        assert!(a.find(&name("example.com"), 443).is_none());
        assert!(a.find(&name("badexample.com"), 443).is_none());
        assert!(a.find(&name("api.test"), 8443).is_some());
        assert!(a.find(&name("api.test"), 443).is_none());
        assert!(a.find(&name("localhost"), 3000).is_some());
        assert!(a.find(&name("127.0.0.1"), 3000).is_some());
        assert!(a.find(&name("[::1]"), 3000).is_some());
        assert!(a.find(&name("localhost"), 3001).is_none());
        assert!(a.find(&name("10.0.0.5"), 22).is_some());
        assert!(a.lists_addr("10.0.0.5".parse().unwrap(), 22).is_some());
        assert!(a.lists_addr("::ffff:10.0.0.5".parse().unwrap(), 22).is_some());
        assert!(a.lists_addr("10.0.0.5".parse().unwrap(), 23).is_none());
        assert!(a.lists_addr("127.0.0.1".parse().unwrap(), 3000).is_some());
        assert!(a.lists_addr("127.0.0.2".parse().unwrap(), 3000).is_none());
        assert!(a.lists_addr("fd00::5".parse().unwrap(), 443).is_some());
    }

    #[test]
    fn presets_expand_to_their_documented_hosts() {
        let a = Allowlist::parse(&["npm", "github"]).unwrap();
        assert!(a.find(&name("registry.npmjs.org"), 443).is_some());
        assert!(a.find(&name("objects.githubusercontent.com"), 443).is_some());
        assert!(a.find(&name("pypi.org"), 443).is_none());
        assert!(a.entries()[0].text.starts_with("npm ("));
    }

    #[test]
    fn bad_entries_are_refused_with_the_reason() {
        for bad in [
            "", "*", "*.com", "a*.example.com", "*.*.example.com", "http://example.com", "example.com/path", "user@example.com",
            "example.com:0", "example.com:65536", "example.com:", "example.com:+1", "::1", "[::1", "[::1]x", "exa mple.com",
            "-bad.example.com", "1.2.3", "0x7f.1", "ex\u{e9}.com", "host:80:80",
        ] {
            assert!(Allowlist::parse(&[bad]).is_err(), "{bad:?}");
        }
        let err = Allowlist::parse(&["ok.example", "http://x"]).unwrap_err();
        assert!(err.contains("\"http://x\"") && err.contains("URL"), "{err}");
        assert!(Allowlist::parse(&vec!["a.example"; MAX_ENTRIES + 1]).is_err());
    }
}
