//! Revision identities: content behind a literal cannot change while the literal stays.

use crate::common;

use checkfu_wire_codegen::diagnostic::Class;
use common::{of_class, Scratch};

fn edit_schema(s: &Scratch, from: &str, to: &str) {
    let path = s.root().join("schemas/acp-v1-extension-vectors.schema.json");
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from));
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
}

#[test]
fn changing_the_vectors_schema_without_a_new_literal_fails() {
    let s = Scratch::new();
    edit_schema(&s, "\"maxLength\": 256", "\"maxLength\": 512");
    let d = s.generate_err();
    let items = of_class(&d, Class::Reinterpretation);
    assert_eq!(items.len(), 1, "{}", d.render());
    let rendered = d.render();
    assert!(rendered.contains("the content behind `checkfu:acp-v1-extension-vectors@3` changed"), "{rendered}");
    assert!(rendered.contains("checkfu:acp-v1-extension-vectors@4"), "suggests the bump: {rendered}");
    let line = s.line_of("[revisions]", "extension_vectors =");
    assert_eq!(items[0].position(&d.sources).expect("position"), format!("catalog/catalog.toml:{line}:21"));
}

#[test]
fn bumping_the_literal_records_the_new_content() {
    let s = Scratch::new();
    edit_schema(&s, "\"maxLength\": 256", "\"maxLength\": 512");
    s.edit_nth(
        "extension_vectors = \"checkfu:acp-v1-extension-vectors@3\"",
        "extension_vectors = \"checkfu:acp-v1-extension-vectors@4\"",
        0,
    );
    let outputs = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render())).outputs;
    let lock = outputs.iter().find(|o| o.path.ends_with("revisions.lock.json")).expect("lock");
    assert!(lock.contents.contains("checkfu:acp-v1-extension-vectors@4"));
}

#[test]
fn changing_a_conformance_requirement_needs_a_new_conformance_literal() {
    let s = Scratch::new();
    s.edit_nth(
        "exactly one ready observation precedes all harness output",
        "at least one ready observation precedes all harness output",
        0,
    );
    let d = s.generate_err();
    let rendered = d.render();
    assert_eq!(of_class(&d, Class::Reinterpretation).len(), 1, "{rendered}");
    assert!(rendered.contains("`checkfu:harness-conformance@9`"), "{rendered}");
}

#[test]
fn formatting_and_comments_change_no_identity() {
    let s = Scratch::new();
    s.edit_nth("[[harnesses]]\nname = \"pi\"", "# pi ships with three dialects\n[[harnesses]]\nname   =   \"pi\"", 0);
    checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
}

/// Writes a file under the scratch copy's one-shot exchanges directory.
fn write_exchange(s: &Scratch, name: &str, contents: &str) {
    let dir = s.root().join("golden/oneshot-v1");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join(name), contents).expect("write exchange");
}

fn reinterpreted(s: &Scratch, literal: &str, key: &str) {
    let d = s.generate_err();
    let rendered = d.render();
    let items = of_class(&d, Class::Reinterpretation);
    assert_eq!(items.len(), 1, "{rendered}");
    assert!(rendered.contains(&format!("the content behind `{literal}` changed but the literal did not")), "{rendered}");
    let line = s.line_of("[revisions]", &format!("{key} ="));
    let column = key.len() + 4;
    assert_eq!(items[0].position(&d.sources).expect("position"), format!("catalog/catalog.toml:{line}:{column}"));
}

#[test]
fn a_new_or_changed_oneshot_exchange_needs_a_new_exchanges_literal() {
    let s = Scratch::new();
    // A file no pinned set holds: the set behind the literal changed.
    write_exchange(&s, "zz-added-by-test.json", "{\"case\": \"stdin-text-floor\"}\n");
    reinterpreted(&s, "checkfu:oneshot-v1-process-exchanges@3", "oneshot_exchanges");

    // Bumping the literal records the new set; then editing the file under it is refused.
    s.edit_nth("checkfu:oneshot-v1-process-exchanges@3", "checkfu:oneshot-v1-process-exchanges@4", 0);
    let generation = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render()));
    checkfu_wire_codegen::write_changed(s.root(), &generation.outputs).expect("write");
    checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("the written lock holds: {}", d.render()));
    write_exchange(&s, "zz-added-by-test.json", "{\"case\": \"stdin-text-floor\", \"exit\": 0}\n");
    reinterpreted(&s, "checkfu:oneshot-v1-process-exchanges@4", "oneshot_exchanges");
}

#[test]
fn the_stream_schema_and_the_lane_are_pinned_by_their_literals() {
    let s = Scratch::new();
    let path = s.root().join("schemas/oneshot-stream-v1.schema.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replacen("\"maxLength\": 512", "\"maxLength\": 1024", 1)).expect("write");
    reinterpreted(&s, "checkfu:oneshot-stream-v1@1", "oneshot_stream");

    let s = Scratch::new();
    s.edit_nth("every process the runs started has exited", "every process the run started has exited", 0);
    reinterpreted(&s, "checkfu:oneshot-v1@2", "oneshot_driver");
}

/// Replaces the pinned ACP v2 schema's `ProtocolVersion` maximum, with its provenance record
/// updated as a maintainer replacing the file would: only the revision literal is stale.
fn replace_the_v2_schema(s: &Scratch) {
    let path = s.root().join("schemas/acp-v2.schema.json");
    let text = std::fs::read_to_string(&path).expect("read");
    let from = "\"format\": \"uint16\",\n      \"minimum\": 0,\n      \"maximum\": 65535";
    assert_eq!(text.matches(from).count(), 1, "one ProtocolVersion range in the v2 schema");
    std::fs::write(&path, text.replacen(from, "\"format\": \"uint16\",\n      \"minimum\": 0,\n      \"maximum\": 255", 1)).expect("write");
    let record = s.root().join("schemas/acp-v2.provenance.toml");
    let sha = checkfu_wire_codegen::catalog::sha256_hex(&std::fs::read(&path).expect("read"));
    let updated: String = std::fs::read_to_string(&record)
        .expect("the v2 schema has a provenance record")
        .lines()
        .map(|l| if l.starts_with("sha256 = ") { format!("sha256 = \"{sha}\"\n") } else { format!("{l}\n") })
        .collect();
    std::fs::write(&record, updated).expect("write record");
}

#[test]
fn replacing_the_acp_v2_schema_without_a_new_literal_fails() {
    let s = Scratch::new();
    replace_the_v2_schema(&s);
    let d = s.generate_err();
    let rendered = d.render();
    let items = of_class(&d, Class::Reinterpretation);
    assert_eq!(items.len(), 1, "{rendered}");
    assert!(rendered.contains("the content behind `acp:schema-v2@1` changed"), "{rendered}");
    assert!(rendered.contains("acp:schema-v2@2"), "suggests the bump: {rendered}");
    // v1's literal pins v1's file only: it is not the one named.
    assert!(!rendered.contains("acp:schema-v1@1"), "{rendered}");
    let line = s.line_of("[revisions]", "acp_v2_schema =");
    assert_eq!(items[0].position(&d.sources).expect("position"), format!("catalog/catalog.toml:{line}:17"));
}

#[test]
fn bumping_the_acp_v2_literal_records_the_new_schema() {
    let s = Scratch::new();
    replace_the_v2_schema(&s);
    s.edit_nth("acp_v2_schema = \"acp:schema-v2@1\"", "acp_v2_schema = \"acp:schema-v2@2\"", 0);
    let outputs = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render())).outputs;
    let lock = outputs.iter().find(|o| o.path.ends_with("revisions.lock.json")).expect("lock");
    assert!(lock.contents.contains("acp:schema-v2@2"), "{}", lock.contents);
}

/// A v2 schema replaced without its provenance record is refused before any literal is
/// judged: the record is what the docs page states.
#[test]
fn an_acp_v2_schema_unlike_its_provenance_fails() {
    let s = Scratch::new();
    let path = s.root().join("schemas/acp-v2.schema.json");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(&path, text.replacen("\"maximum\": 65535", "\"maximum\": 255", 1)).expect("write");
    let rendered = s.generate_err().render();
    assert!(rendered.contains("`schemas/acp-v2.schema.json` is not the file its provenance records"), "{rendered}");
}
