//! What a harness did on the wire that ACP forbids a client to let pass, found as it
//! happens rather than when a step times out: a response whose id is not the request's as
//! sent, a response to no pending request (to a notification, say), an update after the
//! turn was answered `cancelled`, a call of a client capability the client did not
//! advertise, and a tool's effect before its permission was answered or after it was refused.
//!
//! Each breach names the requirement it breaks: the id ACP's own test kit (`acp-tck`) gives
//! the same requirement where it has one, so that the two reports can be read side by side,
//! else one of the probe's own (`CHECKFU-…`). A breach fails the run; the session keeps
//! the first [`super::MAX_DIAGNOSTICS`] of them.

use std::fmt;

use serde::{Serialize, Serializer};

use checkfu_wire::catalog::Requirement;

/// A requirement of ACP a harness broke, and what it did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Breach {
    /// A response carried another id than its request's, as written (`2.0` or `"2"` for 2):
    /// JSON-RPC asks the id back unchanged.
    IdChanged { sent: i64, got: String },
    /// A response whose id no pending request of the probe's has: a reply to a
    /// notification (`null` id) or to a request never made.
    Unrequested { id: String },
    /// A `session/update` after the prompt was answered `cancelled`.
    UpdateAfterCancelled { update: String },
    /// `fs/*` called although the client did not advertise file system access.
    FsNotAdvertised { method: String },
    /// `terminal/*` called although the client did not advertise terminals.
    TerminalNotAdvertised { method: String },
    /// `elicitation/create`, which the client never advertises.
    ElicitationNotAdvertised,
    /// A write or a terminal after the client refused the turn's permission request.
    EffectAfterRefusal { method: String, answer: &'static str },
    /// A write or a terminal while the turn's permission request was still unanswered.
    EffectBeforeAnswer { method: String },
}

impl Breach {
    /// The requirement of the registry it breaks (acp-tck's id where the kit has the same
    /// one); each is judged by the wire (the unit test below holds it so).
    pub fn requirement(&self) -> Requirement {
        match self {
            Breach::IdChanged { .. } => Requirement::ACPJSONRPC001,
            // `null` answers a notification; any other id is one the client never sent
            // as written.
            Breach::Unrequested { id } if id == "null" => Requirement::ACPJSONRPC003,
            Breach::Unrequested { .. } => Requirement::ACPJSONRPC001,
            Breach::UpdateAfterCancelled { .. } => Requirement::ACPCANCEL002,
            Breach::FsNotAdvertised { .. } => Requirement::ACPCLIENTCAP001,
            Breach::TerminalNotAdvertised { .. } => Requirement::ACPCLIENTCAP002,
            Breach::ElicitationNotAdvertised => Requirement::ACPCLIENTCAP003,
            Breach::EffectAfterRefusal { .. } => Requirement::CHECKFUPERMISSION001,
            Breach::EffectBeforeAnswer { .. } => Requirement::CHECKFUPERMISSION002,
        }
    }
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Breach::IdChanged { sent, got } => {
                write!(f, "a response carried the id {got} for the request sent with the id {sent}: the id must come back unchanged")
            }
            Breach::Unrequested { id } if id == "null" => {
                f.write_str("a response with a null id, which answers no request: a notification is never answered")
            }
            Breach::Unrequested { id } => write!(f, "a response with the id {id}, which no pending request of the client's has"),
            Breach::UpdateAfterCancelled { update } => {
                write!(f, "a `{update}` update after the prompt was answered `cancelled`: the answer ends the turn's updates")
            }
            Breach::FsNotAdvertised { method } => {
                write!(f, "`{method}` called although the client did not advertise file system access; refused")
            }
            Breach::TerminalNotAdvertised { method } => {
                write!(f, "`{method}` called although the client did not advertise terminals; refused")
            }
            Breach::ElicitationNotAdvertised => {
                f.write_str("`elicitation/create` called although the client advertised no elicitation; refused")
            }
            Breach::EffectAfterRefusal { method, answer } => {
                write!(f, "`{method}` after the client answered the turn's permission request `{answer}`; the probe refused it")
            }
            Breach::EffectBeforeAnswer { method } => {
                write!(f, "`{method}` while the turn's permission request was still unanswered; the probe refused it")
            }
        }
    }
}

/// A breach as the report writes it: the requirement and the sentence.
impl Serialize for Breach {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut breach = s.serialize_struct("Breach", 2)?;
        breach.serialize_field("requirement", self.requirement().id())?;
        breach.serialize_field("what", &self.to_string())?;
        breach.end()
    }
}

/// Where a turn's permission stands, for the effects that follow it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Permission {
    /// No permission request was refused in this turn.
    #[default]
    Open,
    /// A permission request of this turn was answered `reject_once`/`reject_always` or
    /// `cancelled`: the tool it asked for must not run.
    Refused(&'static str),
}

#[cfg(test)]
mod tests {
    use super::*;
    use checkfu_wire::catalog::Judge;

    /// One breach of each kind (the match below is exhaustive, so a new kind must join it).
    fn every_kind() -> Vec<Breach> {
        let all = [
            Breach::IdChanged { sent: 1, got: String::from("1.0") },
            Breach::Unrequested { id: String::from("null") },
            Breach::Unrequested { id: String::from("\"7\"") },
            Breach::UpdateAfterCancelled { update: String::from("agent_message_chunk") },
            Breach::FsNotAdvertised { method: String::from("fs/write_text_file") },
            Breach::TerminalNotAdvertised { method: String::from("terminal/create") },
            Breach::ElicitationNotAdvertised,
            Breach::EffectAfterRefusal { method: String::from("fs/write_text_file"), answer: "reject_once" },
            Breach::EffectBeforeAnswer { method: String::from("terminal/create") },
        ];
        for breach in &all {
            match breach {
                Breach::IdChanged { .. }
                | Breach::Unrequested { .. }
                | Breach::UpdateAfterCancelled { .. }
                | Breach::FsNotAdvertised { .. }
                | Breach::TerminalNotAdvertised { .. }
                | Breach::ElicitationNotAdvertised
                | Breach::EffectAfterRefusal { .. }
                | Breach::EffectBeforeAnswer { .. } => {}
            }
        }
        all.to_vec()
    }

    #[test]
    fn every_breach_names_a_requirement_of_the_registry_judged_by_the_wire() {
        for breach in every_kind() {
            let requirement = breach.requirement();
            assert!(Requirement::ALL.contains(&requirement), "{breach:?}");
            assert_eq!(requirement.judge(), Judge::Wire, "{breach:?} names {requirement}, which the wire does not judge");
            // The report writes the registry's id, which reads back to the same requirement.
            assert_eq!(Requirement::from_name(requirement.id()), Some(requirement));
            let written = serde_json::to_value(&breach).expect("a breach serializes");
            assert_eq!(written["requirement"], requirement.id());
        }
        // The ids the kit gives these requirements, as its reports spell them.
        let ids: Vec<&str> = every_kind().iter().map(|b| b.requirement().id()).collect();
        assert_eq!(
            ids,
            [
                "ACP-JSONRPC-001",
                "ACP-JSONRPC-003",
                "ACP-JSONRPC-001",
                "ACP-CANCEL-002",
                "ACP-CLIENTCAP-001",
                "ACP-CLIENTCAP-002",
                "ACP-CLIENTCAP-003",
                "CHECKFU-PERMISSION-001",
                "CHECKFU-PERMISSION-002"
            ]
        );
    }
}
