//! The normalized stream JSON of `oneshot-v1` (`schemas/oneshot-stream-v1.schema.json`),
//! read into the observations the conformance grammar judges.
//!
//! Which observation each event becomes, and which events fail the turn, is catalog data
//! (`[oneshot.events]`, generated as `catalog::ONESHOT_EVENTS`): `text_delta` and `text`
//! are `output`, `tool_use` and `tool_result` themselves, `error` fails the turn (its
//! terminal is a failure), `terminal` is the terminal (`end_turn` a success); `session`
//! (whose first id is the run's session id) and `usage` (kept) are no observation. `ready`
//! is the launch with its prompt delivered, which the caller observes.
//!
//! Every line is checked by the schema's generated check; a line that fails it is a
//! malformed stream, which fails the turn (the stream is the harness's whole grammar, so it
//! is fail-closed, as ACP's is). A stream without a terminal, or with an error event, is a
//! failed turn whatever the CLI's exit status.
//!
//! The answer: the terminal's `result` when it has one; else the `text` events joined; else
//! the deltas joined. A stream that sends both deltas and whole texts repeats itself, and
//! the whole texts win.

use serde_json::Value;

use crate::catalog::ONESHOT_EVENTS;
use crate::conformance::normalize::Normalizer;
use crate::schemas::oneshot_stream_v1::checks;

/// The most bytes of answer text kept; past it the rest is counted, not held.
pub const MAX_ANSWER: usize = 4 * 1024 * 1024;

/// What one run's stream said, as it was read.
#[derive(Debug, Default)]
pub struct Stream {
    pub session_id: Option<String>,
    pub events: usize,
    /// The event kinds, in order of first appearance, for the report.
    pub kinds: Vec<&'static str>,
    pub errors: Vec<String>,
    /// Lines that are not events of the schema: (1-based line, why).
    pub malformed: Vec<(usize, String)>,
    pub terminal: Option<String>,
    /// Lines after the terminal (other than blank ones): a stream goes on past its end.
    pub after_terminal: usize,
    pub usage: Option<Value>,
    deltas: String,
    texts: String,
    result: Option<String>,
}

/// A generated check of one definition.
type KindCheck = fn(&crate::exact::Json<'_>) -> Result<(), crate::exact::Invalid>;

/// The generated check of one kind's definition, to say precisely why a line of that kind
/// fails (the root's `oneOf` can only say that no branch matched).
fn kind_check(kind: &str) -> Option<KindCheck> {
    Some(match kind {
        "session" => checks::check_Session,
        "text_delta" => checks::check_TextDelta,
        "text" => checks::check_Text,
        "tool_use" => checks::check_ToolUse,
        "tool_result" => checks::check_ToolResult,
        "usage" => checks::check_Usage,
        "error" => checks::check_Error,
        "terminal" => checks::check_Terminal,
        _ => return None,
    })
}

impl Stream {
    pub fn new() -> Stream {
        Stream::default()
    }

    /// Reads one stdout line, adding its observation to `normalizer`.
    pub fn line(&mut self, number: usize, line: &[u8], normalizer: &mut Normalizer) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        if self.terminal.is_some() {
            self.after_terminal += 1;
        }
        let value: Value = match serde_json::from_slice(line) {
            Ok(value) => value,
            Err(e) => {
                self.malformed.push((number, format!("not JSON: {e}")));
                return;
            }
        };
        if let Err(invalid) = crate::exact::check_value(&value, checks::check_OneshotStreamV1) {
            let kind = value.get("type").and_then(Value::as_str);
            let why = match kind.and_then(kind_check) {
                Some(check) => crate::exact::check_value(&value, check).err().unwrap_or(invalid).to_string(),
                None => match kind {
                    Some(kind) => {
                        let known: Vec<&str> = ONESHOT_EVENTS.iter().map(|e| e.kind).collect();
                        format!("unknown event type {kind:?} (known: {})", known.join(", "))
                    }
                    None => String::from("an event is an object with a string `type`"),
                },
            };
            self.malformed.push((number, why));
            return;
        }
        self.events += 1;
        let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
        // The schema's check passed, so `type` is one of the catalog's event kinds.
        let Some(event) = ONESHOT_EVENTS.iter().find(|e| Some(e.kind) == value.get("type").and_then(Value::as_str)) else { return };
        if !self.kinds.contains(&event.kind) {
            self.kinds.push(event.kind);
        }
        // What each kind carries is read here; which observation it becomes, and whether it
        // fails the turn, is the catalog's (`[oneshot.events]`).
        match event.kind {
            "session" if self.session_id.is_none() => self.session_id = Some(text("session_id").to_owned()),
            "text_delta" => push_bounded(&mut self.deltas, text("text")),
            "text" => {
                if !self.texts.is_empty() && !text("text").is_empty() {
                    self.texts.push('\n');
                }
                push_bounded(&mut self.texts, text("text"));
            }
            "usage" => self.usage = Some(value.clone()),
            _ => {}
        }
        if event.fails_turn {
            self.errors.push(text("message").to_owned());
            return;
        }
        match event.observation {
            Some("output") => normalizer.output(text("text")),
            Some("tool_use") => normalizer.tool_use(text("id"), value.get("name").and_then(Value::as_str)),
            Some("tool_result") => normalizer.tool_result(text("id")),
            Some("terminal") if self.terminal.is_none() => {
                self.terminal = Some(text("stop_reason").to_owned());
                self.result = value.get("result").and_then(Value::as_str).map(str::to_owned);
                // An error before the terminal makes the turn a failure whatever its stop
                // reason says.
                let stop_reason = text("stop_reason");
                if self.errors.is_empty() {
                    normalizer.terminal(Some(stop_reason));
                } else {
                    normalizer.terminal_failure(stop_reason);
                }
            }
            _ => {}
        }
    }

    /// The end of the stream: a stream with errors and no terminal gets a failed terminal
    /// observation (the turn did end, badly); one with neither has none, which the
    /// terminal check fails.
    pub fn end(&mut self, normalizer: &mut Normalizer) {
        if self.terminal.is_none() && !self.errors.is_empty() {
            normalizer.terminal(None);
        }
    }

    /// The final answer (see the module's documentation).
    pub fn answer(&self) -> &str {
        match &self.result {
            Some(result) => result,
            None if !self.texts.is_empty() => &self.texts,
            None => &self.deltas,
        }
    }

    /// Why the stream is not a completed turn, if it is not.
    pub fn fault(&self) -> Option<String> {
        if let Some((line, why)) = self.malformed.first() {
            return Some(format!(
                "line {line} of stdout is not a normalized stream event: {why} ({} malformed line(s) in all)",
                self.malformed.len()
            ));
        }
        if let Some(error) = self.errors.first() {
            return Some(format!("the stream reported an error: {error:?}"));
        }
        match &self.terminal {
            None => Some(String::from("the stream ended without a terminal event")),
            Some(reason) if reason != "end_turn" => Some(format!("the turn stopped as {reason:?}, not end_turn")),
            Some(_) if self.after_terminal > 0 => Some(format!("{} event(s) followed the terminal event", self.after_terminal)),
            Some(_) => None,
        }
    }
}

fn push_bounded(into: &mut String, text: &str) {
    let room = MAX_ANSWER.saturating_sub(into.len());
    if text.len() <= room {
        into.push_str(text);
    } else {
        into.push_str(crate::text::head(text, room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> (Stream, String) {
        let mut normalizer = Normalizer::new();
        normalizer.ready();
        let mut stream = Stream::new();
        for (i, line) in lines.iter().enumerate() {
            stream.line(i + 1, line.as_bytes(), &mut normalizer);
        }
        stream.end(&mut normalizer);
        (stream, normalizer.trace(&[], &[]))
    }

    #[test]
    fn a_whole_turn_reads_into_the_floor_observations() {
        let (stream, trace) = read(&[
            r#"{"type": "session", "session_id": "s-1"}"#,
            r#"{"type": "text_delta", "text": "he"}"#,
            r#"{"type": "text_delta", "text": "llo"}"#,
            r#"{"type": "tool_use", "id": "t1", "name": "Read", "input": {"path": "x"}}"#,
            r#"{"type": "tool_result", "id": "t1"}"#,
            r#"{"type": "text", "text": "hello"}"#,
            r#"{"type": "usage", "input_tokens": 3, "output_tokens": 1}"#,
            r#"{"type": "terminal", "stop_reason": "end_turn"}"#,
        ]);
        assert_eq!(stream.fault(), None);
        assert_eq!(stream.session_id.as_deref(), Some("s-1"));
        assert_eq!(stream.answer(), "hello");
        let kinds: Vec<String> =
            trace.lines().skip(1).map(|l| serde_json::from_str::<Value>(l).unwrap()["kind"].as_str().unwrap().to_owned()).collect();
        assert_eq!(kinds, ["ready", "output", "output", "tool_use", "tool_result", "output", "terminal"]);
        let report = crate::conformance::check_str(&trace).expect("the checker reads it");
        assert!(!report.failed(), "{}", report.to_text());
    }

    #[test]
    fn errors_missing_terminals_and_malformed_lines_are_faults() {
        let (stream, trace) =
            read(&[r#"{"type": "error", "message": "overloaded"}"#, r#"{"type": "terminal", "stop_reason": "end_turn"}"#]);
        assert!(stream.fault().unwrap().contains("overloaded"));
        assert!(trace.contains(r#""outcome":"failure""#), "{trace}");

        let (stream, _) = read(&[r#"{"type": "text", "text": "hi"}"#]);
        assert_eq!(stream.fault().as_deref(), Some("the stream ended without a terminal event"));

        let (stream, _) =
            read(&["plain text", r#"{"type": "terminal"}"#, r#"{"type": "nope"}"#, r#"{"type": "text", "text": "x", "extra": 1}"#]);
        assert_eq!(stream.malformed.len(), 4);
        assert!(stream.malformed[1].1.contains("stop_reason"), "{:?}", stream.malformed);
        assert!(stream.malformed[2].1.contains("unknown event type"), "{:?}", stream.malformed);
        assert!(stream.fault().unwrap().starts_with("line 1 "));
    }

    #[test]
    fn the_terminal_result_is_the_answer() {
        let (stream, _) = read(&[
            r#"{"type": "text", "text": "thinking"}"#,
            r#"{"type": "terminal", "stop_reason": "end_turn", "result": "{\"a\": 1}"}"#,
        ]);
        assert_eq!(stream.answer(), "{\"a\": 1}");
        let (stream, _) = read(&[r#"{"type": "terminal", "stop_reason": "max_tokens"}"#]);
        assert!(stream.fault().unwrap().contains("max_tokens"));
    }
}
