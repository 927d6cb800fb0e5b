//! Request/response correlation, both ways: the one record of the requests a stream has
//! shown and not yet seen answered, each with the data its caller attached.
//!
//! Both sides of an ACP stream number their requests from 0, so an id alone does not say
//! which request a response answers: a response answers only a request that flowed the
//! other way. The decoder reads every message of the stream, so it is the one place that
//! sees both directions; a caller that needs its own bookkeeping per request (the
//! session's request id, a step to resume) hands it to the decoder with the request and
//! gets it back with the response, as `lsp-server`'s `ReqQueue` keeps a caller's data,
//! instead of keeping a second map keyed by an id it would have to read again.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use super::report::{Report, WireDirection};
use super::skip::IdKey;
use super::tables::MethodDecoder;

/// Requests remembered for their responses; beyond this a hostile stream of unanswered
/// requests would only grow memory, so older ones are forgotten.
pub const MAX_PENDING: usize = 65_536;

/// A request's serial number in its stream: what ties the caller's data ([`Carried`]) to
/// the request the decoding core remembers, so that the core itself carries no data.
pub(super) type Serial = u64;

/// A request awaiting its response: what it asked (a known method, or a foreign
/// extension method the tables do not type) and its serial, which also breaks ties
/// between the two directions (the more recent request has the larger one).
#[derive(Clone, Copy)]
pub(super) struct Pending {
    pub method: Option<&'static MethodDecoder>,
    pub serial: Serial,
}

/// What one message did to the pending requests, for [`Carried::settle`].
#[derive(Default)]
pub(super) struct Moves {
    /// The serial of the request the message was, remembered for its response.
    pub remembered: Option<Serial>,
    /// The serial of the request the message answered.
    pub answered: Option<Serial>,
    /// The serial of a pending request the message replaced (the same id, the same way).
    pub replaced: Option<Serial>,
    /// Every pending request was forgotten (more than [`MAX_PENDING`]).
    pub cleared: bool,
}

/// The requests awaiting their responses, by the direction they flowed and their id.
///
/// Not generic: the decoding core that keeps it is compiled once, in this crate, whatever
/// a caller attaches to its requests; the callers' data waits in [`Carried`], by serial.
#[derive(Default)]
pub(super) struct Correlation {
    /// Keyed by the id's kind and value (`IdKey`, held inline: no allocation per
    /// request), so `1`, `1.0` and `10e-1` are one id, and two integers are one id only
    /// when every digit agrees.
    pending: Pendings,
    /// Requests seen so far, for `Pending::serial`.
    requests: Serial,
}

/// A pending request's key: the direction it flowed and its id.
#[derive(PartialEq, Eq)]
struct PendingKey(WireDirection, IdKey);

impl Hash for PendingKey {
    /// One write of the direction and the id's bytes: the map keeps std's keyed SipHash
    /// (ids come from the peer), whose cost on keys this short is mostly per write; the
    /// derived `Hash` of the pair made three.
    fn hash<H: Hasher>(&self, state: &mut H) {
        let PendingKey(direction, id) = self;
        let mut bytes = [*direction as u8; 32];
        match bytes.get_mut(1..=id.len()) {
            Some(rest) => {
                rest.copy_from_slice(id);
                state.write(&bytes[..=id.len()]);
            }
            None => {
                state.write_u8(*direction as u8);
                state.write(id);
            }
        }
    }
}

/// Pending requests held in a short list before a table are searched by comparing keys;
/// a real stream has a handful pending at a time, and comparing a few short keys cost less
/// than hashing one with SipHash (about 5% of decoding a turn of real SDK traffic went to
/// the hashing). Past this many the list moves into the table, so a peer that leaves
/// thousands of requests unanswered still costs one keyed hash per message, not a search.
const LISTED: usize = 8;

/// The pending requests: in `listed` while there are at most [`LISTED`], else all in
/// `hashed` (one of the two is always empty), keyed by the same `PendingKey` either way.
#[derive(Default)]
struct Pendings {
    listed: Vec<(PendingKey, Pending)>,
    hashed: HashMap<PendingKey, Pending>,
}

impl Pendings {
    fn len(&self) -> usize {
        self.listed.len() + self.hashed.len()
    }

    /// The request pending under `id` that flowed `direction`; the id's bytes are compared
    /// as they are, without building a key, while the list holds them.
    fn get(&self, direction: WireDirection, id: &[u8]) -> Option<&Pending> {
        if self.hashed.is_empty() {
            self.listed.iter().find(|(k, _)| k.0 == direction && k.1.as_slice() == id).map(|(_, p)| p)
        } else {
            self.hashed.get(&PendingKey(direction, IdKey::from_slice(id)))
        }
    }

    /// Keeps `pending` under `key`, and gives back the request it replaced.
    fn insert(&mut self, key: PendingKey, pending: Pending) -> Option<Pending> {
        if !self.hashed.is_empty() {
            return self.hashed.insert(key, pending);
        }
        if let Some((_, held)) = self.listed.iter_mut().find(|(k, _)| *k == key) {
            return Some(std::mem::replace(held, pending));
        }
        if self.listed.len() < LISTED {
            self.listed.push((key, pending));
        } else {
            self.hashed.extend(self.listed.drain(..));
            self.hashed.insert(key, pending);
        }
        None
    }

    /// Takes the request pending under `key`. The list's order means nothing (a
    /// request's serial says which is more recent), so the last one fills the gap.
    fn remove(&mut self, key: &PendingKey) -> Option<Pending> {
        if !self.hashed.is_empty() {
            return self.hashed.remove(key);
        }
        let at = self.listed.iter().position(|(k, _)| k == key)?;
        Some(self.listed.swap_remove(at).1)
    }

    fn clear(&mut self) {
        self.listed.clear();
        self.hashed.clear();
    }
}

impl Correlation {
    /// The method of the request pending under `id` that flowed `asked`, if it is a
    /// method the tables know.
    pub fn method(&self, asked: WireDirection, id: &[u8]) -> Option<&'static MethodDecoder> {
        self.pending.get(asked, id).and_then(|p| p.method)
    }

    /// Remembers a request that flowed `direction` for its response. A second request
    /// under an id still pending the same way replaces the first: a response can answer
    /// only one of them, and JSON-RPC leaves a reused id to the later request.
    pub fn remember(
        &mut self,
        direction: WireDirection,
        id: IdKey,
        method: Option<&'static MethodDecoder>,
        moves: &mut Moves,
        report: &mut Report,
    ) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.clear();
            moves.cleared = true;
            report.diagnostics.push(format!("more than {MAX_PENDING} unanswered requests; older ones forgotten"));
        }
        self.requests += 1;
        let serial = self.requests;
        moves.remembered = Some(serial);
        if let Some(earlier) = self.pending.insert(PendingKey(direction, id), Pending { method, serial }) {
            moves.replaced = Some(earlier.serial);
            report
                .diagnostics
                .push("the id of a request still pending the same way was used again; the earlier request is forgotten".into());
        }
    }

    /// Takes the request a response with `id` answers, and the direction it flowed. With
    /// the response's direction known, only a request that flowed the other way; without
    /// it, the one request pending under that id, or of two (one each way) the one whose
    /// result shape `fits`, else the more recent.
    pub fn answer(
        &mut self,
        id: IdKey,
        hint: Option<WireDirection>,
        fits: impl Fn(&'static MethodDecoder) -> bool,
        report: &mut Report,
    ) -> Option<(Pending, WireDirection)> {
        if let Some(direction) = hint {
            let asked = direction.reverse();
            return self.pending.remove(&PendingKey(asked, id)).map(|p| (p, asked));
        }
        let to_agent = PendingKey(WireDirection::RunnerToAgent, id.clone());
        let to_runner = PendingKey(WireDirection::AgentToRunner, id);
        let key = match (self.pending.get(to_agent.0, &to_agent.1).copied(), self.pending.get(to_runner.0, &to_runner.1).copied()) {
            (None, None) => return None,
            (Some(_), None) => to_agent,
            (None, Some(_)) => to_runner,
            (Some(a), Some(b)) => {
                let fit = |p: Pending| p.method.is_some_and(&fits);
                let (recent, older) = if a.serial > b.serial { ((to_agent, a), (to_runner, b)) } else { ((to_runner, b), (to_agent, a)) };
                let chosen = if !fit(recent.1) && fit(older.1) { older.0 } else { recent.0 };
                report
                    .diagnostics
                    .push("the id is pending both ways; read as the answer the result fits, else the more recent request".into());
                chosen
            }
        };
        let asked = key.0;
        self.pending.remove(&key).map(|p| (p, asked))
    }

    /// How many requests await their responses.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.pending.len()
    }
}

/// The data callers attached to pending requests, by serial: kept beside the core's
/// [`Correlation`], and moved as it reports ([`Moves`]). A decoder whose callers attach
/// nothing keeps it empty and pays one emptiness test per message.
pub(super) struct Carried<T> {
    data: HashMap<Serial, T>,
}

impl<T> Default for Carried<T> {
    fn default() -> Self {
        Carried { data: HashMap::new() }
    }
}

impl<T> Carried<T> {
    /// Applies what one message did: keeps `offered` with the request it was, drops the
    /// data of requests forgotten, and gives back the data of the request it answered.
    /// `offered` with a message that was no remembered request is dropped.
    #[inline]
    pub fn settle(&mut self, moves: &Moves, offered: Option<T>) -> Option<T> {
        if !self.data.is_empty() {
            if moves.cleared {
                self.data.clear();
            }
            if let Some(serial) = moves.replaced {
                self.data.remove(&serial);
            }
        }
        if let (Some(serial), Some(data)) = (moves.remembered, offered) {
            self.data.insert(serial, data);
        }
        match moves.answered {
            Some(serial) if !self.data.is_empty() => self.data.remove(&serial),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::tables;

    fn id(text: &str) -> IdKey {
        IdKey::from_slice(text.as_bytes())
    }

    /// Remembers a request and gives back its serial.
    fn remember(
        c: &mut Correlation,
        direction: WireDirection,
        key: &str,
        method: Option<&'static MethodDecoder>,
        report: &mut Report,
    ) -> Serial {
        let mut moves = Moves::default();
        c.remember(direction, id(key), method, &mut moves, report);
        moves.remembered.expect("remembered")
    }

    #[test]
    fn a_response_takes_the_request_that_flowed_the_other_way() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        let runners = remember(&mut c, WireDirection::RunnerToAgent, "u0", None, &mut report);
        let agents = remember(&mut c, WireDirection::AgentToRunner, "u0", None, &mut report);
        let (p, asked) = c.answer(id("u0"), Some(WireDirection::RunnerToAgent), |_| false, &mut report).expect("pending");
        assert_eq!((p.serial, asked), (agents, WireDirection::AgentToRunner));
        let (p, asked) = c.answer(id("u0"), Some(WireDirection::AgentToRunner), |_| false, &mut report).expect("pending");
        assert_eq!((p.serial, asked), (runners, WireDirection::RunnerToAgent));
        assert!(c.answer(id("u0"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
        assert_eq!(c.len(), 0);
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    }

    /// Past the short list the requests move into the table and back into the list once
    /// the table is empty; either way each answer finds its own request, replacements
    /// included.
    #[test]
    fn many_pending_requests_answer_as_few_do() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        for round in 0..2 {
            let count = 3 * LISTED;
            let serials: Vec<_> = (0..count)
                .map(|i| {
                    let to_agent = remember(&mut c, WireDirection::RunnerToAgent, &format!("u{i}"), None, &mut report);
                    (to_agent, remember(&mut c, WireDirection::AgentToRunner, &format!("u{i}"), None, &mut report))
                })
                .collect();
            assert_eq!(c.len(), 2 * count, "round {round}");
            let again = remember(&mut c, WireDirection::RunnerToAgent, "u0", None, &mut report);
            assert_eq!(c.len(), 2 * count, "a replacement is not a new request");
            for (i, (to_agent, to_runner)) in serials.iter().enumerate().rev() {
                let (p, _) = c.answer(id(&format!("u{i}")), Some(WireDirection::RunnerToAgent), |_| false, &mut report).expect("pending");
                assert_eq!(p.serial, *to_runner);
                let (p, _) = c.answer(id(&format!("u{i}")), Some(WireDirection::AgentToRunner), |_| false, &mut report).expect("pending");
                assert_eq!(p.serial, if i == 0 { again } else { *to_agent });
            }
            assert_eq!(c.len(), 0, "round {round}");
        }
    }

    #[test]
    fn without_a_direction_the_result_that_fits_decides_else_the_more_recent() {
        let prompt = tables::method(tables::PROMPT_METHOD);
        let mut c = Correlation::default();
        let mut report = Report::default();
        let first = remember(&mut c, WireDirection::RunnerToAgent, "u1", prompt, &mut report);
        let second = remember(&mut c, WireDirection::AgentToRunner, "u1", None, &mut report);
        let fits_prompt = |m: &'static MethodDecoder| m.name == tables::PROMPT_METHOD;
        let (p, _) = c.answer(id("u1"), None, fits_prompt, &mut report).expect("pending");
        assert_eq!(p.serial, first);
        assert_eq!(report.diagnostics.len(), 1);
        let (p, _) = c.answer(id("u1"), None, |_| false, &mut report).expect("pending");
        assert_eq!(p.serial, second);
    }

    #[test]
    fn a_reused_id_replaces_the_earlier_request_and_says_so() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        let first = remember(&mut c, WireDirection::RunnerToAgent, "s7", None, &mut report);
        let mut moves = Moves::default();
        c.remember(WireDirection::RunnerToAgent, id("s7"), None, &mut moves, &mut report);
        assert_eq!(moves.replaced, Some(first));
        assert_eq!(report.diagnostics.len(), 1);
        let (p, _) = c.answer(id("s7"), Some(WireDirection::AgentToRunner), |_| false, &mut report).expect("pending");
        assert_eq!(Some(p.serial), moves.remembered);
        assert!(c.answer(id("s7"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
    }

    #[test]
    fn unknown_ids_answer_nothing_and_kinds_do_not_mix() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        remember(&mut c, WireDirection::RunnerToAgent, "u5", None, &mut report);
        assert!(c.answer(id("s5"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
        assert!(c.answer(id("u6"), None, |_| false, &mut report).is_none());
        assert_eq!(c.len(), 1);
    }

    /// The carried data follows the moves: kept with a remembered request, dropped with a
    /// replaced or forgotten one, handed back once with the answer.
    #[test]
    fn carried_data_follows_the_moves() {
        let mut carried = Carried::<&str>::default();
        let remembered = |serial| Moves { remembered: Some(serial), ..Moves::default() };
        let answered = |serial| Moves { answered: Some(serial), ..Moves::default() };
        assert_eq!(carried.settle(&remembered(1), Some("one")), None);
        assert_eq!(carried.settle(&remembered(2), Some("two")), None);
        assert_eq!(carried.settle(&Moves { remembered: Some(3), replaced: Some(2), ..Moves::default() }, Some("three")), None);
        assert_eq!(carried.settle(&answered(2), None), None);
        assert_eq!(carried.settle(&answered(1), None), Some("one"));
        assert_eq!(carried.settle(&answered(1), None), None);
        // Offered with a message that remembered nothing: not kept.
        assert_eq!(carried.settle(&Moves::default(), Some("stray")), None);
        assert_eq!(carried.settle(&Moves { cleared: true, remembered: Some(4), ..Moves::default() }, Some("four")), None);
        assert_eq!(carried.settle(&answered(3), None), None);
        assert_eq!(carried.settle(&answered(4), None), Some("four"));
        assert!(carried.data.is_empty());
    }

    // ---- through the decoder ------------------------------------------------------------

    use crate::decode::{Decoder, Kind};

    const RUNNER: Option<WireDirection> = Some(WireDirection::RunnerToAgent);
    const AGENT: Option<WireDirection> = Some(WireDirection::AgentToRunner);
    const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}"#;
    const INITIALIZED: &[u8] = br#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,"agentCapabilities":{}}}"#;
    const READ_FILE: &[u8] = br#"{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/w/a.txt"}}"#;
    const FILE_READ: &[u8] = br#"{"jsonrpc":"2.0","id":0,"result":{"content":"hi"}}"#;

    /// Both sides use the id 0 at once; each answer comes back with its own request's data
    /// and its method, in either order.
    #[test]
    fn each_direction_gets_its_own_data_back() {
        let mut decoder = Decoder::<&str>::carrying();
        assert!(decoder.read(INITIALIZE, RUNNER, Some("runner asked")).report.accepted);
        assert!(decoder.read(READ_FILE, AGENT, Some("agent asked")).report.accepted);
        let answer = decoder.read(FILE_READ, RUNNER, None);
        assert_eq!((answer.report.method, answer.answered), (Some("fs/read_text_file"), Some("agent asked")));
        assert_eq!(answer.report.direction, RUNNER);
        let answer = decoder.read(INITIALIZED, AGENT, None);
        assert_eq!((answer.report.method, answer.answered), (Some("initialize"), Some("runner asked")));
        assert_eq!(answer.report.kind, Some(Kind::Response));
        // Answered once: a second answer is read on its own, with no data.
        let again = decoder.read(INITIALIZED, AGENT, None);
        assert!(again.report.accepted, "{:?}", again.report);
        assert_eq!((again.report.method, again.answered), (Some("initialize"), None));
    }

    #[test]
    fn an_unknown_id_answers_no_request() {
        let mut decoder = Decoder::<u8>::carrying();
        decoder.read(INITIALIZE, RUNNER, Some(1));
        let stray = br#"{"jsonrpc":"2.0","id":"0","result":{"content":"hi"}}"#;
        let decoded = decoder.read(stray, AGENT, None);
        assert!(decoded.report.accepted, "{:?}", decoded.report);
        assert_eq!((decoded.report.method, decoded.answered), (None, None));
        assert!(decoded.report.diagnostics.iter().any(|d| d.contains("did not show")), "{:?}", decoded.report.diagnostics);
        // The request still waits for its own answer.
        assert_eq!(decoder.read(INITIALIZED, AGENT, None).answered, Some(1));
    }

    #[test]
    fn a_reused_id_keeps_the_later_requests_data() {
        let mut decoder = Decoder::<u8>::carrying();
        decoder.read(INITIALIZE, RUNNER, Some(1));
        let second = decoder.read(INITIALIZE, RUNNER, Some(2));
        assert!(second.report.accepted);
        assert!(second.report.diagnostics.iter().any(|d| d.contains("used again")), "{:?}", second.report.diagnostics);
        assert_eq!(decoder.read(INITIALIZED, AGENT, None).answered, Some(2));
        assert_eq!(decoder.read(INITIALIZED, AGENT, None).answered, None);
    }

    /// Ids match by value: `2.0` is `2`. With exact numbers two integers past `u64` that
    /// share their nearest `f64` are two ids; without them they are one, as a peer on
    /// serde_json's defaults reads them.
    #[test]
    fn number_ids_carry_data_by_their_value() {
        let request = |id: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"initialize","params":{{"protocolVersion":1,"clientCapabilities":{{}}}}}}"#)
        };
        let response = |id: &str| format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":1,"agentCapabilities":{{}}}}}}"#);
        let answered = |asked: &str, answered: &str| {
            let mut decoder = Decoder::<()>::carrying();
            assert!(decoder.read(request(asked).as_bytes(), RUNNER, Some(())).report.accepted, "{asked}");
            decoder.read(response(answered).as_bytes(), AGENT, None).answered.is_some()
        };
        assert!(answered("2", "2.0"));
        assert!(answered("18446744073709551617", "1.8446744073709551617e19"));
        assert_eq!(answered("18446744073709551617", "18446744073709551616"), !cfg!(feature = "exact-numbers"));
        assert!(!answered("2", "\"2\""));
    }

    /// The message comes back as the tree the decoder read, equal to what serde_json
    /// reads from the line; an error response too (its `error` member the direct reader
    /// takes), and an object too wide for the direct reader.
    #[test]
    fn the_message_comes_back_as_read() {
        let mut decoder = Decoder::<()>::carrying();
        let error = br#"{"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"no","data":{"n":[1,2.50,18446744073709551617]}}}"#;
        let wide = format!(
            r#"{{"jsonrpc":"2.0","method":"session/update","params":{{"sessionId":"s","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"x"}}}},"_meta":{{{}}}}}}}"#,
            (0..40).map(|i| format!(r#""k{i}":{i}"#)).collect::<Vec<_>>().join(",")
        );
        decoder.read(INITIALIZE, RUNNER, Some(()));
        for line in [error.as_slice(), wide.as_bytes(), READ_FILE] {
            let decoded = decoder.read(line, AGENT, None);
            assert!(decoded.report.accepted, "{:?}", decoded.report);
            let expected: serde_json::Value = serde_json::from_slice(line).expect("JSON");
            assert_eq!(decoded.message.map(|m| m.to_value()), Some(expected));
        }
        let rejected = decoder.read(br#"{"jsonrpc":"2.0","method":"nope"}"#, AGENT, None);
        assert!(rejected.message.is_none() && !rejected.report.accepted);
        // An error object the direct reader does not take is read by the envelope pass,
        // whose error names the member.
        let error = decoder.read(br#"{"jsonrpc":"2.0","id":5,"error":{"code":1.5,"message":"x"}}"#, AGENT, None);
        let error = error.report.error.map(|e| e.error);
        assert!(
            matches!(&error, Some(crate::decode::DecodeError::BadEnvelope { message }) if message.contains("integer `code`")),
            "{error:?}"
        );
    }

    /// A plain decode keeps no data and hands none back, but correlates all the same.
    #[test]
    fn a_plain_decode_correlates_without_data() {
        let mut decoder = Decoder::<u8>::carrying();
        decoder.read(INITIALIZE, RUNNER, Some(9));
        let report = decoder.decode(INITIALIZED, AGENT);
        assert_eq!(report.method, Some("initialize"));
        assert!(decoder.read(INITIALIZED, AGENT, None).answered.is_none());
        let mut plain = Decoder::new();
        plain.decode(INITIALIZE, RUNNER);
        assert_eq!(plain.read(INITIALIZED, AGENT, None).report.method, Some("initialize"));
    }
}
