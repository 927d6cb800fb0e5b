//! The ends of a session and of a login, put to the fresh process when the agent advertised
//! them: `session/close` of a session whose prompt is in flight (ACP-CLOSE-002), a
//! `session/new` naming an extra directory (ACP-ADDDIRS-001), `session/delete` of a session
//! made on the connection and then of one that is gone (ACP-DELETE-001, -002), and `logout`
//! (ACP-AUTH-004), last, since it may end what the probes still need.
//!
//! A session the probes close or delete is one of their own: the close in flight takes the
//! first session once its turns are over, the delete a session made for it alone.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{shown, Answer, Kit};
use crate::acp::cancel::{paced_turn, WINDOW};
use crate::acp::requirements::Status;
use crate::relay::PaceEnd;
use crate::session::{Fault, Incoming};
use checkfu_wire::catalog::Requirement as R;
use checkfu_wire::decode::tables::{Method, PROMPT_METHOD};

/// How often the relay's record is looked at while waiting for the model call to close over.
const POLL: Duration = Duration::from_millis(50);

/// Whether the agent's capabilities hold `pointer`, given as anything but `null` (ACP's
/// capability objects: `{}` advertises one).
fn offers(agent: &Value, pointer: &str) -> bool {
    agent.pointer(pointer).is_some_and(|c| !c.is_null() && c != &json!(false))
}

impl Kit<'_, '_, '_> {
    /// ACP-CLOSE-002 on `session`: a prompt whose model answer is paced, `session/close` once
    /// that answer is in flight; the prompt must then end `cancelled` within the
    /// cancellation step's window.
    pub(super) fn close_in_flight(&mut self, agent: &Value, session: &str) {
        if !offers(agent, "/sessionCapabilities/close") {
            return;
        }
        if self.stage.options.model_script.fails_calls() {
            self.judge(R::ACPCLOSE002, Status::NotTested, "a fault script runs: the relay's record is its turn's alone");
            return;
        }
        let (nonce, turn) = paced_turn(&self.stage.plane.relay);
        let (status, reason) = self.prompt_and_close(session, &nonce, turn);
        self.stage.plane.relay.pace(None);
        self.judge(R::ACPCLOSE002, status, reason);
    }

    fn prompt_and_close(&mut self, session: &str, nonce: &str, turn: usize) -> (Status, String) {
        let text = format!("Checkfu requirement probe, closed in flight. Reply with the nonce {nonce} and end the turn.");
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let until = self.until();
        let prompt = match self.session.request(PROMPT_METHOD, params) {
            Ok(id) => id,
            Err(fault) => return (Status::NotTested, format!("its prompt could not be sent: {fault}")),
        };
        // The close goes out once a paced model answer of the turn is in flight.
        loop {
            let relay = &self.stage.plane.relay;
            if relay.calls(turn).iter().any(|c| c.paced.as_ref().is_some_and(|p| p.ended == PaceEnd::Open)) {
                break;
            }
            match self.session.next((Instant::now() + POLL).min(until)) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => {
                    let words = crate::acp::exercised::stop_reason(&message).map_or_else(|r| r.to_string(), |s| format!("`{s}`"));
                    return (Status::NotTested, format!("its prompt ended ({words}) before a model answer was in flight to close over"));
                }
                Ok(_) | Err(Fault::Timeout) if Instant::now() < until => {}
                Ok(_) | Err(_) => return (Status::NotTested, String::from("no model answer of its prompt was in flight to close over")),
            }
        }
        let closed_at = Instant::now();
        let close = match self.session.request(Method::SessionClose.name(), json!({"sessionId": session})) {
            Ok(id) => id,
            Err(fault) => return (Status::NotTested, format!("`session/close` could not be sent: {fault}")),
        };
        let (answer, closed) = self.both_answers(prompt, close, (closed_at + WINDOW).min(until));
        judge_close_in_flight(answer, closed)
    }

    /// The answers to the prompt and to the close, read until both came or `until`.
    fn both_answers(&mut self, prompt: i64, close: i64, until: Instant) -> (Answer, Answer) {
        let window = format!("within {:.1} s of the close", WINDOW.as_secs_f64());
        let (mut answer, mut closed) = (None, None);
        while answer.is_none() || closed.is_none() {
            match self.session.next(until) {
                Ok(Incoming::Response { id, message, .. }) if id == prompt => answer = Some(Ok(message)),
                Ok(Incoming::Response { id, message, .. }) if id == close => closed = Some(Ok(message)),
                Ok(_) => {}
                Err(fault) => {
                    let why = match fault {
                        Fault::Timeout | Fault::Deadline => super::Why(format!("no answer {window}")),
                        other => super::Why(other.to_string()),
                    };
                    return (answer.unwrap_or_else(|| Err(why.clone())), closed.unwrap_or(Err(why)));
                }
            }
        }
        (answer.unwrap_or_else(|| Err(super::Why::from("none"))), closed.unwrap_or_else(|| Err(super::Why::from("none"))))
    }

    /// ACP-ADDDIRS-001, then ACP-DELETE-001 and -002, each when advertised, on sessions made
    /// for them.
    pub(super) fn extra_sessions(&mut self, agent: &Value) {
        let directories = offers(agent, "/sessionCapabilities/additionalDirectories");
        let delete = offers(agent, "/sessionCapabilities/delete");
        let mut made = None;
        if directories {
            made = self.with_extra_directory();
        }
        if !delete {
            // Advisory and ungated in the registry, but only a `session/delete` can show it.
            self.judge(R::ACPDELETE002, Status::NotTested, "the agent does not offer `sessionCapabilities.delete`");
            return;
        }
        let made = made.or_else(|| self.new_session(json!({})).ok());
        let Some(id) = made else {
            let why = "no session could be made to delete";
            self.judge(R::ACPDELETE001, Status::NotTested, why);
            return;
        };
        let until = self.until();
        let deleted = self.ask(Method::SessionDelete.name(), json!({"sessionId": id}), until);
        let empty = deleted.as_ref().ok().and_then(|m| m.get("result")).is_some_and(|r| r == &json!({}));
        let status = if empty { Status::Passed } else { Status::Failed };
        self.judge(R::ACPDELETE001, status, format!("`session/delete` of a session of the connection: {}", shown(&deleted)));
        // Deleted already: a second delete of it finds it gone.
        let until = self.until();
        let again = self.ask(Method::SessionDelete.name(), json!({"sessionId": id}), until);
        let quiet = again.as_ref().ok().and_then(|m| m.get("result")).is_some_and(Value::is_object);
        let status = if quiet { Status::Passed } else { Status::Failed };
        self.judge(R::ACPDELETE002, status, format!("`session/delete` of a session deleted already: {}", shown(&again)));
    }

    /// ACP-ADDDIRS-001: a `session/new` naming a directory of the workspace as an extra root;
    /// the session's id when it was made.
    fn with_extra_directory(&mut self) -> Option<String> {
        let extra = self.session.workspace().root().join("extra");
        if let Err(e) = std::fs::create_dir_all(&extra) {
            self.judge(R::ACPADDDIRS001, Status::NotTested, format!("the extra directory could not be made: {e}"));
            return None;
        }
        let seen = self.session.workspace().harness_path(&extra).to_string_lossy().into_owned();
        let made = self.new_session(json!({"additionalDirectories": [seen]}));
        let (status, reason) = match &made {
            Ok(id) => (Status::Passed, format!("`session/new` naming the extra directory {seen} answered the session `{id}`")),
            Err(why) => (Status::Failed, format!("`session/new` naming the extra directory {seen}: {why}")),
        };
        self.judge(R::ACPADDDIRS001, status, reason);
        made.ok()
    }

    /// A `session/new` in the workspace with `more` beside its `cwd` and MCP servers: its
    /// id, or the answer in words.
    fn new_session(&mut self, more: Value) -> Result<String, super::Why> {
        let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
        let mut params = json!({"cwd": cwd, "mcpServers": []});
        if let (Some(params), Some(more)) = (params.as_object_mut(), more.as_object()) {
            params.extend(more.clone());
        }
        let until = self.until();
        let answer = self.ask(crate::acp::NEW_SESSION, params, until);
        match answer.as_ref().ok().and_then(|m| m.pointer("/result/sessionId")).and_then(Value::as_str) {
            Some(id) if !id.is_empty() => Ok(id.to_owned()),
            _ => Err(super::Why(format!("answered {}", shown(&answer)))),
        }
    }

    /// ACP-AUTH-004 when the agent advertised `logout`: answered with an object.
    pub(super) fn logout(&mut self, agent: &Value) {
        if !offers(agent, "/auth/logout") {
            return;
        }
        let until = self.until();
        let answer = self.ask(Method::Logout.name(), json!({}), until);
        let object = answer.as_ref().ok().and_then(|m| m.get("result")).is_some_and(Value::is_object);
        let status = if object { Status::Passed } else { Status::Failed };
        self.judge(R::ACPAUTH004, status, format!("`logout`: {}", shown(&answer)));
    }
}

/// ACP-CLOSE-002 from the prompt's answer and the close's.
fn judge_close_in_flight(answer: Answer, closed: Answer) -> (Status, String) {
    let close_words = match &closed {
        Ok(message) if message.get("result").is_some() => String::from("the close was answered with a result"),
        other => format!("the close was answered {}", shown(other)),
    };
    let message = match answer {
        Ok(message) => message,
        Err(why) => {
            return (Status::Failed, format!("closed while its model answer streamed, the prompt was not answered ({why}); {close_words}"))
        }
    };
    if let Some(error) = message.get("error") {
        let words = crate::acp::rpc_error(error);
        return (Status::Failed, format!("closed in flight, the prompt was answered with an error, not `cancelled`: {words}"));
    }
    match message.pointer("/result/stopReason").and_then(Value::as_str) {
        Some("cancelled") => {
            (Status::Passed, format!("closed while its model answer streamed, the prompt ended `cancelled`; {close_words}"))
        }
        Some(other) => (Status::Failed, format!("closed while its model answer streamed, the prompt ended `{other}`, not `cancelled`")),
        None => (Status::Failed, String::from("closed in flight, the prompt was answered without a stop reason")),
    }
}
