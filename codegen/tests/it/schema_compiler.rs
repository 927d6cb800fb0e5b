//! The schema compiler's failure paths and naming guarantees: what the checks cannot
//! compile becomes one diagnostic per construct, with the input's JSON Pointer and the
//! keyword, all of a file's in one run; names that collide get pointer-derived names.

use checkfu_wire_codegen::rust::schemas::{generate, names};
use serde_json::json;

fn error_text(file: &str, schema: serde_json::Value) -> String {
    match generate(file, &schema) {
        Ok(_) => panic!("generation of {file} succeeded"),
        Err(diagnostics) => diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n"),
    }
}

fn generated_text(file: &str, schema: serde_json::Value) -> String {
    match generate(file, &schema) {
        Ok(module) => module.tokens.to_string(),
        Err(diagnostics) => panic!("{}", diagnostics.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n")),
    }
}

#[test]
fn every_unsupported_construct_of_a_file_is_reported_with_its_input_pointer() {
    let schema = json!({
        "$defs": {
            "Dyn": {"$dynamicRef": "#meta"},
            "Inner": {"$id": "https://example.com/inner.json", "type": "string"},
            "Either": {"anyOf": [{"properties": {"a": {}}}, {"properties": {"b": {}}}], "unevaluatedProperties": false}
        },
        "type": "object",
        "properties": {"p": {"type": "string", "pattern": "(?<!x)y"}}
    });
    let text = error_text("many.schema.json", schema);
    for expected in [
        "schemas/many.schema.json#/$defs/Dyn/$dynamicRef: unsupported keyword `$dynamicRef`",
        "schemas/many.schema.json#/$defs/Inner/$id: unsupported keyword `$id`",
        "schemas/many.schema.json#/$defs/Either/unevaluatedProperties: unsupported keyword `unevaluatedProperties` next to `anyOf`",
        "schemas/many.schema.json#/properties/p/pattern: the pattern `(?<!x)y`",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
}

#[test]
fn constructs_typify_panicked_on_now_compile() {
    // typify 0.8 reached a `todo!` on `not` over an `anyOf`; it never sees such a schema now.
    let schema = json!({"type": "object", "properties": {"id": {"not": {"anyOf": [{"type": "string"}, {"type": "number"}]}}}});
    let text = generated_text("not-any-of.schema.json", schema);
    assert!(text.contains("pub struct NotAnyOf"), "{text}");
}

#[test]
fn colliding_names_fall_back_to_the_input_pointer() {
    let schema = json!({
        "$defs": {"TwinsA": {"type": "string"}},
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"k": {"type": "string"}}}}
    });
    let text = generated_text("twins.schema.json", schema);
    assert!(text.contains("pub struct PropertiesA"), "{text}");
    assert!(text.contains("pub struct TwinsA"), "{text}");
}

#[test]
fn unsupported_references_are_refused_with_their_pointer() {
    let schema = json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/x.json"}, "y": {"$ref": "#anchor"}}});
    let text = error_text("remote.schema.json", schema);
    assert!(text.contains("#/properties/x/$ref: `https://example.com/x.json` is not a local reference"), "{text}");
    assert!(text.contains("#/properties/y/$ref: `#anchor` names an anchor"), "{text}");
}

#[test]
fn every_file_name_gives_rust_identifiers() {
    assert_eq!(names("acp-v1-extension-vectors.schema.json"), ("acp_v1_extension_vectors".into(), "AcpV1ExtensionVectors".into()));
    assert_eq!(names("2fa.json"), ("s_2fa".into(), "N2fa".into()));
    assert_eq!(names("ü.json"), ("u_fc".into(), "Ufc".into()));
    assert_eq!(names("self.json"), ("self_".into(), "SelfDef".into()));
    assert_eq!(names("_.json"), ("schema_".into(), "Unnamed".into()));
}

#[test]
fn generation_is_byte_stable() {
    let raw: serde_json::Value = serde_json::from_str(include_str!("../../../schemas/acp-v1.schema.json")).expect("json");
    let first = generate("acp-v1.schema.json", &raw).expect("generates").tokens.to_string();
    let second = generate("acp-v1.schema.json", &raw).expect("generates").tokens.to_string();
    assert_eq!(first, second);
}

#[test]
fn reference_loops_that_make_no_progress_are_refused_naming_the_loop() {
    let text = error_text("self-loop.schema.json", json!({"$ref": "#"}));
    assert!(text.contains("self-loop.schema.json#/$ref: a `$ref` loop that makes no progress: `#` → `#`"), "{text}");

    let text =
        error_text("pair.schema.json", json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}));
    assert!(text.contains("`#/$defs/a` → `#/$defs/b` → `#/$defs/a` (through `#/$defs/a/$ref`, `#/$defs/b/$ref`)"), "{text}");
    assert_eq!(text.matches("makes no progress").count(), 1, "one diagnostic per loop:\n{text}");

    for (keyword, schema) in [
        ("allOf", json!({"$defs": {"a": {"allOf": [{"type": "object"}, {"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}}})),
        (
            "anyOf",
            json!({"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/b"}]}, "b": {"type": "object", "properties": {"x": {}}, "allOf": [{"$ref": "#/$defs/a"}]}}}),
        ),
        ("not", json!({"$defs": {"a": {"not": {"$ref": "#/$defs/a"}}}})),
        ("if", json!({"$defs": {"a": {"if": {"type": "string"}, "then": {"$ref": "#/$defs/a"}}}})),
        ("dependentSchemas", json!({"$defs": {"a": {"dependentSchemas": {"k": {"$ref": "#/$defs/a"}}}}})),
    ] {
        let text = error_text(&format!("{keyword}.schema.json"), schema);
        assert!(text.contains("makes no progress: `#/$defs/a` →"), "{keyword}: {text}");
    }
}

#[test]
fn reference_loops_through_members_and_items_are_progress() {
    // Each step moves to a member or an item, so checking ends with the instance.
    let schema = json!({
        "$defs": {
            "a": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"next": {"$ref": "#/$defs/b"}}}]},
            "b": {"type": "array", "items": {"$ref": "#/$defs/a"}, "contains": {"$ref": "#"}}
        },
        "allOf": [{"$ref": "#/$defs/a"}], "additionalProperties": {"$ref": "#"}, "propertyNames": {"$ref": "#"}
    });
    generated_text("progress.schema.json", schema);
}

#[test]
fn schema_selects_the_draft_and_each_draft_keeps_its_meaning() {
    // Refused before: every `$schema` but 2020-12's.
    for uri in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        generated_text("draft.schema.json", json!({"$schema": uri, "type": "object"}));
    }
    let text = error_text("other.schema.json", json!({"$schema": "https://example.com/meta"}));
    assert!(text.contains("#/$schema: unsupported keyword `$schema` naming `https://example.com/meta`"), "{text}");

    // draft-07's `dependencies` constrains (it was an unknown keyword): the check names both halves.
    let text = generated_text(
        "deps.schema.json",
        json!({"$schema": "http://json-schema.org/draft-07/schema#", "dependencies": {"a": ["b"], "c": {"required": ["d"]}}}),
    );
    assert!(text.contains("requires property `b`"), "{text}");
    assert!(text.contains("missing required property `d`"), "{text}");
    // …but not in 2020-12, where it is unknown.
    let text = generated_text("deps2020.schema.json", json!({"dependencies": {"a": ["b"]}}));
    assert!(!text.contains("requires property `b`"), "{text}");

    // draft-04: boolean exclusive bounds; `id` below the root; booleans where a schema belongs.
    let text = generated_text(
        "d4.schema.json",
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "maximum": 3, "exclusiveMaximum": true}),
    );
    assert!(text.contains("not below the exclusive maximum") && !text.contains("above the maximum"), "{text}");
    let text = error_text(
        "d4bad.schema.json",
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"id": "x.json"}, "b": {"not": true}}}),
    );
    assert!(text.contains("#/properties/a/id: unsupported keyword `id` below the root (draft-04)"), "{text}");
    assert!(text.contains("#/properties/b/not: a boolean schema in `not`"), "{text}");

    // 2019-09: `$recursiveRef` other than `#` is refused, naming the keyword.
    let text = error_text(
        "rr.schema.json",
        json!({"$schema": "https://json-schema.org/draft/2019-09/schema", "properties": {"a": {"$recursiveRef": "#/x"}}}),
    );
    assert!(text.contains("#/properties/a/$recursiveRef: unsupported keyword `$recursiveRef` with a value other than `#`"), "{text}");
}

#[test]
fn a_schema_file_whose_name_gives_no_module_is_a_diagnostic() {
    use checkfu_wire_codegen::diagnostic::Diagnostics;
    use checkfu_wire_codegen::schema::SchemaSet;
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(".json"), r#"{"type": "string"}"#).expect("write");
    std::fs::write(dir.path().join("ok.json"), r#"{"type": "string"}"#).expect("write");
    let mut diagnostics = Diagnostics::default();
    let set = SchemaSet::load(dir.path(), &mut diagnostics);
    // Skipped without a word before.
    let text: Vec<String> = diagnostics.items.iter().map(|d| d.message.clone()).collect();
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(text[0].contains("schemas/.json: a schema file's name gives its module's name"), "{text:?}");
    assert_eq!(set.files.keys().collect::<Vec<_>>(), ["ok.json"]);
}

#[test]
fn patterns_are_compiled_at_generation_with_ecma_262_meaning_or_refused() {
    // Passed the parser but not the run time's size limit: rejected every string at run time.
    let text = error_text("big.schema.json", json!({"pattern": "(?:\\p{L}{100}){100}"}));
    assert!(
        text.contains("big.schema.json#/pattern: the pattern `(?:\\p{L}{100}){100}` cannot be compiled by the `regex` crate"),
        "{text}"
    );
    // ECMA-262's `\w` is ASCII, so a thousand of them compile.
    let text = generated_text("w.schema.json", json!({"pattern": "\\w{1000}"}));
    assert!(text.contains("[0-9A-Za-z_]{1000}"), "{text}");
    // `regex` syntax that ECMA-262 reads otherwise: refused, naming the construct.
    for (pattern, construct) in [
        ("^[[:alpha:]]+$", "a POSIX class"),
        ("(?i)abc", "an inline flag group"),
        ("a(?=b)", "lookaround"),
        ("(a)\\1", "the backreference `\\1`"),
    ] {
        let text = error_text("ecma.schema.json", json!({"patternProperties": {pattern: {}}}));
        assert!(text.contains(construct), "{pattern}: {text}");
    }
}
