//! RFC 6901 JSON Pointers: rendering the location of a violation, and resolving the
//! pointer carried in a `$ref` fragment.
//!
//! The pointer's syntax (escaping, the `~0`/`~1` escapes and nothing else, the fragment's
//! percent-decoding, canonical array indices) is `checkfu-wire-vocab`'s `schema_syntax`,
//! which the generator reads pointers by too, so the two cannot disagree on what a pointer
//! is. Resolution follows the same rules as `serde_json::Value::pointer` but is written
//! out here so that a malformed pointer is told apart from a missing target, and so that
//! it works on any [`Node`].

use std::collections::HashMap;

use checkfu_wire_vocab::schema_syntax::{self, array_index, push_escaped};

use crate::node::{Node, Object, View};

/// Why a `$ref` fragment is not a usable JSON Pointer.
pub(crate) use checkfu_wire_vocab::schema_syntax::PointerError;

/// One step from a JSON value to one of its children.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Token<'a> {
    Key(&'a str),
    Index(usize),
}

/// Renders a path as an RFC 6901 pointer, escaping `~` and `/` in keys.
pub(crate) fn render(path: &[Token<'_>]) -> String {
    let mut out = String::new();
    for token in path {
        out.push('/');
        match token {
            Token::Key(key) => push_escaped(&mut out, key),
            Token::Index(index) => out.push_str(&index.to_string()),
        }
    }
    out
}

/// Renders `path` followed by one more key, without copying the path.
pub(crate) fn render_with(path: &[Token<'_>], last: &str) -> String {
    let mut out = render(path);
    out.push('/');
    push_escaped(&mut out, last);
    out
}

/// Decodes a URI fragment that starts with `/` (or is empty) into reference
/// tokens.
pub(crate) fn decode_fragment(fragment: &str) -> Result<Vec<String>, PointerError> {
    schema_syntax::fragment_tokens(fragment)
}

/// Objects with more members than this are looked up through a key index
/// built on first use, not by [`Object::get`] (a linear scan for some trees):
/// a hostile document can point hundreds of `$ref`s into one wide object.
const INDEXED_MEMBERS: usize = 16;

/// Key indexes of the wide objects a document's references have passed
/// through, by the object node's address, kept across [`resolve`] calls.
pub(crate) struct KeyIndexes<'a, N> {
    objects: HashMap<*const N, HashMap<&'a str, &'a N>>,
}

impl<N> Default for KeyIndexes<'_, N> {
    fn default() -> Self {
        KeyIndexes { objects: HashMap::new() }
    }
}

/// Follows decoded tokens from `doc`. Array indices must be written in
/// canonical decimal (no sign, no leading zero), as RFC 6901 requires.
pub(crate) fn resolve<'a, N: Node>(doc: &'a N, tokens: &[String], indexes: &mut KeyIndexes<'a, N>) -> Option<&'a N> {
    let mut here = doc;
    for token in tokens {
        here = match here.view() {
            View::Object(map) if map.len() > INDEXED_MEMBERS => {
                *indexes.objects.entry(here as *const N).or_insert_with(|| map.members().collect()).get(token.as_str())?
            }
            View::Object(map) => map.get(token.as_str())?,
            View::Array(items) => items.get(array_index(token)?)?,
            _ => return None,
        };
    }
    Some(here)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn render_escapes_tilde_and_slash() {
        let path = [Token::Key("a/b"), Token::Index(3), Token::Key("m~n")];
        assert_eq!(render(&path), "/a~1b/3/m~0n");
        assert_eq!(render(&[]), "");
        assert_eq!(render_with(&path[..1], "~/"), "/a~1b/~0~1");
    }

    #[test]
    fn decode_handles_escapes_and_percent() {
        assert_eq!(decode_fragment("").unwrap(), Vec::<String>::new());
        assert_eq!(decode_fragment("/").unwrap(), vec![String::new()]);
        assert_eq!(decode_fragment("/$defs/a~1b/c~0d").unwrap(), vec!["$defs", "a/b", "c~d"]);
        assert_eq!(decode_fragment("/a%25b%22").unwrap(), vec!["a%b\""]);
        // "~01" is "~1" literally, not "/": unescaping is one pass.
        assert_eq!(decode_fragment("/~01").unwrap(), vec!["~1"]);
    }

    #[test]
    fn decode_rejects_malformed() {
        assert_eq!(decode_fragment("/a~2"), Err(PointerError::BadEscape));
        assert_eq!(decode_fragment("/a~"), Err(PointerError::BadEscape));
        assert_eq!(decode_fragment("/a%2"), Err(PointerError::BadPercentEncoding));
        assert_eq!(decode_fragment("/a%zz"), Err(PointerError::BadPercentEncoding));
        assert_eq!(decode_fragment("/%ff"), Err(PointerError::NotUtf8));
    }

    #[test]
    fn resolve_follows_objects_and_canonical_indices() {
        let doc = json!({"a": [{"b": 1}, 2], "": {"x": true}});
        let t = |s: &str| decode_fragment(s).unwrap();
        assert_eq!(resolve(&doc, &t("/a/0/b"), &mut KeyIndexes::default()), Some(&json!(1)));
        assert_eq!(resolve(&doc, &t("//x"), &mut KeyIndexes::default()), Some(&json!(true)));
        assert_eq!(resolve(&doc, &t("/a/01"), &mut KeyIndexes::default()), None);
        assert_eq!(resolve(&doc, &t("/a/-"), &mut KeyIndexes::default()), None);
        assert_eq!(resolve(&doc, &t("/a/+1"), &mut KeyIndexes::default()), None);
        assert_eq!(resolve(&doc, &t("/a/2"), &mut KeyIndexes::default()), None);
        assert_eq!(resolve(&doc, &t("/a/0/b/c"), &mut KeyIndexes::default()), None);
        assert_eq!(resolve(&doc, &t(""), &mut KeyIndexes::default()), Some(&doc));
    }

    /// Wide objects are looked up through an index built once and kept; the
    /// answers must be the members themselves, as an unindexed lookup finds.
    #[test]
    fn wide_objects_resolve_through_a_kept_index() {
        let mut wide = serde_json::Map::new();
        for i in 0..40 {
            wide.insert(format!("k{i}"), json!({"i": i}));
        }
        wide.insert("a/b".into(), json!("slash"));
        let doc = json!({"w": wide});
        let t = |s: &str| decode_fragment(s).unwrap();
        let mut indexes = KeyIndexes::default();
        for pointer in ["/w/k0/i", "/w/k39", "/w/a~1b", "/w/k39/i", "/w/missing", "/w/k7/i/x"] {
            let found = resolve(&doc, &t(pointer), &mut indexes);
            assert_eq!(found, doc.pointer(pointer), "{pointer}");
            if let Some(node) = found {
                assert!(std::ptr::eq(node, doc.pointer(pointer).expect("present")), "{pointer}: the member itself");
            }
        }
        assert_eq!(indexes.objects.len(), 1, "one wide object, indexed once");
    }
}
