//! The schema compiler's failure paths: what typify cannot handle and names that collide
//! become diagnostics, never panics or silently merged types.

use checkfu_wire_codegen::rust::schemas::generate;
use serde_json::json;

fn error_text(file: &str, schema: serde_json::Value) -> String {
    match generate(file, &schema) {
        Ok(_) => panic!("generation of {file} succeeded"),
        Err(diagnostics) => diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n"),
    }
}

#[test]
fn a_typify_panic_becomes_a_diagnostic() {
    // typify 0.8 reaches a `todo!` on `not` over an `anyOf`.
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"id": {"not": {"anyOf": [{"type": "string"}, {"type": "number"}]}}}
    });
    let text = error_text("not-any-of.schema.json", schema);
    assert!(text.contains("schemas/not-any-of.schema.json"), "{text}");
    assert!(text.contains("typify panicked"), "{text}");
}

#[test]
fn colliding_names_name_both_pointers() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": {"anyOf": [
                {"type": "object", "properties": {"kind": {"const": "x"}}},
                {"type": "object", "properties": {"kind": {"const": "x"}, "more": {"type": "string"}}}
            ]}
        }
    });
    let text = error_text("twins.schema.json", schema);
    assert!(text.contains("`/properties/a/anyOf/0`") && text.contains("`/properties/a/anyOf/1`"), "{text}");
    assert!(text.contains("TwinsAX"), "{text}");
}

#[test]
fn unsupported_keywords_are_refused_with_their_pointer() {
    let schema = json!({"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": true}}});
    let text = error_text("tags.schema.json", schema);
    assert!(text.contains("unsupported keyword `uniqueItems`"), "{text}");
    assert!(text.contains("/properties/tags"), "{text}");
}

#[test]
fn remote_references_are_refused() {
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}}});
    let text = error_text("remote.schema.json", schema);
    assert!(text.contains("only local"), "{text}");
}

#[test]
fn generation_is_byte_stable() {
    let raw: serde_json::Value =
        serde_json::from_str(include_str!("../../schemas/acp-v1-extension-vectors.schema.json")).expect("json");
    let first = generate("acp-v1-extension-vectors.schema.json", &raw).expect("generates").to_string();
    let second = generate("acp-v1-extension-vectors.schema.json", &raw).expect("generates").to_string();
    assert_eq!(first, second);
}
