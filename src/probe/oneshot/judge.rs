//! The one-shot steps' verdicts, from what a run printed and what the relay recorded.
//!
//! Pure functions of the facts, so the golden process exchanges (`golden/oneshot-v1/`) are
//! judged by exactly the code the probe runs. What decides is the relay's served-call
//! record, never the CLI's exit status alone: several CLIs exit 0 when the model failed, and
//! an answer that echoes the prompt carries the nonce without any model having answered.

use serde_json::Value;

use crate::conformance::normalize::Normalizer;
use crate::oneshot::stream::Stream;
use crate::oneshot::OutputMode;

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

    /// Everything that reached normalized output: the output texts and the answer.
    fn carries(&self, nonce: &str) -> bool {
        self.normalizer.output_text().contains(nonce) || self.answer().contains(nonce)
    }
}

/// One served call as the verdicts read it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Served {
    pub nonce_in_request: bool,
    pub earlier_nonce_in_request: bool,
}

impl From<&crate::relay::Call> for Served {
    fn from(call: &crate::relay::Call) -> Served {
        Served { nonce_in_request: call.nonce_in_request, earlier_nonce_in_request: call.earlier_nonce_in_request }
    }
}

/// Why the run itself did not complete a turn: it hung, was killed, exited non-zero, or (in
/// stream mode) its stream is malformed, reported an error or never ended.
fn run_fault(output: &Output, exit: &Exit, step_timeout: f64) -> Option<String> {
    if exit.timed_out {
        return Some(format!("the CLI did not exit within {step_timeout:.1} s (--step-timeout); it was stopped"));
    }
    if output.mode == OutputMode::StreamJson {
        if let Some(fault) = output.stream.fault() {
            return Some(fault);
        }
    }
    match (exit.code, exit.signal) {
        (Some(0), _) => None,
        (Some(code), _) => Some(format!("the CLI exited with status {code}")),
        (None, Some(signal)) => Some(format!("the CLI was ended by signal {signal}")),
        (None, None) => Some(String::from("the CLI's exit status could not be read")),
    }
}

/// `prompt_exchange`: the run completed a turn, a call the relay served carried the nonce,
/// and the nonce reached normalized output.
pub fn prompt_exchange(output: &Output, exit: &Exit, served: &[Served], nonce: &str, step_timeout: f64) -> Result<(), String> {
    let at_relay = served.iter().any(|c| c.nonce_in_request);
    let in_output = output.carries(nonce);
    if let Some(fault) = run_fault(output, exit, step_timeout) {
        let relay = if at_relay { "" } else { "; no call the relay served carried the nonce" };
        return Err(format!("{fault}{relay}"));
    }
    match (at_relay, in_output) {
        (true, true) => Ok(()),
        (false, true) => Err(format!(
            "the nonce {nonce} reached the output, but no call the relay served carried it: the answer was not the governed model's (an echo of the prompt, or an error message that quotes it)"
        )),
        (true, false) => Err(format!("the nonce {nonce} reached the relay but not the normalized output")),
        (false, false) => Err(format!("no call the relay served carried the nonce {nonce}, and it did not reach the output")),
    }
}

/// `resume`: the second run completed its own turn (its nonce through a served call to the
/// output), and a call it made carried the first run's nonce, so the model saw the first
/// turn. What the CLI says of its session counts for nothing.
pub fn resume(output: &Output, exit: &Exit, served: &[Served], nonce: &str, first_nonce: &str, step_timeout: f64) -> Result<(), String> {
    prompt_exchange(output, exit, served, nonce, step_timeout).map_err(|e| format!("the second run: {e}"))?;
    if served.iter().any(|c| c.earlier_nonce_in_request) {
        Ok(())
    } else {
        Err(format!(
            "no call of the second run carried the first run's nonce {first_nonce}: the resumed session did not see the first turn"
        ))
    }
}

/// `output_schema`: the final answer is JSON that validates against the schema.
pub fn output_schema(answer: &str, validator: &jsonschema::Validator) -> Result<(), String> {
    let value: Value = serde_json::from_str(answer.trim()).map_err(|e| {
        let shown: String = answer.chars().take(120).collect();
        format!("the final answer is not JSON ({e}): {shown:?}")
    })?;
    let errors: Vec<String> = validator.iter_errors(&value).take(5).map(|e| format!("{} at `{}`", e, e.instance_path())).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("the final answer breaks the output schema: {}", errors.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NONCE: &str = "cf-0000000000000001";

    fn text(stdout: &str) -> Output {
        let mut output = Output::new(OutputMode::Text);
        for line in stdout.lines() {
            output.line(line.as_bytes());
        }
        output
    }

    #[test]
    fn the_relay_record_decides_not_the_exit_status() {
        let ok = Exit { code: Some(0), ..Exit::default() };
        let served = [Served { nonce_in_request: true, earlier_nonce_in_request: false }];
        assert_eq!(prompt_exchange(&text(NONCE), &ok, &served, NONCE, 30.0), Ok(()));
        let echo = prompt_exchange(&text(&format!("Reply with the nonce {NONCE}")), &ok, &[], NONCE, 30.0).unwrap_err();
        assert!(echo.contains("not the governed model's"), "{echo}");
        let failed = prompt_exchange(&text("API Error: 500"), &ok, &[], NONCE, 30.0).unwrap_err();
        assert!(failed.contains("no call the relay served"), "{failed}");
        let hung = prompt_exchange(&text(""), &Exit { timed_out: true, ..Exit::default() }, &[], NONCE, 2.0).unwrap_err();
        assert!(hung.contains("did not exit within 2.0 s"), "{hung}");
        let lost = resume(&text("cf-0000000000000002"), &ok, &[Served { nonce_in_request: true, earlier_nonce_in_request: false }], "cf-0000000000000002", NONCE, 30.0).unwrap_err();
        assert!(lost.contains("did not see the first turn"), "{lost}");
    }
}
