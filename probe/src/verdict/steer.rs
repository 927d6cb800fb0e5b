//! Whether a scripted steer reached the model, as its acknowledgement promised.
//!
//! The steer's content carries a token the relay looks for in every later request
//! (`steer_in_request` in the record). A steer acknowledged `delivered` went into the running
//! turn: a model request of that turn made after the steer was sent must carry it. One
//! acknowledged `queued` waits for the next user turn: a request of that turn must carry it.
//! An acknowledgement is otherwise only the harness's word.

use crate::outcome::{Kind, Outcome};
use crate::relay::Call;
use checkfu_wire::conformance::observation::SteerAck;

/// Judges a steer sent at `sent_ms` (the relay's clock) in `turn` and acknowledged `ack`,
/// against every call of the run; `next_turn_ran` says whether the probe made another turn
/// after it. It passes when a request that should carry it did, fails when none did, and is
/// skipped when nothing could show it (a queued steer and no next turn).
pub fn reached(calls: &[Call], turn: usize, sent_ms: u64, ack: SteerAck, next_turn_ran: bool) -> Outcome {
    match ack {
        SteerAck::Delivered => {
            if calls.iter().any(|c| c.turn == turn && c.started_ms >= sent_ms && c.steer_in_request) {
                Outcome::Passed
            } else {
                Outcome::failed(Kind::MidTurn, "the steer was acknowledged `delivered`, but no later model request of the turn carried it")
            }
        }
        SteerAck::Queued if !next_turn_ran => Outcome::skipped(
            "the steer was acknowledged `queued`, and no next turn ran to carry it (the cancellation step's prompt is that turn)",
        ),
        SteerAck::Queued => {
            if calls.iter().any(|c| c.turn == turn + 1 && c.steer_in_request) {
                Outcome::Passed
            } else {
                Outcome::failed(Kind::MidTurn, "the steer was acknowledged `queued`, but no model request of the next turn carried it")
            }
        }
        // A refusal is the trace's to judge; nothing was promised.
        SteerAck::Refused => Outcome::Passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(turn: usize, started_ms: u64, steer: bool) -> Call {
        let mut call = crate::verdict::tests::served(turn, started_ms, None, None);
        call.steer_in_request = steer;
        call
    }

    #[test]
    fn a_delivered_steer_needs_a_later_request_of_its_turn_and_a_queued_one_the_next_turn() {
        let forwarded = [call(1, 0, false), call(1, 900, true)];
        assert_eq!(reached(&forwarded, 1, 500, SteerAck::Delivered, false), Outcome::Passed);
        // Carried only by a request made before the steer was sent: impossible, and no proof.
        assert!(matches!(reached(&[call(1, 100, true)], 1, 500, SteerAck::Delivered, true), Outcome::Failed(_)));
        // A delivered steer that shows up only in the next turn was queued, not delivered.
        assert!(matches!(reached(&[call(1, 0, false), call(2, 900, true)], 1, 500, SteerAck::Delivered, true), Outcome::Failed(_)));
        assert_eq!(reached(&[call(1, 0, false), call(2, 900, true)], 1, 500, SteerAck::Queued, true), Outcome::Passed);
        assert!(matches!(reached(&[call(1, 0, false), call(2, 900, false)], 1, 500, SteerAck::Queued, true), Outcome::Failed(_)));
        assert!(matches!(reached(&[call(1, 0, false)], 1, 500, SteerAck::Queued, false), Outcome::Skipped(_)));
        assert_eq!(reached(&[], 1, 500, SteerAck::Refused, true), Outcome::Passed);
    }
}
