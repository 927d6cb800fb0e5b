//! The relay's record of what it served and refused: the platform's own evidence that the
//! model plane was reached through the gateway (not the harness's narration of it).

use serde::Serialize;
use serde_json::Value;

/// The most entries each list keeps; past it, entries are counted only, so a harness that
/// hammers the relay cannot grow the probe's memory without bound.
pub const MAX_ENTRIES: usize = 10_000;

/// The most request and answer bytes kept for `--record-model`.
pub const MAX_BODIES: usize = 64 * 1024 * 1024;

/// One call the replay model answered.
#[derive(Clone, Debug, Serialize)]
pub struct Call {
    /// Serialized as its catalog name.
    pub dialect: crate::catalog::Dialect,
    pub path: String,
    pub model: String,
    pub stream: bool,
    pub status: u16,
    pub ms: u64,
    /// The session's nonce appears in the request: the prompt reached the model plane.
    pub nonce_in_request: bool,
    /// The probe's turn the call was made in, from 1 (a one-shot resume has two).
    pub turn: usize,
    /// The nonce of the turn before appears in the request: the history reached the model.
    pub earlier_nonce_in_request: bool,
    /// How the request asked for a structured answer (an output schema), if it did:
    /// `tool`, `response_format`, `text.format`, … (`relay::structured`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<&'static str>,
    /// The tool the model called in its answer.
    #[serde(skip)]
    pub tool_called: Option<String>,
    /// A tool result in the request carried the token of the `tool` script's file.
    #[serde(skip)]
    pub token_returned: bool,
    /// The request body and the answer, kept for `--record-model` while under
    /// [`MAX_BODIES`]; `None` past it.
    #[serde(skip)]
    pub bodies: Option<(Value, String)>,
}

/// A request the relay refused.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Refusal {
    /// The probe's turn it happened in, from 1.
    pub turn: usize,
    pub path: String,
    pub status: u16,
    pub reason: String,
}

/// A host and port a client tried to reach through the relay acting as its proxy.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Egress {
    pub host: String,
    pub port: u16,
}

/// Everything the relay saw, in order of arrival per list.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Record {
    pub calls: Vec<Call>,
    pub refused: Vec<Refusal>,
    pub egress_attempts: Vec<Egress>,
    /// Entries past [`MAX_ENTRIES`], counted only.
    pub dropped: usize,
    #[serde(skip)]
    pub body_bytes: usize,
    /// The probe's current turn, from 1 (`Relay::begin_turn` moves it on).
    #[serde(skip)]
    pub turn: usize,
}

impl Record {
    pub(crate) fn new() -> Record {
        Record { turn: 1, ..Record::default() }
    }

    pub(crate) fn call(&mut self, mut call: Call) {
        if let Some((request, answer)) = &call.bodies {
            let size = request.to_string().len() + answer.len();
            if self.body_bytes + size > MAX_BODIES {
                call.bodies = None;
            } else {
                self.body_bytes += size;
            }
        }
        if self.calls.len() < MAX_ENTRIES {
            self.calls.push(call);
        } else {
            self.dropped += 1;
        }
    }

    pub(crate) fn refuse(&mut self, path: &str, status: u16, reason: String) {
        if self.refused.len() < MAX_ENTRIES {
            self.refused.push(Refusal { turn: self.turn, path: path.to_owned(), status, reason });
        } else {
            self.dropped += 1;
        }
    }

    pub(crate) fn egress(&mut self, host: String, port: u16) {
        if self.egress_attempts.len() < MAX_ENTRIES {
            self.egress_attempts.push(Egress { host, port });
        } else {
            self.dropped += 1;
        }
    }

    /// The served calls with their bodies, as the JSON Lines `--record-model` writes.
    pub fn calls_jsonl(&self) -> String {
        calls_jsonl(&self.calls)
    }
}

/// Calls with their bodies as JSON Lines: each call's report members, plus `request` (the
/// body as sent) and `response` (JSON, or the event stream's text).
pub fn calls_jsonl(calls: &[Call]) -> String {
    let mut out = String::new();
    for call in calls {
        let mut line = serde_json::to_value(call).unwrap_or(Value::Null);
        if let (Some(object), Some((request, answer))) = (line.as_object_mut(), &call.bodies) {
            object.insert("request".into(), request.clone());
            // An answer is JSON, or a server-sent event stream kept as its text.
            let answer = serde_json::from_str::<Value>(answer).unwrap_or_else(|_| Value::String(answer.clone()));
            object.insert("response".into(), answer);
        }
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}
