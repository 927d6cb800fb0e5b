use super::*;
use serde_json::json;

fn tagged(tag: Value) -> Value {
    json!({"type": "object", "required": ["kind", "x"], "properties": {"x": {"type": "integer"}, "kind": tag}})
}

#[test]
fn a_union_is_dispatched_only_when_its_tag_decides_it() {
    let defs = json!({"B": tagged(json!({"type": "string", "enum": ["b"]}))});
    let defs = defs.as_object().expect("object");
    let found = discriminator(&[tagged(json!({"const": "a"})), json!({"$ref": "#/$defs/B"})], defs);
    assert_eq!(found, Some(("kind".to_string(), vec!["a".to_string(), "b".to_string()])));
    let declined = [
        // The same tag twice: both alternatives could match.
        vec![tagged(json!({"const": "a"})), tagged(json!({"enum": ["a"]}))],
        // Two allowed values: the tag names no single alternative.
        vec![tagged(json!({"const": "a"})), tagged(json!({"enum": ["b", "c"]}))],
        // Not required: a value without the tag could still match.
        vec![tagged(json!({"const": "a"})), json!({"type": "object", "properties": {"kind": {"const": "b"}}})],
        // Not an object schema: a non-object passes `required` vacuously.
        vec![tagged(json!({"const": "a"})), json!({"required": ["kind"], "properties": {"kind": {"const": "b"}}})],
        // A reference the definitions do not hold.
        vec![tagged(json!({"const": "a"})), json!({"$ref": "#/$defs/Missing"})],
        // One alternative is no union.
        vec![tagged(json!({"const": "a"}))],
    ];
    for members in declined {
        assert_eq!(discriminator(&members, defs), None, "{members:?}");
    }
}

#[test]
fn a_union_of_string_constants_is_one_comparison_only_when_nothing_else_decides() {
    let members = [json!({"type": "string", "const": "read", "description": "Reading."}), json!({"const": "edit", "title": "Edit"})];
    assert_eq!(string_constants(&members), Some(vec!["read".to_string(), "edit".to_string()]));
    let declined = [
        // The same constant twice: a `oneOf` of them matches nothing, an `anyOf` something.
        vec![json!({"const": "a"}), json!({"type": "string", "const": "a"})],
        // Another keyword beside the constant, which the comparison would not check.
        vec![json!({"const": "a"}), json!({"const": "b", "maxLength": 0})],
        // A type that is not (only) a string.
        vec![json!({"const": "a"}), json!({"type": ["string", "null"], "const": "b"})],
        // A constant that is not a string.
        vec![json!({"const": "a"}), json!({"const": 1})],
        // A reference, left to the general path and its memoized checks.
        vec![json!({"const": "a"}), json!({"$ref": "#/$defs/B"})],
    ];
    for members in declined {
        assert_eq!(string_constants(&members), None, "{members:?}");
    }
}

#[test]
fn a_body_is_shared_by_what_it_calls_not_by_what_its_literals_spell() {
    let node = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    let defs = json!({"A": {"type": "object", "properties": {
        // Literals spelling a node function, a check and a static: still read only the value.
        "x": {"const": "node_1 check_A STATIC_1 deferred memoized"},
        "y": {"const": "node_1 check_A STATIC_1 deferred memoized"},
        // Calls the node function of `q`: owned by `A`, not shared.
        "z": node,
    }}});
    let normalized = Normalized {
        root_name: "A".to_string(),
        defs: defs.as_object().expect("object").clone(),
        origins: BTreeMap::new(),
        errors: Vec::new(),
    };
    let checks = generate(&normalized).expect("checks");
    let shared: Vec<String> = checks.shared.iter().map(|(_, item)| item.to_string()).collect();
    assert_eq!(shared.len(), 2, "{shared:#?}");
    assert!(shared[0].contains("node_1 check_A STATIC_1 deferred memoized"), "{shared:#?}");
    let owned: Vec<String> = checks.functions.iter().map(|(owner, item)| format!("{owner}: {item}")).collect();
    assert_eq!(owned.len(), 2, "{owned:#?}");
    assert!(owned[0].starts_with("A: ") && owned[0].contains("properties/z"), "{owned:#?}");
}
