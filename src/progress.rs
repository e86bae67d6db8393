//! Progress of a running call (contract §18): conversion only. A call watched by the host gets
//! its own [`CancelHandle`], made with [`CancelHandle::watching`]; the host takes the core's
//! updates from it on its own thread ([`CancelHandle::take_progress`]), so the core never waits
//! on JavaScript.

use napi_derive::napi;
use workcell_core::api::progress::{Progress, Update};
use workcell_core::api::Cancel;

use crate::workspace::CancelHandle;

/// One progress update (the exported `Progress` type).
#[napi(object)]
pub struct ProgressUpdate {
    pub elapsed_ms: f64,
    pub message: String,
    pub progress: Option<f64>,
    pub total: Option<f64>,
    pub output: Option<String>,
}

impl From<Update> for ProgressUpdate {
    fn from(u: Update) -> Self {
        ProgressUpdate {
            elapsed_ms: u.elapsed_ms as f64,
            message: u.message,
            progress: u.progress.map(|p| p as f64),
            total: u.total.map(|t| t as f64),
            output: u.output,
        }
    }
}

#[napi]
impl CancelHandle {
    /// A handle for one call whose progress the host watches (its clock starts now).
    #[napi(factory)]
    pub fn watching() -> Self {
        CancelHandle { inner: Cancel::new().with_progress(Progress::watched()) }
    }

    /// The next update: `null` when nothing changed, within 250 ms of the last one, or after
    /// `endProgress`.
    #[napi]
    pub fn take_progress(&self) -> Option<ProgressUpdate> {
        self.inner.progress().take().map(ProgressUpdate::from)
    }

    /// The call has settled: no update after this.
    #[napi]
    pub fn end_progress(&self) {
        self.inner.progress().end();
    }
}
