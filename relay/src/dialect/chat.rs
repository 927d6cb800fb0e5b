//! OpenAI Chat Completions (`POST /v1/chat/completions`): `messages` with roles (a tool's
//! result is a `tool` message), tools as `{type: "function", function: {name, parameters}}`;
//! the stream is `chat.completion.chunk` objects in unnamed events, the last carrying the
//! finish reason, then (with `stream_options.include_usage`) one chunk of its own with
//! `"choices": []` and the usage, as OpenAI sends it, then `data: [DONE]`.
//!
//! Every member of the official SDK's response models is sent, null or 0 where the API has
//! nothing to say; a tool call is streamed whole in one delta (its id, type and name with
//! its arguments), since a later delta repeating `type` as null would overwrite it in the
//! SDK's accumulator.

use serde_json::{json, Map, Value};

use super::{arguments, content_text, event, Ids, Reply, RequestError, Tool, Turn};

pub(super) fn read(body: &Map<String, Value>, turn: &mut Turn) -> Result<(), RequestError> {
    let messages = body.get("messages").and_then(Value::as_array).ok_or(RequestError::NoMessages)?;
    turn.include_usage = body.get("stream_options").and_then(|o| o.get("include_usage")).and_then(Value::as_bool).unwrap_or(false);
    for message in messages {
        let content = message.get("content").map(content_text).unwrap_or_default();
        match message.get("role").and_then(Value::as_str) {
            Some("user") => turn.user_texts.push(content),
            Some("tool") => turn.tool_results.push(content),
            _ => {}
        }
    }
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for tool in tools {
            let function = tool.get("function").unwrap_or(tool);
            if let Some(name) = function.get("name").and_then(Value::as_str) {
                let schema = function.get("parameters").cloned().unwrap_or_else(|| json!({}));
                turn.tools.push(Tool { name: name.to_owned(), schema });
            }
        }
    }
    Ok(())
}

fn finish_reason(reply: &Reply) -> &'static str {
    match reply {
        Reply::Text(_) => "stop",
        Reply::ToolCall { .. } => "tool_calls",
    }
}

fn usage(reply: &Reply, turn: &Turn) -> Value {
    let (prompt, completion) = super::usage_tokens(reply, turn);
    json!({
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"audio_tokens": 0, "cache_write_tokens": 0, "cached_tokens": 0, "image_tokens": 0, "text_tokens": prompt},
        "completion_tokens_details": {
            "accepted_prediction_tokens": 0, "audio_tokens": 0, "reasoning_tokens": 0, "rejected_prediction_tokens": 0, "text_tokens": completion,
        },
    })
}

fn tool_calls(name: &str, input: &Value, ids: &Ids) -> Value {
    json!([{"id": ids.call, "type": "function", "function": {"name": name, "arguments": arguments(input)}}])
}

pub(super) fn json(reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
    let (content, calls) = match reply {
        Reply::Text(text) => (json!(text), Value::Null),
        Reply::ToolCall { name, input } => (Value::Null, tool_calls(name, input, ids)),
    };
    let message = json!({
        "role": "assistant", "content": content, "refusal": null, "tool_calls": calls,
        "annotations": [], "audio": null, "function_call": null,
    });
    json!({
        "id": ids.message,
        "object": "chat.completion",
        "created": 0,
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply), "logprobs": null}],
        "usage": usage(reply, turn),
        "metadata": null,
        "moderation": null,
        "service_tier": "default",
        "system_fingerprint": null,
    })
}

/// A chunk: `choices` holds one choice with `delta`, or none (the usage chunk).
fn chunk(turn: &Turn, ids: &Ids, choices: Value, usage: Value) -> Value {
    json!({
        "id": ids.message,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": turn.model,
        "choices": choices,
        "usage": usage,
        "moderation": null,
        "obfuscation": null,
        "service_tier": "default",
        "system_fingerprint": null,
    })
}

/// One choice's delta, every member present: what it does not carry is null.
fn choice(delta: Value, finish: Option<&str>) -> Value {
    let mut members = json!({"role": null, "content": null, "refusal": null, "tool_calls": null, "audio": null, "function_call": null});
    if let (Value::Object(members), Value::Object(delta)) = (&mut members, delta) {
        members.extend(delta);
    }
    json!([{"index": 0, "delta": members, "finish_reason": finish, "logprobs": null}])
}

pub(super) fn sse(reply: &Reply, turn: &Turn, ids: &Ids, pieces: usize) -> String {
    let mut out = String::new();
    event(&mut out, None, &chunk(turn, ids, choice(json!({"role": "assistant", "content": ""}), None), Value::Null));
    let deltas = match reply {
        Reply::Text(text) => super::text_pieces(text, pieces).into_iter().map(|piece| json!({"content": piece})).collect(),
        Reply::ToolCall { name, input } => {
            let mut calls = tool_calls(name, input, ids);
            calls[0]["index"] = json!(0);
            vec![json!({"tool_calls": calls})]
        }
    };
    for delta in deltas {
        event(&mut out, None, &chunk(turn, ids, choice(delta, None), Value::Null));
    }
    event(&mut out, None, &chunk(turn, ids, choice(json!({}), Some(finish_reason(reply))), Value::Null));
    if turn.include_usage {
        event(&mut out, None, &chunk(turn, ids, json!([]), usage(reply, turn)));
    }
    out.push_str("data: [DONE]\n\n");
    out
}

/// A context overflow's `param` and message on Chat Completions.
pub(super) fn overflow(tokens: u64, maximum: u64) -> (&'static str, String) {
    let message = format!(
        "This model's maximum context length is {maximum} tokens. However, your messages resulted in {tokens} tokens. \
         Please reduce the length of the messages."
    );
    ("messages", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_roles_and_function_tools() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "tool", "tool_call_id": "c", "content": "token"},
            ],
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
        });
        let turn = super::super::Served::OpenaiChat.read(&body).expect("reads");
        assert_eq!(turn.user_texts, vec!["hello"]);
        assert_eq!(turn.tool_results, vec!["token"]);
        assert_eq!(turn.tools[0].name, "read_file");
    }

    #[test]
    fn the_stream_ends_with_done() {
        let turn = Turn { model: "m".into(), ..Turn::default() };
        let body = sse(&Reply::Text("hi".into()), &turn, &Ids::new(1), 1);
        assert!(body.ends_with("data: [DONE]\n\n"));
        assert_eq!(body.matches("chat.completion.chunk").count(), 3);
        assert!(!body.contains("prompt_tokens"), "no usage unless asked for: {body}");
    }

    #[test]
    fn asked_for_usage_comes_last_in_a_chunk_of_its_own_without_choices() {
        let body = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "hello"}]});
        let turn = super::super::Served::OpenaiChat.read(&body).expect("reads");
        assert!(turn.include_usage);
        let stream = sse(&Reply::Text("hi".into()), &turn, &Ids::new(1), 1);
        let chunks: Vec<Value> = stream
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .filter(|d| *d != "[DONE]")
            .map(|d| serde_json::from_str(d).expect("JSON"))
            .collect();
        let (last, rest) = chunks.split_last().expect("chunks");
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
        assert!(rest.iter().all(|c| c["usage"].is_null() && c["choices"].as_array().is_some_and(|a| a.len() == 1)), "{rest:?}");
        assert_eq!(rest.last().map(|c| c["choices"][0]["finish_reason"].clone()), Some(json!("stop")));
    }
}
