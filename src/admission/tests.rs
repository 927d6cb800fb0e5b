//! Exhaustive admission tests: every declaration member × every value of its vocabulary and
//! malformed values, against both driver envelope rows, asserting the exact admitted set
//! (as bytes) or the exact error. Expected sets are written out as literal JSON so that the
//! test states the contract instead of recomputing it with the code under test.

use serde_json::{json, Value};

use super::declaration::{JsonType, WireDeclaration};
use super::*;

const DURABLE: &str = r#"{"event_fidelity":"structured","continuation":"rebuild_only","checkpoint":"disk_only","approval_delivery":"end_reinject","interrupt":"kill_only","mid_run_input":"unsupported","model_control":"platform_enforced","usage_authority":"platform_observed","multiagent_shared_environment":"true"}"#;
const EPHEMERAL: &str = r#"{"event_fidelity":"structured","continuation":"rebuild_only","checkpoint":"none","approval_delivery":"end_reinject","interrupt":"kill_only","mid_run_input":"unsupported","model_control":"platform_enforced","usage_authority":"platform_observed","multiagent_shared_environment":"true"}"#;

fn rows() -> [(&'static Envelope, &'static str); 2] {
    let durable = catalog::envelope(catalog::Driver::CheckfuAcpV11, catalog::Retention::Durable).expect("durable row");
    let ephemeral = catalog::envelope(catalog::Driver::CheckfuAcpV11, catalog::Retention::EphemeralZdr).expect("ephemeral_zdr row");
    [(durable, DURABLE), (ephemeral, EPHEMERAL)]
}

fn lane() -> &'static Envelope {
    catalog::LANE_ENVELOPES.first().expect("the connected-runtime lane envelope")
}

/// An initialize response as an ACP agent sends it, with the given `_meta` (omitted if None).
fn response(meta: Option<Value>) -> Value {
    let mut result = json!({
        "protocolVersion": 1,
        "agentCapabilities": {"mcpCapabilities": {"http": true}},
        "agentInfo": {"name": "test-harness", "version": "0.0.1"}
    });
    if let (Some(meta), Some(object)) = (meta, result.as_object_mut()) {
        object.insert("_meta".into(), meta);
    }
    json!({"jsonrpc": "2.0", "id": 0, "result": result})
}

fn declaring(members: Value) -> Value {
    response(Some(json!({ "checkfu.capabilities": members })))
}

/// `base` with `axis` replaced in place.
fn with(base: &str, axis: &str, from: &str, to: &str) -> String {
    let needle = format!(r#""{axis}":"{from}""#);
    assert!(base.contains(&needle), "{needle} in {base}");
    base.replace(&needle, &format!(r#""{axis}":"{to}""#))
}

/// `base` with `"subagents":"observed"` appended.
fn with_subagents(base: &str) -> String {
    format!(r#"{},"subagents":"observed"}}"#, &base[..base.len() - 1])
}

fn member_error(member: &str, fault: MemberFault) -> AdmissionError {
    AdmissionError::Member { member: member.to_owned(), fault }
}

#[test]
fn an_envelope_serializes_as_its_axis_object_in_axis_order() {
    for (envelope, literal) in rows() {
        assert_eq!(envelope_json(envelope), literal);
    }
    assert_eq!(
        envelope_json(lane()),
        r#"{"event_fidelity":"structured","continuation":"rebuild_only","checkpoint":"none","approval_delivery":"unsupported","interrupt":"cooperative","mid_run_input":"unsupported","model_control":"opaque","usage_authority":"unknown","multiagent_shared_environment":"false"}"#
    );
}

#[test]
fn a_non_declaring_harness_is_byte_identical_to_its_envelope() {
    let silent = [
        response(None),
        response(Some(Value::Null)),
        response(Some(json!({}))),
        response(Some(json!({"vendor.trace": "abc", "checkfu.turn": "not decoded here", "checkfu.future": {"x": 1}}))),
        declaring(json!({})),
    ];
    for (envelope, literal) in rows() {
        for initialize in &silent {
            let admitted = admit(envelope, initialize).expect("admitted");
            assert_eq!(admitted.to_json(), literal, "{initialize}");
            assert_eq!(serde_json::to_string(&admitted).expect("serializes"), envelope_json(envelope));
            assert!(admitted.values().iter().all(|(axis, _)| *axis != "subagents"));
            assert!(admitted.promotions().is_empty());
            assert!(admitted.mechanisms().is_empty());
            assert_eq!(admitted.awaiting_evidence().count(), 0);
        }
    }
}

/// What one single-member declaration must produce.
enum Expect {
    /// The admitted set's bytes, given the envelope's bytes.
    Set(fn(&str) -> String),
    /// Recorded as a mechanism; the set stays the envelope.
    Mechanism,
    Fault(MemberFault),
}

/// Every declaration member × every value of its vocabulary (the axis vocabulary for an
/// upgrade member), against both envelope rows.
fn vocabulary_cases() -> Vec<(&'static str, &'static str, Expect)> {
    use Expect::*;
    vec![
        ("subagents", "observed", Set(with_subagents)),
        ("subagents", "absent", Fault(MemberFault::Restatement { axis: "subagents", value: "absent" })),
        ("steer", "native", Set(|b| with(b, "mid_run_input", "unsupported", "native"))),
        ("steer", "unsupported", Fault(MemberFault::Restatement { axis: "mid_run_input", value: "unsupported" })),
        ("interrupt", "cooperative", Set(|b| with(b, "interrupt", "kill_only", "cooperative"))),
        ("interrupt", "kill_only", Fault(MemberFault::Restatement { axis: "interrupt", value: "kill_only" })),
        ("builtin_tool_scoping", "enforced", Mechanism),
        ("structured_output", "response_format", Mechanism),
        ("structured_output", "submit_tool", Mechanism),
        ("staged_files", "resource_links", Mechanism),
        ("native_checkpoint", "external_custody", Mechanism),
    ]
}

#[test]
fn vocabulary_cases_cover_every_member_and_value_in_the_tables() {
    let cases = vocabulary_cases();
    let covered = |member: &str, value: &str| cases.iter().any(|(m, v, _)| *m == member && *v == value);
    for upgrade in catalog::UPGRADES {
        let axis = catalog::axis(upgrade.axis).expect("upgrade axis");
        for value in axis.values {
            assert!(covered(upgrade.member, value), "no expectation for {}: {value}", upgrade.member);
        }
    }
    for mechanism in catalog::MECHANISMS {
        for value in mechanism.values {
            assert!(covered(mechanism.member, value), "no expectation for {}: {value}", mechanism.member);
        }
    }
    assert_eq!(
        cases.len(),
        catalog::UPGRADES.iter().map(|u| catalog::axis(u.axis).map_or(0, |a| a.values.len())).sum::<usize>()
            + catalog::MECHANISMS.iter().map(|m| m.values.len()).sum::<usize>()
    );
}

#[test]
fn every_member_and_vocabulary_value_against_both_rows() {
    for (envelope, literal) in rows() {
        for (member, value, expect) in vocabulary_cases() {
            let outcome = admit(envelope, &declaring(json!({ member: value })));
            match expect {
                Expect::Set(set) => {
                    let admitted = outcome.expect("admitted");
                    assert_eq!(admitted.to_json(), set(literal), "{member}: {value}");
                    let promoted: Vec<_> = admitted.promotions().iter().map(|u| (u.member, u.value)).collect();
                    assert_eq!(promoted, [(member, value)]);
                    assert!(admitted.mechanisms().is_empty());
                }
                Expect::Mechanism => {
                    let admitted = outcome.expect("admitted");
                    assert_eq!(admitted.to_json(), literal, "{member}: {value}");
                    assert!(admitted.promotions().is_empty());
                    assert_eq!(admitted.mechanism(member), Some(value));
                    assert_eq!(admitted.mechanisms().len(), 1);
                }
                Expect::Fault(fault) => assert_eq!(outcome, Err(member_error(member, fault)), "{member}: {value}"),
            }
        }
    }
}

#[test]
fn values_outside_a_members_vocabulary_are_unknown() {
    // Every value any member or axis knows, plus near misses.
    let mut pool: Vec<&str> = vec!["", "Observed", " native", "native ", "enforced,", "true", "yes", "1"];
    for axis in catalog::AXES {
        pool.extend(axis.values);
    }
    for mechanism in catalog::MECHANISMS {
        pool.extend(mechanism.values);
    }
    let members: Vec<(&str, &'static [&'static str], Option<&Axis>)> = catalog::UPGRADES
        .iter()
        .map(|u| (u.member, std::slice::from_ref(&u.value), catalog::axis(u.axis)))
        .chain(catalog::MECHANISMS.iter().map(|m| (m.member, m.values, None)))
        .collect();
    let mut checked = 0;
    for (envelope, _) in rows() {
        for (member, expected, axis) in &members {
            for value in &pool {
                let in_vocabulary = expected.contains(value) || axis.is_some_and(|a| a.rank(value).is_some());
                if in_vocabulary {
                    continue;
                }
                let outcome = admit(envelope, &declaring(json!({ *member: *value })));
                let fault = MemberFault::UnknownValue { value: (*value).to_owned(), expected };
                assert_eq!(outcome, Err(member_error(member, fault)));
                checked += 1;
            }
        }
    }
    assert!(checked > 100, "only {checked} cases");
}

#[test]
fn non_string_values_are_the_wrong_type() {
    let malformed = [
        (json!(null), JsonType::Null),
        (json!(true), JsonType::Boolean),
        (json!(false), JsonType::Boolean),
        (json!(0), JsonType::Number),
        (json!(1.5), JsonType::Number),
        (json!([]), JsonType::Array),
        (json!(["observed"]), JsonType::Array),
        (json!({}), JsonType::Object),
        (json!({"value": "native"}), JsonType::Object),
    ];
    let members = catalog::UPGRADES.iter().map(|u| u.member).chain(catalog::MECHANISMS.iter().map(|m| m.member));
    for member in members {
        for (envelope, _) in rows() {
            for (value, found) in &malformed {
                let outcome = admit(envelope, &declaring(json!({ member: value })));
                assert_eq!(outcome, Err(member_error(member, MemberFault::WrongType { found: *found })));
            }
        }
    }
}

#[test]
fn an_axis_named_directly_is_a_smuggled_promotion() {
    // Every value of every axis that is not itself a declaration member, including values
    // that would promote the envelope (checkpoint disk_only on ephemeral_zdr) and values
    // that restate it.
    let mut checked = 0;
    for (envelope, _) in rows() {
        for axis in catalog::AXES.iter().filter(|a| !is_member(a.name)) {
            for value in axis.values {
                let outcome = admit(envelope, &declaring(json!({ axis.name: value })));
                assert_eq!(outcome, Err(member_error(axis.name, MemberFault::NamesAxis { axis: axis.name })));
                checked += 1;
            }
            let outcome = admit(envelope, &declaring(json!({ axis.name: 1 })));
            assert_eq!(outcome, Err(member_error(axis.name, MemberFault::NamesAxis { axis: axis.name })));
        }
    }
    assert!(checked >= 2 * 15, "only {checked} cases");
}

#[test]
fn unknown_members_are_rejected_by_name() {
    for (envelope, _) in rows() {
        for member in ["subagent", "steering", "Steer", "", "checkfu.steer", "capabilities", "native"] {
            for value in [json!("observed"), json!("native"), json!(true)] {
                let outcome = admit(envelope, &declaring(json!({ member: value })));
                assert_eq!(outcome, Err(member_error(member, MemberFault::Unknown)));
            }
        }
    }
}

#[test]
fn the_full_declaration_admits_all_three_upgrades_and_records_four_mechanisms() {
    let full = json!({
        "subagents": "observed",
        "steer": "native",
        "interrupt": "cooperative",
        "builtin_tool_scoping": "enforced",
        "structured_output": "response_format",
        "staged_files": "resource_links",
        "native_checkpoint": "external_custody"
    });
    for (envelope, literal) in rows() {
        let admitted = admit(envelope, &declaring(full.clone())).expect("admitted");
        let expected =
            with_subagents(&with(&with(literal, "mid_run_input", "unsupported", "native"), "interrupt", "kill_only", "cooperative"));
        assert_eq!(admitted.to_json(), expected);
        let promoted: Vec<_> = admitted.promotions().iter().map(|u| u.axis).collect();
        assert_eq!(promoted, ["subagents", "mid_run_input", "interrupt"]);
        let recorded: Vec<_> = admitted.mechanisms().iter().map(|(m, v)| (m.member, *v)).collect();
        assert_eq!(
            recorded,
            [
                ("builtin_tool_scoping", "enforced"),
                ("structured_output", "response_format"),
                ("staged_files", "resource_links"),
                ("native_checkpoint", "external_custody"),
            ]
        );
        let awaiting: Vec<_> = admitted.awaiting_evidence().collect();
        assert_eq!(awaiting, [("mid_run_input", "steering_delivered"), ("interrupt", "cooperative_interrupt_drained")]);
        assert_eq!(admitted.value("subagents"), Some("observed"));
        assert_eq!(admitted.envelope(), envelope);
    }
}

#[test]
fn member_order_on_the_wire_does_not_change_the_admitted_bytes() {
    for (envelope, _) in rows() {
        let a = admit(envelope, &declaring(json!({"subagents": "observed", "interrupt": "cooperative", "steer": "native"})));
        let b = admit(envelope, &declaring(json!({"steer": "native", "interrupt": "cooperative", "subagents": "observed"})));
        let (a, b) = (a.expect("admitted"), b.expect("admitted"));
        assert_eq!(a.to_json(), b.to_json());
        assert_ne!(a.promotions(), b.promotions(), "promotions keep wire order");
    }
}

#[test]
fn the_first_faulty_member_in_wire_order_is_named() {
    let (envelope, _) = rows()[0];
    let outcome = admit(envelope, &declaring(json!({"subagents": "observed", "model_control": "platform_enforced", "steer": "yes"})));
    assert_eq!(outcome, Err(member_error("model_control", MemberFault::NamesAxis { axis: "model_control" })));
}

#[test]
fn a_lane_envelope_above_the_base_rejects_downgrade_and_mismatch() {
    let lane = lane();
    assert_eq!(
        admit(lane, &declaring(json!({"interrupt": "kill_only"}))),
        Err(member_error("interrupt", MemberFault::Downgrade { axis: "interrupt", value: "kill_only", envelope: "cooperative" }))
    );
    assert_eq!(
        admit(lane, &declaring(json!({"interrupt": "cooperative"}))),
        Err(member_error("interrupt", MemberFault::BaseMismatch { axis: "interrupt", envelope: Some("cooperative"), from: "kill_only" }))
    );
    let admitted = admit(lane, &declaring(json!({"steer": "native"}))).expect("admitted");
    assert_eq!(admitted.value("mid_run_input"), Some("native"));
}

/// A synthetic four-step axis, so that intermediate and beyond-the-step values, which the
/// current two-value vocabularies cannot express, are still classified exactly.
#[test]
fn intermediate_and_beyond_step_values_are_classified() {
    static AXIS: Axis = Axis { name: "ladder", values: &["a", "b", "c", "d"], absent: None, in_envelope: true };
    static UPGRADE: Upgrade = Upgrade { member: "climb", value: "go", axis: "ladder", from: "a", to: "c", evidence: None, proof: "climb" };
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, Some("a"), "go"), Ok(()));
    assert_eq!(
        judge_upgrade(&AXIS, &UPGRADE, Some("a"), "b"),
        Err(MemberFault::Intermediate { axis: "ladder", value: "b", from: "a", to: "c" })
    );
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, Some("a"), "d"), Err(MemberFault::BeyondStep { axis: "ladder", value: "d", to: "c" }));
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, Some("a"), "a"), Err(MemberFault::Restatement { axis: "ladder", value: "a" }));
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, Some("b"), "a"), Err(MemberFault::Downgrade { axis: "ladder", value: "a", envelope: "b" }));
    assert_eq!(
        judge_upgrade(&AXIS, &UPGRADE, Some("b"), "go"),
        Err(MemberFault::BaseMismatch { axis: "ladder", envelope: Some("b"), from: "a" })
    );
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, None, "go"), Err(MemberFault::BaseMismatch { axis: "ladder", envelope: None, from: "a" }));
    assert_eq!(judge_upgrade(&AXIS, &UPGRADE, Some("a"), "c"), Err(MemberFault::UnknownValue { value: "c".into(), expected: &["go"] }));
}

#[test]
fn malformed_envelopes_of_the_declaration_are_rejected() {
    let (envelope, _) = rows()[1];
    assert_eq!(
        admit(envelope, &json!({"jsonrpc": "2.0", "id": 0, "error": {"code": -32603, "message": "boom"}})),
        Err(AdmissionError::NotAnInitializeResponse { found: "an error response" })
    );
    assert_eq!(
        admit(envelope, &json!({"jsonrpc": "2.0", "id": 0, "result": []})),
        Err(AdmissionError::NotAnInitializeResponse { found: "`result` is not an object" })
    );
    assert_eq!(admit(envelope, &json!([])), Err(AdmissionError::NotAnInitializeResponse { found: "no `result`" }));
    assert_eq!(
        admit(envelope, &response(Some(json!("checkfu.capabilities")))),
        Err(AdmissionError::MetaNotAnObject { found: JsonType::String })
    );
    for (value, found) in [
        (json!(null), JsonType::Null),
        (json!(["subagents"]), JsonType::Array),
        (json!("observed"), JsonType::String),
        (json!(true), JsonType::Boolean),
    ] {
        assert_eq!(admit(envelope, &declaring(value)), Err(AdmissionError::DeclarationNotAnObject { found }));
    }
}

#[test]
fn a_member_duplicated_on_the_wire_is_rejected() {
    let (envelope, _) = rows()[0];
    let decoded: WireDeclaration =
        serde_json::from_str(r#"{"steer": "native", "subagents": "observed", "steer": "native"}"#).expect("json");
    assert_eq!(admit_declaration(envelope, &decoded), Err(member_error("steer", MemberFault::Duplicate)));
}

#[test]
fn errors_say_which_member_and_why() {
    let (envelope, _) = rows()[0];
    let message = |declaration: Value| match admit(envelope, &declaring(declaration)) {
        Ok(admitted) => panic!("admitted {}", admitted.to_json()),
        Err(error) => error.to_string(),
    };
    assert_eq!(
        message(json!({"steer": "unsupported"})),
        "handshake rejected: checkfu.capabilities member `steer` declares `mid_run_input` \"unsupported\", which the envelope already holds; a declaration carries only the raised value"
    );
    assert_eq!(
        message(json!({"structured_output": "json_mode"})),
        "handshake rejected: checkfu.capabilities member `structured_output` has the unknown value \"json_mode\" (expected \"response_format\" | \"submit_tool\")"
    );
    assert_eq!(
        message(json!({"checkpoint": "disk_only"})),
        "handshake rejected: checkfu.capabilities member `checkpoint` names the capability axis `checkpoint`, which no declaration may raise (only the declaration upgrades promote an axis)"
    );
    assert_eq!(
        message(json!({"subagents": true})),
        "handshake rejected: checkfu.capabilities member `subagents` must be a string, found boolean"
    );
}

#[test]
fn catalog_declarations_of_packaged_entries_are_admissible() {
    // Every packaged entry's catalog declaration, sent as a handshake against each row of its
    // driver, is admitted, and the subagents axis appears exactly when the entry declares it.
    for harness in catalog::HARNESSES.iter().filter(|h| h.mode == catalog::Mode::Packaged) {
        let members: serde_json::Map<String, Value> = harness.declares.iter().map(|(m, v)| ((*m).to_owned(), Value::from(*v))).collect();
        for envelope in catalog::ENVELOPES.iter().filter(|e| Some(e.owner) == harness.driver.map(catalog::Driver::name)) {
            let admitted = admit(envelope, &declaring(Value::Object(members.clone()))).expect(harness.name);
            let declares_subagents = harness.declares.iter().any(|(m, _)| *m == "subagents");
            assert_eq!(admitted.value("subagents").is_some(), declares_subagents, "{}", harness.name);
            if harness.declares.is_empty() {
                assert_eq!(admitted.to_json(), envelope_json(envelope));
            }
        }
    }
}

/// The generated schema check of the declaration slot (compiled from the seed vectors schema)
/// and admission (driven by the catalog tables) must agree on which single-member
/// declarations are acceptable, against an envelope at every upgrade's base. A disagreement
/// means the catalog and the schema describe different declarations.
#[test]
fn admission_agrees_with_the_generated_schema_check() {
    // The declaration slot's generated check, found through the decoder tables.
    let slot = crate::decode::tables::SLOTS
        .iter()
        .find(|s| s.class == crate::decode::tables::SlotClass::Declaration)
        .expect("the catalog has a declaration slot");
    let check = slot.check;
    let schema_check = |v: &Value| crate::exact::check_value(v, check);
    let (envelope, _) = rows()[0];
    let mut names: Vec<&str> = vec!["steering", "", "Steer"];
    names.extend(catalog::UPGRADES.iter().map(|u| u.member));
    names.extend(catalog::MECHANISMS.iter().map(|m| m.member));
    names.extend(catalog::AXES.iter().map(|a| a.name));
    // `subagents` and `interrupt` are both members and axes.
    names.sort_unstable();
    names.dedup();
    let mut values: Vec<Value> = vec![json!(null), json!(true), json!(1), json!([]), json!({}), json!(""), json!("Observed")];
    for axis in catalog::AXES {
        values.extend(axis.values.iter().map(|v| json!(v)));
    }
    for mechanism in catalog::MECHANISMS {
        values.extend(mechanism.values.iter().map(|v| json!(v)));
    }
    let mut accepted = 0;
    for name in &names {
        for value in &values {
            let declaration = json!({ *name: value.clone() });
            let admitted = admit(envelope, &declaring(declaration.clone())).is_ok();
            assert_eq!(admitted, schema_check(&declaration).is_ok(), "{declaration}");
            accepted += usize::from(admitted);
        }
    }
    assert_eq!(accepted, catalog::UPGRADES.len() + catalog::MECHANISMS.iter().map(|m| m.values.len()).sum::<usize>());
}
