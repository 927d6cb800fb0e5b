//! The extent of a parsed document: its serialized size and its nesting depth.
//!
//! `lint` receives a tree that someone else parsed, so it cannot rely on the
//! 32 KiB input check of `lint_bytes`, and the tree may be nested arbitrarily
//! deep. This pass therefore walks with an explicit stack
//! (no recursion) and stops as soon as the compact serialization would exceed
//! [`MAX_DOCUMENT_BYTES`]: every value visited adds at least one byte, so the
//! pass never visits more than that many values, whatever it is given.

use crate::limits::{MAX_DEPTH, MAX_DOCUMENT_BYTES};
use crate::node::{Node, Object, View};
use crate::pointer::{render, Token};
use crate::report::{Findings, Rule};

/// What the extent pass concluded.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Extent {
    /// Within the size bound; depth violations, if any, were reported.
    Within,
    /// Over the size bound; the document must not be walked further.
    Oversize,
}

enum Step<'a, N> {
    Enter(&'a N, Option<Token<'a>>, usize),
    Leave,
}

/// Measures `doc`, reporting `too-deep` once for every container at the depth
/// bound that still has children, or `document-too-large` alone.
///
/// The common document is small and shallow: a first pass counts bytes and
/// looks for a too-deep container without keeping a path; only when it finds
/// one is the document walked again with the path, to point at each.
pub(crate) fn measure<N: Node>(doc: &N, findings: &mut Findings) -> Extent {
    let mut bytes: usize = 0;
    let mut deep = false;
    // Room for a typical schema's pending values up front: growing the stack a few
    // times cost more than the walk of a small schema.
    let mut stack = Vec::with_capacity(64);
    stack.push((doc, 0usize));
    while let Some((value, depth)) = stack.pop() {
        bytes = bytes.saturating_add(own_bytes(value));
        if bytes > MAX_DOCUMENT_BYTES {
            break;
        }
        match value.view() {
            View::Array(items) => {
                deep |= depth == MAX_DEPTH && !items.is_empty();
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            View::Object(map) => {
                deep |= depth == MAX_DEPTH && !map.is_empty();
                stack.extend(map.members().map(|(_, item)| (item, depth + 1)));
            }
            _ => {}
        }
    }
    if bytes <= MAX_DOCUMENT_BYTES && !deep {
        return Extent::Within;
    }
    measure_with_paths(doc, findings)
}

/// [`measure`], keeping the path to every value so that violations can point.
fn measure_with_paths<N: Node>(doc: &N, findings: &mut Findings) -> Extent {
    let mut deep_at: Vec<String> = Vec::new();
    let mut bytes: usize = 0;
    let mut path: Vec<Token<'_>> = Vec::new();
    let mut stack = vec![Step::Enter(doc, None, 0)];
    while let Some(step) = stack.pop() {
        let (value, token, depth) = match step {
            Step::Leave => {
                path.pop();
                continue;
            }
            Step::Enter(value, token, depth) => (value, token, depth),
        };
        if let Some(token) = token {
            path.push(token);
            stack.push(Step::Leave);
        }
        bytes = bytes.saturating_add(own_bytes(value));
        if bytes > MAX_DOCUMENT_BYTES {
            findings.push(
                Rule::DocumentTooLarge,
                String::new(),
                format!("the schema serializes to more than {MAX_DOCUMENT_BYTES} bytes of JSON"),
            );
            return Extent::Oversize;
        }
        let has_children = match value.view() {
            View::Array(items) => !items.is_empty(),
            View::Object(map) => !map.is_empty(),
            _ => false,
        };
        if depth == MAX_DEPTH && has_children {
            deep_at.push(render(&path));
        }
        // Children are pushed in reverse so that they are visited, and
        // violations reported, in document order.
        match value.view() {
            View::Array(items) => {
                for (index, item) in items.iter().enumerate().rev() {
                    stack.push(Step::Enter(item, Some(Token::Index(index)), depth + 1));
                }
            }
            View::Object(map) => {
                for (key, item) in map.members().rev() {
                    stack.push(Step::Enter(item, Some(Token::Key(key)), depth + 1));
                }
            }
            _ => {}
        }
    }
    for pointer in deep_at {
        findings.push(Rule::TooDeep, pointer, format!("values nest deeper than {MAX_DEPTH} levels below the document"));
    }
    Extent::Within
}

/// The bytes a value contributes to its compact serialization, not counting
/// its children: brackets, separators, keys, and scalars in full.
fn own_bytes<N: Node>(value: &N) -> usize {
    match value.view() {
        View::Null | View::Bool(true) => 4,
        View::Bool(false) => 5,
        View::Number(bytes) => bytes,
        View::String(text) => string_bytes(text),
        View::Array(items) => 2 + items.len().saturating_sub(1),
        View::Object(map) => {
            let keys: usize = map.members().map(|(key, _)| string_bytes(key) + 1).sum();
            2 + keys + map.len().saturating_sub(1)
        }
    }
}

/// Length of a JSON string literal as serde_json writes it.
fn string_bytes(text: &str) -> usize {
    // Most strings need no escape at all; one cheap pass says so.
    if !text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        return 2 + text.len();
    }
    let escapes: usize = text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\x08' | b'\x0c' | b'\n' | b'\r' | b'\t' => 1,
            0..=0x1f => 5,
            _ => 0,
        })
        .sum();
    2 + text.len() + escapes
}

/// The deepest nesting of `[`/`{` in raw JSON bytes, ignoring string
/// contents. Used to tell a parse that failed on serde_json's recursion limit
/// from one that failed on bad syntax, without a recursive parse (and by the
/// runtime decoder to hold raw members to that limit).
pub fn raw_depth(bytes: &[u8]) -> usize {
    let mut depth: usize = 0;
    let mut deepest: usize = 0;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    #[test]
    fn own_bytes_match_serde_json_compact_output() {
        let doc = json!({"a\"b": [1, -2.5, "x\ny\u{1}", null, true, false, {}], "": "é",
            "numbers": [0, -0.0, 0.1, 1.5e-7, 1e300, -1e-300, u64::MAX, i64::MIN, 123456789.125]});
        let mut total = 0;
        let mut stack = vec![&doc];
        while let Some(value) = stack.pop() {
            total += own_bytes(value);
            match value {
                Value::Array(items) => stack.extend(items),
                Value::Object(map) => stack.extend(map.values()),
                _ => {}
            }
        }
        for n in doc["numbers"].as_array().expect("numbers") {
            assert_eq!(own_bytes(n), n.to_string().len(), "{n}");
        }
        assert_eq!(total, serde_json::to_string(&doc).unwrap().len());
    }

    #[test]
    fn depth_bound_reports_the_container_at_the_bound() {
        let mut doc = json!(1);
        for _ in 0..MAX_DEPTH + 1 {
            doc = json!([doc]);
        }
        let mut findings = Findings::default();
        assert_eq!(measure(&doc, &mut findings), Extent::Within);
        let verdict = findings.into_verdict();
        assert_eq!(verdict.rules(), vec![Rule::TooDeep]);
        assert_eq!(verdict.violations[0].pointer, "/0".repeat(MAX_DEPTH));
    }

    #[test]
    fn depth_at_the_bound_is_fine() {
        let mut doc = json!(1);
        for _ in 0..MAX_DEPTH {
            doc = json!([doc]);
        }
        let mut findings = Findings::default();
        assert_eq!(measure(&doc, &mut findings), Extent::Within);
        assert!(findings.into_verdict().accepted);
    }

    #[test]
    fn oversize_is_reported_alone() {
        let doc = json!({"enum": ["x".repeat(MAX_DOCUMENT_BYTES)]});
        let mut findings = Findings::default();
        assert_eq!(measure(&doc, &mut findings), Extent::Oversize);
        assert_eq!(findings.into_verdict().rules(), vec![Rule::DocumentTooLarge]);
    }

    #[test]
    fn raw_depth_ignores_brackets_in_strings() {
        assert_eq!(raw_depth(br#"[["[[[", "\"[["], {}]"#), 2);
        assert_eq!(raw_depth(b"[[[[]]]]"), 4);
        assert_eq!(raw_depth(b"true"), 0);
    }
}
