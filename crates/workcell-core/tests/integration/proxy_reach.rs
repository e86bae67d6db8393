//! The filtering proxy end to end, through its public API and real sockets: what it allows is
//! the host a request reaches (generated request heads against two servers, one listed and one
//! not); a listed name resolving to an address of this machine is refused; one tool set holding
//! connections cannot starve another.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use workcell_core::proxy::{Allowlist, Session, Share, MAX_CONNECTIONS_PER_TOOL_SET};

/// A proxy session for `allow`, in a tool set of its own, serving on 127.0.0.1.
fn proxy(allow: &[String], share: &Share) -> (Session, u16) {
    let session = Session::new(Arc::new(Allowlist::parse(allow).unwrap()), share.clone());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    session.server().serve(l, None).unwrap();
    (session, port)
}

/// A server on loopback that takes one connection at a time: it reads a head (up to the
/// blank line, the end of the stream or 5 s), records it, answers `200` with its name and
/// closes. One at a time, so once it answered a connection made later (a sentinel), every
/// connection made before was recorded.
struct Server {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

fn server(name: &'static str) -> Server {
    // IPv4 and IPv6 (`localhost` is both), where IPv6 is there.
    let l = TcpListener::bind("[::]:0").or_else(|_| TcpListener::bind("127.0.0.1:0")).unwrap();
    let port = l.local_addr().unwrap().port();
    let heads = Arc::new(Mutex::new(Vec::new()));
    let h = heads.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            let head = String::from_utf8_lossy(&buf).into_owned();
            if head != "SENTINEL\r\n\r\n" {
                h.lock().unwrap().push(head);
            }
            let body = format!("server {name}");
            let _ = c.write_all(format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).as_bytes());
        }
    });
    Server { port, heads }
}

impl Server {
    /// Waits until every connection made before this call was recorded; returns the heads
    /// recorded since the last call.
    fn settle(&self) -> Vec<String> {
        let mut c = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(b"SENTINEL\r\n\r\n").unwrap();
        let mut out = Vec::new();
        c.read_to_end(&mut out).unwrap();
        std::mem::take(&mut *self.heads.lock().unwrap())
    }
}

/// Reads a response head (to the blank line or the end of the stream).
fn read_head(c: &mut TcpStream) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match c.read(&mut byte) {
            Ok(0) | Err(_) => break,
            Ok(_) => buf.push(byte[0]),
        }
    }
    buf
}

/// Sends `head` through the proxy on `port` as a client would; for a tunnel the proxy opened,
/// sends `inner` through it. Returns everything the client got back.
fn send(port: u16, head: &str, connect: bool, inner: &str) -> String {
    let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let complete = head.contains("\r\n\r\n");
    if !complete {
        // A head the proxy can never see the end of: end the stream so it answers now.
        let _ = c.shutdown(Shutdown::Write);
    }
    let mut out = read_head(&mut c);
    if connect && complete && out.starts_with(b"HTTP/1.1 200") {
        c.write_all(inner.as_bytes()).unwrap();
    }
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// `host[:port]` as a lenient server reads it: trimmed, lower case, without a final dot or
/// IPv6 brackets, the port 80 when absent.
fn lenient(auth: &str) -> Option<(String, u16)> {
    let auth = auth.trim_matches([' ', '\t']);
    let (h, p) = match auth.rsplit_once(':') {
        Some((h, p)) if !auth.ends_with(']') => (h, p.parse().ok()?),
        _ => (auth, 80),
    };
    Some((h.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase(), p))
}

/// What a server reading `head` leniently (a bare LF ends a line, any run of whitespace
/// separates the request line's words) takes for its request target and its Host headers, and
/// whether a line starts with whitespace (a folded header, which servers read two ways).
fn as_a_server_reads(head: &str) -> (String, Vec<String>, bool) {
    let mut lines = head.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
    let target = lines.next().unwrap_or_default().split_whitespace().nth(1).unwrap_or_default().to_string();
    let mut hosts = Vec::new();
    let mut folded = false;
    for l in lines.take_while(|l| !l.is_empty()) {
        folded |= l.starts_with([' ', '\t']);
        if let Some((name, value)) = l.split_once(':') {
            if name.trim().eq_ignore_ascii_case("host") {
                hosts.push(value.to_string());
            }
        }
    }
    (target, hosts, folded)
}

/// `good` pieces (each one) `weight` times as often as `bad` ones.
fn pick(good: &[&'static str], weight: u32, bad: &[&'static str]) -> BoxedStrategy<&'static str> {
    prop::strategy::Union::new_weighted(vec![(weight, prop::sample::select(good.to_vec()).boxed()), (1, prop::sample::select(bad.to_vec()).boxed())]).boxed()
}

/// Request heads, each piece usually what a client sends and otherwise one that reads two ways:
/// odd whitespace, bare LF, obs-fold, repeated and disagreeing `Host`, absolute form against
/// `Host`, percent-escaped authorities, `@`, `\` and `#` in the authority. `{A}` and `{B}`
/// stand for the listed server's port and the unlisted one's.
fn head() -> impl Strategy<Value = (String, bool)> {
    let method = pick(&["GET", "POST", "CONNECT"], 5, &["get", "CONNECT "]);
    let scheme = pick(&["http://"], 5, &["HTTP://", "https://", "", "http:/", "http:\\\\"]);
    let userinfo = pick(&[""], 5, &["u@", "u:p@", "localhost:{A}@", "127.0.0.1:{B}@", "u%40@", "127.0.0.1:{B}\\@"]);
    let host = pick(
        &["localhost", "LocalHost.", "127.0.0.1", "[::1]"],
        3,
        &["b.test", "%6cocalhost", "localhost%3a{B}", "127.0.0.1%2f", "localhost\\", "localhost\\@127.0.0.1", "localhost#", "localhost ", "", "[::1]%25lo"],
    );
    let port = pick(&[":{A}"], 3, &["", ":{B}", ":", ":0{A}", ":{A}:{B}", ":{A}@127.0.0.1:{B}", ":{A}#@127.0.0.1:{B}", ":{A} "]);
    let path = pick(&["/", "/x?y", "", "?q"], 5, &["#f", "/@127.0.0.1:{B}", "%2f", " http://127.0.0.1:{B}/", "/\nHost: 127.0.0.1:{B}"]);
    let sp = || pick(&[" "], 5, &["  ", "\t"]);
    let version = pick(&["HTTP/1.1", "HTTP/1.0"], 5, &["http/1.1", "HTTP/1.1 ", "HTTP/2.0"]);
    let eol = pick(&["\r\n"], 6, &["\n"]);
    let header = pick(
        &["Host: localhost:{A}", "Accept: */*", "Host: b.test", "Host: 127.0.0.1:{B}"],
        2,
        &[
            "host:localhost:{B}",
            "Host:  LocalHost:{A} ",
            "Host : b.test",
            " Host: b.test",
            "\tb.test",
            "Host: localhost:{A}@127.0.0.1:{B}",
            "Host: localhost%3a{B}",
            "Host: localhost:{A}\nHost: 127.0.0.1:{B}",
            "Host: localhost:{A}\rHost: 127.0.0.1:{B}",
            "X-Forwarded-Host: b.test",
            "Host: localhost:{A}, 127.0.0.1:{B}",
        ],
    );
    (
        (method, scheme, userinfo, host, port, path),
        (sp(), sp(), version, eol),
        prop::collection::vec(header, 0..3),
    )
        .prop_map(|((m, sc, u, h, p, pa), (s1, s2, v, eol), headers)| {
            let connect = m.starts_with("CONNECT");
            let target = if connect { format!("{u}{h}{p}") } else { format!("{sc}{u}{h}{p}{pa}") };
            let mut out = format!("{m}{s1}{target}{s2}{v}{eol}");
            for h in headers {
                out.push_str(h);
                out.push_str(eol);
            }
            out.push_str("\r\n");
            (out, connect)
        })
}

#[test]
fn what_the_proxy_allows_is_the_host_the_request_reaches() {
    let a = server("A");
    let b = server("B");
    let listed = format!("localhost:{}", a.port);
    let (session, port) = proxy(&[listed.clone()], &Share::default());
    let fill = |s: &str| s.replace("{A}", &a.port.to_string()).replace("{B}", &b.port.to_string());
    let inner = format!("GET / HTTP/1.1\r\nHost: {listed}\r\n\r\n");
    let allowed_before = std::cell::Cell::new(0);
    let reached_a = std::cell::Cell::new(0);
    let check = |head: &str, connect: bool| -> Result<(), TestCaseError> {
        let head = fill(head);
        let got = send(port, &head, connect, &inner);
        let (at_a, at_b) = (a.settle(), b.settle());
        let allowed = session.counts().allowed;
        let newly_allowed = allowed - allowed_before.replace(allowed);
        reached_a.set(reached_a.get() + at_a.len());
        // Nothing reaches the unlisted server.
        prop_assert!(at_b.is_empty(), "reached the unlisted server: {head:?} -> {at_b:?}");
        // Every request let through reached the listed server, and only those.
        prop_assert_eq!(newly_allowed as usize, at_a.len(), "{:?} -> {:?}", head, got);
        for seen in &at_a {
            // What the listed server is told names the listed host only: one Host, the listed
            // one, an origin-form target (a server takes an absolute-form URL's host over Host),
            // no folded line.
            let (target, hosts, folded) = as_a_server_reads(seen);
            prop_assert!(target.starts_with('/'), "the server was sent the target {target:?}: {head:?} -> {seen:?}");
            prop_assert!(!folded, "a folded header was forwarded: {head:?} -> {seen:?}");
            prop_assert_eq!(hosts.len(), 1, "{:?} -> {:?}", head, seen);
            // (`localhost` listed covers the loopback addresses: the same server.)
            let host = lenient(&hosts[0]);
            prop_assert!(
                matches!(&host, Some((h, p)) if ["localhost", "127.0.0.1", "::1"].contains(&h.as_str()) && *p == a.port),
                "the listed server was told another Host ({:?}): {:?} -> {:?}", host, head, seen
            );
        }
        if !at_a.is_empty() {
            prop_assert!(got.contains("server A"), "{:?} -> {:?}", head, got);
        }
        Ok(())
    };
    // The forms the review named, each on its own: a Host that disagrees with the target, a
    // repeated Host, a bare LF inside a header line and inside the URL, obs-fold, `@` and a
    // percent-escape in the authority.
    let named = [
        "GET http://localhost:{A}/ HTTP/1.1\r\nHost: 127.0.0.1:{B}\r\n\r\n",
        "GET http://localhost:{A}/ HTTP/1.1\r\nHost: localhost:{A}\r\nHost: 127.0.0.1:{B}\r\n\r\n",
        "GET http://localhost:{A}/ HTTP/1.1\r\nAccept: */*\nHost: 127.0.0.1:{B}\r\n\r\n",
        "GET http://localhost:{A}/\nHost:127.0.0.1:{B} HTTP/1.1\r\n\r\n",
        "GET http://localhost:{A}/ HTTP/1.1\r\nHost: localhost:{A}\r\n Host: 127.0.0.1:{B}\r\n\r\n",
        "GET http://localhost:{A}@127.0.0.1:{B}/ HTTP/1.1\r\n\r\n",
        "GET http://127.0.0.1%3a{B}@localhost:{A}/ HTTP/1.1\r\n\r\n",
        "CONNECT localhost:{A}@127.0.0.1:{B} HTTP/1.1\r\n\r\n",
    ];
    let failed: Vec<String> = named.iter().filter_map(|h| check(h, h.starts_with("CONNECT")).err().map(|e| e.to_string())).collect();
    assert!(failed.is_empty(), "{} of {} named forms:\n{}", failed.len(), named.len(), failed.join("\n"));
    // Then generated heads.
    let mut runner = TestRunner::new(Config { cases: 1500, failure_persistence: None, ..Config::default() });
    if let Err(e) = runner.run(&head(), |(head, connect)| check(&head, connect)) {
        panic!("{e}");
    }
    // The generated heads did let some through (the property is not vacuous).
    let reached_a = reached_a.get();
    assert!(reached_a > 20, "only {reached_a} requests were let through");
    eprintln!("{reached_a} of {} requests reached the listed server; none the other", named.len() + 1500);
}

/// The name of a test of this module as the harness knows it.
fn test_name(name: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, m)) => format!("{m}::{name}"),
        None => name.to_string(),
    }
}

/// Set (to the address) in the process that runs inside a network namespace of its own.
const OWN_ADDRESS_ENV: &str = "WORKCELL_TEST_PROXY_OWN_ADDRESS";

#[test]
fn a_listed_name_resolving_to_an_address_of_this_machine_is_refused() {
    // The test runs again in a network and mount namespace of its own (root only), where
    // 203.0.113.7 (a documentation address, which the proxy otherwise treats as public) is an
    // address of an interface and /etc/hosts maps service.test to it.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: a network namespace for the test needs root");
        return;
    }
    if !std::process::Command::new("ip").arg("-V").output().is_ok_and(|o| o.status.success()) {
        eprintln!("skipped: the test sets up its namespace with iproute2's `ip`, not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "127.0.0.1 localhost\n203.0.113.7 service.test\n").unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("unshare")
        .args(["--net", "--mount", "--propagation", "private", "sh", "-ec"])
        .arg(r#"ip link set lo up; ip addr add 203.0.113.7/32 dev lo; mount --bind "$1" /etc/hosts; shift; exec "$@""#)
        .arg("sh")
        .arg(&hosts)
        .arg(&exe)
        .args(["--exact", &test_name("inside_own_namespace"), "--include-ignored", "--nocapture", "--test-threads", "1"])
        .env(OWN_ADDRESS_ENV, "203.0.113.7")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stdout.contains("1 passed"), "{stdout}\n{stderr}");
}

#[test]
#[ignore = "run by a_listed_name_resolving_to_an_address_of_this_machine_is_refused in a namespace of its own"]
fn inside_own_namespace() {
    let Ok(ip) = std::env::var(OWN_ADDRESS_ENV) else { return };
    // This machine's own service, on every address.
    let service = TcpListener::bind("0.0.0.0:0").unwrap();
    let sport = service.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for c in service.incoming() {
            let Ok(mut c) = c else { return };
            let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhost service");
        }
    });
    let ask = |allow: &str, url: &str| {
        let (_s, port) = proxy(&[allow.to_string()], &Share::default());
        send(port, &format!("GET {url} HTTP/1.1\r\n\r\n"), false, "")
    };
    // The listed name resolves to the address of an interface: refused, naming why.
    let got = ask(&format!("service.test:{sport}"), &format!("http://service.test:{sport}/"));
    assert!(got.starts_with("HTTP/1.1 403") && got.contains(&format!("it resolves to {ip}, an address of this machine")), "{got}");
    // An entry listing the address itself allows it.
    let got = ask(&format!("{ip}:{sport}"), &format!("http://{ip}:{sport}/"));
    assert!(got.starts_with("HTTP/1.1 200") && got.ends_with("host service"), "{got}");
}

#[test]
fn one_tool_set_holding_connections_cannot_starve_another() {
    // A server that keeps every connection open.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let oport = l.local_addr().unwrap().port();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let k = kept.clone();
    std::thread::spawn(move || {
        for c in l.incoming().flatten() {
            k.lock().unwrap().push(c);
        }
    });
    let allow = [format!("localhost:{oport}")];
    let tunnel = format!("CONNECT localhost:{oport} HTTP/1.1\r\n\r\n");
    let open = |port: u16| -> (TcpStream, String) {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        c.write_all(tunnel.as_bytes()).unwrap();
        let head = String::from_utf8_lossy(&read_head(&mut c)).into_owned();
        (c, head)
    };
    // Tool set A: calls (each its own session) that open tunnels until A is refused, or until
    // it holds as many as the whole proxy allows.
    let a = Share::default();
    let mut held = Vec::new();
    let mut sessions = Vec::new();
    let mut refused = None;
    let deadline = Instant::now() + Duration::from_secs(60);
    'calls: for _ in 0..8 {
        let (session, port) = proxy(&allow, &a);
        sessions.push(session);
        for _ in 0..64 {
            assert!(Instant::now() < deadline);
            let (c, head) = open(port);
            if !head.starts_with("HTTP/1.1 200") {
                refused = Some(head);
                break 'calls;
            }
            held.push(c);
        }
    }
    // Tool set B's allowed tunnel still opens.
    let (_b, port) = proxy(&allow, &Share::default());
    let (_c, head) = open(port);
    assert!(head.starts_with("HTTP/1.1 200"), "tool set B was refused while tool set A held {} tunnels: {head}", held.len());
    assert_eq!(held.len(), MAX_CONNECTIONS_PER_TOOL_SET, "tool set A holds more than its share");
    let refused = refused.unwrap();
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    drop(held);
}
