use std::sync::Arc;

use napi_derive::napi;
use workcell_core::api::{Cancel, Workspace};

use crate::convert::throw;

/// A cancellation handle the JS layer triggers from an AbortSignal's `abort` event.
#[napi]
pub struct CancelHandle {
    pub(crate) inner: Cancel,
}

#[napi]
impl CancelHandle {
    #[napi(constructor)]
    pub fn new() -> Self {
        CancelHandle { inner: Cancel::new() }
    }

    #[napi]
    pub fn cancel(&self) {
        self.inner.cancel();
    }

    #[napi(getter)]
    pub fn cancelled(&self) -> bool {
        self.inner.is_cancelled()
    }
}

impl Default for CancelHandle {
    fn default() -> Self {
        Self::new()
    }
}

pub(crate) fn cancel_of(handle: Option<&CancelHandle>) -> Cancel {
    handle.map(|h| h.inner.clone()).unwrap_or_default()
}

/// An open, identified workspace root.
#[napi]
pub struct NativeWorkspace {
    pub(crate) ws: Arc<Workspace>,
}

#[napi]
impl NativeWorkspace {
    /// Canonicalizes and opens `root`. Throws an Error whose message is the JSON of the tool
    /// error.
    #[napi(constructor)]
    pub fn new(root: String) -> napi::Result<Self> {
        Workspace::open(&root).map(|ws| NativeWorkspace { ws: Arc::new(ws) }).map_err(throw)
    }

    /// The canonical path of the root.
    #[napi(getter)]
    pub fn canonical(&self) -> String {
        self.ws.canonical().to_string_lossy().into_owned()
    }
}
