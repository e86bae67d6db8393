//! Conversions between core types and JS values.

use napi::bindgen_prelude::Utf16String;
use napi_derive::napi;
use workcell_core::api::Error;

/// A recoverable tool error (or a cancellation, code `ABORTED`), as plain data.
#[napi(object)]
pub struct NativeError {
    pub code: String,
    pub message: String,
    pub hint: Option<String>,
    /// JSON text of the structured details, when there are any.
    pub details: Option<String>,
}

impl From<Error> for NativeError {
    fn from(e: Error) -> Self {
        NativeError {
            code: e.code.as_str().to_string(),
            message: e.message,
            hint: e.hint,
            details: e.details.map(|d| d.to_string()),
        }
    }
}

/// A thrown error whose message is the JSON of the tool error (for constructors, which
/// cannot resolve to a value).
pub fn throw(e: Error) -> napi::Error {
    let ne = NativeError::from(e);
    let json = serde_json::json!({
        "code": ne.code, "message": ne.message, "hint": ne.hint,
        "details": ne.details.and_then(|d| serde_json::from_str::<serde_json::Value>(&d).ok()),
    });
    napi::Error::from_reason(json.to_string())
}

/// A string from JS, refusing lone surrogates (which the UTF-8 conversion would silently
/// turn into U+FFFD).
pub fn strict_string(s: Utf16String) -> workcell_core::api::Result<String> {
    workcell_core::api::from_utf16(&s)
}

/// Strings from JS, each through [`strict_string`].
pub fn strict_strings(v: Vec<Utf16String>) -> workcell_core::api::Result<Vec<String>> {
    v.into_iter().map(strict_string).collect()
}

/// One entry of `expectedHashes`.
#[napi(object, object_to_js = false)]
pub struct PathHash {
    pub path: Utf16String,
    pub hash: String,
}

/// The approved hashes of a writing call, by path.
pub(crate) fn expected_of(expected: Option<Vec<PathHash>>) -> workcell_core::api::Result<Vec<(String, String)>> {
    expected.unwrap_or_default().into_iter().map(|e| Ok((strict_string(e.path)?, e.hash))).collect()
}
