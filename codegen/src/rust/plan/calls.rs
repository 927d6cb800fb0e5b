//! A schema's definition call graph: which definitions each one's schema refers to. The
//! checks call exactly these (so `indirection` cuts the same graph the checks and types
//! follow), and `reach` walks it from the runtime's roots.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// Every definition's references to others, anywhere in its schema.
pub fn call_graph(defs: &Map<String, Value>) -> BTreeMap<String, Vec<String>> {
    fn walk(value: &Value, defs: &Map<String, Value>, out: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, child) in object {
                    match (key.as_str(), child) {
                        ("$ref", Value::String(r)) => out.extend(defined(r).filter(|n| defs.contains_key(*n)).map(String::from)),
                        // Data, not schemas: a `$ref` member of a `const` is no reference.
                        ("const" | "enum" | "default" | "examples", _) => {}
                        // Maps of schemas, whose keys are names (a property may be called `const`).
                        ("properties" | "patternProperties" | "dependentSchemas" | "$defs", Value::Object(map)) => {
                            map.values().for_each(|schema| walk(schema, defs, out));
                        }
                        _ => walk(child, defs, out),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| walk(item, defs, out)),
            _ => {}
        }
    }
    defs.iter()
        .map(|(name, schema)| {
            let mut out = Vec::new();
            walk(schema, defs, &mut out);
            (name.clone(), out)
        })
        .collect()
}

/// The definition a `$ref` names, when it names a whole local one (`#/$defs/Name`).
pub fn defined(r: &str) -> Option<&str> {
    r.strip_prefix("#/$defs/").filter(|name| !name.contains('/') && !name.is_empty())
}
