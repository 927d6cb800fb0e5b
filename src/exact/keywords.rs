//! Runtime support for the keywords whose checks need more than a comparison: `pattern`
//! and `patternProperties` (compiled once, on first use), structural `enum`/`const`
//! values, and `uniqueItems`.

use std::sync::OnceLock;

#[cfg(feature = "patterns")]
use regex::Regex;
use serde_json::Value;

use super::numbers;
use super::Json;

/// A schema's regular expression, compiled on first use. The generator has already
/// compiled it once, so `None` (a pattern the runtime cannot compile) means a size limit
/// was hit, and the check rejects rather than guesses.
///
/// The engine is behind the `patterns` feature. The generated checks hold each pattern in
/// a `static`, whose `Pattern::new` the compiler evaluates, so a build without the feature
/// whose schemas use a pattern fails there, naming the feature, and one whose schemas use
/// none compiles no regex engine.
pub struct Pattern {
    #[cfg_attr(not(feature = "patterns"), allow(dead_code))]
    source: &'static str,
    #[cfg(feature = "patterns")]
    compiled: OnceLock<Option<Regex>>,
}

impl Pattern {
    #[cfg(feature = "patterns")]
    pub const fn new(source: &'static str) -> Self {
        Pattern { source, compiled: OnceLock::new() }
    }

    #[cfg(not(feature = "patterns"))]
    pub const fn new(_source: &'static str) -> Self {
        panic!("a schema this crate compiles uses `pattern` or `patternProperties`: turn on checkfu-wire's `patterns` feature")
    }

    /// Whether the pattern matches anywhere in `s` (JSON Schema patterns are not anchored).
    #[cfg(feature = "patterns")]
    pub fn is_match(&self, s: &str) -> Option<bool> {
        self.compiled.get_or_init(|| Regex::new(self.source).ok()).as_ref().map(|re| re.is_match(s))
    }

    /// Never reached: no `Pattern` can be built without the feature (see [`Pattern::new`]).
    #[cfg(not(feature = "patterns"))]
    pub fn is_match(&self, _s: &str) -> Option<bool> {
        None
    }
}

/// An array or object literal from a schema's `enum` or `const`, parsed on first use.
pub struct Literal {
    text: &'static str,
    parsed: OnceLock<Value>,
}

impl Literal {
    pub const fn new(text: &'static str) -> Self {
        Literal { text, parsed: OnceLock::new() }
    }

    /// Structural equality, numbers by value.
    pub fn matches(&self, v: &Json<'_>) -> bool {
        v.same_as(self.parsed.get_or_init(|| serde_json::from_str(self.text).unwrap_or(Value::Null)))
    }
}

/// Structural equality of two trees, numbers by value.
pub fn same(a: &Json<'_>, b: &Json<'_>) -> bool {
    match (a, b) {
        (Json::Null, Json::Null) => true,
        (Json::Bool(x), Json::Bool(y)) => x == y,
        (Json::Number(x), Json::Number(y)) => numbers::equal(x, y),
        (Json::String(x), Json::String(y)) => x == y,
        (Json::Array(x), Json::Array(y)) => x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b)),
        (Json::Object(x), Json::Object(y)) => x.len() == y.len() && x.iter().all(|(k, a)| y.iter().any(|(l, b)| k == l && same(a, b))),
        _ => false,
    }
}

/// `uniqueItems`: no two items are structurally equal. Items are bucketed by a cheap
/// shape key first, so the pairwise comparison runs only within a bucket.
pub fn unique_items(items: &[Json<'_>]) -> bool {
    let key = |v: &Json<'_>| -> (u8, usize) {
        match v {
            Json::Null => (0, 0),
            Json::Bool(b) => (1, usize::from(*b)),
            Json::Number(_) => (2, 0),
            Json::String(s) => (3, s.len()),
            Json::Array(a) => (4, a.len()),
            Json::Object(o) => (5, o.len()),
        }
    };
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| key(&items[i]));
    let mut start = 0;
    while start < order.len() {
        let bucket = key(&items[order[start]]);
        let end = order[start..].iter().position(|&i| key(&items[i]) != bucket).map_or(order.len(), |p| start + p);
        for a in start..end {
            for b in a + 1..end {
                if same(&items[order[a]], &items[order[b]]) {
                    return false;
                }
            }
        }
        start = end;
    }
    true
}
