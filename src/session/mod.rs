//! A runner-side ACP session over a harness's stdio: the reusable part of `probe`.
//!
//! [`Session`] spawns the harness ([`process`]), writes the runner's requests, and reads the
//! harness's newline-delimited messages through the same generated decoder as everything
//! else ([`crate::decode::Decoder`], told each message's direction). The decoder is the one
//! owner of correlation: each runner request is handed to it with its id, and a response
//! comes back from it with the id of the request it answers, so the session keeps no map
//! of its own; and the message's members come from the decoder's own read of the line,
//! which is parsed once. Every byte in and out is recorded with its direction,
//! as the capture lines `checkfu-wire decode` reads. Requests the harness makes of the
//! client are answered here ([`client`]); notifications and responses are handed to the
//! caller by [`Session::next`], which never waits past the step's or the session's deadline.
//!
//! A message the decoder rejects ends the wait with [`Fault::Rejected`]: the ACP grammar and
//! the authority slots are fail-closed, so a runner does not read on past a harness that
//! broke them (garbage on stdout, an echo of the runner's own request, a malformed update).
//! The exception is the decoder's own: an update of a kind the catalog names optional
//! fidelity that fails its schema is ignored ([`Session::ignored`]), never handed on.

pub mod client;
pub mod fence;
pub mod home;
pub mod process;
pub mod terminals;
pub mod workspace;

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::decode::{Decoded, Decoder, Kind, Report, WireDirection};
pub use client::{ClientRequest, PermissionPolicy};
pub use process::{Ending, Launch, Teardown};
use process::{Event, Harness};
use terminals::{Handled, Terminals};
use workspace::Workspace;

/// The most wire the record keeps; past it, messages are still read but no longer recorded.
pub const MAX_RECORD: usize = 64 * 1024 * 1024;

/// The most diagnostics a session keeps (a harness repeating a dropped member would
/// otherwise grow them without bound).
pub const MAX_DIAGNOSTICS: usize = 1000;

/// Why waiting for the harness stopped without a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The caller's time for this wait ran out.
    Timeout,
    /// The session's total deadline passed.
    Deadline,
    /// The harness closed stdout (it exited or crashed).
    Closed,
    /// The harness wrote a message the decoder rejects.
    Rejected { error: String, line: String },
    /// The harness wrote a line longer than [`process::MAX_LINE`].
    Oversize { bytes: usize },
    /// Reading the harness's stdout failed.
    ReadFailed(String),
    /// The runner could not write to the harness (its stdin closed).
    WriteFailed,
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Timeout => f.write_str("no answer within the step's time"),
            Fault::Deadline => f.write_str("the session's deadline passed"),
            Fault::Closed => f.write_str("the harness closed its stdout (it exited)"),
            Fault::Rejected { error, line } => write!(f, "the harness wrote a message the decoder rejects: {error} (in `{line}`)"),
            Fault::Oversize { bytes } => write!(f, "the harness wrote a line over {} bytes ({bytes} read before it was refused)", process::MAX_LINE),
            Fault::ReadFailed(e) => write!(f, "reading the harness's stdout failed: {e}"),
            Fault::WriteFailed => f.write_str("the harness's stdin is closed"),
        }
    }
}

/// A message from the harness the caller handles.
#[derive(Debug)]
pub enum Incoming {
    /// A response (or error response) to one of the runner's pending requests.
    Response { id: i64, message: Value, bytes: Vec<u8>, report: Report },
    /// A response to no pending request of the runner's (a second answer, or a stray id).
    Stray { message: Value, report: Report },
    /// A notification.
    Notification { method: String, message: Value, report: Report },
}

/// What the caller sets.
#[derive(Clone, Debug)]
pub struct Options {
    pub permission: PermissionPolicy,
    /// Serve `terminal/*` ([`terminals`]); otherwise they are answered -32601.
    pub terminals: bool,
    /// The total deadline of the session, from its start.
    pub deadline: Duration,
}

/// A live session with one harness.
pub struct Session {
    harness: Harness,
    workspace: Workspace,
    /// Carries each runner request's id, handed back with the response that answers it.
    decoder: Decoder<i64>,
    options: Options,
    deadline: Instant,
    next_id: i64,
    terminals: Terminals,
    /// `terminal/wait_for_exit` requests to answer when their terminal exits: (id, terminal).
    exit_waits: Vec<(Value, String)>,
    record: Vec<u8>,
    record_truncated: bool,
    /// Requests the harness made of the client, in order.
    pub client_requests: Vec<ClientRequest>,
    /// Messages read from and written to the harness.
    pub messages_in: usize,
    pub messages_out: usize,
    /// Fail-open diagnostics of accepted messages (dropped fidelity members, ignored keys).
    pub diagnostics: Vec<String>,
    /// Diagnostics past [`MAX_DIAGNOSTICS`], counted only.
    pub diagnostics_dropped: usize,
    /// Optional-fidelity updates the decoder ignored as malformed (the first
    /// [`MAX_DIAGNOSTICS`]); they are never handed to the caller.
    pub ignored: Vec<crate::decode::IgnoredFidelity>,
}

impl Session {
    /// Creates the workspace (the `cwd` the runner will hand the harness in `session/new`)
    /// and starts `command`.
    pub fn start(command: &[std::ffi::OsString], options: Options) -> std::io::Result<Session> {
        Session::start_in(Workspace::create()?, command, options, &Launch::default())
    }

    /// Starts `command` as [`Launch`] says, with a workspace the caller prepared.
    pub fn start_in(workspace: Workspace, command: &[std::ffi::OsString], options: Options, launch: &Launch) -> std::io::Result<Session> {
        let Some((program, args)) = command.split_first() else {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "no command"));
        };
        let harness = Harness::spawn(program, args, launch)?;
        let deadline = Instant::now() + options.deadline;
        Ok(Session {
            harness,
            workspace,
            decoder: Decoder::carrying(),
            options,
            deadline,
            next_id: 0,
            terminals: Terminals::fenced(launch.netns),
            exit_waits: Vec::new(),
            record: Vec::new(),
            record_truncated: false,
            client_requests: Vec::new(),
            messages_in: 0,
            messages_out: 0,
            diagnostics: Vec::new(),
            diagnostics_dropped: 0,
            ignored: Vec::new(),
        })
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    pub fn pid(&self) -> u32 {
        self.harness.pid()
    }

    /// The session's total deadline.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Sends a request; returns its id. The runner's own message goes through the decoder
    /// too, so correlation sees both directions and a malformed request is caught here.
    pub fn request(&mut self, method: &'static str, params: Value) -> Result<i64, Fault> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(message, Some(id))?;
        Ok(id)
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &'static str, params: Value) -> Result<(), Fault> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}), None)
    }

    /// Decodes, records and writes one message of the runner's; `id` is the runner's id
    /// of a request, which the decoder hands back with the response.
    fn send(&mut self, message: Value, id: Option<i64>) -> Result<(), Fault> {
        let bytes = message.to_string().into_bytes();
        let error = self.decoder.read(&bytes, Some(WireDirection::RunnerToAgent), id).report.error;
        if let Some(error) = error {
            // A runner that sends what its own decoder rejects has a bug; say it loudly.
            self.note(&[format!("the runner's own message was rejected: {}", error.message)]);
        }
        // serde_json wrote it: one JSON value.
        self.append_record(WireDirection::RunnerToAgent, &bytes, true);
        let mut line = bytes;
        line.push(b'\n');
        self.messages_out += 1;
        if self.harness.write(line) {
            Ok(())
        } else {
            Err(Fault::WriteFailed)
        }
    }

    /// The next message for the caller, answering the harness's own requests meanwhile.
    /// Waits until `until` at most (and never past the session's deadline).
    pub fn next(&mut self, until: Instant) -> Result<Incoming, Fault> {
        loop {
            let limit = until.min(self.deadline);
            let deadline = self.deadline;
            let expired = || {
                if until >= deadline {
                    Fault::Deadline
                } else {
                    Fault::Timeout
                }
            };
            // Checked before reading too: a harness that floods stdout always has a line
            // ready, and must not hold the runner past its time.
            if Instant::now() >= limit {
                return Err(expired());
            }
            // With a `wait_for_exit` outstanding, wake every 10 ms to see whether its
            // terminal has exited.
            self.answer_exit_waits()?;
            let wake = if self.exit_waits.is_empty() { limit } else { limit.min(Instant::now() + Duration::from_millis(10)) };
            let Some(event) = self.harness.next_event(wake) else {
                if wake < limit {
                    continue;
                }
                return Err(expired());
            };
            let bytes = match event {
                Event::Line(bytes) => bytes,
                Event::Oversize { bytes } => return Err(Fault::Oversize { bytes }),
                Event::Closed => return Err(Fault::Closed),
                Event::Failed(e) => return Err(Fault::ReadFailed(e)),
            };
            if bytes.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            self.messages_in += 1;
            let Decoded { report, answered, message } = self.decoder.read(&bytes, Some(WireDirection::AgentToRunner), None);
            // An ignored update is read no further, so its members are not built either.
            let message = message.filter(|_| report.ignored.is_none()).map(|tree| tree.to_value());
            // An accepted line is one JSON value (the decoder's promise); a rejected one
            // may be anything, and the record checks it.
            self.append_record(WireDirection::AgentToRunner, &bytes, report.accepted);
            if let Some(error) = &report.error {
                let line = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
                return Err(Fault::Rejected { error: error.message.clone(), line });
            }
            self.note(&report.diagnostics);
            if let Some(ignored) = report.ignored {
                // Fail-open fidelity: the update is malformed and carries nothing the turn is
                // judged on, so it is kept for the report and read no further.
                if self.ignored.len() < MAX_DIAGNOSTICS {
                    self.ignored.push(ignored);
                }
                continue;
            }
            let Some(message) = message else {
                return Err(Fault::Rejected { error: String::from("accepted without its members"), line: String::new() });
            };
            match report.kind {
                Some(Kind::Request) => self.answer(&message, &report)?,
                Some(Kind::Notification) => {
                    let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                    return Ok(Incoming::Notification { method, message, report });
                }
                // The decoder matched it by direction and id (`2.0` is the id `2`) and
                // handed back the runner's id of the request it answers, if any.
                Some(Kind::Response | Kind::ErrorResponse) => {
                    return Ok(match answered {
                        Some(id) => Incoming::Response { id, message, bytes, report },
                        None => Incoming::Stray { message, report },
                    });
                }
                None => return Err(Fault::Rejected { error: String::from("unclassified message"), line: String::new() }),
            }
        }
    }

    /// Keeps fail-open diagnostics, up to [`MAX_DIAGNOSTICS`]; past it they are counted.
    fn note(&mut self, diagnostics: &[String]) {
        for diagnostic in diagnostics {
            if self.diagnostics.len() < MAX_DIAGNOSTICS {
                self.diagnostics.push(diagnostic.clone());
            } else {
                self.diagnostics_dropped += 1;
            }
        }
    }

    /// Answers a request the harness made of the client.
    fn answer(&mut self, message: &Value, report: &Report) -> Result<(), Fault> {
        let method = message.get("method").and_then(Value::as_str).unwrap_or_default();
        let params = message.get("params").unwrap_or(&Value::Null);
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        let answer = if self.options.terminals && report.extension.is_none() && method.starts_with("terminal/") {
            let log = |outcome, detail: String| ClientRequest { method: method.to_owned(), outcome, detail };
            match self.terminals.handle(method, params, &self.workspace) {
                Handled::WhenExited(terminal) => {
                    self.client_requests.push(log("answered", format!("{terminal}: answered when it exits")));
                    self.exit_waits.push((id, terminal));
                    return Ok(());
                }
                Handled::Now(Ok(result)) => {
                    self.client_requests.push(log("answered", result.to_string()));
                    Ok(result)
                }
                Handled::Now(Err((code, why))) => {
                    self.client_requests.push(log("refused", why.clone()));
                    Err((code, why))
                }
            }
        } else {
            let (answer, log) = client::answer(method, params, report.extension.is_some(), self.options.permission, &self.workspace);
            self.client_requests.push(log);
            answer
        };
        self.respond(id, answer)
    }

    /// Sends the answers of `wait_for_exit` requests whose terminal has exited.
    fn answer_exit_waits(&mut self) -> Result<(), Fault> {
        let mut i = 0;
        while i < self.exit_waits.len() {
            match self.terminals.exited(&self.exit_waits[i].1) {
                Some(result) => {
                    let (id, _) = self.exit_waits.swap_remove(i);
                    self.respond(id, Ok(result))?;
                }
                None => i += 1,
            }
        }
        Ok(())
    }

    fn respond(&mut self, id: Value, answer: client::Answer) -> Result<(), Fault> {
        let response = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err((code, text)) => json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}}),
        };
        self.send(response, None)
    }

    /// Records one line. `json` says it is known to be one JSON value (the runner wrote
    /// it, or the decoder accepted it); otherwise the record finds out.
    fn append_record(&mut self, direction: WireDirection, bytes: &[u8], json: bool) {
        if self.record_truncated {
            return;
        }
        if self.record.len() + bytes.len() > MAX_RECORD {
            self.record_truncated = true;
            return;
        }
        // A line that is one JSON value is recorded in a capture record; anything else
        // (garbage on stdout) verbatim, where `decode` reads and rejects it as it is.
        let value = if json {
            Some(bytes.trim_ascii())
        } else {
            serde_json::from_slice::<&serde_json::value::RawValue>(bytes).ok().map(|raw| raw.get().as_bytes())
        };
        match value {
            Some(value) => {
                // The direction as captures spell it (`WireDirection`'s `Display`). Writing
                // to a `Vec` cannot fail.
                let _ = write!(self.record, "{{\"direction\":\"{direction}\",\"message\":");
                self.record.extend_from_slice(value);
                self.record.extend_from_slice(b"}\n");
            }
            None => {
                self.record.extend_from_slice(bytes);
                self.record.push(b'\n');
            }
        }
    }

    /// The recorded wire, and whether it was cut at [`MAX_RECORD`].
    pub fn record(&self) -> (&[u8], bool) {
        (&self.record, self.record_truncated)
    }

    /// Whether the harness has exited.
    pub fn exit_status(&mut self) -> Option<std::process::ExitStatus> {
        self.harness.exit_status()
    }

    /// The harness's stderr: bytes written in all, and its last [`process::STDERR_TAIL`] bytes.
    pub fn stderr(&self) -> (u64, String) {
        self.harness.stderr()
    }

    /// Ends the harness (see [`Harness::teardown`]) and every terminal it left running.
    pub fn teardown(&mut self, grace: Duration) -> Teardown {
        let teardown = self.harness.teardown(grace);
        self.terminals.kill_all();
        teardown
    }
}
