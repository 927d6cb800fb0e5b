//! One normalized observation of a trace: its kind, its fields, and their validation.
//!
//! The floor vocabulary is CONTRACT.md section 5. A kind is accepted only when the generated
//! [`catalog::OBSERVATIONS`] table lists it *and* the grammar knows it (a unit test keeps the
//! two sets equal), so a kind dropped from the catalog stops being readable without an edit
//! here. Fields are closed per kind: a misspelled `subagent` must not silently turn an
//! attributed tool call into a primary-loop one, so an unknown or misplaced field makes the
//! trace invalid. A JSON `null` in an optional field reads as absent.
//!
//! Added to the floor (allowed by the contract, which forbids only changes): `output` may
//! carry `subagent`, attributing harness text to a subagent the way `phase: "activity"` does
//! on the wire.
//!
//! The ids an observation names (`id`, `event`, `subagent`) are interned while it is parsed:
//! the observation carries their [`Id`]s, and the checks read the strings back from the
//! [`Interner`] only to word a fault.

use serde::Deserialize;

use super::ids::{Id, Interner};
use crate::catalog;

/// The kinds the grammar knows. Two of them are the suite's own actions, recorded in the
/// trace so that acknowledgements can be correlated with what was sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Ready,
    Output,
    ToolUse,
    ToolResult,
    SteerInput,
    Steering,
    InterruptRequest,
    InterruptAck,
    SubagentStarted,
    SubagentCompleted,
    Terminal,
}

impl Kind {
    pub const ALL: [Kind; 11] = [
        Kind::Ready,
        Kind::Output,
        Kind::ToolUse,
        Kind::ToolResult,
        Kind::SteerInput,
        Kind::Steering,
        Kind::InterruptRequest,
        Kind::InterruptAck,
        Kind::SubagentStarted,
        Kind::SubagentCompleted,
        Kind::Terminal,
    ];

    /// The trace spelling of the kind.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ready => "ready",
            Kind::Output => "output",
            Kind::ToolUse => "tool_use",
            Kind::ToolResult => "tool_result",
            Kind::SteerInput => "steer_input",
            Kind::Steering => "steering",
            Kind::InterruptRequest => "interrupt_request",
            Kind::InterruptAck => "interrupt_ack",
            Kind::SubagentStarted => "subagent_started",
            Kind::SubagentCompleted => "subagent_completed",
            Kind::Terminal => "terminal",
        }
    }

    /// The kind of that name, if the catalog's observation vocabulary lists it.
    pub fn from_name(name: &str) -> Option<Kind> {
        if !catalog::OBSERVATIONS.contains(&name) {
            return None;
        }
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// False for the suite's scripted actions (client side); true for what the harness emits.
    pub fn is_harness(self) -> bool {
        !matches!(self, Kind::SteerInput | Kind::InterruptRequest)
    }

    /// True for the harness's replies to the suite's scripted requests. They answer a request
    /// rather than add to the turn, so their timing is judged by the steering and drain
    /// checks, not by the rule that the terminal ends the turn.
    pub fn is_acknowledgement(self) -> bool {
        matches!(self, Kind::Steering | Kind::InterruptAck)
    }

    /// (field, required) for each field the kind may carry.
    fn fields(self) -> &'static [(&'static str, bool)] {
        match self {
            Kind::Ready | Kind::InterruptRequest => &[],
            Kind::Output => &[("text", true), ("subagent", false)],
            Kind::ToolUse => &[("id", true), ("name", false), ("subagent", false)],
            Kind::ToolResult => &[("id", true), ("subagent", false)],
            Kind::SteerInput => &[("event", true)],
            Kind::Steering => &[("event", true), ("disposition", true)],
            Kind::InterruptAck => &[("disposition", true)],
            Kind::SubagentStarted => &[("subagent", true), ("name", true), ("description", false)],
            Kind::SubagentCompleted => &[("subagent", true), ("disposition", true)],
            Kind::Terminal => &[("outcome", true), ("stop_reason", true)],
        }
    }
}

/// The harness's acknowledgement of a steer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SteerAck {
    Delivered,
    Queued,
    Refused,
}

impl SteerAck {
    /// The acknowledgement a steer's `disposition` names (`delivered`, `queued`, `refused`).
    pub fn from_name(name: &str) -> Option<SteerAck> {
        match name {
            "delivered" => Some(SteerAck::Delivered),
            "queued" => Some(SteerAck::Queued),
            "refused" => Some(SteerAck::Refused),
            _ => None,
        }
    }
}

/// The harness's answer to a drain request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterruptAck {
    Draining,
    Refused,
}

impl InterruptAck {
    /// The answer a drain's `disposition` names (`draining`, `refused`).
    pub fn from_name(name: &str) -> Option<InterruptAck> {
        match name {
            "draining" => Some(InterruptAck::Draining),
            "refused" => Some(InterruptAck::Refused),
            _ => None,
        }
    }
}

/// How a subagent settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settlement {
    Completed,
    Failed,
    Canceled,
}

/// How the turn ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TurnOutcome {
    Success,
    Failure,
}

/// A validated observation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    Ready,
    Output { text: String, subagent: Option<Id> },
    ToolUse { id: Id, name: Option<String>, subagent: Option<Id> },
    ToolResult { id: Id, subagent: Option<Id> },
    SteerInput { event: Id },
    Steering { event: Id, disposition: SteerAck },
    InterruptRequest,
    InterruptAck { disposition: InterruptAck },
    SubagentStarted { subagent: Id, name: String, description: Option<String> },
    SubagentCompleted { subagent: Id, disposition: Settlement },
    Terminal { outcome: TurnOutcome, stop_reason: String },
}

impl Observation {
    pub fn kind(&self) -> Kind {
        match self {
            Observation::Ready => Kind::Ready,
            Observation::Output { .. } => Kind::Output,
            Observation::ToolUse { .. } => Kind::ToolUse,
            Observation::ToolResult { .. } => Kind::ToolResult,
            Observation::SteerInput { .. } => Kind::SteerInput,
            Observation::Steering { .. } => Kind::Steering,
            Observation::InterruptRequest => Kind::InterruptRequest,
            Observation::InterruptAck { .. } => Kind::InterruptAck,
            Observation::SubagentStarted { .. } => Kind::SubagentStarted,
            Observation::SubagentCompleted { .. } => Kind::SubagentCompleted,
            Observation::Terminal { .. } => Kind::Terminal,
        }
    }

    /// Parses and validates one observation line, interning its ids in `ids`. The error is a
    /// message without the line number, which the reader adds.
    pub fn parse(line: &str, ids: &mut Interner) -> Result<Observation, String> {
        let raw: RawObservation = match serde_json::from_str(line) {
            Ok(raw) => raw,
            Err(error) => return Err(explain_parse_error(line, &error)),
        };
        raw.validate(ids)
    }
}

/// Every field any kind may carry; which ones a kind allows is checked after decoding, so
/// that the message can name the kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawObservation {
    kind: String,
    id: Option<String>,
    name: Option<String>,
    subagent: Option<String>,
    event: Option<String>,
    text: Option<String>,
    disposition: Option<String>,
    description: Option<String>,
    outcome: Option<String>,
    stop_reason: Option<String>,
}

/// A line that did not decode: say "unknown kind" when that is the cause, since an unknown
/// kind usually brings fields the closed struct also rejects first.
fn explain_parse_error(line: &str, error: &serde_json::Error) -> String {
    if error.is_syntax() || error.is_eof() {
        return format!("not valid JSON: {error}");
    }
    if let Ok(serde_json::Value::Object(object)) = serde_json::from_str::<serde_json::Value>(line) {
        match object.get("kind") {
            Some(serde_json::Value::String(kind)) if Kind::from_name(kind).is_none() => {
                return unknown_kind(kind);
            }
            None => return String::from("observation has no `kind`"),
            _ => {}
        }
    }
    format!("invalid observation: {error}")
}

fn unknown_kind(kind: &str) -> String {
    let known: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).filter(|n| catalog::OBSERVATIONS.contains(n)).collect();
    format!("unknown kind {kind:?} (expected one of {})", known.join(", "))
}

impl RawObservation {
    fn field(&self, name: &str) -> Option<&String> {
        match name {
            "id" => self.id.as_ref(),
            "name" => self.name.as_ref(),
            "subagent" => self.subagent.as_ref(),
            "event" => self.event.as_ref(),
            "text" => self.text.as_ref(),
            "disposition" => self.disposition.as_ref(),
            "description" => self.description.as_ref(),
            "outcome" => self.outcome.as_ref(),
            "stop_reason" => self.stop_reason.as_ref(),
            _ => None,
        }
    }

    const FIELDS: [&'static str; 9] = ["id", "name", "subagent", "event", "text", "disposition", "description", "outcome", "stop_reason"];

    fn validate(self, ids: &mut Interner) -> Result<Observation, String> {
        let Some(kind) = Kind::from_name(&self.kind) else {
            return Err(unknown_kind(&self.kind));
        };
        let allowed = kind.fields();
        for field in Self::FIELDS {
            let declared = allowed.iter().find(|(name, _)| *name == field);
            match (self.field(field).is_some(), declared) {
                (true, None) => return Err(format!("field `{field}` is not part of kind {:?}", kind.name())),
                (false, Some((_, true))) => return Err(format!("kind {:?} requires field `{field}`", kind.name())),
                _ => {}
            }
        }
        // Required fields are present past this point; `take` keeps the moves explicit.
        let mut raw = self;
        let required = |value: Option<String>, field: &str| value.ok_or_else(|| format!("kind {:?} requires field `{field}`", kind.name()));
        Ok(match kind {
            Kind::Ready => Observation::Ready,
            Kind::Output => Observation::Output { text: required(raw.text.take(), "text")?, subagent: intern_optional(ids, raw.subagent)? },
            Kind::ToolUse => Observation::ToolUse {
                id: intern(ids, required(raw.id.take(), "id")?)?,
                name: raw.name,
                subagent: intern_optional(ids, raw.subagent)?,
            },
            Kind::ToolResult => {
                Observation::ToolResult { id: intern(ids, required(raw.id.take(), "id")?)?, subagent: intern_optional(ids, raw.subagent)? }
            }
            Kind::SteerInput => Observation::SteerInput { event: intern(ids, required(raw.event.take(), "event")?)? },
            Kind::Steering => {
                let disposition = required(raw.disposition.take(), "disposition")?;
                let Some(disposition) = SteerAck::from_name(&disposition) else {
                    return Err(bad_value(kind, "disposition", &disposition, "delivered, queued, refused"));
                };
                Observation::Steering { event: intern(ids, required(raw.event.take(), "event")?)?, disposition }
            }
            Kind::InterruptRequest => Observation::InterruptRequest,
            Kind::InterruptAck => {
                let disposition = required(raw.disposition.take(), "disposition")?;
                let Some(disposition) = InterruptAck::from_name(&disposition) else {
                    return Err(bad_value(kind, "disposition", &disposition, "draining, refused"));
                };
                Observation::InterruptAck { disposition }
            }
            Kind::SubagentStarted => Observation::SubagentStarted {
                subagent: intern(ids, required(raw.subagent.take(), "subagent")?)?,
                name: required(raw.name.take(), "name")?,
                description: raw.description,
            },
            Kind::SubagentCompleted => {
                let disposition = required(raw.disposition.take(), "disposition")?;
                let disposition = match disposition.as_str() {
                    "completed" => Settlement::Completed,
                    "failed" => Settlement::Failed,
                    "canceled" => Settlement::Canceled,
                    other => return Err(bad_value(kind, "disposition", other, "completed, failed, canceled")),
                };
                Observation::SubagentCompleted { subagent: intern(ids, required(raw.subagent.take(), "subagent")?)?, disposition }
            }
            Kind::Terminal => {
                let outcome = required(raw.outcome.take(), "outcome")?;
                let outcome = match outcome.as_str() {
                    "success" => TurnOutcome::Success,
                    "failure" => TurnOutcome::Failure,
                    other => return Err(bad_value(kind, "outcome", other, "success, failure")),
                };
                Observation::Terminal { outcome, stop_reason: required(raw.stop_reason.take(), "stop_reason")? }
            }
        })
    }
}

/// The interned id of a field's value. Fails only past `u32::MAX` distinct ids: an id must
/// never be reused for a second string, so the trace is rejected instead.
fn intern(ids: &mut Interner, value: String) -> Result<Id, String> {
    ids.intern(&value).ok_or_else(|| String::from("the trace names more distinct ids than the checker can number"))
}

fn intern_optional(ids: &mut Interner, value: Option<String>) -> Result<Option<Id>, String> {
    value.map(|value| intern(ids, value)).transpose()
}

fn bad_value(kind: Kind, field: &str, value: &str, expected: &str) -> String {
    format!("kind {:?} field `{field}` has the unknown value {value:?} (expected one of {expected})", kind.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_grammar_knows_exactly_the_catalog_observation_vocabulary() {
        let grammar: Vec<&str> = Kind::ALL.iter().map(|k| k.name()).collect();
        for name in catalog::OBSERVATIONS {
            assert!(grammar.contains(name), "catalog observation {name} has no grammar kind");
        }
        for name in &grammar {
            assert!(catalog::OBSERVATIONS.contains(name), "grammar kind {name} is not in the catalog");
            assert_eq!(Kind::from_name(name).map(Kind::name), Some(*name));
        }
    }

    #[test]
    fn every_floor_example_line_parses() {
        // Interned up front, so the ids the lines parse to are known; parsing reuses them.
        let mut ids = Interner::default();
        let [t1, a, e1] = ["t1", "a", "e1"].map(|name| ids.intern(name).expect("an id"));
        let lines = [
            (r#"{"kind": "ready"}"#, Observation::Ready),
            (r#"{"kind": "output", "text": "hi"}"#, Observation::Output { text: "hi".into(), subagent: None }),
            (
                r#"{"kind": "tool_use", "id": "t1", "name": "bash", "subagent": "a"}"#,
                Observation::ToolUse { id: t1, name: Some("bash".into()), subagent: Some(a) },
            ),
            (r#"{"kind": "tool_result", "id": "t1"}"#, Observation::ToolResult { id: t1, subagent: None }),
            (r#"{"kind": "steer_input", "event": "e1"}"#, Observation::SteerInput { event: e1 }),
            (
                r#"{"kind": "steering", "event": "e1", "disposition": "queued"}"#,
                Observation::Steering { event: e1, disposition: SteerAck::Queued },
            ),
            (r#"{"kind": "interrupt_request"}"#, Observation::InterruptRequest),
            (r#"{"kind": "interrupt_ack", "disposition": "draining"}"#, Observation::InterruptAck { disposition: InterruptAck::Draining }),
            (
                r#"{"kind": "subagent_started", "subagent": "a", "name": "r", "description": "d"}"#,
                Observation::SubagentStarted { subagent: a, name: "r".into(), description: Some("d".into()) },
            ),
            (
                r#"{"kind": "subagent_completed", "subagent": "a", "disposition": "canceled"}"#,
                Observation::SubagentCompleted { subagent: a, disposition: Settlement::Canceled },
            ),
            (
                r#"{"kind": "terminal", "outcome": "success", "stop_reason": "end_turn"}"#,
                Observation::Terminal { outcome: TurnOutcome::Success, stop_reason: "end_turn".into() },
            ),
        ];
        for (line, expected) in lines {
            assert_eq!(Observation::parse(line, &mut ids), Ok(expected), "{line}");
        }
        assert_eq!([t1, a, e1].map(|id| ids.name(id)), ["t1", "a", "e1"]);
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let cases = [
            (r#"{"kind": "reddy"}"#, "unknown kind \"reddy\""),
            (r#"{"kind": "reddy", "extra": 1}"#, "unknown kind \"reddy\""),
            (r#"{"kind": "ready", "id": "t1"}"#, "field `id` is not part of kind \"ready\""),
            (r#"{"kind": "tool_use"}"#, "kind \"tool_use\" requires field `id`"),
            (r#"{"kind": "tool_use", "id": "t1", "subagnet": "a"}"#, "unknown field `subagnet`"),
            (r#"{"kind": "tool_use", "id": 7}"#, "invalid type: integer"),
            (r#"{"kind": "steering", "event": "e1", "disposition": "accepted"}"#, "unknown value \"accepted\""),
            (r#"{"kind": "terminal", "outcome": "ok", "stop_reason": "end_turn"}"#, "unknown value \"ok\""),
            (r#"{"id": "t1"}"#, "observation has no `kind`"),
            (r#"{"kind": "ready""#, "not valid JSON"),
            (r#"[1]"#, "invalid observation"),
        ];
        for (line, needle) in cases {
            match Observation::parse(line, &mut Interner::default()) {
                Ok(parsed) => panic!("{line} parsed as {parsed:?}"),
                Err(message) => assert!(message.contains(needle), "{line}: {message}"),
            }
        }
    }
}
