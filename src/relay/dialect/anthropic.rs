//! Anthropic Messages (`POST /v1/messages`): `messages` of user and assistant turns whose
//! content is a string or typed blocks (`text`, `tool_use`, `tool_result`), tools as
//! `{name, input_schema}`; the stream is `message_start`, then per content block
//! `content_block_start` / `content_block_delta` / `content_block_stop`, then
//! `message_delta` (the stop reason and usage) and `message_stop`.

use serde_json::{json, Map, Value};

use super::{content_text, event, tokens, Ids, Reply, Tool, Turn};

pub(super) fn read(body: &Map<String, Value>, turn: &mut Turn) -> Result<(), String> {
    let messages = body.get("messages").and_then(Value::as_array).ok_or("the request has no `messages` array")?;
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        match message.get("content") {
            Some(Value::Array(blocks)) => {
                let mut text = String::new();
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("text") => {
                            if let Some(t) = block.get("text").and_then(Value::as_str) {
                                if !text.is_empty() {
                                    text.push('\n');
                                }
                                text.push_str(t);
                            }
                        }
                        Some("tool_result") => turn.tool_results.push(block.get("content").map(content_text).unwrap_or_default()),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    turn.user_texts.push(text);
                }
            }
            Some(content) => turn.user_texts.push(content_text(content)),
            None => {}
        }
    }
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for tool in tools {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let schema = tool.get("input_schema").cloned().unwrap_or_else(|| json!({}));
                turn.tools.push(Tool { name: name.to_owned(), schema });
            }
        }
    }
    Ok(())
}

fn block(reply: &Reply, ids: &Ids) -> Value {
    match reply {
        Reply::Text(text) => json!({"type": "text", "text": text}),
        Reply::ToolCall { name, input } => json!({"type": "tool_use", "id": ids.call, "name": name, "input": input}),
    }
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::ToolCall { .. } => "tool_use",
    }
}

fn output_tokens(reply: &Reply) -> u64 {
    match reply {
        Reply::Text(text) => tokens(text),
        Reply::ToolCall { input, .. } => tokens(&input.to_string()),
    }
}

fn input_tokens(turn: &Turn) -> u64 {
    turn.user_texts.iter().chain(&turn.tool_results).map(|t| tokens(t)).sum::<u64>().max(1)
}

pub(super) fn json(reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
    json!({
        "id": ids.message,
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": [block(reply, ids)],
        "stop_reason": stop_reason(reply),
        "stop_sequence": null,
        "usage": {"input_tokens": input_tokens(turn), "output_tokens": output_tokens(reply)},
    })
}

pub(super) fn sse(reply: &Reply, turn: &Turn, ids: &Ids) -> String {
    let mut out = String::new();
    let start = json!({
        "type": "message_start",
        "message": {
            "id": ids.message, "type": "message", "role": "assistant", "model": turn.model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input_tokens(turn), "output_tokens": 1},
        },
    });
    event(&mut out, Some("message_start"), &start);
    let (opening, delta) = match reply {
        Reply::Text(text) => (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": text})),
        Reply::ToolCall { name, input } => (
            json!({"type": "tool_use", "id": ids.call, "name": name, "input": {}}),
            json!({"type": "input_json_delta", "partial_json": input.to_string()}),
        ),
    };
    event(&mut out, Some("content_block_start"), &json!({"type": "content_block_start", "index": 0, "content_block": opening}));
    event(&mut out, Some("content_block_delta"), &json!({"type": "content_block_delta", "index": 0, "delta": delta}));
    event(&mut out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0}));
    let finish = json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null},
        "usage": {"output_tokens": output_tokens(reply)},
    });
    event(&mut out, Some("message_delta"), &finish);
    event(&mut out, Some("message_stop"), &json!({"type": "message_stop"}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_user_text_tool_results_and_tools() {
        let body = json!({
            "model": "m", "stream": true,
            "messages": [
                {"role": "user", "content": "first cf-0123456789abcdef"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "token"}]}]},
            ],
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}, {"type": "web_search_20250305", "name": "web_search"}],
        });
        let turn = super::super::Served::AnthropicMessages.read(&body).expect("reads");
        assert!(turn.stream);
        assert_eq!(turn.user_texts, vec!["first cf-0123456789abcdef"]);
        assert_eq!(turn.tool_results, vec!["token"]);
        assert_eq!(turn.tools.len(), 2);
        assert_eq!(turn.tools[1].schema, json!({}));
    }

    #[test]
    fn the_stream_opens_and_closes_in_the_sdk_order() {
        let turn = Turn { model: "m".into(), ..Turn::default() };
        let body = sse(&Reply::Text("hi".into()), &turn, &Ids::new(1));
        let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(names, ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]);
    }
}
