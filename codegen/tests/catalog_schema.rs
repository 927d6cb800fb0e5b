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

#[test]
fn the_catalog_validates_against_its_generated_schema() {
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root().join("generated/catalog.schema.json")).expect("schema")).expect("json");
    let validator = jsonschema::validator_for(&schema).expect("the catalog schema compiles");
    let text = std::fs::read_to_string(root().join("catalog/catalog.toml")).expect("catalog");
    let catalog = catalog_as_json(&text);
    let errors: Vec<String> = validator.iter_errors(&catalog).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "{errors:#?}");

    let misspelled = catalog_as_json(&text.replacen("tuple_support =", "tuple_suport =", 1));
    assert!(!validator.is_valid(&misspelled), "an unknown key is flagged");
    let mistyped = catalog_as_json(&text.replacen("priced = true", "priced = \"yes\"", 1));
    assert!(!validator.is_valid(&mistyped), "a wrongly typed value is flagged");
}
