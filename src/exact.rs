//! Runtime support for the generated schema checks and decoders (`schemas`).
//!
//! A generated check reads a [`Json`] tree (a `_meta` member parsed straight from the
//! wire, or a view of a `Value`); a generated decoder first runs that check, then
//! deserializes into the typify type. [`Invalid`] says where and why a value was rejected.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Number, Value};
use smallvec::SmallVec;

/// A value the schema rejects: a JSON Pointer into the value and a reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// Pointer segments, innermost first (errors are built from the inside out). Property
    /// names known to the schema are static and a few segments are held inline, so a
    /// rejected alternative of an `anyOf` costs no allocation at all.
    segments: SmallVec<[Cow<'static, str>; 3]>,
    pub message: Cow<'static, str>,
}

impl Invalid {
    pub fn new(message: impl Into<Cow<'static, str>>) -> Self {
        Invalid { segments: SmallVec::new(), message: message.into() }
    }

    /// The same error one level further out, under `segment`.
    pub fn at(mut self, segment: impl Into<Cow<'static, str>>) -> Self {
        self.segments.push(segment.into());
        self
    }

    /// RFC 6901 pointer to the offending value.
    pub fn pointer(&self) -> String {
        self.segments.iter().rev().map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1"))).collect()
    }
}

impl fmt::Display for Invalid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pointer = self.pointer();
        let at = if pointer.is_empty() { "the value" } else { pointer.as_str() };
        write!(f, "{at}: {}", self.message)
    }
}

impl std::error::Error for Invalid {}

/// A JSON value as the generated checks read it: strings borrow the text they were parsed
/// from, and objects are their members in order, with no hashing.
///
/// Building a `serde_json::Value` (with `preserve_order`, an `IndexMap` hashed with
/// SipHash) cost the decoder more than the checks themselves; a check only walks the
/// members once, so a vector is all it needs. Parsed from text, the tree holds what
/// `serde_json::from_str::<Value>` would: duplicate keys keep the first position and the
/// last value, and numbers are the same `Number`s.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(Number),
    String(Cow<'a, str>),
    Array(Vec<Json<'a>>),
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    pub fn is_null(&self) -> bool {
        matches!(self, Json::Null)
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, Json::Bool(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, Json::Number(_))
    }

    pub fn is_string(&self) -> bool {
        matches!(self, Json::String(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, Json::Array(_))
    }

    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Json::Bool(b) => Some(*b),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&[Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&[(Cow<'a, str>, Json<'a>)]> {
        match self {
            Json::Object(members) => Some(members),
            _ => None,
        }
    }

    /// The value of member `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        self.as_object()?.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The same tree, owning its strings.
    pub fn into_owned(self) -> Json<'static> {
        match self {
            Json::Null => Json::Null,
            Json::Bool(b) => Json::Bool(b),
            Json::Number(n) => Json::Number(n),
            Json::String(s) => Json::String(Cow::Owned(s.into_owned())),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::into_owned).collect()),
            Json::Object(members) => {
                Json::Object(members.into_iter().map(|(k, v)| (Cow::Owned(k.into_owned()), v.into_owned())).collect())
            }
        }
    }
}

/// A view of a `Value` (for the decoders that take one): strings borrow from it.
impl Json<'_> {
    /// The same value as a `serde_json::Value`, for code that reads one (the safety profile).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => {
                Value::Object(members.iter().map(|(k, v)| (k.to_string(), v.to_value())).collect())
            }
        }
    }
}

impl<'a> From<&'a Value> for Json<'a> {
    fn from(v: &'a Value) -> Self {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::from).collect()),
            Value::Object(map) => Json::Object(map.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from(v))).collect()),
        }
    }
}

/// Parses any JSON value, borrowing strings that need no unescaping.
impl<'de> Deserialize<'de> for Json<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

/// Builds a [`Json`]; the decoder's envelope pass reuses it for bodies it reads whole.
pub(crate) struct JsonVisitor;

/// The key by which serde_json's `Value` smuggles a `RawValue`: an object whose first key
/// is this is read as the JSON text of its string value (only with the `raw_value`
/// feature, which the workspace enables).
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(n.into()))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Json<'de>, E> {
        // As `Value` does: a float with no JSON number (never produced by parsing text) is null.
        Ok(Number::from_f64(f).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s.to_owned())))
    }
    fn visit_string<E>(self, s: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(s)))
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'de>, D::Error> {
        Json::deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let Some(Key(first)) = map.next_key()? else { return Ok(Json::Object(Vec::new())) };
        if first == RAW_VALUE_TOKEN {
            // The checks used to run on a `Value`, which honours the token; so must the tree,
            // or a member could be accepted by one and rejected by the other.
            return raw_value_tree(&mut map);
        }
        let mut members = Members::default();
        members.insert(first, map.next_value()?);
        while let Some(Key(key)) = map.next_key()? {
            let value = map.next_value()?;
            members.insert(key, value);
        }
        Ok(Json::Object(members.list))
    }
}

/// The value of an object whose first key was [`RAW_VALUE_TOKEN`]: the JSON text of the
/// string that follows, as serde_json's `Value` reads it.
pub(crate) fn raw_value_tree<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Json<'de>, A::Error> {
    let text = map.next_value_seed(RawText)?;
    let value: Value = serde_json::from_str(&text).map_err(de::Error::custom)?;
    Ok(Json::from(&value).into_owned())
}

/// An object key, borrowed from the input when it has no escapes.
struct Key<'de>(Cow<'de, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;
        impl<'de> Visitor<'de> for KeyVisitor {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s.to_owned())))
            }
            fn visit_string<E>(self, s: String) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(KeyVisitor)
    }
}

/// The string value under [`RAW_VALUE_TOKEN`].
struct RawText;

impl<'de> DeserializeSeed<'de> for RawText {
    type Value = String;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for RawText {
    type Value = String;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("raw value")
    }
    fn visit_str<E>(self, s: &str) -> Result<String, E> {
        Ok(s.to_owned())
    }
}

/// Past this many members an object's keys are indexed rather than searched, so that a
/// hostile object with many keys costs linear time, not quadratic.
const LINEAR_MEMBERS: usize = 16;

/// Object members in order, a repeated key replacing the earlier value in place, as
/// `serde_json::Map::insert` does with `preserve_order`.
#[derive(Default)]
pub(crate) struct Members<'de> {
    list: Vec<(Cow<'de, str>, Json<'de>)>,
    index: Option<HashMap<Cow<'de, str>, usize>>,
}

impl<'de> Members<'de> {
    pub(crate) fn into_list(self) -> Vec<(Cow<'de, str>, Json<'de>)> {
        self.list
    }

    pub(crate) fn insert(&mut self, key: Cow<'de, str>, value: Json<'de>) {
        let found = match &self.index {
            Some(index) => index.get(key.as_ref()).copied(),
            None => self.list.iter().position(|(k, _)| *k == key),
        };
        if let Some((_, slot)) = found.and_then(|i| self.list.get_mut(i)) {
            *slot = value;
            return;
        }
        if self.index.is_none() && self.list.len() >= LINEAR_MEMBERS {
            self.index = Some(self.list.iter().enumerate().map(|(i, (k, _))| (k.clone(), i)).collect());
        }
        if let Some(index) = &mut self.index {
            index.insert(key.clone(), self.list.len());
        }
        self.list.push((key, value));
    }
}

/// JSON Schema's integer: any number with no fractional part (so `1.0` is one).
pub fn is_integer(v: &Json<'_>) -> bool {
    match v {
        Json::Number(n) => n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0),
        _ => false,
    }
}

/// Numbers compare by value, as JSON Schema's `enum` and `const` do.
pub fn number_equals(v: &Json<'_>, expected: f64) -> bool {
    v.as_f64() == Some(expected)
}

/// Equality of a value with a JSON literal, numbers by value.
pub fn json_equals(v: &Json<'_>, literal: &str) -> bool {
    serde_json::from_str::<Json>(literal).is_ok_and(|expected| same(v, &expected))
}

fn same(a: &Json<'_>, b: &Json<'_>) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b)),
        // Keys are unique on both sides, so equal sizes and every member matched suffice.
        (Json::Object(x), Json::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| b.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// Deserializes a checked value into its generated type. Integers written with a fraction
/// (`1.0`) are valid JSON Schema integers but not valid Rust integers, so on failure the
/// value is retried with integral floats rewritten as integers.
pub fn deserialize<T: DeserializeOwned>(v: &Value) -> Result<T, Invalid> {
    match T::deserialize(v) {
        Ok(t) => Ok(t),
        Err(first) => T::deserialize(&integral(v.clone()))
            .map_err(|_| Invalid::new(format!("does not fit the generated type: {first}"))),
    }
}

fn integral(v: Value) -> Value {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(integral).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, integral(v))).collect()),
        other => other,
    }
}

/// Encodes a decoded value back to JSON.
pub fn encode<T: serde::Serialize>(value: &T) -> Result<Value, Invalid> {
    serde_json::to_value(value).map_err(|e| Invalid::new(format!("cannot re-encode: {e}")))
}

/// One generated definition of an input schema.
#[derive(Clone, Copy)]
pub struct Definition {
    /// Its Rust type name.
    pub name: &'static str,
    /// JSON Pointer, in the input schema, of the schema it was generated from (empty for the
    /// root; hoisted inline schemas point where they were inlined).
    pub origin: &'static str,
    /// The generated check.
    pub check: fn(&Value) -> Result<(), Invalid>,
    /// Decode into the generated type, then encode again.
    pub roundtrip: fn(&Value) -> Result<Value, Invalid>,
}

/// `serde(with)` helpers for `Option<Option<T>>` fields: absent is `None`, `null` is
/// `Some(None)`. Used by generated types for optional properties that admit `null`.
pub mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(value: &Option<Option<T>>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            // Only reached if a caller drops `skip_serializing_if`; absent has no encoding.
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree parsed from text must be the view of the `Value` parsed from the same text,
    /// or a check could decide differently than it did on the `Value`.
    #[test]
    fn parsed_trees_are_views_of_the_value_serde_json_parses() {
        let many: String = (0..40).map(|i| format!("\"k{}\":{i},", i % 25)).collect();
        let cases = [
            r#"null"#,
            r#"[true, false, 0, -0, -0.0, 1.0, 1e2, -7, 18446744073709551615, -9223372036854775808, 1.5e300]"#,
            r#"{"a": 1, "b": {"c": [1, "x\n\u00e9"]}, "a": "last", "d\"q": null}"#,
            r#"{"z": {"y": 1, "y": 2, "x": 3, "y": 4}, "z": {"w": 0}}"#,
            r#"{"$serde_json::private::RawValue": "{\"a\": [1, 2], \"a\": 3}"}"#,
            r#"{"\u0024serde_json::private::RawValue": "\"s\""}"#,
            &format!("{{{many}\"k3\":\"end\"}}"),
        ];
        for text in cases {
            let value: Value = serde_json::from_str(text).expect("valid JSON");
            let json: Json = serde_json::from_str(text).expect("valid JSON");
            assert_eq!(json, Json::from(&value), "{text}");
        }
        for text in [r#"{"$serde_json::private::RawValue": 1}"#, r#"{"$serde_json::private::RawValue": "1", "b": 2}"#, "1e400", "[1,]"] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            assert!(serde_json::from_str::<Json>(text).is_err(), "{text}");
        }
    }

    #[test]
    fn unescaped_strings_borrow_the_input() {
        let json: Json = serde_json::from_str(r#"{"plain": "text", "esc\u0061ped": "a\tb"}"#).expect("valid JSON");
        let members = json.as_object().expect("object");
        assert!(matches!((&members[0].0, &members[0].1), (Cow::Borrowed("plain"), Json::String(Cow::Borrowed("text")))));
        assert!(matches!((&members[1].0, &members[1].1), (Cow::Owned(_), Json::String(Cow::Owned(_)))));
    }

    #[test]
    fn literals_compare_numbers_by_value_and_objects_by_members() {
        let json: Json = serde_json::from_str(r#"{"b": [1.0, "x"], "a": null}"#).expect("valid JSON");
        assert!(json_equals(&json, r#"{"a": null, "b": [1, "x"]}"#));
        assert!(!json_equals(&json, r#"{"a": null, "b": [1, "x"], "c": 1}"#));
        assert!(is_integer(&serde_json::from_str::<Json>("2.0").expect("number")));
        assert!(!is_integer(&serde_json::from_str::<Json>("2.5").expect("number")));
    }
}
