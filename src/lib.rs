//! The napi binding: converts arguments, calls workcell-core, maps errors to codes.
//! No decision about paths, limits or processes is made here.

#![deny(clippy::all)]

mod approval;
mod checkpoint;
mod command;
mod convert;
mod edit;
mod fileops;
mod guard;
mod hash;
mod js;
mod constants;
mod list;
mod outcome;
mod patch;
mod path;
mod policy;
mod node;
mod process_tool;
mod read;
mod search;
mod session;
mod stage;
mod settle;
mod run_tests;
mod sandbox;
mod workspace;
mod write;
// After `workspace`: it adds methods to `CancelHandle`.
mod progress;

pub use convert::NativeError;
pub use workspace::{CancelHandle, NativeWorkspace};
