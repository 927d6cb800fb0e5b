//! The session methods the agent advertised, put to the fresh process once each, on its
//! first session before any turn: `session/list` (ACP-LIST-001, -002), `session/load`
//! (ACP-LOAD-001 to -003), `session/resume` (ACP-RESUME-001, -002), and, when its
//! `session/new` offered them, a mode change (ACP-MODES-002) and a config option's change
//! (ACP-CONFIG-002).

use std::time::Instant;

use serde_json::{json, Value};

use super::{shown, Answer, Kit, QUIET};
use crate::acp::requirements::Status;
use crate::session::Incoming;
use checkfu_wire::catalog::Requirement as R;
use checkfu_wire::decode::tables::{Method, UPDATE_METHOD};

/// The updates that carry a session's history (its messages and thoughts), which a resume
/// must not replay.
const HISTORY: &[&str] = &["user_message_chunk", "agent_message_chunk", "agent_thought_chunk"];

/// The updates a `session/load` replays (its history, with the tool calls and plans in it):
/// one of these after the answer is replay that came late. Session state (the commands
/// available, the mode, the session's title, usage) may change at any time, so it is not.
const REPLAY: &[&str] = &["user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"];

impl Kit<'_, '_, '_> {
    /// What the agent advertised of the session methods and offered in `session/new`,
    /// each asked once on the session `first`.
    pub(super) fn advertised(&mut self, agent: &Value, first: &str) {
        let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
        // The mode and the config options first: a `session/load` that fails can take an
        // agent's process with it (claude-code-acp's, measured), which would fail them too.
        self.set_mode(first);
        self.set_config_option(first);
        if agent.pointer("/sessionCapabilities/list").is_some_and(|c| !c.is_null()) {
            self.list();
        }
        if agent.get("loadSession") == Some(&json!(true)) {
            self.load(first, &cwd);
        }
        if agent.pointer("/sessionCapabilities/resume").is_some_and(|c| !c.is_null()) {
            let until = self.until();
            let resumed = self.ask(Method::SessionResume.name(), json!({"sessionId": first, "cwd": cwd}), until);
            let (status, reason) = answered_object(&resumed, "`session/resume`");
            self.judge(R::ACPRESUME001, status, reason);
            // Only a resume that succeeded has a replay to judge.
            if status == Status::Passed {
                let replayed = self.updates_of(first).find(|kind| HISTORY.contains(&kind.as_str()));
                let (status, reason) = match replayed {
                    Some(kind) => (
                        Status::Failed,
                        format!(
                            "a `{kind}` update of the resumed session came before the `session/resume` answer: a resume replays no history"
                        ),
                    ),
                    None => (
                        Status::Passed,
                        String::from("no message or thought of the session was replayed before the `session/resume` answer"),
                    ),
                };
                self.judge(R::ACPRESUME002, status, reason);
            }
        }
    }

    /// ACP-LIST-001 and -002.
    fn list(&mut self) {
        let until = self.until();
        let listed = self.ask(Method::SessionList.name(), json!({}), until);
        let (status, reason) = object_with(&listed, "sessions", "`session/list`");
        self.judge(R::ACPLIST001, status, reason);
        let until = self.until();
        let none = self.ask(Method::SessionList.name(), json!({"cwd": "/checkfu-probe/no-session-here"}), until);
        let empty = none.as_ref().ok().and_then(|m| m.pointer("/result/sessions")).and_then(Value::as_array).is_some_and(Vec::is_empty);
        let (status, reason) = if empty {
            (Status::Passed, String::from("an empty `sessions` array"))
        } else {
            (Status::Failed, format!("not an empty `sessions` array: {}", shown(&none)))
        };
        self.judge(R::ACPLIST002, status, format!("`session/list` for a `cwd` no session has: {reason}"));
    }

    /// ACP-LOAD-001 to -003: its result, an object (the probe's decoder holds the schema,
    /// which refuses a `null` result: that fails ACP-SCHEMA-001 and ACP-LOAD-001 before
    /// ACP-LOAD-003, where the kit lets ACP-LOAD-001 pass it), and its replay all before the
    /// answer, none in the quiet period after it.
    fn load(&mut self, first: &str, cwd: &str) {
        let until = self.until();
        let loaded = self.ask(Method::SessionLoad.name(), json!({"sessionId": first, "cwd": cwd, "mcpServers": []}), until);
        let (status, reason) = answered_object(&loaded, "`session/load`");
        self.judge(R::ACPLOAD001, status, reason);
        if status != Status::Passed {
            return;
        }
        self.judge(R::ACPLOAD003, Status::Passed, "`session/load` answered an object");
        let before = self.updates_of(first).count();
        let (status, reason) = match self.quiet(first) {
            Some(kind) => (
                Status::Failed,
                format!("a `{kind}` update of the loaded session came after the `session/load` answer: the replay ends before it"),
            ),
            None => (
                Status::Passed,
                format!("{before} replayed update(s) before the `session/load` answer, none in the {} ms after it", QUIET.as_millis()),
            ),
        };
        self.judge(R::ACPLOAD002, status, reason);
    }

    /// The kinds of the `session/update`s naming `session` read while the last request was
    /// out.
    fn updates_of<'k>(&'k self, session: &'k str) -> impl Iterator<Item = String> + 'k {
        self.seen.iter().filter_map(move |message| update_kind(message, session))
    }

    /// Reads for [`QUIET`]: the kind of the first replayed ([`REPLAY`]) `session/update`
    /// naming `session`, if one came.
    fn quiet(&mut self, session: &str) -> Option<String> {
        let until = Instant::now() + QUIET.min(self.stage.options.step_timeout);
        loop {
            if self.session.messages_in > super::MAX_MESSAGES {
                return None;
            }
            match self.session.next(until) {
                Ok(Incoming::Notification { message, .. }) => {
                    if let Some(kind) = update_kind(&message, session).filter(|k| REPLAY.contains(&k.as_str())) {
                        return Some(kind);
                    }
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// ACP-MODES-002: the first session's mode set to another one it offered.
    fn set_mode(&mut self, first: &str) {
        let Some(modes) = self.sessions.first().and_then(|r| r.get("modes")).filter(|m| !m.is_null()).cloned() else { return };
        let current = modes.get("currentModeId").cloned().unwrap_or(Value::Null);
        let other = modes
            .get("availableModes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("id"))
            .find(|id| **id != current)
            .cloned();
        let Some(other) = other else { return };
        let until = self.until();
        let set = self.ask(Method::SessionSetMode.name(), json!({"sessionId": first, "modeId": other}), until);
        let named = self
            .seen
            .iter()
            .filter(|m| update_kind(m, first).as_deref() == Some("current_mode_update"))
            .find(|m| m.pointer("/params/update/currentModeId").is_none());
        let (status, reason) = match (answered_object(&set, "`session/set_mode`"), named) {
            ((Status::Passed, _), Some(_)) => {
                (Status::Failed, String::from("its `current_mode_update` did not name the mode in `currentModeId`"))
            }
            ((status, reason), _) => (status, format!("{reason} (mode {other})")),
        };
        self.judge(R::ACPMODES002, status, reason);
    }

    /// ACP-CONFIG-002: a select option of the first session's set to another value; the
    /// answer lists every option offered, the changed one with its new value.
    fn set_config_option(&mut self, first: &str) {
        let offered: Vec<Value> =
            self.sessions.first().and_then(|r| r.get("configOptions")).and_then(Value::as_array).cloned().unwrap_or_default();
        let Some((option, value)) = offered.iter().find_map(|o| other_value(o).map(|v| (o.get("id").cloned().unwrap_or(Value::Null), v)))
        else {
            return;
        };
        let until = self.until();
        let set = self.ask(Method::SessionSetConfigOption.name(), json!({"sessionId": first, "configId": option, "value": value}), until);
        let answered: Vec<Value> =
            set.as_ref().ok().and_then(|m| m.pointer("/result/configOptions")).and_then(Value::as_array).cloned().unwrap_or_default();
        let missing = offered.iter().filter_map(|o| o.get("id")).find(|id| !answered.iter().any(|a| a.get("id") == Some(*id)));
        let changed = answered.iter().find(|a| a.get("id") == Some(&option)).and_then(|a| a.get("currentValue"));
        let (status, reason) = match (&set, missing, changed) {
            (Ok(m), _, _) if m.get("result").is_none() => (Status::Failed, format!("`session/set_config_option`: {}", shown(&set))),
            (Err(_), ..) => (Status::Failed, format!("`session/set_config_option`: {}", shown(&set))),
            (_, Some(id), _) => {
                (Status::Failed, format!("its answer left out the config option {id} offered before: it must list every one"))
            }
            (_, None, Some(v)) if *v == value => {
                (Status::Passed, format!("{} config option(s) answered, {option} now {value}", answered.len()))
            }
            (_, None, v) => (Status::Failed, format!("its answer holds {option} at {}, not the {value} set", v.unwrap_or(&Value::Null))),
        };
        self.judge(R::ACPCONFIG002, status, reason);
    }
}

/// The kind of a `session/update` naming `session`; `None` for any other message.
fn update_kind(message: &Value, session: &str) -> Option<String> {
    if message.get("method").and_then(Value::as_str) != Some(UPDATE_METHOD) {
        return None;
    }
    if message.pointer("/params/sessionId").and_then(Value::as_str) != Some(session) {
        return None;
    }
    message.pointer("/params/update/sessionUpdate").and_then(Value::as_str).map(str::to_owned)
}

/// A value of a flat `select` option other than its current one.
fn other_value(option: &Value) -> Option<Value> {
    if option.get("type").and_then(Value::as_str) != Some("select") {
        return None;
    }
    let current = option.get("currentValue");
    let values = option.get("options").and_then(Value::as_array)?;
    values.iter().filter_map(|v| v.get("value")).find(|v| Some(*v) != current).cloned()
}

/// A requirement that the answer be a result object holding the array `member`.
fn object_with(answer: &Answer, member: &str, what: &str) -> (Status, String) {
    match answer.as_ref().ok().and_then(|m| m.pointer(&format!("/result/{member}"))) {
        Some(Value::Array(items)) => (Status::Passed, format!("{what} answered `{member}` with {} item(s)", items.len())),
        _ => (Status::Failed, format!("{what} answered without a `{member}` array: {}", shown(answer))),
    }
}

/// A requirement that the answer be a result (an object).
fn answered_object(answer: &Answer, what: &str) -> (Status, String) {
    match answer.as_ref().ok().and_then(|m| m.get("result")) {
        Some(Value::Object(_)) => (Status::Passed, format!("{what} answered with a result")),
        _ => (Status::Failed, format!("{what}: {}", shown(answer))),
    }
}
