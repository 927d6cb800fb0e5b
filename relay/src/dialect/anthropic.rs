//! Anthropic Messages (`POST /v1/messages`): `messages` of user and assistant turns whose
//! content is a string or typed blocks (`text`, `tool_use`, `tool_result`), tools as
//! `{name, input_schema}`; the stream is `message_start`, then per content block
//! `content_block_start` / `content_block_delta` / `content_block_stop`, then
//! `message_delta` (the stop reason and usage) and `message_stop`.
//!
//! Every member of the official SDK's response models is sent, with the value the API
//! sends when there is nothing to say (cache counts 0, `service_tier` "standard",
//! `container` null): clients compute from them (a context meter sums the cache counts),
//! and a member the relay left out reads as null to such a client, not as 0.

use serde_json::{json, Map, Value};

use super::super::fault::Fault;
use super::{content_text, event, Failure, Ids, Reply, RequestError, Tool, Turn};

pub(super) fn read(body: &Map<String, Value>, turn: &mut Turn) -> Result<(), RequestError> {
    let messages = body.get("messages").and_then(Value::as_array).ok_or(RequestError::NoMessages)?;
    for message in messages {
        if message.get("role").and_then(Value::as_str) != Some("user") {
            continue;
        }
        match message.get("content") {
            Some(Value::Array(blocks)) => {
                let mut text = String::new();
                // A user message that returns tool results continues the turn it answers:
                // the text beside them (Claude Code's reminders, or the next prompt of a
                // resumed session whose last turn ended in a tool call) joins that turn
                // rather than starting one.
                let continues = blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"));
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
                match (continues, turn.user_texts.last_mut()) {
                    (true, Some(last)) if !text.is_empty() => {
                        last.push('\n');
                        last.push_str(&text);
                    }
                    _ if !text.is_empty() => turn.user_texts.push(text),
                    _ => {}
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
        Reply::Text(text) => json!({"type": "text", "text": text, "citations": null}),
        Reply::ToolCall { name, input } => tool_use(name, input.clone(), ids),
    }
}

/// A `tool_use` block, called by the model itself (`caller` direct), in no toolset.
fn tool_use(name: &str, input: Value, ids: &Ids) -> Value {
    json!({"type": "tool_use", "id": ids.call, "name": name, "input": input, "caller": {"type": "direct"}, "toolset_name": null})
}

/// The server-side tool counts and output details that both usage shapes carry.
fn neutral_counts() -> Value {
    json!({
        "output_tokens_details": {"thinking_tokens": 0},
        "server_tool_use": {"web_fetch_requests": 0, "web_search_requests": 0},
    })
}

/// `Usage`, as in a message: nothing cached, nothing written to the cache.
fn usage(input: u64, output: u64) -> Value {
    let mut usage = json!({
        "input_tokens": input,
        "output_tokens": output,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
        "inference_geo": null,
        "service_tier": "standard",
        "speed": "standard",
    });
    merge(&mut usage, neutral_counts());
    usage
}

/// `MessageDeltaUsage`, as in `message_delta`: the running totals.
fn delta_usage(input: u64, output: u64) -> Value {
    let mut usage = json!({"input_tokens": input, "output_tokens": output, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0});
    merge(&mut usage, neutral_counts());
    usage
}

fn merge(into: &mut Value, from: Value) {
    if let (Value::Object(into), Value::Object(from)) = (into, from) {
        into.extend(from);
    }
}

/// A message's members, its content and stop aside.
fn message(turn: &Turn, ids: &Ids, content: Value, stop_reason: Option<&str>, usage: Value) -> Value {
    json!({
        "id": ids.message,
        "type": "message",
        "role": "assistant",
        "model": turn.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "stop_details": null,
        "container": null,
        "diagnostics": null,
        "usage": usage,
    })
}

fn stop_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "end_turn",
        Reply::ToolCall { .. } => "tool_use",
    }
}

pub(super) fn json(reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
    let (input, output) = super::usage_tokens(reply, turn);
    message(turn, ids, json!([block(reply, ids)]), Some(stop_reason(reply)), usage(input, output))
}

pub(super) fn sse(reply: &Reply, turn: &Turn, ids: &Ids, pieces: usize) -> String {
    let mut out = String::new();
    // As the API streams it: the input counted at the start, one output token so far.
    let (input, output) = super::usage_tokens(reply, turn);
    let start = json!({"type": "message_start", "message": message(turn, ids, json!([]), None, usage(input, 1))});
    event(&mut out, Some("message_start"), &start);
    let (opening, deltas) = match reply {
        Reply::Text(text) => (
            json!({"type": "text", "text": "", "citations": null}),
            super::text_pieces(text, pieces).into_iter().map(|piece| json!({"type": "text_delta", "text": piece})).collect(),
        ),
        Reply::ToolCall { name, input } => {
            (tool_use(name, json!({}), ids), vec![json!({"type": "input_json_delta", "partial_json": input.to_string()})])
        }
    };
    event(&mut out, Some("content_block_start"), &json!({"type": "content_block_start", "index": 0, "content_block": opening}));
    for delta in deltas {
        event(&mut out, Some("content_block_delta"), &json!({"type": "content_block_delta", "index": 0, "delta": delta}));
    }
    event(&mut out, Some("content_block_stop"), &json!({"type": "content_block_stop", "index": 0}));
    let finish = json!({
        "type": "message_delta",
        "delta": {"stop_reason": stop_reason(reply), "stop_sequence": null, "stop_details": null, "container": null},
        "usage": delta_usage(input, output),
    });
    event(&mut out, Some("message_delta"), &finish);
    event(&mut out, Some("message_stop"), &json!({"type": "message_stop"}));
    out
}

/// A fault's error answer, as the API sends it: `{"type": "error", "error": {"type",
/// "message"}, "request_id"}`, the id also in the `request-id` header the SDK reads.
/// `overflow` gives the prompt's length in tokens from the window and the entry's count.
pub(super) fn failure(fault: Fault, overflow: impl Fn(u64, Option<u64>) -> u64, ids: &Ids) -> Failure {
    let mut headers = vec![("request-id", ids.request())];
    let (status, kind, message) = match fault {
        Fault::RateLimit { retry_after } => {
            headers.push(("retry-after", retry_after.to_string()));
            let message = "Number of requests has exceeded your per-minute rate limit (https://docs.claude.com/en/api/rate-limits). \
                           You can see the response headers for current usage. Please try again later.";
            (429, "rate_limit_error", message.to_owned())
        }
        Fault::Overloaded => (529, "overloaded_error", String::from("Overloaded")),
        Fault::ContextOverflow { tokens, maximum } => {
            (400, "invalid_request_error", format!("prompt is too long: {} tokens > {maximum} maximum", overflow(maximum, tokens)))
        }
        Fault::ServerError | Fault::StreamCut { .. } => (500, "api_error", String::from("Internal server error")),
    };
    let body = json!({"type": "error", "error": {"type": kind, "message": message}, "request_id": ids.request()});
    Failure { status, headers, body }
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
        let body = sse(&Reply::Text("hi".into()), &turn, &Ids::new(1), 1);
        let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(
            names,
            ["message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop"]
        );
    }

    #[test]
    fn faults_answer_in_the_apis_error_shape() {
        let ids = Ids::new(3);
        let overflow = |maximum: u64, tokens: Option<u64>| tokens.unwrap_or(maximum + 1);
        let limited = failure(Fault::RateLimit { retry_after: 4 }, overflow, &ids);
        assert_eq!(limited.status, 429);
        assert!(
            limited.headers.contains(&("retry-after", "4".into())) && limited.headers.contains(&("request-id", "req_cfrelay000003".into()))
        );
        assert_eq!(limited.body["error"]["type"], "rate_limit_error");
        assert_eq!(limited.body["request_id"], "req_cfrelay000003");
        let overloaded = failure(Fault::Overloaded, overflow, &ids);
        assert_eq!((overloaded.status, overloaded.body["error"]["type"].as_str()), (529, Some("overloaded_error")));
        assert_eq!(failure(Fault::ServerError, overflow, &ids).status, 500);
        let long = failure(Fault::ContextOverflow { tokens: Some(250_000), maximum: 200_000 }, overflow, &ids);
        assert_eq!(long.status, 400);
        assert_eq!(
            long.body["error"],
            json!({"type": "invalid_request_error", "message": "prompt is too long: 250000 tokens > 200000 maximum"})
        );
    }
}
