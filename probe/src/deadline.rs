//! A run's deadline, the one form it takes from the command line to the last wait
//! ([`Deadline`]): what is left of it, whether it passed, and a step's bound within it.

use std::time::{Duration, Instant};

/// When the whole run must end (`--deadline`): an image's build, pull and unpack spend the
/// same budget the harness then runs in. The one form a run's deadline takes: the plan holds
/// it, and the image, the session and each step read it, so no part of the run turns what is
/// left of it back into an instant of its own (which would move it by the time that took).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Deadline {
    at: Instant,
    /// The budget as given, for what a report says of it.
    given: Duration,
}

impl Deadline {
    /// `given` from `start`.
    pub fn from(start: Instant, given: Duration) -> Deadline {
        Deadline { at: start + given, given }
    }

    /// `given` from now.
    pub fn after(given: Duration) -> Deadline {
        Deadline::from(Instant::now(), given)
    }

    /// The budget as given (`--deadline`).
    pub fn given(&self) -> Duration {
        self.given
    }

    /// What is left of it.
    pub fn remaining(&self) -> Duration {
        self.at.saturating_duration_since(Instant::now())
    }

    /// Whether it has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.at
    }

    /// The end of a wait of at most `within` from now that never outlasts the run: a step's
    /// bound.
    pub fn min_with(&self, within: Duration) -> Instant {
        (Instant::now() + within).min(self.at)
    }

    /// The earlier of `until` and the deadline: a wait's bound.
    pub fn bound(&self, until: Instant) -> Instant {
        until.min(self.at)
    }

    /// Whether a wait until `until` reaches the deadline, so its end is the run's and not
    /// the wait's own.
    pub fn reached_by(&self, until: Instant) -> bool {
        until >= self.at
    }

    /// The instant itself, for the image tools, which wait on instants like the standard
    /// library's own waits (they are a crate below this one's types).
    pub fn instant(&self) -> Instant {
        self.at
    }
}
