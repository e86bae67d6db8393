//! Table tests for the command policy, and a property test that the checker never panics.

use proptest::prelude::*;

use super::argv::Checker;
use super::*;

/// The policy most tables run under: the default deny-list plus `rm`, so that the quoting
/// tricks (`\rm`, `r''m`, `command rm`...) have something to be refused for.
fn deny_rm() -> Policy {
    Policy::default().with_deny(["sudo", "su", "doas", "pkexec", "rm"])
}

fn argv(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Runs one case; `expect` is `None` for accepted, or the refusal reason.
fn check_case(policy: &Policy, items: &[&str], expect: Option<&str>) {
    let result = check_command(&argv(items), policy);
    match (expect, result) {
        (None, Ok(())) => {}
        (None, Err(e)) => panic!("{items:?} should be accepted, got {e} ({:?}, hint {:?})", e.details, e.hint),
        (Some(reason), Ok(())) => panic!("{items:?} should be refused ({reason}) but was accepted"),
        (Some(reason), Err(e)) => {
            assert_eq!(e.code, Code::ToolArgumentsInvalid, "{items:?}");
            assert_eq!(e.message, "COMMAND_REFUSED", "{items:?}: {e}");
            let details = e.details.as_ref().expect("details");
            assert_eq!(details["reason"], reason, "{items:?}: hint {:?}", e.hint);
            assert!(details["command"].as_str().is_some_and(|c| !c.is_empty()), "{items:?}: {details}");
            let hint = e.hint.as_deref().unwrap_or("");
            assert!(hint.len() > 20, "{items:?}: hint {hint:?}");
            assert!(hint.contains(details["command"].as_str().unwrap()), "{items:?}: the hint names the node: {hint}");
        }
    }
}

use crate::error::Code;

/// Scripts run as `sh -c <script>` and `bash -c <script>`.
const SCRIPTS: &[(&str, Option<&str>)] = &[
    // Accepted: pipelines, lists, quoting, substitutions whose commands pass.
    ("a && b | c", None),
    ("npm test 2>&1 | tail -n 50", None),
    ("echo 'hello world' \"and $HOME\" plain\\ escaped", None),
    ("FOO=bar cmd", None),
    ("FOO=bar BAZ=\"$x\" cmd arg", None),
    ("cmd > out.txt", None),
    ("cmd >> logs/build.log 2>&1", None),
    ("cmd > /dev/null 2>&1 < input.txt", None),
    ("cmd &> both.log", None),
    ("echo ok >&2", None),
    ("exec 2>&1; make", None),
    ("exec 3>&1-", None),
    ("cat <<'EOF'\n$(sudo id) `rm x`\nEOF", None),
    ("cat <<EOF\nhello $USER $(date)\nEOF", None),
    ("bash -c \"echo nested && ls\"", None),
    ("sh -c 'ls | wc -l'", None),
    ("echo $(date) `whoami` \"$(git rev-parse HEAD)\"", None),
    ("diff <(sort a.txt) <(sort b.txt)", None),
    ("for f in *.rs; do wc -l \"$f\"; done", None),
    ("if [ -f Cargo.toml ]; then cargo build; elif true; then :; else npm run build; fi", None),
    ("cd src && ls", None),
    ("(cd sub && make)", None),
    ("{ make; } 2> err.txt", None),
    ("test -n \"$x\" && echo yes", None),
    ("[ \"$a\" = \"$b\" ] || exit 1", None),
    ("[ -f \"$f\" ] && [ ! -d \"$d\" ]", None),
    ("[ $? -eq 0 ] && [ \"$#\" -gt 1 ]", None),
    ("[[ -f x && $y == z* ]]", None),
    ("[[ $? -ne 0 ]] && exit 1", None),
    ("x=$(git rev-parse HEAD); echo \"$x\"", None),
    ("export NODE_ENV=test; npm test", None),
    ("local_var=1; echo ${local_var:-default} ${#local_var} ${x%.rs}", None),
    ("command -v git && command git status", None),
    ("env FOO=1 npm test", None),
    ("find . -name '*.rs' | xargs -I{} wc -l {}", None),
    ("find . -name \"$pat\" -exec grep -l foo {} +", None),
    ("timeout 5 npm test", None),
    ("nice -n 10 make", None),
    ("nohup sleep 1 &", None),
    ("time make", None),
    ("echo $((1 + 2)) $(( $? * 2 ))", None),
    ("set -euo pipefail; make", None),
    ("trap 'git clean -fq; echo done' EXIT; make > tmp.txt", None),
    ("case $x in a) echo a;; *) echo b;; esac", None),
    ("while read -r line; do echo \"$line\"; done < input.txt", None),
    ("printf '%s\\n' \"$x\"; printf '%d\\n' 42; printf \"Hello $name\\n\"", None),
    ("f() { echo hi; }; f", None),
    ("stdbuf -oL make | tee build.log", None),
    ("read -r a b < file.txt", None),
    ("true; false; :", None),
    ("git log --oneline | head -20 # sudo id", None),
    ("builtin echo hi", None),
    ("echo \"$(printf '%s' \"$(date)\")\"", None),
    ("a=(1 2 3); echo \"${a[@]}\" ${a[0]}", None),
    ("declare -a names=(x y); local -r z=1; export \"GREETING=hi $USER\"", None),
    ("! grep -q foo file.txt", None),
    ("[ \"$x\" ]", None),
    ("unset x; shift; wait $!", None),
    ("getopts ab opt", None),
    ("make CC=gcc PATH=/opt/bin; echo PATH=$PATH", None),
    // Deny-listed, however it is spelled or wrapped.
    ("sudo ls", Some("deny_listed")),
    ("\\rm x", Some("deny_listed")),
    ("r''m x", Some("deny_listed")),
    ("\"rm\" x", Some("deny_listed")),
    ("'r'\"m\" -rf /", Some("deny_listed")),
    ("RM x", Some("deny_listed")),
    ("command rm x", Some("deny_listed")),
    ("command -p rm x", Some("deny_listed")),
    ("env rm x", Some("deny_listed")),
    ("env -i -u BAR FOO=1 rm x", Some("deny_listed")),
    ("xargs rm", Some("deny_listed")),
    ("ls | xargs -0 -n 1 rm -f", Some("deny_listed")),
    ("find . -exec rm {} \\;", Some("deny_listed")),
    ("find . -name x -execdir rm {} +", Some("deny_listed")),
    ("nice -n 5 sudo id", Some("deny_listed")),
    ("nice -5 rm x", Some("deny_listed")),
    ("timeout 5 rm x", Some("deny_listed")),
    ("timeout -k 1 --signal=KILL 5 rm x", Some("deny_listed")),
    ("nohup rm x", Some("deny_listed")),
    ("setsid -f rm x", Some("deny_listed")),
    ("stdbuf -o L rm x", Some("deny_listed")),
    ("exec rm x", Some("deny_listed")),
    ("exec -a name rm x", Some("deny_listed")),
    ("builtin command rm x", Some("deny_listed")),
    ("time rm x", Some("deny_listed")),
    ("env time -p nice rm x", Some("deny_listed")),
    ("! rm x", Some("deny_listed")),
    ("coproc rm x", Some("shell_grammar")),
    ("busybox rm x", Some("deny_listed")),
    ("watch 'rm x'", Some("deny_listed")),
    ("flock lock.file -c 'rm x'", Some("deny_listed")),
    ("flock lock.file rm x", Some("deny_listed")),
    ("if true; then rm x; fi", Some("deny_listed")),
    ("while false; do :; done; until true; do rm x; done", Some("deny_listed")),
    ("for i in a; do rm $i; done", Some("deny_listed")),
    ("case x in x) rm y;; esac", Some("deny_listed")),
    ("f() { rm x; }", Some("deny_listed")),
    ("ls | sudo tee x", Some("deny_listed")),
    ("true && su -c id", Some("deny_listed")),
    // Substitutions are walked.
    ("echo $(sudo id)", Some("deny_listed")),
    ("echo `sudo id`", Some("deny_listed")),
    ("echo \"$(rm x)\"", Some("deny_listed")),
    ("echo \"`rm x`\"", Some("deny_listed")),
    ("echo $(echo $(rm x))", Some("deny_listed")),
    ("diff <(sudo cat a) b", Some("deny_listed")),
    ("exec > >(sudo tee x)", Some("deny_listed")),
    ("cat <<EOF\n$(rm x)\nEOF", Some("deny_listed")),
    ("cat <<< \"$(rm x)\"", Some("deny_listed")),
    ("x=$(rm x)", Some("deny_listed")),
    ("FOO=$(rm x) ls", Some("deny_listed")),
    ("echo ${x:-$(rm y)}", Some("deny_listed")),
    ("echo ${x/a/$(rm y)}", Some("deny_listed")),
    ("[[ -n $(rm x) ]]", Some("deny_listed")),
    ("echo > \"$(rm x)\"", Some("deny_listed")),
    ("trap 'rm x' EXIT", Some("deny_listed")),
    // Nested shells: static scripts are checked, dynamic ones refused.
    ("bash -c \"rm x\"", Some("deny_listed")),
    ("sh -c 'sh -c \"rm x\"'", Some("deny_listed")),
    ("bash -ec 'ls; rm x'", Some("deny_listed")),
    ("bash -c \"$script\"", Some("nested_script")),
    ("sh -c \"echo $x\"", Some("nested_script")),
    ("bash -c", Some("nested_script")),
    ("echo ls | bash", Some("nested_script")),
    ("bash -s < x.sh", Some("nested_script")),
    ("bash -i", Some("nested_script")),
    ("bash +c 'rm x'", Some("deny_listed")),
    ("sh -ec +x 'rm x'", Some("deny_listed")),
    ("xargs sh -c 'rm \"$1\"' _", Some("deny_listed")),
    // Command names must be static bare words.
    ("/bin/rm -rf x", Some("path_in_name")),
    ("/usr/bin/curl http://example.com", Some("path_in_name")),
    ("./configure", Some("path_in_name")),
    ("$(echo ls)", Some("not_static")),
    ("`echo ls` -la", Some("not_static")),
    ("$cmd arg", Some("not_static")),
    ("${cmd} arg", Some("not_static")),
    ("\"$cmd\"", Some("not_static")),
    ("r* x", Some("not_static")),
    ("{r,m}m x", Some("not_static")),
    ("~/bin/tool", Some("not_static")),
    ("$'\\x72m' x", Some("not_static")),
    ("'' x", Some("invalid_name")),
    ("'ls -la'", Some("invalid_name")),
    ("xargs -I{} {} x", Some("wrapper")),
    ("xargs -I X Xm x", Some("wrapper")),
    ("env $X rm", Some("wrapper")),
    ("env -S 'rm x'", Some("wrapper")),
    ("timeout --frobnicate 5 ls", Some("wrapper")),
    ("find $dir -name x", Some("wrapper")),
    ("find . \"$a\" \"$b\" ';'", Some("wrapper")),
    // Dynamic code.
    ("eval \"$x\"", Some("dynamic_code")),
    ("eval ls", Some("dynamic_code")),
    ("builtin eval ls", Some("dynamic_code")),
    ("source ./env.sh", Some("dynamic_code")),
    (". ./env.sh", Some("dynamic_code")),
    ("alias l=ls", Some("dynamic_code")),
    ("echo ${!x}", Some("dynamic_code")),
    ("echo ${x@P}", Some("dynamic_code")),
    ("hash -p /usr/bin/sudo x", Some("dynamic_code")),
    ("trap \"$cmd\" EXIT", Some("dynamic_code")),
    ("mapfile -C 'ls' -c 1 lines < f", Some("dynamic_code")),
    // Redirections stay inside the workspace.
    ("echo x > /etc/passwd", Some("redirect_target")),
    ("cmd > /etc/x", Some("redirect_target")),
    ("echo x > ../x", Some("redirect_target")),
    ("echo x > a/../../x", Some("redirect_target")),
    ("echo x > $FILE", Some("redirect_target")),
    ("echo x > ~/x", Some("redirect_target")),
    ("echo x > *.txt", Some("redirect_target")),
    ("echo x >> /tmp/log", Some("redirect_target")),
    ("cat < /etc/shadow", Some("redirect_target")),
    ("echo x &> /var/log/x", Some("redirect_target")),
    ("echo x >& /etc/x", Some("redirect_target")),
    ("ls 2>&$fd", Some("redirect_target")),
    ("exec 3<> /dev/tcp/example.com/80", Some("redirect_target")),
    ("{ ls; } > /etc/x", Some("redirect_target")),
    ("f() { ls; } > /etc/x", Some("redirect_target")),
    // Values bash evaluates as code.
    ("echo $((x + 1))", Some("arithmetic")),
    ("((i++))", Some("arithmetic")),
    ("for ((i=0; i<3; i++)); do :; done", Some("arithmetic")),
    ("[ \"$x\" -eq 1 ]", Some("arithmetic")),
    ("test 'a[$(rm x)]' -gt 0", Some("arithmetic")),
    ("[[ $x -gt 1 ]]", Some("arithmetic")),
    ("printf '%d' \"$x\"", Some("arithmetic")),
    ("printf \"$fmt\" a", Some("arithmetic")),
    ("let i=i+1", Some("arithmetic")),
    ("declare -i n=1", Some("arithmetic")),
    ("local -n ref=x", Some("arithmetic")),
    ("echo ${a[$i]}", Some("arithmetic")),
    ("echo ${x:$off:2}", Some("arithmetic")),
    ("a[$i]=1", Some("arithmetic")),
    ("read \"$v\"", Some("variable_name")),
    ("read 'a[$(rm x)]'", Some("variable_name")),
    ("printf -v \"$v\" x", Some("variable_name")),
    ("[ -v \"$n\" ]", Some("variable_name")),
    ("[[ -v $n ]]", Some("variable_name")),
    ("[ \"$a\" \"$b\" ]", Some("variable_name")),
    ("[ -n $x ]", Some("variable_name")),
    ("export \"$name\"", Some("variable_name")),
    ("export $name=1", Some("variable_name")),
    ("export \"PATH=$x\"", Some("protected_variable")),
    ("getopts ab \"$v\"", Some("variable_name")),
    // Protected variables, shell options, directories.
    ("PATH=/tmp:$PATH ls", Some("protected_variable")),
    ("export PATH=/x", Some("protected_variable")),
    ("command export PATH=/x", Some("protected_variable")),
    ("echo a=$(rm x)", Some("deny_listed")),
    ("PS4='$(rm x)'; set -x", Some("protected_variable")),
    ("env PATH=. ls", Some("protected_variable")),
    ("LD_PRELOAD=./x.so ls", Some("protected_variable")),
    ("BASH_ENV=x.sh bash -c true", Some("protected_variable")),
    ("read PATH < f", Some("protected_variable")),
    ("for PATH in /tmp; do ls; done", Some("protected_variable")),
    ("echo ${PATH:=/tmp}", Some("protected_variable")),
    ("set -k", Some("shell_option")),
    ("set -o keyword", Some("shell_option")),
    ("set $x", Some("shell_option")),
    ("cd /tmp", Some("directory")),
    ("cd ..", Some("directory")),
    ("cd", Some("directory")),
    ("cd -", Some("directory")),
    ("cd ~", Some("directory")),
    ("pushd /etc", Some("directory")),
    // Programs that run others unchecked; scripts that do not parse.
    ("strace ls", Some("unchecked_runner")),
    ("script -qc ls /dev/null", Some("unchecked_runner")),
    ("echo 'unterminated", Some("parse_error")),
    ("if then fi", Some("parse_error")),
    ("<(echo ls) x", Some("parse_error")),
    ("echo ${(e)x}", Some("parse_error")),
    ("echo 99999999999>x", Some("parse_error")),
    ("echo ~+99999999999999999999999", Some("parse_error")),
];

/// Scripts of [`SCRIPTS`] that use bash-only syntax: `sh -c` refuses them (`shell_grammar`).
const BASH_ONLY_SCRIPTS: &[&str] = &[
    "cmd &> both.log",
    "diff <(sort a.txt) <(sort b.txt)",
    "[[ -f x && $y == z* ]]",
    "[[ $? -ne 0 ]] && exit 1",
    "coproc rm x",
    "diff <(sudo cat a) b",
    "exec > >(sudo tee x)",
    "cat <<< \"$(rm x)\"",
    "[[ -n $(rm x) ]]",
    "$'\\x72m' x",
    "echo x &> /var/log/x",
    "((i++))",
    "for ((i=0; i<3; i++)); do :; done",
    "[[ $x -gt 1 ]]",
    "[[ -v $n ]]",
    "<(echo ls) x",
];

#[test]
fn scripts_table() {
    let policy = deny_rm();
    let mut failures = Vec::new();
    for (script, expect) in SCRIPTS {
        for shell in ["sh", "bash"] {
            // Bash syntax is refused before anything else when a POSIX shell would run it.
            let expect = if shell == "sh" && BASH_ONLY_SCRIPTS.contains(script) { Some("shell_grammar") } else { *expect };
            if let Err(e) = std::panic::catch_unwind(|| check_case(&policy, &[shell, "-c", script], expect)) {
                failures.push(format!("{shell}: {:?}", e.downcast_ref::<String>()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(SCRIPTS.len() >= 60);
}

/// Argv items as the tool receives them (no shell), under the default policy.
const ARGVS: &[(&[&str], Option<&str>)] = &[
    (&["ls", "-la"], None),
    (&["npm", "test"], None),
    (&["rm", "-rf", "build"], None),
    (&["git", "commit", "-m", "fix `x` and $(y)"], None),
    (&["g++", "-O2", "a.cc"], None),
    (&["python3.12", "-c", "print(1)"], None),
    (&["[", "-f", "x", "]"], None),
    (&["env"], None),
    (&["xargs"], None),
    (&["command", "-v", "sudo"], None),
    (&["find", ".", "-execdir", "rm", "{}", "+"], None),
    (&["bash", "script.sh"], None),
    (&["bash", "-xc", "ls"], None),
    (&["bash", "-lc", "ls"], None),
    (&["bash", "-e", "-u", "-o", "pipefail", "-c", "ls", "arg0", "$(sudo id)"], None),
    (&["bash", "--norc", "--noprofile", "-c", "ls"], None),
    (&["sh", "-c", "echo *(e:sudo:)"], None),
    (&["sudo", "ls"], Some("deny_listed")),
    (&["SUDO", "ls"], Some("deny_listed")),
    (&["doas", "ls"], Some("deny_listed")),
    (&["pkexec", "ls"], Some("deny_listed")),
    (&["/usr/bin/curl", "x"], Some("path_in_name")),
    (&["./script.sh"], Some("path_in_name")),
    (&["bin/tool"], Some("path_in_name")),
    (&[""], Some("invalid_name")),
    (&["ls -la"], Some("invalid_name")),
    (&["l$s"], Some("invalid_name")),
    (&["ｌｓ"], Some("invalid_name")),
    (&["env", "sudo", "id"], Some("deny_listed")),
    (&["command", "sudo"], Some("deny_listed")),
    (&["exec", "sudo"], Some("deny_listed")),
    (&["xargs", "sudo"], Some("deny_listed")),
    (&["xargs", "-n", "1", "-P4", "sudo"], Some("deny_listed")),
    (&["xargs", "-I", "X", "X"], Some("wrapper")),
    (&["xargs", "--frob", "ls"], Some("wrapper")),
    (&["timeout", "5", "sudo", "id"], Some("deny_listed")),
    (&["timeout", "-s", "KILL", "5", "sudo"], Some("deny_listed")),
    (&["timeout", "--sig", "KILL", "5", "sudo"], Some("deny_listed")),
    (&["nice", "-10", "sudo"], Some("deny_listed")),
    (&["nice", "--adjustment=3", "sudo"], Some("deny_listed")),
    (&["stdbuf", "-oL", "sudo"], Some("deny_listed")),
    (&["setsid", "-f", "sudo"], Some("deny_listed")),
    (&["nohup", "--", "sudo"], Some("deny_listed")),
    (&["time", "-p", "sudo"], Some("deny_listed")),
    (&["env", "-u", "X", "-C", "sub", "sudo"], Some("deny_listed")),
    (&["env", "-", "FOO=1", "sudo"], Some("deny_listed")),
    (&["env", "--weird", "x"], Some("wrapper")),
    (&["env", "-S", "sudo id"], Some("wrapper")),
    (&["find", ".", "-name", "*.rs", "-exec", "sudo", "{}", ";"], Some("deny_listed")),
    (&["find", ".", "-fprint", "-exec", "-exec", "sudo", ";"], Some("deny_listed")),
    (&["find", ".", "-exec", "{}", ";"], Some("not_static")),
    (&["find", ".", "-exec", "sh", "-c", "echo {}", ";"], Some("nested_script")),
    (&["find", ".", "-exec", "sh", "-c", "echo \"$1\"", "sh", "{}", ";"], None),
    (&["xargs", "-I", "%", "sh", "-c", "echo %"], Some("nested_script")),
    (&["xargs", "-i", "bash", "-c", "{}"], Some("nested_script")),
    (&["xargs", "-I", "%", "cp", "%", "dest/"], None),
    (&["busybox", "sh", "-c", "sudo id"], Some("deny_listed")),
    (&["bash", "-c", "sudo id"], Some("deny_listed")),
    (&["bash", "-ec", "sudo id"], Some("deny_listed")),
    (&["bash", "-c", "-e", "sudo id"], Some("deny_listed")),
    (&["BASH", "-c", "sudo id"], Some("deny_listed")),
    (&["ksh", "-c", "sudo x"], Some("deny_listed")),
    (&["zsh", "-c", "echo *(e:sudo:)"], Some("dynamic_code")),
    (&["zsh", "-c", "[ \"$a\" = \"$b\" ] && echo =ls"], None),
    (&["sh", "-c"], Some("nested_script")),
    (&["sh"], Some("nested_script")),
    (&["bash", "-i"], Some("nested_script")),
    (&["bash", "-o", "keyword", "-c", "ls"], Some("shell_option")),
    (&["bash", "-k", "-c", "ls"], Some("shell_option")),
    (&["bash", "--rcfile"], Some("nested_script")),
    (&["eval", "x"], Some("dynamic_code")),
    (&["fish", "-c", "x"], Some("unchecked_runner")),
    (&["strace", "ls"], Some("unchecked_runner")),
    (&["su"], Some("deny_listed")),
    (&["sudoedit", "/etc/hosts"], Some("unchecked_runner")),
    (&["run0", "id"], Some("unchecked_runner")),
];

#[test]
fn argv_table() {
    let policy = Policy::default();
    for (items, expect) in ARGVS {
        check_case(&policy, items, *expect);
    }
}

#[test]
fn a_custom_deny_list_replaces_the_default_but_privilege_tools_stay_refused() {
    let policy = Policy::default().with_deny(["curl"]);
    check_case(&policy, &["curl", "x"], Some("deny_listed"));
    check_case(&policy, &["sh", "-c", "wget x | cUrL y"], Some("deny_listed"));
    check_case(&policy, &["sudo", "ls"], Some("unchecked_runner"));
    let nothing_denied = Policy::default().with_deny(Vec::<String>::new());
    check_case(&nothing_denied, &["ls"], None);
    check_case(&nothing_denied, &["su"], Some("unchecked_runner"));
}

#[test]
fn the_allow_list_applies_to_every_command_run() {
    let policy = Policy::default().with_allow(["npm", "git", "ls", "cat", "grep", "xargs", "env", "find"]);
    for (items, expect) in [
        (&["npm", "test"][..], None),
        (&["NPM", "test"], None),
        (&["curl", "x"], Some("not_allow_listed")),
        (&["sh", "-c", "npm test && git status"], None),
        (&["sh", "-c", "cd src && echo hi; ls | grep x; [ -f y ] || true"], None),
        (&["sh", "-c", "npm test | tail"], Some("not_allow_listed")),
        (&["sh", "-c", "x=$(curl y)"], Some("not_allow_listed")),
        (&["bash", "-c", "echo <(wget y)"], Some("not_allow_listed")),
        (&["sh", "-c", "command curl x"], Some("not_allow_listed")),
        (&["sh", "-c", "f() { curl x; }"], Some("not_allow_listed")),
        (&["sh", "-c", "trap 'curl x' EXIT"], Some("not_allow_listed")),
        (&["xargs", "curl"], Some("not_allow_listed")),
        (&["xargs", "git", "add"], None),
        (&["env", "npm", "test"], None),
        (&["nice", "npm"], Some("not_allow_listed")),
        (&["find", ".", "-exec", "curl", "{}", ";"], Some("not_allow_listed")),
        (&["bash", "script.sh"], Some("not_allow_listed")),
        (&["bash", "--version"], Some("not_allow_listed")),
        (&["strace", "ls"], Some("unchecked_runner")),
        (&["sh", "-c", "sudo ls"], Some("deny_listed")),
    ] {
        check_case(&policy, items, expect);
    }
    // Naming a runner in the allow-list is how a host permits it.
    let with_strace = Policy::default().with_allow(["strace", "ls"]);
    check_case(&with_strace, &["strace", "ls"], None);
    // The allow-list is quoted back in the hint.
    let err = check_command(&argv(&["curl"]), &policy).unwrap_err();
    assert!(err.hint.unwrap().contains("npm, git"));
}

#[test]
fn shape_and_size_limits() {
    let policy = Policy::default();
    let reason = |items: Vec<String>| check_command(&items, &policy).unwrap_err().message;
    assert_eq!(reason(vec![]), "INVALID_ARGUMENTS_SHAPE");
    let mut many = vec!["echo".to_string()];
    many.extend((1..MAX_ARGV_ITEMS).map(|i| i.to_string()));
    assert_eq!(many.len(), 64);
    assert!(check_command(&many, &policy).is_ok());
    many.push("65".into());
    assert_eq!(reason(many), "TOO_MANY_ARGUMENTS");
    assert_eq!(reason(argv(&["echo", "a\0b"])), "INVALID_ARGUMENTS_SHAPE");
    assert!(check_command(&argv(&["echo", &"a".repeat(DEFAULT_MAX_ARGUMENT_BYTES)]), &policy).is_ok());
    assert_eq!(reason(argv(&["echo", &"a".repeat(DEFAULT_MAX_ARGUMENT_BYTES + 1)])), "ARGUMENT_TOO_LARGE");
    let third = "a".repeat(DEFAULT_MAX_ARGV_BYTES / 3 + 1);
    assert_eq!(reason(argv(&["echo", &third, &third, &third])), "ARGUMENTS_TOO_LARGE");
    let small = Policy { max_argument_bytes: 4, ..Policy::default() };
    assert_eq!(check_command(&argv(&["echo", "12345"]), &small).unwrap_err().message, "ARGUMENT_TOO_LARGE");
    for items in [vec![], argv(&["echo", "a\0b"])] {
        let err = check_command(&items, &policy).unwrap_err();
        assert!(err.hint.is_some_and(|h| !h.is_empty()));
    }
}

#[test]
fn deep_nesting_is_bounded_not_a_stack_overflow() {
    let policy = Policy::default();
    // Up to the limit, deeply nested scripts parse (on the checker's own stack).
    let n = MAX_SCRIPT_OPENERS;
    for script in [
        format!("{}true{}", "(true; ".repeat(n), ")".repeat(n)),
        format!("{}true;{}", "{ ".repeat(n), "} ".repeat(n)),
        format!("{}true{}", "if true; then ".repeat(n), "; fi".repeat(n)),
    ] {
        check_case(&policy, &["sh", "-c", &script], None);
    }
    check_case(&policy, &["bash", "-c", &format!("[[ {}a ]]", "! ".repeat(n - 2))], None);
    check_case(&policy, &["bash", "-c", &format!("[[ {}a ]]", "! ".repeat(n - 1))], Some("too_complex"));
    // One more construct is refused before parsing.
    for script in [
        format!("{}true{}", "(true; ".repeat(n + 1), ")".repeat(n + 1)),
        format!("echo {}x{}", "$(".repeat(10_000), ")".repeat(10_000)),
        format!("{}true{}", "if true; then ".repeat(1_500), "; fi".repeat(1_500)),
        "{ ".repeat(16_000),
    ] {
        check_case(&policy, &["sh", "-c", &script], Some("too_complex"));
    }
}

#[test]
fn nesting_of_scripts_and_wrappers_is_bounded() {
    let policy = Policy::default();
    let nested = |n: usize| format!("echo {}x{}", "$(echo ".repeat(n), ")".repeat(n));
    check_case(&policy, &["sh", "-c", &nested(MAX_NESTING - 1)], None);
    check_case(&policy, &["sh", "-c", &nested(MAX_NESTING)], Some("too_complex"));
    let wrapped = |n: usize| {
        let mut items = vec!["env"; n];
        items.push("ls");
        items
    };
    check_case(&policy, &wrapped(MAX_NESTING), None);
    check_case(&policy, &wrapped(MAX_NESTING + 1), Some("too_complex"));
}

#[test]
fn refusals_name_the_node_and_a_way_forward() {
    let err = check_command(&argv(&["sh", "-c", "ls && echo x > /etc/passwd"]), &Policy::default()).unwrap_err();
    assert_eq!(err.details.as_ref().unwrap()["command"], "> /etc/passwd");
    assert!(err.hint.as_ref().unwrap().contains("out.txt"));
    let err = check_command(&argv(&["/bin/rm", "x"]), &Policy::default()).unwrap_err();
    assert!(err.hint.as_ref().unwrap().contains("`rm`"), "{:?}", err.hint);
    let err = check_command(&argv(&["sh", "-c", "echo $(sudo id)"]), &Policy::default()).unwrap_err();
    assert_eq!(err.details.as_ref().unwrap()["command"], "sudo");
    let long = format!("{} > /etc/x", "a".repeat(1000));
    let err = check_command(&argv(&["sh", "-c", &long]), &Policy::default()).unwrap_err();
    assert!(err.details.as_ref().unwrap()["command"].as_str().unwrap().chars().count() <= 161);
}

/// Runs the checker without the panic guard of `check_command`: a panic fails the test
/// instead of being turned into a refusal.
fn check_unguarded(items: Vec<String>) -> std::thread::Result<bool> {
    std::panic::catch_unwind(move || Checker::new(&deny_rm()).check_top(&items).is_ok())
}

/// Pieces scripts are made of: syntax, expansions, quotes, keywords, odd characters.
fn token() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(" ".to_string()),
        Just("\n".to_string()),
        proptest::sample::select(vec![
            ";", "&&", "||", "|", "&", "(", ")", "{", "}", "[", "]", "[[", "]]", "!", "<", ">", ">>", "<<",
            "<<<", "<(", ">(", "2>&1", ">&", "&>", "$(", "`", "$((", "))", "${", "${!", "${#", ":-", "@P", "'",
            "\"", "\\", "$'", "$\"", "~", "~+", "*", "?", "=", "#", "$", "$x", "$@", "$?", "if", "then", "else",
            "fi", "for", "in", "do", "done", "while", "case", "esac", ";;", "function", "coproc", "time",
            "select", "sudo", "rm", "eval", "env", "xargs", "find", "-exec", "bash", "-c", "sh", "command",
            "exec", "cd", "..", "/etc/passwd", "out.txt", "read", "printf", "-v", "test", "-eq", "PATH=",
            "a[", "12345678901", "EOF", "x", "1", "{a,b}", "*(e:x:)",
        ])
        .prop_map(str::to_string),
        "[ -~]{1,6}",
        any::<char>().prop_map(|c| c.to_string()),
    ]
}

proptest! {
    // PROPTEST_CASES raises the count for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(600),
        ..ProptestConfig::default()
    })]

    #[test]
    fn the_checker_never_panics_on_scripts(parts in proptest::collection::vec(token(), 0..60)) {
        // NUL is a shape error before the policy; keep the scripts about the policy.
        let script: String = parts.concat().replace('\0', "");
        for shell in ["bash", "zsh"] {
            let outcome = check_unguarded(vec![shell.into(), "-c".into(), script.clone()]);
            prop_assert!(outcome.is_ok(), "panicked on {:?}", script);
        }
        // The public function agrees with the unguarded one.
        let public = check_command(&argv(&["bash", "-c", &script]), &deny_rm()).is_ok();
        prop_assert_eq!(public, check_unguarded(argv(&["bash", "-c", &script])).unwrap());
    }

    #[test]
    fn the_checker_never_panics_on_argv(items in proptest::collection::vec(proptest::collection::vec(token(), 0..6).prop_map(|p| p.concat()), 1..10)) {
        let items: Vec<String> = items.into_iter().map(|s| s.replace('\0', "")).collect();
        prop_assert!(check_unguarded(items.clone()).is_ok(), "panicked on {:?}", items);
    }

    #[test]
    fn mutated_table_scripts_never_panic(index in 0..SCRIPTS.len(), edits in proptest::collection::vec((any::<usize>(), token()), 1..6)) {
        let mut script: Vec<char> = SCRIPTS[index].0.chars().collect();
        for (at, text) in edits {
            let at = at % (script.len() + 1);
            if text.len() == 1 && at < script.len() {
                script.remove(at);
            } else {
                script.splice(at..at, text.chars());
            }
        }
        let script: String = script.into_iter().collect();
        prop_assert!(check_unguarded(argv(&["sh", "-c", &script])).is_ok(), "panicked on {:?}", script);
    }
}

// ---------------------------------------------------------------------------------------------
// Regression tests of the security review: each script was allowed before and ran a program
// the policy never saw, or wrote outside the workspace.

#[test]
fn sh_reads_ansi_c_quotes_as_dollar_and_a_quote_so_the_middle_line_runs() {
    check_case(&deny_rm(), &["sh", "-c", "echo $'\\'\nsudo -u root id\necho \\'' #'"], Some("shell_grammar"));
    check_case(&deny_rm(), &["dash", "-c", "echo $\"x\""], Some("shell_grammar"));
    // bash reads $'..' as the parser does.
    check_case(&deny_rm(), &["bash", "-c", "echo $'\\'\nsudo -u root id\necho \\'' #'"], None);
}

#[test]
fn sh_reads_ampersand_greater_as_background_then_a_redirection() {
    check_case(&deny_rm(), &["sh", "-c", "true &>/dev/null sudo id"], Some("shell_grammar"));
    check_case(&deny_rm(), &["ash", "-c", "a |& b"], Some("shell_grammar"));
}

#[test]
fn sh_runs_double_bracket_as_a_command_and_its_operators_as_syntax() {
    check_case(&deny_rm(), &["sh", "-c", "[[ a || sudo == x ]]"], Some("shell_grammar"));
    check_case(&deny_rm(), &["sh", "-c", "[[ x > /outside/file ]]"], Some("shell_grammar"));
    for script in ["((1)) && ls", "cat <<< x", "function f { ls; }", "cat <(ls)", "ls > >(cat)", "echo $(echo [[ x ]])"] {
        for shell in ["sh", "dash", "posh", "yash", "ksh", "mksh"] {
            check_case(&deny_rm(), &[shell, "-c", script], Some("shell_grammar"));
        }
        check_case(&deny_rm(), &["bash", "-c", script], None);
    }
}

#[test]
fn sh_runs_time_as_a_program() {
    let policy = Policy::default().with_allow(["ls"]);
    check_case(&policy, &["sh", "-c", "time ls"], Some("not_allow_listed"));
    check_case(&policy, &["bash", "-c", "time ls"], None);
}

#[test]
fn bash_ends_a_here_document_in_a_substitution_at_a_closing_word_with_a_parenthesis() {
    for script in [
        "echo $(cat <<EOF\nx\nEOF)\nsudo csub\nEOF\n)",
        "x=$(cat <<EOF\nx\nEOF)\nsudo csub\nEOF\n)",
        "x=$(cat <<'EOF'\nx\nEOF)\nsudo csub\nEOF\n)",
        "x=$(cat <<-EOF\n\tx\n\tEOF)\nsudo csub\nEOF\n)",
        "x=`cat <<EOF\nx\nEOF`\nsudo csub\nEOF\n`",
        "echo \"$(cat <<EOF\nx\nEOF\n)\"",
        "cat <<EOF\nx\nEOF)\nsudo\nEOF",
    ] {
        for shell in ["sh", "bash"] {
            check_case(&deny_rm(), &[shell, "-c", script], Some("here_document"));
        }
    }
    check_case(&deny_rm(), &["bash", "-c", "cat <<EOF\n$(date)\nEOF\necho ok"], None);
}

#[test]
fn xargs_hands_its_input_to_a_nested_wrapper() {
    let policy = Policy::default().with_allow(["ls", "xargs", "env", "nice", "find", "git"]);
    for script in ["echo id -u | xargs xargs", "echo uname -a | xargs env", "echo id | xargs nice", "xargs -n1 sh", "xargs timeout 5", "find . -exec xargs env \\;"] {
        assert!(check_command(&argv(&["sh", "-c", script]), &policy).is_err(), "{script}");
    }
    for items in [&["xargs", "xargs"][..], &["xargs", "env"], &["xargs", "-0", "nice", "-n", "5"], &["xargs", "sh"]] {
        assert!(check_command(&argv(items), &policy).is_err(), "{items:?}");
    }
    // Programs that take the input as data stay allowed.
    for items in [&["xargs", "ls"][..], &["xargs", "git", "add"], &["xargs", "-I", "{}", "ls", "{}"], &["xargs", "sh", "-c", "ls \"$@\"", "_"]] {
        check_case(&policy, items, None);
    }
}

#[test]
fn unknown_runners_are_followed_or_refused() {
    let policy = deny_rm();
    for items in [
        &["prlimit", "--nofile=100", "sudo", "id"][..],
        &["prlimit", "-n100", "sudo"],
        &["setarch", "x86_64", "sudo", "id"],
        &["setarch", "x86_64", "-R", "sudo"],
        &["linux64", "sudo"],
        &["linux32", "--addr-no-randomize", "sudo"],
        &["x86_64", "sudo"],
    ] {
        check_case(&policy, items, Some("deny_listed"));
    }
    for items in [&["prlimit", "--nofile=100", "ls"][..], &["setarch", "x86_64", "-R", "ls"], &["linux64", "ls"], &["prlimit", "--pid", "1"]] {
        check_case(&policy, items, None);
    }
    for name in [
        "start-stop-daemon", "numactl", "chpst", "daemonize", "nsenter", "capsh", "sg", "newgrp", "setpriv", "runcon",
        "systemd-run", "firejail", "bwrap", "proot", "fakeroot", "faketime", "cgexec", "schedtool", "unbuffer", "rlwrap",
        "ssh", "gosu", "su-exec", "qemu-x86_64", "ld-linux-x86-64.so.2", "run-parts", "pee",
    ] {
        check_case(&policy, &[name, "ls"], Some("unchecked_runner"));
        check_case(&policy, &["sh", "-c", &format!("{name} ls")], Some("unchecked_runner"));
    }
}

#[test]
fn wrappers_that_change_directory_are_checked_like_cd() {
    let policy = deny_rm();
    for items in [
        &["env", "-C", "/tmp", "sh", "-c", "echo x > f"][..],
        &["env", "--chdir=/tmp", "touch", "f"],
        &["env", "--chdir", "..", "ls"],
        &["env", "-C..", "ls"],
        &["find", "/tmp", "-execdir", "touch", "f", ";"],
        &["find", "-L", "..", "-okdir", "ls", ";"],
    ] {
        check_case(&policy, items, Some("directory"));
    }
    check_case(&policy, &["sh", "-c", "find \"$d\" -execdir ls \\;"], Some("directory"));
    for items in [&["env", "-C", "sub", "ls"][..], &["find", "src", "-execdir", "ls", ";"], &["find", "-execdir", "ls", ";"], &["find", "/tmp", "-exec", "ls", ";"]] {
        check_case(&policy, items, None);
    }
}

#[test]
fn inherited_descriptors_above_two_cannot_be_duplicated() {
    let policy = deny_rm();
    for script in ["echo x >&3", "cat <&5", "ls 1>&9", "exec 4>&7", "ls >&3-", "{ ls >&3; } 3>out.txt", "true 3>x.txt; cat <&3", "ls >&99999999999999999999"] {
        check_case(&policy, &["sh", "-c", script], Some("descriptor"));
    }
    for script in ["exec 3>out.txt; echo x >&3; exec 3>&-", "ls 3>out.txt >&3", "exec 3>&1; ls >&3", "ls 2>&1 >&2", "ls 3<in.txt <&3", "ls >&-"] {
        check_case(&policy, &["sh", "-c", script], None);
    }
}

#[test]
fn nested_default_expansions_over_the_cap_are_refused_before_parsing() {
    // `"${x:-` nested deep made parsing quadratic (500 ms for 32 KiB, then accepted).
    let deep = format!("echo {}x{}", "\"${x:-".repeat(5_000), "}\"".repeat(5_000));
    check_case(&Policy::default(), &["bash", "-c", &deep[..deep.len().min(DEFAULT_MAX_ARGUMENT_BYTES)]], Some("too_complex"));
    let within = format!("echo {}x{}", "\"${x:-".repeat(12), "}\"".repeat(12));
    check_case(&Policy::default(), &["bash", "-c", &within], None);
}

/// `bash -c '<<\r&& '` once sent the shell parser into an endless loop that allocated until the
/// host process ran out of memory (found by `the_checker_never_panics_on_scripts`): it is refused
/// as a here-document the shells read differently, at once.
#[test]
fn a_carriage_return_closing_a_here_document_is_refused_not_an_endless_parse() {
    for script in ["<<\r&& ", "<< \r&& ", "x <<\r&& y"] {
        for shell in ["bash", "sh", "zsh"] {
            let err = check_command(&argv(&[shell, "-c", script]), &deny_rm()).unwrap_err();
            assert_eq!(err.details.as_ref().and_then(|d| d["reason"].as_str()), Some("here_document"), "{shell} {script:?}: {err:?}");
        }
    }
}
