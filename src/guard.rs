use std::sync::Arc;

use napi_derive::napi;
use workcell_core::api::guard::Guard;

/// A compiled write guard (protected globs, links refused), shared by a workspace's writing
/// tools. The decisions are made in workcell-core.
#[napi]
pub struct WriteGuard {
    pub(crate) inner: Arc<Guard>,
}

#[napi]
impl WriteGuard {
    /// Compiles the globs; throws a TypeError naming an invalid one.
    #[napi(constructor)]
    pub fn new(protect: Vec<String>, refuse_links: bool) -> napi::Result<Self> {
        Guard::new(&protect, refuse_links)
            .map(|g| WriteGuard { inner: Arc::new(g) })
            .map_err(|m| napi::Error::new(napi::Status::InvalidArg, format!("workcell: {m}")))
    }
}

pub(crate) fn guard_of(guard: Option<&WriteGuard>) -> Option<Arc<Guard>> {
    guard.map(|g| g.inner.clone())
}
