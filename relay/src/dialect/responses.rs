//! OpenAI Responses (`POST /v1/responses`): `input` is a string or a list of items (messages
//! by role, `function_call` and `function_call_output`), tools as
//! `{type: "function", name, parameters}`; the stream is named events carrying a
//! `sequence_number`: `response.created`, `response.in_progress`, the output item's
//! `added`, its content or arguments deltas and `done`s, then `response.completed`
//! holding the whole response.
//!
//! Every member of the official SDK's response models is sent, with the value the API
//! sends for a request that set nothing (`truncation` "disabled", `text.format` text,
//! cache counts 0, null where there is nothing to say).

use serde_json::{json, Map, Value};

use super::{arguments, content_text, event, Ids, Reply, RequestError, Tool, Turn};

pub(super) fn read(body: &Map<String, Value>, turn: &mut Turn) -> Result<(), RequestError> {
    match body.get("input") {
        Some(Value::String(text)) => turn.user_texts.push(text.clone()),
        Some(Value::Array(items)) => {
            for item in items {
                let kind = item.get("type").and_then(Value::as_str);
                match (kind, item.get("role").and_then(Value::as_str)) {
                    (Some("message") | None, Some("user")) => {
                        turn.user_texts.push(item.get("content").map(content_text).unwrap_or_default())
                    }
                    (Some("function_call_output" | "custom_tool_call_output" | "local_shell_call_output"), _) => {
                        turn.tool_results.push(item.get("output").map(content_text).unwrap_or_default());
                    }
                    _ => {}
                }
            }
        }
        _ => return Err(RequestError::NoInput),
    }
    if let Some(tools) = body.get("tools").and_then(Value::as_array) {
        for tool in tools {
            // Only function tools have a name and an input schema the model can fill in;
            // built-in tool types (web search, local shell) are offered by type alone.
            if tool.get("type").and_then(Value::as_str) != Some("function") {
                continue;
            }
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let schema = tool.get("parameters").cloned().unwrap_or_else(|| json!({}));
                turn.tools.push(Tool { name: name.to_owned(), schema });
            }
        }
    }
    Ok(())
}

fn item(reply: &Reply, ids: &Ids, done: bool) -> Value {
    let status = if done { "completed" } else { "in_progress" };
    match reply {
        Reply::Text(text) => {
            let content = if done { json!([output_text(text)]) } else { json!([]) };
            json!({"type": "message", "id": ids.item, "status": status, "role": "assistant", "content": content, "phase": null})
        }
        Reply::ToolCall { name, input } => json!({
            "type": "function_call", "id": ids.item, "call_id": ids.call, "name": name,
            "arguments": if done { arguments(input) } else { String::new() }, "status": status,
            "async": false, "caller": {"type": "direct"}, "namespace": null,
        }),
    }
}

fn output_text(text: &str) -> Value {
    json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
}

fn usage(reply: &Reply, turn: &Turn) -> Value {
    let (input, output) = super::usage_tokens(reply, turn);
    json!({
        "input_tokens": input,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0, "cache_write_tokens_details": {"ttl_12h_tokens": 0, "ttl_30m_tokens": 0}},
        "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": input + output,
    })
}

fn response(reply: &Reply, turn: &Turn, ids: &Ids, done: bool) -> Value {
    json!({
        "id": ids.message,
        "object": "response",
        "created_at": 0,
        "status": if done { "completed" } else { "in_progress" },
        "model": turn.model,
        "output": if done { json!([item(reply, ids, true)]) } else { json!([]) },
        "usage": if done { usage(reply, turn) } else { Value::Null },
        "error": null,
        "incomplete_details": null,
        "instructions": null,
        "metadata": {},
        "parallel_tool_calls": true,
        "temperature": null,
        "tool_choice": "auto",
        "tools": [],
        "top_p": null,
        "background": false,
        "completed_at": if done { json!(0) } else { Value::Null },
        "conversation": null,
        "max_output_tokens": null,
        "max_tool_calls": null,
        "previous_response_id": null,
        "prompt": null,
        "prompt_cache_key": null,
        "prompt_cache_retention": null,
        "prompt_cache_options": null,
        "prompt_cache_diagnostics": null,
        "reasoning": {"context": null, "effort": null, "generate_summary": null, "mode": null, "summary": null},
        "safety_identifier": null,
        "service_tier": "default",
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "top_logprobs": 0,
        "truncation": "disabled",
        "user": null,
        "access_programs": null,
        "image": null,
        "input_transformations": [],
        "moderation": null,
        "tool_usage": null,
    })
}

pub(super) fn json(reply: &Reply, turn: &Turn, ids: &Ids) -> Value {
    response(reply, turn, ids, true)
}

/// Events numbered in order, as the SDKs' `sequence_number`.
struct Events {
    out: String,
    next: u64,
}

impl Events {
    fn push(&mut self, name: &str, mut data: Map<String, Value>) {
        data.insert("type".into(), json!(name));
        data.insert("sequence_number".into(), json!(self.next));
        self.next += 1;
        event(&mut self.out, Some(name), &Value::Object(data));
    }
}

fn members(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

pub(super) fn sse(reply: &Reply, turn: &Turn, ids: &Ids, pieces: usize) -> String {
    let mut events = Events { out: String::new(), next: 0 };
    events.push("response.created", members(json!({"response": response(reply, turn, ids, false)})));
    events.push("response.in_progress", members(json!({"response": response(reply, turn, ids, false)})));
    events.push("response.output_item.added", members(json!({"output_index": 0, "item": item(reply, ids, false)})));
    match reply {
        Reply::Text(text) => {
            let at = json!({"item_id": ids.item, "output_index": 0, "content_index": 0});
            let with = |extra: Value| {
                let mut map = members(at.clone());
                map.extend(members(extra));
                map
            };
            events.push("response.content_part.added", with(json!({"part": output_text("")})));
            for piece in super::text_pieces(text, pieces) {
                events.push("response.output_text.delta", with(json!({"delta": piece, "logprobs": []})));
            }
            events.push("response.output_text.done", with(json!({"text": text, "logprobs": []})));
            events.push("response.content_part.done", with(json!({"part": output_text(text)})));
        }
        Reply::ToolCall { input, .. } => {
            let args = arguments(input);
            events.push("response.function_call_arguments.delta", members(json!({"item_id": ids.item, "output_index": 0, "delta": args})));
            events
                .push("response.function_call_arguments.done", members(json!({"item_id": ids.item, "output_index": 0, "arguments": args})));
        }
    }
    events.push("response.output_item.done", members(json!({"output_index": 0, "item": item(reply, ids, true)})));
    events.push("response.completed", members(json!({"response": response(reply, turn, ids, true)})));
    events.out
}

/// A context overflow's `param` and message on Responses, which names no counts.
pub(super) fn overflow() -> (&'static str, String) {
    ("input", String::from("Your input exceeds the context window of this model. Please adjust your input and try again."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_items_and_function_tools_only() {
        let body = json!({
            "model": "m",
            "input": [
                {"type": "message", "role": "developer", "content": "rules"},
                {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello"}]},
                {"type": "function_call", "call_id": "c", "name": "shell", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "token"},
            ],
            "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}, {"type": "web_search"}],
        });
        let turn = super::super::Served::OpenaiResponses.read(&body).expect("reads");
        assert_eq!(turn.user_texts, vec!["hello"]);
        assert_eq!(turn.tool_results, vec!["token"]);
        assert_eq!(turn.tools.len(), 1);
    }

    #[test]
    fn the_stream_is_numbered_and_completes() {
        let turn = Turn { model: "m".into(), ..Turn::default() };
        let body = sse(&Reply::ToolCall { name: "f".into(), input: json!({"a": 1}) }, &turn, &Ids::new(1), 1);
        let names: Vec<&str> = body.lines().filter_map(|l| l.strip_prefix("event: ")).collect();
        assert_eq!(names.first(), Some(&"response.created"));
        assert_eq!(names.last(), Some(&"response.completed"));
        assert!(body.contains("\"sequence_number\":6") && !body.contains("\"sequence_number\":7"), "seven events, numbered from 0");
    }
}
