//! Permission answers held back a while: to see whether the harness waits for them. A tool's
//! effect (a file write, a terminal) asked for while its permission request is still
//! unanswered ran before the user could say no; with every answer sent at once, a harness
//! that sends the effect right behind its request, unread answer or not, looks the same as
//! one that waited. Held for a short while, the two differ on the wire.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::client::Answer;

/// The longest a held permission answer may be held (a caller's hold is cut to it): the
/// turn's step time bounds the turn, and an honest harness waits this long for nothing.
pub const MAX_HOLD: Duration = Duration::from_secs(2);

/// A permission request's answer, not sent yet.
#[derive(Debug)]
pub struct Held {
    /// The request's id, as it came.
    pub id: Value,
    pub answer: Answer,
    /// What the answer refuses, if it does (`reject_once`, `cancelled`, …).
    pub refused: Option<&'static str>,
    /// When it goes out.
    pub release: Instant,
}

impl Held {
    pub fn new(id: Value, answer: Answer, refused: Option<&'static str>, hold: Duration) -> Held {
        Held { id, answer, refused, release: Instant::now() + hold.min(MAX_HOLD) }
    }

    pub fn due(&self) -> bool {
        Instant::now() >= self.release
    }
}
