//! Whether a declared `native_checkpoint: external_custody` is served: the harness hands its
//! native state to the client (`checkfu.journal_checkpoint`), and a fresh process of it,
//! with a fresh workspace and home, takes that state back (`checkfu.resume`) and goes on
//! with the first turn's context.
//!
//! The client holds the last checkpoint the harness sent. The first turn's nonce is what
//! the context is known by: the resumed turn's prompt does not carry it, so the resumed
//! process's first model request carries it only when the state brought the first turn back.

use crate::session::custody::Custody;

/// Why a declared native checkpoint failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointMiss {
    #[error("the harness emitted no `checkfu.journal_checkpoint`, so the client holds nothing to resume")]
    NotEmitted,
    #[error("its last `checkfu.journal_checkpoint` is malformed ({0}), so the client holds nothing to resume")]
    Malformed(String),
    #[error(
        "its last `checkfu.journal_checkpoint` is a `too_large` invalidation ({size_bytes} bytes), so the client holds nothing to resume"
    )]
    TooLarge { size_bytes: u64 },
    #[error("the model was never asked: the relay served no call in the resumed turn")]
    Unasked,
    #[error(
        "the resumed process's first model request does not carry the first turn's nonce: the checkpoint handed back in \
         `checkfu.resume` did not bring the first turn's context back"
    )]
    ContextLost,
}

/// The state to hand back: the checkpoint the client holds, when it holds state.
pub fn held(custody: Option<&Custody>) -> Result<serde_json::Value, CheckpointMiss> {
    match custody {
        None => Err(CheckpointMiss::NotEmitted),
        Some(Custody::Malformed(why)) => Err(CheckpointMiss::Malformed(why.clone())),
        Some(Custody::TooLarge { size_bytes }) => Err(CheckpointMiss::TooLarge { size_bytes: *size_bytes }),
        Some(held) => held.resume().ok_or(CheckpointMiss::NotEmitted),
    }
}

/// Judges the resumed turn: `marks` the watched marks each of its calls carried, in the order
/// the relay served them, where mark 0 is the first turn's nonce. The first call decides: it
/// is the model's first sight of the resumed conversation.
pub fn resumed(marks: &[Vec<usize>]) -> Result<(), CheckpointMiss> {
    match marks.first() {
        None => Err(CheckpointMiss::Unasked),
        Some(first) if first.contains(&0) => Ok(()),
        Some(_) => Err(CheckpointMiss::ContextLost),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_held_state_is_handed_back() {
        let state = Custody::Held { version: 1, state: String::from("s") };
        assert_eq!(held(Some(&state)), Ok(serde_json::json!({"version": 1, "state": "s"})));
        assert_eq!(held(None), Err(CheckpointMiss::NotEmitted));
        assert_eq!(held(Some(&Custody::TooLarge { size_bytes: 5 })), Err(CheckpointMiss::TooLarge { size_bytes: 5 }));
        let malformed = held(Some(&Custody::Malformed(String::from("no version")))).expect_err("malformed");
        assert!(malformed.to_string().contains("malformed (no version)"), "{malformed}");
    }

    #[test]
    fn the_first_resumed_request_must_carry_the_first_turns_nonce() {
        assert_eq!(resumed(&[vec![0], vec![]]), Ok(()));
        assert_eq!(resumed(&[]), Err(CheckpointMiss::Unasked));
        // A later call that carries it does not make up for a first one without it.
        assert_eq!(resumed(&[vec![], vec![0]]), Err(CheckpointMiss::ContextLost));
    }
}
