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
