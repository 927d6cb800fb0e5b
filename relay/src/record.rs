//! The relay's record of what it served and refused: the platform's own evidence that the
//! model plane was reached through the gateway (not the harness's narration of it).
//!
//! Everything in it is bounded whatever a harness sends: at most [`MAX_ENTRIES`] entries a
//! list (past it, counted only), every text field cut at its cap with its length said
//! ([`capped`]), and the bodies that `--record-model` keeps cut at [`MAX_BODY_COPY`] each and
//! [`MAX_BODIES`] in all. So the record of a session is at most about 25 MB.

use serde::Serialize;
use serde_json::Value;

/// The most entries each list keeps; past it, entries are counted only, so a harness that
/// hammers the relay cannot grow the probe's memory without bound.
pub const MAX_ENTRIES: usize = 10_000;

/// The most bytes kept of a path, a model name or a host.
pub const MAX_NAME: usize = 256;

/// The most bytes kept of a refusal's reason.
pub const MAX_REASON: usize = 512;

/// The most bytes `--record-model` keeps of one request or answer body.
pub const MAX_BODY_COPY: usize = 256 * 1024;

/// The most request and answer bytes `--record-model` keeps in all.
pub const MAX_BODIES: usize = 16 * 1024 * 1024;

/// `text` whole when it has at most `max` bytes; otherwise its first `max` bytes (cut on a
/// character boundary) and how long it was, so a reader sees that it was cut.
pub fn capped(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    format!("{}… (truncated: {} bytes)", checkfu_wire::text::head(text, max), text.len())
}

/// One call the replay model answered.
#[derive(Clone, Debug, Serialize)]
pub struct Call {
    /// Serialized as its catalog name.
    pub dialect: checkfu_wire::catalog::Dialect,
    pub path: String,
    pub model: String,
    pub stream: bool,
    /// The status written to the client; `null` when the connection closed before any
    /// answer was written (the reason is then in `closed`).
    pub status: Option<u16>,
    /// Why no answer reached the client, when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed: Option<String>,
    /// When the call's request arrived, in milliseconds since the relay started: what a
    /// retry's wait (against a `retry-after`) is measured with.
    pub started_ms: u64,
    pub ms: u64,
    /// The session's nonce is in the request's latest user turn (its text, JSON escapes
    /// decoded; not a system message, metadata or a tool definition).
    pub nonce_in_request: bool,
    /// The probe's turn the call was made in, from 1 (a one-shot resume has two).
    pub turn: usize,
    /// A reply token of the turn before (one that reached that turn's output) is in the
    /// request: the model's earlier answer, not only the user's prompt, came back to it.
    pub earlier_reply_in_request: bool,
    /// The token of the steer the probe sent is in the request (in any string): the steer
    /// reached the model. Written only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub steer_in_request: bool,
    /// The token the relay minted for this call and put in its answer (`null` when the
    /// answer carried none: a tool call, or a scripted reply without `{reply_token}`).
    pub reply_token: Option<String>,
    /// The fault the model script failed the call with (`relay::fault`); `null` for an
    /// answer. `status` is then the fault's, as written (200 for a stream cut).
    pub fault: Option<super::fault::FaultKind>,
    /// For a rate limit: the `retry-after` it asked for, in seconds (what a retry's wait is
    /// held to).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u32>,
    /// For a stream cut of an event stream: how many server-sent events went out before the
    /// connection was closed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events_sent: Option<usize>,
    /// For a paced answer ([`super::pace`]): its events, how many went out, how it ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paced: Option<super::pace::Paced>,
    /// How the request asked for a structured answer (an output schema), if it did:
    /// `tool`, `response_format`, `text.format`, … (`relay::structured`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<&'static str>,
    /// The SHA-256 of the structured value served (its canonical JSON: keys sorted), so the
    /// probe can tell that a final answer is that value and not one the harness made up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_digest: Option<String>,
    /// Against the output schema the session carries ([`super::Relay::expect_schema`]):
    /// whether the request asked for exactly it. `null` when the relay was told none, or
    /// the request asked for no structured answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema_exact: Option<bool>,
    /// The call was answered with the turn's broken value ([`super::Relay::break_first`]).
    /// Written only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub structured_broken: bool,
    /// The turn's nonce is in the request anywhere (any string: an earlier user turn, a
    /// system message): the call belongs to the conversation the prompt started, not to a
    /// fresh one of its own such as a subagent's.
    #[serde(skip)]
    pub nonce_anywhere: bool,
    /// The tool the model called in its answer.
    #[serde(skip)]
    pub tool_called: Option<String>,
    /// A tool result in the request carried the token of the `tool` script's file.
    #[serde(skip)]
    pub token_returned: bool,
    /// The bodies, kept for `--record-model` only.
    #[serde(skip)]
    pub bodies: Option<Bodies>,
    /// The request's size in tokens by the relay's own estimate (`relay::estimate`): what
    /// an enforced context window is held against.
    pub estimated_tokens: u64,
    /// The entries of the request's message list (`relay::estimate`).
    pub messages: usize,
    /// In a scoping turn ([`super::exercise::Scoping`]), a call whose latest user turn
    /// carried the nonce: which of the turn's tool calls it got, and the tool results its
    /// request carried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scoping: Option<super::exercise::ScopingSeen>,
    /// The indices of the watched marks ([`super::Relay::watch_marks`]) the request carried,
    /// in the order they occur in it: a staged file's nonce that reached the model.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub marks_in_request: Vec<usize>,
    /// In a platform tool turn ([`super::exercise::PlatformTool`]), a call whose latest user
    /// turn carried the nonce: the tool as offered, called, and answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<super::exercise::PlatformSeen>,
}

/// A call's request and answer as `--record-model` keeps them: each cut at
/// [`MAX_BODY_COPY`], with its size as sent.
#[derive(Clone, Debug, Default)]
pub struct Bodies {
    pub request: String,
    pub request_bytes: usize,
    pub response: String,
    pub response_bytes: usize,
}

impl Bodies {
    pub fn new(request: &[u8], response: &str) -> Bodies {
        let request_text = String::from_utf8_lossy(&request[..request.len().min(MAX_BODY_COPY + 4)]);
        Bodies {
            request: checkfu_wire::text::head(&request_text, MAX_BODY_COPY).to_owned(),
            request_bytes: request.len(),
            response: checkfu_wire::text::head(response, MAX_BODY_COPY).to_owned(),
            response_bytes: response.len(),
        }
    }

    fn size(&self) -> usize {
        self.request.len() + self.response.len()
    }
}

/// A request the relay refused.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Refusal {
    /// The probe's turn it happened in, from 1.
    pub turn: usize,
    pub path: String,
    /// The status written to the client; `null`: the connection was closed without one.
    pub status: Option<u16>,
    pub reason: String,
}

impl Refusal {
    /// The status as the text report shows it.
    pub fn status_text(&self) -> String {
        self.status.map_or_else(|| String::from("closed without an answer"), |s| s.to_string())
    }
}

/// A host and port a client tried to reach through the relay acting as its proxy.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Egress {
    pub host: String,
    pub port: u16,
}

/// Which entry of the record an answer belongs to, so what reached the client can be
/// written back to it once the connection knows (`None` past [`MAX_ENTRIES`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Call(usize),
    Refusal(usize),
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

    pub(crate) fn call(&mut self, mut call: Call) -> Option<Entry> {
        if let Some(bodies) = &call.bodies {
            if self.body_bytes + bodies.size() > MAX_BODIES {
                call.bodies = None;
            } else {
                self.body_bytes += bodies.size();
            }
        }
        if self.calls.len() < MAX_ENTRIES {
            self.calls.push(call);
            Some(Entry::Call(self.calls.len() - 1))
        } else {
            self.dropped += 1;
            None
        }
    }

    /// Records a refusal; `status` is the one about to be written (`None`: none will be).
    pub(crate) fn refuse(&mut self, path: &str, status: Option<u16>, reason: &str) -> Option<Entry> {
        if self.refused.len() < MAX_ENTRIES {
            self.refused.push(Refusal { turn: self.turn, path: capped(path, MAX_NAME), status, reason: capped(reason, MAX_REASON) });
            Some(Entry::Refusal(self.refused.len() - 1))
        } else {
            self.dropped += 1;
            None
        }
    }

    pub(crate) fn egress(&mut self, host: &str, port: u16) {
        if self.egress_attempts.len() < MAX_ENTRIES {
            self.egress_attempts.push(Egress { host: capped(host, MAX_NAME), port });
        } else {
            self.dropped += 1;
        }
    }

    /// What reached the client for `entry`: the status written, or `None` with why nothing was.
    pub(crate) fn delivered(&mut self, entry: Entry, status: Option<u16>, closed: &str) {
        match entry {
            Entry::Call(i) => {
                if let Some(call) = self.calls.get_mut(i) {
                    call.status = status;
                    call.closed = status.is_none().then(|| closed.to_owned());
                }
            }
            Entry::Refusal(i) => {
                if let Some(refusal) = self.refused.get_mut(i) {
                    if status.is_none() && refusal.status.is_some() {
                        refusal.reason = capped(&format!("{}; {closed}", refusal.reason), MAX_REASON);
                    }
                    refusal.status = status;
                }
            }
        }
    }

    /// The served calls with their bodies, as the JSON Lines `--record-model` writes.
    pub fn calls_jsonl(&self) -> String {
        calls_jsonl(&self.calls)
    }
}

/// Calls with their bodies as JSON Lines: each call's report members, plus `request` (the
/// body as sent: JSON when whole, else the kept text), `response` (JSON, or the event
/// stream's text) and each one's size in bytes as sent (`request_bytes`, `response_bytes`).
pub fn calls_jsonl(calls: &[Call]) -> String {
    let mut out = String::new();
    for call in calls {
        let mut line = serde_json::to_value(call).unwrap_or(Value::Null);
        if let (Some(object), Some(bodies)) = (line.as_object_mut(), &call.bodies) {
            let whole = |text: &str, bytes: usize| {
                let parsed = (text.len() == bytes).then(|| serde_json::from_str::<Value>(text).ok()).flatten();
                parsed.unwrap_or_else(|| Value::String(text.to_owned()))
            };
            object.insert("request".into(), whole(&bodies.request, bodies.request_bytes));
            object.insert("request_bytes".into(), bodies.request_bytes.into());
            object.insert("response".into(), whole(&bodies.response, bodies.response_bytes));
            object.insert("response_bytes".into(), bodies.response_bytes.into());
        }
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_fields_are_cut_and_say_their_length() {
        let mut record = Record::new();
        let path = format!("/{}", "é".repeat(30_000));
        record.refuse(&path, Some(404), &format!("`{path}` is not on the allow-list"));
        let refusal = &record.refused[0];
        assert!(refusal.path.len() < MAX_NAME + 40 && refusal.path.ends_with("(truncated: 60001 bytes)"), "{}", refusal.path);
        assert!(refusal.reason.len() < MAX_REASON + 40, "{}", refusal.reason.len());
        record.egress(&"h".repeat(1 << 20), 443);
        assert!(record.egress_attempts[0].host.len() < MAX_NAME + 40);
    }

    #[test]
    fn entries_past_the_limit_are_counted_only() {
        let mut record = Record::new();
        for _ in 0..MAX_ENTRIES + 5 {
            record.refuse("/x", Some(404), "no");
        }
        assert_eq!((record.refused.len(), record.dropped), (MAX_ENTRIES, 5));
        assert_eq!(record.refuse("/x", Some(404), "no"), None);
    }

    #[test]
    fn an_answer_that_never_reached_the_client_is_said() {
        let mut record = Record::new();
        let entry = record.refuse("/v1/messages", Some(400), "the body could not be read").expect("kept");
        record.delivered(entry, None, "closed without an answer");
        assert_eq!(record.refused[0].status, None);
        assert_eq!(record.refused[0].status_text(), "closed without an answer");
        assert!(record.refused[0].reason.ends_with("; closed without an answer"));
    }

    #[test]
    fn bodies_are_cut_and_keep_their_sizes() {
        let big = vec![b'x'; MAX_BODY_COPY * 3];
        let bodies = Bodies::new(&big, "{}");
        assert_eq!((bodies.request.len(), bodies.request_bytes, bodies.response_bytes), (MAX_BODY_COPY, MAX_BODY_COPY * 3, 2));
    }
}
