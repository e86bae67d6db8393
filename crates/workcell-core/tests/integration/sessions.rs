//! Process sessions end to end: servers waited for and reached from the same tool set, a REPL
//! through a terminal, hostile processes (SIGTERM ignored, setsid daemons, timeouts), the
//! limits refused before any effect, and nothing left after any end.

use std::sync::Arc;
use std::time::{Duration, Instant};

use workcell_core::command::{run_command, CommandOptions, CommandRequest};
use workcell_core::sandbox::{Features, Mode, Network};
use workcell_core::session::{ProcessTable, ReadRequest, SessionOptions, StartRequest};
use workcell_core::{Cancel, Code, Workspace};

use crate::common;

use common::{fixture, marker, Fixture, PATH};

fn table_for(f: &Fixture, mark: &str, tweak: impl FnOnce(&mut SessionOptions)) -> ProcessTable {
    let mut o = SessionOptions::new(PATH);
    o.command.scratch_parent = f.scratch.clone();
    o.command.env = vec![("WC_MARK".into(), mark.into())];
    tweak(&mut o);
    ProcessTable::new(Arc::new(Workspace::open(&f.root).unwrap()), o).unwrap()
}

fn start(argv: &[&str]) -> StartRequest {
    StartRequest { argv: argv.iter().map(|s| s.to_string()).collect(), ..StartRequest::default() }
}

fn read(id: &str) -> ReadRequest {
    ReadRequest { id: id.into(), ..ReadRequest::default() }
}

fn scratch_left(f: &Fixture) -> Vec<String> {
    std::fs::read_dir(&f.scratch).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
}

fn assert_nothing_left(f: &Fixture, mark: &str) {
    common::assert_none_alive(mark, Duration::from_secs(2));
    assert!(scratch_left(f).is_empty(), "scratch left: {:?}", scratch_left(f));
}

fn network_confinable() -> bool {
    Features::detect().landlock_abi.is_some_and(|a| a >= 4)
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

const SERVER: &str = "require('http').createServer((q, s) => s.end('hello from the session')).listen(+process.argv[1], '127.0.0.1', () => console.log('listening on ' + process.argv[1]))";
const FETCH: &str = "require('http').get('http://127.0.0.1:' + process.argv[1], r => { let b = ''; r.on('data', d => b += d); r.on('end', () => console.log('got: ' + b)); }).on('error', e => { console.log('error: ' + e.code); process.exit(3); })";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_server_waited_for_then_fetched_by_the_tool_set_then_stopped_leaving_nothing() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let port = free_port();
    let t = table_for(&f, &mark, |o| o.allowed_ports = vec![port]);
    let c = Cancel::new();
    let p = port.to_string();
    let mut req = start(&["node", "-e", SERVER, &p]);
    req.wait_for = Some("listening".into());
    req.wait_ms = Some(15_000.0);
    req.ports = vec![port as f64];
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched && out.running, "{out:?}");
    assert_eq!(out.id, "p1");
    assert!(out.output.contains(&format!("listening on {port}")));
    assert_eq!(scratch_left(&f).len(), 1, "the session's HOME and TMPDIR live while it runs");

    // run_command of the same tool set (its sandbox shares the table's ports) connects.
    let mut co = CommandOptions::new(PATH);
    co.scratch_parent = f.scratch.clone();
    co.sandbox.connect_ports = t.ports().clone();
    let fetch = CommandRequest { argv: vec!["node".into(), "-e".into(), FETCH.into(), p.clone()], cwd: None, timeout_ms: None };
    let got = run_command(&f.ws, &fetch, &co, &c).await.unwrap();
    assert_eq!(got.output, "got: hello from the session\n", "{got:?}");
    if network_confinable() && got.sandbox.network == Network::Blocked {
        // The attack with the rule off: a command outside the tool set cannot connect.
        let mut other = CommandOptions::new(PATH);
        other.scratch_parent = f.scratch.clone();
        let refused = run_command(&f.ws, &fetch, &other, &c).await.unwrap();
        assert_eq!(refused.exit_code, Some(3), "{refused:?}");
        assert!(refused.output.contains("error: EACCES"), "{refused:?}");
    }

    let stopped = t.stop(&out.id, None, &c).await.unwrap();
    assert!(!stopped.running);
    assert!(stopped.signal.is_some() || stopped.exit_code.is_some());
    assert_nothing_left(&f, &mark);
    let listed = t.list();
    assert_eq!(listed.len(), 1);
    assert!(!listed[0].running);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_not_listed_cannot_be_bound() {
    if !network_confinable() {
        return;
    }
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let (allowed, other) = (free_port(), free_port());
    let t = table_for(&f, &mark, |o| o.allowed_ports = vec![allowed]);
    let c = Cancel::new();
    let o = other.to_string();
    let listen = "require('net').createServer().listen(+process.argv[1], '127.0.0.1', () => console.log('bound')).on('error', e => { console.log('error: ' + e.code); process.exit(4); })";
    // Asking for it is refused before any effect.
    let mut req = start(&["node", "-e", listen, &o]);
    req.ports = vec![other as f64];
    let err = t.start(&req, &c).await.unwrap_err();
    assert_eq!(err.reason(), Some("PORT_NOT_ALLOWED"));
    assert!(t.list().is_empty() && scratch_left(&f).is_empty());
    // Binding it anyway, from a session that was given another port, fails.
    req.ports = vec![allowed as f64];
    req.wait_ms = Some(10_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert_eq!((out.running, out.exit_code), (false, Some(4)), "{out:?}");
    assert!(out.output.contains("error: EACCES"));
    // And the allowed one binds (the rule on).
    let a = allowed.to_string();
    let mut ok = start(&["node", "-e", listen, &a]);
    ok.ports = vec![allowed as f64];
    ok.wait_for = Some("bound".into());
    ok.wait_ms = Some(10_000.0);
    let out = t.start(&ok, &c).await.unwrap();
    assert!(out.matched, "{out:?}");
    t.close().await;
    assert_nothing_left(&f, &mark);
}

/// Connects to each `host:port` given and prints `host:port connected` or the error's code.
const CONNECT: &str = "const net = require('net'); const go = () => { let left = process.argv.length - 1; for (const h of process.argv.slice(1)) { const i = h.lastIndexOf(':'); const s = net.connect(+h.slice(i + 1), h.slice(0, i)); const done = (what) => { console.log(h + ' ' + what); s.destroy(); if (!--left) process.exit(0); }; s.on('connect', () => done('connected')); s.on('error', (e) => done(e.code)); } }; if (process.env.WAIT_STDIN) { console.log('waiting'); process.stdin.once('data', go); } else go();";

/// A listener of the host's own (outside every sandbox) on `ip:port`, polled without blocking.
fn host_listener(ip: &str, port: u16) -> std::net::TcpListener {
    let l = std::net::TcpListener::bind((ip, port)).unwrap();
    l.set_nonblocking(true).unwrap();
    l
}

/// Whether anything connected to `l` (a connection the child made is queued before its connect
/// returns, so asking after the child reported is enough).
fn was_reached(l: &std::net::TcpListener) -> bool {
    l.accept().is_ok()
}

/// Whether the tool set's network namespace can be used here: Landlock ABI 4 and namespaces.
fn ports_contained() -> bool {
    let f = Features::detect();
    network_confinable() && f.pid_namespace && f.user_namespace
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_port_nobody_listens_on_reaches_nothing_of_the_host() {
    if !ports_contained() {
        return;
    }
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let port = free_port();
    // The host's services on that port: another loopback address, and the one the session
    // would listen on (it never does).
    let (other, same) = (host_listener("127.0.0.2", port), host_listener("127.0.0.1", port));
    let t = table_for(&f, &mark, |o| o.allowed_ports = vec![port]);
    let c = Cancel::new();
    let out = t.start(&StartRequest { ports: vec![port as f64], wait_ms: Some(0.0), ..start(&["sleep", "300"]) }, &c).await.unwrap();
    assert!(out.running, "{out:?}");
    let targets = [format!("127.0.0.2:{port}"), format!("127.0.0.1:{port}")];
    let mut argv = vec!["node".to_string(), "-e".into(), CONNECT.into()];
    argv.extend(targets.iter().cloned());
    // run_command of the tool set, given the port's rule.
    let mut co = CommandOptions::new(PATH);
    co.scratch_parent = f.scratch.clone();
    co.sandbox.connect_ports = t.ports().clone();
    let got = run_command(&f.ws, &CommandRequest { argv: argv.clone(), cwd: None, timeout_ms: None }, &co, &c).await.unwrap();
    assert_eq!(got.exit_code, Some(0), "{got:?}");
    for target in &targets {
        assert!(got.output.contains(&format!("{target} ECONNREFUSED")), "{target}: {got:?}");
    }
    // The session's own process, which holds the port's rule itself.
    let own = t.start(&StartRequest { ports: vec![port as f64], wait_ms: Some(15_000.0), ..start(&argv.iter().map(String::as_str).collect::<Vec<_>>()) }, &c).await.unwrap();
    assert_eq!((own.running, own.exit_code), (false, Some(0)), "{own:?}");
    assert!(!own.output.contains("connected") && own.output.matches("ECONNREFUSED").count() == 2, "{own:?}");
    assert!(!was_reached(&other) && !was_reached(&same), "a host's listener was reached");
    t.close().await;
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_started_during_the_lease_cannot_reach_the_host_after_the_session_stopped() {
    if !ports_contained() {
        return;
    }
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let port = free_port();
    let host = host_listener("127.0.0.2", port);
    let t = table_for(&f, &mark, |o| {
        o.allowed_ports = vec![port];
        o.command.env.push(("WAIT_STDIN".into(), "1".into()));
    });
    let c = Cancel::new();
    let lease = t.start(&StartRequest { ports: vec![port as f64], wait_ms: Some(0.0), ..start(&["sleep", "300"]) }, &c).await.unwrap();
    // Started while the port is open: its ruleset allows connecting to the port.
    let target = format!("127.0.0.2:{port}");
    let late = StartRequest { wait_for: Some("waiting".into()), wait_ms: Some(15_000.0), ..start(&["node", "-e", CONNECT, &target]) };
    let waiting = t.start(&late, &c).await.unwrap();
    assert!(waiting.matched, "{waiting:?}");
    let stopped = t.stop(&lease.id, Some("SIGKILL"), &c).await.unwrap();
    assert!(!stopped.running);
    t.write(&waiting.id, "go\n", false, &c).await.unwrap();
    let mut r = read(&waiting.id);
    r.wait_for = Some(format!("{target} "));
    r.wait_ms = Some(15_000.0);
    let got = t.read(&r, &c).await.unwrap();
    assert!(got.matched && got.output.contains(&format!("{target} ECONNREFUSED")), "{got:?}");
    assert!(!was_reached(&host), "the host's listener was reached");
    t.close().await;
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_repl_through_a_terminal_answers_without_escape_bytes() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["node", "-i"]);
    req.tty = true;
    req.wait_for = Some("> $".into());
    req.wait_ms = Some(15_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched, "{out:?}");
    assert_eq!(t.write(&out.id, "1+1\n", false, &c).await.unwrap(), 4);
    let mut r = read(&out.id);
    r.wait_for = Some("(?m)^2$".into());
    r.wait_ms = Some(10_000.0);
    let got = t.read(&r, &c).await.unwrap();
    assert!(got.matched, "{got:?}");
    assert!(got.output.lines().any(|l| l == "2"), "{:?}", got.output);
    assert!(!got.output.contains('\x1b') && !got.output.contains('\r'), "{:?}", got.output);
    t.stop(&out.id, Some("SIGKILL"), &c).await.unwrap();
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sigterm_ignoring_process_is_killed_after_the_grace() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]);
    req.wait_for = Some("ready".into());
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched);
    let began = Instant::now();
    let stopped = t.stop(&out.id, None, &c).await.unwrap();
    assert!(!stopped.running);
    assert_eq!(stopped.signal.as_deref(), Some("SIGKILL"), "killed by us says so: {stopped:?}");
    assert_eq!(stopped.exit_code, None);
    assert!(began.elapsed() >= Duration::from_secs(2), "SIGKILL only after the grace");
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setsid_double_forked_daemon_dies_with_its_session() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "setsid sh -c 'sleep 300 & sleep 300' </dev/null >/dev/null 2>&1 & echo forked; sleep 300"]);
    req.wait_for = Some("forked".into());
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched);
    std::thread::sleep(Duration::from_millis(200));
    assert!(common::alive_with(&mark).len() >= 3, "the daemon runs");
    t.stop(&out.id, None, &c).await.unwrap();
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeout_ends_the_tree_and_says_it_was_killed() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "sleep 300 & sleep 300"]);
    req.timeout_ms = Some(300.0);
    req.wait_ms = Some(10_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert!(!out.running);
    assert_eq!((out.exit_code, out.signal.as_deref()), (None, Some("SIGKILL")));
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes_are_real_and_output_is_in_order() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "echo out; echo err >&2; echo $HOME; exit 3"]);
    req.wait_ms = Some(10_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert!(!out.running);
    assert_eq!((out.exit_code, out.signal.as_deref()), (Some(3), None));
    let lines: Vec<&str> = out.output.lines().collect();
    assert_eq!(&lines[..2], ["out", "err"]);
    assert!(lines[2].contains("workcell-scratch-") && lines[2].ends_with("/home"));
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_matches_across_chunks_and_cursors_resume() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "printf 'lis'; sleep 0.3; printf 'tening\\n'; sleep 0.3; echo ERROR one; echo two; sleep 300"]);
    req.wait_for = Some("listening".into());
    req.wait_ms = Some(10_000.0);
    req.watch = vec!["ERROR".into()];
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched, "{out:?}");
    let mut r = read(&out.id);
    r.wait_for = Some("two".into());
    r.wait_ms = Some(10_000.0);
    let next = t.read(&r, &c).await.unwrap();
    assert!(next.matched);
    assert!(next.output.starts_with(&out.output[out.cursor as usize..]) || !next.output.contains("lis"), "{next:?}");
    assert_eq!(next.alerts.len(), 1);
    assert_eq!(next.alerts[0].line, "ERROR one");
    assert_eq!(next.cursor, (out.output.len() + next.output.len()) as u64);
    // From the start again, by cursor.
    let mut again = read(&out.id);
    again.cursor = Some(0.0);
    again.wait_ms = Some(0.0);
    let all = t.read(&again, &c).await.unwrap();
    assert_eq!(all.output, "listening\nERROR one\ntwo\n");
    assert!(all.alerts.is_empty(), "alerts are reported once");
    // Nothing new: returns after waitMs with no output.
    let mut idle = read(&out.id);
    idle.wait_ms = Some(50.0);
    assert_eq!(t.read(&idle, &c).await.unwrap().output, "");
    t.close().await;
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gigabytes_of_output_keep_the_head_and_tail_and_count_the_rest() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "head -c 50000000 /dev/zero | tr '\\0' x; echo; echo END"]);
    req.wait_for = Some("END".into());
    req.wait_ms = Some(30_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched);
    let mut r = read(&out.id);
    r.cursor = Some(0.0);
    r.wait_ms = Some(5_000.0);
    let all = t.read(&r, &c).await.unwrap();
    let total = 50_000_000 + 5;
    assert_eq!(all.cursor, total);
    assert_eq!(all.omitted_bytes, total - 8 * 1024 - 64 * 1024);
    assert!(all.output.contains(&format!("[{} bytes omitted]", all.omitted_bytes)));
    assert!(all.output.ends_with("x\nEND\n"));
    t.close().await;
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_are_refused_with_no_effect() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |o| o.max_processes = 1);
    let c = Cancel::new();
    let bad_wait = StartRequest { wait_ms: Some(30_001.0), ..start(&["sleep", "300"]) };
    assert_eq!(t.start(&bad_wait, &c).await.unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    let bad_regex = StartRequest { wait_for: Some("(".into()), ..start(&["sleep", "300"]) };
    assert_eq!(t.start(&bad_regex, &c).await.unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    let watch = StartRequest { watch: (0..17).map(|i| i.to_string()).collect(), ..start(&["sleep", "300"]) };
    assert!(t.start(&watch, &c).await.is_err());
    assert_eq!(t.start(&start(&["sudo", "sleep", "300"]), &c).await.unwrap_err().reason(), Some("COMMAND_REFUSED"));
    assert_eq!(t.start(&StartRequest { ports: vec![8080.0], ..start(&["sleep", "300"]) }, &c).await.unwrap_err().reason(), Some("PORT_NOT_ALLOWED"));
    assert!(t.list().is_empty() && scratch_left(&f).is_empty() && common::alive_with(&mark).is_empty());

    let one = t.start(&StartRequest { wait_ms: Some(0.0), ..start(&["sleep", "300"]) }, &c).await.unwrap();
    let err = t.start(&StartRequest { wait_ms: Some(0.0), ..start(&["sleep", "300"]) }, &c).await.unwrap_err();
    assert_eq!(err.code, Code::ProcessLimit);
    assert!(err.hint.unwrap().contains("stop_process"));
    assert_eq!(t.list().len(), 1);
    assert_eq!(scratch_left(&f).len(), 1);

    let long = "x".repeat(8193);
    assert_eq!(t.write(&one.id, &long, false, &c).await.unwrap_err().reason(), Some("CONTENT_TOO_LARGE"));
    for id in ["p9", "nope", "p"] {
        let err = t.read(&read(id), &c).await.unwrap_err();
        assert_eq!(err.code, Code::ProcessNotFound);
        assert!(err.hint.unwrap().contains("list_processes"));
        assert_eq!(t.stop(id, None, &c).await.unwrap_err().code, Code::ProcessNotFound);
    }
    assert_eq!(t.stop(&one.id, Some("SIGHUP"), &c).await.unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    assert!(t.list()[0].running, "a refused stop has no effect");
    t.close().await;
    assert_nothing_left(&f, &mark);
    assert_eq!(t.start(&start(&["true"]), &c).await.unwrap_err().code, Code::ProcessLimit);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_pipe_takes_input_and_close_stdin_ends_it() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let out = t.start(&StartRequest { wait_ms: Some(0.0), ..start(&["cat"]) }, &c).await.unwrap();
    assert_eq!(t.write(&out.id, "héllo\n", true, &c).await.unwrap(), 7);
    let mut r = read(&out.id);
    r.wait_ms = Some(10_000.0);
    r.wait_for = Some("héllo".into());
    let got = t.read(&r, &c).await.unwrap();
    assert!(got.matched);
    let mut end = read(&out.id);
    end.wait_ms = Some(10_000.0);
    end.wait_for = Some("never".into());
    let done = t.read(&end, &c).await.unwrap();
    assert_eq!((done.running, done.exit_code), (false, Some(0)));
    assert_eq!(t.write(&out.id, "more", false, &c).await.unwrap_err().code, Code::ProcessNotFound);
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_namespace_the_group_is_stopped_and_nothing_is_left() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |o| {
        o.command.sandbox.limit = Some(Features { pid_namespace: false, ..Features::detect() });
    });
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "sleep 300 & echo up; sleep 300"]);
    req.wait_for = Some("up".into());
    let out = t.start(&req, &c).await.unwrap();
    assert_eq!(out.sandbox.processes, workcell_core::sandbox::Processes::Group);
    let stopped = t.stop(&out.id, None, &c).await.unwrap();
    assert_eq!(stopped.signal.as_deref(), Some("SIGTERM"));
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_off_still_runs_and_stops() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |o| o.command.sandbox.mode = Mode::Off);
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "echo up; sleep 300"]);
    req.wait_for = Some("up".into());
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched);
    t.stop(&out.id, Some("SIGINT"), &c).await.unwrap();
    assert_nothing_left(&f, &mark);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_for_finds_a_match_in_the_tail_after_a_gap_while_the_process_is_idle() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let mut req = start(&["sh", "-c", "head -c 100000 /dev/zero | tr '\\0' x; echo; echo MARK; echo idle; sleep 300"]);
    req.wait_for = Some("idle".into());
    req.wait_ms = Some(10_000.0);
    let out = t.start(&req, &c).await.unwrap();
    assert!(out.matched);
    // The whole output is already there and nothing more comes: the head, then the tail after
    // the bytes not kept, are both searched at once.
    let mut r = read(&out.id);
    r.cursor = Some(0.0);
    r.wait_for = Some("MARK".into());
    r.wait_ms = Some(2_000.0);
    let got = t.read(&r, &c).await.unwrap();
    assert!(got.matched, "{:?}", (got.cursor, got.omitted_bytes));
    t.close().await;
    assert_nothing_left(&f, &mark);
}

/// A start's grant opens its path for that session only: the next start without grants is
/// refused by the kernel (the process's own EACCES), and the same start with the sandbox off
/// writes (so the refusal is the sandbox's, and this test can fail).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_granted_write_path_opens_for_that_session_only_the_next_start_is_refused_by_the_kernel() {
    if Features::detect().landlock_abi.is_none() {
        return;
    }
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let t = table_for(&f, &mark, |_| {});
    let c = Cancel::new();
    let outside = tempfile::tempdir().unwrap();
    let granted = std::fs::canonicalize(outside.path()).unwrap();
    let g = granted.to_str().unwrap().to_string();
    let touch = |name: &str| {
        let mut r = start(&["sh", "-c", "touch \"$0\" && echo wrote", &format!("{g}/{name}")]);
        r.wait_ms = Some(10_000.0);
        r
    };
    let mut first = touch("a");
    first.grants.write_paths = vec![g.clone()];
    let out = t.start(&first, &c).await.unwrap();
    assert_eq!((out.exit_code, out.output.trim()), (Some(0), "wrote"), "{out:?}");
    assert!(granted.join("a").exists());
    assert_eq!(out.sandbox.filesystem, workcell_core::sandbox::Filesystem::Confined);
    // The next start, without grants: the table's options only.
    let out = t.start(&touch("b"), &c).await.unwrap();
    assert_ne!(out.exit_code, Some(0));
    assert!(out.output.contains("Permission denied"), "{}", out.output);
    assert!(!granted.join("b").exists());
    // A grant whose path became a symlink (to the same directory, even) since it was approved
    // opens nothing: the kernel refuses the write.
    let moved = tempfile::tempdir().unwrap();
    let m = std::fs::canonicalize(moved.path()).unwrap().join("d");
    std::fs::create_dir(&m).unwrap();
    let ms = m.to_str().unwrap().to_string();
    let mut linked = start(&["sh", "-c", "touch \"$0\" && echo wrote", &format!("{ms}/c")]);
    linked.wait_ms = Some(10_000.0);
    linked.grants.write_paths = vec![ms.clone()];
    std::fs::remove_dir(&m).unwrap();
    std::os::unix::fs::symlink(&granted, &m).unwrap();
    let out = t.start(&linked, &c).await.unwrap();
    assert_ne!(out.exit_code, Some(0), "{out:?}");
    assert!(!granted.join("c").exists());
    // A path that is not absolute is refused before anything starts.
    let mut relative = touch("c");
    relative.grants.write_paths = vec!["relative/dir".into()];
    assert_eq!(t.start(&relative, &c).await.unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
    // With the sandbox off, the same start writes.
    let open = table_for(&f, &mark, |o| o.command.sandbox.mode = Mode::Off);
    assert_eq!(open.start(&touch("b"), &c).await.unwrap().exit_code, Some(0));
    assert!(granted.join("b").exists());
    // A granted `sandbox: "off"` is reported as what was in force.
    let mut off = touch("d");
    off.grants.sandbox = Some("off".into());
    let out = t.start(&off, &c).await.unwrap();
    assert_eq!((out.exit_code, out.sandbox.filesystem), (Some(0), workcell_core::sandbox::Filesystem::Open));
    assert_nothing_left(&f, &mark);
}

/// `closeTools` resolved while processes of a session's tree were still alive (a fresh-clone
/// run on a loaded machine saw one): the table was done once the process it started was
/// collected and the output pipe closed, while the kernel was still killing the rest of the
/// namespace (or group). Now close resolves only when every tree is gone: a single look
/// right after it finds nothing, with two threads keeping both cores busy meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_resolves_only_once_every_process_of_every_tree_is_gone_under_load() {
    let f = fixture(&[]);
    let mark = marker("wc-sess");
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let burners: Vec<_> = (0..2)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    std::hint::black_box(x);
                }
            })
        })
        .collect();
    // Many processes that do not hold the output pipe, so its end says nothing about them.
    let tree = "for i in $(seq 40); do sleep 300 </dev/null >/dev/null 2>&1 & done; echo up; sleep 300";
    for namespace in [true, false] {
        let t = table_for(&f, &mark, |o| {
            if !namespace {
                o.command.sandbox.limit = Some(Features { pid_namespace: false, ..Features::detect() });
            }
        });
        let c = Cancel::new();
        for _ in 0..3 {
            let mut req = start(&["sh", "-c", tree]);
            req.wait_for = Some("up".into());
            req.wait_ms = Some(30_000.0);
            assert!(t.start(&req, &c).await.unwrap().matched);
        }
        assert!(common::alive_with(&mark).len() >= 120, "the trees run");
        let left = t.close().await;
        let alive = common::alive_with(&mark);
        assert!(alive.is_empty() && left.is_empty(), "namespace {namespace}: alive right after close: {alive:?}, reported left: {left:?}");
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for b in burners {
        b.join().unwrap();
    }
    assert_nothing_left(&f, &mark);
}
