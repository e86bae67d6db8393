//! The JSON forms the binding passes through, where they are not the Rust ones: the host's
//! options of a process tool (a JSON object, camelCase keys, undefined keys left out; a number
//! must be a whole, non-negative one that a JS number holds exactly) and counts in results
//! (always a JS number, never a BigInt).

use std::ffi::OsString;
use std::time::Duration;

use serde::de::{Deserialize, Deserializer, Error};
use serde::Serializer;

/// Largest whole number a JS number holds exactly.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

/// A whole number (JS numbers arrive as doubles or integers).
pub fn whole<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    let v = f64::deserialize(d)?;
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v <= MAX_SAFE {
        Ok(v as u64)
    } else {
        Err(D::Error::custom(format_args!("expected a non-negative integer, got {v}")))
    }
}

/// Largest duration a host may configure, in milliseconds (about 49.7 days).
pub const MAX_MILLIS: u64 = u32::MAX as u64;

/// Milliseconds, at most [`MAX_MILLIS`].
pub fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let ms = whole(d)?;
    if ms > MAX_MILLIS {
        return Err(D::Error::custom(format_args!("a duration must be at most {MAX_MILLIS} ms, got {ms}")));
    }
    Ok(Duration::from_millis(ms))
}

/// An optional duration in whole milliseconds (`null` or absent: `None`).
pub fn millis_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    match Option::<serde_json::Value>::deserialize(d)? {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(v) => millis(v).map(Some).map_err(D::Error::custom),
    }
}

/// A byte count.
pub fn bytes<'de, D: Deserializer<'de>>(d: D) -> Result<usize, D::Error> {
    whole(d).and_then(|n| usize::try_from(n).map_err(D::Error::custom))
}

/// A string as an `OsString` (PATH).
pub fn os_string<'de, D: Deserializer<'de>>(d: D) -> Result<OsString, D::Error> {
    String::deserialize(d).map(Into::into)
}

/// An optional string as an `OsString`.
pub fn os_string_opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<OsString>, D::Error> {
    Option::<String>::deserialize(d).map(|s| s.map(Into::into))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Var {
    name: String,
    value: String,
}

/// `[{ name, value }]`, in order.
pub fn env<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
    Ok(Vec::<Var>::deserialize(d)?.into_iter().map(|v| (v.name, v.value)).collect())
}

/// One of a fixed set of names (`what` says which in the message).
pub fn named<'de, D: Deserializer<'de>, T>(d: D, what: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    parse(&s).ok_or_else(|| D::Error::custom(format_args!("unknown {what} {s:?}")))
}

/// The host's options of a process tool from the binding's JSON, checked (`validate`): `Err`
/// holds the message for the host.
pub fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value, validate: impl FnOnce(&T) -> Result<(), String>) -> Result<T, String> {
    let opts: T = serde_json::from_value(value).map_err(|e| e.to_string())?;
    validate(&opts)?;
    Ok(opts)
}

/// A count in a result, as a signed integer: napi turns a `u64` above `u32::MAX` into a BigInt,
/// which a JS number field must never be, and an `i64` into a number (serde_json keeps it the
/// same non-negative integer). `#[serde(serialize_with = "crate::json::number")]`.
pub fn number<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_i64(i64::try_from(*n).unwrap_or(i64::MAX))
}

/// A JSON value whose integers serialize as `i64` (a JS number through napi, the same integer
/// through serde_json) where a `u64` above `u32::MAX` would become a BigInt: an error's details.
pub fn value<S: Serializer>(v: &serde_json::Value, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize as _;
    struct Js<'a>(&'a serde_json::Value);
    impl serde::Serialize for Js<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            value(self.0, s)
        }
    }
    match v {
        serde_json::Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => s.serialize_i64(i),
            (None, Some(u)) => s.serialize_f64(u as f64),
            _ => n.serialize(s),
        },
        serde_json::Value::Array(a) => s.collect_seq(a.iter().map(Js)),
        serde_json::Value::Object(o) => s.collect_map(o.iter().map(|(k, v)| (k, Js(v)))),
        other => other.serialize(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn details_numbers_stay_the_same_integers() {
        let v = serde_json::json!({ "max": 8_589_934_592u64, "list": [1, -2, 2.5], "s": "x", "n": null });
        struct W<'a>(&'a serde_json::Value);
        impl serde::Serialize for W<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                value(self.0, s)
            }
        }
        assert_eq!(serde_json::to_value(W(&v)).unwrap(), v);
    }

    #[test]
    fn host_numbers_must_be_whole_and_non_negative() {
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "whole")]
            n: u64,
        }
        let n = |v: serde_json::Value| serde_json::from_value::<T>(serde_json::json!({ "n": v })).map(|t| t.n).map_err(|e| e.to_string());
        assert_eq!(n(serde_json::json!(5)), Ok(5));
        assert_eq!(n(serde_json::json!(8_589_934_592.0)), Ok(8_589_934_592));
        assert!(n(serde_json::json!(1.5)).unwrap_err().contains("non-negative integer"));
        assert!(n(serde_json::json!(-1)).is_err());
        assert!(n(serde_json::json!("5")).is_err());
    }

    #[test]
    fn host_durations_are_capped() {
        #[derive(serde::Deserialize)]
        struct T {
            #[serde(deserialize_with = "millis")]
            t: Duration,
        }
        let t = |v: u64| serde_json::from_value::<T>(serde_json::json!({ "t": v })).map(|t| t.t).map_err(|e| e.to_string());
        assert_eq!(t(MAX_MILLIS), Ok(Duration::from_millis(MAX_MILLIS)));
        assert!(t(MAX_MILLIS + 1).unwrap_err().contains("at most 4294967295 ms"));
    }
}
