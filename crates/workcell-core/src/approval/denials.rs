//! Sandbox-denial hints: when a confined process fails and its output shows that the sandbox
//! said no, the result tells the model what was refused and the next step.
//!
//! Recognized (case-insensitively, line by line, over at most [`MAX_SCAN_BYTES`] of output:
//! its start and its end):
//! - file system: `permission denied`, `operation not permitted`, `read-only file system`,
//!   `EACCES`, `EPERM`, `EROFS` -> kind `"write"`, or `"read"` when the line says it was reading
//!   (`read`, `scandir`, `stat`, `cat:`, `ls:`, `opendir` without any writing word);
//! - network: `could not resolve host`, `ECONNREFUSED`, `network is unreachable`,
//!   `ENETUNREACH`, `getaddrinfo`, `EAI_AGAIN`, `name or service not known`, and a `connect`,
//!   `listen` or `bind` refused with `EACCES` or `EPERM` (how Landlock's TCP rules show) -> kind
//!   `"network"`. A refused `listen`/`bind` names its port in the note: a server needs
//!   start_process with `ports` (when the host allows that port), never a grant of files.
//!
//! A file-system denial counts only while the call's file system was confined, a network one
//! only while its network was blocked. Each denial names the absolute paths outside the
//! workspace its line mentions (at most [`MAX_DENIALS`], each at most [`MAX_DENIAL_PATH`]
//! bytes). The note's first suggestion is `grants` naming them (where the host lets the model
//! ask), else working inside the workspace; leaving the sandbox is the last one, never first.
//! A command that exited 0 never gets a note.

use std::path::Path;

/// Output scanned: the first and the last half of this many bytes.
pub const MAX_SCAN_BYTES: usize = 64 * 1024;
/// Most denials reported, and the longest path kept in one.
pub const MAX_DENIALS: usize = 8;
pub const MAX_DENIAL_PATH: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[schemars(rename = "SandboxDenial")]
pub struct Denial {
    /// `"write"`, `"read"` or `"network"`.
    #[schemars(extend("enum" = ["write", "read", "network"]))]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DenialHint {
    pub denials: Vec<Denial>,
    pub note: String,
}

/// What confined the call (from its sandbox report) and what the host allows.
#[derive(Clone, Debug, Default)]
pub struct SandboxState {
    pub filesystem_confined: bool,
    pub network_blocked: bool,
    /// The host lets the model ask for grants (`approvalFor.grant: "ask"`).
    pub grants: bool,
    /// The TCP ports the host lets a process session listen on (`ports` of start_process).
    pub ports: Vec<u16>,
    /// Node.js's permission model checked the call's file access (node_process): its refusals
    /// count even where Landlock does not confine.
    pub node_permission: bool,
}

const FS_MARKERS: &[&str] = &[
    "permission denied",
    "operation not permitted",
    "read-only file system",
    "eacces",
    "eperm",
    "erofs",
    // Node.js's permission model (node_process), which refuses before the kernel does.
    "err_access_denied",
    "access to this api has been restricted",
];
/// The markers of a refusal by Node.js's permission model (not by the kernel).
const NODE_MARKERS: &[&str] = &["err_access_denied", "access to this api has been restricted"];
/// Lines after a marker that may still belong to its error (Node prints the error's fields
/// after the stack: `permission: 'FileSystemWrite'`, `resource: '/etc/x'`, `path: '/etc/x'`).
const LOOKAHEAD_LINES: usize = 16;
const NET_MARKERS: &[&str] = &[
    "could not resolve host",
    "econnrefused",
    "network is unreachable",
    "enetunreach",
    "getaddrinfo",
    "eai_again",
    "name or service not known",
    "temporary failure in name resolution",
];
const READ_WORDS: &[&str] = &["read", "scandir", "stat", "cat:", "ls:", "opendir"];
const WRITE_WORDS: &[&str] = &[
    "write", "mkdir", "create", "touch", "rename", "unlink", "rmdir", "remove", "cp:", "mv:", "rm:", "ln:", "read-only", "erofs", "chmod",
    "symlink", "copyfile", "utime", "open",
];

/// Whether `line` has `word` with no letter, digit or `_` right before or after it.
fn has_word(line: &str, word: &str) -> bool {
    let b = line.as_bytes();
    let alnum = |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    line.match_indices(word).any(|(i, _)| !alnum(if i == 0 { None } else { b.get(i - 1) }) && !alnum(b.get(i + word.len())))
}

fn refused(line: &str) -> bool {
    line.contains("eacces") || line.contains("eperm") || line.contains("permission denied") || line.contains("operation not permitted")
}

fn is_network(line: &str) -> bool {
    NET_MARKERS.iter().any(|m| line.contains(m)) || (line.contains("connect") && refused(line)) || listen_refused(line)
}

/// A refused `listen` or `bind` (Node: `listen EACCES: permission denied 127.0.0.1:5173`;
/// Python: `PermissionError: [Errno 13] ... bind`; Go: `listen tcp :8080: bind: permission denied`).
fn listen_refused(line: &str) -> bool {
    (has_word(line, "listen") || has_word(line, "bind")) && refused(line)
}

/// The port a refused `listen`/`bind` line names: the digits after the last `:` of an
/// address (`127.0.0.1:5173`, `[::1]:5173`, `:8080`).
fn listen_port(line: &str) -> Option<u16> {
    let b = line.as_bytes();
    let mut found = None;
    let mut i = 0;
    while i < b.len() {
        if b[i] == b':' {
            let digits = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
            let after = b.get(i + 1 + digits).copied();
            if digits > 0 && digits <= 5 && after != Some(b'.') && !after.is_some_and(|c| c.is_ascii_alphanumeric()) {
                if let Ok(p) = line[i + 1..i + 1 + digits].parse::<u16>() {
                    if p > 0 {
                        found = Some(p);
                    }
                }
            }
            i += 1 + digits;
        } else {
            i += 1;
        }
    }
    found
}

fn fs_kind(line: &str) -> Option<&'static str> {
    if !FS_MARKERS.iter().any(|m| line.contains(m)) {
        return None;
    }
    // "open" alone does not say which way; a write is the safer reading (writePaths also reads).
    let writes = WRITE_WORDS.iter().any(|w| *w != "open" && line.contains(w));
    let reads = READ_WORDS.iter().any(|w| line.contains(w));
    Some(if reads && !writes { "read" } else { "write" })
}

/// Absolute paths a line names (quoted or bare), outside `root`.
fn paths_in(line: &str, root: &Path) -> Vec<String> {
    let root = root.to_string_lossy();
    let root = root.trim_end_matches('/');
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i] == b'/' && (i == 0 || matches!(bytes[i - 1], b' ' | b'\'' | b'"' | b'`' | b'(' | b'=' | b':' | b'\t' | b'[' | b','));
        if !starts {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len() && !matches!(bytes[j], b' ' | b'\'' | b'"' | b'`' | b')' | b',' | b'\t' | b']' | b'\r') {
            j += 1;
        }
        let mut p = &line[i..j];
        p = p.trim_end_matches([':', '.', ';']);
        if p.len() > 1 && p != root && !p.starts_with(&format!("{root}/")) && !p.starts_with("//") && !p.starts_with("/dev/null") {
            let mut s = p.to_string();
            if s.len() > MAX_DENIAL_PATH {
                let mut cut = MAX_DENIAL_PATH;
                while !s.is_char_boundary(cut) {
                    cut -= 1;
                }
                s.truncate(cut);
            }
            out.push(s);
        }
        i = j.max(i + 1);
    }
    out
}

/// The bounded part of `output` that is scanned: all of it when small, else its start and end.
fn scanned(output: &str) -> (&str, &str) {
    if output.len() <= MAX_SCAN_BYTES {
        return (output, "");
    }
    let half = MAX_SCAN_BYTES / 2;
    let mut a = half;
    while !output.is_char_boundary(a) {
        a -= 1;
    }
    let mut b = output.len() - half;
    while !output.is_char_boundary(b) {
        b += 1;
    }
    (&output[..a], &output[b..])
}

/// The denials the failed output of a confined process shows, with the note; `None` for a
/// command that succeeded, an unconfined one, or output without a denial.
pub fn denial_hint(outputs: &[&str], exit_ok: bool, root: &Path, state: SandboxState) -> Option<DenialHint> {
    if exit_ok || !(state.filesystem_confined || state.network_blocked || state.node_permission) {
        return None;
    }
    // Reads Node's permission model refused, by path: the note says whether run_command (not
    // under that model) may read them.
    let mut node_reads: Vec<String> = Vec::new();
    let mut denials: Vec<Denial> = Vec::new();
    let mut listens: Vec<u16> = Vec::new();
    let mut listen_unknown = false;
    let push = |d: Denial, denials: &mut Vec<Denial>| {
        if denials.len() < MAX_DENIALS && !denials.contains(&d) {
            denials.push(d);
        }
    };
    for output in outputs {
        let (head, tail) = scanned(output);
        for part in [head, tail] {
            let lines: Vec<&str> = part.lines().collect();
            for (i, raw) in lines.iter().enumerate() {
                let line = raw.to_ascii_lowercase();
                let mut kind = if is_network(&line) {
                    if !state.network_blocked {
                        continue;
                    }
                    "network"
                } else if let Some(k) = fs_kind(&line) {
                    let by_node = state.node_permission && NODE_MARKERS.iter().any(|m| line.contains(m));
                    if !state.filesystem_confined && !by_node {
                        continue;
                    }
                    k
                } else {
                    continue;
                };
                if kind == "network" && listen_refused(&line) {
                    match listen_port(&line) {
                        Some(p) if !listens.contains(&p) && listens.len() < MAX_DENIALS => listens.push(p),
                        Some(_) => {}
                        None => listen_unknown = true,
                    }
                }
                let mut paths = if kind == "network" { Vec::new() } else { paths_in(raw, root) };
                if kind != "network" && paths.is_empty() {
                    // The error's own fields, a few lines on (only `resource:`, `path:` and
                    // `permission:` lines: a stack trace's file names are not what was refused).
                    for next in lines.iter().skip(i + 1).take(LOOKAHEAD_LINES) {
                        let t = next.trim_start().to_ascii_lowercase();
                        if t.starts_with("resource:") || t.starts_with("path:") || t.starts_with("dest:") {
                            paths.extend(paths_in(next, root));
                        } else if t.starts_with("permission:") {
                            kind = if t.contains("read") && !t.contains("write") { "read" } else { "write" };
                        }
                    }
                }
                if paths.is_empty() {
                    if !denials.iter().any(|d| d.kind == kind) {
                        push(Denial { kind, path: None }, &mut denials);
                    }
                } else {
                    // A path-less file-system entry is replaced by the named ones.
                    denials.retain(|d| !(d.kind != "network" && d.path.is_none()));
                    if kind == "read" && state.node_permission && NODE_MARKERS.iter().any(|m| line.contains(m)) {
                        for p in &paths {
                            if node_reads.len() < MAX_DENIALS && !node_reads.contains(p) {
                                node_reads.push(p.clone());
                            }
                        }
                    }
                    for p in paths {
                        push(Denial { kind, path: Some(p) }, &mut denials);
                    }
                }
            }
        }
    }
    if denials.is_empty() {
        return None;
    }
    let only_listening = (!listens.is_empty() || listen_unknown) && denials.iter().all(|d| d.kind == "network") && !network_beyond_listening(outputs);
    let mut note = if only_listening { listen_note(&listens, &state.ports) } else { note(&denials, state.grants) };
    if !node_reads.is_empty() {
        note = format!("{} {note}", node_read_note(&node_reads, state.filesystem_confined));
    }
    Some(DenialHint { note, denials })
}

/// Names the reads Node.js's permission model refused and says, for each, whether run_command
/// may read it: it runs under Landlock alone, which lets every confined process read the system
/// directories and the harmless `/proc` and `/sys` entries (and, without Landlock, anything).
fn node_read_note(paths: &[String], landlock: bool) -> String {
    let system = if landlock { crate::sandbox::paths::system_read_paths() } else { Vec::new() };
    let (open, closed): (Vec<&String>, Vec<&String>) = paths.iter().partition(|p| !landlock || system.iter().any(|s| Path::new(p.as_str()).starts_with(s)));
    let list = |v: &[&String]| v.iter().map(|p| format!("{p:?}")).collect::<Vec<_>>().join(", ");
    let mut s = format!("Node.js's permission model (node_process only) refused reading {}.", list(&paths.iter().collect::<Vec<_>>()));
    if !open.is_empty() {
        s.push_str(&format!(" run_command may read {} (it is not under that model): run the script there with [\"node\", \"<file>\"].", list(&open)));
    }
    if !closed.is_empty() {
        s.push_str(&format!(" run_command may not read {} either (its sandbox refuses it too).", list(&closed)));
    }
    s
}

/// Whether the output shows a network refusal other than a refused `listen`/`bind` (a lookup,
/// a connection), which grants of the network would help with.
fn network_beyond_listening(outputs: &[&str]) -> bool {
    outputs.iter().any(|o| {
        let (head, tail) = scanned(o);
        [head, tail].iter().any(|part| {
            part.lines().any(|l| {
                let l = l.to_ascii_lowercase();
                is_network(&l) && !listen_refused(&l)
            })
        })
    })
}

/// The note for a process refused to listen: the network grant does not help (a confined
/// process never listens); a process session with `ports` does, where the host allows them.
fn listen_note(listens: &[u16], allowed: &[u16]) -> String {
    let named = listens.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
    let mut s = if named.is_empty() {
        "The sandbox refused listening on a port (a network denial: a confined process may listen only on ports its process session was started with). ".to_string()
    } else {
        format!("The sandbox refused listening on port {named} (a network denial: a confined process may listen only on ports its process session was started with). ")
    };
    if allowed.is_empty() {
        s.push_str("Ports are not available here: the host allows no listening ports, so run what needs a server another way (a test that does not listen, or ask the user to start the server).");
        return s;
    }
    let fits: Vec<u16> = listens.iter().copied().filter(|p| allowed.contains(p)).collect();
    let allowed_s = allowed.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
    if !fits.is_empty() && fits.len() == listens.len() {
        let list = fits.iter().map(u16::to_string).collect::<Vec<_>>().join(", ");
        s.push_str(&format!("Next step: start it with start_process and ports: [{list}]; then the tool set's other commands can connect to it."));
    } else {
        let example = listens.first().map(|_| allowed[0]).unwrap_or(allowed[0]);
        s.push_str(&format!(
            "Next step: make it listen on a port the host allows ({allowed_s}) and start it with start_process and ports: [{example}]."
        ));
    }
    s
}

fn note(denials: &[Denial], grants: bool) -> String {
    let paths = |kind: &str| -> Vec<String> {
        denials.iter().filter(|d| d.kind == kind).filter_map(|d| d.path.as_ref()).map(|p| format!("{p:?}")).collect()
    };
    let (w, r) = (paths("write"), paths("read"));
    let network = denials.iter().any(|d| d.kind == "network");
    let files = denials.iter().any(|d| d.kind != "network");
    let mut refused = Vec::new();
    if files {
        let named: Vec<String> = w.iter().chain(r.iter()).cloned().collect();
        refused.push(if named.is_empty() { "file access outside the workspace".to_string() } else { format!("access to {}", named.join(", ")) });
    }
    if network {
        refused.push("the network".to_string());
    }
    let mut s = format!("The sandbox refused {}. ", refused.join(" and "));
    if grants {
        let mut g = Vec::new();
        if !w.is_empty() {
            g.push(format!("writePaths: [{}]", w.join(", ")));
        }
        if !r.is_empty() {
            g.push(format!("readPaths: [{}]", r.join(", ")));
        }
        if files && w.is_empty() && r.is_empty() {
            g.push("writePaths: [\"/absolute/dir\"]".to_string());
        }
        if network {
            g.push("network: true".to_string());
        }
        s.push_str(&format!(
            "Next step: if the command needs this, call it again with grants: {{ {} }}; the user is asked to approve them. Otherwise work inside the workspace (put files, caches and temporary directories under it). ",
            g.join(", ")
        ));
    } else {
        s.push_str("Next step: work inside the workspace (put files, caches and temporary directories under it) or avoid what needs this; the host does not let calls ask for more. ");
    }
    s.push_str(if grants {
        "Only as a last resort, if nothing else can work, ask with grants: { sandbox: \"off\" }."
    } else {
        "Only as a last resort, ask the user to run it outside the sandbox."
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: &str = "/work/ws";
    fn st(grants: bool) -> SandboxState {
        SandboxState { filesystem_confined: true, network_blocked: true, grants, ports: Vec::new(), node_permission: true }
    }
    fn hint(out: &str) -> Option<DenialHint> {
        denial_hint(&[out], false, Path::new(ROOT), st(true))
    }

    #[test]
    fn each_marker_gives_its_kind() {
        let cases: &[(&str, &str)] = &[
            ("touch: cannot touch '/etc/x': Permission denied", "write"),
            ("mkdir: cannot create directory '/opt/y': Operation not permitted", "write"),
            ("sh: 1: cannot create /usr/z: Read-only file system", "write"),
            ("Error: EACCES: permission denied, open '/root/.npmrc'", "write"),
            ("Error: EPERM: operation not permitted, mkdir '/srv/cache'", "write"),
            ("cat: /root/secret: Permission denied", "read"),
            ("Error: EACCES: permission denied, scandir '/root'", "read"),
            ("curl: (6) Could not resolve host: example.com", "network"),
            ("Error: connect ECONNREFUSED 127.0.0.1:80", "network"),
            ("ping: connect: Network is unreachable", "network"),
            ("Error: getaddrinfo EAI_AGAIN registry.npmjs.org", "network"),
            ("Error: connect EACCES 93.184.216.34:443", "network"),
            ("Error: connect EPERM 10.0.0.1:22", "network"),
            ("Error: Access to this API has been restricted", "write"),
            ("  code: 'ERR_ACCESS_DENIED',", "write"),
        ];
        for (line, kind) in cases {
            let h = hint(line).unwrap_or_else(|| panic!("no hint for {line}"));
            assert_eq!(h.denials[0].kind, *kind, "{line}");
            assert!(!h.note.starts_with("Only as a last resort"), "{}", h.note);
            let first_off = h.note.find("sandbox: \"off\"").unwrap();
            assert!(h.note.find("grants: {").unwrap() < first_off, "{}", h.note);
        }
        assert_eq!(hint("touch: cannot touch '/etc/x': Permission denied").unwrap().denials[0].path.as_deref(), Some("/etc/x"));
    }

    #[test]
    fn node_permission_errors_name_their_resource_not_the_stack() {
        let out = "Error: Access to this API has been restricted\n    at Object.readFileSync (node:fs:441:20)\n    at /usr/lib/node_modules/x/index.js:1:1 {\n  code: 'ERR_ACCESS_DENIED',\n  permission: 'FileSystemRead',\n  resource: '/etc/shadow'\n}\n";
        let h = hint(out).unwrap();
        assert_eq!(h.denials, vec![Denial { kind: "read", path: Some("/etc/shadow".into()) }]);
        assert!(h.note.contains("readPaths: [\"/etc/shadow\"]"), "{}", h.note);
    }

    #[test]
    fn a_node_permission_read_refusal_says_whether_run_command_may_read_the_path() {
        let refused = |path: &str| format!("Error: Access to this API has been restricted\n  code: 'ERR_ACCESS_DENIED',\n  permission: 'FileSystemRead',\n  resource: '{path}'\n");
        // Under Landlock: a system path is readable by run_command; a home directory is not.
        let h = hint(&refused("/etc/ssl/openssl.cnf")).unwrap();
        assert!(h.note.starts_with("Node.js's permission model (node_process only) refused reading \"/etc/ssl/openssl.cnf\". run_command may read \"/etc/ssl/openssl.cnf\""), "{}", h.note);
        let h = hint(&refused("/home/someone/.npmrc")).unwrap();
        assert!(h.note.contains("run_command may not read \"/home/someone/.npmrc\" either"), "{}", h.note);
        // Without Landlock, Node's model is the only layer: its refusal is still reported, and
        // run_command (unconfined files) may read the path.
        let no_landlock = SandboxState { filesystem_confined: false, network_blocked: false, grants: false, ports: Vec::new(), node_permission: true };
        let h = denial_hint(&[&refused("/home/someone/.npmrc")], false, Path::new(ROOT), no_landlock).unwrap();
        assert_eq!(h.denials, vec![Denial { kind: "read", path: Some("/home/someone/.npmrc".into()) }]);
        assert!(h.note.contains("run_command may read \"/home/someone/.npmrc\""), "{}", h.note);
        // A kernel refusal is not Node's: no such sentence.
        let h = hint("cat: /home/someone/.npmrc: Permission denied").unwrap();
        assert!(!h.note.contains("Node.js's permission model"), "{}", h.note);
    }

    #[test]
    fn paths_inside_the_workspace_are_not_named_and_output_is_bounded() {
        let h = hint("EACCES: permission denied, open '/work/ws/a.txt'").unwrap();
        assert_eq!(h.denials, vec![Denial { kind: "write", path: None }]);
        let many: String = (0..100).map(|i| format!("touch: cannot touch '/etc/f{i}': Permission denied\n")).collect();
        assert_eq!(hint(&many).unwrap().denials.len(), MAX_DENIALS);
        let long = format!("touch: cannot touch '/{}': Permission denied", "a".repeat(5000));
        assert!(hint(&long).unwrap().denials[0].path.as_ref().unwrap().len() <= MAX_DENIAL_PATH);
        // A marker in the unscanned middle of a huge output is not looked at.
        let huge = format!("{}\nPermission denied '/etc/x'\n{}", "x".repeat(MAX_SCAN_BYTES), "y".repeat(MAX_SCAN_BYTES));
        assert!(hint(&huge).is_none());
    }

    #[test]
    fn success_unconfined_or_clean_output_gets_nothing() {
        let line = "touch: cannot touch '/etc/x': Permission denied";
        assert!(denial_hint(&[line], true, Path::new(ROOT), st(true)).is_none());
        let open = SandboxState { filesystem_confined: false, network_blocked: false, grants: true, ports: Vec::new(), node_permission: false };
        assert!(denial_hint(&[line], false, Path::new(ROOT), open).is_none());
        let net_open = SandboxState { filesystem_confined: true, network_blocked: false, grants: true, ports: Vec::new(), node_permission: false };
        assert!(denial_hint(&["curl: (6) Could not resolve host: x"], false, Path::new(ROOT), net_open.clone()).is_none());
        assert!(hint("error: test failed, expected 1 got 2").is_none());
    }

    #[test]
    fn without_grants_the_first_step_is_the_workspace() {
        let h = denial_hint(&["touch: cannot touch '/etc/x': Permission denied"], false, Path::new(ROOT), st(false)).unwrap();
        assert!(h.note.contains("Next step: work inside the workspace"), "{}", h.note);
        assert!(!h.note.contains("grants"), "{}", h.note);
        assert!(h.note.ends_with("ask the user to run it outside the sandbox."));
    }

    /// A dev server refused `listen` was reported as a file write outside the workspace, and the
    /// note sent the model to grants of files.
    #[test]
    fn a_refused_listen_is_a_network_denial_naming_its_port() {
        let lines = [
            "Error: listen EACCES: permission denied 127.0.0.1:5173",
            "Error: listen EPERM: operation not permitted 0.0.0.0:3000",
            "listen tcp :8080: bind: permission denied",
            "PermissionError: [Errno 13] Permission denied (bind to [::1]:4000)",
        ];
        let ports = [5173u16, 3000, 8080, 4000];
        for (line, port) in lines.iter().zip(ports) {
            let allowed = SandboxState { ports: vec![port], ..st(true) };
            let h = denial_hint(&[line], false, Path::new(ROOT), allowed).unwrap_or_else(|| panic!("no hint for {line}"));
            assert_eq!(h.denials, vec![Denial { kind: "network", path: None }], "{line}");
            assert!(h.note.contains(&format!("port {port}")), "{}", h.note);
            assert!(h.note.contains(&format!("start_process and ports: [{port}]")), "{}", h.note);
            assert!(!h.note.contains("outside the workspace") && !h.note.contains("writePaths"), "{}", h.note);
            // No ports allowed: says so, suggests no grant.
            let h = denial_hint(&[line], false, Path::new(ROOT), st(true)).unwrap();
            assert!(h.note.contains("Ports are not available here"), "{}", h.note);
            assert!(!h.note.contains("grants"), "{}", h.note);
            // Other ports allowed: names them.
            let other = SandboxState { ports: vec![9000, 9001], ..st(true) };
            let h = denial_hint(&[line], false, Path::new(ROOT), other).unwrap();
            assert!(h.note.contains("(9000, 9001)") && h.note.contains("ports: [9000]"), "{}", h.note);
        }
        // `bind` inside another word is no socket call.
        let h = hint("Error: EACCES: permission denied, open '/opt/binding.node'").unwrap();
        assert_eq!(h.denials[0].kind, "write");
        // A refused listen beside a refused lookup still gets the network grant's note.
        let both = "Error: listen EACCES: permission denied 127.0.0.1:5173\ncurl: (6) Could not resolve host: x";
        let h = denial_hint(&[both], false, Path::new(ROOT), st(true)).unwrap();
        assert!(h.note.contains("network: true"), "{}", h.note);
        // A blocked network is what makes it a denial.
        let net_open = SandboxState { network_blocked: false, ..st(true) };
        assert!(denial_hint(&[lines[0]], false, Path::new(ROOT), net_open).is_none());
    }
}
