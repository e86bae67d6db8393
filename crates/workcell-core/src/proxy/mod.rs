//! The filtering proxy of `network: { allow: [...] }`: the only way out of a confined process's
//! network namespace.
//!
//! The namespace has loopback only; its listening socket on [`PROXY_PORT`] is made inside it
//! and handed to this process ([`crate::sandbox::netns`]), where one [`Session`] per call
//! accepts on it. Each connection carries one request:
//!
//! - `CONNECT host:port` opens a tunnel (what HTTPS clients send to a proxy);
//! - `GET http://host[:port]/path` (any method, absolute-form, plain HTTP) is forwarded with
//!   `Connection: close`, the proxy's own headers removed.
//!
//! A request goes through only when an entry of the [`Allowlist`] allows the host and port;
//! the proxy then resolves the name itself (never the child's resolver) and connects to one of
//! the addresses it checked: public unicast ones, or ones an entry lists itself ([`addr`]). So
//! a listed name that resolves (or is rebound) to a loopback, private or link-local address is
//! refused, and no second resolution can change the address connected to. Every refusal is an
//! HTTP 403 (400 for a malformed request, 431 for an oversized head, 503 past the connection
//! cap) whose body names the host and the rule.
//!
//! Bounds: a request head of at most [`MAX_HEAD_BYTES`], read within [`HEAD_TIMEOUT`]; name
//! resolution and connection within [`CONNECT_TIMEOUT`]; a tunnel or forwarded request closed
//! after [`IDLE_TIMEOUT`] without a byte either way; at most [`MAX_CONNECTIONS`] connections at
//! once per call and [`MAX_CONNECTIONS_TOTAL`] in the process. Everything runs on one tokio
//! runtime of its own ([`runtime`], one thread), shared by every call; a session stops
//! (listener and connections) when the call's [`Session`] is dropped.

pub mod addr;
pub mod allow;
pub mod own;

pub use allow::{Allowlist, Entry, HostRule, Target, PRESETS};

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// The proxy's port on the namespace's loopback (`http://127.0.0.1:3128`).
pub const PROXY_PORT: u16 = 3128;
/// The longest request head (request line and headers).
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// The time a client has to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// The time name resolution and the connection to the destination may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A tunnel or forwarded request with no byte either way for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// Connections open at once through one call's proxy.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections open at once through every call's proxy in this process.
pub const MAX_CONNECTIONS_TOTAL: usize = 512;
/// Connections open at once through the proxies of one tool set's calls: a quarter of the
/// process's, so one tool set's connections always leave room for others'.
pub const MAX_CONNECTIONS_PER_TOOL_SET: usize = 128;

/// A tool set's share of the proxy's connections ([`MAX_CONNECTIONS_PER_TOOL_SET`]), held by
/// everything that starts its processes; cloning shares it.
#[derive(Clone)]
pub struct Share(Arc<Semaphore>);

impl Default for Share {
    fn default() -> Self {
        Share(Arc::new(Semaphore::new(MAX_CONNECTIONS_PER_TOOL_SET)))
    }
}

impl std::fmt::Debug for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Share").field(&self.0.available_permits()).finish()
    }
}

/// The environment a filtered child gets: every proxy variable, in both cases, pointing at the
/// namespace's proxy; `NO_PROXY` empty so that even `localhost` goes through it.
pub fn child_environment() -> Vec<(&'static str, String)> {
    let url = format!("http://127.0.0.1:{PROXY_PORT}");
    let mut env = Vec::new();
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.push((name, url.clone()));
        env.push((lower(name), url.clone()));
    }
    env.push(("NO_PROXY", String::new()));
    env.push(("no_proxy", String::new()));
    // Node.js 24+ (and 22.21+) make `fetch` and `http` honour the variables with this.
    env.push(("NODE_USE_ENV_PROXY", "1".into()));
    env
}

fn lower(name: &'static str) -> &'static str {
    match name {
        "HTTP_PROXY" => "http_proxy",
        "HTTPS_PROXY" => "https_proxy",
        _ => "all_proxy",
    }
}

/// The runtime every session runs on (one thread, made on first use).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("workcell-proxy")
            .enable_all()
            .build()
            .expect("the proxy's runtime")
    })
}

fn total() -> &'static Arc<Semaphore> {
    static TOTAL: OnceLock<Arc<Semaphore>> = OnceLock::new();
    TOTAL.get_or_init(|| Arc::new(Semaphore::new(MAX_CONNECTIONS_TOTAL)))
}

/// How the proxy resolves names.
#[derive(Clone, Debug)]
enum Resolver {
    /// The system's resolver (`getaddrinfo`, on tokio's blocking pool).
    System,
    /// Fixed answers (tests: a name that resolves to loopback).
    #[cfg(test)]
    Fixed(Vec<(String, Vec<IpAddr>)>),
}

/// The connections of one call: what was let through and what was refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "NetworkCounts")]
pub struct Counts {
    /// Requests and tunnels the allowlist let through (whether the destination then answered or not).
    #[serde(serialize_with = "crate::json::number")]
    pub allowed: u64,
    /// Requests refused: not listed, a non-public address, malformed, oversized, over the cap.
    #[serde(serialize_with = "crate::json::number")]
    pub refused: u64,
}

impl Counts {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("counts serialize")
    }
}

struct Inner {
    allow: Arc<Allowlist>,
    resolver: Resolver,
    /// Off only in tests, to show the address checks are what refuses.
    check_addresses: bool,
    allowed: AtomicU64,
    refused: AtomicU64,
    stop: CancellationToken,
    conns: Arc<Semaphore>,
    /// The tool set's share.
    share: Share,
    /// Off only in tests: refuse the addresses of this machine's interfaces ([`own`]).
    check_own: bool,
}

/// One call's proxy: counts its connections; [`Session::stop`] (or the end of the process the
/// server watches) stops the listener and every connection.
#[derive(Clone)]
pub struct Session {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("counts", &self.counts()).finish()
    }
}

/// The part of a session the spawn holds: it starts serving on the namespace's listener.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Server")
    }
}

impl Session {
    /// A call's proxy, counted against `share`, its tool set's.
    pub fn new(allow: Arc<Allowlist>, share: Share) -> Session {
        Session::with(allow, Resolver::System, true, share)
    }

    fn with(allow: Arc<Allowlist>, resolver: Resolver, check_addresses: bool, share: Share) -> Session {
        Session::with_checks(allow, resolver, check_addresses, check_addresses, share)
    }

    fn with_checks(allow: Arc<Allowlist>, resolver: Resolver, check_addresses: bool, check_own: bool, share: Share) -> Session {
        Session {
            inner: Arc::new(Inner {
                allow,
                resolver,
                check_addresses,
                allowed: AtomicU64::new(0),
                refused: AtomicU64::new(0),
                stop: CancellationToken::new(),
                conns: Arc::new(Semaphore::new(MAX_CONNECTIONS)),
                share,
                check_own,
            }),
        }
    }

    pub fn server(&self) -> Server {
        Server { inner: self.inner.clone() }
    }

    /// Stops the listener and every connection.
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }

    pub fn counts(&self) -> Counts {
        Counts { allowed: self.inner.allowed.load(Ordering::Relaxed), refused: self.inner.refused.load(Ordering::Relaxed) }
    }
}


impl Server {
    /// Accepts on `listener` (the namespace's, or any) until the session is stopped or the
    /// process behind `until` (a pidfd) has exited; then every connection ends too.
    pub fn serve(&self, listener: std::net::TcpListener, until: Option<std::os::fd::OwnedFd>) -> io::Result<()> {
        listener.set_nonblocking(true)?;
        let inner = self.inner.clone();
        let rt = runtime();
        let (listener, until) = {
            let _guard = rt.enter();
            let until = match until {
                // SAFETY: an owned pidfd, registered once and dropped with the AsyncFd.
                Some(fd) => Some(
                    unsafe { tokio::io::unix::AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }
                        .map_err(|e| io::Error::other(e.to_string()))?,
                ),
                None => None,
            };
            (TcpListener::from_std(listener)?, until)
        };
        if let Some(until) = until {
            let stop = inner.stop.clone();
            rt.spawn(async move {
                tokio::select! {
                    _ = stop.cancelled() => {}
                    _ = until.readable() => stop.cancel(),
                }
            });
        }
        rt.spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = inner.stop.cancelled() => break,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else {
                    // EMFILE and the like: back off a little instead of spinning.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let inner = inner.clone();
                tokio::spawn(async move {
                    let stop = inner.stop.clone();
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = connection(&inner, stream) => {}
                    }
                });
            }
        });
        Ok(())
    }
}

/// A refusal: status line, and the body's text.
struct Refusal {
    status: &'static str,
    body: String,
}

fn refuse(status: &'static str, body: impl Into<String>) -> Refusal {
    Refusal { status, body: body.into() }
}

async fn respond(stream: &mut TcpStream, r: &Refusal) {
    let body = format!("workcell proxy: {}\n", r.body);
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        r.status,
        body.len()
    );
    let _ = tokio::time::timeout(HEAD_TIMEOUT, async {
        stream.write_all(head.as_bytes()).await?;
        stream.write_all(body.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// One client connection: read the head, decide, connect, relay.
async fn connection(inner: &Inner, mut client: TcpStream) {
    let _ = client.set_nodelay(true);
    // The call's cap first, then the tool set's, then the process's: a permit is only taken
    // from a wider pool when the narrower one had room.
    let own = inner.conns.clone().try_acquire_owned();
    let share = own.as_ref().ok().map(|_| inner.share.0.clone().try_acquire_owned());
    let total = matches!(share, Some(Ok(_))).then(|| total().clone().try_acquire_owned());
    let (Ok(_own), Some(Ok(_share)), Some(Ok(_total))) = (own, share, total) else {
        inner.refused.fetch_add(1, Ordering::Relaxed);
        let why = format!(
            "too many connections at once (at most {MAX_CONNECTIONS} per call, {MAX_CONNECTIONS_PER_TOOL_SET} per tool set, {MAX_CONNECTIONS_TOTAL} in all)"
        );
        respond(&mut client, &refuse("503 Service Unavailable", why)).await;
        return;
    };
    let (head, rest) = match read_head(&mut client).await {
        Ok(h) => h,
        Err(r) => {
            inner.refused.fetch_add(1, Ordering::Relaxed);
            respond(&mut client, &r).await;
            return;
        }
    };
    let req = match parse_request(&head) {
        Ok(r) => r,
        Err(r) => {
            inner.refused.fetch_add(1, Ordering::Relaxed);
            respond(&mut client, &r).await;
            return;
        }
    };
    let addrs = match decide(inner, &req.target, req.port).await {
        Ok(a) => a,
        Err(r) => {
            inner.refused.fetch_add(1, Ordering::Relaxed);
            respond(&mut client, &r).await;
            return;
        }
    };
    inner.allowed.fetch_add(1, Ordering::Relaxed);
    let upstream = match connect(&addrs).await {
        Ok(s) => s,
        Err(e) => {
            let (status, what) = if e.kind() == io::ErrorKind::TimedOut { ("504 Gateway Timeout", "timed out") } else { ("502 Bad Gateway", "failed") };
            respond(&mut client, &refuse(status, format!("the connection to {}:{} {what}: {e}", req.target, req.port))).await;
            return;
        }
    };
    let mut upstream = upstream;
    if req.connect {
        if client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n").await.is_err() {
            return;
        }
    } else if upstream.write_all(&req.forward).await.is_err() {
        return;
    }
    if !rest.is_empty() && upstream.write_all(&rest).await.is_err() {
        return;
    }
    relay(client, upstream).await;
}

/// Reads up to the end of the head (`\r\n\r\n`); returns the head and what came after it.
async fn read_head(client: &mut TcpStream) -> Result<(Vec<u8>, Vec<u8>), Refusal> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 4096];
    let read = async {
        loop {
            let n = client.read(&mut chunk).await.map_err(|e| refuse("400 Bad Request", format!("could not read the request: {e}")))?;
            if n == 0 {
                return Err(refuse("400 Bad Request", "the connection ended before a complete request head"));
            }
            let from = buf.len().saturating_sub(3);
            buf.extend_from_slice(&chunk[..n]);
            if let Some(i) = memchr::memmem::find(&buf[from..], b"\r\n\r\n") {
                let end = from + i + 4;
                if end > MAX_HEAD_BYTES {
                    break;
                }
                let rest = buf.split_off(end);
                return Ok((buf, rest));
            }
            if buf.len() > MAX_HEAD_BYTES {
                break;
            }
        }
        Err(refuse("431 Request Header Fields Too Large", format!("the request head is larger than {MAX_HEAD_BYTES} bytes")))
    };
    match tokio::time::timeout(HEAD_TIMEOUT, read).await {
        Ok(r) => r,
        Err(_) => Err(refuse("408 Request Timeout", format!("no complete request head within {} s", HEAD_TIMEOUT.as_secs()))),
    }
}

/// A parsed request.
struct Request {
    connect: bool,
    target: Target,
    port: u16,
    /// For a plain HTTP request: the head to send to the destination.
    forward: Vec<u8>,
}

/// Parses `host:port` (`[v6]:port`); `default` when the port is absent (never for CONNECT).
fn split_authority(auth: &str, default: Option<u16>) -> Option<(Target, u16)> {
    let (host, port) = if auth.starts_with('[') {
        let end = auth.find(']')?;
        let after = &auth[end + 1..];
        (&auth[..=end], if after.is_empty() { None } else { Some(after.strip_prefix(':')?) })
    } else {
        match auth.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (auth, None),
        }
    };
    let port = match port {
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => p.parse::<u16>().ok().filter(|p| *p > 0)?,
        Some(_) => return None,
        None => default?,
    };
    Some((allow::normalize_host(host)?, port))
}

/// The most headers a request head may have.
const MAX_HEADERS: usize = 128;

/// Parses a request head with `httparse` (strict: no obs-fold, single spaces in the request
/// line, no space before a header's colon) and refuses any head whose destination could be
/// read two ways: a bare LF, a repeated or invalid `Host` header, userinfo, a percent-escape or
/// a backslash in the authority, a fragment. What is allowed is then the host the destination
/// is told: the forwarded head is rebuilt from the parsed parts, with the target's authority as
/// its one `Host` (the client's is dropped).
fn parse_request(head: &[u8]) -> Result<Request, Refusal> {
    let bad = |why: &str| refuse("400 Bad Request", why.to_string());
    // Every LF ends a line only after a CR (httparse also takes a bare LF as a line end, which
    // another reader of the same bytes may not).
    if head.iter().enumerate().any(|(i, b)| *b == b'\n' && (i == 0 || head[i - 1] != b'\r')) {
        return Err(bad("a line of the request head ends with a bare LF"));
    }
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut slots);
    match req.parse(head) {
        Ok(httparse::Status::Complete(n)) if n == head.len() => {}
        Ok(_) => return Err(bad("the request head is incomplete")),
        Err(httparse::Error::TooManyHeaders) => return Err(bad(&format!("the request head has more than {MAX_HEADERS} headers"))),
        Err(e) => return Err(bad(&format!("the request head is malformed ({e})"))),
    }
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(bad("the request line is not `METHOD target HTTP/1.1`"));
    };
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(bad("the request line is not `METHOD target HTTP/1.1`"));
    }
    let mut host_header = None;
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("host") {
            if host_header.is_some() {
                return Err(bad("the request has more than one Host header"));
            }
            host_header = Some(std::str::from_utf8(h.value).map_err(|_| bad("the Host header is not ASCII"))?.trim_matches([' ', '\t']));
        }
    }
    let (connect, auth, path) = if method == "CONNECT" {
        (true, target, "")
    } else {
        let scheme = target.get(..8).map(str::to_ascii_lowercase).unwrap_or_default();
        if scheme.starts_with("https://") {
            return Err(bad("an https:// URL goes through a CONNECT tunnel, not a plain request"));
        }
        if !scheme.starts_with("http://") {
            return Err(bad("this is a proxy: a request names an absolute http:// URL (or is a CONNECT)"));
        }
        let rest = &target[7..];
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        (false, &rest[..end], &rest[end..])
    };
    let (host, port) = checked_authority(auth, (!connect).then_some(80)).map_err(|why| bad(why))?;
    // The target decides where the request goes; a Host header is never forwarded (RFC 9112
    // §3.2.2: a proxy replaces it with the target's authority), but one that is not a valid
    // host is refused like a repeated one.
    if let Some(h) = host_header {
        checked_authority(h, Some(port)).map_err(|_| bad("the Host header is not a valid host name or address"))?;
    }
    if connect {
        return Ok(Request { connect: true, target: host, port, forward: Vec::new() });
    }
    if path.contains('#') {
        return Err(bad("a request target has no fragment (#)"));
    }
    let path = if path.is_empty() { "/".to_string() } else if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
    let mut forward = Vec::with_capacity(head.len() + 32);
    forward.extend_from_slice(format!("{method} {path} HTTP/1.{minor}\r\nHost: {auth}\r\n").as_bytes());
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if matches!(name.as_str(), "host" | "proxy-connection" | "proxy-authorization" | "connection" | "keep-alive") {
            continue;
        }
        forward.extend_from_slice(h.name.as_bytes());
        forward.extend_from_slice(b": ");
        forward.extend_from_slice(h.value);
        forward.extend_from_slice(b"\r\n");
    }
    forward.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request { connect: false, target: host, port, forward })
}

/// An authority (`host[:port]`, `[v6][:port]`) with nothing that another reader could take
/// for a different host: no userinfo (`@`), no percent-escape, no backslash; the port given
/// or `default` (none for CONNECT).
fn checked_authority(auth: &str, default: Option<u16>) -> Result<(Target, u16), &'static str> {
    if auth.contains('@') {
        return Err("a URL with credentials (user@host) is not forwarded");
    }
    if auth.contains('%') {
        return Err("a percent-escape in a host name is refused");
    }
    if auth.contains('\\') {
        return Err("a backslash in a host name is refused");
    }
    split_authority(auth, default).ok_or(if default.is_none() { "CONNECT needs `host:port`" } else { "the URL's host is not a valid host name or address" })
}

/// The addresses `target:port` may be reached at, or why not.
async fn decide(inner: &Inner, target: &Target, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
    let listed: Vec<String> = inner.allow.entries().iter().map(|e| e.text.clone()).collect();
    if inner.allow.find(target, port).is_none() {
        return Err(refuse(
            "403 Forbidden",
            format!("{target}:{port} refused: no entry of the allowlist allows this host and port (allowed: {})", listed.join(", ")),
        ));
    }
    let ips: Vec<IpAddr> = match target {
        Target::Addr(ip) => vec![*ip],
        Target::Name(n) if n == "localhost" => allow::LOOPBACK.to_vec(),
        Target::Name(n) => resolve(&inner.resolver, n, port).await.map_err(|e| {
            refuse("502 Bad Gateway", format!("{target}:{port}: the name could not be resolved: {e}"))
        })?,
    };
    let mut ok = Vec::new();
    let mut why = None;
    // This machine's own addresses, read now (interfaces come and go), only when needed.
    let mut mine: Option<Vec<IpAddr>> = None;
    for ip in ips {
        let class = addr::non_public(ip).or_else(|| {
            let mine = mine.get_or_insert_with(|| if inner.check_own { own::addresses() } else { Vec::new() });
            own::contains(mine, ip).then_some("an address of this machine")
        });
        match class {
            Some(class) if inner.check_addresses && inner.allow.lists_addr(ip, port).is_none() => {
                why.get_or_insert((ip, class));
            }
            _ => ok.push(SocketAddr::new(ip, port)),
        }
    }
    if ok.is_empty() {
        return Err(match why {
            Some((ip, class)) => refuse(
                "403 Forbidden",
                format!("{target}:{port} refused: it resolves to {ip}, {class}, which no entry of the allowlist lists (name that address, or localhost, in an entry to allow it)"),
            ),
            None => refuse("502 Bad Gateway", format!("{target}:{port}: the name has no address")),
        });
    }
    Ok(ok)
}

async fn resolve(resolver: &Resolver, name: &str, port: u16) -> io::Result<Vec<IpAddr>> {
    match resolver {
        Resolver::System => {
            let found = tokio::time::timeout(CONNECT_TIMEOUT, tokio::net::lookup_host((name, port)))
                .await
                .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "timed out"))??;
            let mut ips: Vec<IpAddr> = Vec::new();
            for a in found {
                if !ips.contains(&a.ip()) {
                    ips.push(a.ip());
                }
            }
            Ok(ips)
        }
        #[cfg(test)]
        Resolver::Fixed(map) => {
            map.iter().find(|(n, _)| n == name).map(|(_, ips)| ips.clone()).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "unknown name"))
        }
    }
}

/// Connects to the first of the checked addresses that answers; the address connected to is
/// always one of them.
async fn connect(addrs: &[SocketAddr]) -> io::Result<TcpStream> {
    let started = Instant::now();
    let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
    for a in addrs {
        let left = CONNECT_TIMEOUT.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, TcpStream::connect(a)).await {
            Ok(Ok(s)) => {
                if s.peer_addr().map(|p| p.ip().to_canonical() == a.ip().to_canonical()).unwrap_or(false) {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                last = io::Error::other("connected to another address than the one checked");
            }
            Ok(Err(e)) => last = e,
            Err(_) => return Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")),
        }
    }
    Err(last)
}

/// Copies both ways until both sides have ended, or nothing moved for [`IDLE_TIMEOUT`].
async fn relay(client: TcpStream, upstream: TcpStream) {
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let both = async { tokio::join!(pump(&mut cr, &mut uw, start, &last), pump(&mut ur, &mut cw, start, &last)) };
    tokio::pin!(both);
    loop {
        tokio::select! {
            _ = &mut both => return,
            _ = tokio::time::sleep(Duration::from_secs(1)) => {
                let idle = start.elapsed().as_millis() as u64 - last.load(Ordering::Relaxed);
                if idle > IDLE_TIMEOUT.as_millis() as u64 {
                    return;
                }
            }
        }
    }
}

async fn pump(r: &mut tokio::net::tcp::OwnedReadHalf, w: &mut tokio::net::tcp::OwnedWriteHalf, start: Instant, last: &AtomicU64) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
                if w.write_all(&buf[..n]).await.is_err() {
                    break;
                }
                last.store(start.elapsed().as_millis() as u64, Ordering::Relaxed);
            }
        }
    }
    let _ = w.shutdown().await;
}

#[cfg(test)]
mod tests;
