//! workcell-core: the confinement engine behind the workcell tools.
//!
//! Pure Rust, no Node.js types. One module per concern:
//! - [`error`]: stable error codes, hints, details;
//! - [`path`]: the path grammar every model-supplied path goes through;
//! - [`root`]: the workspace root, its identity and resolution beneath it;
//! - [`read`]: `read_file`; [`page`]: windows of larger files (`offset` / `limit`);
//! - [`write`]: `write_file`, with [`target_lock`] serializing writes per target;
//! - [`walk`]: the confined directory walk; [`list`]: `list_files`; [`search`]: `search_files`;
//! - [`hash`]: approval hashes (`hashFile`);
//! - [`edit`]: `edit_file`; [`guard`]: the write guard (protected globs, links refused);
//! - [`diff`]: the bounded unified diff `edit_file` and `apply_patch` return;
//! - [`patch`]: `apply_patch` (parser, hunk location, the all-or-nothing plan);
//! - [`fileops`]: `move_file`, `delete_file`, `make_directory`;
//! - [`checkpoint`]: checkpoints: record the workspace, diff it, rewind it all or nothing;
//! - [`stage`]: staged runs: a process's writes kept in an overlay, applied all or nothing;
//! - [`cancel`]: cancellation shared with the host; [`temp_name`]: names of temporary files;
//! - [`pool`]: workcell's own worker threads for blocking file work (never libuv's);
//! - [`policy`]: which commands `run_command` may run (argv and parsed shell scripts);
//! - [`process`]: spawning, capturing, timing out and reaping child processes;
//! - [`node`]: the `node_process` tool;
//! - [`host_config`]: the host-configuration checks the three process tools share;
//! - [`json`]: the JSON forms of the host's process options and of result counts;
//! - [`command`]: the `run_command` tool (and the launch path run_tests shares);
//! - [`testrun`]: the `run_tests` tool (vitest, node --test, go test, cargo test);
//! - [`approval`]: previews of writing calls, the host's approval rules, sandbox-denial hints;
//! - [`api`] (below): what the napi binding uses of all this, in one place;
//! - [`sandbox`]: OS confinement (Landlock, PID namespaces, Node's permission model) for every
//!   process a tool starts.

pub mod approval;
pub mod cancel;
pub mod checkpoint;
pub mod diff;
pub mod command;
pub mod contract;
pub mod edit;
pub mod error;
pub mod fileops;
pub mod guard;
pub mod hash;
pub mod host_config;
pub mod image;
pub mod json;
pub mod list;
pub mod node;
pub mod page;
pub mod patch;
pub mod path;
pub mod pool;
pub mod policy;
pub mod process;
pub mod progress;
pub mod proxy;
pub mod read;
pub mod root;
pub mod sandbox;
pub mod search;
pub mod session;
pub mod stage;
pub mod target_lock;
pub mod temp_name;
pub mod testrun;
pub mod walk;
pub mod write;

pub use cancel::Cancel;
pub use error::{Code, Error, Reason, Result};
pub use path::{parse as parse_path, RelPath};
pub use policy::{check_command, Policy};
pub use root::{Identity, Workspace};

/// The core as the napi binding (the package's `src/`) sees it: every item the binding uses, and
/// nothing else. The binding names the core only through this module (a test checks it), so
/// what the JavaScript side can reach is listed here, grouped by the concern it comes from.
/// Each group re-exports items of the core module of the same name; the decisions stay there.
pub mod api {
    pub use crate::cancel::Cancel;
    pub use crate::error::{Code, Error, Reason, Result};
    pub use crate::path::{from_utf16, parse as parse_path};
    pub use crate::root::Workspace;

    /// Workcell's own worker threads, and the hooks the binding's settling uses.
    pub mod pool {
        pub use crate::pool::{more_work_soon, set_idle_hook, spawn, Lane};
    }

    /// A call's progress while it runs (contract §18).
    pub mod progress {
        pub use crate::progress::{Progress, Update};
    }

    /// Checkpoints: record the workspace, see what changed, rewind it (contract §19).
    pub mod checkpoint {
        pub use crate::checkpoint::{Checkpoints, Options, DEFAULT_MAX_BYTES, DEFAULT_MAX_FILE_BYTES};
    }

    /// Staged runs: apply or discard a staged change (contract §20).
    pub mod stage {
        #[cfg(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64")))]
        pub use crate::stage::apply_staged;
        pub use crate::stage::{discard, group_close, group_len, group_new, preview, AppliedOutput, DiscardedOutput, StagedOutput};
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
        pub use crate::session::table::{ProcessList, ProcessOutput, Written};
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
}
