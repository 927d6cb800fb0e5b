//! The `_meta` policy: each `checkfu.*` member goes through its slot's typed decoder and
//! the slot's class decides what a failure means.
//!
//! - declaration: a member that does not decode rejects the message (the handshake);
//! - fidelity: a member that does not decode is dropped with a diagnostic (fail-open);
//! - authority: a member that does not decode, or fails the safety profile, or lacks the
//!   slot value it requires, rejects the message before any model work (fail-closed);
//! - an unknown `checkfu.*` key, or a known key outside its carrier, is ignored with a
//!   diagnostic; keys of other namespaces are not ours to judge.

use serde_json::Value;

use super::envelope::Meta;
use super::report::{DecodeError, Report, SlotReport, SlotStatus};
use super::tables::{Part, SlotClass, SlotDecoder, SLOTS};

const NAMESPACE: &str = "checkfu.";

fn slot(key: &str) -> Option<&'static SlotDecoder> {
    SLOTS.iter().find(|s| s.key == key)
}

/// Applies the policy to the `_meta` members of `method`'s `part`; `Err` rejects the
/// message.
pub fn apply(meta: &Meta, method: &str, part: Part, report: &mut Report) -> Result<(), DecodeError> {
    let mut decoded: Vec<(&'static str, Value)> = Vec::new();
    for (key, raw) in &meta.0 {
        if !key.starts_with(NAMESPACE) {
            continue;
        }
        let Some(slot) = slot(key) else {
            report.diagnostics.push(format!("unknown extension key `{key}` ignored"));
            report.slots.push(SlotReport { key: key.to_string().into(), class: None, status: SlotStatus::Ignored });
            continue;
        };
        if slot.method != Some(method) || slot.part != part {
            report.diagnostics.push(format!(
                "`{key}` is not carried by this message ({method} {}); ignored",
                part_name(part)
            ));
            report.slots.push(SlotReport { key: slot.key.into(), class: Some(slot.class), status: SlotStatus::Ignored });
            continue;
        }
        let value: Value = serde_json::from_str(raw.get()).map_err(|e| {
            if e.to_string().starts_with("recursion limit exceeded") {
                DecodeError::TooDeep { limit: super::envelope::MAX_DEPTH }
            } else {
                DecodeError::InvalidJson { message: e.to_string() }
            }
        })?;
        let outcome = (slot.check)(&value).map_err(|e| (e.pointer(), e.message.to_string())).and_then(|()| {
            if slot.safety_profile {
                profile(&value)
            } else {
                Ok(())
            }
        });
        let status = match (outcome, slot.class) {
            (Ok(()), _) => SlotStatus::Decoded,
            (Err((pointer, message)), SlotClass::Fidelity) => {
                report.diagnostics.push(format!("fidelity member `{key}` dropped: {} {message}", at(&pointer)));
                SlotStatus::Dropped
            }
            (Err((pointer, message)), SlotClass::Declaration) => {
                return Err(DecodeError::InvalidDeclaration { slot: key.to_string(), pointer, message });
            }
            (Err((pointer, message)), SlotClass::Authority | SlotClass::Method) => {
                return Err(DecodeError::AuthorityRejected { slot: key.to_string(), pointer, message });
            }
        };
        if status == SlotStatus::Decoded {
            decoded.push((slot.key, value));
        }
        report.slots.push(SlotReport { key: slot.key.into(), class: Some(slot.class), status });
    }
    // Cross-field rules, once every member is known.
    for slot in SLOTS.iter().filter(|s| s.method == Some(method) && s.part == part) {
        let Some((requires, value)) = slot.requires else { continue };
        let present = decoded.iter().any(|(k, _)| *k == slot.key);
        let satisfied = decoded.iter().any(|(k, v)| *k == requires && v.as_str() == Some(value));
        if present && !satisfied {
            return Err(DecodeError::MissingRequirement {
                slot: slot.key.to_string(),
                requires: requires.to_string(),
                value: value.to_string(),
            });
        }
    }
    Ok(())
}

/// The bounded safety profile, for author-supplied schemas.
fn profile(value: &Value) -> Result<(), (String, String)> {
    let verdict = checkfu_wire_safety::lint_value(value);
    if verdict.accepted {
        return Ok(());
    }
    let first = verdict.violations.first();
    let pointer = first.map(|v| v.pointer.clone()).unwrap_or_default();
    let rules: Vec<String> = verdict.violations.iter().map(|v| v.rule.id().to_string()).collect();
    let message = format!(
        "fails the schema safety profile ({}){}",
        rules.join(", "),
        first.map(|v| format!(": {}", v.message)).unwrap_or_default()
    );
    Err((pointer, message))
}

fn at(pointer: &str) -> String {
    if pointer.is_empty() {
        String::new()
    } else {
        format!("at `{pointer}`:")
    }
}

fn part_name(part: Part) -> &'static str {
    match part {
        Part::Request => "request",
        Part::Response => "response",
        Part::Member => "update member",
        Part::Method => "extension request",
    }
}
