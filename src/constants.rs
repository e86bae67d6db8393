//! The core's limits and defaults, for the TS layer's schemas, descriptions and option type
//! checks (read at load: never typed a second time).

use napi_derive::napi;

/// Largest output cap a host may configure for a process tool.
#[napi]
pub const MAX_OUTPUT_CAP: u32 = workcell_core::api::process::MAX_OUTPUT_CAP as u32;

/// Largest `maxContentBytes` of write_file and edit_file.
#[napi]
pub const MAX_WRITE_BYTES_CEILING: u32 = workcell_core::api::write::MAX_WRITE_BYTES_CEILING as u32;

/// write_file's default content limit.
#[napi]
pub const MAX_WRITE_BYTES: u32 = workcell_core::api::write::MAX_WRITE_BYTES as u32;

/// The variables the process tools set themselves (a host cannot pass them through).
#[napi]
pub fn reserved_env() -> Vec<String> {
    workcell_core::api::process::RESERVED_ENV.iter().map(|s| s.to_string()).collect()
}

/// Most processes `limits.processes` may allow.
#[napi]
pub const SANDBOX_MAX_PROCESSES: u32 = workcell_core::api::sandbox::MAX_PROCESSES as u32;

/// Smallest `limits.memoryBytes` (64 MiB: less does not start Node).
#[napi]
pub const SANDBOX_MIN_MEMORY_BYTES: u32 = workcell_core::api::sandbox::MIN_MEMORY_BYTES as u32;
