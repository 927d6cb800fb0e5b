//! The `[oneshot]` lane against what it restates: the release decoder's closed values (read
//! from the authoring schema derived from its type) and the stream schema's event kinds.
//! Each mismatch is an E0001 that points into the catalog.

use crate::common;

use common::{refused_at, Scratch};

#[test]
fn a_value_the_decoder_does_not_read_is_refused() {
    let s = Scratch::new();
    s.edit_nth("prompt_transport = [\"stdin\", \"argv_path\"]", "prompt_transport = [\"stdin\", \"argv\"]", 0);
    refused_at(&s, "unknown value of declaration member `prompt_transport` `argv`", "[oneshot.declares]", "\"argv\"");
}

#[test]
fn a_value_the_decoder_reads_must_be_listed() {
    let s = Scratch::new();
    s.edit_nth("output_mode = [\"text\", \"stream_json\"]", "output_mode = [\"text\"]", 0);
    refused_at(&s, "lacks `stream_json`", "[oneshot.declares]", "[\"text\"]");
}

#[test]
fn every_closed_member_of_the_decoder_is_listed() {
    let s = Scratch::new();
    s.edit_nth("output_schema_transport = [\"argv_path\"]\n", "", 0);
    refused_at(&s, "lacks `output_schema_transport`", "\n[oneshot.declares]", "[oneshot.declares]");
    let s = Scratch::new();
    s.edit_nth("output_schema_transport = [\"argv_path\"]", "output_schema_via = [\"argv_path\"]", 0);
    refused_at(&s, "unknown closed declaration member `output_schema_via`", "[oneshot.declares]", "output_schema_via");
}

#[test]
fn every_stream_event_is_mapped_once_to_a_known_observation() {
    let s = Scratch::new();
    s.edit_nth("[[oneshot.events]]\nkind = \"usage\"\n\n", "", 0);
    refused_at(&s, "the stream event `usage` has no `[[oneshot.events]]` entry", "\n[oneshot]\n", "\"oneshot-stream-v1.schema.json\"");
    let s = Scratch::new();
    s.edit_nth("kind = \"usage\"", "kind = \"usage_report\"", 0);
    refused_at(&s, "unknown stream event kind `usage_report`", "[[oneshot.events]]", "\"usage_report\"");
    let s = Scratch::new();
    s.edit_nth("kind = \"text_delta\"\nobservation = \"output\"", "kind = \"text_delta\"\nobservation = \"started\"", 0);
    refused_at(&s, "unknown observation kind `started`", "[[oneshot.events]]", "\"started\"");
    let s = Scratch::new();
    s.edit_nth("kind = \"usage\"", "kind = \"text\"", 0);
    refused_at(&s, "duplicate stream event kind `text`", "kind = \"tool_result\"", "\"text\"");
}

#[test]
fn a_step_names_an_optional_member_and_the_literals_match() {
    let s = Scratch::new();
    s.edit_nth("declared = \"resume_flag\"", "declared = \"entrypoint\"", 0);
    refused_at(&s, "unknown optional declaration member `entrypoint`", "[[oneshot.steps]]", "\"entrypoint\"");
    let s = Scratch::new();
    s.edit_after("\n[oneshot]\n", "protocol = \"oneshot-v1\"", "protocol = \"oneshot-v2\"");
    refused_at(&s, "is not the protocol the release decoder reads", "\n[oneshot]\n", "\"oneshot-v2\"");
    let s = Scratch::new();
    s.edit_after("\n[oneshot]\n", "exchanges = \"golden/oneshot-v1\"", "exchanges = \"../oneshot-v1\"");
    refused_at(&s, "is not a directory path relative to the project root", "\n[oneshot]\n", "\"../oneshot-v1\"");
}

#[test]
fn the_build_reruns_when_an_exchange_appears_or_changes() {
    let s = Scratch::new();
    let root = s.root();
    let dir = root.join("golden/oneshot-v1");
    if !dir.exists() {
        // Cargo reruns every build for a path that does not exist: the ancestor is watched.
        let inputs = checkfu_wire_codegen::inputs(root);
        assert!(inputs.contains(&root.join("golden")), "{inputs:?}");
        assert!(!inputs.contains(&dir), "{inputs:?}");
    }
    std::fs::create_dir_all(dir.join("resume")).expect("mkdir");
    std::fs::write(dir.join("resume/run-2.json"), "{}").expect("write");
    let inputs = checkfu_wire_codegen::inputs(root);
    assert!(inputs.contains(&dir), "{inputs:?}");
    assert!(inputs.contains(&dir.join("resume/run-2.json")), "{inputs:?}");
}
