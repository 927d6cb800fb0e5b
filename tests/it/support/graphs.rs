//! Schemas whose reference graphs are hard on a compiler: long chains and cycles of
//! definitions, and chains where each definition refers to the next from two places (the
//! shape that makes naive checks exponential).

use serde_json::{json, Map, Value};

fn document(defs: Map<String, Value>) -> Value {
    json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": "#/$defs/d0", "$defs": defs})
}

/// `d0 → d1 → … → d(n-1)`, each holding the next through the property `next`; the last is
/// a string.
pub fn chain(n: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..n {
        let def = if i + 1 == n {
            json!({"type": "string"})
        } else {
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/d{}", i + 1)}, "n": {"type": "integer"}}, "required": ["n"]})
        };
        defs.insert(format!("d{i}"), def);
    }
    document(defs)
}

/// `d0 → d1 → … → d(n-1) → d0`, each holding the next through the property `next`.
pub fn cycle(n: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..n {
        defs.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": {"next": {"$ref": format!("#/$defs/d{}", (i + 1) % n)}, "n": {"type": "integer"}}, "required": ["n"]}),
        );
    }
    document(defs)
}

/// `d0 … d(depth-1)`, each an `anyOf` of the next and of an `allOf` holding the next, so
/// a check that re-evaluates shared subschemas asks the last one 2^depth times; the last
/// is an integer, so a string fails every path and every path is tried.
pub fn shared_chain(depth: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..depth {
        let def = if i + 1 == depth {
            json!({"type": "integer", "minimum": 0})
        } else {
            let next = format!("#/$defs/d{}", i + 1);
            json!({"anyOf": [{"$ref": next}, {"allOf": [{"$ref": next}]}]})
        };
        defs.insert(format!("d{i}"), def);
    }
    document(defs)
}
