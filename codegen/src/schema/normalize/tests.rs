use super::*;
use serde_json::json;

fn norm(v: Value) -> Normalized {
    let n = normalize("Root", &v);
    assert!(n.errors.is_empty(), "{:?}", n.errors);
    n
}

#[test]
fn hoists_variants_by_discriminator_and_properties_by_path() {
    let n = norm(json!({
        "type": "object",
        "properties": {"v": {"anyOf": [
            {"type": "object", "properties": {"phase": {"enum": ["started"]}, "meta": {"type": "object"}}},
            {"type": "object", "properties": {"phase": {"enum": ["done"]}}}
        ]}}
    }));
    let root = &n.defs["Root"];
    assert_eq!(root["properties"]["v"]["anyOf"][0], json!({"$ref": "#/$defs/RootVStarted"}));
    assert_eq!(root["properties"]["v"]["anyOf"][1], json!({"$ref": "#/$defs/RootVDone"}));
    assert_eq!(n.defs["RootVStarted"]["properties"]["meta"], json!({"$ref": "#/$defs/RootVStartedMeta"}));
    assert_eq!(n.origins["RootVStarted"], "/properties/v/anyOf/0");
}

#[test]
fn a_shared_single_value_does_not_name_variants_but_titles_do() {
    let n = norm(json!({"anyOf": [
        {"title": "Agent", "type": "object", "properties": {"jsonrpc": {"enum": ["2.0"]}}},
        {"title": "Client", "type": "object", "properties": {"jsonrpc": {"enum": ["2.0"]}, "x": {}}}
    ]}));
    assert_eq!(n.defs["Root"]["anyOf"], json!([{"$ref": "#/$defs/RootAgent"}, {"$ref": "#/$defs/RootClient"}]));
}

#[test]
fn identical_schemas_share_a_name_and_different_ones_get_pointer_names() {
    let same = json!({"anyOf": [
        {"type": "object", "properties": {"k": {"enum": ["a"]}}},
        {"type": "object", "properties": {"k": {"enum": ["a"]}}}
    ]});
    assert_eq!(norm(same).defs["Root"]["anyOf"][1], json!({"$ref": "#/$defs/RootVariant1"}));
    let different = json!({"properties": {"a": {"anyOf": [
        {"type": "object", "properties": {"k": {"enum": ["a"]}}},
        {"type": "object", "properties": {"k": {"enum": ["a"]}, "x": {"type": "string"}}}
    ]}}});
    let n = norm(different);
    assert_eq!(n.defs["Root"]["properties"]["a"]["anyOf"], json!([{"$ref": "#/$defs/RootAVariant0"}, {"$ref": "#/$defs/RootAVariant1"}]));
}

#[test]
fn a_hoisted_name_taken_by_a_definition_falls_back_to_the_pointer() {
    let n = norm(json!({
        "$defs": {"RootX": {"type": "string"}},
        "type": "object",
        "properties": {"x": {"type": "object", "properties": {}}}
    }));
    assert_eq!(n.defs["Root"]["properties"]["x"], json!({"$ref": "#/$defs/PropertiesX"}));
    assert_eq!(n.origins["PropertiesX"], "/properties/x");
    assert_eq!(n.defs["RootX"], json!({"type": "string"}));
}

#[test]
fn definitions_whose_names_fold_together_stay_apart() {
    let n = norm(json!({"$defs": {"Union_": {"type": "string"}, "Union": {"type": "number"}}, "$ref": "#/$defs/Union"}));
    assert_eq!(n.defs["Root"]["$ref"], json!("#/$defs/DefsUnion"));
    assert_eq!(n.defs["Union"], json!({"type": "string"}));
    assert_eq!(n.origins["DefsUnion"], "/$defs/Union");
}

#[test]
fn references_to_any_subschema_are_hoisted_and_rewritten() {
    let n = norm(json!({
        "properties": {"a": {"type": "integer"}, "b": {"$ref": "#/properties/a"}, "c": {"$ref": "#/$defs/D/items"}},
        "$defs": {"D": {"type": "array", "items": {"type": "string"}}, "a%b": {"type": "null"}, "t~/": {}},
        "anyOf": [{"$ref": "#/$defs/a%25b"}, {"$ref": "#/$defs/t~0~1"}, {"$ref": "#"}]
    }));
    let root = &n.defs["Root"];
    assert_eq!(root["properties"]["b"], json!({"$ref": "#/$defs/PropertiesA"}));
    assert_eq!(root["properties"]["a"], json!({"$ref": "#/$defs/PropertiesA"}));
    assert_eq!(n.defs["PropertiesA"], json!({"type": "integer"}));
    assert_eq!(root["properties"]["c"], json!({"$ref": "#/$defs/DefsDItems"}));
    assert_eq!(root["anyOf"], json!([{"$ref": "#/$defs/AB"}, {"$ref": "#/$defs/T"}, {"$ref": "#/$defs/Root"}]));
}

#[test]
fn data_is_never_rewritten() {
    let input = json!({"properties": {
        "c": {"const": {"definitions": {"x": 1}, "$ref": "#/definitions/x"}},
        "e": {"enum": [{"$ref": "#/$defs/nope"}]},
        "d": {"default": {"properties": {}}}
    }});
    assert_eq!(norm(input.clone()).defs["Root"], input);
}

#[test]
fn legacy_definitions_are_definitions() {
    let n = norm(json!({"definitions": {"A": {"type": "string"}}, "$ref": "#/definitions/A"}));
    assert_eq!(n.defs["Root"], json!({"$ref": "#/$defs/A"}));
    assert_eq!(n.origins["A"], "/definitions/A");
}

#[test]
fn bad_references_are_all_reported() {
    let n = normalize(
        "Root",
        &json!({"properties": {
            "a": {"$ref": "https://example.com/x.json"},
            "b": {"$ref": "#foo"},
            "c": {"$ref": "#/$defs/missing"},
            "d": {"$ref": "#/properties/e/const/type"},
            "e": {"const": {"type": "string"}}
        }}),
    );
    let pointers: Vec<&str> = n.errors.iter().map(|e| e.pointer.as_str()).collect();
    assert_eq!(pointers, ["/properties/a/$ref", "/properties/b/$ref", "/properties/c/$ref", "/properties/e/const/type"], "{:?}", n.errors);
    assert!(n.errors[3].message.contains("is not a schema"), "{:?}", n.errors[3]);
}

#[test]
fn references_into_data_and_unknown_keywords_read_what_is_there_as_a_schema() {
    // travis's shape: a definition that holds schemas under keys no draft defines, and
    // references into it; one of those holds a reference into another unknown keyword.
    let n = normalize(
        "Root",
        &json!({
            "definitions": {"group": {"slack": {"$ref": "#/definitions/group/irc"}, "irc": {"x-more": {"type": "integer"}, "type": "string"}}},
            "properties": {"s": {"$ref": "#/definitions/group/slack"}, "c": {"$ref": "#/properties/e/const"}, "e": {"const": {"minimum": 3}}}
        }),
    );
    assert!(n.errors.is_empty(), "{:?}", n.errors);
    assert_eq!(n.defs["DefinitionsGroupSlack"], json!({"$ref": "#/$defs/DefinitionsGroupIrc"}));
    assert_eq!(n.defs["DefinitionsGroupIrc"], json!({"type": "string", "x-more": {"type": "integer"}}));
    assert_eq!(n.origins["DefinitionsGroupIrc"], "/definitions/group/irc");
    assert_eq!(n.defs["PropertiesEConst"], json!({"minimum": 3}));
    // The node under `const` is still data where it sits.
    assert_eq!(n.defs["Root"]["properties"]["e"], json!({"const": {"minimum": 3}}));
}

#[test]
fn pinned_nodes_are_hoisted_under_their_name_and_missing_pins_are_reported() {
    let input = json!({"type": "object", "properties": {"tools": {"type": "array", "items": {"type": "string"}}}});
    let pins = BTreeMap::from([("/properties/tools".to_string(), "Tools".to_string())]);
    let n = normalize_pinned("Root", &input, &pins);
    assert_eq!(n.defs["Root"]["properties"]["tools"], json!({"$ref": "#/$defs/Tools"}));
    assert_eq!(n.defs["Tools"]["type"], json!("array"));
    let missing = BTreeMap::from([("/properties/nope".to_string(), "Nope".to_string())]);
    let errors = normalize_pinned("Root", &input, &missing).errors;
    assert!(errors[0].message.contains("`Nope`"), "{errors:?}");
}

#[test]
fn names_are_rust_type_names() {
    assert_eq!(pascal("initialize.full-declaration"), "InitializeFullDeclaration");
    assert_eq!(pascal("_meta"), "Meta");
    assert_eq!(pascal("checkfu.subagent"), "CheckfuSubagent");
    assert_eq!(pascal("2fa"), "N2fa");
    assert_eq!(pascal("日本"), "U65e5U672c");
    assert_eq!(pascal("self"), "SelfDef");
    assert_eq!(type_name("_"), "Unnamed");
    assert_eq!(type_name(""), "Unnamed");
}

/// RFC 6901 has `~0` and `~1` and no other escape. serde_json's lookup would find the key
/// `a~2b` through `#/$defs/a~2b`; the generator refuses the reference, as the safety
/// profile does, since both read pointers by `checkfu-wire-vocab`'s `schema_syntax`.
#[test]
fn a_tilde_not_followed_by_0_or_1_is_refused() {
    for reference in ["#/$defs/a~2b", "#/$defs/a~", "#/$defs/a%7E2b"] {
        let n = normalize("Root", &json!({"$defs": {"a~2b": {"type": "null"}, "a~": {}}, "properties": {"p": {"$ref": reference}}}));
        assert_eq!(n.errors.len(), 1, "{reference}: {:?}", n.errors);
        assert_eq!(n.errors[0].pointer, "/properties/p/$ref", "{reference}");
        assert!(
            n.errors[0].message.contains("is not a JSON Pointer: a '~' is not followed by '0' or '1'"),
            "{reference}: {}",
            n.errors[0].message
        );
    }
    assert_eq!(ref_target("#/$defs/t~0~1"), Ok("/$defs/t~0~1".to_string()));
}
