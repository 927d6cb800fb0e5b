//! A value together with the byte range it came from in its TOML source.
//!
//! `toml::Spanned` already records spans, but it has no `JsonSchema` implementation, and the
//! catalog's JSON Schema is derived from the same model that is deserialized. This wrapper
//! keeps one model for both: it deserializes through `toml::Spanned`, describes itself as
//! the inner type to `schemars`, and serializes as the bare value so spans never leak into
//! the canonical form that the catalog's sha256 covers.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::ops::{Deref, Range};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

#[derive(Clone, Debug)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Range<usize>,
}

impl<T> Spanned<T> {
    /// A value with no source location, for catalogs built in code (tests).
    pub fn unspanned(value: T) -> Self {
        Spanned { value, span: 0..0 }
    }
}

// A spanned list or name reads as the value it wraps, so that code which only looks at the
// value (the renderers) does not care whether the catalog kept its span.
impl<T> Deref for Spanned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.value
    }
}

/// An omitted optional field: the default value with an empty span. A value that was written
/// always has a non-empty span (even `[]` is two bytes), which is how "omitted" and "written
/// empty" are told apart.
impl<T: Default> Default for Spanned<T> {
    fn default() -> Self {
        Spanned::unspanned(T::default())
    }
}

impl<T> Spanned<T> {
    /// Whether the value was written in the source rather than defaulted.
    pub fn is_written(&self) -> bool {
        !self.span.is_empty()
    }
}

impl Spanned<String> {
    pub fn as_str(&self) -> &str {
        &self.value
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Spanned<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let inner = toml::Spanned::<T>::deserialize(deserializer)?;
        let span = inner.span();
        Ok(Spanned { value: inner.into_inner(), span })
    }
}

impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(serializer)
    }
}

impl<T: JsonSchema> JsonSchema for Spanned<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
}

// Equality and order look at the value only: two occurrences of the same name in different
// places are the same name (that is how duplicates are found).
impl<T: PartialEq> PartialEq for Spanned<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}
impl<T: Eq> Eq for Spanned<T> {}
impl<T: PartialOrd> PartialOrd for Spanned<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.value.partial_cmp(&other.value)
    }
}
impl<T: Ord> Ord for Spanned<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.value.cmp(&other.value)
    }
}
