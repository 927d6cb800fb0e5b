//! The generated catalog schema describes the catalog: the checked-in catalog validates
//! against it, and a misspelled key or a wrongly typed value does not.

use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root")
}

fn catalog_as_json(text: &str) -> serde_json::Value {
    let table: toml::Table = toml::from_str(text).expect("catalog parses as TOML");
    serde_json::to_value(table).expect("TOML converts to JSON")
}

/// The checked-in catalog schema, compiled, and the catalog's text.
fn schema_and_catalog() -> (jsonschema::Validator, String) {
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join("generated/catalog.schema.json")).expect("schema")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("the catalog schema compiles");
    (validator, std::fs::read_to_string(root().join("catalog/catalog.toml")).expect("catalog"))
}

#[test]
fn the_catalog_validates_against_its_generated_schema() {
    let (validator, text) = schema_and_catalog();
    let catalog = catalog_as_json(&text);
    let errors: Vec<String> = validator.iter_errors(&catalog).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");

    let misspelled = catalog_as_json(&text.replacen("tuple_support =", "tuple_suport =", 1));
    assert!(!validator.is_valid(&misspelled), "an unknown key is flagged");
    let mistyped = catalog_as_json(&text.replacen("priced = true", "priced = \"yes\"", 1));
    assert!(!validator.is_valid(&mistyped), "a wrongly typed value is flagged");
}

/// The closed vocabularies are catalog data, yet an editor completes them: the generated
/// schema carries them as enums, so each edit below fails schema validation as well as
/// generation.
#[test]
fn the_generated_schema_closes_the_catalog_vocabularies() {
    let (validator, text) = schema_and_catalog();
    for (from, to) in [
        ("supply = \"image_required\"", "supply = \"]]image_required\""),
        ("tuple_support = \"preflight_required\"", "tuple_support = \"terminal/output\""),
        ("model_lane = \"platform_model_gateway\"", "model_lane = \"gateway\""),
        ("mcp_delivery = \"session_http\"", "mcp_delivery = \"stdio\""),
        ("evidence = []", "evidence = [\"steering\"]"),
        ("dialects = [\"openai_chat\"]", "dialects = []"),
        ("dialects = [\"openai_chat\"]", "dialects = [\"openai_chat\", \"openai_chat\"]"),
        ("checkpoint = \"disk_only\"", "checkpoint = \"disk\""),
        ("accepts = [\"anthropic_messages\"]", "accepts = [\"anthropic\"]"),
        ("gateway_path = \"/v1/messages\"", "gateway_path = \"checkfu.capabilities\""),
        ("gateway_path = \"/{model_id}\"", "gateway_path = \"/{model}\""),
    ] {
        assert!(text.contains(from), "`{from}` not in the catalog");
        let edited = catalog_as_json(&text.replacen(from, to, 1));
        assert!(!validator.is_valid(&edited), "the schema accepts `{to}`");
    }
}
