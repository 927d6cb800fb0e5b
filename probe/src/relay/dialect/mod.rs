//! The three model dialects the relay serves, each read into one dialect-free [`Turn`] and
//! answered from one [`Reply`], as plain JSON or as the server-sent events its official SDK
//! parses.
//!
//! Each dialect module owns three things and nothing else: how its request says what the
//! model is asked ([`Turn`]), how its answer looks in both forms, and its error shape. The
//! replay model ([`super::script`]) decides the answer without knowing the dialect.

pub mod anthropic;
pub mod chat;
pub mod responses;

use serde_json::Value;

use checkfu_wire::catalog::Dialect;

/// A catalog dialect the relay serves. The catalog's [`Dialect`] names the dialects; this
/// enum is the subset the relay can answer, mapped by a `match` on the generated enum (a
/// dialect added to the catalog fails to compile here until the relay decides on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    AnthropicMessages,
    OpenaiChat,
    OpenaiResponses,
}

impl Served {
    /// The served dialect of a catalog dialect; `None` for one the relay refuses
    /// (`FalQueue`, a queue protocol with no single request/answer to script).
    pub fn of(dialect: Dialect) -> Option<Served> {
        match dialect {
            Dialect::AnthropicMessages => Some(Served::AnthropicMessages),
            Dialect::OpenaiChat => Some(Served::OpenaiChat),
            Dialect::OpenaiResponses => Some(Served::OpenaiResponses),
            Dialect::FalQueue => None,
        }
    }

    /// The catalog dialect it serves.
    pub fn dialect(self) -> Dialect {
        match self {
            Served::AnthropicMessages => Dialect::AnthropicMessages,
            Served::OpenaiChat => Dialect::OpenaiChat,
            Served::OpenaiResponses => Dialect::OpenaiResponses,
        }
    }

    /// The catalog's name of the dialect.
    pub fn name(self) -> &'static str {
        self.dialect().name()
    }

    /// Reads a request body (already parsed as JSON) into a [`Turn`].
    pub(crate) fn read(self, body: &Value) -> Result<Turn, String> {
        let object = body.as_object().ok_or("the request body is not a JSON object")?;
        let model = object.get("model").and_then(Value::as_str).ok_or("the request has no string `model`")?.to_owned();
        let stream = match object.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(String::from("`stream` is not a boolean")),
        };
        let mut turn = Turn { model, stream, ..Turn::default() };
        match self {
            Served::AnthropicMessages => anthropic::read(object, &mut turn)?,
            Served::OpenaiChat => chat::read(object, &mut turn)?,
            Served::OpenaiResponses => responses::read(object, &mut turn)?,
        }
        turn.structured = super::structured::detect(body);
        Ok(turn)
    }

    /// The answer as one JSON document.
    pub fn render_json(self, reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
        match self {
            Served::AnthropicMessages => anthropic::json(reply, turn, ids),
            Served::OpenaiChat => chat::json(reply, turn, ids),
            Served::OpenaiResponses => responses::json(reply, turn, ids),
        }
    }

    /// The answer as a `text/event-stream` body.
    pub fn render_sse(self, reply: &Reply, turn: &Turn, ids: &Ids) -> String {
        match self {
            Served::AnthropicMessages => anthropic::sse(reply, turn, ids),
            Served::OpenaiChat => chat::sse(reply, turn, ids),
            Served::OpenaiResponses => responses::sse(reply, turn, ids),
        }
    }
}

/// Which family's error shape a refusal is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorShape {
    Anthropic,
    Openai,
}

impl ErrorShape {
    /// A refused request's body. `kind` is the family's error type
    /// (`authentication_error`, `invalid_request_error`, …).
    pub fn body(self, kind: &str, message: &str) -> Value {
        match self {
            ErrorShape::Anthropic => serde_json::json!({"type": "error", "error": {"type": kind, "message": message}}),
            ErrorShape::Openai => serde_json::json!({"error": {"message": message, "type": kind, "param": null, "code": kind}}),
        }
    }
}

impl From<Served> for ErrorShape {
    fn from(dialect: Served) -> ErrorShape {
        match dialect {
            Served::AnthropicMessages => ErrorShape::Anthropic,
            Served::OpenaiChat | Served::OpenaiResponses => ErrorShape::Openai,
        }
    }
}

/// What a model call asks, whatever the dialect.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Turn {
    pub model: String,
    pub stream: bool,
    /// Chat Completions' `stream_options.include_usage`: the stream ends with a chunk of its
    /// own carrying the usage (and no choices).
    pub include_usage: bool,
    /// The text of each user turn, oldest first. Tool results are not user text; the text a
    /// harness sends beside them joins the turn they continue.
    pub user_texts: Vec<String>,
    /// The text of each tool result sent back to the model, oldest first.
    pub tool_results: Vec<String>,
    /// The tools the request offers.
    pub tools: Vec<Tool>,
    /// The output schema the request asks the answer to follow, and how it asks.
    pub structured: Option<super::structured::Structured>,
}

impl Turn {
    /// The text of the latest user turn that has any: the prompt the model is answering.
    pub fn latest_user_text(&self) -> Option<&str> {
        self.user_texts.iter().rev().map(String::as_str).find(|t| !t.is_empty())
    }
}

/// A tool the request offers the model.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    /// Its input's JSON Schema (`{}` when the request gives none).
    pub schema: Value,
}

/// The replay model's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Reply {
    Text(String),
    ToolCall { name: String, input: Value },
}

/// The identifiers one answer uses: derived from the call's sequence number, so a run's
/// answers are deterministic.
#[derive(Clone, Debug)]
pub struct Ids {
    pub message: String,
    pub item: String,
    pub call: String,
}

impl Ids {
    pub fn new(sequence: usize) -> Ids {
        Ids { message: format!("cfrelay{sequence:06}"), item: format!("cfitem{sequence:06}"), call: format!("cfcall{sequence:06}") }
    }
}

/// The text of a content value that is a string or a list of typed parts (`text`,
/// `input_text`, `output_text`), as all three dialects write message content.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => {
            let mut text = String::new();
            for part in parts {
                if let Some(t) = part.get("text").and_then(Value::as_str) {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(t);
                }
            }
            text
        }
        _ => String::new(),
    }
}

/// A rough token count for the usage fields the SDKs expect (four bytes a token): the relay
/// prices nothing, but clients read these members.
pub(crate) fn tokens(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4).max(1)
}

/// One server-sent event: `event:` when the dialect names its events, then `data:`.
pub(crate) fn event(out: &mut String, name: Option<&str>, data: &Value) {
    if let Some(name) = name {
        out.push_str("event: ");
        out.push_str(name);
        out.push('\n');
    }
    out.push_str("data: ");
    out.push_str(&data.to_string());
    out.push_str("\n\n");
}

/// The tool's input as the JSON text the OpenAI dialects carry in `arguments`.
pub(crate) fn arguments(input: &Value) -> String {
    input.to_string()
}
