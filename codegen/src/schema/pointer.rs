//! Looking a JSON Pointer up in a schema document.
//!
//! The pointer's syntax is `checkfu-wire-vocab`'s `schema_syntax`, which the safety
//! profile reads pointers by too: a `~` followed by anything but `0` or `1` is refused
//! here as it is there (RFC 6901 §3), where `serde_json::Value::pointer` would read `~2`
//! as the two characters it is.

use checkfu_wire_vocab::schema_syntax::{self, array_index, PointerError};
use serde_json::Value;

/// The node `pointer` names in `document`; `Ok(None)` when it names nothing there.
pub fn get<'v>(document: &'v Value, pointer: &str) -> Result<Option<&'v Value>, PointerError> {
    let mut here = document;
    for token in schema_syntax::parse(pointer)? {
        let next = match here {
            Value::Object(members) => members.get(token.as_ref()),
            Value::Array(items) => array_index(&token).and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(next) => here = next,
            None => return Ok(None),
        }
    }
    Ok(Some(here))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn follows_escapes_and_canonical_indices() {
        let doc = json!({"a/b": [{"m~n": 1}], "": true});
        assert_eq!(get(&doc, "/a~1b/0/m~0n"), Ok(Some(&json!(1))));
        assert_eq!(get(&doc, "/"), Ok(Some(&json!(true))));
        assert_eq!(get(&doc, ""), Ok(Some(&doc)));
        assert_eq!(get(&doc, "/a~1b/00"), Ok(None));
        assert_eq!(get(&doc, "/missing"), Ok(None));
    }

    /// serde_json's own lookup finds the key `a~2b` through `/a~2b`; this one refuses the
    /// pointer, as the safety profile does.
    #[test]
    fn a_tilde_not_followed_by_0_or_1_is_refused() {
        let doc = json!({"a~2b": 1});
        assert_eq!(doc.pointer("/a~2b"), Some(&json!(1)));
        assert_eq!(get(&doc, "/a~2b"), Err(PointerError::BadEscape));
        assert_eq!(get(&doc, "/a~"), Err(PointerError::BadEscape));
    }
}
