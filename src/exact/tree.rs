//! The JSON tree the generated checks read: strings borrow the text they were parsed
//! from, arrays and objects are slices in an arena.

use std::collections::HashMap;
use std::fmt;

use bumpalo::collections::Vec as ArenaVec;
use bumpalo::Bump;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::numbers::JsonNumber;

/// A JSON value as the generated checks read it: objects are their members in order, with
/// no hashing, and the tree owns nothing.
///
/// Building a `serde_json::Value` (with `preserve_order`, an `IndexMap` hashed with
/// SipHash, and an owned allocation per string) cost the decoder more than the checks
/// themselves. A check walks each object's members once, so a slice is all it needs; the
/// slices live in an arena the decoder resets for every message, so building a tree is a
/// few pointer bumps and dropping it is free.
///
/// Parsed from text, the tree holds what `serde_json::from_str::<Value>` would: duplicate
/// keys keep the first position and the last value, and numbers have the same values.
#[derive(Clone, Debug, PartialEq)]
pub enum Json<'a> {
    Null,
    Bool(bool),
    Number(JsonNumber<'a>),
    String(&'a str),
    Array(&'a [Json<'a>]),
    Object(&'a [(&'a str, Json<'a>)]),
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

    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_array(&self) -> Option<&'a [Json<'a>]> {
        match self {
            Json::Array(items) => Some(items),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&'a [(&'a str, Json<'a>)]> {
        match self {
            Json::Object(members) => Some(members),
            _ => None,
        }
    }

    /// The value of member `key`, if this is an object that has one.
    pub fn get(&self, key: &str) -> Option<&'a Json<'a>> {
        self.as_object()?.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// A view of `value`: strings borrow from it, containers are built in `arena`.
    pub fn view(value: &'a Value, arena: &'a Bump) -> Json<'a> {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(JsonNumber::of(n)),
            Value::String(s) => Json::String(s),
            Value::Array(items) => Json::Array(arena.alloc_slice_fill_iter(items.iter().map(|item| Json::view(item, arena)))),
            Value::Object(map) => Json::Object(arena.alloc_slice_fill_iter(map.iter().map(|(k, v)| (k.as_str(), Json::view(v, arena))))),
        }
    }

    /// Whether this value equals `value`, numbers compared by value (JSON Schema's
    /// equality, for `enum` and `const`).
    pub fn same_as(&self, value: &Value) -> bool {
        match (self, value) {
            (Json::Null, Value::Null) => true,
            (Json::Bool(a), Value::Bool(b)) => a == b,
            (Json::Number(a), Value::Number(b)) => super::numbers::equal(a, &JsonNumber::of(b)),
            (Json::String(a), Value::String(b)) => a == b,
            (Json::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| a.same_as(b)),
            // Keys are unique on both sides, so equal sizes and every member matched suffice.
            (Json::Object(a), Value::Object(b)) => a.len() == b.len() && a.iter().all(|(k, a)| b.get(*k).is_some_and(|b| a.same_as(b))),
            _ => false,
        }
    }

    /// The `serde_json::Value` this tree holds: the one `serde_json::from_str::<Value>`
    /// builds from the same text (members in order, numbers with the same value; with
    /// `exact-numbers`, written as they were), built without reading the text again.
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => number_value(n),
            Json::String(s) => Value::String((*s).to_owned()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => Value::Object(members.iter().map(|(k, v)| ((*k).to_owned(), v.to_value())).collect()),
        }
    }

    /// Parses `text` into a tree in `arena`.
    pub fn parse(text: &'a str, arena: &'a Bump) -> Result<Json<'a>, serde_json::Error> {
        let mut de = serde_json::Deserializer::from_str(text);
        let tree = Tree(arena).deserialize(&mut de)?;
        de.end()?;
        Ok(tree)
    }
}

/// Parses any JSON value into a [`Json`] in the arena, borrowing strings that need no
/// unescaping from the input (`'de: 'a`).
#[derive(Clone, Copy)]
pub struct Tree<'a>(pub &'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Tree<'a> {
    type Value = Json<'a>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'a>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// The key by which serde_json's `Value` smuggles a `RawValue`: an object whose first key
/// is this is read as the JSON text of its string value (only with the `raw_value`
/// feature, which the workspace enables).
pub(crate) const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// The key by which serde_json with `arbitrary_precision` hands a number to a visitor: an
/// object whose first key is this is the number written in its string value. `Value`
/// reads such an object (from text too) as that number, so the tree does; without
/// `arbitrary_precision` it is an object like any other, to `Value` and so to the tree
/// ([`numbers_as_tokens`]).
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// Whether serde_json is built with `arbitrary_precision`: only then does it hand numbers
/// over under [`NUMBER_TOKEN`], and only then does its `Value` read an object written with
/// that first key as a number. Asked of serde_json itself, once, rather than of the
/// `exact-numbers` feature: another crate of the build can turn `arbitrary_precision` on,
/// and then every number arrives as the token whatever this crate's features are.
pub(crate) fn numbers_as_tokens() -> bool {
    static ON: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
        serde_json::from_str::<serde_json::Value>(r#"{"$serde_json::private::Number":"1"}"#).is_ok_and(|v| v.is_number())
    });
    *ON
}

impl<'de: 'a, 'a> Visitor<'de> for Tree<'a> {
    type Value = Json<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Json<'a>, E> {
        Ok(Json::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Json<'a>, E> {
        // serde_json hands a non-negative integer over as a `u64`; `Value` holds any
        // non-negative `i64` as one too.
        Ok(Json::Number(u64::try_from(n).map_or(JsonNumber::Int(n), JsonNumber::UInt)))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Json<'a>, E> {
        Ok(Json::Number(JsonNumber::UInt(n)))
    }
    fn visit_f64<E>(self, f: f64) -> Result<Json<'a>, E> {
        // As `Value` does: a float with no JSON number (never produced by parsing text) is null.
        Ok(if f.is_finite() { Json::Number(JsonNumber::Float(f)) } else { Json::Null })
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Json<'a>, E> {
        Ok(Json::String(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Json<'a>, E> {
        Ok(Json::String(self.0.alloc_str(s)))
    }
    fn visit_unit<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json<'a>, E> {
        Ok(Json::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Json<'a>, D::Error> {
        self.deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'a>, A::Error> {
        let mut items = ArenaVec::with_capacity_in(INITIAL_CAPACITY, self.0);
        while let Some(item) = seq.next_element_seed(self)? {
            items.push(item);
        }
        Ok(Json::Array(items.into_bump_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'a>, A::Error> {
        let Some(first) = map.next_key_seed(Str(self.0))? else { return Ok(Json::Object(&[])) };
        if first == RAW_VALUE_TOKEN {
            // The checks used to run on a `Value`, which honours the token; so must the tree,
            // or a member could be accepted by one and rejected by the other.
            return raw_value_tree(&mut map, self.0);
        }
        if first == NUMBER_TOKEN && numbers_as_tokens() {
            return number_member(&mut map, self.0).map(Json::Number);
        }
        let mut members = Members::new_in(self.0);
        members.insert(first, map.next_value_seed(self)?);
        while let Some(key) = map.next_key_seed(Str(self.0))? {
            let value = map.next_value_seed(self)?;
            members.insert(key, value);
        }
        Ok(Json::Object(members.into_slice()))
    }
}

/// A number as `Value` holds it. A `Text` (only with `exact-numbers`, which turns on
/// `arbitrary_precision`) keeps its text; a `Float` is finite by construction.
fn number_value(n: &JsonNumber<'_>) -> Value {
    match *n {
        JsonNumber::UInt(u) => Value::from(u),
        JsonNumber::Int(i) => Value::from(i),
        JsonNumber::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        JsonNumber::Text(t) => t.parse::<serde_json::Number>().map_or(Value::Null, Value::Number),
    }
}

/// The value of an object whose first key was [`NUMBER_TOKEN`]: the number written in its
/// string, copied into `arena`. Its magnitude is held to what an `f64` reaches, as
/// serde_json without `arbitrary_precision` holds it (`1e400` is "number out of range"):
/// the decoder accepts no message that a consumer on serde_json's defaults cannot parse.
/// Precision is not limited.
pub(crate) fn number_member<'de, 'a, A: MapAccess<'de>>(map: &mut A, arena: &'a Bump) -> Result<JsonNumber<'a>, A::Error> {
    with_number_member(map, |n| n.in_arena(arena))
}

/// [`number_member`] for a visitor that has no arena: `read` sees the number while its
/// text (serde_json's own string) lives.
pub(crate) fn with_number_member<'de, A: MapAccess<'de>, R>(map: &mut A, read: impl FnOnce(JsonNumber<'_>) -> R) -> Result<R, A::Error> {
    struct Text<F>(F);
    impl<R, F: FnOnce(JsonNumber<'_>) -> R> Visitor<'_> for Text<F> {
        type Value = R;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a number's text")
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<R, E> {
            // The token's string is serde_json's own scan of a number; checked all the same,
            // since a text can spell the token out.
            if !is_json_number(s.as_bytes()) {
                return Err(E::custom(format!("invalid number: {s:?}")));
            }
            match JsonNumber::from_text(s) {
                Some(n) if within_range(&n) => Ok((self.0)(n)),
                _ => Err(E::custom("number out of range")),
            }
        }
    }
    impl<'de, R, F: FnOnce(JsonNumber<'_>) -> R> DeserializeSeed<'de> for Text<F> {
        type Value = R;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<R, D::Error> {
            deserializer.deserialize_str(self)
        }
    }
    map.next_value_seed(Text(read))
}

/// Whether a number is one serde_json's defaults read: its magnitude within an `f64`'s
/// reach. The one statement of the decoder's range, for the tree and the direct reader.
pub(crate) fn within_range(n: &JsonNumber<'_>) -> bool {
    n.as_f64().is_some()
}

/// Whether `text` is one JSON number and nothing else.
pub(crate) fn is_json_number(text: &[u8]) -> bool {
    checkfu_wire_vocab::decimal::json_number_len(text) == Some(text.len())
}

/// Reads the first key of a map a visitor was handed: `Some(true)` when it is
/// [`NUMBER_TOKEN`] (the map is a number), `None` for an empty map. For visitors that
/// skip keys: the key is read, escapes checked, and not kept.
pub(crate) fn first_is_number<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<bool>, A::Error> {
    struct IsToken;
    impl Visitor<'_> for IsToken {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a key")
        }
        fn visit_str<E>(self, s: &str) -> Result<bool, E> {
            Ok(s == NUMBER_TOKEN && numbers_as_tokens())
        }
    }
    impl<'de> DeserializeSeed<'de> for IsToken {
        type Value = bool;
        fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
            deserializer.deserialize_str(self)
        }
    }
    map.next_key_seed(IsToken)
}

/// The error a visitor that takes no numbers raises for `n`, worded as serde raises it
/// when a number is handed over as one (without `arbitrary_precision`).
pub(crate) fn unexpected_number<E: de::Error>(n: JsonNumber<'_>, expected: &dyn de::Expected) -> E {
    let unexpected = match (n, n.as_f64()) {
        (JsonNumber::UInt(u), _) => de::Unexpected::Unsigned(u),
        (JsonNumber::Int(i), _) => de::Unexpected::Signed(i),
        (_, Some(f)) => de::Unexpected::Float(f),
        (_, None) => de::Unexpected::Other("number"),
    };
    E::invalid_type(unexpected, expected)
}

/// The value of an object whose first key was [`RAW_VALUE_TOKEN`]: the JSON text of the
/// string that follows, parsed as serde_json's `Value` reads it.
pub(crate) fn raw_value_tree<'de: 'a, 'a, A: MapAccess<'de>>(map: &mut A, arena: &'a Bump) -> Result<Json<'a>, A::Error> {
    let text: &'a str = map.next_value_seed(Str(arena))?;
    Json::parse(text, arena).map_err(de::Error::custom)
}

/// A string (a key, or a member the decoder reads), borrowed from the input when it has
/// no escapes and copied into the arena when it has.
#[derive(Clone, Copy)]
pub struct Str<'a>(pub &'a Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Str<'a> {
    type Value = &'a str;
    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<&'a str, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for Str<'a> {
    type Value = &'a str;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    #[inline]
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<&'a str, E> {
        Ok(s)
    }
    fn visit_str<E>(self, s: &str) -> Result<&'a str, E> {
        Ok(self.0.alloc_str(s))
    }
}

/// Room reserved for the members or items of a container before the first is read: the
/// arena is reset per message, so unused room costs nothing, while growing a vector in it
/// copies the members each time.
const INITIAL_CAPACITY: usize = 8;

/// Past this many members an object's keys are indexed rather than searched, so that a
/// hostile object with many keys costs linear time, not quadratic.
const LINEAR_MEMBERS: usize = 16;

/// Object members in order, a repeated key replacing the earlier value in place, as
/// `serde_json::Map::insert` does with `preserve_order`.
pub(crate) struct Members<'a> {
    list: ArenaVec<'a, (&'a str, Json<'a>)>,
    index: Option<HashMap<&'a str, usize>>,
}

impl<'a> Members<'a> {
    pub(crate) fn new_in(arena: &'a Bump) -> Self {
        Members { list: ArenaVec::with_capacity_in(INITIAL_CAPACITY, arena), index: None }
    }

    pub(crate) fn into_slice(self) -> &'a [(&'a str, Json<'a>)] {
        self.list.into_bump_slice()
    }

    /// Inserts a member; `true` when `key` was already there (its value is replaced).
    pub(crate) fn insert(&mut self, key: &'a str, value: Json<'a>) -> bool {
        let found = match &self.index {
            Some(index) => index.get(key).copied(),
            None => self.list.iter().position(|(k, _)| *k == key),
        };
        if let Some((_, slot)) = found.and_then(|i| self.list.get_mut(i)) {
            *slot = value;
            return true;
        }
        if self.index.is_none() && self.list.len() >= LINEAR_MEMBERS {
            self.index = Some(self.list.iter().enumerate().map(|(i, (k, _))| (*k, i)).collect());
        }
        if let Some(index) = &mut self.index {
            index.insert(key, self.list.len());
        }
        self.list.push((key, value));
        false
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
            r#"[18446744073709551617, -18446744073709551617, 0.09999999999999999, 1.000, 1e300, 1e-400, {"$serde_json::private::Number": "12.50"}]"#,
            &format!("{{{many}\"k3\":\"end\"}}"),
        ];
        let arena = Bump::new();
        for text in cases {
            let value: Value = serde_json::from_str(text).expect("valid JSON");
            let json = Json::parse(text, &arena).expect("valid JSON");
            assert_eq!(json, Json::view(&value, &arena), "{text}");
            assert!(json.same_as(&value), "{text}");
        }
        for text in [r#"{"$serde_json::private::RawValue": 1}"#, r#"{"$serde_json::private::RawValue": "1", "b": 2}"#, "[1,]"] {
            assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
            assert!(Json::parse(text, &arena).is_err(), "{text}");
        }
        // A number token that holds no number is an error where the token means a number
        // (`arbitrary_precision`), and an object like any other where it does not.
        let text = r#"{"$serde_json::private::Number": "1x"}"#;
        assert_eq!(serde_json::from_str::<Value>(text).is_err(), numbers_as_tokens(), "{text}");
        assert_eq!(Json::parse(text, &arena).is_err(), numbers_as_tokens(), "{text}");
        // Beyond an `f64`'s reach: out of range, as serde_json's defaults read it (a `Value`
        // with `arbitrary_precision` would hold it).
        for text in ["1e400", "-1e400", "[0, 1e309]"] {
            let error = Json::parse(text, &arena).expect_err(text).to_string();
            assert!(error.starts_with("number out of range"), "{text}: {error}");
        }
    }

    #[test]
    fn unescaped_strings_borrow_the_input() {
        let text = r#"{"plain": "text", "esc\u0061ped": "a\tb"}"#;
        let arena = Bump::new();
        let json = Json::parse(text, &arena).expect("valid JSON");
        let members = json.as_object().expect("object");
        let inside = |s: &str| text.as_bytes().as_ptr_range().contains(&s.as_ptr());
        let (key, value) = (members[0].0, members[0].1.as_str().expect("string"));
        assert!(inside(key) && inside(value), "borrowed");
        let (key, value) = (members[1].0, members[1].1.as_str().expect("string"));
        assert_eq!((key, value), ("escaped", "a\tb"));
        assert!(!inside(key) && !inside(value), "unescaped into the arena");
    }
}
