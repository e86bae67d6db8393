use napi::bindgen_prelude::{Object, Utf16String};
use napi::Env;
use napi_derive::napi;
use workcell_core::api::pool::Lane;
use workcell_core::api::Workspace;

use crate::convert::strict_string;
use crate::outcome::on_pool;
use crate::workspace::{cancel_of, CancelHandle};

/// hashFile(root, path): resolves to `{ ok: hash }` (`"absent"`, `"not a regular file: <type>"`
/// or the hex SHA-256 of the content) or to `{ error }`; never rejects. Opens the root, hashes
/// and closes the root again within the call, so that a host hashing many paths never
/// accumulates open descriptors waiting for garbage collection.
#[napi(ts_return_type = "Promise<C.Outcome<string>>")]
pub fn hash_file<'env>(env: &'env Env, root: String, path: Utf16String, cancel: Option<&CancelHandle>) -> napi::Result<Object<'env>> {
    let (path, cancel) = (strict_string(path), cancel_of(cancel));
    on_pool(env, Lane::File, move || {
        let rel = workcell_core::api::parse_path(&path?)?;
        cancel.check()?;
        let ws = Workspace::open(&root)?;
        workcell_core::api::hash::hash_file(&ws, &rel, &cancel)
    })
}
