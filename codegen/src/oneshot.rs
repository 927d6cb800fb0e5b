//! The `oneshot-v1` lane's facts that come from outside the catalog: the authoring schema,
//! derived with `schemars` from the release decoder's type
//! (`checkfu_wire_vocab::oneshot::Declaration`, written out as
//! `generated/oneshot-v1.schema.json`), the closed values its members admit, read back from
//! that schema, and the event kinds of the normalized stream schema.
//!
//! The catalog's `[oneshot]` table restates the closed values and maps each event kind to
//! an observation; validation compares it with what this module reads, so a variant added
//! to the decoder or an event added to the stream schema is a catalog error until the
//! catalog says what it means, and neither list is ever copied by hand into code.

use serde_json::Value;

/// The authoring schema, exactly as `schemars` derives it from the decoder's type.
pub fn authoring_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(checkfu_wire_vocab::oneshot::Declaration)).unwrap_or_default()
}

/// The node a local `$ref` names, or the node itself.
fn resolve<'s>(root: &'s Value, node: &'s Value) -> &'s Value {
    // The reference read as every other: percent-decoded, RFC 6901's escapes only.
    match node.get("$ref").and_then(Value::as_str).and_then(|r| crate::schema::normalize::ref_target(r).ok()) {
        Some(pointer) => crate::schema::pointer::get(root, &pointer).ok().flatten().unwrap_or(node),
        None => node,
    }
}

/// The string values a schema node admits when it is a closed set of strings (an `enum`,
/// a `const`, or a union of those, an optional member's `null` aside); `None` otherwise.
fn closed_strings(root: &Value, node: &Value) -> Option<Vec<String>> {
    let node = resolve(root, node);
    if let Some(value) = node.get("const") {
        return value.as_str().map(|s| vec![s.to_string()]);
    }
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        let strings: Vec<String> = values.iter().filter_map(Value::as_str).map(str::to_string).collect();
        let nulls = values.iter().filter(|v| v.is_null()).count();
        return (strings.len() + nulls == values.len() && !strings.is_empty()).then_some(strings);
    }
    for keyword in ["oneOf", "anyOf"] {
        if let Some(branches) = node.get(keyword).and_then(Value::as_array) {
            let mut out = Vec::new();
            for branch in branches {
                let branch = resolve(root, branch);
                if branch.get("type").and_then(Value::as_str) == Some("null") {
                    continue;
                }
                out.extend(closed_strings(root, branch)?);
            }
            return (!out.is_empty()).then_some(out);
        }
    }
    None
}

/// What the authoring schema says of the declaration's members.
#[derive(Clone, Debug, Default)]
pub struct Members {
    /// Each member whose values are a closed set of strings, with those values: members in
    /// the decoder's field order, values in its variant order.
    pub closed: Vec<(String, Vec<String>)>,
    /// The members a declaration may leave out, in the schema's order.
    pub optional: Vec<String>,
}

impl Members {
    /// The values of a closed member.
    pub fn closed(&self, member: &str) -> Option<&[String]> {
        self.closed.iter().find(|(m, _)| m == member).map(|(_, v)| v.as_slice())
    }

    /// Where a closed member comes in the decoder's field order (unknown ones last).
    pub fn position(&self, member: &str) -> usize {
        self.closed.iter().position(|(m, _)| m == member).unwrap_or(usize::MAX)
    }
}

pub fn members(schema: &Value) -> Members {
    let required: Vec<&str> = schema.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
    let mut out = Members::default();
    for (name, property) in schema.get("properties").and_then(Value::as_object).into_iter().flatten() {
        if let Some(values) = closed_strings(schema, property) {
            out.closed.push((name.clone(), values));
        }
        if !required.contains(&name.as_str()) {
            out.optional.push(name.clone());
        }
    }
    out
}

/// The `type` constant of every `$defs` entry of the stream schema, in its order: the
/// stream's event kinds.
pub fn event_kinds(stream_schema: &Value) -> Vec<String> {
    let defs = stream_schema.get("$defs").and_then(Value::as_object).into_iter().flatten();
    defs.filter_map(|(_, def)| def.pointer("/properties/type/const")?.as_str().map(str::to_string)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_decoder_enums_are_read_from_the_derived_schema() {
        let m = members(&authoring_schema());
        let names: Vec<&str> = m.closed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["prompt_transport", "output_mode", "output_schema_transport"]);
        assert_eq!(m.closed("prompt_transport").unwrap(), ["stdin", "argv_path"]);
        assert_eq!(m.closed("output_mode").unwrap(), ["text", "stream_json"]);
        assert_eq!(m.closed("output_schema_transport").unwrap(), ["argv_path"]);
        assert!(m.optional.contains(&"resume_flag".to_string()));
        assert!(!m.optional.contains(&"entrypoint".to_string()));
    }

    #[test]
    fn event_kinds_are_the_type_constants() {
        let schema = serde_json::json!({"$defs": {
            "A": {"properties": {"type": {"const": "a"}}},
            "B": {"properties": {"type": {"type": "string"}}},
            "C": {"properties": {"type": {"const": "c"}}}
        }});
        assert_eq!(event_kinds(&schema), ["a", "c"]);
    }
}
