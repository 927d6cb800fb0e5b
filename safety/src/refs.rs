//! The reference graph: which `$ref`s are local, where they land, whether
//! they form a cycle, and how large the schema becomes when they are inlined.
//!
//! The graph has one vertex per schema and two kinds of edge: a tree edge
//! from every schema to each subschema written inside it, and a reference
//! edge from a schema carrying `$ref` to the schema the reference lands on.
//! Any cycle must use a reference edge, and it means the schema is recursive,
//! which the profile refuses (recursion cannot be bounded by a static check).
//!
//! Cycles are found with Tarjan's strongly connected components, run with an
//! explicit stack. Tarjan finishes components in reverse topological order,
//! so the expansion of each schema (1 + the expansions of its successors,
//! counting a reference at every place it is used) can be computed in the
//! same pass by dynamic programming, without ever inlining anything: the
//! work is linear in schemas plus references, and the counts saturate.

use std::collections::HashMap;

use crate::limits::MAX_EXPANDED_SCHEMAS;
use crate::node::Node;
use crate::pointer::{decode_fragment, resolve, KeyIndexes};
use crate::report::{Findings, Rule};
use crate::walker::{AddressHasher, RefSite, Schemas};

/// Marks a tree edge in [`Graph::via`] (no `$ref` behind it).
const TREE_EDGE: u32 = u32::MAX;
/// Marks a vertex not yet reached by Tarjan's walk.
const UNVISITED: u32 = u32::MAX;

/// Resolves every reference, then checks cycles and expansion.
pub(crate) fn check<N: Node>(doc: &N, schemas: &Schemas<'_, N>, findings: &mut Findings) {
    // Without a `$ref` there is nothing to land, no cycle, and every schema
    // expands to exactly what is written (`minimal_oversize` reports only
    // expansion beyond that), so the graph has nothing to say.
    if schemas.refs.is_empty() {
        return;
    }
    let by_address = schemas.by_address();
    let mut indexes = KeyIndexes::default();
    let targets: Vec<Option<usize>> =
        schemas.refs.iter().map(|site| land(doc, schemas, &by_address, &mut indexes, site, findings)).collect();
    let graph = Graph::build(schemas, &targets);
    let components = graph.components();
    for (site, target) in schemas.refs.iter().zip(&targets) {
        let Some(target) = *target else { continue };
        if components.component[site.from] == components.component[target] {
            findings.push(
                Rule::RefCycle,
                schemas.ref_pointer(site),
                format!("`$ref` \"{}\" is part of a reference cycle (a recursive schema cannot be bounded)", site.reference),
            );
        }
    }
    for node in graph.minimal_oversize(&components) {
        findings.push(
            Rule::RefExpansion,
            schemas.pointer_of(node),
            format!(
                "inlining every `$ref` in this schema yields {} schemas, more than {MAX_EXPANDED_SCHEMAS}",
                saturated(components.expansion[node])
            ),
        );
    }
}

fn saturated(count: u64) -> String {
    if count == u64::MAX {
        "astronomically many".to_owned()
    } else {
        count.to_string()
    }
}

/// Classifies one `$ref` and finds the schema it lands on, reporting why not
/// when it cannot be followed.
fn land<'d, N: Node>(
    doc: &'d N,
    schemas: &Schemas<'_, N>,
    by_address: &HashMap<*const N, usize, AddressHasher>,
    indexes: &mut KeyIndexes<'d, N>,
    site: &RefSite<'_>,
    findings: &mut Findings,
) -> Option<usize> {
    let reference = site.reference;
    let (base, fragment) = match reference.split_once('#') {
        Some((base, fragment)) => (base, fragment),
        None => (reference, ""),
    };
    let refuse = |findings: &mut Findings, rule: Rule, why: String| {
        findings.push(rule, schemas.ref_pointer(site), format!("`$ref` \"{reference}\" {why}"));
        None
    };
    if has_authority_or_scheme(base) {
        return refuse(
            findings,
            Rule::RemoteRef,
            "names another document by absolute URI; only `#` pointers into this document are allowed".into(),
        );
    }
    if !base.is_empty() {
        return refuse(
            findings,
            Rule::RelativeRef,
            "names another document by relative URI; only `#` pointers into this document are allowed".into(),
        );
    }
    if site.under_embedded_id {
        return refuse(
            findings,
            Rule::RefUnderId,
            "sits under a subschema with its own `$id`, so it resolves against that resource, not this document".into(),
        );
    }
    if !fragment.is_empty() && !fragment.starts_with('/') {
        return refuse(
            findings,
            Rule::AnchorRef,
            "uses a plain-name fragment (an `$anchor`); only JSON Pointer fragments are allowed".into(),
        );
    }
    let tokens = match decode_fragment(fragment) {
        Ok(tokens) => tokens,
        Err(error) => return refuse(findings, Rule::InvalidRef, format!("is not a JSON Pointer fragment: {error}")),
    };
    let Some(target) = resolve(doc, &tokens, indexes) else {
        return refuse(findings, Rule::MissingRefTarget, "points at nothing in this document".into());
    };
    match by_address.get(&(target as *const N)) {
        Some(node) => Some(*node),
        None => refuse(findings, Rule::MissingRefTarget, "points at a value that is not in schema position".into()),
    }
}

/// True for `scheme:` (RFC 3986 §3.1) or a network-path `//authority`.
fn has_authority_or_scheme(base: &str) -> bool {
    if base.starts_with("//") {
        return true;
    }
    let Some((scheme, _)) = base.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

/// The schema graph in compressed adjacency form.
struct Graph {
    /// `first[v]..first[v + 1]` are the edges leaving `v`.
    first: Vec<usize>,
    /// Edge targets.
    to: Vec<usize>,
    /// For each edge, the `$ref` site behind it, or [`TREE_EDGE`].
    via: Vec<u32>,
}

/// The outcome of Tarjan's pass.
struct Components {
    /// Component number of each schema.
    component: Vec<u32>,
    /// Expansion of each schema, ignoring edges inside its own component.
    expansion: Vec<u64>,
}

impl Graph {
    fn build<N>(schemas: &Schemas<'_, N>, targets: &[Option<usize>]) -> Graph {
        let vertices = schemas.nodes.len();
        let mut edges: Vec<(usize, usize, u32)> = Vec::with_capacity(vertices + targets.len());
        for (child, node) in schemas.nodes.iter().enumerate() {
            if let Some(parent) = node.parent {
                edges.push((parent, child, TREE_EDGE));
            }
        }
        for (index, (site, target)) in schemas.refs.iter().zip(targets).enumerate() {
            if let Some(target) = target {
                edges.push((site.from, *target, u32::try_from(index).unwrap_or(TREE_EDGE - 1)));
            }
        }
        // Counting sort by source: linear, and keeps document order per vertex.
        let mut first = vec![0usize; vertices + 1];
        for (from, _, _) in &edges {
            first[from + 1] += 1;
        }
        for v in 0..vertices {
            first[v + 1] += first[v];
        }
        let mut fill = first.clone();
        let mut to = vec![0usize; edges.len()];
        let mut via = vec![TREE_EDGE; edges.len()];
        for (from, target, site) in edges {
            let slot = fill[from];
            to[slot] = target;
            via[slot] = site;
            fill[from] += 1;
        }
        Graph { first, to, via }
    }

    fn vertices(&self) -> usize {
        self.first.len() - 1
    }

    fn edges(&self, v: usize) -> std::ops::Range<usize> {
        self.first[v]..self.first[v + 1]
    }

    /// Tarjan's algorithm with an explicit call stack, computing each
    /// component's expansion as soon as the component is complete.
    fn components(&self) -> Components {
        let n = self.vertices();
        let mut order = vec![UNVISITED; n];
        let mut low = vec![0u32; n];
        let mut on_stack = vec![false; n];
        let mut component = vec![UNVISITED; n];
        let mut expansion = vec![0u64; n];
        let mut pending: Vec<usize> = Vec::new();
        let mut calls: Vec<(usize, usize)> = Vec::new();
        let mut counter: u32 = 0;
        let mut components: u32 = 0;
        for start in 0..n {
            if order[start] != UNVISITED {
                continue;
            }
            order[start] = counter;
            low[start] = counter;
            counter += 1;
            pending.push(start);
            on_stack[start] = true;
            calls.push((start, self.first[start]));
            while let Some(frame) = calls.last_mut() {
                let v = frame.0;
                if frame.1 < self.first[v + 1] {
                    let w = self.to[frame.1];
                    frame.1 += 1;
                    if order[w] == UNVISITED {
                        order[w] = counter;
                        low[w] = counter;
                        counter += 1;
                        pending.push(w);
                        on_stack[w] = true;
                        calls.push((w, self.first[w]));
                    } else if on_stack[w] {
                        low[v] = low[v].min(order[w]);
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(u, _)) = calls.last() {
                    low[u] = low[u].min(low[v]);
                }
                if low[v] != order[v] {
                    continue;
                }
                let mark = pending.iter().rposition(|&w| w == v).unwrap_or(0);
                let members = pending.split_off(mark);
                for &m in &members {
                    on_stack[m] = false;
                    component[m] = components;
                }
                for &m in &members {
                    let mut total: u64 = 1;
                    for e in self.edges(m) {
                        let w = self.to[e];
                        if component[w] != components {
                            total = total.saturating_add(expansion[w]);
                        }
                    }
                    expansion[m] = total;
                }
                components += 1;
            }
        }
        Components { component, expansion }
    }

    /// Schemas whose expansion exceeds the bound although no successor's
    /// does, and whose expansion is larger than what is written under them
    /// (otherwise the size comes from the text, which `too-many-nodes`
    /// already judges, not from references).
    fn minimal_oversize(&self, components: &Components) -> Vec<usize> {
        let n = self.vertices();
        // Vertices are numbered in document pre-order, so a reverse sweep
        // sees every child before its parent.
        let mut written = vec![1u64; n];
        for v in (0..n).rev() {
            for e in self.edges(v) {
                if self.via[e] == TREE_EDGE {
                    written[v] = written[v].saturating_add(written[self.to[e]]);
                }
            }
        }
        let over = |v: usize| components.expansion[v] > MAX_EXPANDED_SCHEMAS;
        (0..n)
            .filter(|&v| over(v) && components.expansion[v] > written[v])
            .filter(|&v| {
                self.edges(v).all(|e| {
                    let w = self.to[e];
                    components.component[w] == components.component[v] || !over(w)
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::walker::walk;
    use serde_json::{json, Value};

    fn rules(doc: &Value) -> Vec<(Rule, String)> {
        let mut findings = Findings::default();
        let schemas = walk(doc, &mut findings);
        check(doc, &schemas, &mut findings);
        findings.into_verdict().violations.into_iter().map(|v| (v.rule, v.pointer)).collect()
    }

    #[test]
    fn classifies_references() {
        let cases: &[(&str, Option<Rule>)] = &[
            ("#", Some(Rule::RefCycle)),
            ("", Some(Rule::RefCycle)),
            ("#/$defs/a", None),
            ("#/%24defs/a", None),
            ("https://example.com/s.json", Some(Rule::RemoteRef)),
            ("//example.com/s.json", Some(Rule::RemoteRef)),
            ("urn:uuid:deadbeef-1234-0000-0000-4321feebdaed", Some(Rule::RemoteRef)),
            ("other.json#/a", Some(Rule::RelativeRef)),
            ("a:b/c.json", Some(Rule::RemoteRef)),
            ("./a:b.json", Some(Rule::RelativeRef)),
            ("#name", Some(Rule::AnchorRef)),
            ("#/$defs/a~2", Some(Rule::InvalidRef)),
            ("#/$defs/missing", Some(Rule::MissingRefTarget)),
            ("#/$defs/a/type", Some(Rule::MissingRefTarget)),
        ];
        for (reference, expected) in cases {
            let doc = json!({"properties": {"p": {"$ref": reference}}, "$defs": {"a": {"type": "string"}}});
            let found: Vec<Rule> = rules(&doc).into_iter().map(|(rule, _)| rule).collect();
            assert_eq!(found, expected.iter().copied().collect::<Vec<_>>(), "{reference}");
        }
    }

    #[test]
    fn reports_every_reference_in_a_cycle() {
        let doc = json!({"$defs": {
            "a": {"$ref": "#/$defs/b"},
            "b": {"$ref": "#/$defs/c"},
            "c": {"$ref": "#/$defs/a"},
            "d": {"$ref": "#/$defs/a"}
        }});
        assert_eq!(
            rules(&doc),
            vec![
                (Rule::RefCycle, "/$defs/a/$ref".to_owned()),
                (Rule::RefCycle, "/$defs/b/$ref".to_owned()),
                (Rule::RefCycle, "/$defs/c/$ref".to_owned()),
            ]
        );
    }

    #[test]
    fn recursion_to_an_ancestor_is_a_cycle() {
        let doc = json!({"properties": {"child": {"items": {"$ref": "#/properties/child"}}}});
        assert_eq!(rules(&doc), vec![(Rule::RefCycle, "/properties/child/items/$ref".to_owned())]);
    }

    #[test]
    fn diamond_dag_is_fine_and_counts_every_use() {
        let doc = json!({"$defs": {
            "leaf": {"type": "string"},
            "mid": {"allOf": [{"$ref": "#/$defs/leaf"}, {"$ref": "#/$defs/leaf"}]},
        }, "anyOf": [{"$ref": "#/$defs/mid"}, {"$ref": "#/$defs/mid"}]});
        let mut findings = Findings::default();
        let schemas = walk(&doc, &mut findings);
        check(&doc, &schemas, &mut findings);
        assert!(findings.into_verdict().accepted);
        let graph = Graph::build(&schemas, &[Some(1), Some(1), Some(2), Some(2)]);
        let components = graph.components();
        // leaf = 1; each use of leaf in mid is a branch (1) + leaf (1): mid = 1 + 2 + 2 = 5;
        // each use of mid under anyOf is 1 + 5; root = 1 + leaf 1 + mid 5 + 6 + 6 = 19.
        assert_eq!(components.expansion[0], 19);
    }

    /// `~2` is no escape (RFC 6901 §3), even where a key spelled with it exists: the
    /// generator reads pointers by the same rules (`checkfu-wire-vocab`'s `schema_syntax`),
    /// so it refuses this `$ref` too rather than compile it against that key.
    #[test]
    fn a_tilde_not_followed_by_0_or_1_is_refused_even_when_the_key_exists() {
        let doc = json!({"properties": {"p": {"$ref": "#/$defs/a~2b"}}, "$defs": {"a~2b": {"type": "string"}}});
        assert_eq!(rules(&doc), vec![(Rule::InvalidRef, "/properties/p/$ref".to_owned())]);
    }

    #[test]
    fn doubling_chain_is_an_expansion_bomb() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..20 {
            let previous = format!("#/$defs/d{}", i - 1);
            defs.insert(format!("d{i}"), json!({"allOf": [{"$ref": previous}, {"$ref": previous}]}));
        }
        let doc = json!({"$defs": defs});
        let found = rules(&doc);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, Rule::RefExpansion);
        // d_k = 1 + 2 * (1 + d_(k-1)) = 4 * 2^k - 3 first exceeds 8192 at k = 12.
        assert_eq!(found[0].1, "/$defs/d12");
    }
}
