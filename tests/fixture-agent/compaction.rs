//! The fixture agent's compaction: what it does when the model answers that its request is
//! past the context window, under the policy the client's `checkfu.runtime_config` admitted.
//!
//! It compacts reactively, as a harness that cannot count its provider's tokens does: on
//! the provider's context-length error (OpenAI's `context_length_exceeded`, Anthropic's
//! "prompt is too long"), it drops the oldest messages before the latest user message
//! until its own estimate fits the window it was given, reports the compaction as
//! `checkfu.compaction`, and sends the request again. Its estimate follows the relay's
//! published rule (four bytes a token over every string of the message list), so an honest
//! claim agrees with the record; `--lie-compaction` makes it claim otherwise.

use serde_json::{json, Value};

/// The policy `checkfu.runtime_config` admitted, with the window it names. Whatever
/// strategy it admits, this agent truncates the oldest messages, and says so (a claim the
/// probe sets against the admitted strategy).
#[derive(Clone, Debug)]
pub struct Policy {
    pub window: u64,
}

impl Policy {
    /// The policy of a `session/new` request's runtime config; `None` when it admits no
    /// compaction (the agent must not compact then) or carries no window.
    pub fn of(runtime_config: Option<&Value>) -> Option<Policy> {
        let config = runtime_config?;
        config.pointer("/compaction/strategy")?.as_str()?;
        Some(Policy { window: config.get("context_window")?.as_u64()? })
    }
}

/// How `--lie-compaction` misreports a compaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lie {
    /// One message more than it dropped.
    Count,
    /// Ten times the tokens it had before.
    Tokens,
}

impl Lie {
    pub fn parse(text: &str) -> Option<Lie> {
        match text {
            "count" => Some(Lie::Count),
            "tokens" => Some(Lie::Tokens),
            _ => None,
        }
    }
}

/// One compaction as it happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compacted {
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub dropped: usize,
}

impl Compacted {
    /// Its `checkfu.compaction`, true unless `lie` says otherwise.
    pub fn claim(&self, strategy: &str, lie: Option<Lie>) -> Value {
        let (tokens_before, dropped) = match lie {
            None => (self.tokens_before, self.dropped),
            Some(Lie::Count) => (self.tokens_before, self.dropped + 1),
            Some(Lie::Tokens) => (self.tokens_before * 10, self.dropped),
        };
        json!({"strategy": strategy, "tokens_before": tokens_before, "tokens_after": self.tokens_after, "compacted_messages": dropped})
    }
}

/// Whether an answer is the provider's context-length error, in either family's shape.
pub fn is_overflow(status: u16, body: &str) -> bool {
    status == 400 && (body.contains("context_length_exceeded") || body.contains("prompt is too long"))
}

/// The relay's rule: every string's UTF-8 bytes in `messages`, four a token, rounded up.
pub fn estimate(messages: &[Value]) -> u64 {
    fn bytes(value: &Value) -> u64 {
        match value {
            Value::String(text) => text.len() as u64,
            Value::Array(items) => items.iter().map(bytes).sum(),
            Value::Object(members) => members.values().map(bytes).sum(),
            _ => 0,
        }
    }
    messages.iter().map(bytes).sum::<u64>().div_ceil(4)
}

/// Drops the oldest messages before the latest user message until the rest fits `window`
/// (and starts with a user message, as the Messages API asks); `None`, with `history` as it
/// was, when even the latest user message and what follows it do not fit.
pub fn truncate_oldest(history: &mut Vec<Value>, window: u64) -> Option<Compacted> {
    let tokens_before = estimate(history);
    let latest_user = history.iter().rposition(|m| m.get("role").and_then(Value::as_str) == Some("user"))?;
    let user_at = |m: &Value| m.get("role").and_then(Value::as_str) == Some("user");
    let keep_from = (0..=latest_user).find(|&from| user_at(&history[from]) && estimate(&history[from..]) <= window)?;
    if keep_from == 0 {
        return None;
    }
    history.drain(..keep_from);
    Some(Compacted { tokens_before, tokens_after: estimate(history), dropped: keep_from })
}

/// `count` earlier exchanges (a user message and the assistant's answer each) that a
/// harness reloaded from its own store, to open a conversation that has something to
/// compact. Each is about 400 bytes; none holds the probe's nonce.
pub fn earlier_exchanges(count: usize) -> Vec<Value> {
    let filler = "The notes from the earlier session list the files that were read, the commands that ran and what each one printed. ";
    (0..count)
        .flat_map(|k| {
            [
                json!({"role": "user", "content": format!("Earlier request {k}: summarize the notes. {}", filler.repeat(2))}),
                json!({"role": "assistant", "content": format!("Earlier answer {k}: {}", filler.repeat(2))}),
            ]
        })
        .collect()
}
