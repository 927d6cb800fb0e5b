//! What the runtime compiles of each schema, decided from the catalog as data: the roots
//! are the definitions the decoder tables name (every slot's payload and result, every
//! method's params, result and envelope: what the decoder, admission and conformance
//! check) and the root of the `[oneshot] stream_schema` (the one-shot stream reader's
//! events), and the runtime compiles the checks those call, transitively. A schema no root
//! reaches (MCP, say) compiles into the runtime not at all; every schema's whole module,
//! with its types and decoders, is `checkfu-wire-typed`'s.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Def, Plan};

/// Module name → the definitions whose checks the runtime calls directly.
pub type Roots = BTreeMap<String, BTreeSet<String>>;

/// The runtime's roots: the definitions the decoder tables name, and the root definition of
/// the one-shot stream schema `oneshot_stream` (a file under `schemas/`).
pub fn roots(plan: &Plan, oneshot_stream: &str) -> Roots {
    let mut roots = Roots::new();
    for def in table_defs(plan) {
        roots.entry(def.module.clone()).or_default().insert(def.name.clone());
    }
    let (module, root) = crate::rust::names::names(oneshot_stream);
    roots.entry(module).or_default().insert(root);
    roots
}

/// The module of the one-shot stream schema `oneshot_stream` when nothing but the one-shot
/// stream reader reaches it (no decoder table names one of its definitions): the runtime
/// compiles it only with its `oneshot` feature, as it does the reader.
pub fn oneshot_only(plan: &Plan, oneshot_stream: &str) -> Option<String> {
    let (module, _) = crate::rust::names::names(oneshot_stream);
    let named_by_tables = table_defs(plan).any(|def| def.module == module);
    (!named_by_tables).then_some(module)
}

/// The module of the ACP v2 schema `acp_v2` when only the v2 decoder tables name its
/// definitions: the runtime compiles it only with its `acp-v2` feature, as it does those
/// tables, so a dependent that reads v1 alone compiles none of it.
pub fn acp_v2_only(plan: &Plan, acp_v2: &str) -> Option<String> {
    let (module, _) = crate::rust::names::names(acp_v2);
    let named_by_v1 = v1_table_defs(plan).any(|def| def.module == module);
    (!named_by_v1).then_some(module)
}

/// The definitions the decoder tables name: every slot's payload and result, every method's
/// params, result and envelope, v2's methods' included.
fn table_defs(plan: &Plan) -> impl Iterator<Item = &Def> {
    v1_table_defs(plan).chain(plan.v2.methods.iter().flat_map(method_defs).flatten())
}

/// The definitions the v1 decoder tables name (the slots are shared by both versions).
fn v1_table_defs(plan: &Plan) -> impl Iterator<Item = &Def> {
    let slots = plan.slots.iter().flat_map(|s| [Some(&s.payload), s.result.as_ref()]);
    let methods = plan.methods.iter().flat_map(method_defs);
    slots.chain(methods).flatten()
}

fn method_defs(m: &super::model::MethodPlan) -> [Option<&Def>; 3] {
    [m.params.as_ref(), m.result.as_ref(), m.envelope.as_ref()]
}

/// The definitions `roots` lead to in a schema's call graph (`calls::call_graph`),
/// themselves included: closed under calls, so every check they call is among them.
pub fn closure(graph: &BTreeMap<String, Vec<String>>, roots: &BTreeSet<String>) -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut pending: Vec<&String> = roots.iter().filter(|r| graph.contains_key(*r)).collect();
    while let Some(name) = pending.pop() {
        if reached.insert(name.clone()) {
            pending.extend(graph.get(name).into_iter().flatten().filter(|n| !reached.contains(*n)));
        }
    }
    reached
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<String, Vec<String>> {
        edges.iter().map(|(from, to)| (from.to_string(), to.iter().map(|t| t.to_string()).collect())).collect()
    }

    #[test]
    fn follows_calls_through_cycles_and_stops_at_the_unreached() {
        let g = graph(&[("A", &["B"]), ("B", &["C", "A"]), ("C", &[]), ("D", &["A"]), ("E", &[])]);
        let roots = ["A".to_string()].into_iter().collect();
        let reached: Vec<String> = closure(&g, &roots).into_iter().collect();
        assert_eq!(reached, ["A", "B", "C"]);
    }

    #[test]
    fn a_root_that_is_no_definition_reaches_nothing() {
        let g = graph(&[("A", &[])]);
        let roots = ["Gone".to_string()].into_iter().collect();
        assert!(closure(&g, &roots).is_empty());
    }
}
