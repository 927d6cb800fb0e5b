//! The checker's verdicts and their two renderings.
//!
//! JSON: `{"checks": {name: {"status": "pass"}, name: {"status": "fail", "reason": ..., "at": N},
//! name: {"status": "skip", "reason": ...}}}` with every catalog check present, in catalog
//! order. `at` is the zero-based index of the observation at fault (the header is not an
//! observation, so observation `at` sits on line `at + 2`); it is omitted only when no
//! observation can be blamed, i.e. the trace has none. A skip carries its reason too, because
//! the page calls an unexercised channel a *recorded* skip. Text: one line per check, then a
//! tally.

use std::fmt::Write as _;

use serde::ser::{Serialize, SerializeMap, Serializer};

/// One check's verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Pass,
    Fail { reason: String, at: Option<usize> },
    Skip { reason: String },
}

impl Outcome {
    pub fn status(&self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail { .. } => "fail",
            Outcome::Skip { .. } => "skip",
        }
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("status", self.status())?;
        match self {
            Outcome::Pass => {}
            Outcome::Fail { reason, at } => {
                map.serialize_entry("reason", reason)?;
                if let Some(at) = at {
                    map.serialize_entry("at", at)?;
                }
            }
            Outcome::Skip { reason } => map.serialize_entry("reason", reason)?,
        }
        map.end()
    }
}

/// Every check's verdict over one trace, in catalog order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Report {
    pub checks: Vec<(&'static str, Outcome)>,
    /// How many observations the trace held.
    pub observations: usize,
}

impl Report {
    /// The verdict of the check of that name.
    pub fn outcome(&self, check: &str) -> Option<&Outcome> {
        self.checks.iter().find(|(name, _)| *name == check).map(|(_, outcome)| outcome)
    }

    pub fn failed(&self) -> bool {
        self.checks.iter().any(|(_, outcome)| matches!(outcome, Outcome::Fail { .. }))
    }

    /// The JSON rendering, pretty-printed, with a trailing newline.
    pub fn to_json(&self) -> String {
        // Serializing strings and integers cannot fail; the fallback keeps the shape valid.
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|_| String::from("{\"checks\": {}}"));
        text.push('\n');
        text
    }

    /// The text rendering, aligned, with a tally line.
    pub fn to_text(&self) -> String {
        let width = self.checks.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        let mut text = String::new();
        let (mut passed, mut failed, mut skipped) = (0, 0, 0);
        for (name, outcome) in &self.checks {
            // Writing into a String cannot fail.
            let _ = match outcome {
                Outcome::Pass => {
                    passed += 1;
                    writeln!(text, "{name:width$}  pass")
                }
                Outcome::Fail { reason, at: Some(at) } => {
                    failed += 1;
                    writeln!(text, "{name:width$}  FAIL  observation {at} (line {}): {reason}", at + 2)
                }
                Outcome::Fail { reason, at: None } => {
                    failed += 1;
                    writeln!(text, "{name:width$}  FAIL  {reason}")
                }
                Outcome::Skip { reason } => {
                    skipped += 1;
                    writeln!(text, "{name:width$}  skip  {reason}")
                }
            };
        }
        let _ = writeln!(text, "{passed} passed, {failed} failed, {skipped} skipped over {} observations", self.observations);
        text
    }
}

impl Serialize for Report {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct Checks<'a>(&'a [(&'static str, Outcome)]);
        impl Serialize for Checks<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(self.0.len()))?;
                for (name, outcome) in self.0 {
                    map.serialize_entry(name, outcome)?;
                }
                map.end()
            }
        }
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry("checks", &Checks(&self.checks))?;
        map.end()
    }
}

/// A check's running verdict: the fault at the lowest observation index wins, so a fault
/// only detectable at the end (an event never acknowledged) is still reported at the
/// observation that caused it, ahead of any later fault found while scanning.
#[derive(Default, Debug)]
pub struct Faults {
    first: Option<(Option<usize>, String)>,
}

impl Faults {
    /// Records a fault at an observation; `reason` is only built when it could be reported.
    pub fn at(&mut self, at: usize, reason: impl FnOnce() -> String) {
        let wins = match &self.first {
            None => true,
            Some((Some(held), _)) => at < *held,
            Some((None, _)) => true,
        };
        if wins {
            self.first = Some((Some(at), reason()));
        }
    }

    /// Records a fault no observation can be blamed for (the trace is empty).
    pub fn unplaced(&mut self, reason: impl FnOnce() -> String) {
        if self.first.is_none() {
            self.first = Some((None, reason()));
        }
    }

    pub fn any(&self) -> bool {
        self.first.is_some()
    }

    /// The verdict: the winning fault, or pass.
    pub fn outcome(self) -> Outcome {
        match self.first {
            Some((at, reason)) => Outcome::Fail { reason, at },
            None => Outcome::Pass,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_issue_shape() {
        let report = Report {
            checks: vec![
                ("ready_handshake", Outcome::Pass),
                ("tool_correlation", Outcome::Fail { reason: "r".into(), at: Some(3) }),
                ("steering_delivered", Outcome::Skip { reason: "s".into() }),
                ("terminal_observation", Outcome::Fail { reason: "t".into(), at: None }),
            ],
            observations: 4,
        };
        let value: serde_json::Value = serde_json::from_str(&report.to_json()).expect("valid JSON");
        assert_eq!(
            value,
            serde_json::json!({"checks": {
                "ready_handshake": {"status": "pass"},
                "tool_correlation": {"status": "fail", "reason": "r", "at": 3},
                "steering_delivered": {"status": "skip", "reason": "s"},
                "terminal_observation": {"status": "fail", "reason": "t"}
            }})
        );
        assert!(report.failed());
        assert_eq!(
            report.to_text(),
            "ready_handshake       pass\n\
             tool_correlation      FAIL  observation 3 (line 5): r\n\
             steering_delivered    skip  s\n\
             terminal_observation  FAIL  t\n\
             1 passed, 2 failed, 1 skipped over 4 observations\n"
        );
    }

    #[test]
    fn the_lowest_placed_fault_wins() {
        let mut faults = Faults::default();
        faults.unplaced(|| "nowhere".into());
        faults.at(7, || "seven".into());
        faults.at(3, || "three".into());
        faults.at(5, || "five".into());
        faults.at(3, || "three again".into());
        assert_eq!(faults.outcome(), Outcome::Fail { reason: "three".into(), at: Some(3) });
        assert_eq!(Faults::default().outcome(), Outcome::Pass);
    }
}
