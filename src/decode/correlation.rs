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

/// A request awaiting its response: what it asked (a known method, or a foreign
/// extension method the tables do not type), when, to break ties between the two
/// directions, and the caller's data.
pub(super) struct Pending<T> {
    pub method: Option<&'static MethodDecoder>,
    order: u64,
    pub data: Option<T>,
}

/// The requests awaiting their responses, by the direction they flowed and their id.
pub(super) struct Correlation<T> {
    /// Keyed by the id's kind and value (`IdKey`, held inline: no allocation per
    /// request), so `1`, `1.0` and `10e-1` are one id, and two integers are one id only
    /// when every digit agrees.
    pending: HashMap<PendingKey, Pending<T>>,
    /// Requests seen so far, for `Pending::order`.
    requests: u64,
}

impl<T> Default for Correlation<T> {
    fn default() -> Self {
        Correlation { pending: HashMap::new(), requests: 0 }
    }
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

impl<T> Correlation<T> {
    /// The method of the request pending under `id` that flowed `asked`, if it is a
    /// method the tables know.
    pub fn method(&self, asked: WireDirection, id: &[u8]) -> Option<&'static MethodDecoder> {
        self.pending.get(&PendingKey(asked, IdKey::from_slice(id))).and_then(|p| p.method)
    }

    /// Remembers a request that flowed `direction` for its response. A second request
    /// under an id still pending the same way replaces the first: a response can answer
    /// only one of them, and JSON-RPC leaves a reused id to the later request.
    pub fn remember(&mut self, direction: WireDirection, id: IdKey, method: Option<&'static MethodDecoder>, data: Option<T>, report: &mut Report) {
        if self.pending.len() >= MAX_PENDING {
            self.pending.clear();
            report.diagnostics.push(format!("more than {MAX_PENDING} unanswered requests; older ones forgotten"));
        }
        self.requests += 1;
        let pending = Pending { method, order: self.requests, data };
        if self.pending.insert(PendingKey(direction, id), pending).is_some() {
            report.diagnostics.push("the id of a request still pending the same way was used again; the earlier request is forgotten".into());
        }
    }

    /// Takes the request a response with `id` answers, and the direction it flowed. With
    /// the response's direction known, only a request that flowed the other way; without
    /// it, the one request pending under that id, or of two (one each way) the one whose
    /// result shape `fits`, else the more recent.
    pub fn answer(&mut self, id: IdKey, hint: Option<WireDirection>, fits: impl Fn(&'static MethodDecoder) -> bool, report: &mut Report) -> Option<(Pending<T>, WireDirection)> {
        if let Some(direction) = hint {
            let asked = direction.reverse();
            return self.pending.remove(&PendingKey(asked, id)).map(|p| (p, asked));
        }
        let to_agent = PendingKey(WireDirection::RunnerToAgent, id.clone());
        let to_runner = PendingKey(WireDirection::AgentToRunner, id);
        let key = match (self.pending.get(&to_agent), self.pending.get(&to_runner)) {
            (None, None) => return None,
            (Some(_), None) => to_agent,
            (None, Some(_)) => to_runner,
            (Some(a), Some(b)) => {
                let fit = |p: &Pending<T>| p.method.is_some_and(&fits);
                let (recent, older) = if a.order > b.order { ((to_agent, a), (to_runner, b)) } else { ((to_runner, b), (to_agent, a)) };
                let chosen = if !fit(recent.1) && fit(older.1) { older.0 } else { recent.0 };
                report.diagnostics.push("the id is pending both ways; read as the answer the result fits, else the more recent request".into());
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::tables;

    fn id(text: &str) -> IdKey {
        IdKey::from_slice(text.as_bytes())
    }

    #[test]
    fn a_response_takes_the_data_of_the_request_that_flowed_the_other_way() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        c.remember(WireDirection::RunnerToAgent, id("u0"), None, Some("runner's 0"), &mut report);
        c.remember(WireDirection::AgentToRunner, id("u0"), None, Some("agent's 0"), &mut report);
        let (p, asked) = c.answer(id("u0"), Some(WireDirection::RunnerToAgent), |_| false, &mut report).expect("pending");
        assert_eq!((p.data, asked), (Some("agent's 0"), WireDirection::AgentToRunner));
        let (p, asked) = c.answer(id("u0"), Some(WireDirection::AgentToRunner), |_| false, &mut report).expect("pending");
        assert_eq!((p.data, asked), (Some("runner's 0"), WireDirection::RunnerToAgent));
        assert!(c.answer(id("u0"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
        assert_eq!(c.len(), 0);
        assert!(report.diagnostics.is_empty(), "{:?}", report.diagnostics);
    }

    #[test]
    fn without_a_direction_the_result_that_fits_decides_else_the_more_recent() {
        let prompt = tables::method(tables::PROMPT_METHOD);
        let mut c = Correlation::default();
        let mut report = Report::default();
        c.remember(WireDirection::RunnerToAgent, id("u1"), prompt, Some(1), &mut report);
        c.remember(WireDirection::AgentToRunner, id("u1"), None, Some(2), &mut report);
        let fits_prompt = |m: &'static MethodDecoder| m.name == tables::PROMPT_METHOD;
        let (p, _) = c.answer(id("u1"), None, fits_prompt, &mut report).expect("pending");
        assert_eq!(p.data, Some(1));
        assert_eq!(report.diagnostics.len(), 1);
        let (p, _) = c.answer(id("u1"), None, |_| false, &mut report).expect("pending");
        assert_eq!(p.data, Some(2));
    }

    #[test]
    fn a_reused_id_replaces_the_earlier_request_and_says_so() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        c.remember(WireDirection::RunnerToAgent, id("s7"), None, Some('a'), &mut report);
        c.remember(WireDirection::RunnerToAgent, id("s7"), None, Some('b'), &mut report);
        assert_eq!(report.diagnostics.len(), 1);
        let (p, _) = c.answer(id("s7"), Some(WireDirection::AgentToRunner), |_| false, &mut report).expect("pending");
        assert_eq!(p.data, Some('b'));
        assert!(c.answer(id("s7"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
    }

    #[test]
    fn unknown_ids_answer_nothing_and_kinds_do_not_mix() {
        let mut c = Correlation::default();
        let mut report = Report::default();
        c.remember(WireDirection::RunnerToAgent, id("u5"), None, Some(()), &mut report);
        assert!(c.answer(id("s5"), Some(WireDirection::AgentToRunner), |_| false, &mut report).is_none());
        assert!(c.answer(id("u6"), None, |_| false, &mut report).is_none());
        assert_eq!(c.len(), 1);
    }
}
