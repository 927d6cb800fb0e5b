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

use super::fault::Fault;

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
    pub(crate) fn read(self, body: &Value) -> Result<Turn, RequestError> {
        let object = body.as_object().ok_or(RequestError::NotAnObject)?;
        let model = object.get("model").and_then(Value::as_str).ok_or(RequestError::NoModel)?.to_owned();
        let stream = match object.get("stream") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(RequestError::StreamNotBoolean),
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

    /// The answer as a `text/event-stream` body, a text answer's deltas split into at most
    /// `pieces` (at least one) at word boundaries: a paced answer ([`super::pace`]) streams
    /// many, an ordinary one a single delta.
    pub fn render_sse(self, reply: &Reply, turn: &Turn, ids: &Ids, pieces: usize) -> String {
        match self {
            Served::AnthropicMessages => anthropic::sse(reply, turn, ids, pieces),
            Served::OpenaiChat => chat::sse(reply, turn, ids, pieces),
            Served::OpenaiResponses => responses::sse(reply, turn, ids, pieces),
        }
    }

    /// A fault's error answer, in the provider's shape; `None` for a stream cut, which is
    /// the dialect's ordinary answer cut short ([`super::fault::cut`]).
    pub fn render_failure(self, fault: Fault, turn: &Turn, ids: &Ids) -> Option<Failure> {
        // The relay always names the length (`relay::play`, by its estimate of the request);
        // a length left unnamed, as this module's tests leave it, is just past the window.
        let overflow = |maximum: u64, tokens: Option<u64>| tokens.unwrap_or(maximum.saturating_add(1));
        let (param, message) = match (self, fault) {
            (_, Fault::StreamCut { .. }) => return None,
            (Served::AnthropicMessages, fault) => return Some(anthropic::failure(fault, overflow, ids)),
            (Served::OpenaiChat, Fault::ContextOverflow { tokens, maximum }) => chat::overflow(overflow(maximum, tokens), maximum),
            (Served::OpenaiResponses, Fault::ContextOverflow { .. }) => responses::overflow(),
            (_, fault) => return Some(openai_failure(fault, turn, ids)),
        };
        let body = openai_error(&message, "invalid_request_error", Value::from(param), Value::from("context_length_exceeded"));
        Some(Failure { status: 400, headers: vec![("x-request-id", ids.request())], body })
    }
}

/// `text` cut into at most `pieces` consecutive parts (at least one) at word boundaries,
/// each part holding about as many words (a part ends after its last word's space), so the
/// parts joined are `text` again and there are `pieces` of them when it has as many words.
pub(super) fn text_pieces(text: &str, pieces: usize) -> Vec<&str> {
    let ends: Vec<usize> = text
        .split_inclusive(' ')
        .scan(0, |at, word| {
            *at += word.len();
            Some(*at)
        })
        .collect();
    let count = pieces.clamp(1, ends.len().max(1));
    let mut parts = Vec::with_capacity(count);
    let mut start = 0;
    for part in 1..=count {
        let end = if part == count { text.len() } else { ends[part * ends.len() / count - 1] };
        parts.push(&text[start..end]);
        start = end;
    }
    parts
}

/// Why a request body is not a request of its dialect: the reason the relay's 400 answer
/// gives after "not a <dialect> request: ".
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("the request body is not a JSON object")]
    NotAnObject,
    #[error("the request has no string `model`")]
    NoModel,
    #[error("`stream` is not a boolean")]
    StreamNotBoolean,
    /// Anthropic Messages and Chat Completions.
    #[error("the request has no `messages` array")]
    NoMessages,
    /// Responses.
    #[error("the request has no `input` string or list")]
    NoInput,
}

/// A failed call's answer as its provider sends it: the status, the headers beside the
/// content type (`retry-after`, the request id each SDK reads into its error), the body.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub status: u16,
    pub headers: Vec<(&'static str, String)>,
    pub body: Value,
}

/// OpenAI's error body: `{"error": {"message", "type", "param", "code"}}`.
fn openai_error(message: &str, kind: &str, param: Value, code: Value) -> Value {
    serde_json::json!({"error": {"message": message, "type": kind, "param": param, "code": code}})
}

/// The OpenAI family's transient faults, the same on Chat Completions and Responses.
fn openai_failure(fault: Fault, turn: &Turn, ids: &Ids) -> Failure {
    let mut headers = vec![("x-request-id", ids.request())];
    let (status, body) = match fault {
        Fault::RateLimit { retry_after } => {
            headers.push(("retry-after", retry_after.to_string()));
            let message = format!(
                "Rate limit reached for {} in organization org-checkfu on requests per min (RPM): Limit 1, Used 1, Requested 1. \
                 Please try again in {retry_after}s. Visit https://platform.openai.com/account/rate-limits to learn more.",
                super::record::capped(&turn.model, super::record::MAX_NAME)
            );
            (429, openai_error(&message, "requests", Value::Null, Value::from("rate_limit_exceeded")))
        }
        Fault::Overloaded => {
            (503, openai_error("The engine is currently overloaded, please try again later.", "server_error", Value::Null, Value::Null))
        }
        _ => {
            let message = "The server had an error while processing your request. Sorry about that!";
            (500, openai_error(message, "server_error", Value::Null, Value::Null))
        }
    };
    Failure { status, headers, body }
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
    /// The request's length in tokens by the relay's own estimate ([`super::estimate`]):
    /// what the answer's usage reports as its input, so a client that compacts by the usage
    /// it is told sees the measure the enforced window and the record use. Set by the relay
    /// once the request is read.
    pub input_tokens: u64,
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

    /// The request id a failed call's answer carries (`request-id`, `x-request-id`).
    pub fn request(&self) -> String {
        format!("req_{}", self.message)
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

/// The usage an answer reports: the request's estimated length as its input (at least one
/// token, as a real provider never reports none), and the reply's text or tool input as its
/// output.
pub(crate) fn usage_tokens(reply: &Reply, turn: &Turn) -> (u64, u64) {
    let output = match reply {
        Reply::Text(text) => tokens(text),
        Reply::ToolCall { input, .. } => tokens(&input.to_string()),
    };
    (turn.input_tokens.max(1), output)
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn text_pieces_join_to_the_text_and_split_at_spaces() {
        let text = "one two three four five six seven eight";
        for pieces in [0, 1, 2, 3, 8, 50] {
            let parts = text_pieces(text, pieces);
            assert_eq!(parts.concat(), text, "{pieces}");
            assert!(parts.len() <= pieces.max(1), "{pieces}: {parts:?}");
            assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with(' ')), "{pieces}: {parts:?}");
        }
        assert_eq!(text_pieces(text, 8).len(), 8);
        assert_eq!(text_pieces("", 4), [""]);
        assert_eq!(text_pieces("é ü", 2), ["é ", "ü"]);
    }

    /// Every dialect reports the request's estimated length as the answer's input, JSON and
    /// streamed alike, whatever the request's user texts add up to.
    #[test]
    fn usage_reports_the_estimate_as_the_input() {
        let turn = Turn { model: "m".into(), user_texts: vec!["x".repeat(400)], input_tokens: 4321, ..Turn::default() };
        let reply = Reply::Text("an answer".into());
        let ids = Ids::new(1);
        for (dialect, member) in
            [(Served::AnthropicMessages, "input_tokens"), (Served::OpenaiChat, "prompt_tokens"), (Served::OpenaiResponses, "input_tokens")]
        {
            let body = dialect.render_json(&reply, &turn, &ids);
            let usage = body.get("usage").or_else(|| body.pointer("/response/usage")).expect("a usage member");
            assert_eq!(usage[member], 4321, "{dialect:?}: {body}");
        }
        let streamed = Served::AnthropicMessages.render_sse(&reply, &turn, &ids, 2);
        assert_eq!(streamed.matches("\"input_tokens\":4321").count(), 2, "message_start and message_delta: {streamed}");
        let unset = Turn { model: "m".into(), ..Turn::default() };
        assert_eq!(Served::OpenaiChat.render_json(&reply, &unset, &ids)["usage"]["prompt_tokens"], 1, "never none");
    }

    #[test]
    fn openai_faults_answer_in_its_error_shape_on_both_dialects() {
        let turn = Turn { model: "gpt-x".into(), user_texts: vec!["x".repeat(400)], ..Turn::default() };
        let ids = Ids::new(9);
        for dialect in [Served::OpenaiChat, Served::OpenaiResponses] {
            let render = |fault| dialect.render_failure(fault, &turn, &ids).expect("an error answer");
            let limited = render(Fault::RateLimit { retry_after: 2 });
            assert_eq!(limited.status, 429);
            assert!(
                limited.headers.contains(&("retry-after", "2".into()))
                    && limited.headers.contains(&("x-request-id", "req_cfrelay000009".into()))
            );
            assert_eq!(
                (limited.body["error"]["code"].as_str(), limited.body["error"]["type"].as_str()),
                (Some("rate_limit_exceeded"), Some("requests"))
            );
            assert!(limited.body["error"]["message"].as_str().is_some_and(|m| m.contains("gpt-x") && m.contains("try again in 2s")));
            let overloaded = render(Fault::Overloaded);
            assert_eq!((overloaded.status, overloaded.body["error"]["type"].as_str()), (503, Some("server_error")));
            assert_eq!(render(Fault::ServerError).status, 500);
            let long = render(Fault::ContextOverflow { tokens: None, maximum: 1000 });
            assert_eq!(long.status, 400);
            assert_eq!(long.body["error"]["code"], "context_length_exceeded");
            assert_eq!(long.body["error"]["type"], "invalid_request_error");
            assert!(dialect.render_failure(Fault::StreamCut { after_events: 1 }, &turn, &ids).is_none());
        }
        let chat = Served::OpenaiChat.render_failure(Fault::ContextOverflow { tokens: None, maximum: 1000 }, &turn, &ids).expect("answer");
        assert_eq!(chat.body["error"]["param"], "messages");
        // A length the relay did not name: just past the window.
        assert!(chat.body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("is 1000 tokens") && m.contains("resulted in 1001 tokens")));
        let responses =
            Served::OpenaiResponses.render_failure(Fault::ContextOverflow { tokens: None, maximum: 1 }, &turn, &ids).expect("answer");
        assert_eq!(responses.body["error"]["param"], json!("input"));
    }
}
