//! The JSON-RPC envelope, read in one pass without building a tree: names borrow the
//! input, `_meta` objects stay raw until the policy needs them, and every member no table
//! asks about is skipped. Only the small messages of extension methods with typed params
//! or results are parsed again, into a `Value` for their generated decoders. This is what
//! keeps the decoder near the cost of parsing.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

use super::tables::META_NAMESPACE;
use crate::exact::Json;

/// Maximum nesting of arrays and objects in one message: serde_json's recursion limit,
/// which every recursive parse here runs under (members are skipped by `Skip`, which
/// recurses through the parser rather than around it, so the limit holds for them too).
/// ACP messages nest a handful of levels; a hostile line must not cost stack.
pub const MAX_DEPTH: usize = 128;

/// The visitor methods of a value that only objects carry parts of: a scalar or an array
/// is skipped (arrays through `Skip`, so their nesting stays guarded) and reads as empty.
macro_rules! non_objects_read_as {
    ($empty:expr, $ty:ty) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<$ty, A::Error> {
            while seq.next_element::<Skip>()?.is_some() {}
            Ok($empty)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_str<E>(self, _: &str) -> Result<$ty, E> {
            Ok($empty)
        }
        fn visit_unit<E>(self) -> Result<$ty, E> {
            Ok($empty)
        }
    };
}

/// Skips any JSON value through the parser's recursive path, so that serde_json's
/// recursion limit rejects hostile nesting even in members nobody reads. (serde's
/// `IgnoredAny` takes serde_json's iterative fast path, which has no limit.)
pub struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_entry::<IgnoredAny, Skip>()?.is_some() {}
        Ok(Skip)
    }
    non_objects_read_as!(Skip, Skip);
}

/// A string that borrows from the input when it has no escapes. (serde's own `Cow<str>`
/// always copies; only the derive's `#[serde(borrow)]` borrows, and the hand-written
/// visitors here need the same on every key and value they keep.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Text<'a>(pub Cow<'a, str>);

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Text<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TextVisitor;
        impl<'de> Visitor<'de> for TextVisitor {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_string())))
            }
            fn visit_string<E>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        deserializer.deserialize_str(TextVisitor)
    }
}

/// A present member, `null` included (serde's `Option` would turn `null` into absent,
/// and `"result": null` is a valid JSON-RPC result).
pub fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

fn present_body<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Body<'de>>, D::Error> {
    Body::deserialize(d).map(Some)
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
    #[serde(default, borrow, deserialize_with = "present_body")]
    pub params: Option<Body<'a>>,
    #[serde(default, borrow, deserialize_with = "present_body")]
    pub result: Option<Body<'a>>,
    #[serde(default, borrow, deserialize_with = "present")]
    pub error: Option<&'a RawValue>,
}

/// The parts of `params`, `result` or a session update member the policy reads. Any JSON
/// value is accepted: a non-object simply has none of these parts.
#[derive(Default)]
pub struct Body<'a> {
    pub meta: Option<Meta<'a>>,
    pub update: Option<Member<'a>>,
    pub session_update: Option<Text<'a>>,
    pub stop_reason: Option<Text<'a>>,
    pub protocol_version: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Body<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(BodyVisitor)
    }
}

struct BodyVisitor;

fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, name: &'static str) -> Result<(), E> {
    if slot.is_some() {
        return Err(E::duplicate_field(name));
    }
    *slot = Some(value);
    Ok(())
}

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = Body<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Body<'de>, A::Error> {
        let mut body = Body::default();
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key {
                "_meta" => once(&mut body.meta, map.next_value()?, "_meta")?,
                "update" => once(&mut body.update, map.next_value()?, "update")?,
                "sessionUpdate" => once(&mut body.session_update, map.next_value()?, "sessionUpdate")?,
                "stopReason" => once(&mut body.stop_reason, map.next_value()?, "stopReason")?,
                "protocolVersion" => once(&mut body.protocol_version, map.next_value()?, "protocolVersion")?,
                _ => {
                    map.next_value::<Skip>()?;
                }
            }
        }
        Ok(body)
    }

    non_objects_read_as!(Body::default(), Body<'de>);
}

/// A session update member: its kind and its `_meta`, nothing else read.
#[derive(Default)]
pub struct Member<'a> {
    pub is_object: bool,
    pub meta: Option<Meta<'a>>,
    pub session_update: Option<Text<'a>>,
}

impl<'de> Deserialize<'de> for Member<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MemberVisitor;
        impl<'de> Visitor<'de> for MemberVisitor {
            type Value = Member<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a session update member")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Member<'de>, A::Error> {
                let mut member = Member { is_object: true, ..Member::default() };
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    match &*key {
                        "_meta" => once(&mut member.meta, map.next_value()?, "_meta")?,
                        "sessionUpdate" => once(&mut member.session_update, map.next_value()?, "sessionUpdate")?,
                        _ => {
                            map.next_value::<Skip>()?;
                        }
                    }
                }
                Ok(member)
            }
            non_objects_read_as!(Member::default(), Member<'de>);
        }
        deserializer.deserialize_any(MemberVisitor)
    }
}

/// The members of a `_meta` object, read in the same pass as the envelope: the value of
/// every `checkfu.*` member is parsed into the borrowed tree its generated check reads,
/// other namespaces' members are skipped (they are not ours to judge).
#[derive(Default)]
pub struct Meta<'a>(pub Vec<(Text<'a>, Option<Json<'a>>)>);

impl<'de> Deserialize<'de> for Meta<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MetaVisitor;
        impl<'de> Visitor<'de> for MetaVisitor {
            type Value = Meta<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a `_meta` object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Meta<'de>, A::Error> {
                let mut members: Vec<(Text<'de>, Option<Json<'de>>)> = Vec::new();
                while let Some(key) = map.next_key::<Text<'de>>()? {
                    if members.iter().any(|(k, _)| *k == key) {
                        return Err(de::Error::custom(format!("duplicate `_meta` member `{key}`")));
                    }
                    let value = if key.starts_with(META_NAMESPACE) {
                        Some(map.next_value::<Json<'de>>()?)
                    } else {
                        map.next_value::<Skip>()?;
                        None
                    };
                    members.push((key, value));
                }
                Ok(Meta(members))
            }
            fn visit_unit<E>(self) -> Result<Meta<'de>, E> {
                Ok(Meta(Vec::new()))
            }
        }
        deserializer.deserialize_any(MetaVisitor)
    }
}

/// The JSON-RPC error object.
#[derive(Deserialize)]
pub struct ErrorObject<'a> {
    pub code: i64,
    #[serde(borrow)]
    pub message: Cow<'a, str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_results_stay_present_and_bodies_read_their_parts() {
        let e: Envelope = serde_json::from_str(r#"{"jsonrpc":"2.0","id":1,"result":null}"#).expect("parses");
        assert!(e.result.as_ref().is_some_and(|b| b.meta.is_none()));
        assert!(e.error.is_none());
        let e: Envelope = serde_json::from_str(
            r#"{"jsonrpc":"2.0","method":"m","params":{"x":[1,{"y":2}],"update":{"sessionUpdate":"plan","_meta":{"k":1}}}}"#,
        )
        .expect("parses");
        let update = e.params.and_then(|p| p.update).expect("update");
        assert_eq!(update.session_update.as_deref(), Some("plan"));
        assert_eq!(update.meta.map(|m| m.0.len()), Some(1));
    }

    #[test]
    fn duplicate_parts_are_errors() {
        assert!(serde_json::from_str::<Body>(r#"{"_meta":{},"_meta":{}}"#).is_err());
        assert!(serde_json::from_str::<Meta>(r#"{"a":1,"a":2}"#).is_err());
        let meta: Meta = serde_json::from_str(r#"{"vendor.x":{"deep":[1]},"checkfu.turn":{"a":"b"}}"#).expect("parses");
        assert!(meta.0[0].1.is_none(), "other namespaces are skipped");
        assert!(meta.0[1].1.as_ref().is_some_and(Json::is_object), "checkfu members are parsed");
    }
}
