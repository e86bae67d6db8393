//! The core's integration tests, one binary: each module is the tests of one concern, through
//! the crate's public API, on a real tokio runtime where they need one.
//!
//! One binary, not one per file: each test binary links the whole crate and its dependencies
//! again (about half a minute of thin LTO apiece), so a binary per concern made the test build
//! several minutes longer (the `ci-test` profile `npm test` builds them with has no LTO, and
//! one binary still links faster than several). The harness still runs tests two at a time
//! (its default on two cores), as before. `tests/sandbox.rs` stays a binary of its own: one of
//! its tests raises the process's core-dump limit, which must not reach the processes the other
//! tests start.
//! Run one concern with `cargo test -p workcell-core --profile ci-test --test integration resource_limits::`.

#[path = "../common/mod.rs"]
mod common;

mod checkpoint;
mod command;
mod contract;
mod resource_limits;
mod list_search;
mod module_cycles;
mod node;
mod page;
mod patch_corpus;
mod path_grammar;
mod policy_differential;
mod process;
mod progress;
mod proxy_reach;
mod read;
mod read_only;
mod run_tests;
mod sessions;
mod stage;
mod write;
