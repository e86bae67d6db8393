//! `checkCommand`: the command policy of workcell-core, for hosts. Synchronous and pure: no
//! effect, no lookup on PATH.

use napi::bindgen_prelude::Utf16String;
use napi_derive::napi;
use workcell_core::api::policy::{self, Policy};

use crate::convert::{strict_string, NativeError};

/// Lists that replace the defaults of the command policy.
#[napi(object)]
pub struct NativeCommandPolicy {
    pub deny_commands: Option<Vec<String>>,
    pub allow_commands: Option<Vec<String>>,
}

/// The outcome of a check: `allowed`, or the refusal as a tool error.
#[napi(object)]
pub struct CommandCheckResult {
    pub allowed: bool,
    pub error: Option<NativeError>,
}

fn policy_of(options: Option<NativeCommandPolicy>) -> Policy {
    let mut policy = Policy::default();
    if let Some(options) = options {
        if let Some(deny) = options.deny_commands {
            policy.deny_commands = deny;
        }
        policy.allow_commands = options.allow_commands;
    }
    policy
}

/// Applies the command policy to an argv. Never throws for a refusal: the result carries
/// `TOOL_ARGUMENTS_INVALID` with `COMMAND_REFUSED` (or a shape reason) instead.
#[napi]
pub fn check_command(argv: Vec<Utf16String>, policy: Option<NativeCommandPolicy>) -> CommandCheckResult {
    let checked = argv
        .into_iter()
        .map(strict_string)
        .collect::<workcell_core::api::Result<Vec<String>>>()
        .and_then(|argv| policy::check_command(&argv, &policy_of(policy)));
    match checked {
        Ok(()) => CommandCheckResult { allowed: true, error: None },
        Err(e) => CommandCheckResult { allowed: false, error: Some(e.into()) },
    }
}

/// The default deny-list.
#[napi]
pub fn default_deny_commands() -> Vec<String> {
    policy::DEFAULT_DENY_COMMANDS.iter().map(|s| s.to_string()).collect()
}
