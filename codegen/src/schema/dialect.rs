//! JSON Schema dialects: which draft a document is written in, and how each schema object
//! of that draft reads in the one model the checks compile (draft 2020-12's keywords).
//!
//! The root's `$schema` selects the dialect (draft-04, -06, -07, 2019-09, 2020-12); a
//! document without one is read as 2020-12, or as the default the caller names (the
//! JSON-Schema-Test-Suite's directories name theirs). Each draft keeps its own meaning:
//!
//! - a keyword the draft does not define is an unknown keyword there, so an annotation
//!   (`if` in draft-06, `prefixItems` or `dependentRequired` in draft-07, …);
//! - `items` as an array is `prefixItems`, and `additionalItems` is then `items`
//!   (before 2020-12; with a single `items`, `additionalItems` does nothing);
//! - `dependencies` is `dependentRequired` (array values) and `dependentSchemas` (schema
//!   values) before 2019-09;
//! - draft-04's boolean `exclusiveMaximum`/`exclusiveMinimum` turn `maximum`/`minimum`
//!   into the exclusive bound;
//! - draft-04's `id` is what `$id` is later (below the root it changes the base of
//!   references, which is refused like an embedded `$id`);
//! - before 2019-09, the siblings of `$ref` are ignored;
//! - 2019-09's `$recursiveRef: "#"` is `$ref: "#"`: with no embedded resource (an
//!   embedded `$id` is refused) the dynamic scope has one resource, so the outermost one
//!   with `$recursiveAnchor: true` is the root, and so is the root without one.
//!
//! Entries keep the input key they came from, so pointers into the input stay exact.

use checkfu_wire_vocab::schema_syntax::{self, applicator, escape, Holds};
use serde_json::{Map, Value};

use super::error::NormalizeError;
use super::pointer::get as node_at;

/// A JSON Schema draft.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dialect {
    Draft4,
    Draft6,
    Draft7,
    Draft2019,
    Draft2020,
}

/// Keywords some draft gives a meaning to: outside the drafts that define them, each is an
/// unknown keyword, read as an annotation.
const DRAFTED: &[(&str, Dialect, Dialect)] = {
    use Dialect::*;
    &[
        ("const", Draft6, Draft2020),
        ("contains", Draft6, Draft2020),
        ("propertyNames", Draft6, Draft2020),
        ("$id", Draft6, Draft2020),
        ("if", Draft7, Draft2020),
        ("then", Draft7, Draft2020),
        ("else", Draft7, Draft2020),
        ("dependentRequired", Draft2019, Draft2020),
        ("dependentSchemas", Draft2019, Draft2020),
        ("unevaluatedProperties", Draft2019, Draft2020),
        ("unevaluatedItems", Draft2019, Draft2020),
        ("minContains", Draft2019, Draft2020),
        ("maxContains", Draft2019, Draft2020),
        ("$anchor", Draft2019, Draft2020),
        // 2020-12 dropped both; the checks refuse them there rather than ignore them.
        ("$recursiveAnchor", Draft2019, Draft2020),
        ("$recursiveRef", Draft2019, Draft2020),
        ("prefixItems", Draft2020, Draft2020),
        ("$dynamicRef", Draft2020, Draft2020),
        ("$dynamicAnchor", Draft2020, Draft2020),
        ("id", Draft4, Draft4),
        ("dependencies", Draft4, Draft7),
        ("additionalItems", Draft4, Draft2019),
    ]
};

impl Dialect {
    /// The dialect a `$schema` URI names, with or without its empty fragment, `http` or
    /// `https`.
    pub fn from_uri(uri: &str) -> Option<Dialect> {
        let uri = uri.strip_suffix('#').unwrap_or(uri);
        let path = uri.strip_prefix("https://").or_else(|| uri.strip_prefix("http://"))?;
        Some(match path {
            "json-schema.org/draft-04/schema" => Dialect::Draft4,
            "json-schema.org/draft-06/schema" => Dialect::Draft6,
            "json-schema.org/draft-07/schema" => Dialect::Draft7,
            "json-schema.org/draft/2019-09/schema" => Dialect::Draft2019,
            "json-schema.org/draft/2020-12/schema" => Dialect::Draft2020,
            _ => return None,
        })
    }

    /// The dialect of `raw`: its root `$schema`, else `default`. An unknown `$schema` is
    /// an error: another meta-schema may switch vocabularies on or off, so what validates
    /// would no longer be what the keywords say.
    pub fn of(raw: &Value, default: Dialect) -> Result<Dialect, NormalizeError> {
        match raw.get("$schema") {
            None => Ok(default),
            Some(Value::String(uri)) => Dialect::from_uri(uri).ok_or_else(|| NormalizeError {
                pointer: "/$schema".into(),
                message: format!(
                    "unsupported keyword `$schema` naming `{uri}`, a meta-schema other than drafts 04, 06, 07, 2019-09 and 2020-12: its vocabularies are unknown"
                ),
            }),
            Some(_) => Err(NormalizeError { pointer: "/$schema".into(), message: "`$schema` must be a string".into() }),
        }
    }

    /// The draft's name as its specification spells it.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Draft4 => "draft-04",
            Dialect::Draft6 => "draft-06",
            Dialect::Draft7 => "draft-07",
            Dialect::Draft2019 => "2019-09",
            Dialect::Draft2020 => "2020-12",
        }
    }

    /// Whether `keyword` means anything in this draft (unknown keywords are annotations).
    fn defines(self, keyword: &str) -> bool {
        DRAFTED.iter().find(|(k, _, _)| *k == keyword).is_none_or(|(_, from, to)| (*from..=*to).contains(&self))
    }
}

/// One keyword of a schema object read in the 2020-12 model: the keyword it is there,
/// the input keyword it came from (for pointers), and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub key: String,
    pub from: String,
    pub value: Value,
}

impl Entry {
    fn same(key: &str, value: &Value) -> Entry {
        Entry { key: key.to_string(), from: key.to_string(), value: value.clone() }
    }
}

/// Whether the siblings of `$ref` in `object` are ignored in `dialect`.
pub fn ref_hides_siblings(dialect: Dialect, object: &Map<String, Value>) -> bool {
    dialect < Dialect::Draft2019 && object.contains_key("$ref")
}

/// `object` (at input pointer `pointer`) read in the 2020-12 model; problems go to `errors`.
pub fn translate(dialect: Dialect, object: &Map<String, Value>, pointer: &str, errors: &mut Vec<NormalizeError>) -> Vec<Entry> {
    let mut out = Vec::new();
    let items_array = object.get("items").is_some_and(Value::is_array);
    let error = |errors: &mut Vec<NormalizeError>, key: &str, message: String| {
        errors.push(NormalizeError { pointer: format!("{pointer}/{}", escape(key)), message })
    };
    for (key, value) in object {
        if !dialect.defines(key) {
            continue;
        }
        match key.as_str() {
            "items" if items_array && dialect < Dialect::Draft2020 => {
                out.push(Entry { key: "prefixItems".into(), from: "items".into(), value: value.clone() })
            }
            "additionalItems" => {
                if items_array {
                    out.push(Entry { key: "items".into(), from: "additionalItems".into(), value: value.clone() });
                }
            }
            "dependencies" => match value {
                Value::Object(dependencies) => {
                    let (mut required, mut schemas) = (Map::new(), Map::new());
                    for (name, dependency) in dependencies {
                        let into = if dependency.is_array() { &mut required } else { &mut schemas };
                        into.insert(name.clone(), dependency.clone());
                    }
                    for (into, map) in [("dependentRequired", required), ("dependentSchemas", schemas)] {
                        if !map.is_empty() {
                            out.push(Entry { key: into.into(), from: "dependencies".into(), value: Value::Object(map) });
                        }
                    }
                }
                _ => error(errors, key, "`dependencies` must be an object".into()),
            },
            "exclusiveMaximum" | "exclusiveMinimum" if dialect == Dialect::Draft4 => {
                let bound = if key == "exclusiveMaximum" { "maximum" } else { "minimum" };
                match value {
                    Value::Bool(true) => {
                        if let Some(limit) = object.get(bound) {
                            out.push(Entry { key: key.clone(), from: bound.into(), value: limit.clone() });
                        }
                    }
                    Value::Bool(false) => {}
                    _ => error(errors, key, format!("`{key}` must be a boolean in draft-04")),
                }
            }
            "maximum" | "minimum" if dialect == Dialect::Draft4 => {
                let flag = if key == "maximum" { "exclusiveMaximum" } else { "exclusiveMinimum" };
                if object.get(flag) != Some(&Value::Bool(true)) {
                    out.push(Entry::same(key, value));
                }
            }
            "id" => {
                if !pointer.is_empty() {
                    error(errors, key, "unsupported keyword `id` below the root (draft-04): it changes the base of references".into());
                }
            }
            "$recursiveAnchor" if dialect == Dialect::Draft2019 => {}
            "$recursiveRef" if dialect == Dialect::Draft2019 => match value.as_str() {
                Some("#") if !object.contains_key("$ref") => {
                    out.push(Entry { key: "$ref".into(), from: "$recursiveRef".into(), value: Value::String("#".into()) })
                }
                Some("#") => error(errors, key, "unsupported keyword `$recursiveRef` next to `$ref`".into()),
                _ => error(errors, key, "unsupported keyword `$recursiveRef` with a value other than `#`".into()),
            },
            _ => out.push(Entry::same(key, value)),
        }
    }
    if dialect == Dialect::Draft4 {
        for entry in &out {
            if draft4_boolean(entry) {
                error(
                    errors,
                    &entry.from,
                    format!(
                        "a boolean schema in `{}` (draft-04 has boolean schemas only as `additionalProperties` and `additionalItems`)",
                        entry.from
                    ),
                );
            }
        }
    }
    out
}

/// Whether `entry` holds a boolean where draft-04 wants a schema object.
fn draft4_boolean(entry: &Entry) -> bool {
    if matches!(entry.from.as_str(), "additionalProperties" | "additionalItems") {
        return false;
    }
    match (applicator(&entry.key).map(|s| s.holds), &entry.value) {
        (Some(Holds::One | Holds::OneOrList), Value::Bool(_)) => true,
        (Some(Holds::List | Holds::OneOrList), Value::Array(members)) => members.iter().any(Value::is_boolean),
        (Some(Holds::Map), Value::Object(members)) => members.values().any(Value::is_boolean),
        _ => false,
    }
}

/// Every keyword [`translate`] renames, as (the 2020-12 keyword it reads as, the input
/// keyword it came from): the one list [`as_written`] reads pointers back by. A unit test
/// holds it to exactly the renames `translate` makes in every draft.
const RENAMES: &[(&str, &str)] = &[
    ("prefixItems", "items"),
    ("items", "additionalItems"),
    ("dependentRequired", "dependencies"),
    ("dependentSchemas", "dependencies"),
    ("exclusiveMaximum", "maximum"),
    ("exclusiveMinimum", "minimum"),
    ("$ref", "$recursiveRef"),
];

/// The input keywords a 2020-12 keyword of [`translate`]'s model may have been written as.
fn written_as(keyword: &str) -> impl Iterator<Item = &'static str> + '_ {
    RENAMES.iter().filter(move |(model, _)| *model == keyword).map(|(_, input)| *input)
}

/// `pointer`, into the document as the checks read it (2020-12's keywords), as the input
/// writes it: each keyword is read under its input name where that leads deeper into
/// `input` (`/prefixItems/0` of a draft-07 file is its `/items/0`). Most pointers already
/// follow the input keyword (see [`Entry::from`]); those built while compiling the 2020-12
/// model do not. What `input` does not have is kept as it is.
pub fn as_written(input: &Value, pointer: &str) -> String {
    // Not a pointer (never one this crate built): nothing to read back.
    let Ok(tokens) = schema_syntax::raw_tokens(pointer) else { return pointer.to_string() };
    let written = deepest(input, &tokens);
    let mut out: String = written.iter().map(|t| format!("/{t}")).collect();
    for token in &tokens[written.len()..] {
        out.push('/');
        out.push_str(token);
    }
    out
}

/// The longest path of `input` that `tokens` can be read as, a keyword under its own name
/// or an input name of it; the first of equally long ones. A pointer is short and a
/// keyword has at most one other name, so trying both is cheap.
fn deepest(input: &Value, tokens: &[&str]) -> Vec<String> {
    let Some((first, rest)) = tokens.split_first() else { return Vec::new() };
    // `deepest` is only handed checked tokens, so the unescaping cannot fail.
    let keyword = schema_syntax::unescape(first).unwrap_or_default();
    let mut best = Vec::new();
    // The table's names are `'static`; the coercion gives them the token's lifetime, so
    // both chain.
    let names = std::iter::once(*first).chain(written_as(&keyword).map(|name| -> &str { name }));
    for name in names {
        let Ok(Some(child)) = node_at(input, &format!("/{name}")) else { continue };
        let mut path = vec![name.to_string()];
        path.extend(deepest(child, rest));
        if path.len() > best.len() {
            best = path;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every rename `translate` makes, over objects that hold each renamed keyword in the
    /// shapes that trigger it, read in every draft.
    fn renames_made() -> Vec<(String, String)> {
        let objects = [
            json!({"items": [{}], "additionalItems": false}),
            json!({"dependencies": {"a": ["b"], "c": {}}}),
            json!({"maximum": 1, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": true}),
            json!({"$recursiveRef": "#"}),
        ];
        let mut made = Vec::new();
        for dialect in [Dialect::Draft4, Dialect::Draft6, Dialect::Draft7, Dialect::Draft2019, Dialect::Draft2020] {
            for object in &objects {
                let mut errors = Vec::new();
                for entry in translate(dialect, object.as_object().expect("an object"), "", &mut errors) {
                    if entry.key != entry.from && !made.contains(&(entry.key.clone(), entry.from.clone())) {
                        made.push((entry.key, entry.from));
                    }
                }
            }
        }
        made
    }

    #[test]
    fn the_rename_table_is_exactly_the_renames_translate_makes() {
        let made = renames_made();
        for (model, input) in &made {
            assert!(RENAMES.contains(&(model.as_str(), input.as_str())), "translate renames `{input}` to `{model}`, which RENAMES lacks");
        }
        for (model, input) in RENAMES {
            assert!(
                made.iter().any(|(m, i)| m == model && i == input),
                "RENAMES lists `{input}` as `{model}`, which translate never makes"
            );
        }
    }

    #[test]
    fn a_pointer_into_the_model_is_read_back_in_the_files_keywords() {
        let input = json!({"items": [{"pattern": "x"}], "dependencies": {"a": {"type": "string"}}});
        assert_eq!(as_written(&input, "/prefixItems/0/pattern"), "/items/0/pattern");
        assert_eq!(as_written(&input, "/dependentSchemas/a/type"), "/dependencies/a/type");
        // What the file lacks stays as the model writes it.
        assert_eq!(as_written(&input, "/prefixItems/3"), "/items/3");
        assert_eq!(as_written(&input, "/properties/b"), "/properties/b");
    }
}
