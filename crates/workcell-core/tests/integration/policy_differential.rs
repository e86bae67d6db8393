//! The command policy against the shells that run what it allows.
//!
//! Every script of a written corpus (the attacks the policy must refuse, and benign and tricky
//! variants) and of a generated corpus (fragments of shell syntax combined at random,
//! deterministically per seed) is checked with `check_command` as `["sh", "-c", script]` and
//! `["bash", "-c", script]`, under a deny-list and under an allow-list. Each script the policy
//! allows is then run by the real `dash` (for `sh`) or `bash`, with PATH holding only logging
//! stubs: every program the shell starts appends its name to a log (wrappers such as `env` or
//! `xargs` log and then run the real wrapper, which finds its program on the same PATH). The
//! test fails when a program ran that the policy would not have allowed, or when a file
//! appeared in a directory outside the script's working directory.
//!
//! `POLICY_DIFF_SEED` fixes the seed (printed by every run), `POLICY_DIFF_SCRIPTS` the number
//! of generated scripts (default 7,000, which runs more than 2,000 allowed ones under each shell). `POLICY_DIFF_KEEP` keeps the scratch directory.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::os::unix::process::CommandExt as _;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use workcell_core::policy::{check_command, Policy};

const DASH: &str = "/bin/dash";
const BASH: &str = "/bin/bash";

/// Programs an allow-list permits.
const ALLOWED: &[&str] =
    &["ls", "cat", "grep", "wc", "head", "tail", "sort", "tee", "git", "make", "touch", "mkdir", "env", "xargs", "find", "nice", "nohup", "timeout", "stdbuf"];
/// Programs the deny-list names; also outside the allow-list.
const DENIED: &[&str] = &["sudo", "su", "doas", "pkexec", "id", "csub", "evil", "uname", "whoami", "curl", "rm"];
/// Names a POSIX shell may run as programs where bash reads a keyword, and runners the policy
/// must follow or refuse: stubs too, outside the allow-list.
const OTHER: &[&str] = &["[[", "]]", "function", "coproc", "select", "time", "prlimit", "setarch", "linux64", "fail"];
/// Stubs that run the real program after logging (it finds its own program on the stub PATH).
const PASS_THROUGH: &[(&str, &str)] = &[
    ("env", "/usr/bin/env"),
    ("xargs", "/usr/bin/xargs"),
    ("find", "/usr/bin/find"),
    ("nice", "/usr/bin/nice"),
    ("nohup", "/usr/bin/nohup"),
    ("timeout", "/usr/bin/timeout"),
    ("stdbuf", "/usr/bin/stdbuf"),
    ("prlimit", "/usr/bin/prlimit"),
    ("setarch", "/usr/bin/setarch"),
    ("linux64", "/usr/bin/linux64"),
];

// ---------------------------------------------------------------------------------------------
// A deterministic generator

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Program names scripts call: allowed ones, builtins, and names that must never run.
fn program(r: &mut Rng) -> String {
    if r.chance(30) {
        r.pick(&["sudo", "id", "csub", "evil", "uname", "whoami", "curl", "rm", "time", "fail"]).to_string()
    } else {
        r.pick(&["ls", "cat", "grep", "wc", "head", "echo", "true", "false", ":", "printf", "git", "make", "tee", "touch"]).to_string()
    }
}

fn word(r: &mut Rng) -> String {
    let bad = program(r);
    match r.below(22) {
        0 => "x".into(),
        1 => "'a b'".into(),
        2 => "\"a $x\"".into(),
        3 => "\\'".into(),
        4 => "a\\ b".into(),
        5 => "\"$x\"".into(),
        6 => format!("\"$({bad})\""),
        7 => "'#'".into(),
        8 => "#".into(),
        9 => "$'\\''".into(),
        10 => format!("$'a\\'\n{bad}\n'"),
        11 => "a#b".into(),
        12 => format!("'{bad}'"),
        13 => format!("\"{bad}\""),
        14 => format!("${{x:-{bad}}}"),
        15 => format!("\"${{x:-\"$({bad})\"}}\""),
        16 => format!("`{bad}`"),
        17 => "$\"x\"".into(),
        18 => "\\\n".into(),
        19 => "'\n'".into(),
        20 => "\"\\\"\"".into(),
        _ => "--".into(),
    }
}

fn target(r: &mut Rng) -> String {
    r.pick(&["out.txt", "sub/f", "/dev/null", "OUTSIDE/f", "'o t'", "x"]).to_string()
}

fn delimiter(r: &mut Rng) -> (&'static str, &'static str) {
    let d = ["EOF", "'EOF'", "\"EOF\"", "\\EOF", "E\"OF\""];
    (d[r.below(d.len())], "EOF")
}

/// One command fragment.
fn fragment(r: &mut Rng) -> String {
    let p = program(r);
    let q = program(r);
    let w = word(r);
    let t = target(r);
    match r.below(44) {
        0 => format!("{p} {w}"),
        1 => format!("{p} {w} > {t}"),
        2 => format!("{p} >> {t} 2>&1"),
        3 => format!("{p} &> {t}"),
        4 => format!("{p} &>{t} {q} x"),
        5 => format!("echo $'\\'\n{p} -u root\necho \\'' #'"),
        6 => format!("[[ a || {p} == x ]]"),
        7 => format!("[[ x > {t} ]]"),
        8 => format!("[[ -n {w} ]] && {p}"),
        9 => format!("x=$({p} {w})"),
        10 => format!("echo \"$({p})\" `{q}`"),
        11 => {
            let (d, e) = delimiter(r);
            let dash = if r.chance(30) { "-" } else { "" };
            let tab = if dash.is_empty() { "" } else { "\t" };
            format!("cat <<{dash}{d}\n{tab}$({p}) {w}\n{tab}{e}")
        }
        12 => {
            let (d, e) = delimiter(r);
            let dash = if r.chance(40) { "-" } else { "" };
            let tab = if dash.is_empty() { "" } else { "\t" };
            let assign = if r.chance(50) { "x=" } else { "echo " };
            format!("{assign}$(cat <<{dash}{d}\n{tab}x\n{tab}{e})\n{p} csub\n{e}\n)")
        }
        13 => {
            let (d, e) = delimiter(r);
            format!("cat <<{d}\nx\n{e})\n{p}\n{e}")
        }
        14 => format!("f() {{ {p}; }}; f"),
        15 => format!("function f {{ {p}; }}; f"),
        16 => format!("((1)) && {p}"),
        17 => format!("{p} <<< {w}"),
        18 => format!("{p} |& {q}"),
        19 => format!("{p} | {q}"),
        20 => format!("coproc {p}"),
        21 => format!("time {p}"),
        22 => format!("case {w} in a) {p};; *) {q};; esac"),
        23 => format!("if {p}; then {q}; fi"),
        24 => format!("{p} # {q}"),
        25 => format!("{p} \\\n{w}"),
        26 => format!("echo {p} x | xargs {}", r.pick(&["", "xargs", "env", "nice", "-n1", "ls"])),
        27 => format!("env {} {p}", r.pick(&["", "-i", "A=1", "-u X"])),
        28 => format!("nice {p}"),
        29 => format!("timeout 5 {p}"),
        30 => format!("find . -maxdepth 0 -exec {p} {{}} \\;"),
        31 => format!("cat <({p})"),
        32 => format!("{p} > >({q})"),
        33 => format!("echo \"${{x:-'}}'}}\" {p}"),
        34 => format!("A={w} {p}"),
        35 => format!("mkdir -p sub && cd sub && {p} > {t}"),
        36 => format!("{p} >&{}", r.pick(&["1", "2", "3", "9"])),
        37 => format!("! {p}"),
        38 => format!("{{ {p}; }} > {t}"),
        39 => format!("( {p} )"),
        40 => format!("echo $((1+2)) {w}"),
        41 => format!("{} {p}", r.pick(&["prlimit", "setarch x86_64", "linux64", "env -C sub", "env --chdir=sub"])),
        42 => format!("echo {w} {w}", w = word(r)),
        _ => format!("for i in {w}; do {p}; done"),
    }
}

fn script(r: &mut Rng) -> String {
    let n = 1 + r.below(4);
    let mut out = String::new();
    for k in 0..n {
        if k > 0 {
            out.push_str(r.pick(&["; ", "\n", " && ", " || ", " | ", " & "]));
        }
        out.push_str(&fragment(r));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The written corpus

/// Scripts for `sh -c` / `bash -c`: the attacks of the security review, then variants.
const CORPUS: &[&str] = &[
    "echo $'\\'\nsudo -u root id\necho \\'' #'",
    "true &>/dev/null sudo id",
    "[[ a || sudo == x ]]",
    "[[ x > OUTSIDE/file ]]",
    "echo $(cat <<EOF\nx\nEOF)\nsudo csub\nEOF\n)",
    "x=$(cat <<EOF\nx\nEOF)\nsudo csub\nEOF\n)",
    "x=$(cat <<'EOF'\nx\nEOF)\nsudo csub\nEOF\n)",
    "x=$(cat <<-EOF\n\tx\n\tEOF)\nsudo csub\nEOF\n)",
    "echo `cat <<EOF\nx\nEOF`\nsudo csub\nEOF\n`",
    "echo id -u | xargs xargs",
    "echo uname -a | xargs env",
    "echo uname | xargs nice",
    "prlimit --nofile=100 sudo id",
    "setarch x86_64 sudo id",
    "linux64 sudo id",
    "env -C OUTSIDE sh -c 'echo x > f'",
    "env --chdir=OUTSIDE touch f",
    "echo x >&3",
    // Benign and tricky.
    "echo hi > out.txt; cat out.txt | wc -l",
    "cat <<EOF\nhello $(echo there)\nEOF",
    "cat <<'EOF'\n$(sudo id) `rm x` [[ &>\nEOF",
    "cat <<-EOF\n\t\tindented\n\tEOF\necho after",
    "echo a#b # sudo id",
    "echo 'it''s' \"a\\\"b\" \\# x",
    "case x in (a) echo a;; x) ls;; esac",
    "echo $(case x in a) echo a;; esac) ok",
    "f() { ls; }; f; f > out.txt",
    "if true; then ls; else cat x; fi",
    "for i in 1 2; do echo $i; done | sort",
    "ls \\\n-la",
    "x=1; echo ${x:-default} ${#x} \"${x%1}\"",
    "exec 3>out.txt; echo x >&3; exec 3>&-",
    "echo $((1 << 2)) $(( (1 + 2) * 3 ))",
    "find . -maxdepth 0 -exec ls {} +",
    "echo a b | xargs ls",
    "mkdir -p sub && cd sub && echo x > f",
    "! false && echo negated",
    "{ echo a; echo b; } > out.txt",
    "( cd sub 2>/dev/null; ls )",
    "echo \"$(echo \"$(ls)\")\"",
    "echo `echo \\`ls\\``",
    "time ls",
    "[ -f out.txt ] || touch out.txt",
    "test -n \"$x\" && echo set",
    "true && ls || cat nothing",
    "nohup ls > out.txt 2>&1",
    "timeout 5 ls; nice -n 1 ls",
    "env A=1 ls",
];

// ---------------------------------------------------------------------------------------------
// Running

struct Lab {
    root: PathBuf,
    outside: PathBuf,
}

fn write_stub(dir: &Path, name: &str, orphan_log: &Path) {
    let log = format!("${{STUB_LOG:-{}}}", orphan_log.display());
    let tail = match PASS_THROUGH.iter().find(|(n, _)| *n == name) {
        Some((_, real)) => format!("exec {real} \"$@\"\n"),
        None if name == "fail" || name == "[[" => "exit 1\n".to_string(),
        None => "exit 0\n".to_string(),
    };
    let body = format!("#!/bin/sh\nprintf '%s\\n' '{name}' >> \"{log}\"\n{tail}");
    let path = dir.join(name);
    fs::write(&path, body).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

impl Lab {
    fn new(label: &str) -> Lab {
        let tag: String = label.chars().filter(char::is_ascii_alphanumeric).take(12).collect();
        let root = std::env::temp_dir().join(format!("workcell-policy-diff-{}-{tag}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("bin")).unwrap();
        fs::create_dir_all(root.join("logs")).unwrap();
        let outside = root.join("outside");
        fs::create_dir_all(&outside).unwrap();
        let orphan = root.join("logs/orphan");
        for name in ALLOWED.iter().chain(DENIED).chain(OTHER) {
            write_stub(&root.join("bin"), name, &orphan);
        }
        Lab { root, outside }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Deny,
    Allow,
}

struct Run {
    script: String,
    shell: &'static str,
    mode: Mode,
    log: PathBuf,
}

/// Which stub names may run under `mode`.
fn permitted(mode: Mode, name: &str) -> bool {
    match mode {
        Mode::Deny => !DENIED.contains(&name),
        Mode::Allow => ALLOWED.contains(&name),
    }
}

fn policies() -> [(Mode, Policy); 2] {
    [
        (Mode::Deny, Policy::default().with_deny(DENIED.iter().copied())),
        (Mode::Allow, Policy::default().with_allow(ALLOWED.iter().copied())),
    ]
}

fn run_one(lab: &Lab, worker: usize, index: usize, run: &Run) -> Option<String> {
    let cwd = lab.root.join(format!("w{worker}"));
    let _ = fs::remove_dir_all(&cwd);
    fs::create_dir_all(&cwd).unwrap();
    let shell = if run.shell == "sh" { DASH } else { BASH };
    let mut child = Command::new(shell)
        .args(["-c", &run.script])
        .process_group(0)
        .current_dir(&cwd)
        .env_clear()
        .env("PATH", lab.root.join("bin"))
        .env("HOME", "/nonexistent")
        .env("STUB_LOG", &run.log)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A per-script deadline: the whole process group is killed past it.
    let started = Instant::now();
    let mut pause = Duration::from_micros(50);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(5) {
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(2));
    }
    let leaked: Vec<_> = fs::read_dir(&lab.outside).unwrap().flatten().map(|e| e.file_name()).collect();
    if !leaked.is_empty() {
        for e in fs::read_dir(&lab.outside).unwrap().flatten() {
            let _ = fs::remove_file(e.path());
            let _ = fs::remove_dir_all(e.path());
        }
        return Some(format!("#{index} {} ({:?}) wrote outside its directory {leaked:?}: {:?}", run.shell, run.mode, run.script));
    }
    None
}

fn violations_in_log(run: &Run) -> Vec<String> {
    let Ok(text) = fs::read_to_string(&run.log) else { return Vec::new() };
    let ran: BTreeSet<&str> = text.lines().collect();
    ran.into_iter().filter(|n| !permitted(run.mode, n)).map(str::to_string).collect()
}

/// Checks every script, runs the allowed ones, returns (runs, violations).
fn differential(scripts: &[String], label: &str) -> ([usize; 2], Vec<String>) {
    let lab = Lab::new(label);
    let mut runs = Vec::new();
    for script in scripts {
        // The policy judges the script as it runs: OUTSIDE is an absolute path.
        let script = &script.replace("OUTSIDE", &lab.outside.display().to_string());
        for shell in ["sh", "bash"] {
            for (mode, policy) in policies() {
                let argv = vec![shell.to_string(), "-c".to_string(), script.clone()];
                if check_command(&argv, &policy).is_ok() {
                    let log = lab.root.join(format!("logs/{}", runs.len()));
                    runs.push(Run { script: script.clone(), shell, mode, log });
                }
            }
        }
    }
    let next = AtomicUsize::new(0);
    let problems = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for worker in 0..2 {
            let (lab, runs, next, problems) = (&lab, &runs, &next, &problems);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(run) = runs.get(i) else { break };
                if let Some(p) = run_one(lab, worker, i, run) {
                    problems.lock().unwrap().push(p);
                }
            });
        }
    });
    // Background jobs may log after their shell exited.
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut problems = problems.into_inner().unwrap();
    for (i, run) in runs.iter().enumerate() {
        let bad = violations_in_log(run);
        if !bad.is_empty() {
            problems.push(format!("#{i} {} ({:?}) ran {bad:?}, which the policy did not allow: {:?}", run.shell, run.mode, run.script));
        }
    }
    if let Ok(text) = fs::read_to_string(lab.root.join("logs/orphan")) {
        let bad: BTreeSet<&str> = text.lines().filter(|n| DENIED.contains(n)).collect();
        if !bad.is_empty() {
            problems.push(format!("a program whose environment was cleared ran {bad:?} (script unknown)"));
        }
    }
    let per_shell = |sh: &str| runs.iter().filter(|r| r.shell == sh).count();
    eprintln!(
        "{label}: {} scripts, {} runs of allowed scripts (dash {}, bash {}), {} violations",
        scripts.len(),
        runs.len(),
        per_shell("sh"),
        per_shell("bash"),
        problems.len()
    );
    if std::env::var_os("POLICY_DIFF_KEEP").is_none() {
        let _ = fs::remove_dir_all(&lab.root);
    }
    ([per_shell("sh"), per_shell("bash")], problems)
}

fn shells_present() -> bool {
    Path::new(DASH).exists() && Path::new(BASH).exists()
}

fn report(problems: &[String]) -> String {
    let mut out = problems.iter().take(25).cloned().collect::<Vec<_>>().join("\n");
    if problems.len() > 25 {
        out.push_str(&format!("\n... and {} more", problems.len() - 25));
    }
    out
}

#[test]
fn written_corpus_runs_only_what_the_policy_allowed_under_dash_and_bash() {
    assert!(shells_present(), "dash and bash are needed for the differential test");
    let scripts: Vec<String> = CORPUS.iter().map(|s| s.to_string()).collect();
    let ([dash, bash], problems) = differential(&scripts, "written corpus");
    assert!(problems.is_empty(), "{}", report(&problems));
    // The benign part of the corpus is allowed and run.
    assert!(dash >= 40 && bash >= 50, "only {dash} runs under dash and {bash} under bash");
}

#[test]
fn generated_scripts_run_only_what_the_policy_allowed_under_dash_and_bash() {
    assert!(shells_present(), "dash and bash are needed for the differential test");
    let seed = std::env::var("POLICY_DIFF_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    let count: usize = std::env::var("POLICY_DIFF_SCRIPTS").ok().and_then(|s| s.parse().ok()).unwrap_or(7_000);
    eprintln!("policy differential seed: POLICY_DIFF_SEED={seed}");
    let mut rng = Rng(seed);
    let scripts: Vec<String> = (0..count).map(|_| script(&mut rng)).collect();
    let ([dash, bash], problems) = differential(&scripts, &format!("generated (seed {seed})"));
    assert!(problems.is_empty(), "seed {seed}:\n{}", report(&problems));
    // Enough of what is generated is allowed, and so run, under each shell.
    let wanted = if count >= 7_000 { 2_000 } else { count / 10 };
    assert!(dash >= wanted && bash >= wanted, "only {dash} runs under dash and {bash} under bash for {count} scripts");
}
