//! Cancellation shared between the host (which triggers it from an `AbortSignal`) and the
//! operation (which polls it between steps or awaits it while a process runs).

use tokio_util::sync::CancellationToken;

use crate::error::{Error, Result};

/// A cancellation flag. Cloning shares it.
#[derive(Clone, Debug, Default)]
pub struct Cancel(CancellationToken);

impl Cancel {
    pub fn new() -> Self {
        Cancel(CancellationToken::new())
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
