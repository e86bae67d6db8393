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
//! - [`sandbox`]: OS confinement (Landlock, PID namespaces, Node's permission model) for every
//!   process a tool starts.

pub mod approval;
pub mod cancel;
pub mod checkpoint;
pub mod diff;
pub mod command;
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
pub mod proxy;
pub mod read;
pub mod root;
pub mod sandbox;
pub mod search;
pub mod session;
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
