//! One test per hole of issue #13: each edit used to pass silently, and is now refused with
//! a diagnostic that points into the catalog and names the entry and the field.

use crate::common;

use checkfu_wire_codegen::diagnostic::{Class, Diagnostic, Diagnostics};
use common::{line_column, replaced_after, Checker, Scratch};

/// The one diagnostic of `class` that names `entry` and `field`, at `line:column`.
fn find<'d>(d: &'d Diagnostics, class: Class, entry: &str, field: &str) -> &'d Diagnostic {
    d.items
        .iter()
        .find(|i| i.class == class && i.entry.as_deref() == Some(entry) && i.field.as_deref() == Some(field))
        .unwrap_or_else(|| panic!("no {class:?} naming entry `{entry}` and field `{field}` in:\n{}", d.render()))
}

fn at(d: &Diagnostics, item: &Diagnostic, (line, column): (usize, usize)) {
    assert_eq!(item.position(&d.sources).as_deref(), Some(format!("catalog/catalog.toml:{line}:{column}").as_str()), "{}", d.render());
}

const HERMES: &str = "name = \"hermes\"";

#[test]
fn reversing_an_axis_needs_a_new_driver_literal() {
    let c = Checker::new();
    // The diagnostic points at the first value that left its pinned place.
    for (anchor, from, to, moved) in [
        ("name = \"checkpoint\"", "values = [\"none\", \"disk_only\"]", "values = [\"disk_only\", \"none\"]", "\"disk_only\""),
        (
            "name = \"approval_delivery\"",
            "values = [\"unsupported\", \"end_reinject\"]",
            "values = [\"end_reinject\", \"unsupported\"]",
            "\"end_reinject\"",
        ),
    ] {
        let text = replaced_after(&c.catalog(), anchor, from, to);
        let d = c.refused(&text);
        let item = d.items.iter().find(|i| i.class == Class::Reinterpretation).unwrap_or_else(|| panic!("{}", d.render()));
        let axis = anchor.trim_start_matches("name = \"").trim_end_matches('"');
        assert_eq!(item.axis.as_deref(), Some(axis));
        assert_eq!(item.field.as_deref(), Some("values"));
        at(&d, item, line_column(&text, anchor, moved));
        let rendered = d.render();
        assert!(rendered.contains("changed but `checkfu:acp-v1@1` did not"), "{rendered}");
        assert!(rendered.contains("checkfu:acp-v1@2"), "suggests the bump: {rendered}");
    }
}

#[test]
fn a_new_driver_literal_admits_a_new_axis_order() {
    let c = Checker::new();
    let text = replaced_after(&c.catalog(), "name = \"checkpoint\"", "[\"none\", \"disk_only\"]", "[\"disk_only\", \"none\"]");
    let text = text.replace("checkfu:acp-v1@1", "checkfu:acp-v1@2");
    if let Err(d) = c.check(&text) {
        panic!("{}", d.render());
    }
}

#[test]
fn appending_a_value_keeps_the_pinned_order() {
    let c = Checker::new();
    let text = replaced_after(&c.catalog(), "name = \"continuation\"", "[\"rebuild_only\"]", "[\"rebuild_only\", \"native\"]");
    if let Err(d) = c.check(&text) {
        panic!("{}", d.render());
    }
}

#[test]
fn gateway_paths_follow_the_grammar() {
    let c = Checker::new();
    let anchor = "name = \"openai_chat\"";
    let text = replaced_after(&c.catalog(), anchor, "\"/v1/chat/completions\"", "\"checkfu.capabilities\"");
    let d = c.refused(&text);
    let item = find(&d, Class::UnknownOrDuplicate, "openai_chat", "gateway_path");
    assert!(item.message.contains("starts with `/`"), "{}", d.render());
    at(&d, item, line_column(&text, anchor, "\"checkfu.capabilities\""));

    let text = replaced_after(&c.catalog(), "name = \"fal_queue\"", "\"/{model_id}\"", "\"/{model}\"");
    let d = c.refused(&text);
    assert!(find(&d, Class::UnknownOrDuplicate, "fal_queue", "gateway_path").message.contains("`{model}` is not a known placeholder"));
}

#[test]
fn two_dialects_cannot_share_a_gateway_path() {
    let c = Checker::new();
    let anchor = "name = \"openai_responses\"";
    let text = replaced_after(&c.catalog(), anchor, "\"/v1/responses\"", "\"/v1/messages\"");
    let d = c.refused(&text);
    let item = find(&d, Class::UnknownOrDuplicate, "openai_responses", "gateway_path");
    assert!(item.message.contains("gateway path of dialect `anthropic_messages`"), "{}", d.render());
    at(&d, item, line_column(&text, anchor, "\"/v1/messages\""));
    assert!(d.render().contains("already the path of `anthropic_messages`"), "the first use is shown too:\n{}", d.render());
}

#[test]
fn published_fields_take_only_their_vocabulary() {
    let c = Checker::new();
    for (field, from, to) in [
        ("supply", "\"image_required\"", "\"]]image_required\""),
        ("adoption", "\"bring_your_own_image\"", "\"bring_your_own\""),
        ("model_lane", "\"platform_model_gateway\"", "\"platform_gateway\""),
        ("mcp_delivery", "\"session_http\"", "\"stdio\""),
        ("tuple_support", "\"preflight_required\"", "\"terminal/output\""),
        ("evidence", "[]", "[\"steering_deliverd\"]"),
    ] {
        let anchor = format!("{HERMES}\nmode");
        let text = replaced_after(&c.catalog(), &anchor, &format!("{field} = {from}"), &format!("{field} = {to}"));
        let d = c.refused(&text);
        let item = find(&d, Class::UnknownOrDuplicate, "hermes", field);
        let needle = to.trim_start_matches('[');
        at(&d, item, line_column(&text, &anchor, needle));
        assert!(item.message.contains("unknown"), "{}", d.render());
    }
}

#[test]
fn model_lane_and_model_control_are_paired() {
    let c = Checker::new();
    let anchor = format!("{HERMES}\nmode");
    let text = replaced_after(&c.catalog(), &anchor, "model_lane = \"platform_model_gateway\"", "model_lane = \"harness_owned_model\"");
    let d = c.refused(&text);
    assert_eq!(d.items.len(), 1, "{}", d.render());
    let item = find(&d, Class::UnknownOrDuplicate, "hermes", "model_lane");
    assert_eq!(item.axis.as_deref(), Some("model_control"));
    assert!(item.message.contains("`harness_owned_model`") && item.message.contains("`platform_enforced`"), "{}", d.render());
    at(&d, item, line_column(&text, &anchor, "\"harness_owned_model\""));
    let rendered = d.render();
    assert!(rendered.contains("requires ceiling.model_control `harness_owned`"), "{rendered}");
    assert!(rendered.contains("ceiling.model_control is `platform_enforced`"), "the ceiling is pointed at too:\n{rendered}");

    // The same rule seen from the other side: a ceiling that leaves its lane's control.
    let anchor = "name = \"cursor\"";
    let text = replaced_after(&c.catalog(), anchor, "model_control = \"harness_owned\"", "model_control = \"opaque\"");
    let d = c.refused(&text);
    assert!(find(&d, Class::UnknownOrDuplicate, "cursor", "model_lane").message.contains("`opaque`"), "{}", d.render());
}

#[test]
fn supply_and_adoption_are_paired() {
    let c = Checker::new();
    let text = replaced_after(&c.catalog(), HERMES, "supply = \"image_required\"", "supply = \"blocked\"");
    let d = c.refused(&text);
    let item = find(&d, Class::UnknownOrDuplicate, "hermes", "supply");
    assert!(item.message.contains("`blocked`") && item.message.contains("`bring_your_own_image`"), "{}", d.render());
}

#[test]
fn duplicates_are_refused_in_every_list_of_names() {
    let c = Checker::new();
    let cases = [
        ("name = \"openai\"", "accepts = [\"openai_chat\"", "accepts = [\"openai_chat\", \"openai_chat\"", "openai", "accepts"),
        ("[unlisted_provider]", "\"openai_chat\"", "\"openai_chat\", \"openai_chat\"", "unlisted_provider", "accepts"),
        (HERMES, "dialects = [\"openai_chat\"", "dialects = [\"openai_chat\", \"openai_chat\"", "hermes", "dialects"),
        (HERMES, "evidence = []", "evidence = [\"steering_delivered\", \"steering_delivered\"]", "hermes", "evidence"),
    ];
    for (anchor, from, to, entry, field) in cases {
        let text = replaced_after(&c.catalog(), anchor, from, to);
        let d = c.refused(&text);
        let item = find(&d, Class::UnknownOrDuplicate, entry, field);
        assert!(item.message.starts_with("duplicate"), "{}", d.render());
        assert!(item.location.is_some());
    }
    // Lists that belong to no entry name their owner in the message.
    let others = [
        (
            "member = \"structured_output\"",
            "\"response_format\", \"submit_tool\"",
            "\"response_format\", \"submit_tool\", \"submit_tool\"",
            "duplicate value of declaration member `structured_output`",
        ),
        (
            "[[gated_emissions]]",
            "\"observation.subagent_completed\"",
            "\"observation.subagent_completed\", \"observation.subagent_started\"",
            "duplicate member gated by `subagents`",
        ),
        ("[vocabularies]", "\"session_http\", \"none\"", "\"session_http\", \"none\", \"none\"", "duplicate value of `mcp_delivery`"),
        ("[gateway]", "[\"model_id\"]", "[\"model_id\", \"model_id\"]", "duplicate gateway placeholder"),
    ];
    for (anchor, from, to, message) in others {
        let d = c.refused(&replaced_after(&c.catalog(), anchor, from, to));
        let item = d.items.iter().find(|i| i.message.contains(message)).unwrap_or_else(|| panic!("{message}:\n{}", d.render()));
        assert_eq!(item.class, Class::UnknownOrDuplicate);
        assert!(item.location.is_some());
    }
}

#[test]
fn an_empty_dialect_list_is_refused_with_a_help_line() {
    let c = Checker::new();
    let anchor = "name = \"cursor\"";
    let text = replaced_after(&c.catalog(), anchor, "declares = {}", "declares = {}\ndialects = []");
    let d = c.refused(&text);
    assert_eq!(d.items.len(), 1, "{}", d.render());
    let item = find(&d, Class::UnknownOrDuplicate, "cursor", "dialects");
    let (line, column) = line_column(&text, anchor, "dialects = []");
    at(&d, item, (line, column + "dialects = ".len()));
    assert!(d.render().contains("help: omit `dialects` for an entry whose dialects are undeclared"), "{}", d.render());
}

#[test]
fn invalid_utf8_is_reported_at_its_position() {
    let s = Scratch::new();
    let path = s.root().join("catalog/catalog.toml");
    let text = s.catalog();
    let (line, _) = line_column(&text, "[revisions]", "[revisions]");
    let offset = text.find("[revisions]").expect("revisions") + "[revi".len();
    let mut bytes = text.into_bytes();
    bytes[offset] = 0xff;
    std::fs::write(&path, bytes).expect("write");
    let d = s.generate_err();
    let item = d.items.iter().find(|i| i.class == Class::Input).unwrap_or_else(|| panic!("{}", d.render()));
    assert_eq!(item.position(&d.sources), Some(format!("catalog/catalog.toml:{line}:6")));
    assert!(item.message.contains(&format!("byte 0xff at line {line}, column 6 (byte offset {offset})")), "{}", item.message);
    assert!(d.render().contains("invalid UTF-8 starts here"), "{}", d.render());
}

#[test]
fn a_dialect_name_that_cannot_name_a_variant_is_refused() {
    // The runtime's `Dialect` enum has a variant per dialect: `fal-queue` would be none, and
    // `fal_1` would collide with a `fal1`.
    let c = Checker::new();
    for bad in ["fal-queue", "fal_1", "Fal_queue"] {
        let text = c.catalog().replace("\"fal_queue\"", &format!("\"{bad}\""));
        let d = c.refused(&text);
        let item = find(&d, Class::UnknownOrDuplicate, bad, "name");
        at(&d, item, line_column(&text, "[[dialects]]\nname = \"openai_responses\"", &format!("\"{bad}\"")));
        assert!(d.render().contains("cannot name a `Dialect` variant"), "{}", d.render());
    }
}
