//! What a request may cost the relay, checked before the work is done: a body's JSON values
//! are counted on its bytes before it is parsed, and a parsed body is searched for a string
//! without copying it.

use serde_json::Value;

/// The most JSON values (objects, arrays, strings, numbers, literals) a request body or a
/// harness's wire message may hold. A parsed value takes up to about 80 bytes (an object
/// member with its key in `preserve_order`'s map, or an empty object in an array), so a
/// parse is at most about 20 MB beside the body's own bytes. A coding agent's request is a
/// few thousand values (a Claude Code or Codex call: thousands, mostly its tools' schemas);
/// a long conversation stays far below this.
pub const MAX_VALUES: usize = 250_000;

/// An upper bound of the number of JSON values in `body`, counted without parsing: every
/// value but the first follows a `,` `:` `[` or `{` outside a string. Stops counting past
/// `limit`.
pub fn values_at_most(body: &[u8], limit: usize) -> usize {
    let mut count = 1;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in body {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b',' | b':' | b'[' | b'{' => {
                count += 1;
                if count > limit {
                    return count;
                }
            }
            _ => {}
        }
    }
    count
}

/// Whether any string of `value` (a key or a string value, escapes decoded) contains
/// `needle`. Walked with a stack of its own: the parser's depth limit bounds it, and no
/// recursion can overflow.
pub fn strings_contain(value: &Value, needle: &str) -> bool {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::String(s) if s.contains(needle) => return true,
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => {
                for (key, item) in map {
                    if key.contains(needle) {
                        return true;
                    }
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_counted_outside_strings_only() {
        let body = br#"{"a": [1, 2, {"b": "x,y:[{"}], "c\"": null}"#;
        let parsed: Value = serde_json::from_slice(body).expect("JSON");
        let mut actual = 0;
        let mut stack = vec![&parsed];
        while let Some(v) = stack.pop() {
            actual += 1;
            match v {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        let counted = values_at_most(body, usize::MAX);
        // Each member's key is counted as a value too: an upper bound, never below.
        assert!(counted >= actual && counted <= actual * 2, "{counted} against {actual}");
        assert_eq!(values_at_most(&b"[0,".repeat(10), 5), 6);
    }

    #[test]
    fn escaped_strings_are_searched_as_decoded() {
        let body: Value = serde_json::from_str(r#"{"messages": [{"content": "\u0063fr-1"}]}"#).expect("JSON");
        assert!(strings_contain(&body, "cfr-1"));
        assert!(!strings_contain(&body, "cfr-2"));
    }
}
