//! The `checkfu.journal_checkpoint` a harness hands the client for custody: the client holds
//! the last one the harness sent, and hands its state back through `checkfu.resume`.

use serde_json::{json, Value};

use checkfu_wire::decode::tables::Slot;

/// The member's key, as the catalog's slot names it.
pub const CHECKPOINT_KEY: &str = Slot::CheckfuJournalCheckpoint.name();

/// The last checkpoint a harness sent, as the client holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Custody {
    /// State to hand back in `checkfu.resume`.
    Held { version: u64, state: String },
    /// An explicit invalidation: the state was too large to export.
    TooLarge { size_bytes: u64 },
    /// A member the decoder dropped as malformed (or that lacks what a checkpoint holds), and why.
    Malformed(String),
}

impl Custody {
    /// Reads a checkpoint the decoder accepted (its shape checked against the slot's schema,
    /// read again here so that nothing is taken on faith).
    pub fn of(value: &Value) -> Custody {
        let version = value.get("version").and_then(Value::as_u64).filter(|v| (1..=u64::from(u16::MAX)).contains(v));
        match (value.get("status").and_then(Value::as_str), version) {
            (Some("checkpoint"), Some(version)) => match value.get("state").and_then(Value::as_str) {
                Some(state) => Custody::Held { version, state: state.to_owned() },
                None => Custody::Malformed(String::from("its `state` is not a string")),
            },
            (Some("too_large"), Some(_)) => {
                Custody::TooLarge { size_bytes: value.get("size_bytes").and_then(Value::as_u64).unwrap_or_default() }
            }
            _ => Custody::Malformed(String::from("it is neither a `checkpoint` nor a `too_large` invalidation with a version from 1")),
        }
    }

    /// The `checkfu.resume` member that hands the state back, when state is held.
    pub fn resume(&self) -> Option<Value> {
        match self {
            Custody::Held { version, state } => Some(json!({"version": version, "state": state})),
            Custody::TooLarge { .. } | Custody::Malformed(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_is_held_and_handed_back_as_resume_state() {
        let held = Custody::of(&json!({"status": "checkpoint", "version": 2, "state": "abc"}));
        assert_eq!(held, Custody::Held { version: 2, state: String::from("abc") });
        assert_eq!(held.resume(), Some(json!({"version": 2, "state": "abc"})));
    }

    #[test]
    fn an_invalidation_or_a_malformed_member_holds_nothing_to_resume() {
        let large = Custody::of(&json!({"status": "too_large", "version": 1, "size_bytes": 9}));
        assert_eq!(large, Custody::TooLarge { size_bytes: 9 });
        assert_eq!(large.resume(), None);
        for bad in [json!({"status": "checkpoint", "version": 0, "state": "x"}), json!({"status": "checkpoint", "version": 1, "state": 7})]
        {
            let malformed = Custody::of(&bad);
            assert!(matches!(malformed, Custody::Malformed(_)), "{bad}: {malformed:?}");
            assert_eq!(malformed.resume(), None);
        }
    }
}
