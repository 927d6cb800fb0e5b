//! Decoding the `checkfu.capabilities` declaration off the wire, before it is judged.
//!
//! The decoder is a serde `Deserialize` implementation whose only job is to keep the wire's
//! shape: every member name in wire order (duplicates included) and, per member, either its
//! string value or the JSON type it had instead. It never fails on shape, so that every
//! shape fault becomes a typed [`super::AdmissionError`] naming the member, rather than an
//! opaque serde message. Judging the members against the generated vocabulary happens in
//! [`super::admit`].
//!
//! Going through serde instead of walking a `serde_json::Value` by hand means the same type
//! decodes straight from wire bytes too, where a duplicated member is still visible (a
//! `Value` has already collapsed duplicates, keeping the last).

use std::fmt;

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The JSON type a value had, for messages that say what was found instead of a string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonType {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }

    /// The type of a decoded `serde_json::Value`.
    pub fn of(value: &serde_json::Value) -> JsonType {
        match value {
            serde_json::Value::Null => JsonType::Null,
            serde_json::Value::Bool(_) => JsonType::Boolean,
            serde_json::Value::Number(_) => JsonType::Number,
            serde_json::Value::String(_) => JsonType::String,
            serde_json::Value::Array(_) => JsonType::Array,
            serde_json::Value::Object(_) => JsonType::Object,
        }
    }
}

impl fmt::Display for JsonType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One member value as it appeared: a string, or the type it had instead.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireValue {
    Text(String),
    Other(JsonType),
}

/// The declaration object as it appeared, or the type it had instead of an object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WireDeclaration {
    Members(Vec<(String, WireValue)>),
    NotAnObject(JsonType),
}

/// Accepts any JSON value and reports its shape; nested containers are drained unread
/// because a declaration member is only ever a string.
struct ShapeVisitor;

impl<'de> Visitor<'de> for ShapeVisitor {
    type Value = WireValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Boolean))
    }

    fn visit_i64<E>(self, _: i64) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Number))
    }

    fn visit_u64<E>(self, _: u64) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Number))
    }

    fn visit_f64<E>(self, _: f64) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<WireValue, E> {
        Ok(WireValue::Text(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<WireValue, E> {
        Ok(WireValue::Text(v))
    }

    fn visit_unit<E>(self) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Null))
    }

    fn visit_none<E>(self) -> Result<WireValue, E> {
        Ok(WireValue::Other(JsonType::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<WireValue, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireValue, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(WireValue::Other(JsonType::Array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireValue, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(WireValue::Other(JsonType::Object))
    }
}

impl<'de> Deserialize<'de> for WireValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

/// Like [`ShapeVisitor`], except that an object is kept member by member.
struct DeclarationVisitor;

impl<'de> Visitor<'de> for DeclarationVisitor {
    type Value = WireDeclaration;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WireDeclaration, A::Error> {
        let mut members = Vec::new();
        while let Some((name, value)) = map.next_entry::<String, WireValue>()? {
            members.push((name, value));
        }
        Ok(WireDeclaration::Members(members))
    }

    fn visit_bool<E>(self, _: bool) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Boolean))
    }

    fn visit_i64<E>(self, _: i64) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Number))
    }

    fn visit_u64<E>(self, _: u64) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Number))
    }

    fn visit_f64<E>(self, _: f64) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Number))
    }

    fn visit_str<E>(self, _: &str) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::String))
    }

    fn visit_unit<E>(self) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Null))
    }

    fn visit_none<E>(self) -> Result<WireDeclaration, E> {
        Ok(WireDeclaration::NotAnObject(JsonType::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<WireDeclaration, D::Error> {
        d.deserialize_any(DeclarationVisitor)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireDeclaration, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(WireDeclaration::NotAnObject(JsonType::Array))
    }
}

impl<'de> Deserialize<'de> for WireDeclaration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DeclarationVisitor)
    }
}

impl WireDeclaration {
    /// Decodes an already parsed value. A `serde_json::Value` deserializer cannot fail on
    /// shape with these visitors, but the error path is kept rather than unwrapped.
    pub fn from_value(value: &serde_json::Value) -> WireDeclaration {
        WireDeclaration::deserialize(value).unwrap_or(WireDeclaration::NotAnObject(JsonType::of(value)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keeps_members_in_wire_order_with_their_shapes() {
        let decoded = WireDeclaration::from_value(&json!({
            "steer": "native", "subagents": 1, "x": null, "y": [1, 2], "z": {"a": 1}, "b": true
        }));
        assert_eq!(
            decoded,
            WireDeclaration::Members(vec![
                ("steer".into(), WireValue::Text("native".into())),
                ("subagents".into(), WireValue::Other(JsonType::Number)),
                ("x".into(), WireValue::Other(JsonType::Null)),
                ("y".into(), WireValue::Other(JsonType::Array)),
                ("z".into(), WireValue::Other(JsonType::Object)),
                ("b".into(), WireValue::Other(JsonType::Boolean)),
            ])
        );
    }

    #[test]
    fn reports_the_type_of_a_non_object() {
        for (value, found) in [
            (json!(null), JsonType::Null),
            (json!("observed"), JsonType::String),
            (json!(["steer"]), JsonType::Array),
            (json!(7), JsonType::Number),
            (json!(false), JsonType::Boolean),
        ] {
            assert_eq!(WireDeclaration::from_value(&value), WireDeclaration::NotAnObject(found));
        }
    }

    #[test]
    fn wire_bytes_keep_duplicated_members_that_a_value_would_collapse() {
        let decoded: WireDeclaration = serde_json::from_str(r#"{"steer": "native", "steer": "native"}"#).expect("valid JSON");
        assert_eq!(
            decoded,
            WireDeclaration::Members(vec![
                ("steer".into(), WireValue::Text("native".into())),
                ("steer".into(), WireValue::Text("native".into())),
            ])
        );
    }
}
