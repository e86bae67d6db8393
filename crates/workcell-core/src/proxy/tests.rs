use std::io::{Read as _, Write as _};
use std::net::{TcpListener as StdListener, TcpStream as StdStream};
use std::sync::Mutex;

use super::*;

/// A server on 127.0.0.1 that answers every connection with `200 hello` (or echoes, after a
/// tunnel) and records the first line it got.
struct Origin {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

fn origin() -> Origin {
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for c in l.incoming() {
            let Ok(mut c) = c else { return };
            let s = s.clone();
            std::thread::spawn(move || {
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut buf = Vec::new();
                let mut chunk = [0u8; 1024];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                    match c.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
                s.lock().unwrap().push(String::from_utf8_lossy(&buf).into_owned());
                let _ = c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello");
            });
        }
    });
    Origin { port, seen }
}

/// A proxy session serving on a listener of 127.0.0.1 (where the namespace's would be).
fn proxy(allow: &[&str], resolver: Resolver, checks: bool) -> (Session, u16) {
    let allow = Arc::new(Allowlist::parse(allow).unwrap());
    let session = Session::with(allow, resolver, checks, Share::default());
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    session.server().serve(l, None).unwrap();
    (session, port)
}

fn ask(port: u16, request: &str) -> String {
    let mut c = StdStream::connect(("127.0.0.1", port)).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    c.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn a_plain_request_to_a_listed_port_is_forwarded_without_proxy_headers() {
    let o = origin();
    let (session, port) = proxy(&[&format!("localhost:{}", o.port)], Resolver::System, true);
    let got = ask(port, &format!("GET http://localhost:{}/x?y=1 HTTP/1.1\r\nHost: localhost\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic e30=\r\n\r\n", o.port));
    assert!(got.starts_with("HTTP/1.1 200 OK") && got.ends_with("hello"), "{got}");
    let seen = o.seen.lock().unwrap()[0].clone();
    assert!(seen.starts_with("GET /x?y=1 HTTP/1.1\r\n"), "{seen}");
    assert!(!seen.to_ascii_lowercase().contains("proxy-"), "{seen}");
    assert!(seen.contains("Connection: close\r\n"), "{seen}");
    assert_eq!(session.counts(), Counts { allowed: 1, refused: 0 });
}

#[test]
fn a_connect_tunnel_to_a_listed_port_relays_both_ways() {
    let o = origin();
    let (session, port) = proxy(&[&format!("localhost:{}", o.port)], Resolver::System, true);
    let got = ask(port, &format!("CONNECT 127.0.0.1:{} HTTP/1.1\r\nHost: x\r\n\r\nGET /inner HTTP/1.1\r\nHost: x\r\n\r\n", o.port));
    assert!(got.starts_with("HTTP/1.1 200 Connection established\r\n\r\nHTTP/1.1 200 OK"), "{got}");
    assert!(o.seen.lock().unwrap()[0].starts_with("GET /inner "));
    assert_eq!(session.counts().allowed, 1);
}

#[test]
fn an_unlisted_host_or_port_is_refused_with_403_naming_host_and_rule() {
    let o = origin();
    let (session, port) = proxy(&[&format!("localhost:{}", o.port + 1)], Resolver::System, true);
    let got = ask(port, &format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", o.port));
    assert!(got.starts_with("HTTP/1.1 403 Forbidden"), "{got}");
    assert!(got.contains(&format!("localhost:{} refused: no entry of the allowlist", o.port)), "{got}");
    assert!(got.contains(&format!("allowed: localhost:{}", o.port + 1)), "{got}");
    let got = ask(port, "GET http://unlisted.example/ HTTP/1.1\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("unlisted.example:80 refused"), "{got}");
    assert!(o.seen.lock().unwrap().is_empty());
    assert_eq!(session.counts(), Counts { allowed: 0, refused: 2 });
}

#[test]
fn a_name_resolving_to_loopback_is_refused_unless_the_address_is_listed() {
    let o = origin();
    let rebind = || Resolver::Fixed(vec![("registry.test".into(), vec!["127.0.0.1".parse().unwrap()])]);
    let entry = format!("registry.test:{}", o.port);
    let req = format!("CONNECT registry.test:{} HTTP/1.1\r\n\r\n", o.port);
    let (session, port) = proxy(&[&entry], rebind(), true);
    let got = ask(port, &req);
    assert!(got.starts_with("HTTP/1.1 403"), "{got}");
    assert!(got.contains(&format!("registry.test:{} refused: it resolves to 127.0.0.1, a loopback address", o.port)), "{got}");
    assert_eq!(session.counts(), Counts { allowed: 0, refused: 1 });
    assert!(o.seen.lock().unwrap().is_empty());
    // The same request with the address check off reaches the listener: the check is what refused.
    let (_s, port) = proxy(&[&entry], rebind(), false);
    assert!(ask(port, &req).starts_with("HTTP/1.1 200 Connection established"));
    // Listing the address itself lets it through.
    let (_s, port) = proxy(&[&entry, &format!("127.0.0.1:{}", o.port)], rebind(), true);
    assert!(ask(port, &req).starts_with("HTTP/1.1 200 Connection established"));
}

#[test]
fn a_listed_name_never_reaches_the_metadata_address() {
    let (_s, port) = proxy(&["metadata.test"], Resolver::Fixed(vec![("metadata.test".into(), vec!["169.254.169.254".parse().unwrap()])]), true);
    let got = ask(port, "GET http://metadata.test/latest/meta-data/ HTTP/1.1\r\n\r\n");
    assert!(got.starts_with("HTTP/1.1 403") && got.contains("169.254.169.254, a link-local address"), "{got}");
}

#[test]
fn malformed_and_oversized_requests_are_refused() {
    let (session, port) = proxy(&["localhost:1"], Resolver::System, true);
    for (req, status) in [
        ("GET / HTTP/1.1\r\nHost: localhost:1\r\n\r\n".to_string(), "400"),
        ("GET https://localhost:1/ HTTP/1.1\r\n\r\n".to_string(), "400"),
        ("GET http://user@localhost:1/ HTTP/1.1\r\n\r\n".to_string(), "400"),
        ("CONNECT localhost HTTP/1.1\r\n\r\n".to_string(), "400"),
        ("GET http://localhost:1/ HTTP/1.1\nHost: localhost:1\r\n\r\n".to_string(), "400"),
        ("NOT A REQUEST\r\n\r\n".to_string(), "400"),
        (format!("GET http://localhost:1/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES)), "431"),
    ] {
        let got = ask(port, &req);
        assert!(got.starts_with(&format!("HTTP/1.1 {status}")), "{req:.60}: {got}");
    }
    assert_eq!(session.counts(), Counts { allowed: 0, refused: 7 });
}

#[test]
fn connections_past_the_cap_are_refused_with_503() {
    let (session, port) = proxy(&["localhost:1"], Resolver::System, true);
    // Held open without a request: each keeps its place until the head timeout.
    let held: Vec<StdStream> = (0..MAX_CONNECTIONS).map(|_| StdStream::connect(("127.0.0.1", port)).unwrap()).collect();
    // Let the proxy accept them all.
    let deadline = Instant::now() + Duration::from_secs(8);
    while session.inner.conns.available_permits() > 0 {
        assert!(Instant::now() < deadline, "the held connections were not accepted");
        std::thread::sleep(Duration::from_millis(10));
    }
    loop {
        let got = ask(port, "CONNECT localhost:1 HTTP/1.1\r\n\r\n");
        if got.starts_with("HTTP/1.1 503") {
            assert!(got.contains(&format!("at most {MAX_CONNECTIONS}")), "{got}");
            break;
        }
        assert!(Instant::now() < deadline, "never refused past the cap: {got}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(session.counts().refused >= 1);
    drop(held);
}

#[test]
fn stopping_the_session_closes_its_listener() {
    let (session, port) = proxy(&["localhost:1"], Resolver::System, true);
    assert!(ask(port, "CONNECT localhost:2 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 403"));
    session.stop();
    let deadline = Instant::now() + Duration::from_secs(5);
    while StdStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "the listener is still open");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_session_stops_when_the_watched_process_exits() {
    let allow = Arc::new(Allowlist::parse(&["localhost:1"]).unwrap());
    let session = Session::new(allow, Share::default());
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let mut child = std::process::Command::new("/bin/sleep").arg("30").spawn().unwrap();
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).unwrap();
    session.server().serve(l, Some(pidfd)).unwrap();
    assert!(ask(port, "CONNECT localhost:2 HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 403"));
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while StdStream::connect(("127.0.0.1", port)).is_ok() {
        assert!(Instant::now() < deadline, "the listener outlived the process it watched");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_child_environment_points_every_proxy_variable_at_the_namespace_port() {
    let env = child_environment();
    for name in ["HTTP_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"] {
        assert_eq!(env.iter().find(|(n, _)| *n == name).unwrap().1, format!("http://127.0.0.1:{PROXY_PORT}"));
    }
    assert_eq!(env.iter().find(|(n, _)| *n == "NO_PROXY").unwrap().1, "");
}

/// A session of a tool set whose share is `share`, serving on 127.0.0.1.
fn proxy_in(allow: &[&str], share: &Share) -> (Session, u16) {
    let session = Session::with(Arc::new(Allowlist::parse(allow).unwrap()), Resolver::System, true, share.clone());
    let l = StdListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    session.server().serve(l, None).unwrap();
    (session, port)
}

#[test]
fn one_tool_set_holding_idle_connections_cannot_starve_another() {
    let o = origin();
    let entry = format!("localhost:{}", o.port);
    // Tool set A: calls that each hold every connection their cap allows, without a request,
    // until A's connections are refused.
    let a = Share::default();
    let mut held = Vec::new();
    let mut sessions = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(8);
    for _ in 0..MAX_CONNECTIONS_TOTAL / MAX_CONNECTIONS {
        let (session, port) = proxy_in(&[&entry], &a);
        for _ in 0..MAX_CONNECTIONS {
            held.push(StdStream::connect(("127.0.0.1", port)).unwrap());
        }
        // Each connection is either admitted (holding a permit of the call) or refused.
        while MAX_CONNECTIONS - session.inner.conns.available_permits() + (session.counts().refused as usize) < MAX_CONNECTIONS {
            assert!(Instant::now() < deadline, "the held connections were not all accepted");
            std::thread::sleep(Duration::from_millis(10));
        }
        let refused = session.counts().refused;
        sessions.push(session);
        if refused > 0 {
            break;
        }
    }
    let admitted: usize = sessions.iter().map(|s| MAX_CONNECTIONS - s.inner.conns.available_permits()).sum();
    // Tool set B's allowed request still goes through.
    let b = Share::default();
    let (b_session, b_port) = proxy_in(&[&entry], &b);
    let got = ask(b_port, &format!("GET http://localhost:{}/ HTTP/1.1\r\nHost: localhost:{}\r\n\r\n", o.port, o.port));
    assert!(got.starts_with("HTTP/1.1 200 OK"), "tool set B was refused while A held {admitted} connections: {got}");
    assert_eq!(b_session.counts(), Counts { allowed: 1, refused: 0 });
    assert_eq!(admitted, MAX_CONNECTIONS_PER_TOOL_SET, "tool set A holds more than its share");
    // A's next connection is refused, naming the tool set's cap.
    let (_s, port) = proxy_in(&[&entry], &a);
    let got = ask(port, &format!("CONNECT localhost:{} HTTP/1.1\r\n\r\n", o.port));
    assert!(got.starts_with("HTTP/1.1 503") && got.contains(&format!("{MAX_CONNECTIONS_PER_TOOL_SET} per tool set")), "{got}");
    drop(held);
}

/// In a network namespace of this thread's own (root only): `lo` up, and `addr` added to it as
/// a second address (`lo:1`), as an interface's public address would be.
fn own_namespace_with(addr: std::net::Ipv4Addr) -> Result<(), String> {
    // SAFETY: plain system calls on this thread, on local structs.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) != 0 {
            return Err(format!("unshare(CLONE_NEWNET): {}", io::Error::last_os_error()));
        }
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        let mut req: libc::ifreq = std::mem::zeroed();
        let set_name = |req: &mut libc::ifreq, name: &[u8]| {
            req.ifr_name = [0; libc::IFNAMSIZ];
            for (i, b) in name.iter().enumerate() {
                req.ifr_name[i] = *b as libc::c_char;
            }
        };
        set_name(&mut req, b"lo");
        libc::ioctl(s, libc::SIOCGIFFLAGS, &mut req);
        req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        if libc::ioctl(s, libc::SIOCSIFFLAGS, &mut req) != 0 {
            return Err(format!("lo up: {}", io::Error::last_os_error()));
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        set_name(&mut req, b"lo:1");
        let sin = &mut *(&mut req.ifr_ifru.ifru_addr as *mut libc::sockaddr).cast::<libc::sockaddr_in>();
        sin.sin_family = libc::AF_INET as libc::sa_family_t;
        sin.sin_addr.s_addr = u32::from(addr).to_be();
        if libc::ioctl(s, libc::SIOCSIFADDR, &mut req) != 0 {
            return Err(format!("SIOCSIFADDR: {}", io::Error::last_os_error()));
        }
        libc::close(s);
    }
    Ok(())
}

#[test]
fn a_listed_name_resolving_to_an_address_of_this_machine_is_refused() {
    // 203.0.113.7: a documentation address, which the proxy otherwise treats as public.
    let ip = std::net::Ipv4Addr::new(203, 0, 113, 7);
    let result = std::thread::spawn(move || -> Result<Vec<String>, String> {
        own_namespace_with(ip)?;
        assert!(own::addresses().contains(&IpAddr::V4(ip)), "{:?}", own::addresses());
        // The host's own service, on every address (in this thread's namespace).
        let service = StdListener::bind("0.0.0.0:0").unwrap();
        let port = service.local_addr().unwrap().port();
        service.set_nonblocking(true).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let entry = format!("service.test:{port}");
        let allow = |extra: &[String]| {
            let mut all = vec![entry.clone()];
            all.extend_from_slice(extra);
            Arc::new(Allowlist::parse(&all).unwrap())
        };
        let resolver = || Resolver::Fixed(vec![("service.test".into(), vec![IpAddr::V4(ip)])]);
        let target = Target::Name("service.test".into());
        let decide_with = |s: &Session| rt.block_on(decide(&s.inner, &target, port));
        let mut out = Vec::new();
        // Refused, naming why.
        let s = Session::with(allow(&[]), resolver(), true, Share::default());
        match decide_with(&s) {
            Err(r) => out.push(r.body),
            Ok(a) => return Err(format!("let through to {a:?}")),
        }
        // With that check off, the same request reaches the host's service.
        let s = Session::with_checks(allow(&[]), resolver(), true, false, Share::default());
        let addrs = decide_with(&s).map_err(|r| r.body)?;
        let reached = rt.block_on(connect(&addrs)).is_ok() && service.accept().is_ok();
        out.push(format!("check off: reached {reached}"));
        // Listing the address itself allows it.
        let s = Session::with(allow(&[format!("{ip}:{port}")]), resolver(), true, Share::default());
        out.push(format!("listed: {}", decide_with(&s).is_ok()));
        Ok(out)
    })
    .join()
    .unwrap();
    let out = match result {
        Ok(out) => out,
        Err(e) if unsafe { libc::geteuid() } != 0 => {
            eprintln!("skipped: a network namespace of a test thread needs root ({e})");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(out[0].contains("it resolves to 203.0.113.7, an address of this machine"), "{out:?}");
    assert_eq!(out[1..], ["check off: reached true", "listed: true"]);
}

#[test]
fn the_interface_addresses_include_loopback() {
    assert!(own::addresses().iter().any(|a| a.is_loopback()));
    assert!(own::contains(&["10.0.0.1".parse().unwrap()], "::ffff:10.0.0.1".parse().unwrap()));
}

/// What the proxy does with `head`: the host and port it connects to and the head it sends, or
/// the refusal's body.
fn parsed(head: &str) -> Result<(String, u16, String), String> {
    parse_request(head.as_bytes())
        .map(|r| (r.target.to_string(), r.port, String::from_utf8(r.forward).unwrap()))
        .map_err(|r| r.body)
}

#[test]
fn requests_whose_destination_could_be_read_two_ways_are_refused() {
    for (head, why) in [
        ("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", "more than one Host"),
        ("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nhost: a.test\r\n\r\n", "more than one Host"),
        ("GET http://a.test/ HTTP/1.1\r\nHost: a.test@b.test\r\n\r\n", "Host header is not a valid"),
        ("GET http://a.test/ HTTP/1.1\r\nHost: a%2etest\r\n\r\n", "Host header is not a valid"),
        ("CONNECT a.test:443 HTTP/1.1\r\nHost: b.test:443@a.test\r\n\r\n", "Host header is not a valid"),
        ("GET http://user@a.test/ HTTP/1.1\r\n\r\n", "credentials"),
        ("GET http://a.test@b.test/ HTTP/1.1\r\n\r\n", "credentials"),
        ("GET http://a%2etest/ HTTP/1.1\r\n\r\n", "percent-escape"),
        ("GET http://a.test%40b.test/ HTTP/1.1\r\n\r\n", "percent-escape"),
        ("GET http://b.test\\@a.test/ HTTP/1.1\r\n\r\n", "credentials"),
        ("GET http://b.test\\.a.test/ HTTP/1.1\r\n\r\n", "backslash"),
        ("GET http://a.test#@b.test/ HTTP/1.1\r\n\r\n", "fragment"),
        ("GET http://a.test/#x HTTP/1.1\r\n\r\n", "fragment"),
        ("GET http://a.test/ HTTP/1.1\nHost: b.test\r\n\r\n", "bare LF"),
        ("GET http://a.test/\nx HTTP/1.1\r\n\r\n", "bare LF"),
        ("GET  http://a.test/ HTTP/1.1\r\n\r\n", "malformed"),
        ("GET http://a.test/ HTTP/1.1\r\nX: 1\r\n Host: b.test\r\n\r\n", "malformed"),
        ("GET http://a.test/ HTTP/1.1\r\nHost : b.test\r\n\r\n", "malformed"),
        ("GET http://a.test/ HTTP/2.0\r\n\r\n", "malformed"),
        ("CONNECT a.test:443@b.test:443 HTTP/1.1\r\n\r\n", "credentials"),
        ("CONNECT a.test HTTP/1.1\r\n\r\n", "CONNECT needs"),
        ("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", "more than one Host"),
    ] {
        let got = parsed(head);
        assert!(matches!(&got, Err(body) if body.contains(why)), "{head:?}: {got:?}");
    }
}

#[test]
fn a_forwarded_request_names_its_target_as_its_only_host() {
    // The client's Host (here the proxy's own address, as clients that talk to a proxy by hand
    // send) is replaced by the target's.
    let (host, port, forward) = parsed("GET http://A.Test.:8080/p?q HTTP/1.0\r\nHost: 127.0.0.1:3128\r\nAccept: */*\r\nProxy-Connection: x\r\n\r\n").unwrap();
    assert_eq!((host.as_str(), port), ("a.test", 8080));
    assert_eq!(forward, "GET /p?q HTTP/1.0\r\nHost: A.Test.:8080\r\nAccept: */*\r\nConnection: close\r\n\r\n");
    // Without a Host header, the target's authority is the Host.
    let (_, port, forward) = parsed("GET http://a.test?x HTTP/1.1\r\n\r\n").unwrap();
    assert_eq!(port, 80);
    assert!(forward.starts_with("GET /?x HTTP/1.1\r\nHost: a.test\r\n"), "{forward}");
    // A tunnel goes to its target; its Host header is not forwarded anywhere.
    assert_eq!(parsed("CONNECT [::1]:443 HTTP/1.1\r\nHost: other\r\n\r\n").unwrap().0, "[::1]");
}

mod generated {
    use super::*;
    use proptest::prelude::*;

    /// Pieces of hostile request heads.
    fn head() -> impl Strategy<Value = String> {
        let method = prop::sample::select(vec!["GET", "POST", "CONNECT", "get"]);
        let scheme = prop::sample::select(vec!["http://", "HTTP://", "https://", "", "http:/"]);
        let userinfo = prop::sample::select(vec!["", "", "", "u@", "u:p@", "a.test@", "u%40@"]);
        let host = prop::sample::select(vec!["a.test", "b.test", "A.TEST.", "127.0.0.1", "[::1]", "a%2etest", "a.test\\", "a.test\\@b.test", "a..test", "", "a.test#"]);
        let port = prop::sample::select(vec!["", "", ":80", ":8080", ":0", ":99999", ":08", ":", ":443"]);
        let path = prop::sample::select(vec!["", "/", "/x?y", "?q", "#f", "/@b.test", "/%2f"]);
        let sp = prop::sample::select(vec![" ", " ", " ", "  ", "\t"]);
        let version = prop::sample::select(vec!["HTTP/1.1", "HTTP/1.0", "HTTP/1.1 ", "http/1.1"]);
        let eol = prop::sample::select(vec!["\r\n", "\r\n", "\r\n", "\n"]);
        let header = prop::sample::select(vec![
            "Host: a.test",
            "Host: b.test",
            "host:a.test:8080",
            "Host:  A.Test ",
            "Host : b.test",
            " Host: b.test",
            "\tb.test",
            "Host: a.test@b.test",
            "Host: a%2etest",
            "X-Forwarded-Host: b.test",
            "Accept: */*",
        ]);
        (
            (method, scheme, userinfo, host, port, path),
            (sp.clone(), sp, version, eol),
            prop::collection::vec(header, 0..4),
        )
            .prop_map(|((m, sc, u, h, p, pa), (s1, s2, v, eol), headers)| {
                let target = if m == "CONNECT" { format!("{u}{h}{p}") } else { format!("{sc}{u}{h}{p}{pa}") };
                let mut out = format!("{m}{s1}{target}{s2}{v}{eol}");
                for h in headers {
                    out.push_str(h);
                    out.push_str(eol);
                }
                out.push_str("\r\n");
                out
            })
    }

    /// A reading of `host[:port]` as a lenient server would make it.
    fn lenient(auth: &str, default: u16) -> Option<(String, u16)> {
        let auth = auth.trim_matches([' ', '\t']);
        let (h, p) = match auth.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(':') && !auth.ends_with(']') => (h, p.parse().ok()?),
            _ => (auth, default),
        };
        let h = h.trim_start_matches('[').trim_end_matches(']').trim_end_matches('.').to_ascii_lowercase();
        Some((h, p))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 4000, failure_persistence: None, ..ProptestConfig::default() })]

        /// Whatever a let-through request's bytes say about its destination, read by httparse or
        /// leniently line by line, is the host and port the proxy checked and connects to.
        #[test]
        fn what_is_allowed_is_the_host_the_request_reaches(head in head()) {
            let Ok(req) = parse_request(head.as_bytes()) else { return Ok(()) };
            let checked = (req.target.to_string().trim_start_matches('[').trim_end_matches(']').to_string(), req.port);
            let line = head.split("\r\n").next().unwrap();
            prop_assert!(!line.contains('\n') && !head.replace("\r\n", "").contains('\n'), "a bare LF was let through: {head:?}");
            let target = line.split(' ').nth(1).unwrap();
            // The URL's authority (up to the first character that ends it for any reader).
            let auth = if req.connect { target } else { &target[7..] };
            let auth = &auth[..auth.find(['/', '?', '#']).unwrap_or(auth.len())];
            prop_assert!(!auth.contains('@') && !auth.contains('%') && !auth.contains('\\'), "{:?}", head);
            prop_assert!(req.connect || !target.contains('#'), "{:?}", head);
            prop_assert_eq!(lenient(auth, if req.connect { 0 } else { 80 }), Some(checked.clone()), "{:?}", head);
            if req.connect {
                return Ok(());
            }
            // At most one line a server could take for a Host header (it is replaced).
            let hosts = head.split("\r\n").skip(1).filter(|l| l.split_once(':').is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("host"))).count();
            prop_assert!(hosts <= 1, "{:?}", head);
            // And the head sent on has exactly one Host, the checked one, in origin form.
            let mut slots = [httparse::EMPTY_HEADER; 16];
            let mut sent = httparse::Request::new(&mut slots);
            prop_assert!(matches!(sent.parse(&req.forward), Ok(httparse::Status::Complete(n)) if n == req.forward.len()));
            prop_assert!(sent.path.unwrap().starts_with('/'));
            let hosts: Vec<&[u8]> = sent.headers.iter().filter(|h| h.name.eq_ignore_ascii_case("host")).map(|h| h.value).collect();
            prop_assert_eq!(hosts.len(), 1);
            prop_assert_eq!(lenient(std::str::from_utf8(hosts[0]).unwrap(), 80), Some(checked));
        }
    }
}
