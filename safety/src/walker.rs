//! The schema walk: visits every value in schema position, applies the
//! per-keyword rules, and records the schemas and references that the
//! reference graph needs.
//!
//! The walk knows which keywords of JSON Schema 2020-12 (and the legacy
//! `definitions`, `dependencies`, array `items` and `additionalItems`) hold
//! subschemas, and only those values are treated as schemas. That matters for
//! correctness, not just speed: a property *named* `pattern` or `$ref` under
//! `properties`, or a `$ref` inside a `const` or `enum` value, is data, and
//! must be neither checked as a pattern nor followed as a reference.
//!
//! The walk recurses, but only to [`MAX_DEPTH`] JSON levels: the extent pass
//! has already reported anything deeper, so the guard costs no finding and
//! keeps the native stack shallow on any input.

use std::collections::HashMap;

use checkfu_wire_vocab::schema_syntax::{subschemas, Holds, Subschemas};

use crate::limits::{MAX_COMBINATOR_BRANCHES, MAX_DEPTH, MAX_SCHEMAS};
use crate::node::{Node, Object, View};
use crate::pattern::PatternChecker;
use crate::pointer::{render, render_with, Token};
use crate::report::{Findings, Rule};

/// One schema as written: where it is, and which schema holds it.
#[derive(Debug)]
pub(crate) struct SchemaNode<'a, N> {
    /// The schema this one is nested in; None for the root.
    pub(crate) parent: Option<usize>,
    /// The one or two steps from the parent: a keyword, then possibly a
    /// property name or an index (`properties`/`name`, `anyOf`/`2`).
    pub(crate) steps: [Option<Token<'a>>; 2],
    /// The schema itself (its address identifies it as a `$ref` target).
    pub(crate) value: &'a N,
}

/// One `$ref` as written.
#[derive(Debug)]
pub(crate) struct RefSite<'a> {
    /// The schema that carries the `$ref`; the pointer to the `$ref` member
    /// is rendered only when a violation needs it.
    pub(crate) from: usize,
    /// The reference string.
    pub(crate) reference: &'a str,
    /// True when a subschema on the way down (or this one) has its own `$id`.
    pub(crate) under_embedded_id: bool,
}

/// Everything the walk records for the reference graph.
#[derive(Debug)]
pub(crate) struct Schemas<'a, N> {
    /// Every schema in document pre-order; index 0 is the root.
    pub(crate) nodes: Vec<SchemaNode<'a, N>>,
    /// Every string `$ref`, in document order.
    pub(crate) refs: Vec<RefSite<'a>>,
}

// Not derived: `derive(Default)` would demand `N: Default`, which no tree
// needs to provide for an empty list.
impl<N> Default for Schemas<'_, N> {
    fn default() -> Self {
        Schemas { nodes: Vec::new(), refs: Vec::new() }
    }
}

/// Hashes value addresses. They are distinct by construction and not chosen
/// by the author (who controls only the document's shape), so a
/// multiplicative hash is enough and avoids SipHash on the hot path.
#[derive(Clone, Copy, Default)]
pub(crate) struct AddressHasher;

impl std::hash::BuildHasher for AddressHasher {
    type Hasher = AddressHash;
    fn build_hasher(&self) -> AddressHash {
        AddressHash(0)
    }
}

/// The hasher state for [`AddressHasher`].
pub(crate) struct AddressHash(u64);

impl std::hash::Hasher for AddressHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, value: usize) {
        self.0 = (value as u64 ^ (value as u64 >> 29)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl<N> Schemas<'_, N> {
    /// Schema index by the address of its value, so that a resolved `$ref`
    /// target can be recognised as a schema (or not) in constant time. Built
    /// only for documents that have references.
    pub(crate) fn by_address(&self) -> HashMap<*const N, usize, AddressHasher> {
        self.nodes.iter().enumerate().map(|(index, node)| (node.value as *const N, index)).collect()
    }

    /// The pointer of the `$ref` member of a reference site.
    pub(crate) fn ref_pointer(&self, site: &RefSite<'_>) -> String {
        let mut pointer = self.pointer_of(site.from);
        pointer.push_str("/$ref");
        pointer
    }

    /// The RFC 6901 pointer of a schema, rebuilt from its parent chain.
    pub(crate) fn pointer_of(&self, node: usize) -> String {
        let mut steps: Vec<Token<'_>> = Vec::new();
        let mut here = Some(node);
        while let Some(index) = here {
            let Some(schema) = self.nodes.get(index) else {
                break;
            };
            steps.extend(schema.steps.iter().rev().flatten().copied());
            here = schema.parent;
        }
        steps.reverse();
        render(&steps)
    }
}

/// Where the walk is: the enclosing schema and the path below the document.
struct Place<'p, 'a> {
    parent: Option<usize>,
    path: &'p mut Vec<Token<'a>>,
    depth: usize,
    under_embedded_id: bool,
}

/// Walks the schema document `doc`, reporting into `findings`.
pub(crate) fn walk<'a, N: Node>(doc: &'a N, findings: &mut Findings) -> Schemas<'a, N> {
    let mut walker = Walker { findings, schemas: Schemas::default(), patterns: PatternChecker::new(), combinators: 0 };
    let mut path = Vec::new();
    let mut root = Place { parent: None, path: &mut path, depth: 0, under_embedded_id: false };
    walker.schema(doc, &mut root, [None, None]);
    walker.schemas
}

struct Walker<'f, 'a, N> {
    findings: &'f mut Findings,
    schemas: Schemas<'a, N>,
    patterns: PatternChecker<'a>,
    combinators: usize,
}

impl<'a, N: Node> Walker<'_, 'a, N> {
    fn schema(&mut self, value: &'a N, place: &mut Place<'_, 'a>, steps: [Option<Token<'a>>; 2]) {
        if place.depth > MAX_DEPTH {
            return;
        }
        let map = match value.view() {
            View::Bool(_) => None,
            View::Object(map) => Some(map),
            _ => {
                self.findings.push(
                    Rule::NotASchema,
                    render(place.path),
                    format!("expected a schema (an object or a boolean), found {}", kind(value)),
                );
                return;
            }
        };
        let node = self.schemas.nodes.len();
        self.schemas.nodes.push(SchemaNode { parent: place.parent, steps, value });
        if node == MAX_SCHEMAS {
            self.findings.push(
                Rule::TooManyNodes,
                render(place.path),
                format!("the document holds more than {MAX_SCHEMAS} schemas; this is the first beyond"),
            );
        }
        if let Some(map) = map {
            // The root's `$id` names the document itself; any other `$id`
            // starts an embedded resource whose `#…` references resolve
            // against it, not against this document.
            let embedded = place.under_embedded_id || (place.depth > 0 && map.contains_key("$id"));
            let mut inner = Place { parent: Some(node), path: &mut *place.path, depth: place.depth, under_embedded_id: embedded };
            self.keywords(map, node, &mut inner);
        }
    }

    fn keywords(&mut self, map: N::Object<'a>, node: usize, place: &mut Place<'_, 'a>) {
        for (keyword, value) in map.members() {
            match keyword {
                "$ref" => self.reference(value, node, place),
                "$dynamicRef" | "$dynamicAnchor" => self.findings.push(
                    Rule::DynamicRef,
                    render_with(place.path, keyword),
                    format!("`{keyword}` resolves at run time through the dynamic scope; only static local `$ref` is allowed"),
                ),
                "$recursiveRef" | "$recursiveAnchor" => self.findings.push(
                    Rule::RecursiveRef,
                    render_with(place.path, keyword),
                    format!("`{keyword}` (draft 2019-09 recursion) is not allowed; only static local `$ref` is"),
                ),
                "uniqueItems" if value.as_bool() == Some(true) => self.findings.push(
                    Rule::UniqueItems,
                    render_with(place.path, keyword),
                    "`uniqueItems: true` costs quadratic work per array and is not allowed".to_owned(),
                ),
                "pattern" => match value.as_str() {
                    Some(pattern) => self.pattern(pattern, render_with(place.path, keyword)),
                    None => self.findings.push(
                        Rule::PatternSyntax,
                        render_with(place.path, keyword),
                        format!("`pattern` must be a string, found {}", kind(value)),
                    ),
                },
                _ => {
                    // Every keyword that holds subschemas is walked, `contentSchema`'s
                    // annotation too: a reference in it is still one a validator may follow.
                    // Subschemas applied to the instance itself are combinator branches.
                    if let Some(Subschemas { holds, in_place, .. }) = subschemas(keyword) {
                        place.path.push(Token::Key(keyword));
                        self.subschemas(keyword, value, holds, in_place, place);
                        place.path.pop();
                    }
                }
            }
        }
    }

    /// Visits the subschemas under one keyword; `place.path` ends with it.
    fn subschemas(&mut self, keyword: &'a str, value: &'a N, holds: Holds, branches: bool, place: &mut Place<'_, 'a>) {
        let first = Some(Token::Key(keyword));
        match (holds, value.view()) {
            (Holds::One, _) | (Holds::OneOrList, View::Object(_) | View::Bool(_)) => {
                self.child(value, place, [first, None], branches, 1);
            }
            (Holds::List | Holds::OneOrList, View::Array(items)) => {
                for (index, item) in items.iter().enumerate() {
                    let token = Token::Index(index);
                    place.path.push(token);
                    self.child(item, place, [first, Some(token)], branches, 2);
                    place.path.pop();
                }
            }
            (Holds::Map | Holds::Dependencies, View::Object(entries)) => {
                for (name, item) in entries.members() {
                    let token = Token::Key(name);
                    place.path.push(token);
                    if keyword == "patternProperties" {
                        self.pattern(name, render(place.path));
                    }
                    let names_only = matches!(holds, Holds::Dependencies) && item.is_array();
                    if !names_only {
                        self.child(item, place, [first, Some(token)], branches, 2);
                    }
                    place.path.pop();
                }
            }
            _ => {
                let expected = match holds {
                    Holds::One | Holds::OneOrList => "a schema",
                    Holds::Map | Holds::Dependencies => "an object of schemas",
                    Holds::List => "an array of schemas",
                };
                self.findings.push(
                    Rule::NotASchema,
                    render(place.path),
                    format!("`{keyword}` must hold {expected}, found {}", kind(value)),
                );
            }
        }
    }

    /// Visits one subschema `levels` JSON levels below the enclosing schema.
    fn child(&mut self, value: &'a N, place: &mut Place<'_, 'a>, steps: [Option<Token<'a>>; 2], branch: bool, levels: usize) {
        if branch {
            self.combinators += 1;
            if self.combinators == MAX_COMBINATOR_BRANCHES + 1 {
                self.findings.push(
                    Rule::TooManyCombinators,
                    render(place.path),
                    format!(
                        "more than {MAX_COMBINATOR_BRANCHES} combinator branches (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas); this is the first beyond"
                    ),
                );
            }
        }
        let mut below =
            Place { parent: place.parent, path: &mut *place.path, depth: place.depth + levels, under_embedded_id: place.under_embedded_id };
        self.schema(value, &mut below, steps);
    }

    fn reference(&mut self, value: &'a N, node: usize, place: &mut Place<'_, 'a>) {
        match value.as_str() {
            Some(reference) => self.schemas.refs.push(RefSite { from: node, reference, under_embedded_id: place.under_embedded_id }),
            None => self.findings.push(
                Rule::InvalidRef,
                render_with(place.path, "$ref"),
                format!("`$ref` must be a string, found {}", kind(value)),
            ),
        }
    }

    fn pattern(&mut self, pattern: &'a str, pointer: String) {
        for fault in self.patterns.check(pattern) {
            self.findings.push(fault.rule, pointer.clone(), fault.message);
        }
    }
}

fn kind<N: Node>(value: &N) -> &'static str {
    match value.view() {
        View::Null => "null",
        View::Bool(_) => "a boolean",
        View::Number(_) => "a number",
        View::String(_) => "a string",
        View::Array(_) => "an array",
        View::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn walked(doc: &Value) -> (Vec<(Rule, String)>, usize, Vec<String>) {
        let mut findings = Findings::default();
        let schemas = walk(doc, &mut findings);
        let found = findings.into_verdict().violations.into_iter().map(|v| (v.rule, v.pointer)).collect();
        let pointers = (0..schemas.nodes.len()).map(|n| schemas.pointer_of(n)).collect();
        (found, schemas.nodes.len(), pointers)
    }

    #[test]
    fn data_keywords_are_not_schemas() {
        let doc = json!({
            "properties": {"pattern": {"type": "string"}, "$ref": {"const": {"$ref": "http://x"}}},
            "enum": [{"uniqueItems": true, "pattern": "a*"}],
            "x-unknown": {"pattern": "(a+)+"}
        });
        let (found, count, pointers) = walked(&doc);
        assert_eq!(found, vec![]);
        assert_eq!(count, 3);
        assert_eq!(pointers, vec!["", "/properties/pattern", "/properties/$ref"]);
    }

    #[test]
    fn pointers_escape_names() {
        let doc = json!({"$defs": {"a/b": {"uniqueItems": true}, "c~d": {"items": [{"pattern": "("}]}}});
        let (found, _, pointers) = walked(&doc);
        assert_eq!(
            found,
            vec![
                (Rule::UniqueItems, "/$defs/a~1b/uniqueItems".to_owned()),
                (Rule::PatternSyntax, "/$defs/c~0d/items/0/pattern".to_owned()),
            ]
        );
        assert_eq!(pointers[3], "/$defs/c~0d/items/0");
    }

    #[test]
    fn pattern_property_keys_are_patterns() {
        let doc = json!({"patternProperties": {"^a+$": {}, "^[a-z]{1,4}$": true}});
        let (found, count, _) = walked(&doc);
        assert_eq!(found, vec![(Rule::PatternUnboundedRepetition, "/patternProperties/^a+$".to_owned())]);
        assert_eq!(count, 3);
    }

    #[test]
    fn malformed_keywords_are_not_schemas() {
        let doc = json!({"properties": [], "allOf": {}, "not": 3, "dependencies": {"a": ["b"]}});
        let (found, _, _) = walked(&doc);
        let rules: Vec<Rule> = found.iter().map(|(rule, _)| *rule).collect();
        assert_eq!(rules, vec![Rule::NotASchema; 3]);
    }

    #[test]
    fn refs_record_embedded_ids() {
        let doc = json!({
            "$id": "https://example.com/root",
            "$ref": "#/$defs/a",
            "$defs": {"a": {"$id": "inner", "items": {"$ref": "#"}}}
        });
        let mut findings = Findings::default();
        let schemas = walk(&doc, &mut findings);
        let sites: Vec<(String, bool)> = schemas.refs.iter().map(|site| (schemas.ref_pointer(site), site.under_embedded_id)).collect();
        assert_eq!(sites, vec![("/$ref".to_owned(), false), ("/$defs/a/items/$ref".to_owned(), true)]);
    }

    #[test]
    fn counts_combinator_branches() {
        let branches: Vec<Value> = (0..=MAX_COMBINATOR_BRANCHES).map(|_| json!({})).collect();
        let doc = json!({"anyOf": branches});
        let (found, _, _) = walked(&doc);
        assert_eq!(found, vec![(Rule::TooManyCombinators, format!("/anyOf/{MAX_COMBINATOR_BRANCHES}"))]);
    }
}
