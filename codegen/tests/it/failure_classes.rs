//! One small break per failure class of CONTRACT.md section 2, each asserting the class,
//! the entry, the axis, the location and the values the diagnostic names; then several
//! breaks at once, all reported in one run.

use crate::common;

use checkfu_wire_codegen::diagnostic::{Class, Diagnostic, Diagnostics};
use common::{of_class, Scratch};

/// The single diagnostic of `class`, with everything else empty.
fn only(d: &Diagnostics, class: Class) -> Diagnostic {
    assert_eq!(d.items.len(), 1, "expected exactly one diagnostic, got:\n{}", d.render());
    let item = d.items[0].clone();
    assert_eq!(item.class, class, "{}", d.render());
    item
}

fn position(d: &Diagnostics, item: &Diagnostic) -> String {
    item.position(&d.sources).expect("diagnostic has a location")
}

#[test]
fn the_checked_in_catalog_generates() {
    let scratch = Scratch::new();
    let outputs = checkfu_wire_codegen::generate(scratch.root()).unwrap_or_else(|d| panic!("{}", d.render())).outputs;
    // The twelve catalog outputs (the v2 decoder tables among them) and checkfu-wire-typed's
    // index and tables, one whole module per input schema (typed), and one runtime module per
    // schema the catalog's roots reach.
    let schemas = std::fs::read_dir(scratch.root().join("schemas"))
        .expect("schemas")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "json")));
    let schemas = schemas.count();
    let runtime = outputs.iter().filter(|o| o.path.starts_with(checkfu_wire_codegen::SCHEMA_MODULES_DIR)).count();
    assert_eq!(outputs.len(), 14 + schemas + runtime);
    assert!(runtime < schemas, "a schema no runtime path reaches (MCP) has no runtime module");
}

#[test]
fn class1_value_outside_vocabulary() {
    let s = Scratch::new();
    let anchor = "name = \"hermes\"";
    s.edit_after(anchor, "model_control = \"platform_enforced\"", "model_control = \"platform_supreme\"");
    let line = s.line_of(anchor, "platform_supreme");
    let d = s.generate_err();
    let item = only(&d, Class::UnknownOrDuplicate);
    assert_eq!(item.entry.as_deref(), Some("hermes"));
    assert_eq!(item.axis.as_deref(), Some("model_control"));
    assert_eq!(item.declared.as_deref(), Some("platform_supreme"));
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:17"));
    let rendered = d.render();
    assert!(rendered.contains("error[E0001]"), "{rendered}");
    assert!(rendered.contains(&format!("--> catalog/catalog.toml:{line}:17")), "{rendered}");
    assert!(rendered.contains("^^^^^^^^^^^^^^^^^^"), "the span is underlined:\n{rendered}");
}

#[test]
fn class1_duplicate_entry_name() {
    let s = Scratch::new();
    s.edit_nth("name = \"pi\"", "name = \"hermes\"", 0);
    let d = s.generate_err();
    let item = only(&d, Class::UnknownOrDuplicate);
    assert!(item.message.contains("duplicate harness entry `hermes`"), "{}", d.render());
    let line = s.line_of("[[harnesses]]\nname = \"hermes\"\nmode = \"packaged\"\nsupply = \"image_required\"\nadoption = \"bring_your_own_image\"\nrelease_protocol = \"acp-v1\"\ndriver = \"checkfu:acp-v1@1\"\nmodel_lane = \"platform_model_gateway\"\nmcp_delivery = \"session_http\"\nevidence = []\ntuple_support = \"preflight_required\"\ndeclares = {}\ndialects = [\"openai_responses\"", "name = \"hermes\"");
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:8"));
}

#[test]
fn class2_ceiling_exceeds_envelope() {
    let s = Scratch::new();
    s.edit_nth("values = [\"none\", \"disk_only\"]", "values = [\"none\", \"disk_only\", \"replicated\"]", 0);
    let anchor = "name = \"codex\"";
    s.edit_after(anchor, "checkpoint = \"disk_only\"", "checkpoint = \"replicated\"");
    let line = s.line_of(anchor, "\"replicated\"");
    let d = s.generate_err();
    let item = only(&d, Class::ExceedsEnvelope);
    assert_eq!(item.entry.as_deref(), Some("codex"));
    assert_eq!(item.axis.as_deref(), Some("checkpoint"));
    assert_eq!(item.declared.as_deref(), Some("replicated"));
    assert_eq!(item.highest_realizable.as_deref(), Some("disk_only"));
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:14"));
}

#[test]
fn class2_no_single_retention_mode() {
    // disk_only needs durable; making durable drop end_reinject leaves no row for both.
    let s = Scratch::new();
    s.edit_after("retention = \"durable\"", "approval_delivery = \"end_reinject\"", "approval_delivery = \"unsupported\"");
    let d = s.generate_err();
    let items = of_class(&d, Class::ExceedsEnvelope);
    assert!(!items.is_empty(), "{}", d.render());
    assert!(items.iter().any(|i| i.entry.as_deref() == Some("hermes") && i.message.contains("no single retention mode")));
}

#[test]
fn class3_promotion_without_declaration() {
    let s = Scratch::new();
    let anchor = "name = \"hermes\"";
    s.edit_after(
        anchor,
        "multiagent_shared_environment = \"false\"",
        "multiagent_shared_environment = \"false\"\nsubagents = \"observed\"",
    );
    let line = s.line_of(anchor, "subagents = \"observed\"");
    let d = s.generate_err();
    let item = only(&d, Class::UndeclaredPromotion);
    assert_eq!(item.entry.as_deref(), Some("hermes"));
    assert_eq!(item.axis.as_deref(), Some("subagents"));
    assert_eq!(item.declared.as_deref(), Some("observed"));
    assert_eq!(item.highest_realizable.as_deref(), Some("absent"));
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:13"));
    assert!(d.render().contains("does not declare `subagents: \"observed\"`"), "{}", d.render());
}

#[test]
fn class4_control_promotion_without_evidence() {
    let s = Scratch::new();
    let anchor = "name = \"checkfu\"";
    s.edit_after(&format!("{anchor}\nmode"), "mid_run_input = \"unsupported\"", "mid_run_input = \"native\"");
    let d = s.generate_err();
    let item = only(&d, Class::PromotionWithoutEvidence);
    assert_eq!(item.entry.as_deref(), Some("checkfu"));
    assert_eq!(item.axis.as_deref(), Some("mid_run_input"));
    assert_eq!(item.declared.as_deref(), Some("native"));
    assert_eq!(item.highest_realizable.as_deref(), Some("unsupported"));
    assert!(d.render().contains("no signed `steering_delivered` evidence"), "{}", d.render());
}

#[test]
fn class4_evidence_admits_the_promotion_and_stars_it() {
    let s = Scratch::new();
    let anchor = "name = \"checkfu\"\nmode";
    s.edit_after(anchor, "mid_run_input = \"unsupported\"", "mid_run_input = \"native\"");
    s.edit_after(anchor, "evidence = []", "evidence = [\"steering_delivered\"]");
    let outputs = checkfu_wire_codegen::generate(s.root()).unwrap_or_else(|d| panic!("{}", d.render())).outputs;
    let page = &outputs.iter().find(|o| o.path.ends_with("harness-wire-extensions.md")).expect("page").contents;
    // The ceilings come in parts keyed by the entry; `mid_run_input` is in one of them.
    let part = page.split("\n\n").find(|t| t.starts_with("| Entry |") && t.contains("`mid_run_input`")).expect("part");
    let column = part.lines().next().expect("header").split(" | ").position(|h| h == "`mid_run_input`").expect("column");
    let row = part.lines().find(|l| l.starts_with("| `checkfu` |")).expect("checkfu ceiling row");
    assert_eq!(row.split(" | ").nth(column), Some("`native`*"), "{row}");
}

#[test]
fn class5_envelope_carries_subagents() {
    let s = Scratch::new();
    let anchor = "retention = \"ephemeral_zdr\"";
    s.edit_after(anchor, "event_fidelity = \"structured\"", "event_fidelity = \"structured\"\nsubagents = \"absent\"");
    let line = s.line_of(anchor, "subagents = \"absent\"");
    let d = s.generate_err();
    let item = only(&d, Class::EnvelopeCarriesDeclaredAxis);
    assert_eq!(item.entry.as_deref(), Some("checkfu:acp-v1@1"));
    assert_eq!(item.axis.as_deref(), Some("subagents"));
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:1"));
}

#[test]
fn class6_connected_entry_exceeds_lane() {
    let s = Scratch::new();
    let anchor = "name = \"openclaw-connected\"";
    // Not model_control: that axis is also paired with the model lane, which would add a
    // second diagnostic.
    s.edit_after(anchor, "checkpoint = \"none\"", "checkpoint = \"disk_only\"");
    let d = s.generate_err();
    let item = only(&d, Class::ExceedsLaneEnvelope);
    assert_eq!(item.entry.as_deref(), Some("openclaw-connected"));
    assert_eq!(item.axis.as_deref(), Some("checkpoint"));
    assert_eq!(item.declared.as_deref(), Some("disk_only"));
    assert_eq!(item.highest_realizable.as_deref(), Some("none"));
}

#[test]
fn class7_dialect_without_priced_provider() {
    let s = Scratch::new();
    s.edit_after("name = \"fal-ai\"", "priced = true", "priced = false");
    let anchor = "name = \"hermes\"";
    s.edit_after(anchor, "dialects = [\"openai_chat\"]", "dialects = [\"openai_chat\", \"fal_queue\"]");
    let line = s.line_of(anchor, "\"fal_queue\"");
    let d = s.generate_err();
    let item = only(&d, Class::UnservedDialect);
    assert_eq!(item.entry.as_deref(), Some("hermes"));
    assert_eq!(item.declared.as_deref(), Some("fal_queue"));
    assert_eq!(position(&d, &item), format!("catalog/catalog.toml:{line}:28"));
}

#[test]
fn class8_slot_without_payload_schema() {
    let s = Scratch::new();
    s.edit_nth("checkfu-slots.schema.json#/$defs/Compaction", "checkfu-slots.schema.json#/$defs/Compression", 0);
    let d = s.generate_err();
    let item = only(&d, Class::DeadVocabulary);
    assert_eq!(item.entry.as_deref(), Some("checkfu.compaction"));
    assert!(item.message.contains("no payload schema"), "{}", d.render());
}

#[test]
fn class8_gated_emission_names_unknown_axis_value_and_member() {
    let s = Scratch::new();
    s.edit_nth("members = [\"observation.steering\"]", "members = [\"observation.steer_ack\"]", 0);
    s.edit_after("[[gated_emissions]]", "value = \"observed\"", "value = \"watched\"");
    let d = s.generate_err();
    let items = of_class(&d, Class::DeadVocabulary);
    assert_eq!(items.len(), 2, "{}", d.render());
    assert!(items.iter().any(|i| i.message.contains("`watched`") && i.axis.as_deref() == Some("subagents")));
    assert!(items.iter().any(|i| i.message.contains("observation.steer_ack") && i.axis.as_deref() == Some("mid_run_input")));
}

#[test]
fn every_error_in_one_run() {
    let s = Scratch::new();
    s.edit_after("name = \"hermes\"", "model_control = \"platform_enforced\"", "model_control = \"platform_supreme\"");
    s.edit_after(
        "name = \"pi\"",
        "multiagent_shared_environment = \"false\"",
        "multiagent_shared_environment = \"false\"\nsubagents = \"observed\"",
    );
    s.edit_after("name = \"checkfu\"\nmode", "interrupt = \"kill_only\"", "interrupt = \"cooperative\"");
    s.edit_after("retention = \"durable\"", "event_fidelity = \"structured\"", "event_fidelity = \"structured\"\nsubagents = \"absent\"");
    s.edit_after("name = \"openclaw-connected\"", "usage_authority = \"unknown\"", "usage_authority = \"platform_observed\"");
    s.edit_nth("checkfu-slots.schema.json#/$defs/Resume", "checkfu-slots.schema.json#/$defs/Nothing", 0);
    let d = s.generate_err();
    for class in [
        Class::UnknownOrDuplicate,
        Class::UndeclaredPromotion,
        Class::PromotionWithoutEvidence,
        Class::EnvelopeCarriesDeclaredAxis,
        Class::ExceedsLaneEnvelope,
        Class::DeadVocabulary,
    ] {
        assert_eq!(of_class(&d, class).len(), 1, "{class:?} in:\n{}", d.render());
    }
    assert_eq!(d.items.len(), 6, "{}", d.render());
    assert!(d.render().ends_with("generation failed with 6 errors; nothing was written"));
}

#[test]
fn toml_syntax_error_points_at_the_line() {
    let s = Scratch::new();
    s.edit_nth("name = \"cursor\"", "name = \"cursor", 0);
    let d = s.generate_err();
    let item = only(&d, Class::Input);
    let line = s.line_of("name = \"cursor", "name = \"cursor");
    assert!(position(&d, &item).starts_with(&format!("catalog/catalog.toml:{line}:")), "{}", d.render());
}

/// A slot's ACP v2 carrier is judged against v2's grammar as its v1 carrier is against v1's:
/// one on a method v2 removed fails generation at the line that names it.
#[test]
fn class8_v2_carrier_on_a_method_v2_does_not_have() {
    let s = Scratch::new();
    s.edit_nth("carrier_v2 = \"session/update member _meta\"", "carrier_v2 = \"session/load response _meta\"", 0);
    let d = s.generate_err();
    let item = only(&d, Class::DeadVocabulary);
    assert_eq!(item.entry.as_deref(), Some("checkfu.turn"));
    assert!(item.message.contains("`session/load` under ACP v2"), "{}", d.render());
    let line = s.line_of("key = \"checkfu.turn\"", "carrier_v2 =");
    assert!(position(&d, &item).contains(&format!(":{line}:")), "{} at line {line}", d.render());
}

/// A slot without `carrier_v2` keeps its v1 carrier under v2, so that carrier must be v2's
/// too: `session/load` is v1's (the v1 check passes) but v2 removed it.
#[test]
fn class8_a_v1_carrier_that_v2_lacks_needs_a_v2_carrier() {
    let s = Scratch::new();
    s.edit_after("key = \"checkfu.builtin_tools\"", "carrier = \"session/new request _meta\"", "carrier = \"session/load request _meta\"");
    let d = s.generate_err();
    let found: Vec<_> =
        of_class(&d, Class::DeadVocabulary).into_iter().filter(|i| i.entry.as_deref() == Some("checkfu.builtin_tools")).collect();
    assert!(found.iter().any(|i| i.message.contains("under ACP v2") && i.message.contains("carrier_v2")), "{}", d.render());
}

/// An extension method stays one under v2: a `_meta` carrier for it is refused.
#[test]
fn class8_v2_carrier_cannot_turn_a_member_into_a_method() {
    let s = Scratch::new();
    s.edit_nth("carrier_v2 = \"session/update member _meta\"", "carrier_v2 = \"ACP extension request\"", 0);
    let d = s.generate_err();
    let item = only(&d, Class::DeadVocabulary);
    assert!(item.message.contains("`session/prompt response _meta` under v1"), "{}", d.render());
}
