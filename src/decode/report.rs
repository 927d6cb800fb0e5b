//! What the decoder says about one message: accepted or the typed error that rejected it,
//! what it was read as, the slots found and the diagnostics of fail-open members.

use std::fmt;

use serde::Serialize;
use smallvec::SmallVec;

use super::tables::SlotClass;

/// Which way a message travels between a harness (agent) and the platform's runner.
/// Captures may spell the runner as what it is on the wire, the ACP client.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireDirection {
    #[serde(alias = "agent_to_client")]
    AgentToRunner,
    #[serde(alias = "client_to_agent")]
    RunnerToAgent,
}

/// The wire's spelling (`agent_to_runner`), the one `--direction`, captures and reports use.
impl fmt::Display for WireDirection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireDirection::AgentToRunner => "agent_to_runner",
            WireDirection::RunnerToAgent => "runner_to_agent",
        })
    }
}

impl WireDirection {
    pub fn reverse(self) -> Self {
        match self {
            WireDirection::AgentToRunner => WireDirection::RunnerToAgent,
            WireDirection::RunnerToAgent => WireDirection::AgentToRunner,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Request,
    Notification,
    Response,
    ErrorResponse,
}

/// What became of one `checkfu.*` member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotStatus {
    /// Decoded by its typed decoder.
    Decoded,
    /// A fidelity member that did not decode: dropped, the run goes on.
    Dropped,
    /// Unknown key, or a known key outside its carrier: ignored.
    Ignored,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SlotReport {
    pub key: std::borrow::Cow<'static, str>,
    /// `None` for keys the catalog does not know.
    pub class: Option<SlotClass>,
    pub status: SlotStatus,
}

/// Why a message was rejected.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub enum DecodeError {
    /// The bytes are not UTF-8.
    InvalidUtf8 { at: usize },
    /// The message opens with a UTF-8 byte-order mark, which JSON text on the wire must
    /// not carry (RFC 8259, section 8.1); named, since a JSON parser reports only that it
    /// expected a value.
    ByteOrderMark,
    /// Nested deeper than the decoder allows.
    TooDeep { limit: usize },
    /// Not a JSON value, or not a JSON-RPC envelope (unknown member, wrong member type).
    InvalidJson { message: String },
    /// The message is not an object.
    NotAnObject,
    /// `jsonrpc` is missing or not `"2.0"`.
    BadJsonrpc,
    /// The envelope's members do not form a request, notification or response.
    BadEnvelope { message: String },
    /// A method the ACP grammar and the extension tables do not know.
    UnknownMethod { method: String },
    /// A request method sent without an `id`.
    MissingId { method: String },
    /// A notification sent with an `id`.
    UnexpectedId { method: String },
    /// The method does not flow in the stated direction.
    WrongDirection { method: String, direction: WireDirection },
    /// Typed params of an extension method did not decode.
    InvalidParams { method: String, pointer: String, message: String },
    /// Typed result of an extension method did not decode.
    InvalidResult { method: String, pointer: String, message: String },
    /// A `sessionUpdate` kind outside the ACP grammar.
    UnknownUpdateKind { kind: String },
    /// A stop reason outside the ACP grammar.
    UnknownStopReason { reason: String },
    /// `initialize` with another protocol version.
    ProtocolVersion { found: String },
    /// A malformed `checkfu.capabilities` declaration: the handshake is rejected.
    InvalidDeclaration { slot: String, pointer: String, message: String },
    /// A malformed or unsupported authority member: rejected before model work.
    AuthorityRejected { slot: String, pointer: String, message: String },
    /// A slot used without the slot value it requires.
    MissingRequirement { slot: String, requires: String, value: String },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use DecodeError::*;
        match self {
            InvalidUtf8 { at } => write!(f, "invalid UTF-8 at byte {at}"),
            ByteOrderMark => write!(f, "the message starts with a UTF-8 byte-order mark (EF BB BF); JSON text on the wire carries none"),
            TooDeep { limit } => write!(f, "nested deeper than {limit} levels"),
            InvalidJson { message } => write!(f, "not a JSON-RPC message: {message}"),
            NotAnObject => write!(f, "a JSON-RPC message is an object"),
            BadJsonrpc => write!(f, "`jsonrpc` must be \"2.0\""),
            BadEnvelope { message } => write!(f, "{message}"),
            UnknownMethod { method } => write!(f, "unknown method `{method}`"),
            MissingId { method } => write!(f, "`{method}` is a request and needs an `id`"),
            UnexpectedId { method } => write!(f, "`{method}` is a notification and takes no `id`"),
            WrongDirection { method, direction } => write!(f, "`{method}` does not flow {direction}"),
            InvalidParams { method, pointer, message } => write!(f, "params of `{method}` at `{pointer}`: {message}"),
            InvalidResult { method, pointer, message } => write!(f, "result of `{method}` at `{pointer}`: {message}"),
            UnknownUpdateKind { kind } => write!(f, "unknown sessionUpdate kind `{kind}`"),
            UnknownStopReason { reason } => write!(f, "unknown stop reason `{reason}`"),
            ProtocolVersion { found } => write!(f, "unsupported protocol version {found}"),
            InvalidDeclaration { slot, pointer, message } => {
                write!(f, "declaration `{slot}` rejected at `{pointer}`: {message}")
            }
            AuthorityRejected { slot, pointer, message } => {
                write!(f, "authority member `{slot}` rejected at `{pointer}`: {message}")
            }
            MissingRequirement { slot, requires, value } => {
                write!(f, "`{slot}` is legal only with `{requires}` = \"{value}\"")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

/// The decoder's verdict on one message.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub accepted: bool,
    pub kind: Option<Kind>,
    /// The method, or for a response the method of the request it answers (when known).
    pub method: Option<&'static str>,
    /// Which table the method came from: `acp`, `checkfu`, `goose`, `khy-os`.
    pub source: Option<&'static str>,
    pub direction: Option<WireDirection>,
    /// One inline: most messages carry at most one `checkfu.*` member, and an allocation
    /// per message that has one was a measurable share of decoding it; more inline would
    /// grow the report past what returning it copies without a `memcpy` call (2% of a
    /// turn), for the one `session/new` that carries several.
    pub slots: SmallVec<[SlotReport; 1]>,
    pub diagnostics: Vec<String>,
    /// Set for another vendor's extension method (a `_` prefix no table knows): well-formed
    /// ACP the platform does not support.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extension: Option<ForeignExtension>,
    /// Boxed: rejections are rare, and every accepted message would otherwise carry (and
    /// move) room for the largest error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<ReportedError>>,
    /// Set for a harness-to-client update of an optional-fidelity kind that failed its
    /// schema: accepted as a message, its content ignored (a consumer must not read it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignored: Option<IgnoredFidelity>,
}

/// A fidelity-only update the decoder ignored, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IgnoredFidelity {
    /// Its `sessionUpdate` kind, one of the catalog's optional-fidelity kinds.
    pub kind: &'static str,
    /// The schema failure, in the decoder's words.
    pub reason: String,
}

/// An extension method the tables do not know, and what the runner does about it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ForeignExtension {
    pub method: String,
}

/// An error as the report prints it: the typed error plus its sentence.
#[derive(Clone, Debug, Serialize)]
pub struct ReportedError {
    #[serde(flatten)]
    pub error: DecodeError,
    pub message: String,
}

impl Report {
    pub fn reject(&mut self, error: DecodeError) {
        self.accepted = false;
        self.error = Some(Box::new(ReportedError { message: error.to_string(), error }));
    }
}
