//! The core as the napi binding (the package's `src/`) sees it: every item the binding uses, and
//! nothing else. The binding names the core only through this module (a test checks it), so
//! what the JavaScript side can reach is listed here, grouped by the concern it comes from.
//! Each group re-exports items of the core module of the same name; the decisions stay there.

pub use crate::cancel::Cancel;
pub use crate::error::{Code, Error, Reason, Result};
pub use crate::path::{from_utf16, parse as parse_path};
pub use crate::root::Workspace;

/// Workcell's own worker threads, and the hooks the binding's settling uses.
pub mod pool {
    pub use crate::pool::{more_work_soon, set_idle_hook, spawn, Lane};
}

/// read_file and its windows.
pub mod read {
    pub use crate::page::read_window;
    pub use crate::read::read_file_or_image;
}

/// `hashFile`.
pub mod hash {
    pub use crate::hash::hash_file;
}

/// write_file, and its limits.
pub mod write {
    pub use crate::write::{spawn_write, ticket, WriteRequest, MAX_WRITE_BYTES, MAX_WRITE_BYTES_CEILING};
}

/// edit_file.
pub mod edit {
    pub use crate::edit::{spawn_edit, Edit, EditRequest};
}

/// apply_patch.
pub mod patch {
    pub use crate::patch::parse::parse_in;
    pub use crate::patch::{root_of, spawn_patch, tickets_for, PatchRequest};
}

/// move_file, delete_file, make_directory.
pub mod fileops {
    pub use crate::fileops::{
        delete_file, make_directory, move_file, move_tickets, one_ticket, spawn, DeleteRequest, MkdirRequest, MoveRequest, NameRequest,
    };
}

/// The write guard.
pub mod guard {
    pub use crate::guard::Guard;
}

/// list_files.
pub mod list {
    pub use crate::list::{list_files, ListOptions};
    pub use crate::walk::parse_start;
}

/// search_files.
pub mod search {
    pub use crate::search::{check_arguments, search_files, SearchOptions};
    pub use crate::walk::parse_start;
}

/// Previews of writing calls, the host's approval rules, sandbox-denial hints.
pub mod approval {
    pub use crate::approval::{denial_hint, preview, Decision, DenialHint, Preview, Rule, Rules, SandboxState};
}

/// The command policy.
pub mod policy {
    pub use crate::policy::{check_command, Policy, DEFAULT_DENY_COMMANDS};
}

/// What the process tools share: the host's options as JSON, the reaper, the output caps.
pub mod process {
    pub use crate::host_config::{MAX_OUTPUT_CAP, RESERVED_ENV};
    pub use crate::json::from_json;
    pub use crate::process::{pidfd_available, Reaper};
}

/// run_command.
pub mod command {
    pub use crate::command::{check_request, run_command, CommandOptions, CommandOutput, CommandRequest};
}

/// run_tests.
pub mod testrun {
    pub use crate::testrun::{check_request, run_tests, TestsOptions, TestsOutput, TestsRequest};
}

/// node_process.
pub mod node {
    pub use crate::node::{check_request, node_process, NodeOptions, NodeOutput, NodeRequest};
}

/// The process sessions.
pub mod session {
    pub use crate::session::table::{ProcessList, ProcessOutput};
    pub use crate::session::{check_start, ProcessTable, ReadRequest, SessionOptions, StartRequest};
}

/// The sandbox: its options, features, resource limits, grants and ports; the network allowlist.
pub mod sandbox {
    pub use crate::proxy::Allowlist;
    pub use crate::sandbox::resources::{MAX_PROCESSES, MIN_MEMORY_BYTES};
    pub use crate::sandbox::{canonical_grant, Features, GrantRequest, Limits, LimitsOption, SandboxOptions};

    /// Approved grant paths, pinned.
    pub mod grants {
        pub use crate::sandbox::grants::{pin, release};
    }

    /// The sessions' ports.
    pub mod ports {
        pub use crate::sandbox::ports::register;
    }
}
