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
    let session = Session::with(allow, resolver, checks);
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
        ("NOT A REQUEST\r\n\r\n".to_string(), "400"),
        (format!("GET http://localhost:1/ HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(MAX_HEAD_BYTES)), "431"),
    ] {
        let got = ask(port, &req);
        assert!(got.starts_with(&format!("HTTP/1.1 {status}")), "{req:.60}: {got}");
    }
    assert_eq!(session.counts(), Counts { allowed: 0, refused: 6 });
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
    let session = Session::new(allow);
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
