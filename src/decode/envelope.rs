//! The JSON-RPC envelope, read without building a tree: members borrow the input, `params`,
//! `result` and `error` stay raw until the policy needs them, and everything a table does
//! not ask for is skipped. This is what keeps the decoder near the cost of parsing.

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

/// Maximum nesting of arrays and objects in one message. ACP messages nest a handful of
/// levels; a hostile line must not cost stack.
pub const MAX_DEPTH: usize = 64;

/// A present member, `null` included (serde's `Option` would turn `null` into absent,
/// and `"result": null` is a valid JSON-RPC result).
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// The members JSON-RPC 2.0 allows; anything else is an envelope error.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope<'a> {
    #[serde(default, borrow, deserialize_with = "present")]
    pub jsonrpc: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub params: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub result: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

/// The `_meta` of a message part, and for `session/update` its member.
#[derive(Deserialize)]
pub struct Part<'a> {
    #[serde(default, borrow, rename = "_meta", deserialize_with = "present")]
    pub meta: Option<&'a RawValue>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub update: Option<&'a RawValue>,
    #[serde(default, borrow, rename = "sessionUpdate")]
    pub session_update: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "stopReason")]
    pub stop_reason: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "protocolVersion", deserialize_with = "present")]
    pub protocol_version: Option<&'a RawValue>,
}

/// The JSON-RPC error object.
#[derive(Deserialize)]
pub struct ErrorObject<'a> {
    pub code: i64,
    #[serde(borrow)]
    pub message: Cow<'a, str>,
}

/// Deepest nesting of arrays and objects, scanning bytes (strings skipped), stopping as
/// soon as `limit` is passed.
pub fn depth_exceeds(bytes: &[u8], limit: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limit {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_scan_skips_strings() {
        assert!(!depth_exceeds(br#"{"a": "[[[[[[[[[["}"#, 2));
        assert!(depth_exceeds(b"[[[1]]]", 2));
        assert!(!depth_exceeds(b"[[1],[2]]", 2));
        assert!(!depth_exceeds(br#"["\"[[[["]"#, 1));
    }

    #[test]
    fn null_members_stay_present() {
        let e: Envelope = serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).expect("parses");
        assert_eq!(e.result.map(RawValue::get), Some("null"));
        assert!(e.error.is_none());
    }
}
