//! Runtime support for the generated schema checks and decoders (`schemas`).
//!
//! A generated check reads a [`Json`] tree (a `_meta` member parsed straight from the
//! wire, or a view of a `Value`); a generated decoder first runs that check, then
//! deserializes into the typify type. [`Invalid`] says where and why a value was rejected.

mod deferred;
mod direct;
mod keywords;
mod memo;
pub mod numbers;
mod safety_node;
mod tree;

use std::borrow::Cow;
use std::fmt;

use bumpalo::Bump;
use serde::de::DeserializeOwned;
use serde_json::Value;
use smallvec::SmallVec;

pub use deferred::{Deferred, Held};
pub(crate) use direct::direct_tree;
pub use keywords::{same, unique_items, Literal, Pattern};
pub use memo::memoized;
pub use numbers::{compare_number, multiple_of, Decimal, JsonNumber, Num};
pub(crate) use tree::{
    first_is_number, number_member, raw_value_tree, unexpected_number, with_number_member, Members, NUMBER_TOKEN, RAW_VALUE_TOKEN,
};
pub use tree::{Json, Str, Tree};

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
        checkfu_wire_vocab::schema_syntax::join(self.segments.iter().rev().map(|s| s.as_ref()))
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

/// JSON Schema's integer: any number with no fractional part (so `1.0` is one).
pub fn is_integer(v: &Json<'_>) -> bool {
    match v {
        Json::Number(n) => numbers::is_integer(n),
        _ => false,
    }
}

/// Numbers compare by value, as JSON Schema's `enum` and `const` do.
pub fn number_is(v: &Json<'_>, expected: Num) -> bool {
    match v {
        Json::Number(n) => numbers::compare_number(n, expected) == std::cmp::Ordering::Equal,
        _ => false,
    }
}

/// ACP's leniency annotations (`x-deserialize-default-on-error`,
/// `x-deserialize-skip-invalid-items`) at run time. Generated checks are strict by
/// default, as the schema is; the wire decoder reads leniently, as the official SDKs do:
/// inside [`leniency::reading`], a member or item so marked that fails its check is
/// noted and treated as absent instead of rejecting the message.
pub mod leniency {
    use std::cell::{Cell, RefCell};

    use super::Invalid;

    thread_local! {
        static ACTIVE: Cell<bool> = const { Cell::new(false) };
        /// Whether `NOTES` may hold anything: a `Cell` without a destructor is read
        /// without the registration check a `Vec`'s thread-local needs, and most
        /// messages drop nothing.
        static NOTED: Cell<bool> = const { Cell::new(false) };
        static NOTES: RefCell<Vec<Invalid>> = const { RefCell::new(Vec::new()) };
    }

    /// Runs `f` reading leniently; returns its value and what was dropped.
    #[inline(always)]
    pub fn reading<T>(f: impl FnOnce() -> T) -> (T, Vec<Invalid>) {
        let was = ACTIVE.with(|a| a.replace(true));
        let value = f();
        ACTIVE.with(|a| a.set(was));
        let notes =
            if was || !NOTED.with(|n| n.replace(false)) { Vec::new() } else { NOTES.with(|n| std::mem::take(&mut *n.borrow_mut())) };
        (value, notes)
    }

    /// A failure of a lenient member: noted when reading leniently, else the error.
    pub fn lenient(e: Invalid) -> Result<(), Invalid> {
        if ACTIVE.with(Cell::get) {
            NOTES.with(|n| n.borrow_mut().push(e));
            NOTED.with(|n| n.set(true));
            Ok(())
        } else {
            Err(e)
        }
    }
}

pub use leniency::lenient;

/// Runs a generated check on a `Value` (for the decoders and tables that take one).
pub fn check_value(v: &Value, check: fn(&Json<'_>) -> Result<(), Invalid>) -> Result<(), Invalid> {
    let arena = Bump::new();
    check(&Json::view(v, &arena))
}

/// Deserializes a checked value into its generated type. The generated types are exact
/// (numbers are `serde_json::Number`, optional members `Option`s that keep `null`), so
/// every value the check accepts fits.
pub fn deserialize<T: DeserializeOwned>(v: &Value) -> Result<T, Invalid> {
    T::deserialize(v).map_err(|e| Invalid::new(format!("does not fit the generated type: {e}")))
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

/// `serde(with)` helpers for an optional member: absent is `None`, and anything present,
/// `null` included, is `Some` of the member's type (which keeps `null` when the member
/// admits it). serde's own `Option` would read `null` as absent.
pub mod present {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(value: &Option<T>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(inner) => inner.serialize(serializer),
            // Only reached if a caller drops `skip_serializing_if`; absent has no encoding.
            None => serializer.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
        T::deserialize(deserializer).map(Some)
    }
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

    #[test]
    fn literals_compare_numbers_by_value_and_objects_by_members() {
        let arena = Bump::new();
        let json = Json::parse(r#"{"b": [1.0, "x"], "a": null}"#, &arena).expect("valid JSON");
        assert!(Literal::new(r#"{"a": null, "b": [1, "x"]}"#).matches(&json));
        assert!(!Literal::new(r#"{"a": null, "b": [1, "x"], "c": 1}"#).matches(&json));
        assert!(is_integer(&Json::parse("2.0", &arena).expect("number")));
        assert!(!is_integer(&Json::parse("2.5", &arena).expect("number")));
    }
}
