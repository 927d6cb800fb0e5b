//! Success means it compiles, and compiled means exact: schemas with hostile names
//! (Unicode, leading digits, Rust keywords, prelude names, escapes, names that fold
//! together), big integers and every newly supported keyword are generated, built in a
//! crate of their own, and their decoders compared with the `jsonschema` crate on
//! generated instances (accept/reject agree; accepted values re-encode to equal JSON).

use crate::support;

use serde_json::{json, Value};
use support::compile::{build, generate, verdicts};
use support::oracle::{cases, compare};

fn corpus() -> Vec<(&'static str, Value)> {
    vec![
        (
            "2fa.json",
            json!({
                "$defs": {
                    "日本": {"type": "string"},
                    "_": {"type": "integer"},
                    "self": {
                        "type": "object",
                        "properties": {
                            "self": {"$ref": "#/$defs/self"}, "Self": {"type": "string"}, "crate": {},
                            "super": {"type": "boolean"}, "type": {"type": ["string", "null"]}, "": {"type": "number"},
                            "a-b": {}, "a_b": {}, "A B": {}, "日本": {"$ref": "#/$defs/%E6%97%A5%E6%9C%AC"}, "a\"b": {}, "a\\b": {},
                            "tab\t": {"type": "array", "items": {"$ref": "#/$defs/Vec"}}, "r#x": {"$ref": "#/$defs/Result"}, "cr\r": {"type": "string"}
                        },
                        "required": ["a\"b", "tab\t", "req~/only"],
                        "additionalProperties": {"type": "integer"}
                    },
                    "Self": {"type": "object", "properties": {"Self": {"$ref": "#/$defs/Self"}}},
                    "crate": {"type": "string", "enum": ["crate"]},
                    "super": {"const": null},
                    "Option": {"type": "string"},
                    "String": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Option"}}, "required": ["x"]},
                    "Result": {"enum": ["a-b", "a_b", "A B", "", "日本", "self", "Self", "x\ry"]}, "Crlf": {"enum": ["a\r\nb", "c"]},
                    "Vec": {"type": "array", "items": {"$ref": "#/$defs/Vec"}},
                    "Box": {"type": "object", "properties": {"b": {"$ref": "#/$defs/Box"}}},
                    "Value": {"type": "object"},
                    "Json": {"anyOf": [{"$ref": "#/$defs/Value"}, {"type": "null"}]},
                    "Invalid": false,
                    "error": {"type": "object", "properties": {"error": {}, "Error": {}}},
                    "Error": {"type": "object", "properties": {"extra": {"type": "string"}}},
                    "fn": {"type": "object", "properties": {"fn": {"type": "object", "properties": {"fn": {}}}}},
                    "Number": {"type": "number"},
                    "Union_": {"type": "string"},
                    "Union": {"type": "number"}
                },
                "$ref": "#/$defs/self"
            }),
        ),
        (
            "ü.json",
            json!({
                "type": "object",
                "properties": {
                    "big": {"type": "integer", "minimum": 9007199254740993u64, "maximum": 18446744073709551615u64},
                    "low": {"type": "integer", "maximum": -9007199254740993i64},
                    "e": {"enum": [6, null]},
                    "ie": {"enum": [9007199254740993u64, 1.0, "1"]},
                    "c": {"const": {"definitions": {"x": 1}, "$ref": "#/definitions/x"}},
                    "r": {"type": "object", "required": ["x"], "additionalProperties": false},
                    "f": {"type": "integer", "format": "uint32"},
                    "d": {"type": "string", "format": "date-time"},
                    "n": {"type": ["object", "null"], "properties": {"k": {"type": "array"}}},
                    "list": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
                    "code": {"anyOf": [{"const": -32700}, {"const": -32600}, {"type": "integer", "format": "int32"}]}
                }
            }),
        ),
        (
            "self.json",
            json!({
                "type": "object",
                "properties": {
                    "child": {"$ref": "#"},
                    "children": {"type": "array", "items": {"$ref": "#"}},
                    "maybe": {"anyOf": [{"$ref": "#"}, {"type": "null"}]},
                    "empty": {"type": "array"},
                    "obj": {"type": "object", "additionalProperties": {"$ref": "#/properties/empty"}}
                }
            }),
        ),
        (
            "_.json",
            json!({
                "anyOf": [
                    {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                    {"type": "object", "properties": {"kind": {"const": "a"}, "more": {"type": "string"}}}
                ],
                "$defs": {"schema_": false, "T": true}
            }),
        ),
        ("type.json", json!({"type": "string", "format": "date-time", "contentEncoding": "base64"})),
        ("false.json", json!(false)),
        (
            "crate.json",
            json!({
                "type": "object",
                "patternProperties": {"^x-": {"type": "integer", "multipleOf": 0.5}},
                "properties": {
                    "tags": {"type": "array", "uniqueItems": true, "prefixItems": [{"type": "string"}], "items": {"type": "number"}},
                    "has": {"type": "array", "contains": {"const": 1}, "maxContains": 2},
                    "names": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}},
                    "closed": {"type": "object", "allOf": [{"properties": {"a": {"type": "string"}}}], "properties": {"b": {}}, "unevaluatedProperties": false},
                    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "unevaluatedItems": false},
                    "money": {"type": "number", "multipleOf": 0.01, "exclusiveMinimum": 0}
                },
                "dependentRequired": {"a": ["b"]},
                "if": {"required": ["a"]},
                "then": {"properties": {"b": {"type": "string"}}},
                "else": {"properties": {"b": {"type": "null"}}},
                "discriminator": {"propertyName": "kind"}
            }),
        ),
        // Each draft read with its own meaning: keywords of later drafts are annotations
        // there, `items` arrays, `additionalItems`, `dependencies`, `$ref` hiding its
        // siblings, draft-04's boolean exclusive bounds, 2019-09's `$recursiveRef`.
        (
            "draft4.json",
            json!({
                "$schema": "http://json-schema.org/draft-04/schema#",
                "id": "urn:example:draft4",
                "type": "object",
                "definitions": {"pos": {"type": "number", "minimum": 0, "exclusiveMinimum": true}},
                "properties": {
                    "m": {"type": "number", "maximum": 10, "exclusiveMaximum": true, "minimum": 1, "exclusiveMinimum": false},
                    "p": {"$ref": "#/definitions/pos", "type": "string"},
                    "later": {"const": 1, "contains": {"type": "string"}, "propertyNames": {"maxLength": 1}, "if": {"type": "string"}, "then": {"type": "null"}},
                    "t": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false}
                },
                "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
                "additionalProperties": {"$id": "not-a-keyword-here", "type": ["string", "integer", "object", "array"]}
            }),
        ),
        (
            "draft6.json",
            json!({
                "$schema": "http://json-schema.org/draft-06/schema#",
                "type": "object",
                "properties": {
                    "x": {"if": {"type": "string"}, "then": false, "exclusiveMinimum": 5},
                    "c": {"type": "array", "contains": {"const": 1}, "minContains": 2, "items": {"type": "integer"}},
                    "n": {"type": "object", "propertyNames": {"pattern": "^[a-z]+$"}, "dependentRequired": {"a": ["b"]}},
                    "t": {"type": "array", "items": [true, {"type": "boolean"}], "additionalItems": {"type": "string"}}
                }
            }),
        ),
        (
            "draft7.json",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "$id": "http://example.com/draft7.json",
                "definitions": {"name": {"type": "string", "minLength": 2}},
                "type": "object",
                "properties": {
                    "r": {"$ref": "#/definitions/name", "maxLength": 0, "$id": "ignored.json"},
                    "t": {"type": "array", "items": [{"$ref": "#/definitions/name"}], "additionalItems": {"type": "integer"}},
                    "single": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
                    "u": {"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false, "prefixItems": [{"type": "string"}]},
                    "cond": {"if": {"type": "string"}, "then": {"minLength": 3}, "else": {"type": "integer"}}
                },
                "dependencies": {"a": ["b", "c"], "e": {"properties": {"f": {"type": "integer"}}, "required": ["f"]}, "g": true}
            }),
        ),
        (
            "draft2019.json",
            json!({
                "$schema": "https://json-schema.org/draft/2019-09/schema",
                "$recursiveAnchor": true,
                "type": "object",
                "properties": {
                    "kids": {"type": "array", "items": {"$recursiveRef": "#"}},
                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false},
                    "dr": {"type": "object", "dependentRequired": {"a": ["b"]}, "dependencies": {"c": ["d"]}},
                    "ref": {"$ref": "#/$defs/short", "maxLength": 5},
                    "dyn": {"$dynamicRef": "#/$defs/short", "prefixItems": [{"type": "string"}]}
                },
                "$defs": {"short": {"type": "string", "minLength": 2}},
                "unevaluatedProperties": false
            }),
        ),
        ("wide.json", wide()),
        // References into an unknown keyword and into data (travis's and meltano's shape),
        // and negated sets inside a class (citation-file-format's `[\S]`).
        (
            "unknown_refs.json",
            json!({
                "$schema": "http://json-schema.org/draft-07/schema#",
                "definitions": {
                    "notification": {
                        "slack": {"type": "object", "properties": {"room": {"$ref": "#/definitions/notification/room"}}, "required": ["room"]},
                        "room": {"type": "string", "pattern": "^[\\S]+@[^\\W_][\\D]$"}
                    }
                },
                "type": "object",
                "properties": {
                    "slack": {"$ref": "#/definitions/notification/slack"},
                    "level": {"$ref": "#/properties/example/default"},
                    "example": {"default": {"type": "integer", "minimum": 2}}
                }
            }),
        ),
    ]
}

/// An object naming 200 properties, 150 of them required, with a required name that has
/// no schema, and one requiring 130 names it gives no schema: past the 128 bits a check
/// once had for them (biome's schema has two such definitions).
fn wide() -> Value {
    let properties: serde_json::Map<String, Value> = (0..200)
        .map(|i| (format!("p{i}"), if i % 2 == 0 { json!({"type": "string"}) } else { json!({"type": "integer", "minimum": i}) }))
        .collect();
    let mut required: Vec<String> = (0..150).map(|i| format!("p{i}")).collect();
    required.push("schemaless".into());
    let bare: Vec<String> = (0..130).map(|i| format!("r{i}")).collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": {"type": "boolean"},
        "$defs": {"bare": {"type": "object", "required": bare}}
    })
}

#[test]
fn hostile_schemas_compile_and_agree_with_jsonschema() {
    let mut modules = Vec::new();
    let mut all_cases = Vec::new();
    let mut module_of_case = Vec::new();
    for (file, schema) in corpus() {
        let generated = generate(file, &schema)
            .unwrap_or_else(|d| panic!("{file} must generate: {}", d.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("\n")));
        let file_cases = cases(&schema, &generated.definitions, 400);
        module_of_case.extend(std::iter::repeat_n(generated.module.name.clone(), file_cases.len()));
        all_cases.extend(file_cases);
        modules.push(generated.module);
    }
    let binary = build("hostile_schemas", &modules).unwrap_or_else(|e| panic!("generated code does not build:\n{e}"));
    let verdicts = verdicts(&binary, &module_of_case, &all_cases);
    let (tally, disagreements) = compare(&all_cases, &verdicts);
    assert!(
        disagreements.is_empty(),
        "{} disagreement(s):\n{}",
        disagreements.len(),
        disagreements.iter().take(15).cloned().collect::<Vec<_>>().join("\n")
    );
    assert!(tally.accepted > 50 && tally.rejected > 50, "{tally:?}");
    eprintln!("hostile schemas: {} modules, {} accepted, {} rejected, all agreeing", modules.len(), tally.accepted, tally.rejected);
}
