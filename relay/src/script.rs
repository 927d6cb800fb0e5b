//! The replay model behind the relay: deterministic, scripted, and blind to the dialect.
//!
//! Every call gets a reply token the relay mints for it ([`super::token`]): the model's own
//! answer, which no request carries, so a harness can show it only by passing the model's
//! answer on.
//!
//! - `nonce` answers `The nonce is NONCE. The reply token is TOKEN.` (NONCE from the latest
//!   user turn); a request that asks for an output schema is answered with an instance of
//!   the schema whose strings are the reply token ([`super::structured`]): a call of the
//!   schema's tool, or the instance as JSON text.
//! - `tool`, when the request offers tools, first calls one of them to read the token file
//!   the probe put in the workspace, and answers with the nonce once a tool result carrying
//!   the token comes back. A request without tools, or whose latest user turn carries no
//!   nonce (a harness's side call: a title, a token count), is answered as under `nonce`. The tool
//!   is chosen by this rule, in order:
//!   1. a *reader*: a tool whose name contains `read` and whose input schema has a string
//!      property `file_path`, `path`, `filepath`, `file` or `filename`, called with the
//!      token file's absolute path;
//!   2. a *shell*: a tool whose name contains `shell`, `bash`, `exec` or `command` and whose
//!      input schema has a property `command` or `cmd`, called with `cat PATH` (a string) or
//!      `["cat", PATH]` (an array), as the schema types it.
//! - a file: a JSON list of replies, served one per model call in order, each
//!   `{"text": "..."}` or `{"tool_call": {"name": "...", "input": {...}}}`; `{nonce}`,
//!   `{reply_token}`, `{token}` and `{token_file}` are expanded in every string. A reply
//!   without `{reply_token}` carries none, so a turn answered only by such replies cannot
//!   pass `prompt_exchange`. A call past the end is an error the relay answers with status
//!   500. An entry `{"fault": …}` fails its call instead of answering it ([`super::fault`]),
//!   and only a call whose latest user turn carries a nonce plays it: a side call that meets
//!   it is answered as under `nonce` and leaves it in place, as under `faults`, so a fault
//!   falls on the turn's own call. (Claude Code's adapter sends a side call 40–230 ms
//!   before the turn's call; it took a file's first fault in every run.)
//! - `faults` plays [`super::fault::SEQUENCE`]: each transient fault (a rate limit, an
//!   overload, a server error, a stream cut), each followed by an answer as under `nonce`,
//!   then answers as `nonce` does. Only calls whose latest user turn carries a nonce play
//!   it: a side call (a title, a token count) is answered as under `nonce` and leaves the
//!   sequence where it was, so the faults fall on the turn's own calls.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{json, Value};

use super::dialect::{Reply, Tool, Turn};
use super::fault::{self, Fault, FaultError};
use super::token::{self, NONCE_PREFIX};

/// A model script that cannot be played, naming its file.
#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the model script `{path}`: {source}")]
    Read { path: String, source: std::io::Error },
    #[error("the model script `{path}` is not JSON: {source}")]
    NotJson { path: String, source: serde_json::Error },
    #[error("the model script `{path}` is not a JSON list of replies")]
    NotAList { path: String },
    #[error("the model script `{path}`, reply {index}: {reason}")]
    Reply {
        path: String,
        index: usize,
        #[source]
        reason: EntryError,
    },
}

/// Why a model script's entry is neither a reply nor a fault the relay can play.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("{0}")]
    Fault(#[from] FaultError),
    #[error("`tool_call` has no string `name`")]
    ToolCallWithoutName,
    #[error("`tool_call.input` is not an object")]
    ToolCallInputNotObject,
    #[error("an entry is {{\"text\": …}}, {{\"tool_call\": {{\"name\": …, \"input\": {{…}}}}}} or {{\"fault\": …}}")]
    NeitherReplyNorFault,
}

/// A script, as `--model-script` names it.
#[derive(Clone, Debug, PartialEq)]
pub enum Script {
    Nonce,
    Tool,
    Faults,
    Replies(Vec<Value>),
}

impl Script {
    /// Parses `nonce`, `tool`, `faults`, or reads a file of replies (checked now, so a bad file is a
    /// usage error before anything starts).
    pub fn parse(spec: &str) -> Result<Script, ScriptError> {
        match spec {
            "nonce" => Ok(Script::Nonce),
            "tool" => Ok(Script::Tool),
            "faults" => Ok(Script::Faults),
            path => {
                let file = || path.to_owned();
                let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read { path: file(), source })?;
                let value: Value = serde_json::from_str(&text).map_err(|source| ScriptError::NotJson { path: file(), source })?;
                let Value::Array(replies) = value else { return Err(ScriptError::NotAList { path: file() }) };
                for (index, reply) in replies.iter().enumerate() {
                    scripted(reply).map_err(|reason| ScriptError::Reply { path: file(), index, reason })?;
                }
                Ok(Script::Replies(replies))
            }
        }
    }

    /// Whether it fails calls: the built-in `faults`, or a file with a `fault` entry. A run
    /// under such a script is judged on its recovery too (`model_recovery`).
    pub fn fails_calls(&self) -> bool {
        match self {
            Script::Faults => true,
            Script::Replies(replies) => replies.iter().any(|r| r.get("fault").is_some()),
            Script::Nonce | Script::Tool => false,
        }
    }

    /// Which script it is, as a report names it.
    pub fn kind(&self) -> ScriptKind {
        match self {
            Script::Nonce => ScriptKind::Nonce,
            Script::Tool => ScriptKind::Tool,
            Script::Faults => ScriptKind::Faults,
            Script::Replies(_) => ScriptKind::File,
        }
    }
}

/// Which script a run's model played, as a report names it (`nonce`, `tool`, `faults`,
/// `file`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScriptKind {
    Nonce,
    Tool,
    Faults,
    File,
}

impl ScriptKind {
    pub fn name(self) -> &'static str {
        match self {
            ScriptKind::Nonce => "nonce",
            ScriptKind::Tool => "tool",
            ScriptKind::Faults => "faults",
            ScriptKind::File => "file",
        }
    }
}

/// What the model does with one call: answer it, or fail it.
#[derive(Clone, Debug, PartialEq)]
pub enum Played {
    Reply(Reply),
    Fault(Fault),
}

/// One scripted entry read from a file: a reply, or a fault.
fn scripted(entry: &Value) -> Result<Played, EntryError> {
    match entry.as_object() {
        Some(members) if members.contains_key("fault") => Ok(Played::Fault(Fault::from_entry(members)?)),
        _ => scripted_reply(entry).map(Played::Reply),
    }
}

/// One scripted reply read from a file.
fn scripted_reply(reply: &Value) -> Result<Reply, EntryError> {
    if let Some(text) = reply.get("text").and_then(Value::as_str) {
        return Ok(Reply::Text(text.to_owned()));
    }
    if let Some(call) = reply.get("tool_call") {
        let name = call.get("name").and_then(Value::as_str).ok_or(EntryError::ToolCallWithoutName)?;
        let input = call.get("input").cloned().unwrap_or_else(|| json!({}));
        if !input.is_object() {
            return Err(EntryError::ToolCallInputNotObject);
        }
        return Ok(Reply::ToolCall { name: name.to_owned(), input });
    }
    Err(EntryError::NeitherReplyNorFault)
}

/// One session's model: the script, the token file, and how far a file script has been
/// played (the only thing a call changes, counted without a lock, so that answering never
/// holds what the record and the probe need).
#[derive(Debug)]
pub struct Model {
    script: Script,
    token: String,
    token_file: PathBuf,
    played: AtomicUsize,
}

/// What the model made of a call, for the record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// The tool it called, if it called one.
    pub tool_called: Option<String>,
    /// Whether a tool result in the request carried the token.
    pub token_returned: bool,
    /// How the request asked for an output schema, if it did ([`super::structured`]).
    pub structured_output: Option<&'static str>,
    /// The digest of the structured value answered, when one was ([`super::structured::digest`]).
    pub structured_digest: Option<String>,
}

/// A call the model will not answer, and how the relay says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unanswered {
    pub status: u16,
    /// The dialect family's error type.
    pub kind: &'static str,
    pub reason: String,
}

impl Model {
    pub fn new(script: Script, token: String, token_file: PathBuf) -> Model {
        Model { script, token, token_file, played: AtomicUsize::new(0) }
    }

    pub fn token(&self) -> &str {
        &self.token
    }

    pub fn token_file(&self) -> &Path {
        &self.token_file
    }

    /// What the model does with one call, whose reply token is `reply_token`: its answer, or
    /// the fault the script fails it with.
    pub fn reply(&self, turn: &Turn, reply_token: &str, plain: bool) -> Result<(Played, Decision), Unanswered> {
        let token_returned = !self.token.is_empty() && turn.tool_results.iter().any(|r| r.contains(&self.token));
        let structured_output = turn.structured.as_ref().map(|s| s.way);
        let mut decision = Decision { tool_called: None, token_returned, structured_output, structured_digest: None };
        let nonce = latest_nonce(turn);
        // A plain turn is answered as under `nonce`: the script's faults, tool calls and
        // replies stay for the turns it was written for.
        let script = if plain { &Script::Nonce } else { &self.script };
        let reply = match script {
            Script::Nonce => final_reply(turn, reply_token, &mut decision)?,
            Script::Tool if token_returned => final_reply(turn, reply_token, &mut decision)?,
            Script::Tool if turn.tools.is_empty() => final_reply(turn, reply_token, &mut decision)?,
            // A side call (a title, a token count) carries no nonce: it gets text, so the
            // tool call belongs to the turn.
            Script::Tool if nonce.is_none() => final_reply(turn, reply_token, &mut decision)?,
            Script::Tool if !turn.tool_results.is_empty() => Reply::Text(String::from("The tool's result did not carry the token.")),
            Script::Tool => match choose_tool(&turn.tools, &self.token_file) {
                Some(reply) => reply,
                None => Reply::Text(String::from("None of the offered tools reads a file or runs a shell command.")),
            },
            // A side call leaves the sequence where it was (the module's documentation).
            Script::Faults if nonce.is_none() => final_reply(turn, reply_token, &mut decision)?,
            Script::Faults => match fault::SEQUENCE.get(self.played.fetch_add(1, Ordering::Relaxed)) {
                Some(Some(fault)) => return Ok((Played::Fault(*fault), decision)),
                _ => final_reply(turn, reply_token, &mut decision)?,
            },
            Script::Replies(replies) => {
                let Some(played) = self.next_entry(replies, nonce.is_some()) else {
                    // A side call meeting a fault entry (the module's documentation).
                    return Ok((Played::Reply(final_reply(turn, reply_token, &mut decision)?), decision));
                };
                let Some(entry) = replies.get(played) else {
                    let reason = format!("the model script has {} replies and this is call {}", replies.len(), played + 1);
                    return Err(Unanswered { status: 500, kind: "api_error", reason });
                };
                let expanded = self.expand(entry, nonce.unwrap_or_default(), reply_token);
                match scripted(&expanded).map_err(|error| Unanswered { status: 500, kind: "api_error", reason: error.to_string() })? {
                    Played::Reply(reply) => reply,
                    fault @ Played::Fault(_) => return Ok((fault, decision)),
                }
            }
        };
        if let Reply::ToolCall { name, .. } = &reply {
            decision.tool_called = Some(name.clone());
        }
        Ok((Played::Reply(reply), decision))
    }

    /// The index of the file entry this call plays, taken: the next one, unless that is a
    /// fault and the call is a side call (`prompted` false), which leaves it for the turn's
    /// own call (`None`). Taken by compare-and-swap, so two calls at once never play one
    /// entry; the loop goes round only when another call took an entry meanwhile.
    fn next_entry(&self, replies: &[Value], prompted: bool) -> Option<usize> {
        let mut at = self.played.load(Ordering::Relaxed);
        loop {
            if !prompted && replies.get(at).is_some_and(|e| e.get("fault").is_some()) {
                return None;
            }
            match self.played.compare_exchange_weak(at, at + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(at),
                Err(now) => at = now,
            }
        }
    }

    fn expand(&self, value: &Value, nonce: &str, reply_token: &str) -> Value {
        match value {
            Value::String(s) => Value::String(
                s.replace("{nonce}", nonce)
                    .replace("{reply_token}", reply_token)
                    .replace("{token}", &self.token)
                    .replace("{token_file}", &self.token_file.to_string_lossy()),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.expand(v, nonce, reply_token)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.expand(v, nonce, reply_token))).collect()),
            other => other.clone(),
        }
    }
}

/// The turn's answer: an instance of the requested output schema whose strings are the
/// reply token, when one is asked and its tool was not already called; the nonce and the
/// reply token as text otherwise. A schema past the generator's budgets, or with no finite
/// instance, is refused.
fn final_reply(turn: &Turn, reply_token: &str, decision: &mut Decision) -> Result<Reply, Unanswered> {
    match &turn.structured {
        Some(wanted) if !wanted.answered => {
            let value = super::structured::instance(&wanted.schema, reply_token).map_err(|why| Unanswered {
                status: 400,
                kind: "invalid_request_error",
                reason: format!("the replay model builds no answer to this output schema ({}): {why}", wanted.way),
            })?;
            decision.structured_digest = Some(super::structured::digest(&value));
            Ok(match &wanted.tool {
                Some(name) => Reply::ToolCall { name: name.clone(), input: value },
                None => Reply::Text(value.to_string()),
            })
        }
        _ => Ok(nonce_reply(turn, reply_token)),
    }
}

fn nonce_reply(turn: &Turn, reply_token: &str) -> Reply {
    match latest_nonce(turn) {
        Some(nonce) => Reply::Text(format!("The nonce is {nonce}. The reply token is {reply_token}.")),
        None => Reply::Text(format!("No nonce was found in the latest user turn. The reply token is {reply_token}.")),
    }
}

/// The nonce of the request's latest user turn, if it carries one: only that turn is the
/// prompt the model is answering (an earlier turn's nonce is history, and a system message,
/// metadata or a tool definition is not the user's).
pub fn latest_nonce(turn: &Turn) -> Option<&str> {
    turn.latest_user_text().and_then(find_nonce)
}

/// The first `cf-` followed by 16 lowercase hex digits in `text`.
pub fn find_nonce(text: &str) -> Option<&str> {
    token::find(text, NONCE_PREFIX)
}

const READER_PROPERTIES: &[&str] = &["file_path", "path", "filepath", "file", "filename"];
const SHELL_WORDS: &[&str] = &["shell", "bash", "exec", "command"];

fn properties(schema: &Value) -> Option<&serde_json::Map<String, Value>> {
    schema.get("properties").and_then(Value::as_object)
}

/// The tool call the `tool` script makes, by the rule in the module's documentation.
fn choose_tool(tools: &[Tool], file: &Path) -> Option<Reply> {
    let path = file.to_string_lossy().into_owned();
    for tool in tools {
        if !tool.name.to_ascii_lowercase().contains("read") {
            continue;
        }
        let Some(props) = properties(&tool.schema) else { continue };
        let string_prop =
            READER_PROPERTIES.iter().find(|p| props.get(**p).and_then(|s| s.get("type")).and_then(Value::as_str) == Some("string"));
        if let Some(prop) = string_prop {
            return Some(Reply::ToolCall { name: tool.name.clone(), input: json!({ *prop: path }) });
        }
    }
    for tool in tools {
        let name = tool.name.to_ascii_lowercase();
        if !SHELL_WORDS.iter().any(|w| name.contains(w)) {
            continue;
        }
        let Some((key, command)) =
            properties(&tool.schema).and_then(|p| ["command", "cmd"].iter().find_map(|k| p.get(*k).map(|s| (*k, s))))
        else {
            continue;
        };
        let input = match command.get("type").and_then(Value::as_str) {
            Some("array") => json!({ key: ["cat", path] }),
            _ => json!({ key: format!("cat '{}'", path.replace('\'', "'\\''"))}),
        };
        return Some(Reply::ToolCall { name: tool.name.clone(), input });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The entry errors read as they always have, a fault's own reason included.
    #[test]
    fn entry_errors_keep_their_texts() {
        let reason = |entry: Value| scripted(&entry).expect_err("refused").to_string();
        assert_eq!(reason(json!({"neither": 1})), r#"an entry is {"text": …}, {"tool_call": {"name": …, "input": {…}}} or {"fault": …}"#);
        assert_eq!(reason(json!({"tool_call": {}})), "`tool_call` has no string `name`");
        assert_eq!(reason(json!({"tool_call": {"name": "n", "input": 1}})), "`tool_call.input` is not an object");
        assert_eq!(reason(json!({"fault": "overloaded", "x": 1})), "the `overloaded` fault takes no `x`");
        let fault = scripted(&json!({"fault": 1})).expect_err("refused");
        assert_eq!(std::error::Error::source(&fault).map(ToString::to_string).as_deref(), Some("`fault` is not a string"));
    }

    fn turn(user: &[&str], results: &[&str], tools: Vec<Tool>) -> Turn {
        Turn {
            model: "m".into(),
            stream: false,
            include_usage: false,
            user_texts: user.iter().map(|s| s.to_string()).collect(),
            tool_results: results.iter().map(|s| s.to_string()).collect(),
            tools,
            structured: None,
            input_tokens: 0,
        }
    }

    fn tool(name: &str, schema: Value) -> Tool {
        Tool { name: name.into(), schema }
    }

    const REPLY: &str = "cfr-00000000000000aa";

    impl Model {
        fn reply_to(&self, turn: &Turn) -> Result<(Reply, Decision), Unanswered> {
            match self.reply(turn, REPLY, false)? {
                (Played::Reply(reply), decision) => Ok((reply, decision)),
                (Played::Fault(fault), _) => panic!("a fault where a reply was expected: {fault:?}"),
            }
        }
    }

    #[test]
    fn only_the_latest_user_turn_holds_the_nonce() {
        assert_eq!(find_nonce("x cf-0123 cf-0123456789abcdef."), Some("cf-0123456789abcdef"));
        assert_eq!(find_nonce("cf-0123456789ABCDEF"), None);
        let earlier = turn(&["cf-1111111111111111", "later, no nonce"], &[], vec![]);
        assert_eq!(latest_nonce(&earlier), None, "a nonce in an earlier turn is history, not the prompt");
        let latest = turn(&["first", "cf-1111111111111111"], &[], vec![]);
        assert_eq!(latest_nonce(&latest), Some("cf-1111111111111111"));
    }

    #[test]
    fn text_beside_tool_results_continues_the_turn_it_answers() {
        let read = |body: Value| super::super::dialect::Served::AnthropicMessages.read(&body).expect("reads");
        let tool_use = json!({"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]});
        // The tool loop: a reminder beside the tool's result is not a new user turn.
        let looped = read(json!({"model": "m", "messages": [
            {"role": "user", "content": "cf-6666666666666666"}, tool_use,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}, {"type": "text", "text": "<reminder/>"}]},
        ]}));
        assert_eq!(latest_nonce(&looped), Some("cf-6666666666666666"));
        // A resumed session whose last turn ended in a tool call: the next prompt rides with
        // the tool's result, and it is the latest user turn.
        let resumed = read(json!({"model": "m", "messages": [
            {"role": "user", "content": "cf-6666666666666666"}, tool_use,
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}, {"type": "text", "text": "now cf-7777777777777777"}]},
        ]}));
        assert!(resumed.latest_user_text().is_some_and(|t| t.contains("cf-7777777777777777")));
    }

    #[test]
    fn the_nonce_script_answers_with_the_calls_reply_token() {
        let model = Model::new(Script::Nonce, String::new(), PathBuf::from("/f"));
        let (reply, _) = model.reply_to(&turn(&["cf-5555555555555555"], &[], vec![])).expect("replies");
        assert_eq!(reply, Reply::Text(format!("The nonce is cf-5555555555555555. The reply token is {REPLY}.")));
    }

    #[test]
    fn the_tool_script_reads_then_answers_with_the_nonce() {
        let model = Model::new(Script::Tool, "cft-tok".into(), PathBuf::from("/w/token.txt"));
        let tools = vec![
            tool("Bash", json!({"properties": {"command": {"type": "string"}}})),
            tool("Read", json!({"properties": {"file_path": {"type": "string"}}})),
        ];
        let (first, decision) = model.reply_to(&turn(&["cf-2222222222222222"], &[], tools.clone())).expect("replies");
        assert_eq!(first, Reply::ToolCall { name: "Read".into(), input: json!({"file_path": "/w/token.txt"}) });
        assert_eq!(decision.tool_called.as_deref(), Some("Read"));
        let (second, decision) = model.reply_to(&turn(&["cf-2222222222222222"], &["token: cft-tok"], tools.clone())).expect("replies");
        assert_eq!(second, Reply::Text(format!("The nonce is cf-2222222222222222. The reply token is {REPLY}.")));
        assert!(decision.token_returned);
        let (wrong, _) = model.reply_to(&turn(&["cf-2222222222222222"], &["nothing"], tools.clone())).expect("replies");
        assert!(matches!(wrong, Reply::Text(t) if !t.contains("cf-2222")));
        let (side, decision) = model.reply_to(&turn(&["count"], &[], tools)).expect("replies");
        assert!(matches!(side, Reply::Text(_)) && decision.tool_called.is_none(), "a side call without the nonce gets text");
    }

    #[test]
    fn a_shell_tool_gets_cat_in_the_shape_its_schema_asks() {
        let array = [tool("shell", json!({"properties": {"command": {"type": "array"}}}))];
        assert_eq!(
            choose_tool(&array, Path::new("/w/t")),
            Some(Reply::ToolCall { name: "shell".into(), input: json!({"command": ["cat", "/w/t"]}) })
        );
        let none = [tool("search", json!({"properties": {"query": {"type": "string"}}}))];
        assert_eq!(choose_tool(&none, Path::new("/w/t")), None);
    }

    #[test]
    fn the_nonce_script_answers_an_output_schema_with_an_instance() {
        let schema =
            json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"], "additionalProperties": false});
        let model = Model::new(Script::Nonce, String::new(), PathBuf::from("/f"));
        let body = json!({"model": "m", "messages": [{"role": "user", "content": "cf-4444444444444444"}], "tools": [{"name": "StructuredOutput", "input_schema": schema}]});
        let t = super::super::dialect::Served::AnthropicMessages.read(&body).expect("reads");
        let (reply, decision) = model.reply_to(&t).expect("replies");
        assert_eq!(reply, Reply::ToolCall { name: "StructuredOutput".into(), input: json!({"answer": REPLY}) });
        assert_eq!(decision.structured_output, Some("tool"));
        assert_eq!(decision.structured_digest, Some(super::super::structured::digest(&json!({"answer": REPLY}))));
        let body = json!({"model": "m", "input": "cf-4444444444444444", "text": {"format": {"type": "json_schema", "name": "x", "schema": schema}}});
        let t = super::super::dialect::Served::OpenaiResponses.read(&body).expect("reads");
        let (reply, decision) = model.reply_to(&t).expect("replies");
        assert_eq!(reply, Reply::Text(format!(r#"{{"answer":"{REPLY}"}}"#)));
        assert_eq!(decision.structured_output, Some("text.format"));
        let (_, plain) = model.reply_to(&turn(&["cf-4444444444444444"], &[], vec![])).expect("replies");
        assert_eq!(plain.structured_output, None);
    }

    #[test]
    fn a_file_script_plays_in_order_and_then_refuses() {
        let replies =
            vec![json!({"tool_call": {"name": "x", "input": {"p": "{token_file}"}}}), json!({"text": "n={nonce} r={reply_token}"})];
        let model = Model::new(Script::Replies(replies), "t".into(), PathBuf::from("/f"));
        let t = turn(&["cf-3333333333333333"], &[], vec![]);
        assert_eq!(model.reply_to(&t).expect("first").0, Reply::ToolCall { name: "x".into(), input: json!({"p": "/f"}) });
        assert_eq!(model.reply_to(&t).expect("second").0, Reply::Text(format!("n=cf-3333333333333333 r={REPLY}")));
        assert_eq!(model.reply_to(&t).map(|_| ()).unwrap_err().status, 500);
    }

    #[test]
    fn a_file_script_fails_calls_where_it_says() {
        let entries = vec![json!({"fault": "rate_limit", "retry_after": 3}), json!({"text": "r={reply_token}"})];
        let model = Model::new(Script::Replies(entries), "t".into(), PathBuf::from("/f"));
        let t = turn(&["cf-3333333333333333"], &[], vec![]);
        assert_eq!(model.reply(&t, REPLY, false).expect("first").0, Played::Fault(Fault::RateLimit { retry_after: 3 }));
        assert_eq!(model.reply_to(&t).expect("second").0, Reply::Text(format!("r={REPLY}")));
        let dir = tempfile::tempdir().expect("dir");
        let file = dir.path().join("s.json");
        std::fs::write(&file, r#"[{"fault": "stream_cut", "after_events": "two"}]"#).expect("write");
        let refused = Script::parse(&file.to_string_lossy()).unwrap_err().to_string();
        assert!(refused.contains("reply 0") && refused.contains("after_events"), "{refused}");
    }

    #[test]
    fn a_file_scripts_fault_waits_for_the_turns_own_call() {
        let entries = vec![json!({"fault": "overloaded"}), json!({"text": "r={reply_token}"}), json!({"text": "side"})];
        let model = Model::new(Script::Replies(entries), "t".into(), PathBuf::from("/f"));
        let prompt = turn(&["cf-3333333333333333"], &[], vec![]);
        let side = turn(&["Write a title for this chat"], &[], vec![]);
        // The side call first, as claude-code-acp sends it: answered as under `nonce`, the
        // fault left in place for the turn's call.
        assert_eq!(
            model.reply_to(&side).expect("side").0,
            Reply::Text(format!("No nonce was found in the latest user turn. The reply token is {REPLY}."))
        );
        assert_eq!(model.reply(&prompt, REPLY, false).expect("turn").0, Played::Fault(Fault::Overloaded));
        // A text entry is still played by whichever call comes, a side call too.
        assert_eq!(model.reply_to(&prompt).expect("retry").0, Reply::Text(format!("r={REPLY}")));
        assert_eq!(model.reply_to(&side).expect("side").0, Reply::Text(String::from("side")));
        assert_eq!(model.reply_to(&side).map(|_| ()).unwrap_err().status, 500, "then past the end");
    }

    #[test]
    fn a_plain_turn_is_answered_as_nonce_and_leaves_the_script_where_it_was() {
        let entries = vec![json!({"fault": "overloaded"}), json!({"text": "r={reply_token}"})];
        let model = Model::new(Script::Replies(entries), "t".into(), PathBuf::from("/f"));
        let prompt = turn(&["cf-3333333333333333"], &[], vec![]);
        let plain = model.reply(&prompt, REPLY, true).expect("plain").0;
        assert_eq!(plain, Played::Reply(Reply::Text(format!("The nonce is cf-3333333333333333. The reply token is {REPLY}."))));
        assert_eq!(model.reply(&prompt, REPLY, false).expect("turn").0, Played::Fault(Fault::Overloaded), "the first entry is still next");
    }

    #[test]
    fn the_faults_script_alternates_faults_and_answers_on_the_turns_calls_only() {
        let model = Model::new(Script::parse("faults").expect("built in"), String::new(), PathBuf::from("/f"));
        assert_eq!(Script::Faults.kind().name(), "faults");
        let prompt = turn(&["cf-5555555555555555"], &[], vec![]);
        let side = turn(&["Write a title for this chat"], &[], vec![]);
        let mut played = Vec::new();
        for _ in 0..fault::SEQUENCE.len() + 2 {
            // A side call between every two calls moves nothing.
            assert!(matches!(model.reply(&side, REPLY, false).expect("side").0, Played::Reply(Reply::Text(_))));
            played.push(model.reply(&prompt, REPLY, false).expect("turn").0);
        }
        let answer = Played::Reply(Reply::Text(format!("The nonce is cf-5555555555555555. The reply token is {REPLY}.")));
        let faults: Vec<Option<Fault>> = played.iter().map(|p| if let Played::Fault(f) = p { Some(*f) } else { None }).collect();
        assert_eq!(&faults[..fault::SEQUENCE.len()], &fault::SEQUENCE);
        assert!(played.iter().enumerate().all(|(i, p)| i % 2 == 0 && i < 8 || *p == answer), "{played:?}");
        let kinds: Vec<_> = fault::SEQUENCE.iter().flatten().map(|f| f.kind()).collect();
        assert!(kinds.iter().all(|k| k.transient()) && kinds.len() == 4);
    }
}
