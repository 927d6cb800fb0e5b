//! The read-only JSON tree the linter walks: [`Node`] and the shapes a node
//! shows ([`View`], [`Object`]), implemented here for `serde_json::Value`.
//!
//! The linter reads a document in only a few ways: a node's kind, a
//! scalar's contents, an array's items, and an object's members in document
//! order or by key. Asking no more than that of the tree lets a caller that
//! holds a schema in a tree of its own (the runtime decoder keeps `_meta` in
//! an arena) lint it in place, instead of building a `Value` only to drop it.
//!
//! Two properties the linter relies on are part of the contract, because the
//! verdict depends on them:
//! - an object's keys are unique, so that [`Object::get`] finds the member
//!   [`Object::members`] yields for that key;
//! - every reference a node hands out points into the tree itself, never at
//!   a temporary: a `$ref` is matched to the schema it lands on by the
//!   address of the target node, so the node reached through
//!   [`Object::get`] and array indexing must be the very node the walk
//!   reached through [`Object::members`] and [`View::Array`].

use serde_json::{map, Map, Number, Value};

/// One node of a JSON tree, as the linter sees it.
pub trait Node: Sized {
    /// The object form of a node: a cheap handle ([`Copy`]) on its members.
    type Object<'n>: Object<'n, Self>
    where
        Self: 'n;

    /// What this node is, with its contents borrowed from the tree.
    fn view(&self) -> View<'_, Self>;

    fn is_null(&self) -> bool {
        matches!(self.view(), View::Null)
    }

    fn as_bool(&self) -> Option<bool> {
        match self.view() {
            View::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn as_str(&self) -> Option<&str> {
        match self.view() {
            View::String(text) => Some(text),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<&[Self]> {
        match self.view() {
            View::Array(items) => Some(items),
            _ => None,
        }
    }

    fn as_object(&self) -> Option<Self::Object<'_>> {
        match self.view() {
            View::Object(object) => Some(object),
            _ => None,
        }
    }

    fn is_array(&self) -> bool {
        self.as_array().is_some()
    }

    fn is_object(&self) -> bool {
        self.as_object().is_some()
    }
}

/// A node's kind and contents, borrowed for `'n` from the tree.
pub enum View<'n, N: Node + 'n> {
    Null,
    Bool(bool),
    /// A number, by the length in bytes of its compact serialization, which is all the
    /// profile reads of a number. (A tree may hold numbers as something other than
    /// `serde_json::Number`; this asks nothing of how.)
    Number(usize),
    String(&'n str),
    Array(&'n [N]),
    Object(N::Object<'n>),
}

/// An object's members, borrowed for `'n` from a tree of `N`s. Keys are
/// unique; members come in document order.
pub trait Object<'n, N: 'n>: Copy {
    /// The members in document order. Reversible, because the extent pass
    /// pushes children onto a stack back to front to visit them front to
    /// back.
    type Members: DoubleEndedIterator<Item = (&'n str, &'n N)>;

    fn members(self) -> Self::Members;

    /// The value of member `key`. Called once per token of a `$ref`
    /// pointer and once per schema object (for `$id`).
    fn get(self, key: &str) -> Option<&'n N>;

    fn len(self) -> usize;

    fn is_empty(self) -> bool {
        self.len() == 0
    }

    fn contains_key(self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

impl Node for Value {
    type Object<'n> = &'n Map<String, Value>;

    fn view(&self) -> View<'_, Value> {
        match self {
            Value::Null => View::Null,
            Value::Bool(b) => View::Bool(*b),
            Value::Number(number) => View::Number(number_bytes(number)),
            Value::String(text) => View::String(text),
            Value::Array(items) => View::Array(items),
            Value::Object(map) => View::Object(map),
        }
    }
}

impl<'n> Object<'n, Value> for &'n Map<String, Value> {
    type Members = MapMembers<'n>;

    fn members(self) -> MapMembers<'n> {
        MapMembers(self.iter())
    }

    fn get(self, key: &str) -> Option<&'n Value> {
        Map::get(self, key)
    }

    fn len(self) -> usize {
        Map::len(self)
    }

    fn contains_key(self, key: &str) -> bool {
        Map::contains_key(self, key)
    }
}

/// The members of a `serde_json::Map`, keys as `&str`.
pub struct MapMembers<'n>(map::Iter<'n>);

impl<'n> Iterator for MapMembers<'n> {
    type Item = (&'n str, &'n Value);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(key, value)| (key.as_str(), value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl DoubleEndedIterator for MapMembers<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|(key, value)| (key.as_str(), value))
    }
}

impl ExactSizeIterator for MapMembers<'_> {}

/// The bytes serde_json writes for `number`. Integers are measured with itoa, whose
/// buffer gives the same text without the formatting machinery; other numbers (rare in
/// schemas) as serde_json displays them, whatever float formatter it uses.
pub fn number_bytes(number: &Number) -> usize {
    match (number.as_u64(), number.as_i64()) {
        (Some(n), _) => itoa::Buffer::new().format(n).len(),
        (None, Some(n)) => itoa::Buffer::new().format(n).len(),
        (None, None) => {
            let mut counter = ByteCounter(0);
            // Writing into a counter cannot fail; it only avoids allocating.
            let _ = std::fmt::Write::write_fmt(&mut counter, format_args!("{number}"));
            counter.0
        }
    }
}

/// A `fmt::Write` sink that only counts bytes.
struct ByteCounter(usize);

impl std::fmt::Write for ByteCounter {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0 += text.len();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_members_keep_document_order_both_ways() {
        let doc = json!({"b": 1, "a": [true], "c": null});
        let object = doc.as_object().expect("an object");
        let keys: Vec<&str> = Object::members(object).map(|(key, _)| key).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        let back: Vec<&str> = Object::members(object).rev().map(|(key, _)| key).collect();
        assert_eq!(back, ["c", "a", "b"]);
        let a = Object::get(object, "a").expect("member a");
        assert!(std::ptr::eq(a, &doc["a"]));
        assert_eq!(Node::as_array(a).map(<[Value]>::len), Some(1));
        assert!(!Object::contains_key(object, "d"));
    }
}
