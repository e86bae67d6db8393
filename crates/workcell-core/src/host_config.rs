//! Checks of the host's configuration shared by the three process tools (run_command,
//! run_tests, node_process): each returns the message the host sees when an option is
//! unusable, and [`crate::error::misconfigured`] turns such a message into the tool error.

use std::ffi::OsStr;
use std::fmt;
use std::time::Duration;

use crate::sandbox::SandboxOptions;

/// Largest output cap a host may configure for a process tool (a stream's cap, run_command's
/// head or tail): memory stays bounded.
pub const MAX_OUTPUT_CAP: usize = 64 * 1024 * 1024;

/// Names the tools set themselves; a host cannot pass them through `inheritEnv`.
pub const RESERVED_ENV: &[&str] = &["PATH", "HOME", "TMPDIR"];

/// The outcome of a check: `Err` holds the message for the host.
pub type Check = std::result::Result<(), String>;

/// Both timeouts positive, the default one not above the largest.
pub fn check_timeouts(timeout: Duration, max_timeout: Duration) -> Check {
    if timeout.is_zero() || max_timeout.is_zero() {
        return Err("timeoutMs and maxTimeoutMs must be positive numbers of milliseconds".into());
    }
    if timeout > max_timeout {
        return Err(format!(
            "timeoutMs ({} ms) is above maxTimeoutMs ({} ms)",
            timeout.as_millis(),
            max_timeout.as_millis()
        ));
    }
    Ok(())
}

/// Each output cap, named by `what` ("output head", "stdout cap"...), at most `max` bytes.
pub fn check_output_caps(caps: &[(&str, usize)], max: usize) -> Check {
    for (what, cap) in caps {
        if *cap > max {
            return Err(format!("the {what} must be at most {max} bytes, got {cap}"));
        }
    }
    Ok(())
}

/// The PATH the child gets has no NUL.
pub fn check_path(path: &OsStr) -> Check {
    if path.as_encoded_bytes().contains(&0) {
        return Err("PATH contains a NUL character".into());
    }
    Ok(())
}

/// Host-provided variables: valid names, no NUL in a value, none of `reserved` (the names the
/// tool sets itself).
pub fn check_env(env: &[(String, String)], reserved: &[&str]) -> Check {
    for (name, value) in env {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(format!("environment variable name {name:?} is not valid (empty, or contains = or NUL)"));
        }
        if reserved.contains(&name.as_str()) {
            return Err(format!("{name} is set by the tool itself (PATH through the path option; HOME and TMPDIR are private per call)"));
        }
        if value.contains('\0') {
            return Err(format!("the value of environment variable {name} contains a NUL character"));
        }
    }
    Ok(())
}

/// The last checks of run_command and run_tests, in this order: PATH, the sandbox options, the
/// variables (none of [`RESERVED_ENV`]).
pub fn check_launch(path: &OsStr, sandbox: &SandboxOptions, env: &[(String, String)]) -> Check {
    check_path(path)?;
    sandbox.validate()?;
    check_env(env, RESERVED_ENV)
}

pub use crate::error::misconfigured;

/// Shows the names of host-provided variables, never their values (for `Debug` impls).
pub struct EnvNames<'a>(pub &'a [(String, String)]);

impl fmt::Debug for EnvNames<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter().map(|(k, _)| k)).finish()
    }
}

/// `Debug` for a tool's options: the fields listed, in order (a `=> Wrapper` shows the field
/// through `Wrapper(&field)`, e.g. [`EnvNames`]); the others (the `prepare` hook) are elided.
macro_rules! debug_options {
    ($ty:ident { $($field:ident $(=> $show:path)?),* $(,)? }) => {
        impl std::fmt::Debug for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($ty))
                    $(.field(stringify!($field), &$crate::host_config::debug_options!(@show self.$field $(, $show)?)))*
                    .finish_non_exhaustive()
            }
        }
    };
    (@show $value:expr) => { $value };
    (@show $value:expr, $show:path) => { $show(&$value) };
}
pub(crate) use debug_options;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_must_be_positive_and_ordered() {
        let s = Duration::from_secs;
        assert!(check_timeouts(s(1), s(2)).is_ok());
        assert!(check_timeouts(s(2), s(2)).is_ok());
        assert_eq!(check_timeouts(Duration::ZERO, s(2)).unwrap_err(), "timeoutMs and maxTimeoutMs must be positive numbers of milliseconds");
        assert!(check_timeouts(s(1), Duration::ZERO).is_err());
        assert_eq!(check_timeouts(s(3), s(2)).unwrap_err(), "timeoutMs (3000 ms) is above maxTimeoutMs (2000 ms)");
    }

    #[test]
    fn caps_path_and_env() {
        assert!(check_output_caps(&[("a", 10), ("b", 10)], 10).is_ok());
        assert_eq!(check_output_caps(&[("a", 10), ("stdout cap", 11)], 10).unwrap_err(), "the stdout cap must be at most 10 bytes, got 11");
        assert!(check_path(OsStr::new("/usr/bin:/bin")).is_ok());
        assert_eq!(check_path(OsStr::new("/usr/bin\0")).unwrap_err(), "PATH contains a NUL character");
        assert!(check_env(&[("PATH".into(), "/x".into())], &[]).is_ok());
        assert!(check_env(&[("PATH".into(), "/x".into())], &["PATH"]).unwrap_err().starts_with("PATH is set by the tool itself"));
        assert!(check_env(&[("".into(), "x".into())], &[]).is_err());
        assert!(check_env(&[("A\0".into(), "x".into())], &[]).is_err());
        assert!(check_env(&[("A".into(), "x\0".into())], &[]).is_err());
        assert!(check_launch(OsStr::new("/bin\0"), &SandboxOptions::default(), &[]).is_err());
        assert!(check_launch(OsStr::new("/bin"), &SandboxOptions::default(), &[("HOME".into(), "/".into())]).is_err());
        assert!(check_launch(OsStr::new("/bin"), &SandboxOptions::default(), &[("LANG".into(), "C".into())]).is_ok());
    }

    #[test]
    fn env_names_hide_values() {
        let env = vec![("TOKEN".to_string(), "secret-value".to_string())];
        let shown = format!("{:?}", EnvNames(&env));
        assert_eq!(shown, r#"["TOKEN"]"#);
    }

    #[test]
    fn options_debug_lists_fields_and_hides_values() {
        let env = vec![("TOKEN".to_string(), "secret-value".to_string())];
        let mut c = crate::command::CommandOptions::new("/usr/bin");
        c.env = env.clone();
        let mut t = crate::testrun::TestsOptions::new("/usr/bin", "/usr/bin/node");
        t.env = env.clone();
        let mut n = crate::node::NodeOptions::new("/usr/bin/node");
        n.env = env;
        for (shown, name, first) in [
            (format!("{c:?}"), "CommandOptions", "policy: "),
            (format!("{t:?}"), "TestsOptions", "path: "),
            (format!("{n:?}"), "NodeOptions", "exec_path: "),
        ] {
            assert!(shown.starts_with(&format!("{name} {{ {first}")), "{shown}");
            assert!(shown.contains(r#"env: ["TOKEN"]"#) && shown.contains("sandbox: "), "{shown}");
            assert!(!shown.contains("secret-value") && !shown.contains("prepare"), "{shown}");
            assert!(shown.ends_with(", .. }"), "{shown}");
        }
    }
}
