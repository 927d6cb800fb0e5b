//! The normalizing adapter: a live ACP exchange, as the decoder accepted it, into the
//! observation trace that [`super::check_reader`] (and so `checkfu-wire conform`) reads.
//!
//! The probe writes the trace with this module and judges it by parsing that same text with
//! the checker, so a trace file and the verdicts printed beside it cannot disagree.
//!
//! How the wire reads, per the reference page:
//!
//! | wire | observation |
//! |---|---|
//! | `session/new` answered (the handshake done) | `ready` |
//! | update `agent_message_chunk` (text content; other content as empty text) | `output` |
//! | update `tool_call` | `tool_use` (`id` = `toolCallId`, `name` = `title`); also `tool_result` if it arrives settled; a repeat for a call still open is an update, as ACP's reference client reads it |
//! | update `tool_call_update` with status `completed` or `failed` | `tool_result` |
//! | `checkfu.subagent` `started` / `completed` on any update | `subagent_started` / `subagent_completed`, around the update's own observation |
//! | any `checkfu.subagent` member on an update | that update's own observation attributed to the subagent |
//! | `_checkfu/session/steer` sent / answered | `steer_input` / `steering` with the answer's disposition |
//! | `_checkfu/session/interrupt` sent / answered | `interrupt_request` / `interrupt_ack` |
//! | `session/prompt` answered | `terminal`: `end_turn` is a success; ACP's `cancelled` is the drained stop reason `interrupted` (a success); any other stop reason, or an error answer (`error`), a failure |
//!
//! ACP v2 ([`Normalizer::update_v2`]) reads into the same floor, its updates being keyed
//! upserts: an `agent_message_chunk` is `output` as in v1; an `agent_message` replaces its
//! message's text, so only what it adds to the text its `messageId` already had is `output`;
//! `tool_call_update` creates a call the first time its `toolCallId` is seen (`tool_use`) and
//! settles it once (`tool_result`). The terminal is the idle `state_update` that ends the
//! turn, with its stop reason read as the prompt answer's is in v1 (the lane passes it to
//! [`Normalizer::terminal`]); the prompt's receipt is no terminal.
//!
//! A `checkfu.subagent` member the decoder dropped (fail-open) produces nothing. Subagent ids
//! are harness-local: the adapter mints its own (`subagent-1`, …) so raw harness thread ids
//! never cross the observation boundary. Other update kinds (plans, thoughts, commands,
//! modes, usage) are not in the observation floor and produce nothing.

use std::collections::HashMap;

use serde_json::{json, Map, Value};

use crate::decode::{Report, SlotStatus};

const SUBAGENT_KEY: &str = "checkfu.subagent";

/// The trace under construction.
#[derive(Debug, Default)]
pub struct Normalizer {
    observations: Vec<Value>,
    subagents: HashMap<String, String>,
    /// Every `output` text, concatenated: what reached normalized public output.
    output: String,
    /// Tool calls announced and not yet settled. ACP's reference client (Zed) upserts a
    /// `tool_call` whose id is already open, and claude-code-acp relies on it (it sends
    /// `tool_call` again once the input is complete), so a repeat is read as an update.
    open_tools: std::collections::HashSet<String>,
    /// ACP v2: each agent message's text so far, by `messageId` (an `agent_message` upsert
    /// replaces it), and every tool call created, settled or not (a later upsert of a
    /// settled call creates nothing).
    messages: HashMap<String, String>,
    tools_seen: std::collections::HashSet<String>,
    /// What the observations kept so far cost ([`MAX_COST`]).
    cost: usize,
    /// An observation was dropped because the budget was spent.
    full: bool,
}

/// One subagent as the trace holds it: its lifecycle and what its attributed updates said.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SubagentSeen {
    /// The id the adapter minted (`subagent-1`, …), as the trace names it.
    pub id: String,
    /// The name its `started` member gave (its harness id when none).
    pub name: String,
    /// A `started` member was seen for it (attribution alone does not start one).
    pub started: bool,
    /// The disposition of its `completed` member, once seen.
    pub settled: Option<String>,
    /// The text of every `output` attributed to it, concatenated.
    pub output: String,
}

/// The budget of what one normalizer keeps: each observation costs [`OBSERVATION_COST`]
/// plus twice its text (kept in the observation and in the output). A harness that floods
/// its output is stopped here, whatever the count of its messages, so the trace and its
/// check stay bounded too.
pub const MAX_COST: usize = 16 * 1024 * 1024;

/// What an observation costs beside its text: a small JSON object in memory.
pub const OBSERVATION_COST: usize = 256;

impl Normalizer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn ready(&mut self) {
        self.push(json!({"kind": "ready"}));
    }

    pub fn steer_input(&mut self, event: &str) {
        self.push(json!({"kind": "steer_input", "event": event}));
    }

    pub fn steering(&mut self, event: &str, disposition: &str) {
        self.push(json!({"kind": "steering", "event": event, "disposition": disposition}));
    }

    pub fn interrupt_request(&mut self) {
        self.push(json!({"kind": "interrupt_request"}));
    }

    pub fn interrupt_ack(&mut self, disposition: &str) {
        self.push(json!({"kind": "interrupt_ack", "disposition": disposition}));
    }

    /// The answer to `session/prompt`: its stop reason, or `None` for an error answer.
    pub fn terminal(&mut self, stop_reason: Option<&str>) {
        let (outcome, stop_reason) = match stop_reason {
            Some("end_turn") => ("success", "end_turn"),
            Some("cancelled") => ("success", "interrupted"),
            Some(other) => ("failure", other),
            None => ("failure", "error"),
        };
        self.push(json!({"kind": "terminal", "outcome": outcome, "stop_reason": stop_reason}));
    }

    /// A terminal that is a failure whatever its stop reason says (a one-shot stream that
    /// reported an error before it).
    pub fn terminal_failure(&mut self, stop_reason: &str) {
        self.push(json!({"kind": "terminal", "outcome": "failure", "stop_reason": stop_reason}));
    }

    /// Output text read from a lane other than ACP's (a one-shot CLI's stream or stdout).
    pub fn output(&mut self, text: &str) {
        if self.push(json!({"kind": "output", "text": text})) {
            self.output.push_str(text);
        }
    }

    /// A tool call read from a lane other than ACP's.
    pub fn tool_use(&mut self, id: &str, name: Option<&str>) {
        let mut use_ = json!({"kind": "tool_use", "id": id});
        if let Some(name) = name {
            use_["name"] = json!(name);
        }
        self.push(use_);
    }

    /// The settlement of a tool call read from a lane other than ACP's.
    pub fn tool_result(&mut self, id: &str) {
        self.push(json!({"kind": "tool_result", "id": id}));
    }

    /// A `session/update` notification the decoder accepted.
    pub fn update(&mut self, report: &Report, message: &Value) {
        self.read_update(report, message, false);
    }

    /// A `session/update` notification of ACP v2 the decoder accepted (see the module).
    pub fn update_v2(&mut self, report: &Report, message: &Value) {
        self.read_update(report, message, true);
    }

    fn read_update(&mut self, report: &Report, message: &Value, v2: bool) {
        let Some(update) = message.pointer("/params/update") else { return };
        let lifecycle = report
            .slots
            .iter()
            .any(|s| s.key == SUBAGENT_KEY && s.status == SlotStatus::Decoded)
            .then(|| update.pointer("/_meta/checkfu.subagent"))
            .flatten();
        let phase = lifecycle.and_then(|l| l.get("phase")).and_then(Value::as_str);
        let harness_id = lifecycle.and_then(|l| l.get("subagent")).and_then(Value::as_str);
        // An update carrying the member is the subagent's, whatever the phase: absence of
        // the key is what means the primary loop authored it.
        let mut attributed = None;
        if let (Some(phase), Some(harness_id)) = (phase, harness_id) {
            let minted = self.mint(harness_id);
            if phase == "started" {
                let mut start = Map::new();
                start.insert("kind".into(), json!("subagent_started"));
                start.insert("subagent".into(), json!(minted));
                let name = lifecycle.and_then(|l| l.get("name")).and_then(Value::as_str).unwrap_or(harness_id);
                start.insert("name".into(), json!(name));
                if let Some(description) = lifecycle.and_then(|l| l.get("description")).and_then(Value::as_str) {
                    start.insert("description".into(), json!(description));
                }
                self.push(Value::Object(start));
            }
            attributed = Some(minted);
        }
        if v2 {
            self.content_v2(update, attributed.as_deref());
        } else {
            self.content(update, attributed.as_deref());
        }
        if let (Some("completed"), Some(harness_id)) = (phase, harness_id) {
            let minted = self.mint(harness_id);
            let disposition = lifecycle.and_then(|l| l.get("disposition")).and_then(Value::as_str).unwrap_or("completed");
            self.push(json!({"kind": "subagent_completed", "subagent": minted, "disposition": disposition}));
        }
    }

    /// The update's own observation, if the floor has one for its kind.
    fn content(&mut self, update: &Value, subagent: Option<&str>) {
        let with = |mut object: Value| {
            if let (Some(subagent), Value::Object(map)) = (subagent, &mut object) {
                map.insert("subagent".into(), json!(subagent));
            }
            object
        };
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => {
                let text = message_chunk_text(update).unwrap_or_default();
                if self.push(with(json!({"kind": "output", "text": text}))) {
                    self.output.push_str(text);
                }
            }
            Some("tool_call") => {
                let id = update.get("toolCallId").and_then(Value::as_str).unwrap_or_default();
                if !self.open_tools.contains(id) {
                    let mut use_ = json!({"kind": "tool_use", "id": id});
                    if let Some(title) = update.get("title").and_then(Value::as_str) {
                        use_["name"] = json!(title);
                    }
                    self.push(with(use_));
                    self.open_tools.insert(id.to_owned());
                }
                if settled(update) {
                    self.open_tools.remove(id);
                    self.push(with(json!({"kind": "tool_result", "id": id})));
                }
            }
            Some("tool_call_update") if settled(update) => {
                let id = update.get("toolCallId").and_then(Value::as_str).unwrap_or_default();
                self.open_tools.remove(id);
                self.push(with(json!({"kind": "tool_result", "id": id})));
            }
            _ => {}
        }
    }

    /// A v2 update's own observation: messages and tool calls as keyed upserts.
    fn content_v2(&mut self, update: &Value, subagent: Option<&str>) {
        let with = |mut object: Value| {
            if let (Some(subagent), Value::Object(map)) = (subagent, &mut object) {
                map.insert("subagent".into(), json!(subagent));
            }
            object
        };
        let text_of = |key: &str| update.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("agent_message_chunk") => {
                let text = message_chunk_text(update).unwrap_or_default();
                if self.push(with(json!({"kind": "output", "text": text}))) {
                    self.output.push_str(text);
                    self.messages.entry(text_of("messageId")).or_default().push_str(text);
                }
            }
            Some("agent_message") => {
                let Some(blocks) = update.get("content").and_then(Value::as_array) else { return };
                let whole: String = blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect();
                let had = self.messages.get(&text_of("messageId")).cloned().unwrap_or_default();
                // A replacement that extends the streamed text adds its tail; any other
                // replaces it, and all of it is what the message now says.
                let added = whole.strip_prefix(had.as_str()).unwrap_or(&whole).to_owned();
                if !added.is_empty() && self.push(with(json!({"kind": "output", "text": added}))) {
                    self.output.push_str(&added);
                    self.messages.insert(text_of("messageId"), whole);
                }
            }
            Some("tool_call" | "tool_call_update") => {
                let id = text_of("toolCallId");
                if self.tools_seen.insert(id.clone()) {
                    let mut use_ = json!({"kind": "tool_use", "id": id});
                    if let Some(title) = update.get("title").and_then(Value::as_str) {
                        use_["name"] = json!(title);
                    }
                    self.push(with(use_));
                    self.open_tools.insert(id.clone());
                }
                if settled(update) && self.open_tools.remove(&id) {
                    self.push(with(json!({"kind": "tool_result", "id": id})));
                }
            }
            _ => {}
        }
    }

    fn mint(&mut self, harness_id: &str) -> String {
        let next = self.subagents.len() + 1;
        self.subagents.entry(harness_id.to_owned()).or_insert_with(|| format!("subagent-{next}")).clone()
    }

    /// Keeps `observation` if the budget allows; `false` when it was dropped.
    fn push(&mut self, observation: Value) -> bool {
        let text = observation.get("text").and_then(Value::as_str).map_or(0, str::len);
        let cost = OBSERVATION_COST + 2 * text;
        if self.cost + cost > MAX_COST {
            self.full = true;
            return false;
        }
        self.cost += cost;
        self.observations.push(observation);
        true
    }

    /// Whether an observation was dropped: the harness produced more than [`MAX_COST`].
    pub fn full(&self) -> bool {
        self.full
    }

    /// Why a turn that filled the budget failed, in both lanes' words (`who`: the harness
    /// or the CLI).
    pub fn over_budget(&self, who: &str) -> String {
        format!("the {who} produced more than the probe keeps in one turn ({} MiB of observations)", MAX_COST / (1024 * 1024))
    }

    /// Every `output` text so far, concatenated.
    pub fn output_text(&self) -> &str {
        &self.output
    }

    /// Every subagent the trace names, in the order it was first named: what a probe needs
    /// to hold a narrated subagent against the model calls the relay served.
    pub fn subagents(&self) -> Vec<SubagentSeen> {
        let mut seen: Vec<SubagentSeen> = Vec::new();
        for observation in &self.observations {
            let Some(id) = observation.get("subagent").and_then(Value::as_str) else { continue };
            let at = match seen.iter().position(|s| s.id == id) {
                Some(at) => at,
                None => {
                    seen.push(SubagentSeen { id: id.to_owned(), name: id.to_owned(), ..SubagentSeen::default() });
                    seen.len() - 1
                }
            };
            let subagent = &mut seen[at];
            let text = |key: &str| observation.get(key).and_then(Value::as_str);
            match text("kind") {
                Some("subagent_started") => {
                    subagent.started = true;
                    subagent.name = text("name").unwrap_or(id).to_owned();
                }
                Some("subagent_completed") => subagent.settled = Some(text("disposition").unwrap_or("completed").to_owned()),
                Some("output") => subagent.output.push_str(text("text").unwrap_or_default()),
                _ => {}
            }
        }
        seen
    }

    pub fn len(&self) -> usize {
        self.observations.len()
    }

    pub fn is_empty(&self) -> bool {
        self.observations.is_empty()
    }

    /// The trace: the header line (`declared` axes, `opt_in` cases), then one line per
    /// observation.
    pub fn trace(&self, declared: &[(&str, &str)], opt_in: &[&str]) -> String {
        let declared: Map<String, Value> = declared.iter().map(|(axis, value)| ((*axis).to_owned(), json!(value))).collect();
        let mut text = json!({"trace": 1, "declared": declared, "opt_in": opt_in}).to_string();
        text.push('\n');
        for observation in &self.observations {
            text.push_str(&observation.to_string());
            text.push('\n');
        }
        text
    }
}

fn settled(update: &Value) -> bool {
    matches!(update.get("status").and_then(Value::as_str), Some("completed" | "failed"))
}

/// The text an `agent_message_chunk` update adds to the normalized output (its text content;
/// other content adds none), `None` for any other update. The probe reads a chunk's words by
/// it too, while it waits for a model answer in flight.
pub fn message_chunk_text(update: &Value) -> Option<&str> {
    if update.get("sessionUpdate").and_then(Value::as_str) != Some("agent_message_chunk") {
        return None;
    }
    Some(match update.pointer("/content/type").and_then(Value::as_str) {
        Some("text") => update.pointer("/content/text").and_then(Value::as_str).unwrap_or_default(),
        _ => "",
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::decode::{Decoder, WireDirection};

    fn feed(normalizer: &mut Normalizer, decoder: &mut Decoder, update: Value) {
        let message = json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}});
        let report = decoder.decode(message.to_string().as_bytes(), Some(WireDirection::AgentToRunner));
        assert!(report.accepted, "{:?}", report.error);
        normalizer.update(&report, &message);
    }

    fn lines(normalizer: &Normalizer) -> Vec<Value> {
        normalizer.trace(&[], &[]).lines().skip(1).map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    /// v2's upserts: an `agent_message` that repeats what its chunks said adds nothing, one
    /// that extends them adds its tail; a tool call upserted twice is one use and one result.
    #[test]
    fn v2_upserts_read_into_the_same_floor() {
        let n = &mut Normalizer::new();
        let report = Report::default();
        let mut v2 = |update: Value| {
            n.update_v2(&report, &json!({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s", "update": update}}));
        };
        v2(json!({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": {"type": "text", "text": "Hello "}}));
        v2(json!({"sessionUpdate": "agent_message", "messageId": "a", "content": [{"type": "text", "text": "Hello "}]}));
        v2(json!({"sessionUpdate": "agent_message", "messageId": "a", "content": [{"type": "text", "text": "Hello world"}]}));
        v2(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "title": "Read", "status": "in_progress"}));
        v2(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"}));
        v2(json!({"sessionUpdate": "tool_call_update", "toolCallId": "c", "status": "completed"}));
        assert_eq!(n.output_text(), "Hello world");
        let kinds: Vec<String> = lines(n).iter().map(|o| o["kind"].as_str().unwrap_or("?").to_owned()).collect();
        assert_eq!(kinds, ["output", "output", "tool_use", "tool_result"]);
    }

    #[test]
    fn harness_subagent_ids_are_replaced_and_attribution_follows_the_member() {
        let (mut n, mut d) = (Normalizer::new(), Decoder::new());
        feed(
            &mut n,
            &mut d,
            json!({"sessionUpdate": "session_info_update", "_meta": {"checkfu.subagent": {"phase": "started", "subagent": "thread-42", "name": "r"}}}),
        );
        feed(
            &mut n,
            &mut d,
            json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Run", "status": "completed", "_meta": {"checkfu.subagent": {"phase": "activity", "subagent": "thread-42"}}}),
        );
        feed(&mut n, &mut d, json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}));
        feed(
            &mut n,
            &mut d,
            json!({"sessionUpdate": "session_info_update", "_meta": {"checkfu.subagent": {"phase": "completed", "subagent": "thread-42", "disposition": "failed"}}}),
        );
        assert_eq!(
            lines(&n),
            [
                json!({"kind": "subagent_started", "subagent": "subagent-1", "name": "r"}),
                json!({"kind": "tool_use", "id": "t", "name": "Run", "subagent": "subagent-1"}),
                json!({"kind": "tool_result", "id": "t", "subagent": "subagent-1"}),
                json!({"kind": "output", "text": "hi"}),
                json!({"kind": "subagent_completed", "subagent": "subagent-1", "disposition": "failed"}),
            ]
        );
        assert!(!n.trace(&[], &[]).contains("thread-42"), "raw harness ids never cross the boundary");
    }

    #[test]
    fn a_repeated_tool_call_for_an_open_id_is_an_update_and_a_settled_id_is_new_again() {
        let (mut n, mut d) = (Normalizer::new(), Decoder::new());
        feed(&mut n, &mut d, json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read File", "status": "pending"}));
        feed(&mut n, &mut d, json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read /w/f", "status": "pending"}));
        feed(&mut n, &mut d, json!({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}));
        feed(&mut n, &mut d, json!({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Again", "status": "pending"}));
        assert_eq!(
            lines(&n),
            [
                json!({"kind": "tool_use", "id": "t", "name": "Read File"}),
                json!({"kind": "tool_result", "id": "t"}),
                json!({"kind": "tool_use", "id": "t", "name": "Again"}),
            ]
        );
    }

    #[test]
    fn a_dropped_fidelity_member_produces_no_observation() {
        let (mut n, mut d) = (Normalizer::new(), Decoder::new());
        // `phase` outside the member's vocabulary: the decoder drops it (fail-open).
        feed(
            &mut n,
            &mut d,
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"},
            "_meta": {"checkfu.subagent": {"phase": "teleported", "subagent": "a"}}}),
        );
        assert_eq!(lines(&n), [json!({"kind": "output", "text": "x"})]);
    }

    #[test]
    fn stop_reasons_read_as_the_checker_expects() {
        let mut n = Normalizer::new();
        for reason in [Some("end_turn"), Some("cancelled"), Some("refusal"), None] {
            n.terminal(reason);
        }
        let outcomes: Vec<(String, String)> =
            lines(&n).iter().map(|o| (o["outcome"].as_str().unwrap().to_owned(), o["stop_reason"].as_str().unwrap().to_owned())).collect();
        let expected = [("success", "end_turn"), ("success", "interrupted"), ("failure", "refusal"), ("failure", "error")];
        assert_eq!(outcomes, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
    }
}
