//! The one-shot steps' verdicts, from what a run printed and what the relay recorded.
//!
//! Pure functions of the facts, so the golden process exchanges (`golden/oneshot-v1/`) are
//! judged by exactly the code the probe runs. What decides is the relay's served-call
//! record, never the CLI's exit status alone: several CLIs exit 0 when the model failed, and
//! an answer that echoes the prompt carries the nonce without any model having answered. So
//! the model's own answer is what must reach the output: the reply token the relay minted
//! for a call that carried the prompt ([`crate::verdict`]).

use serde_json::Value;

use crate::outcome::{Kind, Reason};
use crate::verdict;
pub use crate::verdict::Served;
use checkfu_wire::conformance::normalize::Normalizer;
use checkfu_wire::oneshot::stream::Stream;
use checkfu_wire::oneshot::OutputMode;

/// The most stdout bytes kept in text mode (the answer); past it, counted only.
pub const MAX_TEXT: usize = 4 * 1024 * 1024;

/// How a run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// The run did not end within its step's time and was stopped by the probe.
    pub timed_out: bool,
}

/// What one run printed, read as its output mode says.
#[derive(Debug)]
pub struct Output {
    pub mode: OutputMode,
    pub normalizer: Normalizer,
    pub stream: Stream,
    /// Text mode: stdout, which is the answer.
    pub text: String,
    pub stdout_bytes: u64,
    lines: usize,
}

impl Output {
    /// A run's output, its prompt delivered (the `ready` observation).
    pub fn new(mode: OutputMode) -> Output {
        let mut normalizer = Normalizer::new();
        normalizer.ready();
        Output { mode, normalizer, stream: Stream::new(), text: String::new(), stdout_bytes: 0, lines: 0 }
    }

    /// One line of stdout, without its terminator.
    pub fn line(&mut self, line: &[u8]) {
        self.lines += 1;
        self.stdout_bytes += line.len() as u64 + 1;
        match self.mode {
            OutputMode::StreamJson => self.stream.line(self.lines, line, &mut self.normalizer),
            OutputMode::Text => {
                if self.text.len() < MAX_TEXT {
                    if self.lines > 1 {
                        self.text.push('\n');
                    }
                    self.text.push_str(&String::from_utf8_lossy(line));
                }
            }
        }
    }

    /// A line longer than the runner reads: in stream mode a malformed event.
    pub fn oversize(&mut self, bytes: usize) {
        self.lines += 1;
        self.stdout_bytes += bytes as u64;
        if self.mode == OutputMode::StreamJson {
            self.stream.malformed.push((self.lines, format!("a line of over {bytes} bytes")));
        }
    }

    /// Stdout is done and the run has ended: the terminal observation.
    pub fn end(&mut self, exit: &Exit) {
        match self.mode {
            OutputMode::StreamJson => self.stream.end(&mut self.normalizer),
            OutputMode::Text => {
                if !self.text.is_empty() {
                    self.normalizer.output(&self.text);
                }
                // Text carries no stop reason: the exit status is all the CLI says.
                if !exit.timed_out {
                    match (exit.code, exit.signal) {
                        (Some(0), _) => self.normalizer.terminal(Some("end_turn")),
                        (Some(code), _) => self.normalizer.terminal_failure(&format!("exit_{code}")),
                        (None, Some(signal)) => self.normalizer.terminal_failure(&format!("signal_{signal}")),
                        (None, None) => self.normalizer.terminal(None),
                    }
                }
            }
        }
    }

    /// The final answer: stdout in text mode, the stream's answer otherwise.
    pub fn answer(&self) -> &str {
        match self.mode {
            OutputMode::Text => &self.text,
            OutputMode::StreamJson => self.stream.answer(),
        }
    }

    /// Whether `text` reached normalized output: the output texts or the answer.
    pub fn carries(&self, text: &str) -> bool {
        self.normalizer.output_text().contains(text) || self.answer().contains(text)
    }
}

/// Why the run itself did not complete a turn: it hung, was killed, exited non-zero, or (in
/// stream mode) its stream is malformed, reported an error or never ended.
fn run_fault(output: &Output, exit: &Exit, step_timeout: f64) -> Option<Reason> {
    let words = if exit.timed_out {
        format!("the CLI did not exit within {step_timeout:.1} s (--step-timeout); it was stopped")
    } else if output.normalizer.full() {
        output.normalizer.over_budget("CLI")
    } else if let Some(fault) = output.stream.fault().filter(|_| output.mode == OutputMode::StreamJson) {
        fault
    } else {
        match (exit.code, exit.signal) {
            (Some(0), _) => return None,
            (Some(code), _) => format!("the CLI exited with status {code}"),
            (None, Some(signal)) => format!("the CLI was ended by signal {signal}"),
            (None, None) => String::from("the CLI's exit status could not be read"),
        }
    };
    Some(Reason::new(Kind::Harness, words))
}

/// `prompt_exchange`: the run completed a turn, a call the relay served carried the nonce
/// in its latest user turn, and that call's reply token reached normalized output. `Ok`
/// holds the reply token that did. A run that did not complete its turn fails on that, the
/// miss that may explain it after it.
pub fn prompt_exchange(output: &Output, exit: &Exit, served: &[Served], nonce: &str, step_timeout: f64) -> Result<String, Reason> {
    let exchange = verdict::exchange(served, nonce, &|text| output.carries(text));
    if let Some(fault) = run_fault(output, exit, step_timeout) {
        return Err(match &exchange {
            Err(miss) if miss.kind().refusals_may_cause() => fault.then(miss.describe(nonce)),
            _ => fault,
        });
    }
    exchange.map_err(|miss| miss.reason(nonce))
}

/// `resume`: the second run completed its own turn (its prompt answered by the model, the
/// answer's reply token in its output), and a call it made carried the first run's reply
/// token, so the model saw its own earlier answer, not only the user's earlier prompt. What
/// the CLI says of its session counts for nothing.
pub fn resume(
    output: &Output,
    exit: &Exit,
    served: &[Served],
    nonce: &str,
    first_reply: Option<&str>,
    step_timeout: f64,
) -> Result<String, Reason> {
    let reached = prompt_exchange(output, exit, served, nonce, step_timeout).map_err(|f| f.within("the second run"))?;
    let Some(first_reply) = first_reply else {
        return Err(Reason::new(
            Kind::Continuity,
            "the first run's output carried no reply token of the model, so there is no answer to resume from",
        ));
    };
    if served.iter().any(|c| c.earlier_reply_in_request) {
        Ok(reached)
    } else {
        Err(Reason::new(
            Kind::Continuity,
            format!("no call of the second run carried the first run's reply token {first_reply}: the resumed session did not hold the model's first answer"),
        ))
    }
}

/// `output_schema`: the final answer is JSON, it validates against the schema, and it is a
/// structured value the relay served (the same JSON, keys in any order): a value the
/// harness made up, or changed, fails even when it validates.
pub fn output_schema(answer: &str, validator: &jsonschema::Validator, served: &[Served]) -> Result<(), Reason> {
    let failed = |words: String| Reason::new(Kind::Unanswered, words);
    let value: Value = serde_json::from_str(answer.trim()).map_err(|e| {
        let shown: String = answer.chars().take(120).collect();
        failed(format!("the final answer is not JSON ({e}): {shown:?}"))
    })?;
    let errors: Vec<String> = validator.iter_errors(&value).take(5).map(|e| format!("{} at `{}`", e, e.instance_path())).collect();
    if !errors.is_empty() {
        return Err(failed(format!("the final answer breaks the output schema: {}", errors.join("; "))));
    }
    let digest = crate::relay::digest(&value);
    if served.iter().any(|c| c.structured_digest.as_deref() == Some(digest.as_str())) {
        Ok(())
    } else if served.iter().all(|c| c.structured_digest.is_none()) {
        Err(failed(String::from(
            "the final answer validates, but the relay served no structured value in this run: the model was never asked for one",
        )))
    } else {
        Err(failed(String::from(
            "the final answer validates, but it is not the structured value the relay served: the harness made it up or changed it",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "cf-0000000000000001";
    const TOKEN: &str = "cfr-00000000000000aa";

    fn text(stdout: &str) -> Output {
        let mut output = Output::new(OutputMode::Text);
        for line in stdout.lines() {
            output.line(line.as_bytes());
        }
        output
    }

    fn answered(earlier: bool) -> Served {
        Served { nonce_in_request: true, earlier_reply_in_request: earlier, reply_token: Some(TOKEN.into()), structured_digest: None }
    }

    #[test]
    fn the_relay_record_decides_not_the_exit_status() {
        let ok = Exit { code: Some(0), ..Exit::default() };
        let served = [answered(false)];
        assert_eq!(prompt_exchange(&text(TOKEN), &ok, &served, NONCE, 30.0), Ok(TOKEN.to_owned()));
        let echo = prompt_exchange(&text(&format!("Reply with the nonce {NONCE}")), &ok, &served, NONCE, 30.0).unwrap_err();
        assert!(echo.words().starts_with("no reply token of the model's answer") && echo.words().contains("echo"), "{echo:?}");
        assert!(!echo.kind.refusals_may_cause());
        let failed = prompt_exchange(&text("API Error: 500"), &ok, &[], NONCE, 30.0).unwrap_err();
        assert!(failed.words().starts_with("no call reached the model"), "{failed:?}");
        let hung = prompt_exchange(&text(""), &Exit { timed_out: true, ..Exit::default() }, &[], NONCE, 2.0).unwrap_err();
        assert!(hung.words().starts_with("the CLI did not exit within 2.0 s"), "{hung:?}");
        let lost = resume(&text(TOKEN), &ok, &[answered(false)], NONCE, Some("cfr-1111111111111111"), 30.0).unwrap_err();
        assert!(lost.words().contains("did not hold the model's first answer"), "{lost:?}");
        assert_eq!(resume(&text(TOKEN), &ok, &[answered(true)], NONCE, Some("cfr-1111111111111111"), 30.0), Ok(TOKEN.to_owned()));
    }

    #[test]
    fn an_answer_that_validates_is_still_not_the_models_unless_it_was_served() {
        let schema = serde_json::json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
        let validator = jsonschema::validator_for(&schema).expect("schema");
        let served = serde_json::json!({"answer": TOKEN, "n": 1});
        let call = Served { structured_digest: Some(crate::relay::digest(&served)), ..answered(false) };
        assert_eq!(output_schema(&format!(r#"{{"n": 1.0, "answer": "{TOKEN}"}}"#), &validator, std::slice::from_ref(&call)), Ok(()));
        let made_up = output_schema(r#"{"answer": "mine"}"#, &validator, &[call]).unwrap_err().to_string();
        assert!(made_up.contains("not the structured value the relay served"), "{made_up}");
    }
}
