//! What became of the model calls in flight when the probe stopped a turn: with ACP's
//! `session/cancel`, or a declared cooperative interrupt (`_checkfu/session/interrupt`).
//!
//! Both are judged from the relay's record, with the relay's clock (`started_ms`, a paced
//! answer's `ended_ms`), never from what the harness says:
//! - a cancelled turn starts no model call after the cancel, and no paced answer is still
//!   streaming once the harness has answered `cancelled` (it closed the stream, or the stream
//!   had finished);
//! - a drained turn starts no model call after the drain was acknowledged, and every paced
//!   answer of the turn was streamed to its end and reached the session's updates whole:
//!   draining lets the work in flight finish, it does not cut it off.

use crate::outcome::{Kind, Reason};
use crate::relay::{Call, PaceEnd};

/// The calls of a turn after the probe stopped it at `at_ms` (the relay's clock).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AfterStop {
    /// Calls whose request arrived after the stop, and how long after the first of them came.
    pub calls_after: usize,
    pub first_after_ms: Option<u64>,
    /// Paced answers still streaming when the record was read.
    pub streams_open: usize,
}

impl AfterStop {
    pub fn of(calls: &[Call], at_ms: u64) -> AfterStop {
        let after: Vec<u64> = calls.iter().filter(|c| c.started_ms > at_ms).map(|c| c.started_ms - at_ms).collect();
        AfterStop {
            calls_after: after.len(),
            first_after_ms: after.iter().copied().min(),
            streams_open: calls.iter().filter(|c| c.paced.as_ref().is_some_and(|p| p.ended == PaceEnd::Open)).count(),
        }
    }

    /// The first thing wrong: a call after the stop, then a stream left open.
    pub fn fault(&self, stop: &str) -> Option<Reason> {
        if let Some(ms) = self.first_after_ms {
            let more = if self.calls_after > 1 { format!(" ({} calls in all)", self.calls_after) } else { String::new() };
            return Some(Reason::new(Kind::MidTurn, format!("a model call started {ms} ms after the {stop}{more}")));
        }
        (self.streams_open > 0)
            .then(|| Reason::new(Kind::MidTurn, format!("the model's answer was still in flight to the harness after the {stop}")))
    }
}

/// Why a drain did not let the turn's model output through whole.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NotDrained {
    #[error("a model call started {ms} ms after the drain was acknowledged")]
    CallAfter { ms: u64 },
    #[error("no model answer was in flight to drain")]
    NothingInFlight,
    #[error("the harness closed the model's stream after {sent} of its {events} events: the drain cut the answer off")]
    Closed { sent: usize, events: usize },
    #[error("the model's answer was still in flight when the turn ended")]
    StillInFlight,
    #[error("the model's answer was streamed whole, but not all of it reached the session's updates: the drain truncated it")]
    Truncated,
}

/// Whether a drain sent at `sent_ms` and acknowledged at `ack_ms` let the turn's model output
/// through whole: no call after the acknowledgement, and every paced answer still in flight
/// when the drain was sent streamed to its end, its text (if any) in the session's updates
/// (`reached`). An answer that had ended before the drain is not the drain's to judge.
pub fn drained(calls: &[Call], sent_ms: u64, ack_ms: u64, reached: &dyn Fn(&str) -> bool) -> Result<(), NotDrained> {
    let after = AfterStop::of(calls, ack_ms);
    if let Some(ms) = after.first_after_ms {
        return Err(NotDrained::CallAfter { ms });
    }
    let paced: Vec<_> = calls.iter().filter_map(|c| c.paced.as_ref()).filter(|p| p.ended_ms.is_none_or(|ended| ended >= sent_ms)).collect();
    if paced.is_empty() {
        return Err(NotDrained::NothingInFlight);
    }
    for answer in paced {
        match answer.ended {
            PaceEnd::Finished => {}
            PaceEnd::Closed => return Err(NotDrained::Closed { sent: answer.events_sent, events: answer.events }),
            PaceEnd::Open => return Err(NotDrained::StillInFlight),
        }
        if !answer.text.is_empty() && !reached(&answer.text) {
            return Err(NotDrained::Truncated);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::Paced;

    fn call(started_ms: u64, paced: Option<(PaceEnd, usize)>) -> Call {
        let mut call = crate::verdict::tests::served(1, started_ms, None, None);
        call.paced = paced.map(|(ended, events_sent)| Paced {
            events: 10,
            events_sent,
            interval_ms: 100,
            ended,
            ended_ms: (ended != PaceEnd::Open).then_some(started_ms + 1000),
            text: String::from("paced-1 The nonce is N."),
        });
        call
    }

    #[test]
    fn a_cancel_is_judged_on_calls_after_it_then_streams_left_open() {
        let calls = [call(100, Some((PaceEnd::Closed, 3))), call(900, None), call(950, None)];
        let after = AfterStop::of(&calls, 500);
        assert_eq!((after.calls_after, after.first_after_ms, after.streams_open), (2, Some(400), 0));
        assert_eq!(
            after.fault("cancel").as_ref().map(Reason::words),
            Some("a model call started 400 ms after the cancel (2 calls in all)")
        );
        let open = AfterStop::of(&[call(100, Some((PaceEnd::Open, 3)))], 500);
        assert!(open.fault("cancel").expect("open").words().contains("still in flight"));
        assert_eq!(AfterStop::of(&[call(100, Some((PaceEnd::Finished, 10)))], 500).fault("cancel"), None);
    }

    #[test]
    fn a_drain_passes_only_when_the_answer_ran_to_its_end_and_reached_the_updates() {
        let whole = |text: &str| text == "paced-1 The nonce is N.";
        // Sent at 400, acknowledged at 500; each paced answer ends 1000 ms after it started.
        assert_eq!(drained(&[call(100, Some((PaceEnd::Finished, 10)))], 400, 500, &whole), Ok(()));
        assert!(drained(&[call(100, Some((PaceEnd::Closed, 4)))], 400, 500, &whole)
            .unwrap_err()
            .to_string()
            .contains("after 4 of its 10 events"));
        assert!(drained(&[call(100, Some((PaceEnd::Finished, 10)))], 400, 500, &|_| false).unwrap_err().to_string().contains("truncated"));
        let later = [call(100, Some((PaceEnd::Finished, 10))), call(700, None)];
        assert!(drained(&later, 400, 500, &whole).unwrap_err().to_string().contains("200 ms after"));
        assert!(drained(&[call(100, None)], 400, 500, &whole).unwrap_err().to_string().contains("no model answer"));
        // An answer that ended before the drain was sent (a round the turn had finished) is
        // not the drain's, however it ended.
        let earlier = [call(0, Some((PaceEnd::Closed, 3))), call(1100, Some((PaceEnd::Finished, 10)))];
        assert_eq!(drained(&earlier, 1500, 1600, &whole), Ok(()));
        assert_eq!(drained(&earlier[..1], 1500, 1600, &whole).unwrap_err().to_string(), "no model answer was in flight to drain");
    }
}
