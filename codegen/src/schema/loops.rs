//! Reference loops that make no progress: a definition that, to decide an instance, must
//! decide the same instance against itself again (`{"$ref": "#"}`, `a → b → a`, or the
//! same through `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`).
//!
//! Such a schema has no meaning (JSON Schema 2020-12 §9.4.1 leaves it undefined) and the
//! generated check would recurse until the stack overflows, which aborts the process
//! with nothing to catch. So the loop is found at generation time, in the normalized
//! definitions, and reported once per loop with every hop named.
//!
//! A reference reached through `properties`, `items`, `additionalProperties`,
//! `propertyNames`, `contains`, … is progress: it applies to a member or an item, which is
//! smaller than the instance, so the recursion ends with the instance.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use checkfu_wire_vocab::schema_syntax::{escape, Holds, SUBSCHEMA_KEYWORDS};

use super::error::NormalizeError;
use super::normalize::Normalized;

/// One step of a loop: the definition it leaves and the input pointer of the `$ref`.
#[derive(Clone, Debug)]
struct Hop {
    target: String,
    at: String,
}

/// The `$ref`s of `schema` that apply to the same instance, with their input pointers.
fn same_instance_refs(schema: &Value, at: &str, out: &mut Vec<Hop>) {
    let Value::Object(object) = schema else { return };
    if let Some(Value::String(r)) = object.get("$ref") {
        if let Some(name) = r.strip_prefix("#/$defs/") {
            out.push(Hop { target: name.to_string(), at: format!("{at}/$ref") });
        }
    }
    let child = |key: &str, rest: &str| format!("{at}/{}{rest}", escape(key));
    // The keywords that apply their subschemas to the instance itself, in the table's
    // order (so hops, and the loop reported first, do not depend on the file's key order).
    for (key, subschemas) in SUBSCHEMA_KEYWORDS.iter().filter(|(_, s)| s.in_place && s.validates) {
        match (subschemas.holds, object.get(*key)) {
            (Holds::List, Some(Value::Array(members))) => {
                for (i, member) in members.iter().enumerate() {
                    same_instance_refs(member, &child(key, &format!("/{i}")), out);
                }
            }
            (Holds::One, Some(member)) => same_instance_refs(member, &child(key, ""), out),
            (Holds::Map, Some(Value::Object(members))) => {
                for (name, member) in members {
                    same_instance_refs(member, &child(key, &format!("/{}", escape(name))), out);
                }
            }
            // Legacy `dependencies` is `dependentSchemas` once normalized.
            _ => {}
        }
    }
}

/// The same-instance edges of every definition, keyed by definition name.
fn graph(defs: &Map<String, Value>, origins: &BTreeMap<String, String>) -> BTreeMap<String, Vec<Hop>> {
    defs.iter()
        .map(|(name, schema)| {
            let mut hops = Vec::new();
            same_instance_refs(schema, origins.get(name).map_or("", String::as_str), &mut hops);
            hops.retain(|h| defs.contains_key(&h.target));
            (name.clone(), hops)
        })
        .collect()
}

/// Finds a cycle back to `start` through definitions not yet `done`, as the hops taken.
fn cycle_from(start: &str, graph: &BTreeMap<String, Vec<Hop>>, done: &BTreeSet<String>) -> Option<Vec<(String, Hop)>> {
    // Iterative depth-first search: a chain of a thousand definitions must not overflow
    // the generator's stack either.
    let mut visited = BTreeSet::new();
    let mut path: Vec<(String, Hop)> = Vec::new();
    let mut stack: Vec<(String, usize)> = vec![(start.to_string(), 0)];
    visited.insert(start.to_string());
    while let Some((node, next)) = stack.pop() {
        let hops = graph.get(&node).map_or(&[][..], Vec::as_slice);
        let Some(hop) = hops.get(next) else {
            path.pop();
            continue;
        };
        stack.push((node.clone(), next + 1));
        if hop.target == start {
            path.push((node, hop.clone()));
            return Some(path);
        }
        if done.contains(&hop.target) || !visited.insert(hop.target.clone()) {
            continue;
        }
        path.push((node, hop.clone()));
        stack.push((hop.target.clone(), 0));
    }
    None
}

/// One error per loop that makes no progress, at the `$ref` that starts it.
pub fn find(normalized: &Normalized) -> Vec<NormalizeError> {
    let graph = graph(&normalized.defs, &normalized.origins);
    let origin = |name: &str| format!("#{}", normalized.origins.get(name).map_or("", String::as_str));
    let mut done: BTreeSet<String> = BTreeSet::new();
    let mut errors = Vec::new();
    for name in graph.keys() {
        if let Some(cycle) = cycle_from(name, &graph, &done) {
            let mut names: Vec<String> = cycle.iter().map(|(from, _)| origin(from)).collect();
            names.push(origin(name));
            let through: Vec<String> = cycle.iter().map(|(_, hop)| format!("`#{}`", hop.at)).collect();
            errors.push(NormalizeError {
                pointer: cycle[0].1.at.clone(),
                message: format!(
                    "a `$ref` loop that makes no progress: {} (through {}) checks the same instance against itself again, so checking it would never end",
                    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(" → "),
                    through.join(", "),
                ),
            });
            done.extend(cycle.into_iter().map(|(from, _)| from));
        }
        done.insert(name.clone());
    }
    errors
}
