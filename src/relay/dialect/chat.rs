//! OpenAI Chat Completions (`POST /v1/chat/completions`): `messages` with roles (a tool's
//! result is a `tool` message), tools as `{type: "function", function: {name, parameters}}`;
//! the stream is `chat.completion.chunk` objects in unnamed events, the last carrying the
//! finish reason, then `data: [DONE]`.

use serde_json::{json, Map, Value};

use super::{arguments, content_text, event, tokens, Ids, Reply, Tool, Turn};

pub(super) fn read(body: &Map<String, Value>, turn: &mut Turn) -> Result<(), String> {
    let messages = body.get("messages").and_then(Value::as_array).ok_or("the request has no `messages` array")?;
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
    let prompt: u64 = turn.user_texts.iter().chain(&turn.tool_results).map(|t| tokens(t)).sum::<u64>().max(1);
    let completion = match reply {
        Reply::Text(text) => tokens(text),
        Reply::ToolCall { input, .. } => tokens(&input.to_string()),
    };
    json!({"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion})
}

pub(super) fn json(reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
    let message = match reply {
        Reply::Text(text) => json!({"role": "assistant", "content": text, "refusal": null}),
        Reply::ToolCall { name, input } => json!({
            "role": "assistant", "content": null, "refusal": null,
            "tool_calls": [{"id": ids.call, "type": "function", "function": {"name": name, "arguments": arguments(input)}}],
        }),
    };
    json!({
        "id": ids.message,
        "object": "chat.completion",
        "created": 0,
        "model": turn.model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason(reply), "logprobs": null}],
        "usage": usage(reply, turn),
    })
}

fn chunk(turn: &Turn, ids: &Ids, delta: Value, finish: Option<&str>) -> Value {
    json!({
        "id": ids.message,
        "object": "chat.completion.chunk",
        "created": 0,
        "model": turn.model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": null}],
    })
}

pub(super) fn sse(reply: &Reply, turn: &Turn, ids: &Ids) -> String {
    let mut out = String::new();
    event(&mut out, None, &chunk(turn, ids, json!({"role": "assistant", "content": ""}), None));
    match reply {
        Reply::Text(text) => event(&mut out, None, &chunk(turn, ids, json!({"content": text}), None)),
        Reply::ToolCall { name, input } => {
            let opening = json!({"tool_calls": [{"index": 0, "id": ids.call, "type": "function", "function": {"name": name, "arguments": ""}}]});
            event(&mut out, None, &chunk(turn, ids, opening, None));
            let rest = json!({"tool_calls": [{"index": 0, "function": {"arguments": arguments(input)}}]});
            event(&mut out, None, &chunk(turn, ids, rest, None));
        }
    }
    let mut last = chunk(turn, ids, json!({}), Some(finish_reason(reply)));
    last["usage"] = usage(reply, turn);
    event(&mut out, None, &last);
    out.push_str("data: [DONE]\n\n");
    out
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
        let body = sse(&Reply::Text("hi".into()), &turn, &Ids::new(1));
        assert!(body.ends_with("data: [DONE]\n\n"));
        assert_eq!(body.matches("chat.completion.chunk").count(), 3);
    }
}
