//! The `[[requirements]]` registry: unique, well-formed ids, a known tier, a capability
//! exactly on the `capability` tier, and exactly one judge the probe's report has. Each
//! broken entry is an E0001 that points into the catalog.

use crate::common;

use common::{refused_at, Scratch};

/// The entry of the registry the edits below break.
const ENTRY: &str = "id = \"ACP-INIT-001\"";

#[test]
fn a_duplicate_id_is_refused_where_it_is_written_again() {
    let s = Scratch::new();
    s.edit_nth("id = \"ACP-INIT-002\"", "id = \"ACP-INIT-001\"", 0);
    // The first entry's citation comes before the second's id.
    refused_at(&s, "duplicate requirement `ACP-INIT-001`", "initialization.mdx:54", "\"ACP-INIT-001\"");
}

#[test]
fn an_id_outside_the_two_forms_is_refused() {
    let s = Scratch::new();
    s.edit_nth(ENTRY, "id = \"TCK-INIT-1\"", 0);
    refused_at(&s, "requirement id `TCK-INIT-1` is not well formed", "[[requirements]]", "\"TCK-INIT-1\"");
}

#[test]
fn a_tier_the_kit_does_not_have_is_refused() {
    let s = Scratch::new();
    s.edit_after(ENTRY, "tier = \"mandatory\"", "tier = \"required\"");
    refused_at(&s, "unknown requirement tier `required`", ENTRY, "\"required\"");
}

#[test]
fn a_judge_the_report_does_not_have_is_refused() {
    let s = Scratch::new();
    s.edit_after(ENTRY, "step = \"initialize_handshake\"", "step = \"handshake\"");
    refused_at(&s, "unknown ACP lane step `handshake`", ENTRY, "\"handshake\"");
    let s = Scratch::new();
    s.edit_after(ENTRY, "step = \"initialize_handshake\"", "check = \"ready\"");
    refused_at(&s, "unknown conformance check `ready`", ENTRY, "\"ready\"");
}

#[test]
fn a_requirement_has_exactly_one_judge() {
    let s = Scratch::new();
    s.edit_after(ENTRY, "step = \"initialize_handshake\"", "step = \"initialize_handshake\"\nwire = true");
    refused_at(&s, "requirement `ACP-INIT-001` has 2 judges", "[[requirements]]", "\"ACP-INIT-001\"");
    let s = Scratch::new();
    s.edit_after(ENTRY, "step = \"initialize_handshake\"", "");
    refused_at(&s, "requirement `ACP-INIT-001` has 0 judges", "[[requirements]]", "\"ACP-INIT-001\"");
}

#[test]
fn only_a_capability_requirement_names_its_gate() {
    let s = Scratch::new();
    s.edit_after("id = \"ACP-LOAD-001\"", "capability = \"agentCapabilities.loadSession\"\n", "");
    refused_at(&s, "capability requirement `ACP-LOAD-001` names no capability", "id = \"ACP-LOAD-001\"", "\"capability\"");
    let s = Scratch::new();
    s.edit_after(ENTRY, "tier = \"mandatory\"", "tier = \"mandatory\"\ncapability = \"agentCapabilities.loadSession\"");
    refused_at(&s, "requirement `ACP-INIT-001` names a capability but its tier is `mandatory`", ENTRY, "\"agentCapabilities.loadSession\"");
}
