//! Cancellation shared between the host (which triggers it from an `AbortSignal`) and the
//! operation (which polls it between steps or awaits it while a process runs). It also carries
//! the call's [`Progress`], so every step that can see the cancellation can report to a host
//! that watches (a no-op when none does).

use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};
use crate::progress::Progress;

/// A cancellation flag, and the progress of the call it belongs to. Cloning shares both.
#[derive(Clone, Debug, Default)]
pub struct Cancel(CancellationToken, Progress);

impl Cancel {
    pub fn new() -> Self {
        Cancel(CancellationToken::new(), Progress::default())
    }

    /// The same cancellation, for one call whose progress `progress` is.
    pub fn with_progress(&self, progress: Progress) -> Self {
        Cancel(self.0.clone(), progress)
    }

    /// The call's progress (unwatched unless the host asked for it).
    pub fn progress(&self) -> &Progress {
        &self.1
    }

    pub fn cancel(&self) {
        self.0.cancel();
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    /// `Err(cancelled)` once cancelled.
    pub fn check(&self) -> Result<()> {
        if self.is_cancelled() {
            Err(Error::cancelled())
        } else {
            Ok(())
        }
    }

    /// Resolves when cancelled.
    pub async fn cancelled(&self) {
        self.0.cancelled().await
    }
}
