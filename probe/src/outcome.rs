//! How a step, a check (of the relay's record, or the conformance checker's, read through
//! one conversion) or a verdict ended: one [`Outcome`] for all of them, so the lanes, the
//! verdicts and the report speak of a failure in one way.
//!
//! A failure is a [`Reason`]: what kind of fact decided it ([`Kind`]) and that fact in words.
//! The kind is what the run reasons with (whether the relay's refusals may be the cause); the
//! words are what the report prints, exactly as the step has always said them.

use std::fmt;

/// How a step, check or verdict ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Passed,
    Failed(Reason),
    /// It did not run, or had nothing to judge, and why.
    Skipped(String),
}

impl Outcome {
    /// A failure of `kind`, in `words`.
    pub fn failed(kind: Kind, words: impl fmt::Display) -> Outcome {
        Outcome::Failed(Reason::new(kind, words))
    }

    pub fn skipped(why: impl Into<String>) -> Outcome {
        Outcome::Skipped(why.into())
    }

    pub fn passed(&self) -> bool {
        matches!(self, Outcome::Passed)
    }

    pub fn is_failed(&self) -> bool {
        matches!(self, Outcome::Failed(_))
    }

    /// The words the report gives beside the status: the failure's reason, or why it was
    /// skipped; `None` when it passed.
    pub fn why(&self) -> Option<&str> {
        match self {
            Outcome::Passed => None,
            Outcome::Failed(reason) => Some(reason.words()),
            Outcome::Skipped(why) => Some(why),
        }
    }

    /// Both outcomes' failures, joined with `; ` when both failed (a teardown in two parts).
    pub fn and_also(self, other: Outcome) -> Outcome {
        match (self, other) {
            (Outcome::Failed(first), Outcome::Failed(second)) => Outcome::Failed(first.then(&second)),
            (Outcome::Failed(first), _) => Outcome::Failed(first),
            (_, other) => other,
        }
    }

    /// The outcome as a conformance check states it, for a check the relay's record decides.
    pub fn to_check(&self) -> checkfu_wire::conformance::Outcome {
        use checkfu_wire::conformance::Outcome as Check;
        match self {
            Outcome::Passed => Check::Pass,
            Outcome::Failed(reason) => Check::Fail { reason: reason.to_string(), at: None },
            Outcome::Skipped(why) => Check::Skip { reason: why.clone() },
        }
    }
}

/// A conformance check's outcome, as the checker below the probe states it (its JSON is
/// `conform --format json`'s), read as the probe's one outcome: a failure is of
/// [`Kind::Check`].
impl From<&checkfu_wire::conformance::Outcome> for Outcome {
    fn from(check: &checkfu_wire::conformance::Outcome) -> Outcome {
        use checkfu_wire::conformance::Outcome as Check;
        match check {
            Check::Pass => Outcome::Passed,
            Check::Fail { reason, .. } => Outcome::failed(Kind::Check, reason),
            Check::Skip { reason } => Outcome::skipped(reason.clone()),
        }
    }
}

impl From<Result<(), Reason>> for Outcome {
    fn from(result: Result<(), Reason>) -> Outcome {
        result.map_or_else(Outcome::Failed, |()| Outcome::Passed)
    }
}

/// Why something failed: the kind of the deciding fact, and the fact in words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{words}")]
pub struct Reason {
    pub kind: Kind,
    words: String,
}

impl Reason {
    pub fn new(kind: Kind, words: impl fmt::Display) -> Reason {
        Reason { kind, words: words.to_string() }
    }

    pub fn words(&self) -> &str {
        &self.words
    }

    /// The same reason under what it happened in (`initialize: …`, `run 2: …`).
    pub fn within(self, what: impl fmt::Display) -> Reason {
        Reason { kind: self.kind, words: format!("{what}: {}", self.words) }
    }

    /// The same reason with a fact added after it (`…; the relay refused …`), its kind kept.
    pub fn then(self, more: impl fmt::Display) -> Reason {
        Reason { kind: self.kind, words: format!("{}; {more}", self.words) }
    }
}

/// The kind of fact that failed a step, check or verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The harness did not complete what was asked: no answer in time, a closed or broken
    /// wire, a request it could not be sent, more output than the probe keeps, a CLI that
    /// hung, was killed or exited non-zero.
    Harness,
    /// The harness answered, but not as the protocol asks: with an error, without a member
    /// it must carry, or with another stop reason.
    Answer,
    /// Admission refused the harness's declaration.
    Declaration,
    /// A value the harness declared was exercised, and the harness does not serve it (a
    /// declared subagent that never delegated, or only narrated).
    NotServed,
    /// The relay's record shows the prompt never reached the model.
    Unasked,
    /// The model was asked, but its answer (its reply token, its structured value) did not
    /// reach the output as the model gave it.
    Unanswered,
    /// A resumed session did not carry the first run's turn, or could not be resumed.
    Continuity,
    /// A scripted input in the middle of a turn (a cancel, a steer) was not honoured.
    MidTurn,
    /// A fault the relay injected that the harness did not recover from.
    Recovery,
    /// A compaction under the enforced window that the record does not bear out.
    Compaction,
    /// Something the run started outlived its teardown.
    Teardown,
    /// A conformance check of the trace failed (the checker's own reason).
    Check,
}

impl Kind {
    /// The kind as the formats CI reads name a failure's type (JUnit's `type`, CTRF's
    /// `rawStatus`).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Harness => "harness",
            Kind::Answer => "answer",
            Kind::Declaration => "declaration",
            Kind::NotServed => "not_served",
            Kind::Unasked => "unasked",
            Kind::Unanswered => "unanswered",
            Kind::Continuity => "continuity",
            Kind::MidTurn => "mid_turn",
            Kind::Recovery => "recovery",
            Kind::Compaction => "compaction",
            Kind::Teardown => "teardown",
            Kind::Check => "check",
        }
    }

    /// Whether a refusal of the relay can be the cause: the model was not asked, or the
    /// harness did not complete its turn (a path off the allow-list, a missing key). A turn
    /// the model did answer failed for another reason.
    pub fn refusals_may_cause(self) -> bool {
        matches!(self, Kind::Harness | Kind::Answer | Kind::Unasked)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reason_renders_its_words_and_keeps_its_kind() {
        let reason = Reason::new(Kind::Harness, "no answer within 1.0 s").within("initialize");
        assert_eq!(reason.to_string(), "initialize: no answer within 1.0 s");
        let reason = reason.then("the relay refused");
        assert_eq!((reason.kind, reason.words()), (Kind::Harness, "initialize: no answer within 1.0 s; the relay refused"));
    }

    #[test]
    fn two_failures_join_and_a_pass_adds_nothing() {
        let a = Outcome::failed(Kind::Teardown, "a");
        assert_eq!(a.clone().and_also(Outcome::failed(Kind::Teardown, "b")).why(), Some("a; b"));
        assert_eq!(Outcome::Passed.and_also(a.clone()), a);
        assert_eq!(a.clone().and_also(Outcome::Passed), a);
        assert_eq!(Outcome::from(Ok(())), Outcome::Passed);
        let check = checkfu_wire::conformance::Outcome::Fail { reason: String::from("c"), at: Some(3) };
        assert_eq!(Outcome::from(&check), Outcome::failed(Kind::Check, "c"));
        assert_eq!(Outcome::from(&Outcome::Passed.to_check()), Outcome::Passed);
    }
}
