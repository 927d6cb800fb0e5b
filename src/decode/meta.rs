//! The `_meta` policy: each `checkfu.*` member goes through its slot's typed decoder and
//! the slot's class decides what a failure means.
//!
//! - declaration: a member that does not decode rejects the message (the handshake);
//! - fidelity: a member that does not decode is dropped with a diagnostic (fail-open);
//! - authority: a member that does not decode, or fails the safety profile, or lacks the
//!   slot value it requires, rejects the message before any model work (fail-closed);
//! - an unknown `checkfu.*` key, or a known key outside its carrier, is ignored with a
//!   diagnostic; keys of other namespaces are not ours to judge.

use super::envelope::Meta;
use super::report::{DecodeError, Report, SlotReport, SlotStatus};
use super::tables::{self, Part, SlotCarrier, SlotClass, META_NAMESPACE, SLOTS};
use crate::exact::Json;

/// Applies the policy to the `_meta` members of `method`'s `part`; `Err` rejects the
/// message. `carriers` are the slots' carriers under the version being read (its grammar's
/// `slot_carriers`): a slot outside its carrier is ignored with a diagnostic.
pub fn apply(meta: &Meta, method: &str, part: Part, carriers: &[SlotCarrier], report: &mut Report) -> Result<(), DecodeError> {
    // Decoded members by slot index: `Meta` rejects a repeated key, so a slot has at most
    // one, and the common message pays for no allocation here.
    let mut decoded: [Option<&Json>; SLOTS.len()] = [const { None }; SLOTS.len()];
    for (key, value) in meta.0 {
        // Other namespaces' members are not ours to judge (and were parsed only when the
        // whole body was wanted as a tree).
        let Some(value) = value.as_ref().filter(|_| key.starts_with(META_NAMESPACE)) else { continue };
        let Some((index, slot)) = tables::slot(key).and_then(|i| Some((i, SLOTS.get(i)?))) else {
            report.diagnostics.push(format!("unknown extension key `{key}` ignored"));
            report.slots.push(SlotReport { key: key.to_string().into(), class: None, status: SlotStatus::Ignored });
            continue;
        };
        if !carriers.get(index).is_some_and(|c| c.method == Some(method) && c.part == part) {
            report.diagnostics.push(format!("`{key}` is not carried by this message ({method} {}); ignored", part_name(part)));
            report.slots.push(SlotReport { key: slot.key.into(), class: Some(slot.class), status: SlotStatus::Ignored });
            continue;
        }
        // The check reads the borrowed tree the envelope pass built: building a `Value`
        // (hashed maps, owned strings) cost more than the check itself.
        let outcome = match (slot.check)(value) {
            Err(e) => Err((e.pointer(), e.message.to_string())),
            // The safety profile reads the same tree; it guards only the schema-carrying slots.
            Ok(()) if slot.safety_profile => profile(value),
            Ok(()) => Ok(()),
        };
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
        if let (SlotStatus::Decoded, Some(entry)) = (status, decoded.get_mut(index)) {
            *entry = Some(value);
        }
        report.slots.push(SlotReport { key: slot.key.into(), class: Some(slot.class), status });
    }
    // Cross-field rules, once every member is known: a decoded member whose slot requires
    // another slot's value.
    for (slot, _) in SLOTS.iter().zip(&decoded).filter(|(_, member)| member.is_some()) {
        let Some((requires, value)) = slot.requires else { continue };
        let satisfied = tables::slot(requires).and_then(|i| decoded.get(i).copied().flatten()).and_then(Json::as_str) == Some(value);
        if !satisfied {
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
fn profile(value: &Json<'_>) -> Result<(), (String, String)> {
    let verdict = checkfu_wire_safety::lint(value);
    if verdict.accepted {
        return Ok(());
    }
    let first = verdict.violations.first();
    let pointer = first.map(|v| v.pointer.clone()).unwrap_or_default();
    let rules: Vec<String> = verdict.violations.iter().map(|v| v.rule.id().to_string()).collect();
    let message =
        format!("fails the schema safety profile ({}){}", rules.join(", "), first.map(|v| format!(": {}", v.message)).unwrap_or_default());
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
