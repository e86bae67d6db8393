//! Per-call grants (contract §12): what one approved call may have beyond its tool's sandbox
//! options, for that call only. The paths were resolved when the call was validated (the
//! approval layer calls [`canonical_grant`], whose errors the model gets); here they are checked
//! again when the process starts: absolute and without NUL (else the call is refused), and still
//! the canonical path of an existing file or directory. A path that no longer is (removed, or
//! resolving elsewhere because a symlink was put in its place since the person approved it)
//! opens nothing, as a host's own path that went missing opens nothing: the process then meets
//! the sandbox's refusal, never a path nobody approved.

use std::path::PathBuf;

use super::{canonical_grant, Mode, SandboxOptions};
use crate::error::{Error, Reason, Result};

/// Most paths in each of `writePaths` and `readPaths` of one start: a call's own (at most 16,
/// checked when it is validated) merged with the grants remembered for the tool set.
pub const MAX_GRANT_PATHS: usize = 256;

/// A call's grants as the model sent them (after the approval layer resolved the paths).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrantRequest {
    #[serde(default)]
    pub write_paths: Vec<String>,
    #[serde(default)]
    pub read_paths: Vec<String>,
    #[serde(default)]
    pub network: bool,
    /// Only `"off"`.
    #[serde(default)]
    pub sandbox: Option<String>,
}

/// Checked grants: canonical existing paths.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Grants {
    pub write_paths: Vec<PathBuf>,
    pub read_paths: Vec<PathBuf>,
    pub network: bool,
    /// `sandbox: "off"`: the last resort.
    pub sandbox_off: bool,
}

fn refused(at: &str, hint: impl Into<String>) -> Error {
    Error::invalid(Reason::InvalidArgumentsShape, hint).with_details(serde_json::json!({ "at": format!("arguments.grants.{at}") }))
}

fn paths(list: &[String], name: &str) -> Result<Vec<PathBuf>> {
    if list.len() > MAX_GRANT_PATHS {
        return Err(refused(name, format!("grants.{name} takes at most {MAX_GRANT_PATHS} absolute paths")));
    }
    let mut out: Vec<PathBuf> = Vec::with_capacity(list.len());
    for p in list {
        if p.contains('\0') || !std::path::Path::new(p).is_absolute() {
            return Err(refused(name, format!("grants.{name}: {p:?} is not an absolute path; give absolute paths of existing files or directories, such as /home/user/.cache/tool")));
        }
        // Only a path that is still its own canonical form is opened.
        match canonical_grant(p) {
            Ok(c) if c.as_os_str() == std::ffi::OsStr::new(p) => {
                if !out.contains(&c) {
                    out.push(c);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

impl GrantRequest {
    /// Checks the grants without any effect; the paths that still are what they were.
    pub fn check(&self) -> Result<Grants> {
        let sandbox_off = match self.sandbox.as_deref() {
            None => false,
            Some("off") => true,
            Some(_) => return Err(refused("sandbox", "grants.sandbox can only be \"off\"")),
        };
        Ok(Grants {
            write_paths: paths(&self.write_paths, "writePaths")?,
            read_paths: paths(&self.read_paths, "readPaths")?,
            network: self.network,
            sandbox_off,
        })
    }
}

impl Grants {
    pub fn is_empty(&self) -> bool {
        self.write_paths.is_empty() && self.read_paths.is_empty() && !self.network && !self.sandbox_off
    }
}

impl SandboxOptions {
    /// These options widened by `grants`, as the per-call tools widen theirs: the paths added
    /// to the host's, `network` opening the network (an allowlist gives way to it), `sandbox:
    /// "off"` applying nothing. Everything else (limits, ports, the simulated features) stays.
    pub fn granted(&self, grants: &Grants) -> SandboxOptions {
        let mut o = self.clone();
        for p in &grants.read_paths {
            if !o.read_paths.contains(p) {
                o.read_paths.push(p.clone());
            }
        }
        for p in &grants.write_paths {
            if !o.write_paths.contains(p) {
                o.write_paths.push(p.clone());
            }
        }
        if grants.network {
            o.network = true;
            o.network_allow = None;
        }
        if grants.sandbox_off {
            o.mode = Mode::Off;
            o.network_allow = None;
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_are_checked_canonical_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        std::os::unix::fs::symlink(&real, real.join("link")).unwrap();
        let s = |p: &std::path::Path| p.to_str().unwrap().to_string();
        let ok = GrantRequest { write_paths: vec![s(&real), s(&real)], network: true, ..Default::default() }.check().unwrap();
        assert_eq!(ok.write_paths, vec![real.clone()]);
        assert!(ok.network && !ok.sandbox_off);
        // A symlink (or any other spelling), or a path that is gone, opens nothing: only the
        // approved path itself is ever opened.
        for gone in [s(&real.join("link")), "/no/such/path/anywhere".into(), format!("{}/.", s(&real))] {
            let g = GrantRequest { write_paths: vec![gone.clone()], read_paths: vec![gone.clone()], ..Default::default() }.check().unwrap();
            assert!(g.is_empty(), "{gone}: {g:?}");
        }
        for bad in ["relative", "/a\0b"] {
            assert!(GrantRequest { read_paths: vec![bad.into()], ..Default::default() }.check().is_err(), "{bad}");
        }
        let many = GrantRequest { read_paths: vec![s(&real); MAX_GRANT_PATHS + 1], ..Default::default() };
        assert!(many.check().is_err());
        assert!(GrantRequest { sandbox: Some("on".into()), ..Default::default() }.check().is_err());
        let json: GrantRequest = serde_json::from_value(serde_json::json!({ "sandbox": "off" })).unwrap();
        assert!(json.check().unwrap().sandbox_off);
        assert!(serde_json::from_value::<GrantRequest>(serde_json::json!({ "shell": true })).is_err());
    }

    #[test]
    fn granted_options_widen_only_what_was_granted() {
        let base = SandboxOptions { write_paths: vec!["/host/w".into()], ..SandboxOptions::default() };
        assert_eq!(base.granted(&Grants::default()), base);
        let g = Grants { write_paths: vec!["/g/w".into()], read_paths: vec!["/g/r".into()], network: true, sandbox_off: false };
        let o = base.granted(&g);
        assert_eq!(o.write_paths, vec![PathBuf::from("/host/w"), PathBuf::from("/g/w")]);
        assert_eq!(o.read_paths, vec![PathBuf::from("/g/r")]);
        assert!(o.network && o.mode == Mode::Auto);
        assert_eq!(o.limits, base.limits);
        let off = base.granted(&Grants { sandbox_off: true, ..Grants::default() });
        assert_eq!(off.mode, Mode::Off);
        assert!(off.validate().is_ok());
    }
}
