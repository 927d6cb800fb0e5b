//! The relay's own estimate of a request's size: what an enforced context window
//! (`Config::context_window`) is held against, and what a harness's `checkfu.compaction`
//! is compared with (`verdict::compaction`).
//!
//! The rule is one, for every dialect, once the dialect's reader has accepted the body:
//!
//! - **The message list** is the dialect's list of conversation entries: Messages' and Chat
//!   Completions' `messages`, Responses' `input` (a string `input` is one message).
//!   `messages` is its length.
//! - **The text** is every JSON string value (not the keys) inside that list and inside the
//!   request's system prompt (Messages' `system`, Responses' `instructions`; Chat carries it
//!   as a message), with escapes decoded, so content, tool inputs and tool results alike.
//!   Tool definitions, sampling parameters and metadata are not counted: they are not what
//!   a harness compacts.
//! - **`tokens`** is that text's UTF-8 length divided by four, rounded up.
//!
//! Four bytes a token is the usual rough rule for English text (the relay's usage members use
//! it too); it is not any provider's tokenizer, which is why a harness's own estimates are
//! held to it only within a tolerance (`verdict::compaction::TOLERANCE_PERCENT`). It is
//! deterministic: the same body always gets the same estimate, whatever else the relay saw.

use serde_json::{Map, Value};

use super::dialect::Served;

/// A request's size as the relay estimates it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Entries in the dialect's message list.
    pub messages: usize,
    /// The estimated tokens of its text and system prompt.
    pub tokens: u64,
}

/// How many bytes the rule counts as one token.
pub const BYTES_PER_TOKEN: u64 = 4;

/// The size of a request body of `dialect` (an object its reader accepted).
pub fn of(dialect: Served, body: &Map<String, Value>) -> Size {
    let (list, system) = match dialect {
        Served::AnthropicMessages => (body.get("messages"), body.get("system")),
        Served::OpenaiChat => (body.get("messages"), None),
        Served::OpenaiResponses => (body.get("input"), body.get("instructions")),
    };
    let messages = match list {
        Some(Value::Array(items)) => items.len(),
        Some(Value::String(_)) => 1,
        _ => 0,
    };
    let bytes = list.map_or(0, string_bytes) + system.map_or(0, string_bytes);
    Size { messages, tokens: tokens(bytes) }
}

/// The rule's tokens for `bytes` of text.
pub fn tokens(bytes: u64) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN)
}

/// The UTF-8 bytes of every string value inside `value`. Iterative, so a deep body (which
/// the JSON parser's own depth limit bounds anyway) costs no stack.
fn string_bytes(value: &Value) -> u64 {
    let mut total = 0u64;
    let mut pending = vec![value];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(text) => total += text.len() as u64,
            Value::Array(items) => pending.extend(items),
            Value::Object(members) => pending.extend(members.values()),
            _ => {}
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn size(dialect: Served, body: Value) -> Size {
        of(dialect, body.as_object().expect("object"))
    }

    #[test]
    fn the_message_list_and_the_system_prompt_are_counted_not_the_tools() {
        // "user" (4) + 40 bytes, "assistant" (9) + "text" (4) + 11: 68 bytes, and the
        // system prompt's 12: 80 bytes are 20 tokens. The tool definition adds nothing.
        let body = json!({
            "model": "m", "system": "be brief now",
            "messages": [
                {"role": "user", "content": "x".repeat(40)},
                {"role": "assistant", "content": [{"type": "text", "text": "hello there"}]},
            ],
            "tools": [{"name": "read_file", "description": "y".repeat(4000), "input_schema": {}}],
        });
        assert_eq!(size(Served::AnthropicMessages, body), Size { messages: 2, tokens: 20 });
        // Chat has no `system` member: it is a message.
        let chat = json!({"model": "m", "messages": [{"role": "system", "content": "abc"}, {"role": "user", "content": "é"}]});
        // "system" 6 + 3 + "user" 4 + 2 (é is two bytes) = 15 bytes: 4 tokens, rounded up.
        assert_eq!(size(Served::OpenaiChat, chat), Size { messages: 2, tokens: 4 });
    }

    #[test]
    fn a_string_input_is_one_message_and_instructions_count() {
        let body = json!({"model": "m", "input": "12345678", "instructions": "abcd"});
        assert_eq!(size(Served::OpenaiResponses, body), Size { messages: 1, tokens: 3 });
        let items = json!({"model": "m", "input": [{"type": "function_call_output", "call_id": "c", "output": "ok"}]});
        // "function_call_output" 20 + "c" 1 + "ok" 2 = 23 bytes: 6 tokens.
        assert_eq!(size(Served::OpenaiResponses, items), Size { messages: 1, tokens: 6 });
    }

    #[test]
    fn escapes_are_decoded_and_the_same_body_gets_the_same_size() {
        let escaped: Value =
            serde_json::from_str(r#"{"model": "m", "messages": [{"role": "user", "content": "\u0041\n"}]}"#).expect("JSON");
        // "user" 4 + "A\n" 2 = 6 bytes: 2 tokens.
        let once = size(Served::OpenaiChat, escaped.clone());
        assert_eq!(once, Size { messages: 1, tokens: 2 });
        assert_eq!(size(Served::OpenaiChat, escaped), once);
    }
}
