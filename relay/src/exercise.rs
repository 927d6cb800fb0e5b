//! What the probe exercises in a turn of its own, beside the model script: the replies a
//! declared `builtin_tool_scoping` needs ([`Scoping`]), the marks a declared
//! `staged_files` must carry to the model ([`marks_in_order`]), and the call of the probe's
//! own MCP tool ([`PlatformTool`]).
//!
//! Both are judged on the raw request body, not on a dialect's reading of it: a mark is a
//! prefix and hex digits, never escaped in JSON, so where it sits in the bytes is where the
//! harness put it, whatever the dialect and whatever message kind carries it (a user turn, a
//! tool result, an assistant's tool call sent back as history).

use serde_json::{json, Value};

use super::dialect::{Reply, Tool, Turn};

/// The two tool calls a scoping turn asks for: `inside` names a built-in tool the
/// `checkfu.builtin_tools` list admits, `outside` one it does not; each writes its mark into
/// a file of its own, so the workspace shows whether it ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scoping {
    pub inside: ScopedCall,
    pub outside: ScopedCall,
}

/// One tool call of a scoping turn: the tool, the absolute path (as the harness sees it) it
/// writes, and the mark it writes there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScopedCall {
    pub tool: String,
    pub path: String,
    pub mark: String,
}

/// Where a scoping turn's call stood, as the record keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScopingPhase {
    /// Nothing of the turn's tool calls was in the request: the model calls the inside tool.
    Inside,
    /// The inside call was in the request: the model calls the outside tool.
    Outside,
    /// The outside call was in the request: the model answers (its refusal came back, or not:
    /// the record's `tool_results` says).
    Answer,
}

/// A scoping turn's call as the record keeps it: its phase, and how many tool results the
/// request carried (the answer's must carry one more than the outside call's: the refusal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ScopingSeen {
    pub phase: ScopingPhase,
    pub tool_results: usize,
}

/// The platform tool turn: the model calls the tool of the MCP server the probe granted in
/// `session/new`, found in the request's tool list by the end of its name (a harness names
/// it as it likes: `mcp__checkfu__NAME`, `checkfu_NAME`, `NAME`), with `argument` as its
/// input's `text`; once the request carries the argument (the call, as history) or `result`
/// (what the tool answered), the script answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformTool {
    pub tool: String,
    pub argument: String,
    pub result: String,
}

/// A platform tool turn's call as the record keeps it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct PlatformSeen {
    /// The name the request offered the tool under (`None`: not in its tool list).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offered: Option<String>,
    /// The model's answer to this call was the tool's call.
    pub called: bool,
    /// The request carried the call's argument, and the tool's result.
    pub argument_in_request: bool,
    pub result_in_request: bool,
}

impl PlatformTool {
    /// What a request whose raw body is `body` shows of the tool, and the call to answer it
    /// with (the tool offered, and neither its call nor its result yet in the request).
    pub fn see(&self, body: &[u8], turn: &Turn) -> (PlatformSeen, Option<Reply>) {
        let offered = turn.tools.iter().find(|t| !self.tool.is_empty() && t.name.ends_with(&self.tool)).map(|t| t.name.clone());
        let argument_in_request = find(body, self.argument.as_bytes()).is_some();
        let result_in_request = find(body, self.result.as_bytes()).is_some();
        let reply = offered
            .clone()
            .filter(|_| !argument_in_request && !result_in_request)
            .map(|name| Reply::ToolCall { name, input: json!({"text": self.argument}) });
        (PlatformSeen { offered, called: reply.is_some(), argument_in_request, result_in_request }, reply)
    }
}

/// Properties a writer tool's input names its path and its content by, in order of preference.
const PATH_PROPERTIES: &[&str] = &["path", "file_path", "filepath", "file", "filename"];
const CONTENT_PROPERTIES: &[&str] = &["content", "contents", "text", "data"];
const COMMAND_PROPERTIES: &[&str] = &["command", "cmd"];

impl Scoping {
    /// The phase of a call whose raw request is `body`: which of the turn's tool calls the
    /// request already holds (as history, by their marks).
    pub fn phase(&self, body: &[u8]) -> ScopingPhase {
        if find(body, self.outside.mark.as_bytes()).is_some() {
            ScopingPhase::Answer
        } else if find(body, self.inside.mark.as_bytes()).is_some() {
            ScopingPhase::Outside
        } else {
            ScopingPhase::Inside
        }
    }

    /// The tool call of `phase` (`None` for the answer, which the script gives), its input
    /// built from the tool's schema when the request offers the tool, else by its name.
    pub fn reply(&self, phase: ScopingPhase, turn: &Turn) -> Option<Reply> {
        let call = match phase {
            ScopingPhase::Inside => &self.inside,
            ScopingPhase::Outside => &self.outside,
            ScopingPhase::Answer => return None,
        };
        let offered = turn.tools.iter().find(|t| t.name == call.tool);
        Some(Reply::ToolCall { name: call.tool.clone(), input: input(call, offered) })
    }
}

/// The input of a call that writes `call.mark` to `call.path`: a shell line for a tool whose
/// schema (or, unoffered, whose name) says it runs commands, else a writer's path and content.
fn input(call: &ScopedCall, offered: Option<&Tool>) -> Value {
    let props = offered.and_then(|t| t.schema.get("properties")).and_then(Value::as_object);
    let has =
        |names: &[&str]| -> Option<String> { props.and_then(|p| names.iter().find(|n| p.contains_key(**n))).map(|n| (*n).to_owned()) };
    let line = format!("printf '%s' '{}' > '{}'", call.mark, call.path.replace('\'', "'\\''"));
    let by_name = ["shell", "bash", "exec", "command"].iter().any(|w| call.tool.to_ascii_lowercase().contains(w));
    match (has(COMMAND_PROPERTIES), props.is_none() && by_name) {
        (Some(key), _) => {
            let array = props.and_then(|p| p.get(&key)).and_then(|s| s.get("type")).and_then(Value::as_str) == Some("array");
            if array {
                json!({ key: ["sh", "-c", line] })
            } else {
                json!({ key: line })
            }
        }
        (None, true) => json!({ "command": line }),
        (None, false) => {
            let path = has(PATH_PROPERTIES).unwrap_or_else(|| String::from("path"));
            let content = has(CONTENT_PROPERTIES).unwrap_or_else(|| String::from("content"));
            json!({ path: call.path, content: call.mark })
        }
    }
}

/// The indices of `marks` found in `body`, ordered by where each first occurs: what a
/// request carried of the probe's staged files, and in which order.
pub fn marks_in_order(body: &[u8], marks: &[String]) -> Vec<usize> {
    let mut found: Vec<(usize, usize)> =
        marks.iter().enumerate().filter_map(|(index, mark)| find(body, mark.as_bytes()).map(|at| (at, index))).collect();
    found.sort_unstable();
    found.into_iter().map(|(_, index)| index).collect()
}

/// The first position of `needle` in `haystack` (bounded by the body, which the relay caps).
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoping() -> Scoping {
        let call = |tool: &str, mark: &str| ScopedCall { tool: tool.into(), path: format!("/w/{tool}.txt"), mark: mark.into() };
        Scoping { inside: call("write_file", "cfb-in"), outside: call("shell", "cfb-out") }
    }

    fn turn(tools: Vec<Tool>) -> Turn {
        Turn {
            model: String::new(),
            stream: false,
            include_usage: false,
            user_texts: vec![],
            tool_results: vec![],
            tools,
            structured: None,
            input_tokens: 0,
        }
    }

    #[test]
    fn the_phase_follows_the_marks_the_request_already_holds() {
        let s = scoping();
        assert_eq!(s.phase(b"{\"messages\": []}"), ScopingPhase::Inside);
        assert_eq!(s.phase(b"{\"content\": \"cfb-in\"}"), ScopingPhase::Outside);
        assert_eq!(s.phase(b"cfb-in ... cfb-out"), ScopingPhase::Answer);
    }

    #[test]
    fn inputs_follow_the_offered_schema_or_the_tools_name() {
        let s = scoping();
        let unoffered = s.reply(ScopingPhase::Outside, &turn(vec![])).expect("a call");
        assert_eq!(
            unoffered,
            Reply::ToolCall { name: "shell".into(), input: json!({"command": "printf '%s' 'cfb-out' > '/w/shell.txt'"}) }
        );
        let writer = Tool {
            name: "write_file".into(),
            schema: json!({"properties": {"file_path": {"type": "string"}, "contents": {"type": "string"}}}),
        };
        let offered = s.reply(ScopingPhase::Inside, &turn(vec![writer])).expect("a call");
        assert_eq!(
            offered,
            Reply::ToolCall { name: "write_file".into(), input: json!({"file_path": "/w/write_file.txt", "contents": "cfb-in"}) }
        );
        assert_eq!(s.reply(ScopingPhase::Answer, &turn(vec![])), None);
    }

    #[test]
    fn the_platform_tool_is_called_by_whatever_name_it_is_offered_under_once() {
        let tool = PlatformTool { tool: "checkfu_platform_probe".into(), argument: "cfc-arg".into(), result: "cfc-res".into() };
        let offered = Tool { name: "mcp__checkfu__checkfu_platform_probe".into(), schema: json!({}) };
        let (seen, reply) = tool.see(b"{}", &turn(vec![offered.clone()]));
        assert_eq!(seen.offered.as_deref(), Some("mcp__checkfu__checkfu_platform_probe"));
        assert!(seen.called);
        assert_eq!(reply, Some(Reply::ToolCall { name: offered.name.clone(), input: json!({"text": "cfc-arg"}) }));
        let (seen, reply) = tool.see(b"cfc-arg ... cfc-res", &turn(vec![offered]));
        assert!(!seen.called && seen.argument_in_request && seen.result_in_request);
        assert_eq!(reply, None);
        let (seen, reply) = tool.see(b"{}", &turn(vec![]));
        assert_eq!((seen.offered, seen.called, reply), (None, false, None));
    }

    #[test]
    fn marks_are_ordered_by_where_they_occur() {
        let marks = vec![String::from("cfa-1"), String::from("cfa-2"), String::from("cfa-3")];
        assert_eq!(marks_in_order(b"cfa-2 then cfa-1 then cfa-3", &marks), vec![1, 0, 2]);
        assert_eq!(marks_in_order(b"only cfa-3", &marks), vec![2]);
        assert_eq!(marks_in_order(b"", &marks), Vec::<usize>::new());
    }
}
