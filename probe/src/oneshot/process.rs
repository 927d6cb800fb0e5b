//! One run of a one-shot CLI: started in the workspace in a process group of its own, its
//! prompt delivered, its stdout read as its output mode says until it closes, its exit
//! awaited until the step's time, and the group torn down whatever happened.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::json;

use super::judge::{Exit, Output};
use crate::budget::Cancel;
use crate::oneshot::report::RunReport;
use crate::outcome::Reason;
use crate::report::process::{teardown_fault, ProcessEnd};
use crate::session::process::{Event, Harness, Launch};
use checkfu_wire::oneshot::{OutputMode, PromptTransport};

/// The most of a CLI's answer the report keeps (its first bytes).
const ANSWER_HEAD: usize = 4096;

/// A finished run: the report, and what the verdicts read.
pub struct Finished {
    pub report: RunReport,
    pub output: Output,
    pub exit: Exit,
    /// Teardown found a process of the group that would not die, or had to kill the CLI
    /// after SIGTERM.
    pub teardown_fault: Option<Reason>,
}

/// How to run it.
pub struct Spec<'a> {
    pub argv: Vec<String>,
    pub launch: &'a Launch,
    pub transport: PromptTransport,
    pub prompt: &'a str,
    pub mode: OutputMode,
    pub until: Instant,
    /// The run's cancellation: a signal stops the harness, and nothing starts after it.
    pub cancel: &'a Cancel,
    pub kill_grace: Duration,
    pub nonce: &'a str,
}

/// Runs the CLI once. `Err` only when it cannot be started.
pub fn run(spec: Spec<'_>) -> std::io::Result<Finished> {
    let started = Instant::now();
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(std::io::Error::other("no entrypoint"));
    };
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let mut harness = Harness::spawn(program.as_ref(), &args, spec.launch, spec.cancel)?;
    let stdin = match spec.transport {
        PromptTransport::Stdin => {
            harness.write(spec.prompt.as_bytes().to_vec());
            Some(spec.prompt.to_owned())
        }
        PromptTransport::ArgvPath => None,
    };
    // Closed at once either way: a CLI given its prompt by file must not wait on stdin.
    harness.close_stdin();
    let mut output = Output::new(spec.mode);
    let ended = read_until_exit(&mut harness, &mut output, spec.until, spec.cancel);
    let timed_out = ended == Ended::TimedOut;
    // Its stdin was closed at the start: a CLI still running when its time is up, or when
    // the run is cancelled, gets SIGTERM at once, so the report follows the step's time (or
    // the deadline, or the signal) by the grace at most.
    let teardown = if ended == Ended::Exited { harness.teardown(spec.kill_grace) } else { harness.terminate(spec.kill_grace) };
    let status = teardown.status;
    let exit = Exit {
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s)),
        timed_out,
    };
    output.end(&exit);
    let teardown_fault = teardown_fault(&teardown, "CLI", "SIGTERM");
    let trace = output.normalizer.trace(&[], &[]);
    // The trace is ours; a checker refusal of it would be a bug in the normalizer, said in
    // the report (and failing the run) rather than taking the probe down.
    let (checks, trace_refused) = match checkfu_wire::conformance::check_str(&trace) {
        Ok(report) => (Some(report), None),
        Err(e) => (None, Some(format!("the one-shot lane wrote a trace the checker refuses: {e}"))),
    };
    let report = RunReport {
        argv: spec.argv.clone(),
        stdin,
        nonce: spec.nonce.to_owned(),
        process: ProcessEnd::of(harness.pid(), &teardown, harness.stderr()),
        timed_out,
        ms: started.elapsed().as_millis() as u64,
        stdout_bytes: output.stdout_bytes,
        session_id: output.stream.session_id.clone(),
        event_kinds: output.stream.kinds.clone(),
        stream_errors: output.stream.errors.clone(),
        malformed_lines: output.stream.malformed.iter().take(20).map(|(line, why)| json!({"line": line, "why": why})).collect(),
        answer: checkfu_wire::text::head(output.answer(), ANSWER_HEAD).to_owned(),
        trace,
        checks,
        trace_refused,
    };
    Ok(Finished { report, output, exit, teardown_fault })
}

/// How reading a CLI's output ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ended {
    /// Its stdout closed and it exited.
    Exited,
    /// Its time (the step's, or the run's deadline) ran out first.
    TimedOut,
    /// The run's budget was cancelled (a signal) first.
    Cancelled,
}

/// Reads the CLI's stdout into `output` until it closes, then waits for its exit, both by
/// `until` and until `cancel` is cancelled; which came first.
fn read_until_exit(harness: &mut Harness, output: &mut Output, until: Instant, cancel: &Cancel) -> Ended {
    let mut timed_out = false;
    // A CLI that exits while something it started still holds stdout open has still ended
    // its run: its output counts as read 1 s after its exit (what it left is torn down with
    // its group), rather than the run being taken for a hang.
    let mut exited_at: Option<Instant> = None;
    loop {
        let poll = (Instant::now() + Duration::from_millis(200)).min(until);
        match harness.next_event(poll) {
            Some(Event::Line(line)) => output.line(&line),
            Some(Event::Oversize { bytes }) => output.oversize(bytes),
            Some(Event::Closed | Event::Failed(_)) => break,
            None if Instant::now() >= until => {
                timed_out = true;
                break;
            }
            None if cancel.cancelled().is_some() => return Ended::Cancelled,
            None => {
                if exited_at.is_none() && harness.exit_status().is_some() {
                    exited_at = Some(Instant::now());
                }
                if exited_at.is_some_and(|at| at.elapsed() >= Duration::from_secs(1)) {
                    break;
                }
            }
        }
    }
    // Stdout is closed; the CLI should be exiting. Wait for it until the step's time.
    while !timed_out && harness.exit_status().is_none() {
        if Instant::now() >= until {
            timed_out = true;
            break;
        }
        if cancel.cancelled().is_some() {
            return Ended::Cancelled;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    if timed_out {
        Ended::TimedOut
    } else {
        Ended::Exited
    }
}
