//! `run_tests`: runs the workspace's test suite with one of four runners and returns a short
//! report the model can act on.
//!
//! The tool builds the command itself, always with machine-readable output:
//! - vitest: `<node> node_modules/.bin/vitest run --reporter=json --outputFile=<scratch>/...
//!   --testTimeout=<inner> --hookTimeout=<inner> [args]` (vitest must be installed in the
//!   workspace; the report file is created by the host, the one thing in the scratch
//!   directory's top level the runner may write, and read back through [`untrusted`]);
//! - node: `<node> --test --test-reporter=<scratch>/reporter.mjs
//!   --test-reporter-destination=stdout --test-timeout=<inner> [args]` ([`node`]);
//! - go: `go test -json -count=1 -timeout=<inner>ms [args] [./...]` (a `go.mod` in the root);
//! - cargo: `cargo test --no-fail-fast --manifest-path=<root>/Cargo.toml [args]` (libtest's
//!   output; libtest has no per-test timeout, so only the outer deadline applies).
//!
//! `args` are checked against a per-runner allow-list before any effect ([`args`]). Two
//! deadlines: the call's own (outer, default 120 s, clamped to the host's maximum) and an inner
//! one at three quarters of it handed to the runner, so that a hung test is usually stopped and
//! named by the runner. Past the outer deadline the whole process tree is killed and the call
//! fails with `TESTS_TIMED_OUT` (details: the partial report). A runner that produced no
//! structured result and exited non-zero could not start: `TEST_RUNNER_FAILED`, whose message is
//! the runner's own first lines.
//!
//! The process path is run_command's ([`crate::command::launch`]): no shell, the root as working
//! directory, an environment built from nothing (PATH, a private HOME and TMPDIR, the caches in
//! the scratch directory, go's offline settings, the names the host passes), one merged pipe
//! parsed as it arrives ([`sink`]), the process group killed at the end. The runner is confined
//! by the sandbox as run_command's programs are ([`crate::sandbox`]), with the runner's
//! toolchain readable ([`confine`]: the Go installation, the Rust toolchains, the registry
//! cache, never the registry credentials); the report is the result's `sandbox`. Of the
//! scratch directory the runner may write only `home/`, `tmp/`, the caches and vitest's report
//! file, never its top level: it cannot replace what the host reads there or runs from there.
//!
//! The result's `status` is decided in one place ([`verdict::decide`]) from how the runner
//! ended, what was counted and whether the runner's own summary agreed: `passed` only when all
//! of them say so.

pub mod args;
pub mod cargo;
pub mod confine;
pub mod go;
pub mod node;
pub mod report;
pub mod sink;
pub mod untrusted;
pub mod verdict;
pub mod vitest;

use std::ffi::{OsStr, OsString};
use std::io::Read as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::cancel::Cancel;
use crate::command::launch::{self, Launch};
use crate::command::{effective_timeout, find_command, Scratch};
use crate::error::{Code, Error, Reason, Result};
use crate::host_config::{self, debug_options, misconfigured, EnvNames};
use crate::json;
use crate::process::Prepare;
use crate::policy::Policy;
use crate::process::{End, Reaper, RunOptions};
use crate::root::Workspace;
use crate::sandbox::{self, Access, Grant, Report, SandboxOptions};

use report::{Cleaner, Failure, Summary};
use sink::{LineSink, Parser};
use untrusted::{ReportFile, ReportProblem};
use verdict::{Ending, Status};

/// Default outer deadline.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default largest outer deadline a call may ask for.
pub const DEFAULT_MAX_TIMEOUT: Duration = Duration::from_secs(1_800);

/// The test runners.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runner {
    Vitest,
    Node,
    Go,
    Cargo,
}

impl Runner {
    pub fn parse(s: &str) -> Option<Runner> {
        match s {
            "vitest" => Some(Runner::Vitest),
            "node" => Some(Runner::Node),
            "go" => Some(Runner::Go),
            "cargo" => Some(Runner::Cargo),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Runner::Vitest => "vitest",
            Runner::Node => "node",
            Runner::Go => "go",
            Runner::Cargo => "cargo",
        }
    }
}

/// What the model sends.
#[derive(Clone, Debug, PartialEq)]
pub struct TestsRequest {
    pub runner: String,
    pub args: Vec<String>,
    pub timeout_ms: Option<f64>,
}

/// What the host configures. Its JSON form (what the binding passes): `path`, `nodePath`,
/// `scratchDir`, `policy: { denyCommands?, allowCommands? }`, `sandbox` (its own object), `env: [{ name, value }]`, `timeoutMs`,
/// `maxTimeoutMs`, `cargoHome`, `rustupHome`, `goCache`, `goModCache`, `reaper`.
#[derive(Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestsOptions {
    /// The command policy run_command applies, applied to `[runner, ...args]` (so a host's
    /// deny- or allow-list covers the runners too).
    #[serde(default)]
    pub policy: Policy,
    /// The runners' PATH (where `go` and `cargo` are looked up).
    #[serde(deserialize_with = "json::os_string")]
    pub path: OsString,
    /// Variables passed from the host (never PATH, HOME or TMPDIR).
    #[serde(default, deserialize_with = "json::env")]
    pub env: Vec<(String, String)>,
    #[serde(rename = "timeoutMs", default = "default_timeout", deserialize_with = "json::millis")]
    pub timeout: Duration,
    #[serde(rename = "maxTimeoutMs", default = "default_max_timeout", deserialize_with = "json::millis")]
    pub max_timeout: Duration,
    /// The Node.js that runs `node --test` and vitest (the host's `process.execPath`).
    pub node_path: PathBuf,
    /// CARGO_HOME and RUSTUP_HOME for cargo (the host's, so the toolchain and the registry
    /// cache are found; the run is offline).
    pub cargo_home: Option<PathBuf>,
    pub rustup_home: Option<PathBuf>,
    /// GOCACHE (default: in the scratch directory, so empty on every call).
    pub go_cache: Option<PathBuf>,
    /// GOMODCACHE (default: in the scratch directory: only vendored modules and the standard
    /// library are available).
    pub go_mod_cache: Option<PathBuf>,
    #[serde(rename = "scratchDir")]
    pub scratch_parent: PathBuf,
    #[serde(default)]
    pub reaper: Reaper,
    #[serde(skip)]
    pub prepare: Option<Prepare>,
    /// OS confinement of the runner ([`crate::sandbox`], grants in [`confine`]); `auto` by
    /// default.
    pub sandbox: SandboxOptions,
    /// Staged runs ([`crate::stage`]).
    #[serde(default)]
    pub stage: crate::stage::StageOptions,
}

fn default_timeout() -> Duration {
    DEFAULT_TIMEOUT
}
fn default_max_timeout() -> Duration {
    DEFAULT_MAX_TIMEOUT
}

debug_options!(TestsOptions { path, env => EnvNames, timeout, max_timeout, node_path, scratch_parent, sandbox, stage });

impl TestsOptions {
    pub fn new(path: impl Into<OsString>, node_path: impl Into<PathBuf>) -> Self {
        TestsOptions {
            policy: Policy::default(),
            path: path.into(),
            env: Vec::new(),
            timeout: DEFAULT_TIMEOUT,
            max_timeout: DEFAULT_MAX_TIMEOUT,
            node_path: node_path.into(),
            cargo_home: None,
            rustup_home: None,
            go_cache: None,
            go_mod_cache: None,
            scratch_parent: std::env::temp_dir(),
            reaper: Reaper::Auto,
            prepare: None,
            sandbox: SandboxOptions::default(),
            stage: crate::stage::StageOptions::default(),
        }
    }

    pub fn validate(&self) -> std::result::Result<(), String> {
        host_config::check_timeouts(self.timeout, self.max_timeout)?;
        if !self.node_path.is_absolute() {
            return Err(format!("nodePath must be an absolute path, got {}", self.node_path.display()));
        }
        for (what, p) in [("cargoHome", &self.cargo_home), ("rustupHome", &self.rustup_home), ("goCache", &self.go_cache), ("goModCache", &self.go_mod_cache)] {
            if p.as_ref().is_some_and(|p| !p.is_absolute()) {
                return Err(format!("{what} must be an absolute path"));
            }
        }
        self.stage.validate()?;
        host_config::check_launch(&self.path, &self.sandbox, &self.env)
    }
}

/// The request after [`check_request`].
#[derive(Clone, Debug, PartialEq)]
pub struct CheckedTests {
    pub runner: Runner,
    pub timeout: Duration,
    pub note: Option<String>,
}

/// Checks the model's input without any effect.
pub fn check_request(req: &TestsRequest, opts: &TestsOptions) -> Result<CheckedTests> {
    let runner = Runner::parse(&req.runner).ok_or_else(|| {
        Error::invalid(Reason::InvalidArgumentsShape, "runner must be one of \"vitest\", \"node\", \"go\", \"cargo\"")
            .with_details(serde_json::json!({ "at": "arguments.runner" }))
    })?;
    args::check_args(runner, &req.args)?;
    let argv: Vec<String> = std::iter::once(runner.as_str().to_string()).chain(req.args.iter().cloned()).collect();
    crate::policy::check_command(&argv, &opts.policy)?;
    let (timeout, note) = effective_timeout(req.timeout_ms, opts.timeout, opts.max_timeout)?;
    Ok(CheckedTests { runner, timeout, note })
}

/// The report of a run that ended by itself (run_tests's result).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestsOutput {
    /// `passed`, `failed` or `incomplete` ([`verdict::decide`]).
    pub status: Status,
    pub report: String,
    #[serde(serialize_with = "crate::json::number")]
    pub passed: u64,
    #[serde(serialize_with = "crate::json::number")]
    pub failed: u64,
    #[serde(serialize_with = "crate::json::number")]
    pub skipped: u64,
    pub failures: Vec<Failure>,
    pub build_errors: Vec<String>,
    pub exit_code: Option<i32>,
    #[serde(serialize_with = "crate::json::number")]
    pub duration_ms: u64,
    #[serde(serialize_with = "crate::json::number")]
    pub timeout_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// What confined the runner.
    pub sandbox: Report,
    /// With `network: { allow }`: the connections through the proxy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<crate::proxy::Counts>,
    /// A staged run's change (contract §20): the workspace is unchanged until it is applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub staged: Option<crate::stage::StagedOutput>,
}

impl TestsOutput {
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }
}

/// What to start for a runner.
struct Plan {
    program: PathBuf,
    arg0: OsString,
    args: Vec<OsString>,
    /// What the runner may use in the scratch directory besides `home/` and `tmp/`.
    scratch_grants: Vec<Grant>,
    /// vitest's report file.
    report: Option<ReportFile>,
}

fn runner_failed(runner: Runner, message: String, exit_code: Option<i32>) -> Error {
    let hint = match runner {
        Runner::Go => "fix what go reports (go.mod, a missing dependency: the run is offline, only the standard library and vendored modules are available) or the package patterns in args, then run the tests again",
        Runner::Cargo => "fix what cargo reports (Cargo.toml, a dependency that is not in the local registry: the run is offline) or args, then run the tests again",
        Runner::Vitest => "fix what vitest reports (its configuration, a missing dependency: install it with run_command) or the filters in args, then run the tests again",
        Runner::Node => "fix what node reports (test file paths in args must exist), then run the tests again",
    };
    Error::new(Code::TestRunnerFailed, message)
        .with_hint(hint)
        .with_details(serde_json::json!({ "runner": runner.as_str(), "exitCode": exit_code }))
}

/// The first lines of a runner's own output: at most 20 lines and 2 KiB.
fn first_lines(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).take(20).collect();
    report::cut(&lines.join("\n"), 2 * 1024)
}

/// `node_modules/.bin/vitest` beneath the root: its canonical path, and whether it is a
/// JavaScript file to run with Node (otherwise an executable shim to run as it is).
fn find_vitest(ws: &Workspace) -> Result<(PathBuf, bool)> {
    let rel = "node_modules/.bin/vitest";
    let not_installed = || {
        Error::new(Code::CommandNotFound, "vitest is not installed in the workspace (node_modules/.bin/vitest is missing)")
            .with_hint("install it first (run_command [\"npm\", \"install\", \"--save-dev\", \"vitest\"] or the project's own install), or use runner \"node\" for node:test suites")
    };
    let file = match ws.dir().open(rel) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) || e.raw_os_error() == Some(libc::ENOTDIR) => return Err(not_installed()),
        Err(e) => return Err(Error::from_io(&e, rel)),
    };
    let mut file = file.into_std();
    let meta = file.metadata().map_err(|e| Error::from_io(&e, rel))?;
    if !meta.is_file() {
        return Err(not_installed());
    }
    #[cfg(target_os = "linux")]
    let canonical = {
        use std::os::fd::AsRawFd as _;
        std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).map_err(|e| Error::from_io(&e, rel))?
    };
    #[cfg(not(target_os = "linux"))]
    let canonical = std::fs::canonicalize(ws.canonical().join(rel)).map_err(|e| Error::from_io(&e, rel))?;
    if !canonical.starts_with(ws.canonical()) {
        return Err(Error::escape(rel));
    }
    let mut head = [0u8; 128];
    let n = file.read(&mut head).unwrap_or(0);
    let first = String::from_utf8_lossy(&head[..n]);
    let first = first.lines().next().unwrap_or("");
    let ext_js = canonical.extension().is_some_and(|e| e == "js" || e == "mjs" || e == "cjs");
    let js = ext_js || (first.starts_with("#!") && first.contains("node")) || !first.starts_with("#!");
    Ok((canonical, js))
}

fn os(s: impl AsRef<OsStr>) -> OsString {
    s.as_ref().to_os_string()
}

/// vitest's report file in the scratch directory.
pub const VITEST_REPORT: &str = "vitest-report.json";

/// The runner's command, decided before the scratch directory exists where possible.
fn plan(runner: Runner, ws: &Workspace, req: &TestsRequest, opts: &TestsOptions, inner_ms: u64, scratch: &Scratch, prefix: &str) -> Result<Plan> {
    let user: Vec<OsString> = req.args.iter().map(os).collect();
    Ok(match runner {
        Runner::Go => {
            let go_mod = ws.dir().metadata("go.mod");
            if !go_mod.map(|m| m.is_file()).unwrap_or(false) {
                return Err(runner_failed(runner, "go.mod not found in the workspace root".into(), None)
                    .with_hint("run_tests runs go test in the workspace root, which must hold the module's go.mod; create it with run_command [\"go\", \"mod\", \"init\", \"<module path>\"]"));
            }
            let program = find_command("go", &opts.path)?;
            let mut args = vec![os("test"), os("-json"), os("-count=1"), os(format!("-timeout={inner_ms}ms"))];
            args.extend(user);
            if !args::go_has_pattern(&req.args) {
                args.push(os("./..."));
            }
            let mut scratch_grants = vec![Grant::new(scratch.subdir("gopath")?, Access::ReadWrite)];
            if opts.go_cache.is_none() {
                scratch_grants.push(Grant::new(scratch.subdir("go-build")?, Access::ReadWrite));
            }
            Plan { program, arg0: os("go"), args, scratch_grants, report: None }
        }
        Runner::Cargo => {
            let program = find_command("cargo", &opts.path)?;
            let mut args = vec![os("test"), os("--no-fail-fast"), os("--manifest-path"), ws.canonical().join("Cargo.toml").into_os_string()];
            args.extend(user);
            Plan { program, arg0: os("cargo"), args, scratch_grants: Vec::new(), report: None }
        }
        Runner::Node => {
            let reporter = scratch.write_file("reporter.mjs", node::reporter_source(prefix).as_bytes())?;
            let mut args = vec![
                os("--test"),
                os(format!("--test-reporter={}", reporter.display())),
                os("--test-reporter-destination=stdout"),
                os(format!("--test-timeout={inner_ms}")),
            ];
            args.extend(user);
            // Read, never written: the runner loads it and cannot change it for a later file.
            let scratch_grants = vec![Grant::new(reporter, Access::ReadExecute)];
            Plan { program: opts.node_path.clone(), arg0: os("node"), args, scratch_grants, report: None }
        }
        Runner::Vitest => {
            let (script, js) = find_vitest(ws)?;
            let report = ReportFile::create(scratch.path(), VITEST_REPORT)?;
            let mut args = Vec::new();
            let program = if js {
                args.push(script.into_os_string());
                opts.node_path.clone()
            } else {
                script
            };
            args.extend([
                os("run"),
                os("--reporter=json"),
                os(format!("--outputFile={}", report.path().display())),
                os(format!("--testTimeout={inner_ms}")),
                os(format!("--hookTimeout={inner_ms}")),
            ]);
            args.extend(user);
            // The file itself, written in place: not its directory.
            let scratch_grants = vec![Grant::new(report.path(), Access::ReadWrite)];
            Plan { program, arg0: os(if js { "node" } else { "vitest" }), args, scratch_grants, report: Some(report) }
        }
    })
}

/// The runner's environment on top of run_command's.
fn environment(runner: Runner, opts: &TestsOptions, scratch: &Scratch) -> Result<Vec<(OsString, OsString)>> {
    let mut env = launch::base_environment(&opts.path, scratch, &opts.env);
    let mut set = |name: &str, value: OsString| {
        env.retain(|(n, _)| n.as_os_str() != name);
        env.push((name.into(), value));
    };
    set("NO_COLOR", os("1"));
    match runner {
        Runner::Go => {
            set("GOFLAGS", os(""));
            set("GOPROXY", os("off"));
            set("GOTOOLCHAIN", os("local"));
            set("GOWORK", os("off"));
            set("GOENV", os("off"));
            set("GOTELEMETRY", os("off"));
            let cache = match &opts.go_cache {
                Some(c) => c.clone(),
                None => scratch.subdir("go-build")?,
            };
            let gopath = scratch.subdir("gopath")?;
            set("GOCACHE", cache.into_os_string());
            set("GOMODCACHE", opts.go_mod_cache.clone().unwrap_or_else(|| gopath.join("pkg").join("mod")).into_os_string());
            set("GOPATH", gopath.into_os_string());
        }
        Runner::Cargo => {
            if let Some(home) = &opts.cargo_home {
                set("CARGO_HOME", home.clone().into_os_string());
            }
            if let Some(home) = &opts.rustup_home {
                set("RUSTUP_HOME", home.clone().into_os_string());
            }
            set("CARGO_NET_OFFLINE", os("true"));
            // A rust-toolchain file naming a toolchain that is not installed must not download it.
            set("RUSTUP_AUTO_INSTALL", os("0"));
            set("CARGO_TERM_COLOR", os("never"));
            set("CARGO_TERM_PROGRESS_WHEN", os("never"));
        }
        Runner::Node | Runner::Vitest => {}
    }
    Ok(env)
}

/// The parser of a runner's merged output.
enum AnyParser {
    Go(go::GoParser),
    Cargo(cargo::CargoParser),
    Node(node::NodeParser),
    Vitest(vitest::VitestOutput),
}

impl Parser for AnyParser {
    fn line(&mut self, line: &str) {
        match self {
            AnyParser::Go(p) => p.line(line),
            AnyParser::Cargo(p) => p.line(line),
            AnyParser::Node(p) => p.line(line),
            AnyParser::Vitest(p) => p.line(line),
        }
    }
    fn finish(&mut self, complete: bool) -> Summary {
        match self {
            AnyParser::Go(p) => p.finish(complete),
            AnyParser::Cargo(p) => p.finish(complete),
            AnyParser::Node(p) => p.finish(complete),
            AnyParser::Vitest(p) => p.finish(complete),
        }
    }
    fn other(&self) -> String {
        match self {
            AnyParser::Go(p) => p.other(),
            AnyParser::Cargo(p) => p.other(),
            AnyParser::Node(p) => p.other(),
            AnyParser::Vitest(p) => p.other(),
        }
    }
    fn counts(&self) -> Option<(u64, u64, u64)> {
        match self {
            AnyParser::Go(p) => p.counts(),
            AnyParser::Cargo(p) => p.counts(),
            AnyParser::Node(p) => p.counts(),
            AnyParser::Vitest(p) => p.counts(),
        }
    }
    fn is_event(&self, line: &str) -> bool {
        match self {
            AnyParser::Go(p) => p.is_event(line),
            AnyParser::Cargo(p) => p.is_event(line),
            AnyParser::Node(p) => p.is_event(line),
            AnyParser::Vitest(p) => p.is_event(line),
        }
    }
}

fn random_prefix() -> Result<String> {
    Ok(crate::temp_name::random_name("workcell-", 8))
}

/// vitest's summary from its report file: read on a blocking thread with the checks of
/// [`untrusted`], parsed into typed structures. `None` when the runner wrote nothing (it could
/// not start); an unusable file is a summary with an anomaly (never `passed`).
async fn vitest_summary(report: ReportFile, cleaner: Cleaner, inner_ms: u64) -> Result<Option<Summary>> {
    untrusted::read_on_blocking_thread(move || match report.read(vitest::MAX_REPORT_FILE) {
        Ok(bytes) => Some(vitest::parse_report(&bytes, &cleaner, inner_ms)),
        Err(ReportProblem::Missing | ReportProblem::Empty) => None,
        Err(problem) => {
            let mut s = Summary { structured: true, ..Summary::default() };
            s.push_anomaly(format!("{}; the counts are unknown", problem.describe("vitest's report file")));
            Some(s)
        }
    })
    .await
}

/// Runs the tests. A run that ended by itself (tests passing or failing, build errors) is `Ok`;
/// the outer deadline is `TESTS_TIMED_OUT`; a runner that could not start `TEST_RUNNER_FAILED`
/// (or `COMMAND_NOT_FOUND` when it is not installed); cancellation the cancelled error.
pub async fn run_tests(ws: &Workspace, req: &TestsRequest, opts: &TestsOptions, cancel: &Cancel) -> Result<TestsOutput> {
    cancel.check()?;
    opts.validate().map_err(misconfigured)?;
    let checked = check_request(req, opts)?;
    let runner = checked.runner;
    ws.check()?;
    let scratch_parent = crate::command::scratch::check_parent(&opts.scratch_parent, ws.canonical()).map_err(misconfigured)?;
    let workdir = launch::open_workdir(ws, None)?;
    let outer_ms = checked.timeout.as_millis() as u64;
    let inner_ms = (outer_ms * 3 / 4).max(1);
    let prefix = random_prefix()?;
    let staged = opts.stage.wanted()?;
    let sandbox_opts = SandboxOptions { stage: staged, ..opts.sandbox.clone() };
    // "required" refuses here, before the scratch directory exists.
    sandbox::require(&sandbox_opts)?;

    let scratch = Scratch::create(&scratch_parent)?;
    let mut plan = plan(runner, ws, req, opts, inner_ms, &scratch, &prefix)?;
    let env = environment(runner, opts, &scratch)?;
    let confinement = sandbox::prepare(&sandbox_opts, ws, &confine::runner_grants(runner, &plan.program, opts, &scratch, &plan.scratch_grants))?;
    cancel.check()?;
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let (confinement, stage) = if staged {
        let mut run = crate::stage::Run::begin(ws, "", &opts.stage)?;
        run.start(ws);
        (confinement.with_stage(Some(run.layer())), Some(run))
    } else {
        (confinement, None)
    };
    let cleaner = Cleaner::new(ws.canonical(), scratch.path());
    let parser = match runner {
        Runner::Go => AnyParser::Go(go::GoParser::new(cleaner.clone())),
        Runner::Cargo => AnyParser::Cargo(cargo::CargoParser::new(cleaner.clone())),
        Runner::Node => AnyParser::Node(node::NodeParser::new(cleaner.clone(), prefix)),
        Runner::Vitest => AnyParser::Vitest(vitest::VitestOutput::new(cleaner.clone())),
    };
    let report_file = plan.report.take();
    let launch = Launch { program: plan.program, arg0: plan.arg0, args: plan.args, env };
    let mut spec = launch::spawn_spec(launch, &workdir);
    let net = confinement.network();
    let confined = confinement.apply(&mut spec);
    let run = RunOptions { timeout: Some(checked.timeout), reaper: opts.reaper, ..RunOptions::default() };
    // The runner's output reaches a watched progress through the parser (counts, and the lines
    // that are not its events), not raw.
    let sink = LineSink::new(parser).watched(cancel.progress(), cleaner.clone());
    cancel.progress().message(|| format!("{}: running", runner.as_str()));
    let unwatched = cancel.with_progress(crate::progress::Progress::default());
    let finished = launch::start(spec, opts.prepare.as_ref(), ws.canonical(), &run, &unwatched, sink).await;
    drop(workdir);
    #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
    let finished = finished.map_err(|e| match &stage {
        Some(run) => run.launch_error(e),
        None => e,
    });
    let finished = finished?;
    let mut sink = finished.stdout;
    sink.flush();
    let status = finished.status.unwrap_or_default();
    let duration_ms = finished.duration.as_millis() as u64;

    match finished.end {
        End::Cancelled => Err(Error::cancelled()),
        End::TimedOut => {
            let summary = sink.parser.finish(false);
            let verdict = verdict::decide(&Ending::Deadline(outer_ms), &summary);
            let report = report::render(runner.as_str(), &summary, &verdict, None);
            // The runner's own lines (not the structured events), as the partial output.
            let own = sink.parser.other();
            let max = opts.max_timeout.as_millis();
            Err(Error::new(Code::TestsTimedOut, format!("the {} run did not finish within {outer_ms} ms and was stopped with everything it started", runner.as_str()))
                .with_hint(format!(
                    "run fewer tests (a package, file or name filter in args), fix the test that hangs (details.running names what was still running when known), or pass a larger timeoutMs (at most {max}); the runner's own per-test timeout was {inner_ms} ms"
                ))
                .with_details(serde_json::json!({
                    "status": verdict.status.as_str(),
                    "report": report,
                    "passed": summary.passed,
                    "failed": summary.failed,
                    "skipped": summary.skipped,
                    "running": summary.running,
                    "output": report::cut(&own, 2 * 1024),
                    "timeoutMs": outer_ms,
                    "durationMs": duration_ms,
                    "sandbox": confined.to_json(),
                    "network": net.as_ref().map(|n| n.counts().to_json()),
                })))
        }
        End::Exited => {
            // A runner killed by a signal did not finish: what it had not reported is unknown,
            // not failed.
            let mut summary = sink.parser.finish(status.code.is_some());
            if let Some(report) = report_file {
                if let Some(s) = vitest_summary(report, cleaner.clone(), inner_ms).await? {
                    summary = s;
                }
            }
            drop(scratch);
            if !summary.structured && status.code != Some(0) {
                let mut message = first_lines(&sink.parser.other());
                if message.is_empty() {
                    message = first_lines(&cleaner.clean(&sink.raw.clone().finish().text));
                }
                if message.is_empty() {
                    message = match (status.code, status.signal_name()) {
                        (Some(c), _) => format!("{} exited with code {c} without any output", runner.as_str()),
                        (None, Some(sig)) => format!("{} was killed by {sig} without any output", runner.as_str()),
                        _ => format!("{} ended without any output", runner.as_str()),
                    };
                }
                let mut err = runner_failed(runner, message, status.code);
                if let Some(details) = err.details.as_mut() {
                    details["sandbox"] = confined.to_json();
                }
                if confined.filesystem == sandbox::Filesystem::Confined {
                    let hint = format!(
                        "{} If its lines say a path outside the workspace was denied (EACCES, permission denied), the sandbox refused it: tell the user, who can grant it to this tool (readPaths).",
                        err.hint.as_deref().unwrap_or_default()
                    );
                    err = err.with_hint(hint);
                }
                return Err(err);
            }
            let verdict = verdict::decide(&Ending::from_status(status.code, status.signal_name()), &summary);
            let report = report::render(runner.as_str(), &summary, &verdict, checked.note.as_deref());
            #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
            let staged = match stage {
                Some(run) => Some(run.finish(ws, cancel)?),
                None => None,
            };
            #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
            let staged = None;
            Ok(TestsOutput {
                status: verdict.status,
                report,
                passed: summary.passed,
                failed: summary.failed,
                skipped: summary.skipped,
                failures: summary.failures,
                build_errors: summary.build_errors,
                exit_code: status.code,
                duration_ms,
                timeout_ms: outer_ms,
                note: checked.note,
                sandbox: confined,
                network: net.map(|n| n.counts()),
                staged,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runners_and_timeouts_are_checked() {
        let opts = TestsOptions::new("/usr/bin", "/usr/bin/node");
        let req = |runner: &str, args: &[&str], t: Option<f64>| TestsRequest {
            runner: runner.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            timeout_ms: t,
        };
        assert_eq!(check_request(&req("jest", &[], None), &opts).unwrap_err().reason(), Some("INVALID_ARGUMENTS_SHAPE"));
        let c = check_request(&req("go", &["./..."], None), &opts).unwrap();
        assert_eq!((c.runner, c.timeout, c.note), (Runner::Go, DEFAULT_TIMEOUT, None));
        let c = check_request(&req("node", &[], Some(1e12)), &opts).unwrap();
        assert_eq!(c.timeout, DEFAULT_MAX_TIMEOUT);
        assert!(c.note.unwrap().contains("clamped"));
        assert_eq!(check_request(&req("cargo", &["--", "--nocapture"], None), &opts).unwrap_err().reason(), Some("COMMAND_REFUSED"));
        // The host's command policy covers the runners.
        let mut only_node = TestsOptions::new("/usr/bin", "/usr/bin/node");
        only_node.policy = Policy::default().with_allow(["node"]);
        assert!(check_request(&req("node", &[], None), &only_node).is_ok());
        let e = check_request(&req("go", &[], None), &only_node).unwrap_err();
        assert_eq!(e.reason(), Some("COMMAND_REFUSED"));
        assert_eq!(e.details.unwrap()["reason"], "not_allow_listed");
        let mut no_cargo = TestsOptions::new("/usr/bin", "/usr/bin/node");
        no_cargo.policy = Policy::default().with_deny(["cargo"]);
        assert_eq!(check_request(&req("cargo", &[], None), &no_cargo).unwrap_err().reason(), Some("COMMAND_REFUSED"));
    }
}
