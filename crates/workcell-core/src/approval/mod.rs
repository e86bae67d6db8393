//! A person in the loop: what the approval gate of the tools needs from the core.
//!
//! - [`preview`]: the change a writing call would make, computed without any effect (no lock,
//!   no directory created): a one-line `summary`, the bounded unified `diff` and the approval
//!   string of every file the change was computed on (`files`). The approved call then runs
//!   with those strings as its expected hashes, compared under the targets' locks, so the
//!   change applied is the change shown (`TARGET_CHANGED` otherwise, nothing written).
//! - [`rules`]: the host's rules (`tool`, `argv` pattern, `path` glob), first match wins.
//! - [`denials`]: what a confined process's failed output says the sandbox refused, and the
//!   next step for the model.

pub mod denials;
pub mod preview;
pub mod rules;

pub use denials::{denial_hint, Denial, DenialHint, SandboxState};
pub use preview::Preview;
pub use rules::{Decision, Rule, Rules};
