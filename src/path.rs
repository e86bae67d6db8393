use napi::bindgen_prelude::Utf16String;
use napi_derive::napi;

use crate::convert::{strict_string, throw};

/// Applies the path grammar and returns the normalized path; throws (message: the tool error's
/// JSON) with `TOOL_ARGUMENTS_INVALID` / `INVALID_RELATIVE_PATH` or `INVALID_UNICODE`.
#[napi]
pub fn normalize_path(path: Utf16String) -> napi::Result<String> {
    strict_string(path)
        .and_then(|p| workcell_core::api::parse_path(&p))
        .map(|p| p.as_str().to_string())
        .map_err(throw)
}
