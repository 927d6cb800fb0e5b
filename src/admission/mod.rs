//! Declaration admission: the capability set a harness gets at the ready handshake.
//!
//! The server envelope of the harness's driver and retention mode is the starting point and
//! the authority; a harness's `checkfu.capabilities` declaration (initialize response
//! `result._meta`) can raise it only through the generated [`catalog::UPGRADES`], each one
//! step in one direction, and only from the upgrade's base value. The generated
//! [`catalog::MECHANISMS`] members are recorded and promote nothing.
//!
//! The declaration slot is fail-closed: anything else rejects the handshake with an
//! [`AdmissionError`] that names the member and why. In particular
//!
//! - a member that is neither an upgrade nor a mechanism is unknown; when its name is a
//!   capability axis (`model_control`, `checkpoint`, ...) it is reported as an attempt to
//!   promote an axis that no declaration may raise;
//! - an upgrade member whose value is the axis's value below, at, between or beyond the
//!   upgrade's step is a downgrade, a restatement, an intermediate value or an overreach;
//!   a declaration carries only the raised value, so restating the envelope is rejected too;
//! - an upgrade whose base does not match the envelope (the envelope already holds the
//!   raised value, or lacks the axis) is rejected rather than silently ignored, because the
//!   declaration then disagrees with the server about what is being admitted;
//! - a member that is not a string, a declaration that is not an object, or a member that
//!   appears twice on the wire is malformed.
//!
//! A missing `_meta` (or a JSON `null` one, which ACP's own optional-field decoding treats as
//! absent) or a `_meta` without `checkfu.capabilities` declares nothing. A present but `null`
//! declaration is malformed: the slot is a closed object.
//!
//! **What "the envelope serialized" means.** An envelope serializes as one JSON object whose
//! keys are its axes and whose values are its values, in the envelope's own (axis) order, with
//! no whitespace: [`envelope_json`]. [`AdmittedCapabilities`] serializes the same way, keeping
//! the envelope's keys in place (an upgraded value replaces the base value where it stands)
//! and appending an admitted axis the envelope never carries (`subagents`) after them in axis
//! order. So a harness that declares nothing, or only mechanisms, serializes byte-identically
//! to its envelope.
//!
//! **Decode path.** The declaration is decoded by [`declaration::WireDeclaration`], a serde
//! `Deserialize` implementation that keeps the wire's shape, and then judged against the
//! generated tables here. The generated wire decoder (`src/decode/`) does not exist yet; when
//! it does, it can hand its decoded `checkfu.capabilities` to [`admit_declaration`] while the
//! fault classification stays here, because a generated closed type can only say "does not
//! match the schema" where admission must say which member and why.

pub mod declaration;
mod wire;

pub use wire::{admit_wire, admit_wire_as, WireAdmissionError};
#[cfg(test)]
mod tests;

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::catalog::{self, Axis, Envelope, Mechanism, Upgrade};
use declaration::{JsonType, WireDeclaration, WireValue};

/// The `_meta` key of the declaration slot, looked up in the generated slot table so the key
/// is never spelled here.
fn declaration_key() -> Option<&'static str> {
    catalog::SLOTS.iter().find(|s| s.class == catalog::SlotClass::Declaration).map(|s| s.key)
}

/// The capability set admitted at the ready handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmittedCapabilities {
    envelope: &'static Envelope,
    values: Vec<(&'static str, &'static str)>,
    promotions: Vec<&'static Upgrade>,
    mechanisms: Vec<(&'static Mechanism, &'static str)>,
}

impl AdmittedCapabilities {
    /// The envelope admission started from.
    pub fn envelope(&self) -> &'static Envelope {
        self.envelope
    }

    /// (axis, value) in serialization order.
    pub fn values(&self) -> &[(&'static str, &'static str)] {
        &self.values
    }

    /// The admitted value of an axis; `None` for an axis the set does not carry.
    pub fn value(&self, axis: &str) -> Option<&'static str> {
        self.values.iter().find(|(a, _)| *a == axis).map(|(_, v)| *v)
    }

    /// The upgrades the declaration applied, in wire order.
    pub fn promotions(&self) -> &[&'static Upgrade] {
        &self.promotions
    }

    /// Mechanism members recorded from the declaration, with their values, in wire order.
    pub fn mechanisms(&self) -> &[(&'static Mechanism, &'static str)] {
        &self.mechanisms
    }

    /// The recorded value of a mechanism member.
    pub fn mechanism(&self, member: &str) -> Option<&'static str> {
        self.mechanisms.iter().find(|(m, _)| m.member == member).map(|(_, v)| *v)
    }

    /// Promotions that are admitted on declaration but cross into the realized capability set
    /// only with their named passing conformance case: (axis, case).
    pub fn awaiting_evidence(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.promotions.iter().filter_map(|u| u.evidence.map(|case| (u.axis, case)))
    }

    /// The set as a compact JSON object (see the module docs).
    pub fn to_json(&self) -> String {
        axis_map_json(&self.values)
    }
}

impl Serialize for AdmittedCapabilities {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        AxisMap(&self.values).serialize(s)
    }
}

/// An (axis, value) list serialized as a JSON object in list order; the one serializer both
/// the envelope and the admitted set go through, so byte identity is by construction of the
/// values and not of two encoders agreeing.
struct AxisMap<'a>(&'a [(&'static str, &'static str)]);

impl Serialize for AxisMap<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (axis, value) in self.0 {
            map.serialize_entry(axis, value)?;
        }
        map.end()
    }
}

fn axis_map_json(values: &[(&'static str, &'static str)]) -> String {
    // Serializing string pairs into a String cannot fail; an empty object is the honest
    // fallback should serde_json ever disagree.
    serde_json::to_string(&AxisMap(values)).unwrap_or_else(|_| String::from("{}"))
}

/// An envelope serialized: a compact JSON object of axis → value in the envelope's order.
pub fn envelope_json(envelope: &Envelope) -> String {
    axis_map_json(envelope.values)
}

/// Why one declaration member was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemberFault {
    /// Not a declaration member at all.
    Unknown,
    /// The member names a capability axis directly: a promotion no declaration may carry.
    NamesAxis { axis: &'static str },
    /// The value is not a string.
    WrongType { found: JsonType },
    /// A string outside the member's vocabulary (and, for an upgrade, outside its axis's).
    UnknownValue { value: String, expected: &'static [&'static str] },
    /// An axis value below what the envelope holds.
    Downgrade { axis: &'static str, value: &'static str, envelope: &'static str },
    /// The value the envelope already holds: a declaration carries only the raised value.
    Restatement { axis: &'static str, value: &'static str },
    /// An axis value strictly between the upgrade's base and its target.
    Intermediate { axis: &'static str, value: &'static str, from: &'static str, to: &'static str },
    /// An axis value above the upgrade's one step.
    BeyondStep { axis: &'static str, value: &'static str, to: &'static str },
    /// The upgrade is well formed but the envelope does not hold its base value.
    BaseMismatch { axis: &'static str, envelope: Option<&'static str>, from: &'static str },
    /// The member appears more than once on the wire.
    Duplicate,
}

/// A rejected handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdmissionError {
    /// The message is not a JSON-RPC response with an object `result`.
    NotAnInitializeResponse { found: &'static str },
    /// `result._meta` is present, not null, and not an object.
    MetaNotAnObject { found: JsonType },
    /// The declaration is present and not an object.
    DeclarationNotAnObject { found: JsonType },
    /// One member is rejected; the first faulty member in wire order.
    Member { member: String, fault: MemberFault },
}

impl fmt::Display for MemberFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemberFault::Unknown => f.write_str("is not a declaration member"),
            MemberFault::NamesAxis { axis } => write!(
                f,
                "names the capability axis `{axis}`, which no declaration may raise (only the declaration upgrades promote an axis)"
            ),
            MemberFault::WrongType { found } => write!(f, "must be a string, found {found}"),
            MemberFault::UnknownValue { value, expected } => {
                write!(f, "has the unknown value {value:?} (expected {})", quoted_list(expected))
            }
            MemberFault::Downgrade { axis, value, envelope } => {
                write!(f, "declares `{axis}` {value:?}, a downgrade from the envelope's {envelope:?}")
            }
            MemberFault::Restatement { axis, value } => {
                write!(f, "declares `{axis}` {value:?}, which the envelope already holds; a declaration carries only the raised value")
            }
            MemberFault::Intermediate { axis, value, from, to } => {
                write!(f, "declares `{axis}` {value:?}, an intermediate value between {from:?} and {to:?}; admission is exactly one step")
            }
            MemberFault::BeyondStep { axis, value, to } => {
                write!(f, "declares `{axis}` {value:?}, beyond the one-step upgrade to {to:?}")
            }
            MemberFault::BaseMismatch { axis, envelope, from } => match envelope {
                Some(held) => write!(
                    f,
                    "upgrades `{axis}` from {from:?}, but the envelope holds {held:?}; the upgrade does not apply to this envelope"
                ),
                None => write!(f, "upgrades `{axis}` from {from:?}, but the envelope does not carry the axis"),
            },
            MemberFault::Duplicate => f.write_str("appears more than once"),
        }
    }
}

impl fmt::Display for AdmissionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let key = declaration_key().unwrap_or("declaration");
        match self {
            AdmissionError::NotAnInitializeResponse { found } => {
                write!(f, "handshake rejected: not an initialize response ({found})")
            }
            AdmissionError::MetaNotAnObject { found } => {
                write!(f, "handshake rejected: result._meta must be an object, found {found}")
            }
            AdmissionError::DeclarationNotAnObject { found } => {
                write!(f, "handshake rejected: {key} must be an object, found {found}")
            }
            AdmissionError::Member { member, fault } => {
                write!(f, "handshake rejected: {key} member `{member}` {fault}")
            }
        }
    }
}

impl std::error::Error for AdmissionError {}

fn quoted_list(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    quoted.join(" | ")
}

/// Admits the declaration in a JSON-RPC initialize response against a server envelope.
pub fn admit(envelope: &'static Envelope, initialize_response: &serde_json::Value) -> Result<AdmittedCapabilities, AdmissionError> {
    let result = match initialize_response.get("result") {
        Some(serde_json::Value::Object(result)) => result,
        Some(_) => return Err(AdmissionError::NotAnInitializeResponse { found: "`result` is not an object" }),
        None if initialize_response.get("error").is_some() => {
            return Err(AdmissionError::NotAnInitializeResponse { found: "an error response" })
        }
        None => return Err(AdmissionError::NotAnInitializeResponse { found: "no `result`" }),
    };
    let meta = match result.get("_meta") {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::Object(meta)) => Some(meta),
        Some(other) => return Err(AdmissionError::MetaNotAnObject { found: JsonType::of(other) }),
    };
    // Other `_meta` keys are not this slot's business: fidelity keys are fail-open and
    // unknown `checkfu.*` keys are ignored by every consumer.
    let declared = meta.and_then(|meta| declaration_key().and_then(|key| meta.get(key)));
    match declared {
        None => admit_declaration(envelope, &WireDeclaration::Members(Vec::new())),
        Some(value) => admit_declaration(envelope, &WireDeclaration::from_value(value)),
    }
}

/// Admits an already decoded declaration (from a `Value` or straight from wire bytes).
pub fn admit_declaration(envelope: &'static Envelope, declaration: &WireDeclaration) -> Result<AdmittedCapabilities, AdmissionError> {
    let members = match declaration {
        WireDeclaration::Members(members) => members,
        WireDeclaration::NotAnObject(found) => return Err(AdmissionError::DeclarationNotAnObject { found: *found }),
    };
    let mut values: Vec<(&'static str, &'static str)> = envelope.values.to_vec();
    let mut promotions: Vec<&'static Upgrade> = Vec::new();
    let mut mechanisms: Vec<(&'static Mechanism, &'static str)> = Vec::new();

    for (index, (member, value)) in members.iter().enumerate() {
        let reject = |fault| AdmissionError::Member { member: member.clone(), fault };
        if members[..index].iter().any(|(earlier, _)| earlier == member) {
            return Err(reject(MemberFault::Duplicate));
        }
        let text = match value {
            WireValue::Text(text) => text.as_str(),
            WireValue::Other(found) => {
                // A wrong type on a name that is not a member at all is reported as the
                // unknown member it is: the name is the worse fault.
                if is_member(member) {
                    return Err(reject(MemberFault::WrongType { found: *found }));
                }
                return Err(reject(unknown_member(member)));
            }
        };
        if let Some(upgrade) = catalog::UPGRADES.iter().find(|u| u.member == member) {
            let Some(axis) = catalog::axis(upgrade.axis) else {
                // The generator guarantees every upgrade names an axis; if a table ever
                // disagrees, the handshake is rejected rather than admitted on a guess.
                return Err(reject(MemberFault::Unknown));
            };
            let current = envelope_value(envelope, upgrade.axis).or(axis.absent);
            judge_upgrade(axis, upgrade, current, text).map_err(reject)?;
            match values.iter_mut().find(|(a, _)| *a == upgrade.axis) {
                Some(slot) => slot.1 = upgrade.to,
                None => values.push((upgrade.axis, upgrade.to)),
            }
            promotions.push(upgrade);
        } else if let Some(mechanism) = catalog::MECHANISMS.iter().find(|m| m.member == member) {
            match mechanism.values.iter().find(|v| **v == text) {
                Some(value) => mechanisms.push((mechanism, value)),
                None => return Err(reject(MemberFault::UnknownValue { value: text.to_owned(), expected: mechanism.values })),
            }
        } else {
            return Err(reject(unknown_member(member)));
        }
    }

    // Axes the envelope never carries were appended in wire order; put them in axis order so
    // two harnesses with the same admitted set serialize the same bytes.
    let carried = envelope.values.len();
    values[carried..].sort_by_key(|(axis, _)| catalog::AXES.iter().position(|a| a.name == *axis));
    Ok(AdmittedCapabilities { envelope, values, promotions, mechanisms })
}

fn is_member(name: &str) -> bool {
    catalog::UPGRADES.iter().any(|u| u.member == name) || catalog::MECHANISMS.iter().any(|m| m.member == name)
}

fn unknown_member(name: &str) -> MemberFault {
    match catalog::axis(name) {
        Some(axis) => MemberFault::NamesAxis { axis: axis.name },
        None => MemberFault::Unknown,
    }
}

fn envelope_value(envelope: &Envelope, axis: &str) -> Option<&'static str> {
    envelope.values.iter().find(|(a, _)| *a == axis).map(|(_, v)| *v)
}

/// Judges one upgrade member's string value against the axis it raises and the value the
/// envelope holds for that axis (`current`, the axis's absent value when not carried).
pub(crate) fn judge_upgrade(
    axis: &'static Axis,
    upgrade: &'static Upgrade,
    current: Option<&'static str>,
    value: &str,
) -> Result<(), MemberFault> {
    if value == upgrade.value {
        return match current {
            Some(held) if held == upgrade.from => Ok(()),
            held => Err(MemberFault::BaseMismatch { axis: axis.name, envelope: held, from: upgrade.from }),
        };
    }
    let Some(rank) = axis.rank(value) else {
        return Err(MemberFault::UnknownValue { value: value.to_owned(), expected: std::slice::from_ref(&upgrade.value) });
    };
    let named = axis.values[rank];
    // Ranks relative to the envelope's value when it is in the vocabulary, else to the
    // upgrade's base; `to` bounds the one step.
    let base = current.and_then(|c| axis.rank(c)).or_else(|| axis.rank(upgrade.from)).unwrap_or(0);
    let top = axis.rank(upgrade.to).unwrap_or(base);
    if rank < base {
        Err(MemberFault::Downgrade { axis: axis.name, value: named, envelope: axis.values[base] })
    } else if rank == base {
        Err(MemberFault::Restatement { axis: axis.name, value: named })
    } else if rank < top {
        Err(MemberFault::Intermediate { axis: axis.name, value: named, from: axis.values[base], to: upgrade.to })
    } else if rank > top {
        Err(MemberFault::BeyondStep { axis: axis.name, value: named, to: upgrade.to })
    } else {
        // The axis's target value spelled differently from the declaration's value: the
        // declaration vocabulary is the member's, not the axis's.
        Err(MemberFault::UnknownValue { value: value.to_owned(), expected: std::slice::from_ref(&upgrade.value) })
    }
}
