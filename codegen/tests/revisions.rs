//! Revision identities: content behind a literal cannot change while the literal stays.

mod common;

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
    s.edit_nth("extension_vectors = \"checkfu:acp-v1-extension-vectors@3\"", "extension_vectors = \"checkfu:acp-v1-extension-vectors@4\"", 0);
    let outputs = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render())).outputs;
    let lock = outputs.iter().find(|o| o.path.ends_with("revisions.lock.json")).expect("lock");
    assert!(lock.contents.contains("checkfu:acp-v1-extension-vectors@4"));
}

#[test]
fn changing_a_conformance_requirement_needs_a_new_conformance_literal() {
    let s = Scratch::new();
    s.edit_nth("exactly one ready observation precedes all harness output", "at least one ready observation precedes all harness output", 0);
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
