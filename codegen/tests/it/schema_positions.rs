//! Schema diagnostics point into the schema file as written: `--> schemas/<file>:line:column`
//! at the node the pointer names, with the pointer still in the message; a pointer into the
//! normalized document shows its nearest enclosing node that the file has.

use crate::common;

use std::collections::BTreeMap;

use checkfu_wire_codegen::diagnostic::Diagnostics;
use checkfu_wire_codegen::rust::schemas::{generate_placed, Placement};
use checkfu_wire_codegen::schema::dialect::Dialect;
use checkfu_wire_codegen::schema::SchemaSet;

/// Loads `text` as `schemas/<file>` and generates it, rendering its diagnostics.
fn rendered(file: &str, text: &str) -> String {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join(file), text).expect("write");
    let mut diagnostics = Diagnostics::default();
    let set = SchemaSet::load(dir.path(), &mut diagnostics);
    assert!(diagnostics.is_empty(), "{}", diagnostics.render());
    let placement = Placement { text: &set.texts[file], sources: &mut diagnostics.sources };
    match generate_placed(file, &set.files[file], &BTreeMap::new(), Dialect::Draft2020, Some(placement)) {
        Ok(_) => panic!("{file} generated"),
        Err(items) => diagnostics.items.extend(items),
    }
    diagnostics.render()
}

#[test]
fn a_reference_loop_is_shown_at_its_ref_with_line_and_column() {
    let text = r##"{
  "$defs": {
    "a": {
      "$ref": "#/$defs/b"
    },
    "b": {"$ref": "#/$defs/a"}
  }
}
"##;
    let out = rendered("loop.schema.json", text);
    assert!(out.contains("schemas/loop.schema.json#/$defs/a/$ref: "), "{out}");
    assert!(out.contains("--> schemas/loop.schema.json:4:15"), "{out}");
    assert!(out.contains(r##"^^^^^^^^^^^ here"##), "{out}");
}

#[test]
fn a_bad_pattern_is_shown_at_the_pattern() {
    let text = "{\"type\": \"object\",\n \"properties\": {\n\t\"p\": {\"type\": \"string\", \"pattern\": \"(?<!x)y\"}}}";
    let out = rendered("pattern.schema.json", text);
    assert!(out.contains("schemas/pattern.schema.json#/properties/p/pattern: the pattern `(?<!x)y`"), "{out}");
    // Columns count characters, a tab as one.
    assert!(out.contains("--> schemas/pattern.schema.json:3:37"), "{out}");
}

#[test]
fn a_pointer_into_the_normalized_draft_is_shown_where_the_file_writes_it() {
    // Draft-07's array `items` is 2020-12's `prefixItems`, and the checks name it so.
    let text = r#"{"$schema": "http://json-schema.org/draft-07/schema#",
 "type": "array",
 "items": [{"type": "string", "pattern": "(?<!x)y"}]}"#;
    let out = rendered("draft7.schema.json", text);
    assert!(out.contains("schemas/draft7.schema.json#/prefixItems/0/pattern: the pattern"), "{out}");
    assert!(out.contains("--> schemas/draft7.schema.json:3:42"), "{out}");
    assert!(out.contains("here: the file writes it `#/items/0/pattern`"), "{out}");
    let text = r##"{"$schema": "http://json-schema.org/draft-07/schema#",
 "dependencies": {"a": {"$ref": "#"}}}"##;
    let out = rendered("dependencies.schema.json", text);
    assert!(out.contains("schemas/dependencies.schema.json#/dependentSchemas/a/$ref: a `$ref` loop"), "{out}");
    assert!(out.contains("--> schemas/dependencies.schema.json:2:33"), "{out}");
    assert!(out.contains("here: the file writes it `#/dependencies/a/$ref`"), "{out}");
}

#[test]
fn the_pipeline_renders_schema_diagnostics_at_their_line_and_column() {
    // The whole of `generate`, on the project's inputs plus one schema with a loop: the
    // schema's text reaches the run's sources, so the rendering shows where the loop is.
    let scratch = common::Scratch::new();
    let text = "{\n  \"$defs\": {\n    \"a\": {\"allOf\": [{\"$ref\": \"#/$defs/b\"}]},\n    \"b\": {\"$ref\": \"#/$defs/a\"}\n  }\n}\n";
    std::fs::write(scratch.root().join("schemas/looping.schema.json"), text).expect("write");
    let out = scratch.generate_err().render();
    assert!(out.contains("schemas/looping.schema.json#/$defs/a/allOf/0/$ref: a `$ref` loop"), "{out}");
    assert!(out.contains("--> schemas/looping.schema.json:3:30"), "{out}");
}
