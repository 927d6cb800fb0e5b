//! The runtime wire decoder: reads a raw JSON-RPC message, dispatches it through the
//! generated tables and applies the contract's governance rules.
//!
//! The ACP grammar is closed (unknown methods, `sessionUpdate` kinds and stop reasons are
//! rejected, requests need an `id`, notifications take none); extension methods decode
//! their params and results through generated types; `_meta` members follow their slot's
//! class (see `meta`). A `Decoder` remembers the requests it has seen, both ways, so that a
//! response is read as the answer to its request (`correlation`), and hands back the data
//! its caller attached to that request; without the request, the shape of an `initialize`
//! or `session/prompt` result identifies it. Untrusted input never panics: every failure
//! is a typed `DecodeError` in the report.

mod correlation;
mod envelope;
mod meta;
pub mod report;
mod skip;
pub mod tables;

use bumpalo::Bump;
use serde::de::DeserializeSeed;

use crate::exact::Json;

pub use correlation::MAX_PENDING;
use correlation::{Carried, Correlation, Moves};
pub use report::{DecodeError, ForeignExtension, IgnoredFidelity, Kind, Report, SlotReport, SlotStatus, WireDirection};
pub use tables::Protocol;
use tables::{MethodDecoder, Part, Side};

/// An arena that grew past this while decoding one message is replaced, not reset, when
/// the next message comes: one huge line must not pin its memory for the whole stream.
const ARENA_KEPT: usize = 1 << 20;

/// A stateful decoder for one stream of messages, and the one owner of its request/response
/// correlation in both directions. `T` is what a caller attaches to a request it wants
/// back with the response ([`Decoder::read`]); [`Decoder::new`] attaches nothing.
pub struct Decoder<T = ()> {
    /// The decoding core. It is not generic, so it is compiled once, here, and a plain
    /// [`Decoder::decode`] runs no code of a caller's `T`.
    stream: Stream,
    /// The callers' data of pending requests, by the serial the core gives each request.
    carried: Carried<T>,
    /// Where the trees of the message being decoded live; reset for every message.
    arena: Bump,
}

/// What [`Decoder::read`] gives back for one message.
#[derive(Debug)]
pub struct Decoded<'d, T> {
    /// The verdict, as [`Decoder::decode`] gives it; for a response, `method` names the
    /// request it answers.
    pub report: Report,
    /// For a response: the data the caller attached to the request it answers.
    pub answered: Option<T>,
    /// The whole message as the decoder read it (strings borrow the line, containers the
    /// decoder's arena), for an accepted message; `None` for a rejected one.
    pub message: Option<Json<'d>>,
}

/// What the decoder remembers between messages, and what one call hands in and out.
#[derive(Default)]
struct Stream {
    correlation: Correlation,
    /// The direction of the message being decoded, when the caller knows it.
    hint: Option<WireDirection>,
    /// Read every body whole, so the message's tree can be handed out ([`Decoder::read`]).
    keep: bool,
    /// What the message being decoded did to the pending requests.
    moves: Moves,
    /// The ACP version whose grammar the stream is read in.
    protocol: tables::Protocol,
    /// Whether an `initialize` answer naming an older version this build reads switches the
    /// stream to that version ([`Decoder::negotiating`]).
    negotiating: bool,
}

/// The prefix ACP reserves for extension methods.
const EXTENSION_PREFIX: char = '_';

fn expected_direction(side: Side) -> Option<WireDirection> {
    match side {
        Side::Agent => Some(WireDirection::RunnerToAgent),
        Side::Client => Some(WireDirection::AgentToRunner),
        Side::Protocol => None,
    }
}

/// The whole message as a borrowed tree, for the generated checks of a family whose schema
/// describes whole messages, and for a body whose method or id came after it.
fn message_json<'a>(text: &'a str, arena: &'a Bump) -> Result<Json<'a>, DecodeError> {
    Json::parse(text, arena).map_err(json_error)
}

/// `body`'s tree from the envelope pass, or `name` of the message parsed again.
fn body_tree<'a>(body: &mut envelope::Body<'a>, text: &'a str, arena: &'a Bump, name: &str) -> Result<Json<'a>, DecodeError> {
    if let Some(tree) = body.tree.take() {
        return Ok(tree);
    }
    Ok(message_json(text, arena)?.get(name).cloned().unwrap_or(Json::Null))
}

/// The `_meta` policy on `meta`, with `protocol`'s slot carriers.
fn apply_meta(meta: Option<&envelope::Meta>, protocol: Protocol, method: &str, at: Part, report: &mut Report) -> Result<(), DecodeError> {
    match meta {
        Some(members) => meta::apply(members, method, at, protocol.grammar().slot_carriers, report),
        None => Ok(()),
    }
}

/// What the envelope pass should read whole: the params of a method with a typed params
/// check, the result answering a request with a typed result check.
impl envelope::Trees for Stream {
    type Method = &'static MethodDecoder;
    fn method(&self, name: &str) -> Option<&'static MethodDecoder> {
        (self.protocol.grammar().method)(name)
    }
    fn params(&self, method: &'static MethodDecoder) -> bool {
        method.params_check.is_some() && method.envelope_check.is_none()
    }
    fn result(&self, id: &[u8]) -> bool {
        let typed = |asked: WireDirection| {
            self.correlation.method(asked, id).is_some_and(|m| m.result_check.is_some() && m.envelope_check.is_none())
        };
        match self.hint {
            Some(direction) => typed(direction.reverse()),
            None => typed(WireDirection::RunnerToAgent) || typed(WireDirection::AgentToRunner),
        }
    }
    fn whole(&self) -> bool {
        self.keep
    }
}

impl Default for Decoder {
    fn default() -> Self {
        Decoder::new()
    }
}

impl Decoder {
    /// A decoder whose callers attach no data to their requests.
    pub fn new() -> Self {
        Decoder::carrying()
    }
}

impl<T> Decoder<T> {
    /// A decoder that keeps a caller's `T` with each request handed to [`Decoder::read`].
    pub fn carrying() -> Self {
        // Room for the trees of a typical message, so a short stream allocates once.
        Decoder { stream: Stream::default(), carried: Carried::default(), arena: Bump::with_capacity(4096) }
    }

    /// The same decoder reading `protocol`'s grammar (ACP v1 unless told).
    ///
    /// ```
    /// # #[cfg(feature = "acp-v2")] {
    /// use checkfu_wire::decode::{Decoder, Protocol, WireDirection};
    ///
    /// let mut decoder = Decoder::new().reading(Protocol::AcpV2);
    /// let answer = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,"info":{"name":"a","version":"1"},"capabilities":{}}}"#;
    /// assert!(decoder.decode(answer, Some(WireDirection::AgentToRunner)).accepted);
    /// # }
    /// ```
    pub fn reading(mut self, protocol: Protocol) -> Self {
        self.stream.protocol = protocol;
        self
    }

    /// The same decoder as a client that negotiates reads: an `initialize` answer naming an
    /// older ACP version this build reads is the agent's choice of that version (ACP lets an
    /// agent answer with a version below the one asked), read in its grammar, and the rest
    /// of the stream with it. Without it (a capture reader), the version is the stream's.
    pub fn negotiating(mut self) -> Self {
        self.stream.negotiating = true;
        self
    }

    /// Reads the rest of the stream in `protocol`'s grammar (a client that asks again in
    /// another version after the agent named the ones it speaks).
    pub fn switch_to(&mut self, protocol: Protocol) {
        self.stream.protocol = protocol;
    }

    /// The ACP version the stream is read in now.
    pub fn protocol(&self) -> Protocol {
        self.stream.protocol
    }

    /// Decodes one message. `hint` is the direction when the caller knows it.
    ///
    /// One decoder per session: it remembers the requests it saw, so that a response is
    /// read as the answer to its request.
    ///
    /// ```
    /// use checkfu_wire::decode::{DecodeError, Decoder, Kind, WireDirection};
    ///
    /// let mut decoder = Decoder::new();
    /// let request = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    /// let report = decoder.decode(request, Some(WireDirection::RunnerToAgent));
    /// assert!(report.accepted);
    /// assert_eq!((report.kind, report.method), (Some(Kind::Request), Some("initialize")));
    ///
    /// // The answer is read against the request it answers, its `_meta` slot decoded.
    /// let response = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{},"_meta":{"checkfu.capabilities":{"subagents":"observed"}}}}"#;
    /// let report = decoder.decode(response, Some(WireDirection::AgentToRunner));
    /// assert!(report.accepted);
    /// assert_eq!(report.method, Some("initialize"));
    /// assert_eq!(report.slots[0].key.as_ref(), "checkfu.capabilities");
    ///
    /// // The ACP grammar is closed: an unknown update kind is a typed rejection.
    /// let update = br#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"telepathy"}}}"#;
    /// let report = decoder.decode(update, Some(WireDirection::AgentToRunner));
    /// assert!(!report.accepted);
    /// let error = report.error.expect("rejected with an error");
    /// assert_eq!(error.error, DecodeError::UnknownUpdateKind { kind: "telepathy".into() });
    /// ```
    pub fn decode(&mut self, bytes: &[u8], hint: Option<WireDirection>) -> Report {
        let mut report = Report { direction: hint, ..Report::default() };
        self.fresh_arena();
        self.stream.decode(&self.arena, bytes, hint, false, &mut report);
        // A plain decode carries no data: a request it remembers gets none, and the data of
        // a request it answers is dropped.
        self.carried.settle(&self.stream.moves, None);
        report
    }

    /// Decodes one message as [`Decoder::decode`] does, and hands back what a caller that
    /// correlates needs: with a request, `data` is kept until its response is read; with
    /// a response, the data of the request it answers comes back in
    /// [`Decoded::answered`], whichever way the request flowed. The message's own tree
    /// comes back too ([`Decoded::message`]), so the caller reads its members without
    /// parsing the line again. `data` offered with anything but a request the decoder
    /// accepts is dropped.
    ///
    /// ```
    /// use checkfu_wire::decode::{Decoder, WireDirection};
    ///
    /// let mut decoder = Decoder::<&str>::carrying();
    /// let request = br#"{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    /// decoder.read(request, Some(WireDirection::RunnerToAgent), Some("handshake"));
    ///
    /// let response = br#"{"jsonrpc":"2.0","id":7.0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#;
    /// let decoded = decoder.read(response, Some(WireDirection::AgentToRunner), None);
    /// assert_eq!((decoded.report.method, decoded.answered), (Some("initialize"), Some("handshake")));
    /// let message = decoded.message.expect("accepted");
    /// assert_eq!(message.get("result").and_then(|r| r.get("protocolVersion")).map(|v| v.to_value()), Some(serde_json::Value::from(1)));
    /// ```
    pub fn read<'d>(&'d mut self, bytes: &'d [u8], hint: Option<WireDirection>, data: Option<T>) -> Decoded<'d, T> {
        let mut report = Report { direction: hint, ..Report::default() };
        self.fresh_arena();
        let message = self.stream.decode(&self.arena, bytes, hint, true, &mut report);
        let answered = self.carried.settle(&self.stream.moves, data);
        Decoded { report, answered, message }
    }

    /// Empties the arena for the next message, or replaces it when one huge message grew
    /// it past [`ARENA_KEPT`].
    fn fresh_arena(&mut self) {
        if self.arena.allocated_bytes() > ARENA_KEPT {
            self.arena = Bump::new();
        } else {
            self.arena.reset();
        }
    }
}

impl Stream {
    /// One message through the policy, into `report`; with `keep`, its tree as well when
    /// it is accepted. What it did to the pending requests is left in `self.moves`.
    fn decode<'a>(
        &mut self,
        arena: &'a Bump,
        bytes: &'a [u8],
        hint: Option<WireDirection>,
        keep: bool,
        report: &mut Report,
    ) -> Option<Json<'a>> {
        self.keep = keep;
        self.moves = Moves::default();
        let mut whole = None;
        let (outcome, dropped) = crate::exact::leniency::reading(|| self.run(arena, bytes, hint, report, &mut whole));
        match outcome {
            Ok(()) => report.accepted = true,
            Err(e) => report.reject(e),
        }
        for e in dropped {
            report.diagnostics.push(format!("lenient ACP member dropped to its default (marked x-deserialize-*): {e}"));
        }
        if !keep || !report.accepted {
            return None;
        }
        if whole.is_none() {
            // The envelope pass left the message to serde_json's path (text the direct
            // reader does not take, such as an object of more than 32 members); the tree
            // is built from the text once more, for those rare lines only.
            whole = std::str::from_utf8(bytes).ok().and_then(|text| Json::parse(text, arena).ok());
        }
        whole
    }

    /// Decodes one message into `report`; `whole` gets the message's tree when the direct
    /// reader built one (the caller asks for it with `keep`).
    fn run<'a>(
        &mut self,
        arena: &'a Bump,
        bytes: &'a [u8],
        hint: Option<WireDirection>,
        report: &mut Report,
        whole: &mut Option<Json<'a>>,
    ) -> Result<(), DecodeError> {
        let text = std::str::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8 { at: e.valid_up_to() })?;
        if text.starts_with('\u{feff}') {
            return Err(DecodeError::ByteOrderMark);
        }
        let first = text.bytes().find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
        if first != Some(b'{') {
            let mut de = serde_json::Deserializer::from_str(text);
            return Err(match skip::Skip.deserialize(&mut de).and_then(|()| de.end()) {
                Ok(()) => DecodeError::NotAnObject,
                Err(e) => json_error(e),
            });
        }
        // Syntax errors are not JSON; a data error is JSON of the wrong envelope shape (an
        // unknown member, a member of the wrong type, a duplicate).
        let mut parts = envelope::Parts::default();
        self.hint = hint;
        if !parts.read_direct(text, arena, self) {
            // Anything the direct reader is unsure of, read as before (and its error).
            parts = envelope::Parts::default();
            parts.read(text, arena, self).map_err(json_error)?;
        }
        // Only the parts the policy reads: the update member of a `session/update`'s
        // params and a response's stop reason. Completing both bodies of every message
        // searched members nothing reads, with a mispredicted branch for most of them.
        let grammar = self.protocol.grammar();
        if parts.known.is_some_and(|m| m.name == grammar.update_method) {
            parts.params.complete_from_tree(arena);
        }
        if parts.method.is_none() {
            parts.result.complete_from_tree(arena);
        }
        *whole = parts.whole.take();
        if let Some(name) = parts.method {
            let Some(method) = parts.known else {
                // ACP reserves `_`-prefixed names for extensions: well-formed, but not ours.
                if name.starts_with(EXTENSION_PREFIX) {
                    check_jsonrpc(parts.jsonrpc)?;
                    return self.foreign(&mut parts, name, hint, report);
                }
                return Err(DecodeError::UnknownMethod { method: name.to_string() });
            };
            report.method = Some(method.name);
            report.source = Some(method.source);
            if let Some(whole) = method.envelope_check {
                return family_message(text, arena, &parts, method, whole, report);
            }
            check_jsonrpc(parts.jsonrpc)?;
            if parts.result.present || parts.error.is_some() {
                return Err(DecodeError::BadEnvelope { message: "a request carries no `result` or `error`".into() });
            }
            return self.request(text, arena, &mut parts, method, hint, report);
        }
        check_jsonrpc(parts.jsonrpc)?;
        self.response(text, arena, &mut parts, hint, report)
    }

    fn request<'a>(
        &mut self,
        text: &'a str,
        arena: &'a Bump,
        parts: &mut envelope::Parts<'a, &'static MethodDecoder>,
        method: &'static MethodDecoder,
        hint: Option<WireDirection>,
        report: &mut Report,
    ) -> Result<(), DecodeError> {
        let name = method.name;
        match (method.notification, parts.id.is_some()) {
            (true, true) => return Err(DecodeError::UnexpectedId { method: name.into() }),
            (false, false) => return Err(DecodeError::MissingId { method: name.into() }),
            (true, false) => report.kind = Some(Kind::Notification),
            (false, true) => report.kind = Some(Kind::Request),
        }
        let direction = expected_direction(method.side);
        if let (Some(expected), Some(stated)) = (direction, hint) {
            if expected != stated {
                return Err(DecodeError::WrongDirection { method: name.into(), direction: stated });
            }
        }
        report.direction = direction.or(hint);
        let mut fidelity = None;
        let grammar = self.protocol.grammar();
        // The closed vocabulary first, so an unknown kind is reported as such rather than
        // as params that match none of the update shapes.
        if name == grammar.update_method {
            let member = Some(&parts.params.update).filter(|u| u.is_object).ok_or_else(|| DecodeError::InvalidParams {
                method: name.into(),
                pointer: "/update".into(),
                message: "expected an object (the session update)".into(),
            })?;
            let kind = member.session_update.unwrap_or_default();
            if grammar.closed_update_kinds && !grammar.session_update_kinds.contains(&kind) {
                return Err(DecodeError::UnknownUpdateKind { kind: kind.to_string() });
            }
            fidelity = grammar.fidelity_update_kinds.iter().find(|k| **k == kind).copied();
        }
        if let Some(check) = method.params_check {
            let checked = check(&body_tree(&mut parts.params, text, arena, "params")?).map_err(|e| DecodeError::InvalidParams {
                method: name.into(),
                pointer: e.pointer(),
                message: e.message.to_string(),
            });
            // Only a failure inside the update itself: a broken `sessionId` or envelope is
            // ACP's own shape, which stays fail-closed whatever the update carries.
            let inside_update = |error: &DecodeError| match error {
                // `/update` itself is a member the update lacks (a missing `size`).
                DecodeError::InvalidParams { pointer, .. } => {
                    pointer == "/update" || pointer.starts_with("/update/") && !pointer.starts_with("/update/sessionUpdate")
                }
                _ => false,
            };
            match (checked, fidelity) {
                (Ok(()), _) => {}
                // An update that carries only optional fidelity and fails its schema is
                // ignored, not rejected: fidelity is fail-open, and the catalog names which
                // kinds are fidelity. Its `_meta` is not read either: nothing of it is used.
                (Err(error), Some(kind)) if inside_update(&error) => {
                    report.diagnostics.push(format!("ignored a malformed `{kind}` update (optional fidelity): {error}"));
                    report.ignored = Some(IgnoredFidelity { kind, reason: error.to_string() });
                    return Ok(());
                }
                (Err(error), _) => return Err(error),
            }
        }
        let params = &parts.params;
        apply_meta(params.meta.as_ref(), self.protocol, name, Part::Request, report)?;
        if name == grammar.update_method {
            apply_meta(params.update.meta.as_ref(), self.protocol, name, Part::Member, report)?;
        }
        if let (Some(id), false) = (parts.id.take(), method.notification) {
            self.remember(id, Some(method), report);
        }
        Ok(())
    }

    /// Remembers a request for its response, under the direction it flowed; its serial
    /// goes into `self.moves`, where the caller's data meets it ([`Carried::settle`]).
    fn remember(&mut self, id: skip::IdKey, method: Option<&'static MethodDecoder>, report: &mut Report) {
        let direction = report.direction.unwrap_or(WireDirection::RunnerToAgent);
        self.correlation.remember(direction, id, method, &mut self.moves, report);
    }

    /// A `_`-prefixed method no table knows: another vendor's extension. A request is
    /// answered by the runner with "Method not found" (-32601); a notification is ignored.
    fn foreign(
        &mut self,
        parts: &mut envelope::Parts<'_, &'static MethodDecoder>,
        name: &str,
        hint: Option<WireDirection>,
        report: &mut Report,
    ) -> Result<(), DecodeError> {
        if parts.result.present || parts.error.is_some() {
            return Err(DecodeError::BadEnvelope { message: "a request carries no `result` or `error`".into() });
        }
        report.direction = hint;
        report.extension = Some(ForeignExtension { method: name.to_string() });
        match parts.id.take() {
            Some(id) => {
                report.kind = Some(Kind::Request);
                report.diagnostics.push(format!("unsupported extension request `{name}`: the runner answers -32601 (Method not found)"));
                self.remember(id, None, report);
            }
            None => {
                report.kind = Some(Kind::Notification);
                report.diagnostics.push(format!("unsupported extension notification `{name}` ignored"));
            }
        }
        Ok(())
    }

    fn response<'a>(
        &mut self,
        text: &'a str,
        arena: &'a Bump,
        parts: &mut envelope::Parts<'a, &'static MethodDecoder>,
        hint: Option<WireDirection>,
        report: &mut Report,
    ) -> Result<(), DecodeError> {
        let id = parts
            .id
            .take()
            .ok_or_else(|| DecodeError::BadEnvelope { message: "a message with no `method` is a response and needs an `id`".into() })?;
        match (parts.result.present, parts.error) {
            (true, Some(_)) => return Err(DecodeError::BadEnvelope { message: "a response carries `result` or `error`, not both".into() }),
            (false, None) => {
                return Err(DecodeError::BadEnvelope {
                    message: "a message needs `method` (request) or `result`/`error` (response)".into(),
                })
            }
            _ => {}
        }
        // Whether the result has the shape of `m`'s. Every ACP method has a typed result
        // check, and the envelope pass reads the result whole whenever a candidate has one.
        let tree = &parts.result.tree;
        let fits = |m: &'static MethodDecoder| match (m.result_check, tree) {
            (Some(check), Some(tree)) => check(tree).is_ok(),
            _ => false,
        };
        let answered = self.correlation.answer(id, hint, fits, report).map(|(pending, asked)| {
            self.moves.answered = Some(pending.serial);
            (pending.method, asked)
        });
        if let Some((method, asked)) = answered {
            report.direction = Some(asked.reverse());
            if method.is_none() {
                report.kind = Some(if parts.error.is_some() { Kind::ErrorResponse } else { Kind::Response });
                report.diagnostics.push("answer to an unsupported extension request; read as untyped".into());
                return Ok(());
            }
        }
        let answered = answered.and_then(|(m, asked)| m.map(|m| (m, asked)));
        if let Some(error) = &parts.error {
            let object = error.object().map_err(|e| DecodeError::BadEnvelope {
                message: format!("`error` must have an integer `code` and a string `message`: {e}"),
            })?;
            report.diagnostics.push(format!("error response {}: {}", object.code, object.message));
            report.kind = Some(Kind::ErrorResponse);
            report.method = answered.map(|(m, _)| m.name);
            return Ok(());
        }
        report.kind = Some(Kind::Response);
        let body = &mut parts.result;
        let grammar = self.protocol.grammar();
        // Without the request, the closed fields of the two results that have them say
        // what was answered.
        let method = answered.map(|(m, _)| m).or_else(|| {
            if body.protocol_version_text().is_some() {
                (grammar.method)(grammar.version_method)
            } else if body.stop_reason.is_some() {
                grammar.prompt_method.and_then(grammar.method)
            } else {
                None
            }
        });
        let Some(method) = method else {
            report.diagnostics.push("response to a request this stream did not show; read as untyped".into());
            return apply_meta(body.meta.as_ref(), self.protocol, "", Part::Response, report);
        };
        report.method = Some(method.name);
        report.source = Some(method.source);
        if report.direction.is_none() {
            report.direction = expected_direction(method.side).map(WireDirection::reverse).or(hint);
        }
        // The closed fields first, so their errors keep their own codes.
        let mut method = method;
        if method.name == grammar.version_method {
            let found = body.protocol_version_text().unwrap_or_else(|| "(missing)".into());
            let version = found.parse::<u64>().ok();
            if version != Some(grammar.protocol_version) {
                let older = version.and_then(|v| self.protocol.older(v)).filter(|_| self.negotiating);
                let Some(older) = older else { return Err(DecodeError::ProtocolVersion { found }) };
                // The agent chose an older version: its answer is that version's, and so is
                // the rest of the stream.
                self.protocol = older;
                let grammar = older.grammar();
                method = (grammar.method)(grammar.version_method).unwrap_or(method);
            }
        }
        if Some(method.name) == grammar.prompt_method {
            let reason = body.stop_reason.unwrap_or("(missing)");
            if !grammar.stop_reasons.contains(&reason) {
                return Err(DecodeError::UnknownStopReason { reason: reason.to_string() });
            }
        }
        if let Some(check) = method.result_check {
            check(&body_tree(body, text, arena, "result")?).map_err(|e| DecodeError::InvalidResult {
                method: method.name.into(),
                pointer: e.pointer(),
                message: e.message.to_string(),
            })?;
        }
        apply_meta(body.meta.as_ref(), self.protocol, method.name, Part::Response, report)
    }
}

/// A message of a family whose schema describes the whole message (khy-os).
fn family_message<'a>(
    text: &'a str,
    arena: &'a Bump,
    parts: &envelope::Parts<&'static MethodDecoder>,
    method: &'static MethodDecoder,
    whole: tables::Check,
    report: &mut Report,
) -> Result<(), DecodeError> {
    let message = message_json(text, arena)?;
    let invalid = |e: crate::exact::Invalid| DecodeError::InvalidParams {
        method: method.name.to_string(),
        pointer: e.pointer(),
        message: e.message.to_string(),
    };
    whole(&message).map_err(invalid)?;
    if let (Some(check), Some(params)) = (method.params_check, message.get("params")) {
        check(params).map_err(|e| invalid(e.at("params")))?;
    }
    let response = parts.result.present || parts.error.is_some();
    report.kind = Some(match (response, parts.id.is_some()) {
        (true, _) if parts.error.is_some() => Kind::ErrorResponse,
        (true, _) => Kind::Response,
        (false, true) => Kind::Request,
        (false, false) => Kind::Notification,
    });
    Ok(())
}

/// Maps a parse error: too deep, not JSON (syntax), or JSON of the wrong envelope shape
/// (an unknown member, a member of the wrong type, a duplicate).
fn json_error(e: serde_json::Error) -> DecodeError {
    let message = e.to_string();
    if message.starts_with(checkfu_wire_safety::RECURSION_LIMIT_MESSAGE) {
        return DecodeError::TooDeep { limit: skip::MAX_DEPTH };
    }
    if let Some(bare) = message.strip_prefix(skip::NOT_JSON) {
        return DecodeError::InvalidJson { message: bare.to_string() };
    }
    match e.classify() {
        serde_json::error::Category::Data => DecodeError::BadEnvelope { message },
        _ => DecodeError::InvalidJson { message },
    }
}

fn check_jsonrpc(version: Option<bool>) -> Result<(), DecodeError> {
    match version {
        Some(true) => Ok(()),
        _ => Err(DecodeError::BadJsonrpc),
    }
}
