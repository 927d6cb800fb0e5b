//! Paced answers: a text answer streamed slowly, one server-sent event at a time, so the
//! probe can act while a model call is in flight (send `session/cancel`, or a cooperative
//! interrupt) and the record can say what became of the stream afterwards.
//!
//! The probe sets a [`Pace`] for a turn ([`super::Relay::pace`]). Every text answer of that
//! turn is then preceded by [`Pace::lead`] words, its deltas split into [`Pace::pieces`], and
//! its events sent one per [`Pace::interval`] (the stream's opening events, before the first
//! delta, at once, as a provider opens its stream). An answer asked for as one JSON document is
//! held for the same time and sent whole: a client that does not stream still has a call in
//! flight for as long. A tool call's events are paced too (a round the relay holds); a fault
//! is never paced.
//!
//! The call's [`Paced`] entry in the record says how many events there were, how many went
//! out, and how the stream ended: `finished` (every event sent), `closed` (the body was
//! dropped before its last event: the client closed the connection, or the relay stopped
//! with the stream open) or `open` (still sending when the record was read). The probe
//! reads it before it stops the relay.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Frame, SizeHint};
use serde::Serialize;

use super::dialect::Reply;
use super::fault::CutError;
use super::record::{self, Call, Entry};
use super::script::Played;
use super::Shared;

/// The longest interval between two paced events.
pub const MAX_INTERVAL: Duration = Duration::from_secs(1);

/// The most pieces a paced answer's text is split into.
pub const MAX_PIECES: usize = 200;

/// The most bytes the record keeps of a paced answer's text: a lead of [`MAX_PIECES`] words
/// and a script's answer fit whole.
pub const MAX_TEXT: usize = 8 * 1024;

/// How a turn's text answers are paced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pace {
    /// Between two events (at most [`MAX_INTERVAL`]).
    pub interval: Duration,
    /// Pieces the text is split into (at most [`MAX_PIECES`]).
    pub pieces: usize,
    /// Words put before the script's answer, so that the answer is long enough to split
    /// into `pieces` and the reply token comes last.
    pub lead: usize,
}

impl Pace {
    /// `pace` within the bounds.
    pub fn bounded(self) -> Pace {
        Pace { interval: self.interval.min(MAX_INTERVAL), pieces: self.pieces.clamp(1, MAX_PIECES), lead: self.lead.min(MAX_PIECES) }
    }

    /// The script's answer with the lead before it.
    pub fn text(&self, answer: &str) -> String {
        let mut text = String::with_capacity(answer.len() + self.lead * 8);
        for word in 1..=self.lead {
            text.push_str(&format!("paced-{word} "));
        }
        text.push_str(answer);
        text
    }
}

/// What a paced turn plays: a text answer with its lead, a tool call as it is (its round held
/// as long), a fault never paced. A structured answer (`structured`: a JSON document the
/// request's output schema asked for) is paced without a lead, which would make it no JSON.
pub(super) fn apply(played: Played, pace: Option<Pace>, structured: bool) -> (Played, Option<Pace>) {
    match (played, pace) {
        (played @ Played::Reply(Reply::Text(_)), Some(pace)) if structured => (played, Some(pace)),
        (Played::Reply(Reply::Text(text)), Some(pace)) => (Played::Reply(Reply::Text(pace.text(&text))), Some(pace)),
        (played @ Played::Reply(Reply::ToolCall { .. }), Some(pace)) => (played, Some(pace)),
        (played, _) => (played, None),
    }
}

/// How a paced stream ended, as the record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PaceEnd {
    /// Still sending.
    Open,
    /// Every event went out.
    Finished,
    /// The client closed the connection before the last event.
    Closed,
}

/// What the record keeps of a paced answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Paced {
    /// Events in the answer (1 for an answer held and sent whole).
    pub events: usize,
    /// Events handed to the connection.
    pub events_sent: usize,
    pub interval_ms: u64,
    pub ended: PaceEnd,
    /// When it ended, in milliseconds since the relay started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<u64>,
    /// The answer's text as the model streamed it, whole: what a harness that passes every
    /// byte on shows.
    pub text: String,
}

/// A paced answer's body: its events, sent one per interval; the record told of each, and
/// of the end.
pub struct PacedBody {
    events: std::collections::VecDeque<Bytes>,
    interval: Duration,
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
    sent: usize,
    /// The opening events, sent without a pause.
    opening: usize,
    shared: Arc<Shared>,
    entry: Option<Entry>,
    ended: bool,
    /// A JSON answer's length (sent as `content-length`); `None` for a stream.
    exact: Option<u64>,
}

impl PacedBody {
    /// The events of `answer` (an event stream: each ends with a blank line, one sent per
    /// interval; a JSON answer: one event, held as long as the stream of `pieces` deltas
    /// would take).
    fn new(answer: String, stream: bool, pace: Pace, shared: Arc<Shared>) -> PacedBody {
        let events: std::collections::VecDeque<Bytes> = if stream {
            super::fault::sse_events(&answer).into_iter().map(|event| Bytes::copy_from_slice(event.as_bytes())).collect()
        } else {
            std::collections::VecDeque::from([Bytes::from(answer)])
        };
        let interval = if stream { pace.interval } else { pace.interval * pace.pieces as u32 };
        let exact = (!stream).then(|| events.iter().map(|e| e.len() as u64).sum());
        // A provider opens its stream at once (message_start, response.created, …) and then
        // streams the content: the events before the first delta go without a pause.
        let opening = if stream { events.iter().take_while(|e| memchr::memmem::find(e, b"delta").is_none()).count() } else { 0 };
        PacedBody { events, interval, pause: None, sent: 0, opening, shared, entry: None, ended: false, exact }
    }

    /// The paced body of a call's rendered answer, its [`Paced`] entry put in `call`.
    pub(super) fn for_call(rendered: &str, played: &Played, stream: bool, pace: Pace, shared: Arc<Shared>, call: &mut Call) -> PacedBody {
        let body = PacedBody::new(rendered.to_owned(), stream, pace, shared);
        let text = match played {
            Played::Reply(Reply::Text(text)) => record::capped(text, MAX_TEXT),
            _ => String::new(),
        };
        call.paced = Some(Paced {
            events: body.events.len(),
            events_sent: 0,
            interval_ms: pace.interval.as_millis() as u64,
            ended: PaceEnd::Open,
            ended_ms: None,
            text,
        });
        body
    }

    /// The record's entry that this answer's progress is written to.
    pub(super) fn log_to(&mut self, entry: Option<Entry>) {
        self.entry = entry;
    }

    fn log(&mut self, end: PaceEnd) {
        let ended_ms = (end != PaceEnd::Open).then(|| self.shared.epoch.elapsed().as_millis() as u64);
        if end != PaceEnd::Open {
            self.ended = true;
        }
        if let Some(Entry::Call(index)) = self.entry {
            if let Some(paced) = self.shared.record().calls.get_mut(index).and_then(|c| c.paced.as_mut()) {
                paced.events_sent = self.sent;
                paced.ended = end;
                paced.ended_ms = ended_ms;
            }
        }
    }
}

impl hyper::body::Body for PacedBody {
    type Data = Bytes;
    type Error = CutError;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, CutError>>> {
        let this = self.get_mut();
        if this.events.is_empty() {
            if !this.ended {
                this.log(PaceEnd::Finished);
            }
            return Poll::Ready(None);
        }
        // Each event after the opening waits its interval first (made here, inside the runtime
        // that polls).
        if this.sent >= this.opening {
            let interval = this.interval;
            let pause = this.pause.get_or_insert_with(|| Box::pin(tokio::time::sleep(interval)));
            if pause.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.pause = None;
        }
        let Some(event) = this.events.pop_front() else { return Poll::Ready(None) };
        this.sent += 1;
        if this.events.is_empty() {
            this.log(PaceEnd::Finished);
        } else {
            this.log(PaceEnd::Open);
        }
        Poll::Ready(Some(Ok(Frame::data(event))))
    }

    fn is_end_stream(&self) -> bool {
        self.events.is_empty()
    }

    fn size_hint(&self) -> SizeHint {
        match (&self.exact, self.sent) {
            // A JSON answer held whole: its length, as an answer sent at once has it.
            (Some(length), 0) => SizeHint::with_exact(*length),
            // A stream: unknown, sent chunked, as a provider streams.
            _ => SizeHint::default(),
        }
    }
}

impl Drop for PacedBody {
    fn drop(&mut self) {
        // Dropped before its last event: the connection closed (or the relay stopped, which
        // drops every connection; the probe reads the record before it stops the relay).
        if !self.ended {
            self.log(PaceEnd::Closed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Config, Relay, Script};
    use std::io::Read;

    fn relay() -> Relay {
        Relay::start(Config {
            provider: Some(String::from("anthropic")),
            script: Script::Nonce,
            nonce: String::from("cf-0123456789abcdef"),
            token: String::from("T"),
            token_file: std::path::PathBuf::from("/nonexistent"),
            key: String::from("k"),
            stall: Duration::from_secs(5),
            listener: None,
            record_bodies: false,
            context_window: None,
            budget: crate::Budget::after(Duration::from_secs(60)),
        })
        .expect("relay")
    }

    /// Posts a streamed Messages request; reads `events` server-sent events (all when
    /// `None`), then closes. The text deltas read, joined.
    fn read_stream(relay: &Relay, events: Option<usize>) -> String {
        let body =
            r#"{"model": "m", "stream": true, "max_tokens": 9, "messages": [{"role": "user", "content": "Say cf-0123456789abcdef"}]}"#;
        let mut stream = crate::tests::send(relay, body);
        let mut seen = String::new();
        let mut buffer = [0u8; 4096];
        while events.is_none_or(|n| seen.matches("event: ").count() < n) {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => seen.push_str(&String::from_utf8_lossy(&buffer[..n])),
            }
        }
        drop(stream);
        let deltas = seen.lines().filter_map(|line| line.strip_prefix("data: ")).filter_map(|data| {
            let event: serde_json::Value = serde_json::from_str(data).ok()?;
            event.pointer("/delta/text").and_then(serde_json::Value::as_str).map(str::to_owned)
        });
        deltas.collect()
    }

    fn wait_for_end(relay: &Relay) -> Paced {
        for _ in 0..400 {
            let paced = relay.calls(1)[0].paced.clone().expect("paced");
            if paced.ended != PaceEnd::Open {
                return paced;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the paced answer never ended");
    }

    #[test]
    fn a_paced_answer_read_whole_is_finished_and_its_deltas_are_its_text() {
        let relay = relay();
        relay.pace(Some(Pace { interval: Duration::from_millis(5), pieces: 6, lead: 5 }));
        let text = read_stream(&relay, None);
        let paced = wait_for_end(&relay);
        assert_eq!((paced.ended, paced.events_sent), (PaceEnd::Finished, paced.events));
        assert_eq!(text, paced.text);
        assert!(text.starts_with("paced-1 paced-2 ") && text.contains("The nonce is cf-0123456789abcdef."), "{text}");
        // Six deltas, between the opening events and the closing ones.
        assert_eq!(paced.events, 6 + 5, "{paced:?}");
    }

    #[test]
    fn a_paced_answer_its_client_leaves_is_closed_with_the_events_sent_so_far() {
        let relay = relay();
        relay.pace(Some(Pace { interval: Duration::from_millis(40), pieces: 40, lead: 60 }));
        read_stream(&relay, Some(3));
        let paced = wait_for_end(&relay);
        assert_eq!(paced.ended, PaceEnd::Closed, "{paced:?}");
        assert!(paced.events_sent >= 3 && paced.events_sent < paced.events, "{paced:?}");
        assert!(paced.ended_ms.is_some());
        // Pacing ends with the turn's pace: the next answer is whole at once.
        relay.pace(None);
        read_stream(&relay, None);
        assert!(relay.calls(1)[1].paced.is_none());
    }

    #[test]
    fn a_pace_stays_in_its_bounds_and_puts_the_answer_last() {
        let pace = Pace { interval: Duration::from_secs(9), pieces: 10_000, lead: 3 }.bounded();
        assert_eq!((pace.interval, pace.pieces), (MAX_INTERVAL, MAX_PIECES));
        assert_eq!(pace.text("The nonce is N."), "paced-1 paced-2 paced-3 The nonce is N.");
        assert_eq!(Pace { interval: Duration::ZERO, pieces: 0, lead: 0 }.bounded().pieces, 1);
    }
}
