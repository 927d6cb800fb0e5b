//! A runner-side ACP session over a harness's stdio: the reusable part of `probe`.
//!
//! [`Session`] spawns the harness ([`process`]), writes the runner's requests, and reads the
//! harness's newline-delimited messages through the same generated decoder as everything
//! else ([`checkfu_wire::decode::Decoder`], told each message's direction). The decoder is the one
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
//! The exceptions: the decoder's own, an update of a kind the catalog names optional
//! fidelity that fails its schema, is ignored ([`Session::ignored`]), never handed on; and a
//! method neither ACP nor any extension table knows, written without the `_` that marks an
//! extension, is recorded as a grammar violation ([`Session::grammar_violations`]) and
//! answered as a JSON-RPC peer answers a method it does not have (-32601, a notification
//! not at all), so the turn goes on and the caller can still judge the rest of it.
//!
//! What ACP forbids but the decoder cannot see in one message is found here as it happens
//! ([`breach`]): a response's id not as sent, a response to no pending request, a client
//! capability called unadvertised, a tool's effect after its permission was refused. Each
//! is kept in [`Session::breaches`] and fails the run.

pub mod breach;
pub mod client;
pub mod custody;
pub mod hold;
pub use checkfu_wire_sandbox::fence;
pub mod home;
pub mod process;
pub mod terminals;
pub mod workspace;

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::budget::{Budget, Deadline};
pub use breach::Breach;
use breach::Permission;
use checkfu_wire::decode::tables::Method;
use checkfu_wire::decode::{DecodeError, Decoded, Decoder, Kind, Report, SlotStatus, WireDirection};
pub use client::{ClientRequest, PermissionPolicy};
pub use process::{Ending, Launch, Teardown};
use process::{Event, Harness};
use terminals::{Handled, Terminals};
use workspace::Workspace;

/// The most wire the record keeps; past it, messages are still read but no longer recorded.
/// How often a wait on the harness looks at the run's cancellation: short beside a person's
/// Ctrl-C, long beside the cost of a wake-up.
const CANCEL_TICK: Duration = Duration::from_millis(50);

pub const MAX_RECORD: usize = 64 * 1024 * 1024;

/// The most diagnostics a session keeps (a harness repeating a dropped member would
/// otherwise grow them without bound).
pub const MAX_DIAGNOSTICS: usize = 1000;

/// The longest method name a [`GrammarViolation`] keeps (a harness may send a name of any
/// length, up to the line limit).
pub const MAX_METHOD_NAME: usize = 200;

/// A message of the harness's that broke the ACP grammar, which the session answered as a
/// JSON-RPC peer would and read past: a method neither ACP nor any extension table knows,
/// written without the `_` prefix that marks an extension (a vendor's `craft/…`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct GrammarViolation {
    /// The method as the harness wrote it, cut at [`MAX_METHOD_NAME`] bytes (`…` marks a cut).
    pub method: String,
    /// A request (answered -32601) or a notification (not answered).
    pub kind: Kind,
    /// What is wrong and what the session did, in a sentence.
    pub reason: String,
}

/// Why waiting for the harness stopped without a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The caller's time for this wait ran out.
    Timeout,
    /// The session's total deadline passed.
    Deadline,
    /// The run's budget was cancelled (by the signal named): the session stops waiting.
    Interrupted(&'static str),
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
    /// A response with an id no pending request has (not `null`): most likely the answer
    /// waited for, its id changed, so the wait ends now rather than at its timeout.
    Unrequested { id: String },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Timeout => f.write_str("no answer within the step's time"),
            Fault::Deadline => f.write_str("the session's deadline passed"),
            Fault::Interrupted(by) => write!(f, "interrupted by {by}"),
            Fault::Closed => f.write_str("the harness closed its stdout (it exited)"),
            Fault::Rejected { error, line } => write!(f, "the harness wrote a message the decoder rejects: {error} (in `{line}`)"),
            Fault::Oversize { bytes } => {
                write!(f, "the harness wrote a line over {} bytes ({bytes} read before it was refused)", process::MAX_LINE)
            }
            Fault::ReadFailed(e) => write!(f, "reading the harness's stdout failed: {e}"),
            Fault::WriteFailed => f.write_str("the harness's stdin is closed"),
            Fault::Unrequested { id } => {
                write!(
                    f,
                    "the harness answered with the id {id}, which no pending request has ({}: the id comes back as sent)",
                    checkfu_wire::catalog::Requirement::ACPJSONRPC001.id()
                )
            }
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
    /// Serve `fs/*` (in the workspace); otherwise they are answered -32601. What the
    /// client advertised in `initialize`, so a call past it is a [`Breach`].
    pub fs: bool,
    /// The run's budget: its deadline, which the session never outlasts, and its
    /// cancellation, which stops the harness and starts nothing after it.
    pub budget: Budget,
}

/// A live session with one harness.
pub struct Session {
    harness: Harness,
    workspace: Workspace,
    /// Carries each runner request's id, handed back with the response that answers it.
    decoder: Decoder<i64>,
    options: Options,
    deadline: Deadline,
    next_id: i64,
    terminals: Terminals,
    /// `terminal/wait_for_exit` requests to answer when their terminal exits: (id, terminal).
    exit_waits: Vec<(Value, String)>,
    record: Vec<u8>,
    record_truncated: bool,
    /// The ACP version the record last named ([`Session::read_as`]).
    recorded_protocol: Option<checkfu_wire::decode::Protocol>,
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
    pub ignored: Vec<checkfu_wire::decode::IgnoredFidelity>,
    /// Messages that broke the ACP grammar and were read past (the first
    /// [`MAX_DIAGNOSTICS`]); they are never handed to the caller, who decides what they cost.
    pub grammar_violations: Vec<GrammarViolation>,
    /// What the harness did that ACP forbids (the first [`MAX_DIAGNOSTICS`]), in order.
    pub breaches: Vec<Breach>,
    /// `checkfu.*` members the decoder dropped under the fail-open rule, as (key, why), in
    /// order (the first [`MAX_DIAGNOSTICS`]): what the platform would not read.
    pub dropped: Vec<(String, String)>,
    /// The last `checkfu.journal_checkpoint` the harness sent (the one a client holds).
    pub checkpoint: Option<custody::Custody>,
    /// Whether the current turn's permission was refused, for the effects that follow.
    permission: Permission,
    /// How long permission answers are held back ([`hold`]); none, they go at once.
    hold: Option<Duration>,
    /// The permission answer held back now, if one is.
    held: Option<hold::Held>,
    /// Permission requests whose answers were held back.
    pub permissions_held: usize,
    /// Responses that answered a pending request of the runner's, notifications the runner
    /// sent, and permission requests it refused: what the wire's requirements were put to.
    pub responses: usize,
    pub notifications_sent: usize,
    pub permissions_refused: usize,
    /// What the harness's stdout held beside well-formed messages ([`Hygiene`]).
    pub hygiene: Hygiene,
    /// The session a `session/prompt` was last sent for, whose updates must name it.
    prompted: Option<String>,
    /// Read past, unrecorded as breaches, responses to no pending request: the probes that
    /// send a line that is no request (malformed JSON, an invalid request) may be answered
    /// with an error of id `null`, or of the id the line carried, as JSON-RPC asks.
    pub tolerate_strays: bool,
    /// Read past, as [`Skipped`] lines, what the decoder rejects, instead of ending the wait
    /// with [`Fault::Rejected`]: the requirement probes put one requirement after another to
    /// one process, and a stray bad line (an error with no id after a notification) must
    /// not fail whichever request happens to be out. The line still counts against the
    /// transport and schema requirements ([`Hygiene`]); the main session stays fail-closed.
    pub skip_rejected: bool,
    /// The lines read past under [`Session::skip_rejected`] (the first [`MAX_SKIPPED`]),
    /// and how many there were in all.
    pub skipped: Vec<Skipped>,
    pub skipped_lines: usize,
}

/// The most skipped lines a session keeps; past it they are counted only.
pub const MAX_SKIPPED: usize = 100;

/// A line of the harness's that the decoder rejected and the session read past
/// ([`Session::skip_rejected`]): an informational fault, never a verdict of its own.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// Which line of the harness's stdout it was (1 for the first).
    pub stdout_line: usize,
    /// Why the decoder rejected it.
    pub error: String,
    /// Its first 200 bytes, as text.
    pub line: String,
}

/// What a harness's stdout held beside well-formed messages, over a whole session: the
/// registry's transport, schema and prompt requirements are judged on it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Hygiene {
    /// Lines read from stdout (blank ones aside).
    pub lines: usize,
    /// The first line that was not UTF-8, and the first that was not one JSON value
    /// (cut at 200 bytes), with how many of each.
    pub not_utf8: Option<String>,
    pub not_utf8_lines: usize,
    pub not_json: Option<String>,
    pub not_json_lines: usize,
    /// The decoder's rejections of lines that were JSON (the first [`MAX_DIAGNOSTICS`]):
    /// the reason, and whether the line was a response (an `id` and no `method`).
    pub rejections: Vec<(String, bool)>,
    /// `session/update`s read while a prompt was out, and the first that named another
    /// session than the one prompted.
    pub prompt_updates: usize,
    pub foreign_update: Option<String>,
}

impl Hygiene {
    /// A line the decoder rejected (`line`, its head): not UTF-8, not one JSON value, or a
    /// JSON message the decoder refused for `why`.
    fn rejected(&mut self, bytes: &[u8], line: &str, why: &str) {
        if std::str::from_utf8(bytes).is_err() {
            self.not_utf8_lines += 1;
            self.not_utf8.get_or_insert_with(|| line.to_owned());
            return;
        }
        /// The members that tell a response from the rest; the others are skipped unread.
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            method: Option<&'a serde_json::value::RawValue>,
        }
        match serde_json::from_slice::<Envelope>(bytes) {
            Ok(envelope) => {
                if self.rejections.len() < MAX_DIAGNOSTICS {
                    self.rejections.push((why.to_owned(), envelope.id.is_some() && envelope.method.is_none()));
                }
            }
            Err(_) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok() => {
                // One JSON value, but no object: no message of JSON-RPC's.
                if self.rejections.len() < MAX_DIAGNOSTICS {
                    self.rejections.push((why.to_owned(), false));
                }
            }
            Err(_) => {
                self.not_json_lines += 1;
                self.not_json.get_or_insert_with(|| line.to_owned());
            }
        }
    }

    /// A `session/update` read while a prompt for session `prompted` was out.
    fn update(&mut self, prompted: &str, message: &Value) {
        self.prompt_updates += 1;
        let named = message.pointer("/params/sessionId").and_then(Value::as_str).unwrap_or_default();
        if named != prompted && self.foreign_update.is_none() {
            let named = checkfu_wire::text::head(named, MAX_METHOD_NAME);
            self.foreign_update = Some(format!("an update named the session `{named}` while `{prompted}` was prompted"));
        }
    }
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
        let harness = Harness::spawn(program, args, launch, &options.budget.cancel)?;
        let deadline = options.budget.deadline;
        let terminals = Terminals::fenced(launch.netns, launch.inside.clone(), options.budget.cancel.clone());
        Ok(Session {
            harness,
            workspace,
            decoder: Decoder::carrying().negotiating(),
            options,
            deadline,
            next_id: 0,
            terminals,
            exit_waits: Vec::new(),
            record: Vec::new(),
            record_truncated: false,
            recorded_protocol: None,
            client_requests: Vec::new(),
            messages_in: 0,
            messages_out: 0,
            diagnostics: Vec::new(),
            diagnostics_dropped: 0,
            ignored: Vec::new(),
            grammar_violations: Vec::new(),
            breaches: Vec::new(),
            dropped: Vec::new(),
            checkpoint: None,
            permission: Permission::Open,
            hold: None,
            held: None,
            permissions_held: 0,
            responses: 0,
            notifications_sent: 0,
            permissions_refused: 0,
            hygiene: Hygiene::default(),
            prompted: None,
            tolerate_strays: false,
            skip_rejected: false,
            skipped: Vec::new(),
            skipped_lines: 0,
        })
    }

    /// The ACP version the session's decoder reads now: the one asked, or the older one the
    /// agent's `initialize` answer chose.
    pub fn protocol(&self) -> checkfu_wire::decode::Protocol {
        self.decoder.protocol()
    }

    /// Reads (and writes) the rest of the session in `protocol`: the handshake asked again
    /// in the version the agent named.
    /// The record says so (`{"protocol": NAME}`, a line `decode` follows), whenever it is
    /// not the version the record last named: a record whose handshake was asked again in v2
    /// after a `-32022` holds a v1 `initialize` before the v2 one, and reads back only if
    /// each part is read in its own version.
    pub fn read_as(&mut self, protocol: checkfu_wire::decode::Protocol) {
        self.decoder.switch_to(protocol);
        if self.recorded_protocol != Some(protocol) && !self.record_truncated {
            self.recorded_protocol = Some(protocol);
            let _ = writeln!(self.record, "{}", json!({"protocol": protocol.name()}));
        }
    }

    pub fn workspace(&self) -> &Workspace {
        &self.workspace
    }

    /// The workspace back, once the session is over (after [`Session::teardown`]), so its
    /// removal can be reported.
    pub fn into_workspace(self) -> Workspace {
        self.workspace
    }

    pub fn pid(&self) -> u32 {
        self.harness.pid()
    }

    /// The run's deadline, which the session never outlasts.
    pub fn deadline(&self) -> Deadline {
        self.deadline
    }

    /// Sends a request; returns its id. The runner's own message goes through the decoder
    /// too, so correlation sees both directions and a malformed request is caught here.
    pub fn request(&mut self, method: &'static str, params: Value) -> Result<i64, Fault> {
        let id = self.next_id;
        self.next_id += 1;
        if Method::from_name(method) == Some(Method::SessionPrompt) {
            // A new turn: a refusal of the last one's permission says nothing of this one.
            self.permission = Permission::Open;
            self.prompted = params.get("sessionId").and_then(Value::as_str).map(str::to_owned);
        }
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send(message, Some(id))?;
        Ok(id)
    }

    /// Answers every permission request from now on `cancelled`: what ACP asks of a client
    /// once it has cancelled the turn, whatever the policy was.
    pub fn cancel_permissions(&mut self) {
        self.options.permission = PermissionPolicy::Cancel;
    }

    /// Answers permission requests by `policy` from now on.
    pub fn set_permission(&mut self, policy: PermissionPolicy) {
        self.options.permission = policy;
    }

    /// Holds each permission answer back for `hold` (at most [`hold::MAX_HOLD`]) from now
    /// on, or sends them at once (`None`); an answer held now goes out first.
    pub fn hold_permissions(&mut self, hold: Option<Duration>) -> Result<(), Fault> {
        self.hold = hold;
        self.release_held(true)
    }

    /// Sends the held permission answer when it is due, or at once when `now`.
    fn release_held(&mut self, now: bool) -> Result<(), Fault> {
        if !self.held.as_ref().is_some_and(|held| now || held.due()) {
            return Ok(());
        }
        let Some(held) = self.held.take() else { return Ok(()) };
        if let Some(refused) = held.refused {
            self.permission = Permission::Refused(refused);
            self.permissions_refused += 1;
        }
        self.respond(held.id, held.answer)
    }

    /// Writes `line` as it is, no message of the protocol (malformed JSON, an invalid
    /// request): recorded verbatim, never through the decoder, which would refuse it.
    pub fn send_raw(&mut self, line: &[u8]) -> Result<(), Fault> {
        self.record_invalid(line);
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        self.messages_out += 1;
        if self.harness.write(bytes) {
            Ok(())
        } else {
            Err(Fault::WriteFailed)
        }
    }

    /// Keeps `breach` (up to [`MAX_DIAGNOSTICS`]).
    pub fn breach(&mut self, breach: Breach) {
        if self.breaches.len() < MAX_DIAGNOSTICS {
            self.breaches.push(breach);
        }
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &'static str, params: Value) -> Result<(), Fault> {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}), None)?;
        self.notifications_sent += 1;
        Ok(())
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
            let Some(bytes) = self.read_line(until)? else { continue };
            // A rejected response naming one of the runner's ids answers that request,
            // badly: it ends the wait even when bad lines are read past.
            let skippable = self.skip_rejected && !self.answers_runner(&bytes);
            match self.receive(bytes) {
                Ok(Some(incoming)) => return Ok(incoming),
                Ok(None) => {}
                Err(Fault::Rejected { error, line }) if skippable => {
                    self.skipped_lines += 1;
                    if self.skipped.len() < MAX_SKIPPED {
                        self.skipped.push(Skipped { stdout_line: self.hygiene.lines, error, line });
                    }
                }
                Err(fault) => return Err(fault),
            }
        }
    }

    /// Whether `bytes` is a response (no `method`) whose id is one the runner has sent.
    fn answers_runner(&self, bytes: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            method: Option<&'a serde_json::value::RawValue>,
        }
        let response = serde_json::from_slice::<Envelope>(bytes).is_ok_and(|e| e.method.is_none());
        response && raw_id(bytes).parse::<f64>().is_ok_and(|id| id >= 0.0 && id < self.next_id as f64)
    }

    /// The harness's next line by `until` (never past the session's deadline), answering
    /// `wait_for_exit` requests meanwhile; `None` when there is nothing to read yet, or the
    /// line is blank.
    fn read_line(&mut self, until: Instant) -> Result<Option<Vec<u8>>, Fault> {
        let limit = self.deadline.bound(until);
        let deadline = self.deadline;
        let expired = || {
            if deadline.reached_by(until) {
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
        if let Some(why) = self.options.budget.cancelled() {
            return Err(Fault::Interrupted(crate::budget::describe(why)));
        }
        // With a `wait_for_exit` outstanding, wake every 10 ms to see whether its
        // terminal has exited; else every tick, to see whether the budget was cancelled.
        self.answer_exit_waits()?;
        self.release_held(false)?;
        let tick = if self.exit_waits.is_empty() { CANCEL_TICK } else { Duration::from_millis(10) };
        let release = self.held.as_ref().map_or(limit, |held| held.release);
        let wake = limit.min(Instant::now() + tick).min(release);
        let Some(event) = self.harness.next_event(wake) else {
            if wake < limit {
                return Ok(None);
            }
            return Err(expired());
        };
        let bytes = match event {
            Event::Line(bytes) => bytes,
            Event::Oversize { bytes } => return Err(Fault::Oversize { bytes }),
            Event::Closed => return Err(Fault::Closed),
            Event::Failed(e) => return Err(Fault::ReadFailed(e)),
        };
        Ok(Some(bytes).filter(|b| !b.iter().all(u8::is_ascii_whitespace)))
    }

    /// One line of the harness's, decoded and recorded: a message for the caller, or
    /// `None` when it was the harness's own request (answered) or an ignored update.
    fn receive(&mut self, bytes: Vec<u8>) -> Result<Option<Incoming>, Fault> {
        self.messages_in += 1;
        self.hygiene.lines += 1;
        // A line's values are counted before it is decoded: a line of up to MAX_LINE
        // bytes could otherwise hold millions of values, each a tree node and then a
        // `Value`, gigabytes from one line.
        if crate::relay::bounds::values_at_most(&bytes, crate::relay::bounds::MAX_VALUES) > crate::relay::bounds::MAX_VALUES {
            self.append_record(WireDirection::AgentToRunner, &bytes, false);
            let error = format!("a message of more than {} JSON values", crate::relay::bounds::MAX_VALUES);
            return Err(Fault::Rejected { error, line: String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned() });
        }
        let Decoded { report, answered, message } = self.decoder.read(&bytes, Some(WireDirection::AgentToRunner), None);
        // An ignored update is read no further, so its members are not built either.
        let message = message.filter(|_| report.ignored.is_none()).map(|tree| tree.to_value());
        // An accepted line is one JSON value (the decoder's promise); a rejected one
        // may be anything, and the record checks it.
        self.append_record(WireDirection::AgentToRunner, &bytes, report.accepted);
        if let Some(error) = &report.error {
            if let DecodeError::UnknownMethod { method } = &error.error {
                if self.unknown_method(method, &bytes)? {
                    return Ok(None);
                }
            }
            let line = String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
            self.hygiene.rejected(&bytes, &line, &error.message);
            return Err(Fault::Rejected { error: error.message.clone(), line });
        }
        self.note(&report.diagnostics);
        self.note_dropped(&report);
        self.note_custody(&report, message.as_ref());
        if let Some(ignored) = report.ignored {
            // Fail-open fidelity: the update is malformed and carries nothing the turn is
            // judged on, so it is kept for the report and read no further.
            if self.ignored.len() < MAX_DIAGNOSTICS {
                self.ignored.push(ignored);
            }
            return Ok(None);
        }
        let Some(message) = message else {
            return Err(Fault::Rejected { error: String::from("accepted without its members"), line: String::new() });
        };
        match report.kind {
            Some(Kind::Request) => self.answer(&message, &report).map(|()| None),
            Some(Kind::Notification) => {
                let method = message.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
                if let Some(prompted) = self.prompted.as_deref().filter(|_| method == checkfu_wire::decode::tables::UPDATE_METHOD) {
                    self.hygiene.update(prompted, &message);
                }
                Ok(Some(Incoming::Notification { method, message, report }))
            }
            // The decoder matched it by direction and id (`2.0` is the id `2`) and
            // handed back the runner's id of the request it answers, if any.
            Some(Kind::Response | Kind::ErrorResponse) => self.response(answered, message, bytes, report),
            None => Err(Fault::Rejected { error: String::from("unclassified message"), line: String::new() }),
        }
    }

    /// A response, matched by the decoder to the runner's request `answered` (by value:
    /// `2.0` answers 2), or to none.
    fn response(&mut self, answered: Option<i64>, message: Value, bytes: Vec<u8>, report: Report) -> Result<Option<Incoming>, Fault> {
        let got = raw_id(&bytes);
        match answered {
            Some(id) => {
                // JSON-RPC asks for the id back as it was written.
                if got != id.to_string() {
                    self.breach(Breach::IdChanged { sent: id, got });
                }
                self.responses += 1;
                Ok(Some(Incoming::Response { id, message, bytes, report }))
            }
            None => {
                // A second answer to a request the decoder knows (a prompt's) is the caller's
                // to judge; anything else answers nothing. The probe's ids are integers: one
                // written otherwise (a string, a fraction) is no id of the probe's, whatever
                // the decoder matched.
                let ours = got.parse::<i64>().is_ok();
                if self.tolerate_strays {
                    return Ok(Some(Incoming::Stray { message, report }));
                }
                if report.method.is_none() || !ours {
                    self.breach(Breach::Unrequested { id: got.clone() });
                    if got != "null" {
                        return Err(Fault::Unrequested { id: got });
                    }
                }
                Ok(Some(Incoming::Stray { message, report }))
            }
        }
    }

    /// A request or notification of a method the decoder rejected as unknown (`bytes`, the
    /// line): the `_`-prefixed ones are foreign extensions the decoder accepts, so this one
    /// lacks the prefix and breaks ACP's grammar. It is recorded as a violation; a request is
    /// answered -32601 (also logged with the client's requests), a notification (no `id`, or
    /// a `null` one) is not. `false` when the line is no plain request or notification (a
    /// `result` or `error` beside the method, an `id` that is no string or number): that stays
    /// a rejection.
    fn unknown_method(&mut self, method: &str, bytes: &[u8]) -> Result<bool, Fault> {
        /// The members that say which message it is; the rest (`params`) is skipped unread.
        #[derive(serde::Deserialize)]
        struct Envelope<'a> {
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            result: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            error: Option<&'a serde_json::value::RawValue>,
        }
        let Ok(envelope) = serde_json::from_slice::<Envelope>(bytes) else { return Ok(false) };
        if envelope.result.is_some() || envelope.error.is_some() {
            return Ok(false);
        }
        let id = match envelope.id.map(|raw| serde_json::from_str::<Value>(raw.get())) {
            None => None,
            Some(Ok(id @ (Value::String(_) | Value::Number(_)))) => Some(id),
            Some(_) => return Ok(false),
        };
        let mut name = checkfu_wire::text::head(method, MAX_METHOD_NAME).to_owned();
        if name.len() < method.len() {
            name.push('…');
        }
        let unknown = format!("`{name}` is no ACP method, and without the `_` prefix it is no extension either");
        let (kind, reason) = match &id {
            Some(_) => (Kind::Request, format!("{unknown}; the request was answered -32601 (Method not found)")),
            None => (Kind::Notification, format!("{unknown}; the notification was not answered")),
        };
        // Every one is answered; a harness repeating it is recorded up to the cap.
        let kept = self.grammar_violations.len() < MAX_DIAGNOSTICS;
        if kept {
            self.grammar_violations.push(GrammarViolation { method: name.clone(), kind, reason });
        }
        if let Some(id) = id {
            if kept {
                self.client_requests.push(ClientRequest { method: name, outcome: "refused", detail: unknown.clone() });
            }
            self.respond(id, Err((client::METHOD_NOT_FOUND, unknown)))?;
        }
        Ok(true)
    }

    /// Keeps the `checkfu.*` members the decoder dropped from an accepted message, each with
    /// the diagnostic that says why.
    fn note_dropped(&mut self, report: &Report) {
        for slot in report.slots.iter().filter(|s| s.status == SlotStatus::Dropped) {
            if self.dropped.len() >= MAX_DIAGNOSTICS {
                return;
            }
            let key = format!("`{}`", slot.key);
            let why = report.diagnostics.iter().find(|d| d.contains(&key)).cloned().unwrap_or_default();
            self.dropped.push((slot.key.to_string(), why));
        }
    }

    /// Holds the message's `checkfu.journal_checkpoint`, when it carried one in its carrier:
    /// the state it holds, or why it was dropped (the last one sent is the one held).
    fn note_custody(&mut self, report: &Report, message: Option<&Value>) {
        let Some(slot) = report.slots.iter().find(|s| s.key == custody::CHECKPOINT_KEY) else { return };
        let held = match slot.status {
            SlotStatus::Dropped => {
                let key = format!("`{}`", custody::CHECKPOINT_KEY);
                let why = report.diagnostics.iter().find(|d| d.contains(&key)).cloned();
                custody::Custody::Malformed(why.unwrap_or_else(|| String::from("the decoder dropped it")))
            }
            // Outside its carrier (a `session/update` member's `_meta`): not a checkpoint.
            SlotStatus::Ignored => return,
            SlotStatus::Decoded => {
                let pointer = format!("/params/update/_meta/{}", custody::CHECKPOINT_KEY);
                match message.and_then(|m| m.pointer(&pointer)) {
                    Some(value) => custody::Custody::of(value),
                    None => return,
                }
            }
        };
        self.checkpoint = Some(held);
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
        // An effect asked for after a refusal breaks the refusal whether or not its
        // capability was advertised: both are kept, the refusal's first.
        let effect = matches!(Method::from_name(method), Some(Method::FsWriteTextFile | Method::TerminalCreate));
        let refused = match self.permission {
            _ if effect && self.held.is_some() => Some(Breach::EffectBeforeAnswer { method: method.to_owned() }),
            Permission::Refused(answer) if effect => Some(Breach::EffectAfterRefusal { method: method.to_owned(), answer }),
            _ => None,
        };
        let beyond = self.beyond_advertised(method, report);
        if refused.is_some() || beyond.is_some() {
            let code = if refused.is_some() { client::PERMISSION_REFUSED } else { client::METHOD_NOT_FOUND };
            let why: Vec<String> = refused.iter().chain(beyond.iter()).map(Breach::to_string).collect();
            let why = why.join("; ");
            self.client_requests.push(ClientRequest { method: method.to_owned(), outcome: "refused", detail: why.clone() });
            for breach in refused.into_iter().chain(beyond) {
                self.breach(breach);
            }
            return self.respond(id, Err((code, why)));
        }
        let terminal = Method::from_name(method).filter(|m| terminals::serves(*m) && self.options.terminals && report.extension.is_none());
        let answer = if let Some(terminal_method) = terminal {
            let log = |outcome, detail: String| ClientRequest { method: method.to_owned(), outcome, detail };
            match self.terminals.handle(terminal_method, params, &self.workspace) {
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
            if Method::from_name(method) == Some(Method::SessionRequestPermission) {
                let refused = client::refusal(&answer, params);
                if let Some(hold) = self.hold {
                    // One held at a time: an earlier one goes out first, as it would have.
                    self.release_held(true)?;
                    self.held = Some(hold::Held::new(id, answer, refused, hold));
                    self.permissions_held += 1;
                    return Ok(());
                }
                if let Some(refused) = refused {
                    self.permission = Permission::Refused(refused);
                    self.permissions_refused += 1;
                }
            }
            answer
        };
        self.respond(id, answer)
    }

    /// The breach a request of the client is, when it calls a capability the client did not
    /// advertise: `fs/*` without `fs`, `terminal/*` without terminals, an elicitation ever.
    fn beyond_advertised(&self, method: &str, report: &Report) -> Option<Breach> {
        if report.extension.is_some() {
            return None;
        }
        match Method::from_name(method)? {
            Method::FsReadTextFile | Method::FsWriteTextFile if !self.options.fs => {
                Some(Breach::FsNotAdvertised { method: method.to_owned() })
            }
            m if terminals::serves(m) && !self.options.terminals => Some(Breach::TerminalNotAdvertised { method: method.to_owned() }),
            Method::ElicitationCreate => Some(Breach::ElicitationNotAdvertised),
            _ => None,
        }
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

    /// Records a line the runner writes on purpose although it is no message of the protocol
    /// (the informational probes' malformed JSON and invalid request): marked as such
    /// (`{"direction": …, "invalid": TEXT}`), so that `decode` tells it from a message and
    /// the record still decodes back.
    fn record_invalid(&mut self, line: &[u8]) {
        let marked = json!({"direction": WireDirection::RunnerToAgent.to_string(), "invalid": String::from_utf8_lossy(line)}).to_string();
        if self.record_truncated || self.record.len() + marked.len() > MAX_RECORD {
            self.record_truncated = true;
            return;
        }
        self.record.extend_from_slice(marked.as_bytes());
        self.record.push(b'\n');
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
        // Past the session's deadline, or once the run is cancelled, there is no time for a
        // clean exit on EOF: SIGTERM at once, so the report follows the deadline (or the
        // signal) by the grace at most.
        let stop_now = self.deadline.expired() || self.options.budget.cancelled().is_some();
        let teardown = if stop_now { self.harness.terminate(grace) } else { self.harness.teardown(grace) };
        self.terminals.kill_all();
        teardown
    }
}

/// The id of a response as the harness wrote it (`2`, `2.0`, `"2"`, `null`), for what
/// JSON-RPC asks of it: to come back exactly as sent. `null` when it has none.
fn raw_id(bytes: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    match serde_json::from_slice::<Envelope>(bytes) {
        Ok(Envelope { id: Some(id) }) => checkfu_wire::text::head(id.get(), MAX_METHOD_NAME).to_owned(),
        _ => String::from("null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session with a harness that writes `lines` and then waits for EOF.
    fn session_writing(lines: &[&str]) -> Session {
        let script = format!("printf '%s\\n' {}; cat > /dev/null", lines.iter().map(|l| format!("'{l}'")).collect::<Vec<_>>().join(" "));
        let command = ["sh".into(), "-c".into(), script.into()];
        let options =
            Options { permission: PermissionPolicy::Allow, terminals: false, fs: true, budget: Budget::after(Duration::from_secs(20)) };
        Session::start(&command, options).expect("the harness starts")
    }

    const CHUNK: &str = r#"{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}"#;

    #[test]
    fn an_unprefixed_unknown_method_is_answered_recorded_and_read_past() {
        let mut session = session_writing(&[
            r#"{"jsonrpc":"2.0","id":"q1","method":"craft/drainMidTurnQueue","params":{}}"#,
            r#"{"jsonrpc":"2.0","method":"craft/note"}"#,
            CHUNK,
        ]);
        let next = session.next(Instant::now() + Duration::from_secs(20));
        assert!(matches!(next, Ok(Incoming::Notification { ref method, .. }) if method == "session/update"), "{next:?}");
        let kinds: Vec<(&str, Kind)> = session.grammar_violations.iter().map(|v| (v.method.as_str(), v.kind)).collect();
        assert_eq!(kinds, [("craft/drainMidTurnQueue", Kind::Request), ("craft/note", Kind::Notification)]);
        let record = String::from_utf8_lossy(session.record().0).into_owned();
        let answers: Vec<&str> = record.lines().filter(|l| l.contains(r#""direction":"runner_to_agent""#)).collect();
        assert_eq!(answers.len(), 1, "only the request is answered: {record}");
        assert!(answers[0].contains(r#""id":"q1""#) && answers[0].contains(r#""code":-32601"#), "{record}");
        session.teardown(Duration::from_secs(1));
    }

    #[test]
    fn an_unknown_method_that_is_no_plain_request_or_notification_stays_a_rejection() {
        // (An `id` of another type the decoder refuses before it reads the method.)
        let error = r#"{"jsonrpc":"2.0","id":1,"method":"craft/x","error":{"code":1,"message":"m"}}"#;
        for line in [r#"{"jsonrpc":"2.0","id":1,"method":"craft/x","result":{}}"#, error] {
            let mut session = session_writing(&[line, CHUNK]);
            let next = session.next(Instant::now() + Duration::from_secs(20));
            assert!(
                matches!(next, Err(Fault::Rejected { ref error, .. }) if error.contains("unknown method `craft/x`")),
                "{line}: {next:?}"
            );
            assert!(session.grammar_violations.is_empty());
            session.teardown(Duration::from_secs(1));
        }
    }

    #[test]
    fn hygiene_tells_a_line_not_utf8_from_one_not_json_from_a_refused_message() {
        let mut hygiene = Hygiene::default();
        hygiene.rejected(b"caf\xe9", "caf?", "not UTF-8");
        hygiene.rejected(b"[fixture] thinking about it...", "[fixture] thinking about it...", "not JSON");
        let both = br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32601,"message":"m"}}"#;
        hygiene.rejected(both, "both", "result and error");
        hygiene.rejected(br#"{"jsonrpc":"2.0","method":"session/update","params":7}"#, "update", "params");
        hygiene.rejected(b"7", "7", "no object");
        assert_eq!((hygiene.not_utf8_lines, hygiene.not_json_lines), (1, 1));
        assert_eq!(hygiene.not_utf8.as_deref(), Some("caf?"));
        let rejections: Vec<(&str, bool)> = hygiene.rejections.iter().map(|(why, response)| (why.as_str(), *response)).collect();
        assert_eq!(rejections, [("result and error", true), ("params", false), ("no object", false)]);
    }

    #[test]
    fn an_update_naming_another_session_than_the_prompted_one_is_kept() {
        let mut hygiene = Hygiene::default();
        hygiene.update("s1", &json!({"params": {"sessionId": "s1"}}));
        assert_eq!(hygiene.foreign_update, None);
        hygiene.update("s1", &json!({"params": {"sessionId": "s2"}}));
        hygiene.update("s1", &json!({"params": {"sessionId": "s3"}}));
        assert_eq!(hygiene.prompt_updates, 3);
        assert!(hygiene.foreign_update.as_deref().is_some_and(|f| f.contains("`s2`") && f.contains("`s1`")), "{hygiene:?}");
    }

    #[test]
    fn a_long_unknown_method_is_kept_cut() {
        let method = format!("craft/{}", "é".repeat(200));
        let request = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}"}}"#);
        let mut session = session_writing(&[&request, CHUNK]);
        assert!(session.next(Instant::now() + Duration::from_secs(20)).is_ok());
        let kept = &session.grammar_violations[0].method;
        assert!(
            kept.len() <= MAX_METHOD_NAME + '…'.len_utf8() && kept.ends_with('…') && method.starts_with(kept.trim_end_matches('…')),
            "{kept}"
        );
        session.teardown(Duration::from_secs(1));
    }

    #[test]
    fn a_rejected_line_that_answers_no_request_is_read_past_only_when_asked() {
        const IDLESS: &str = r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}"#;
        let soon = || Instant::now() + Duration::from_secs(20);
        // Fail-closed by default: the wait ends on it.
        let mut session = session_writing(&[IDLESS, CHUNK]);
        assert!(matches!(session.next(soon()), Err(Fault::Rejected { .. })));
        session.teardown(Duration::from_secs(1));
        // Read past and listed when asked: the notification behind it is handed on.
        let mut session = session_writing(&[IDLESS, CHUNK]);
        session.skip_rejected = true;
        assert!(matches!(session.next(soon()), Ok(Incoming::Notification { .. })));
        assert_eq!((session.skipped_lines, session.skipped.len()), (1, 1));
        assert_eq!(session.skipped[0].stdout_line, 1);
        assert!(session.skipped[0].line.contains("-32601"), "{:?}", session.skipped);
        assert_eq!(session.hygiene.rejections.len(), 1, "still judged by the schema's requirement");
        session.teardown(Duration::from_secs(1));
        // A rejected response carrying one of the runner's ids answers that request, badly.
        let both = r#"{"jsonrpc":"2.0","id":0,"result":{},"error":{"code":-32601,"message":"m"}}"#;
        let mut session = session_writing(&[both, CHUNK]);
        session.skip_rejected = true;
        session.request("session/new", json!({"cwd": "/", "mcpServers": []})).expect("sent");
        assert!(matches!(session.next(soon()), Err(Fault::Rejected { .. })));
        assert!(session.skipped.is_empty());
        session.teardown(Duration::from_secs(1));
    }

    /// The response to `session/new` as `answer` writes it, read after the request was sent.
    fn answered_with(answer: &str) -> (Session, Result<Incoming, Fault>) {
        let mut session = session_writing(&[answer]);
        let id = session.request("session/new", json!({"cwd": "/", "mcpServers": []})).expect("sent");
        assert_eq!(id, 0);
        let next = session.next(Instant::now() + Duration::from_secs(20));
        (session, next)
    }

    #[test]
    fn a_response_whose_id_is_not_written_as_sent_is_a_breach() {
        let (mut session, next) = answered_with(r#"{"jsonrpc":"2.0","id":0.0,"result":{"sessionId":"s"}}"#);
        assert!(matches!(next, Ok(Incoming::Response { id: 0, .. })), "{next:?}");
        assert_eq!(session.breaches, [Breach::IdChanged { sent: 0, got: String::from("0.0") }]);
        assert_eq!(session.breaches[0].requirement().id(), "ACP-JSONRPC-001");
        session.teardown(Duration::from_secs(1));

        // A string id is no id of the probe's: the wait ends at once, naming it.
        let (mut session, next) = answered_with(r#"{"jsonrpc":"2.0","id":"0","result":{"sessionId":"s"}}"#);
        assert_eq!(next.err(), Some(Fault::Unrequested { id: String::from("\"0\"") }));
        assert_eq!(session.breaches, [Breach::Unrequested { id: String::from("\"0\"") }]);
        session.teardown(Duration::from_secs(1));
    }

    #[test]
    fn a_response_to_a_notification_is_a_breach_and_read_past() {
        let mut session = session_writing(&[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"no"}}"#, CHUNK]);
        let next = session.next(Instant::now() + Duration::from_secs(20));
        assert!(matches!(next, Ok(Incoming::Stray { .. })), "{next:?}");
        assert_eq!(session.breaches, [Breach::Unrequested { id: String::from("null") }]);
        assert_eq!(session.breaches[0].requirement().id(), "ACP-JSONRPC-003");
        session.teardown(Duration::from_secs(1));
    }
}
