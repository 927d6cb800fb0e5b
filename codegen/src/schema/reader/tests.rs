use serde_json::Value;

use super::{read, Location};

fn located(text: &str, pointer: &str) -> (String, Location) {
    let (value, spans) = read(text).expect("reads");
    let location = spans.locate(&value, pointer);
    (text[location.span.clone()].to_string(), location)
}

#[test]
fn a_node_spans_its_own_text_without_the_whitespace_around_it() {
    let text = "{\n  \"a\" : [1, {\"b\": \"x\\ny\"} ],\n  \"c\": -0.5e+3 }\n";
    assert_eq!(located(text, "").0, text.trim());
    assert_eq!(located(text, "/a").0, "[1, {\"b\": \"x\\ny\"} ]");
    assert_eq!(located(text, "/a/0").0, "1");
    assert_eq!(located(text, "/a/1/b").0, "\"x\\ny\"");
    assert_eq!(located(text, "/c").0, "-0.5e+3");
}

#[test]
fn a_pointer_the_text_lacks_finds_its_nearest_enclosing_node() {
    let text = r#"{"definitions": {"a/b": {"items": [true]}}}"#;
    let (span, location) = located(text, "/definitions/a~1b/items/0");
    assert_eq!((span.as_str(), location.exact), ("true", true));
    // Normalization reads a draft's `items` array as `prefixItems`.
    let (span, location) = located(text, "/definitions/a~1b/prefixItems/0");
    assert_eq!(span, r#"{"items": [true]}"#);
    assert_eq!((location.found.as_str(), location.exact), ("/definitions/a~1b", false));
    // Indices are decimal without a sign or a leading zero, as `Value::pointer` reads them.
    for pointer in ["/definitions/a~1b/items/00", "/definitions/a~1b/items/+0", "/definitions/a~1b/items/1"] {
        let (_, location) = located(text, pointer);
        assert_eq!((location.found.as_str(), location.exact), ("/definitions/a~1b/items", false), "{pointer}");
    }
    let (span, location) = located(text, "no slash");
    assert_eq!((span.as_str(), location.exact), (text, false));
}

#[test]
fn a_repeated_key_keeps_its_first_place_and_its_last_value_and_span() {
    let text = r#"{"a": 1, "b": 2, "a": 3}"#;
    let (value, spans) = read(text).expect("reads");
    assert_eq!(value.to_string(), serde_json::from_str::<Value>(text).expect("serde_json").to_string());
    assert_eq!(value.to_string(), r#"{"a":3,"b":2}"#);
    assert_eq!(&text[spans.locate(&value, "/a").span], "3");
    assert_eq!(&text[spans.locate(&value, "/b").span], "2");
}

#[test]
fn objects_serde_json_reads_as_numbers_are_its_to_read() {
    for text in [r#"{"$serde_json::private::Number": "1.50"}"#, r#"{"$serde_json::private::RawValue": "[1, 2]"}"#] {
        let (value, spans) = read(text).expect("reads");
        assert_eq!(value, serde_json::from_str::<Value>(text).expect("serde_json"), "{text}");
        assert_eq!(spans.locate(&value, "/0").span, 0..text.len());
    }
}

#[test]
fn errors_say_where_the_reader_stopped() {
    let error = read("[1, 2,]").expect_err("trailing comma");
    assert_eq!(error.offset, 6);
    let error = read("{\"a\": 1} x").expect_err("trailing characters");
    assert_eq!((error.offset, error.message.as_str()), (9, "trailing characters"));
}

/// A number whose value as serde_json holds it is not the value its text writes: found
/// without `arbitrary_precision`, none with it (the text is then what is kept).
#[test]
fn numbers_read_as_another_value_are_found_unless_texts_are_kept() {
    let text = r#"{"a": [1, 1.0, 1e5, 0.1, -0, 18446744073709551615, 18446744073709551616], "b": {"c": -9223372036854775809, "d": 0.30000000000000001}}"#;
    let (value, spans) = read(text).expect("reads");
    let found: Vec<&str> = spans.inexact_numbers(&value, text).into_iter().map(|span| &text[span]).collect();
    // The serialization is what tells whether numbers keep their texts.
    #[allow(clippy::cmp_owned)]
    let texts_kept = value["a"][6].to_string() == "18446744073709551616";
    if texts_kept {
        assert_eq!(found, Vec::<&str>::new());
    } else {
        assert_eq!(found, ["18446744073709551616", "-9223372036854775809", "0.30000000000000001"]);
    }
}
