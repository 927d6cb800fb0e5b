//! Faults in the model plane: model-script entries that fail a call instead of answering it,
//! as real providers fail calls every day, so that a harness's recovery can be seen in the
//! record rather than taken on its word.
//!
//! A fault is dialect-free here, as a reply is; each dialect renders it in its provider's
//! exact shape ([`super::dialect::Served::render_failure`]). A stream cut is not an error
//! answer at all: the relay starts the answer as usual and closes the connection after a
//! number of server-sent events ([`CutBody`]), without the chunked encoding's last chunk,
//! so a client sees a stream that ends mid-flight, not a clean end.
//!
//! | entry | Anthropic Messages | Chat Completions, Responses |
//! |---|---|---|
//! | `{"fault": "rate_limit", "retry_after": S}` | 429 `rate_limit_error`, `retry-after: S` | 429 `rate_limit_exceeded`, `retry-after: S` |
//! | `{"fault": "overloaded"}` | 529 `overloaded_error` | 503 `server_error` |
//! | `{"fault": "server_error"}` | 500 `api_error` | 500 `server_error` |
//! | `{"fault": "stream_cut", "after_events": N}` | 200, N events, then closed | the same |
//! | `{"fault": "context_overflow", "tokens": T, "maximum": M}` | 400 `invalid_request_error`, "prompt is too long: T tokens > M maximum" | 400 `context_length_exceeded` |

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use serde_json::{Map, Value};

/// Which fault a call was failed with, as the record names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    RateLimit,
    Overloaded,
    ServerError,
    StreamCut,
    ContextOverflow,
}

impl FaultKind {
    /// The name a script entry and the record use.
    pub fn name(self) -> &'static str {
        match self {
            FaultKind::RateLimit => "rate_limit",
            FaultKind::Overloaded => "overloaded",
            FaultKind::ServerError => "server_error",
            FaultKind::StreamCut => "stream_cut",
            FaultKind::ContextOverflow => "context_overflow",
        }
    }

    /// Whether a client is expected to retry the same request: every fault but the context
    /// overflow, which the same request meets again.
    pub fn transient(self) -> bool {
        !matches!(self, FaultKind::ContextOverflow)
    }
}

/// The most seconds a `retry_after` may ask for: a harness is expected to wait that long, and
/// a run's steps have minutes, not hours.
pub const MAX_RETRY_AFTER: u32 = 600;

/// The context window a context overflow names when its entry gives none.
pub const DEFAULT_MAXIMUM: u64 = 200_000;

/// How long a stream cut waits after its last event before it closes the connection, so the
/// events are flushed to the socket first (hyper drops what it has buffered when a body
/// fails). Far below any stall time, so a cut never holds a connection.
pub const CUT_PAUSE: Duration = Duration::from_millis(50);

/// One fault, as a script entry gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// 429, with `retry-after` in seconds.
    RateLimit { retry_after: u32 },
    /// Anthropic's 529 `overloaded_error`; OpenAI's 503.
    Overloaded,
    /// 500.
    ServerError,
    /// The answer's first `after_events` server-sent events (fewer when the answer has no
    /// more, since its last event is never sent), then the connection closed. A call that did
    /// not ask for a stream gets the first half of its JSON answer, then the same close.
    StreamCut { after_events: usize },
    /// 400: the request is `tokens` long, past a context window of `maximum`; `tokens`
    /// defaults to the window plus the request's own estimate (`relay::play`, by the rule
    /// of [`super::estimate`]).
    ContextOverflow { tokens: Option<u64>, maximum: u64 },
}

impl Fault {
    pub fn kind(self) -> FaultKind {
        match self {
            Fault::RateLimit { .. } => FaultKind::RateLimit,
            Fault::Overloaded => FaultKind::Overloaded,
            Fault::ServerError => FaultKind::ServerError,
            Fault::StreamCut { .. } => FaultKind::StreamCut,
            Fault::ContextOverflow { .. } => FaultKind::ContextOverflow,
        }
    }

    /// The seconds a rate limit asks the client to wait; `None` for any other fault.
    pub fn retry_after(self) -> Option<u32> {
        match self {
            Fault::RateLimit { retry_after } => Some(retry_after),
            _ => None,
        }
    }

    /// Reads a script entry that holds `fault`. Members the fault does not take are refused,
    /// so a misspelt `retry_after` is a usage error, not a silent default.
    pub(crate) fn from_entry(entry: &Map<String, Value>) -> Result<Fault, FaultError> {
        let name = entry.get("fault").and_then(Value::as_str).ok_or(FaultError::NotAString)?;
        let (fault, takes): (Fault, &[&str]) = match name {
            "rate_limit" => {
                (Fault::RateLimit { retry_after: bounded(entry, "retry_after", 1, u64::from(MAX_RETRY_AFTER))? as u32 }, &["retry_after"])
            }
            "overloaded" => (Fault::Overloaded, &[]),
            "server_error" => (Fault::ServerError, &[]),
            "stream_cut" => (Fault::StreamCut { after_events: bounded(entry, "after_events", 2, 1_000)? as usize }, &["after_events"]),
            "context_overflow" => {
                let maximum = bounded(entry, "maximum", DEFAULT_MAXIMUM, u64::from(u32::MAX))?.max(1);
                let tokens = match entry.get("tokens") {
                    None => None,
                    Some(_) => Some(bounded(entry, "tokens", 0, u64::from(u32::MAX))?),
                };
                if tokens.is_some_and(|t| t <= maximum) {
                    return Err(FaultError::NotTooLong { maximum });
                }
                (Fault::ContextOverflow { tokens, maximum }, &["tokens", "maximum"])
            }
            other => return Err(FaultError::Unknown { name: other.to_owned() }),
        };
        if let Some(extra) = entry.keys().find(|k| k.as_str() != "fault" && !takes.contains(&k.as_str())) {
            return Err(FaultError::Extra { fault: name.to_owned(), member: extra.clone() });
        }
        Ok(fault)
    }
}

/// Why a script entry that holds `fault` is not a fault the relay can play.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FaultError {
    #[error("`fault` is not a string")]
    NotAString,
    #[error("unknown fault `{name}`: one of rate_limit, overloaded, server_error, stream_cut, context_overflow")]
    Unknown { name: String },
    #[error("`{key}` is not an integer from 0 to {max}")]
    OutOfBounds { key: String, max: u64 },
    #[error("`tokens` must be more than `maximum` ({maximum}): the prompt is too long")]
    NotTooLong { maximum: u64 },
    #[error("the `{fault}` fault takes no `{member}`")]
    Extra { fault: String, member: String },
}

/// An entry's integer member `key`, `default` when absent, refused past `max`.
fn bounded(entry: &Map<String, Value>, key: &str, default: u64, max: u64) -> Result<u64, FaultError> {
    match entry.get(key) {
        None => Ok(default),
        Some(value) => match value.as_u64() {
            Some(n) if n <= max => Ok(n),
            _ => Err(FaultError::OutOfBounds { key: key.to_owned(), max }),
        },
    }
}

/// The faults the built-in `faults` script plays, one call each: every transient fault, each
/// followed by a normal answer (`None`), so a harness that retries each one reaches its reply
/// token on the retry.
pub const SEQUENCE: [Option<Fault>; 8] = [
    Some(Fault::RateLimit { retry_after: 1 }),
    None,
    Some(Fault::Overloaded),
    None,
    Some(Fault::ServerError),
    None,
    Some(Fault::StreamCut { after_events: 2 }),
    None,
];

/// How much of a rendered answer a stream cut sends: the first `after_events` events of an
/// event stream (never its last, so the stream cannot end cleanly) and how many that is, or
/// the first half of a JSON answer (no count).
pub fn cut(answer: &str, stream: bool, after_events: usize) -> (String, Option<usize>) {
    if !stream {
        return (checkfu_wire::text::head(answer, answer.len() / 2).to_owned(), None);
    }
    let events = sse_events(answer);
    let whole = events.iter().filter(|event| event.ends_with("\n\n")).count();
    let sent = after_events.min(whole.saturating_sub(1));
    let upto: usize = events[..sent].iter().map(|e| e.len()).sum();
    (answer[..upto].to_owned(), Some(sent))
}

/// An event stream's events, in order, each with the blank line that ends it (a last part
/// without one is an event too). Every event ends with a blank line, and the data of none
/// holds one (JSON escapes its newlines), so the blank lines are where events end. A cut
/// ([`cut`]) and a paced answer ([`super::pace`]) both split a stream here.
pub fn sse_events(stream: &str) -> Vec<&str> {
    stream.split_inclusive("\n\n").collect()
}

/// Why a cut answer's body ended: the script asked for it. hyper then closes the connection
/// without the last chunk of the chunked encoding.
#[derive(Debug, thiserror::Error)]
#[error("the model script cut this answer")]
pub struct CutError;

/// An answer's body: whole (its length sent as `content-length`), or cut (chunked, its part
/// sent, then after [`CUT_PAUSE`] the connection closed).
pub enum AnswerBody {
    Whole(Option<Bytes>),
    Cut {
        sent: Option<Bytes>,
        pause: Option<Pin<Box<tokio::time::Sleep>>>,
    },
    /// Sent one event at a time ([`super::pace`]).
    Paced(Box<super::pace::PacedBody>),
}

impl AnswerBody {
    pub fn whole(bytes: impl Into<Bytes>) -> AnswerBody {
        AnswerBody::Whole(Some(bytes.into()))
    }

    pub fn cut(part: String) -> AnswerBody {
        AnswerBody::Cut { sent: Some(Bytes::from(part)).filter(|b| !b.is_empty()), pause: None }
    }
}

impl Body for AnswerBody {
    type Data = Bytes;
    type Error = CutError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, CutError>>> {
        match self.get_mut() {
            AnswerBody::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            AnswerBody::Cut { sent, pause } => {
                if let Some(part) = sent.take() {
                    return Poll::Ready(Some(Ok(Frame::data(part))));
                }
                // Made here, inside the runtime that polls the body, and polled until due.
                let pause = pause.get_or_insert_with(|| Box::pin(tokio::time::sleep(CUT_PAUSE)));
                match pause.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(CutError))),
                    Poll::Pending => Poll::Pending,
                }
            }
            AnswerBody::Paced(body) => Pin::new(body.as_mut()).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            AnswerBody::Paced(body) => body.is_end_stream(),
            other => matches!(other, AnswerBody::Whole(None)),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            AnswerBody::Whole(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            AnswerBody::Whole(None) => SizeHint::with_exact(0),
            // Unknown: hyper sends it chunked, so closing early is visibly incomplete.
            AnswerBody::Cut { .. } => SizeHint::default(),
            AnswerBody::Paced(body) => body.size_hint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(value: Value) -> Result<Fault, FaultError> {
        Fault::from_entry(value.as_object().expect("object"))
    }

    #[test]
    fn entries_read_with_their_defaults_and_bounds() {
        assert_eq!(entry(json!({"fault": "rate_limit"})), Ok(Fault::RateLimit { retry_after: 1 }));
        assert_eq!(entry(json!({"fault": "rate_limit", "retry_after": 7})), Ok(Fault::RateLimit { retry_after: 7 }));
        assert_eq!(entry(json!({"fault": "stream_cut"})), Ok(Fault::StreamCut { after_events: 2 }));
        assert_eq!(entry(json!({"fault": "context_overflow"})), Ok(Fault::ContextOverflow { tokens: None, maximum: DEFAULT_MAXIMUM }));
        assert!(entry(json!({"fault": "rate_limit", "retry_after": 601})).is_err());
        assert!(entry(json!({"fault": "rate_limit", "retry_after": -1})).is_err());
        assert!(entry(json!({"fault": "rate_limit", "retry-after": 1})).unwrap_err().to_string().contains("retry-after"));
        assert!(entry(json!({"fault": "context_overflow", "tokens": 10, "maximum": 10})).is_err());
        assert!(entry(json!({"fault": "teapot"})).unwrap_err().to_string().contains("unknown fault"));
        assert_eq!(serde_json::to_value(FaultKind::ContextOverflow).expect("JSON"), json!("context_overflow"));
    }

    #[test]
    fn a_cut_never_sends_the_last_event() {
        let stream = "data: 1\n\ndata: 2\n\ndata: [DONE]\n\n";
        assert_eq!(cut(stream, true, 1), ("data: 1\n\n".to_owned(), Some(1)));
        assert_eq!(cut(stream, true, 99), ("data: 1\n\ndata: 2\n\n".to_owned(), Some(2)));
        assert_eq!(cut(stream, true, 0), (String::new(), Some(0)));
        assert_eq!(cut("{\"a\": 1}", false, 2), ("{\"a\"".to_owned(), None));
    }
}
