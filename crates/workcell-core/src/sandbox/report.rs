//! What was enforced for one call: part of every result of a tool that starts processes.

/// Whether the child's file access was confined (Landlock).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Filesystem {
    /// Only the workspace, the host's grants and what programs need to run.
    Confined,
    /// Whatever the user running the host may access.
    Open,
}

/// Whether the child could use the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Network {
    /// TCP connect and bind refused (Landlock ABI 4+).
    Blocked,
    /// The host allowed the network (`network: true`).
    Allowed,
    /// A network namespace with loopback only, whose way out is the filtering proxy
    /// (`network: { allow }`).
    Filtered,
    /// Not blocked: the sandbox is off, or the kernel cannot block it.
    Open,
}

/// How the call's processes are contained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum Processes {
    /// A PID namespace: nothing started by the call outlives it.
    Namespace,
    /// Process-group killing (and killing what holds the output pipes): a descendant that
    /// leaves the group and closes its output can outlive the call.
    Group,
}

/// What the processes may do to the protected paths inside the workspace (`protect`, contract
/// §21; [`super::protect`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(inline)]
pub enum Protection {
    /// Every match is read-only (mounted so in the processes' mount namespace).
    ReadOnly,
    /// The walk that finds them stopped at its bounds: the top-level `.git` and the matches it
    /// found are read-only, later or deeper ones may not be.
    Partial,
    /// The host protects nothing for processes (`protect: []`).
    None,
    /// Not enforced: the sandbox is off.
    Open,
}

/// The `sandbox` field of a result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(rename = "SandboxReport")]
pub struct Report {
    /// The Landlock ABI the child was confined with; `None` without Landlock.
    pub landlock_abi: Option<u32>,
    pub filesystem: Filesystem,
    pub network: Network,
    pub processes: Processes,
    /// Whether Node.js's permission model was on (node_process only).
    pub node_permission: bool,
    /// The resource caps and how each was enforced.
    pub limits: super::resources::LimitsReport,
    /// Whether the protected paths were read-only for the processes.
    pub protect: Protection,
}

impl Filesystem {
    pub fn as_str(self) -> &'static str {
        match self {
            Filesystem::Confined => "confined",
            Filesystem::Open => "open",
        }
    }
}

impl Network {
    pub fn as_str(self) -> &'static str {
        match self {
            Network::Blocked => "blocked",
            Network::Allowed => "allowed",
            Network::Filtered => "filtered",
            Network::Open => "open",
        }
    }
}

impl Processes {
    pub fn as_str(self) -> &'static str {
        match self {
            Processes::Namespace => "namespace",
            Processes::Group => "group",
        }
    }
}

impl Report {
    /// Nothing enforced (`sandbox: "off"`; [`super::plan`] fills in the configured caps).
    pub const OFF: Report = Report {
        landlock_abi: None,
        filesystem: Filesystem::Open,
        network: Network::Open,
        processes: Processes::Group,
        node_permission: false,
        limits: super::resources::LimitsReport::NONE,
        protect: Protection::Open,
    };

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a report serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_shape() {
        let none = serde_json::json!({ "max": 0, "by": "none" });
        let limits = serde_json::json!({ "processes": none, "memoryBytes": none, "fileBytes": none });
        assert_eq!(
            Report::OFF.to_json(),
            serde_json::json!({ "landlockAbi": null, "filesystem": "open", "network": "open", "processes": "group", "nodePermission": false, "limits": limits, "protect": "open" })
        );
        let r = Report { landlock_abi: Some(7), filesystem: Filesystem::Confined, network: Network::Blocked, processes: Processes::Namespace, node_permission: true, ..Report::OFF };
        assert_eq!(
            r.to_json(),
            serde_json::json!({ "landlockAbi": 7, "filesystem": "confined", "network": "blocked", "processes": "namespace", "nodePermission": true, "limits": limits, "protect": "open" })
        );
    }
}
