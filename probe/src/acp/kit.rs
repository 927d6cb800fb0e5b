//! The requirement probes: the requirements of the registry that the run's own session
//! cannot put to the agent, put to one fresh agent process after it, as ACP's test kit puts
//! each of its tests to a fresh process. One process serves them all, since none of them
//! needs a process of its own beyond a fresh `initialize`; it is started as the main one was
//! (in the same fence, in the image when there is one) and under the run's budget.
//!
//! In order, on that process:
//! 1. `initialize` asking for a version no agent speaks (65535), with neither file system
//!    access nor terminals advertised (ACP-INIT-003);
//! 2. two `session/new` (ACP-SESSION-002; their results join ACP-CONFIG-003's and the
//!    modes' and config options' requirements);
//! 3. an unknown `_`-prefixed request and notification (ACP-EXT-001, ACP-JSONRPC-004);
//! 4. what the agent advertised: `session/list`, `session/load`, `session/resume`;
//! 5. a turn on the first session, permissions allowed, with no client capability
//!    advertised (ACP-CLIENTCAP-001 to -003), and a turn on the second with permissions
//!    refused (CHECKFU-PERMISSION-001), each answered as the `nonce` script does; then a
//!    prompt of each content type the agent advertised (ACP-PROMPTCAP-…), and
//!    `session/close` of the second session when advertised;
//! 6. what it advertised of a session's and a login's ends ([`lifecycle`]): the first
//!    session closed while a prompt's model answer streams (ACP-CLOSE-002), a session
//!    naming an extra directory (ACP-ADDDIRS-001), one deleted twice (ACP-DELETE-001, -002);
//! 7. the informational ones: a prompt for a session never made, a line that is no JSON,
//!    a JSON value that is no request, each followed by a request that shows whether the
//!    connection still works; then `logout` when advertised (ACP-AUTH-004);
//! 8. its stdin closed: it must exit by itself within the kill grace (ACP-SHUTDOWN-001).
//!
//! A line of its stdout that the decoder rejects and that answers none of the probes'
//! requests (an error with no id, say) is read past and listed in the report's
//! `requirement_probe.skipped`: the transport and schema requirements judge it, and the
//! request that was out when it came is not charged with it.
//!
//! Each requirement it was put to is judged here with its reason; the breaches it commits
//! (a capability called unadvertised, an effect after a refusal) fail theirs as the main
//! session's do.

mod lifecycle;
mod session_methods;

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{rpc_error, start, AcpOptions, Started};
use crate::acp::report::ProbeRun;
use crate::acp::requirements::Status;
use crate::outcome::{Outcome, Reason};
use crate::session::{Ending, Fault, Incoming, PermissionPolicy, Session};
use crate::stage::Stage;
use checkfu_wire::catalog::Requirement as R;
use checkfu_wire::decode::tables::{Method, PROMPT_METHOD, VERSION_METHOD};

/// The version asked for that no agent speaks.
const UNSUPPORTED_VERSION: u64 = 65535;
/// A method no agent has, in the `_` namespace of extensions.
const UNKNOWN_METHOD: &str = "_checkfu_probe/no_such_method";
/// The longest an informational probe waits for its answer: they judge nothing.
const INFORMATIONAL_WAIT: Duration = Duration::from_secs(3);
/// The most messages the probes read from the fresh process (a flood is cut there).
const MAX_MESSAGES: usize = 10_000;
/// How long the turns' permission answers are held back (CHECKFU-PERMISSION-002): long
/// enough for a write sent right behind its request to arrive first, short beside a turn.
const PERMISSION_HOLD: Duration = Duration::from_millis(250);
/// ACP's "Authentication required".
const AUTH_REQUIRED: i64 = -32000;
/// The trace context the first turn's prompt carries in its `_meta` (W3C's example).
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// The most notifications kept of those read while one request was out.
const MAX_SEEN: usize = 256;
/// How long the probes read on after an answer for what must not follow it (a loaded
/// session's replay): what the kit calls a quiet period.
const QUIET: Duration = Duration::from_millis(300);
/// How much stderr over a whole exchange is still a quiet agent's (ACP-STDERR-001).
const STDERR_BOUND: u64 = 1024 * 1024;

/// One requirement as the fresh process showed it.
type Judged = (R, Status, String);

/// Why the probes did not run, or why a request of theirs has no answer: the words of a
/// requirement's reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Why(String);

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for Why {
    fn from(words: &str) -> Why {
        Why(words.to_owned())
    }
}

/// The requirement probes over a fresh agent, with the fault its teardown left (also in the
/// run's words), or why they did not run. `v1` is the version the main process answered for
/// version 1.
pub(super) fn exercise(
    options: &AcpOptions,
    command: &[OsString],
    stage: &mut Stage<'_, '_>,
    v1: Option<u64>,
) -> Result<(ProbeRun, Option<Reason>), Why> {
    let began = Instant::now();
    // The negatives: nothing of the client's advertised, so any `fs/*` or `terminal/*`
    // call is one past what it was told.
    let mut fresh = options.clone();
    fresh.client_fs = false;
    fresh.terminals = false;
    fresh.permission = PermissionPolicy::Allow;
    let Started { mut session, container, .. } = start(&fresh, command, stage).map_err(|e| Why(format!("it could not start: {e}")))?;
    // One bad line is read past and reported, not charged to the request that is out.
    session.skip_rejected = true;
    let mark = stage.plane.relay.mark();
    let mut kit =
        Kit { session, stage, judged: Vec::new(), sessions: Vec::new(), seen: Vec::new(), errors: Vec::new(), unauthenticated: false };
    kit.run(v1, options.authenticate.as_deref());
    let errors = error_messages(&kit.errors);
    kit.judged.push(errors);
    let Kit { session, mut judged, sessions, .. } = kit;
    let (mut run, ended) = super::fresh::end(stage, session, container, "requirement probes' harness", |session, teardown| ProbeRun {
        pid: session.pid(),
        ending: teardown.ending.name(),
        exit_ms: None,
        stderr_bytes: session.stderr().0,
        messages_in: session.messages_in,
        messages_out: session.messages_out,
        wall_ms: 0,
        model: crate::relay::Aside::default(),
        client_requests: session.client_requests.clone(),
        grammar_violations: session.grammar_violations.clone(),
        breaches: session.breaches.clone(),
        skipped: session.skipped.clone(),
        skipped_lines: session.skipped_lines,
        record: launched(command, session),
        judged: Vec::new(),
        hygiene: session.hygiene.clone(),
        sessions,
        teardown_fault: None,
    });
    // Its model calls have all ended with it.
    run.model = stage.plane.relay.set_aside(mark);
    run.exit_ms = (ended.teardown.ending == Ending::ExitedOnEof).then_some(ended.shutdown_ms);
    judged.push(shutdown(&ended, stage.options.kill_grace));
    judged.push(stderr_volume(run.stderr_bytes));
    run.judged = judged;
    run.teardown_fault = ended.fault.as_ref().map(Reason::to_string);
    run.wall_ms = began.elapsed().as_millis() as u64;
    Ok((run, ended.fault))
}

/// The fresh process's record, opened by the line that says how it was launched (which
/// `decode` takes as the start of a connection of its own).
fn launched(command: &[OsString], session: &Session) -> Vec<u8> {
    let argv: Vec<String> = command.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    let launch = json!({"launch": {"command": argv, "pid": session.pid(), "process": "requirement_probes"}});
    let mut record = launch.to_string().into_bytes();
    record.push(b'\n');
    record.extend_from_slice(session.record().0);
    record
}

/// ACP-SHUTDOWN-001: it exited by itself once its stdin closed, within the kill grace.
fn shutdown(ended: &super::fresh::Ended, grace: Duration) -> Judged {
    match ended.teardown.ending {
        Ending::ExitedOnEof => (R::ACPSHUTDOWN001, Status::Passed, format!("it exited {} ms after its stdin closed", ended.shutdown_ms)),
        ending => (
            R::ACPSHUTDOWN001,
            Status::Failed,
            format!("its stdin closed, it did not exit within {:.1} s by itself ({})", grace.as_secs_f64(), ending.name()),
        ),
    }
}

/// ACP-ERROR-001 over the errors its answers carried: each `message` a non-empty line.
fn error_messages(errors: &[Value]) -> Judged {
    let bad = errors.iter().find(|m| m.as_str().is_none_or(|words| words.trim().is_empty() || words.contains('\n')));
    match (bad, errors.len()) {
        (Some(message), _) => (R::ACPERROR001, Status::Failed, format!("an error's `message` was {message}: a short sentence on one line")),
        (None, 0) => (R::ACPERROR001, Status::NotTested, String::from("none of its answers was an error")),
        (None, n) => (R::ACPERROR001, Status::Passed, format!("{n} error(s) answered, each `message` a non-empty line")),
    }
}

fn stderr_volume(bytes: u64) -> Judged {
    let status = if bytes <= STDERR_BOUND { Status::Passed } else { Status::Failed };
    (R::ACPSTDERR001, status, format!("{bytes} bytes on stderr over its whole exchange (bound {STDERR_BOUND})"))
}

/// The fresh process's session and what it showed.
struct Kit<'s, 'a, 'p> {
    session: Session,
    stage: &'s mut Stage<'a, 'p>,
    judged: Vec<Judged>,
    /// Its `session/new` results.
    sessions: Vec<Value>,
    /// The notifications read while the last request was out (the first [`MAX_SEEN`]).
    seen: Vec<Value>,
    /// The `message` of each error its answers carried (the first [`MAX_SEEN`]).
    errors: Vec<Value>,
    /// A `session/new` was refused -32000 (Authentication required).
    unauthenticated: bool,
}

/// An answer: the message, or why there was none.
type Answer = Result<Value, Why>;

impl Kit<'_, '_, '_> {
    fn judge(&mut self, id: R, status: Status, reason: impl std::fmt::Display) {
        self.judged.push((id, status, reason.to_string()));
    }

    fn until(&self) -> Instant {
        Instant::now() + self.stage.options.step_timeout
    }

    /// Sends `method` and waits for its answer by `until`, reading past the rest.
    /// Sends `method` and waits for its answer by `until`, reading past the rest; the
    /// notifications read meanwhile are kept in `seen`.
    fn ask(&mut self, method: &'static str, params: Value, until: Instant) -> Answer {
        let id = self.session.request(method, params).map_err(|f| Why(f.to_string()))?;
        self.seen.clear();
        loop {
            if self.session.messages_in > MAX_MESSAGES {
                return Err(Why(format!("it sent more than {MAX_MESSAGES} messages; the probes stop reading")));
            }
            match self.session.next(until) {
                Ok(Incoming::Response { id: got, message, .. }) if got == id => {
                    if let Some(words) = message.pointer("/error/message") {
                        if self.errors.len() < MAX_SEEN {
                            self.errors.push(words.clone());
                        }
                    }
                    return Ok(message);
                }
                Ok(Incoming::Notification { message, .. }) if self.seen.len() < MAX_SEEN => self.seen.push(message),
                Ok(_) => {}
                Err(Fault::Timeout) => return Err(Why(format!("`{method}` was not answered in its time (--step-timeout)"))),
                Err(fault) => return Err(Why(format!("`{method}`: {fault}"))),
            }
        }
    }

    fn run(&mut self, v1: Option<u64>, authenticate: Option<&str>) {
        let Some(agent) = self.initialize(v1) else { return };
        // As the main process was (`--authenticate`): its sessions need it.
        let authenticated = authenticate.map(|method| {
            let until = self.until();
            let answer = self.ask(super::AUTHENTICATE, json!({"methodId": method}), until);
            answer.as_ref().ok().and_then(|m| m.get("result")).is_some_and(Value::is_object)
        });
        let sessions = self.two_sessions();
        self.authenticated(authenticated);
        let Some((first, second)) = sessions else { return };
        self.extension();
        self.advertised(&agent, &first);
        self.turns(&agent, &first, &second);
        self.close_in_flight(&agent, &first);
        self.extra_sessions(&agent);
        self.informational();
        self.logout(&agent);
    }

    /// ACP-AUTH-003 when `--authenticate` named a method (`Some(true)` when it was answered
    /// with an object): the `session/new` after it was not refused as unauthenticated.
    fn authenticated(&mut self, authenticated: Option<bool>) {
        let (status, reason) = match authenticated {
            None => return,
            Some(false) => (Status::NotTested, String::from("`authenticate` was not answered with an object")),
            Some(true) if self.unauthenticated => (
                Status::Failed,
                String::from("after an `authenticate` answered with an object, `session/new` was refused -32000 (Authentication required)"),
            ),
            Some(true) => (Status::Passed, String::from("after `authenticate`, `session/new` was not refused as unauthenticated")),
        };
        self.judge(R::ACPAUTH003, status, reason);
    }

    /// ACP-INIT-003; the agent's capabilities when it answered with a result.
    fn initialize(&mut self, v1: Option<u64>) -> Option<Value> {
        let params = json!({
            "protocolVersion": UNSUPPORTED_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false},
            "clientInfo": {"name": "checkfu-wire probe", "version": env!("CARGO_PKG_VERSION")},
        });
        let until = self.until();
        let message = match self.ask(VERSION_METHOD, params, until) {
            Ok(message) => message,
            Err(why) => {
                self.judge(R::ACPINIT003, Status::Failed, why);
                return None;
            }
        };
        let asked = format!("asked for version {UNSUPPORTED_VERSION}");
        let (status, reason) = match (message.get("error"), message.pointer("/result/protocolVersion").and_then(Value::as_u64)) {
            (Some(error), _) => (Status::Failed, format!("{asked}, it answered an error: {}", rpc_error(error))),
            (None, None) => (Status::Failed, format!("{asked}, its result has no integer `protocolVersion`")),
            (None, Some(UNSUPPORTED_VERSION)) => {
                (Status::Failed, format!("{asked}, it answered {UNSUPPORTED_VERSION}, which it cannot speak"))
            }
            (None, Some(v)) if v1.is_some_and(|v1| v < v1) => {
                (Status::Failed, format!("{asked}, it answered {v}, lower than the {} it answers for version 1", v1.unwrap_or_default()))
            }
            (None, Some(v)) => (Status::Passed, format!("{asked}, it answered version {v}, one it speaks")),
        };
        self.judge(R::ACPINIT003, status, reason);
        message.pointer("/result/agentCapabilities").cloned().or_else(|| message.get("result").map(|_| json!({})))
    }

    /// ACP-SESSION-002: two sessions, their ids.
    fn two_sessions(&mut self) -> Option<(String, String)> {
        let mut ids = Vec::new();
        for _ in 0..2 {
            let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
            let until = self.until();
            match self.ask(super::NEW_SESSION, json!({"cwd": cwd, "mcpServers": []}), until) {
                Ok(message) => match (message.get("error"), message.pointer("/result/sessionId").and_then(Value::as_str)) {
                    (None, Some(id)) if !id.is_empty() => {
                        ids.push(id.to_owned());
                        self.sessions.extend(message.get("result").cloned());
                    }
                    (Some(error), _) => {
                        self.unauthenticated = error.get("code").and_then(Value::as_i64) == Some(AUTH_REQUIRED);
                        self.judge(R::ACPSESSION002, Status::Failed, format!("`session/new` answered an error: {}", rpc_error(error)));
                        return None;
                    }
                    _ => {
                        self.judge(R::ACPSESSION002, Status::Failed, "`session/new` answered without a session id");
                        return None;
                    }
                },
                Err(why) => {
                    self.judge(R::ACPSESSION002, Status::Failed, why);
                    return None;
                }
            }
        }
        let (first, second) = (ids[0].clone(), ids[1].clone());
        if first == second {
            self.judge(R::ACPSESSION002, Status::Failed, format!("two `session/new` on one connection both answered the id `{first}`"));
            return None;
        }
        self.judge(R::ACPSESSION002, Status::Passed, format!("two `session/new` answered `{first}` and `{second}`"));
        self.modes_and_options();
        Some((first, second))
    }

    /// ACP-MODES-001 and ACP-CONFIG-001 over the sessions' results, when they offer any.
    fn modes_and_options(&mut self) {
        let results = self.sessions.clone();
        if let Some(modes) = results.iter().find_map(|r| r.get("modes").filter(|m| !m.is_null())) {
            let current = modes.get("currentModeId");
            let offered = modes.get("availableModes").and_then(Value::as_array).into_iter().flatten().any(|m| m.get("id") == current);
            let status = if offered { Status::Passed } else { Status::Failed };
            self.judge(
                R::ACPMODES001,
                status,
                format!(
                    "the current mode {} is {}one of those offered",
                    current.unwrap_or(&Value::Null),
                    if offered { "" } else { "not " }
                ),
            );
        }
        let options: Vec<Value> =
            results.iter().flat_map(|r| r.get("configOptions").and_then(Value::as_array).cloned().unwrap_or_default()).collect();
        if !options.is_empty() {
            let wrong = options.iter().find(|o| !config_value_fits(o));
            match wrong {
                Some(o) => self.judge(
                    R::ACPCONFIG001,
                    Status::Failed,
                    format!("the config option {} holds a current value not of its type", o.get("id").unwrap_or(&Value::Null)),
                ),
                None => self.judge(
                    R::ACPCONFIG001,
                    Status::Passed,
                    format!("{} config option(s), each with a current value of its type", options.len()),
                ),
            }
        }
    }

    /// ACP-EXT-001 and ACP-JSONRPC-004 on an unknown `_` request; an unknown `_`
    /// notification after it, which must go unanswered (a response is a breach).
    fn extension(&mut self) {
        let until = self.until();
        match self.ask(UNKNOWN_METHOD, json!({}), until) {
            Ok(message) => {
                self.judge(R::ACPEXT001, Status::Passed, format!("`{UNKNOWN_METHOD}` was answered"));
                let code = message.pointer("/error/code").and_then(Value::as_i64);
                let (status, reason) = match code {
                    Some(crate::session::client::METHOD_NOT_FOUND) => (Status::Passed, format!("`{UNKNOWN_METHOD}` was answered -32601")),
                    Some(code) => (Status::Failed, format!("`{UNKNOWN_METHOD}` was answered {code}, not -32601")),
                    None => (Status::Failed, format!("`{UNKNOWN_METHOD}` was answered with a result, not -32601")),
                };
                self.judge(R::ACPJSONRPC004, status, reason);
            }
            Err(why) => self.judge(R::ACPEXT001, Status::Failed, why),
        }
        let _ = self.session.notify(UNKNOWN_METHOD, json!({}));
    }

    /// The two turns of the client capabilities' negatives and the refused permission, the
    /// advertised content types, and `session/close` when advertised.
    fn turns(&mut self, agent: &Value, first: &str, second: &str) {
        if self.stage.options.model_script.fails_calls() {
            let why = "a fault script runs: the relay's record is its turn's alone";
            for id in [R::ACPCLIENTCAP001, R::ACPCLIENTCAP002, R::ACPCLIENTCAP003, R::CHECKFUPERMISSION001, R::CHECKFUPERMISSION002] {
                self.judge(id, Status::NotTested, why);
            }
            return;
        }
        // Both turns' permission answers are held back a while: a write or a terminal asked
        // for meanwhile did not wait for the user (CHECKFU-PERMISSION-002).
        let held = self.session.hold_permissions(Some(PERMISSION_HOLD)).and_then(|()| {
            self.two_turns(first, second);
            self.session.hold_permissions(None)
        });
        let (status, reason) = match (held, self.session.permissions_held) {
            (Err(fault), _) => (Status::NotTested, format!("a held permission answer could not be sent: {fault}")),
            (Ok(()), 0) => (Status::NotTested, String::from("no permission request came in its two turns")),
            (Ok(()), n) => (
                Status::Passed,
                format!(
                    "{n} permission answer(s) held back {} ms each, and no write or terminal was asked for meanwhile",
                    PERMISSION_HOLD.as_millis()
                ),
            ),
        };
        self.judge(R::CHECKFUPERMISSION002, status, reason);
        self.content_types(agent, first);
        if agent.pointer("/sessionCapabilities/close").is_some_and(|c| !c.is_null()) {
            let until = self.until();
            let closed = self.ask(Method::SessionClose.name(), json!({"sessionId": second}), until);
            let empty = closed.as_ref().ok().and_then(|m| m.get("result")).is_some_and(|r| r == &json!({}));
            let status = if empty { Status::Passed } else { Status::Failed };
            self.judge(R::ACPCLOSE001, status, format!("`session/close` of an idle session: {}", shown(&closed)));
        }
    }

    /// The turn with nothing of the client's advertised and permissions allowed, and the
    /// turn on the other session with permissions refused.
    fn two_turns(&mut self, first: &str, second: &str) {
        // The first turn's prompt carries a trace context in its `_meta` (ACP-META-001).
        let traced = self.turn(first, None, Some(json!({"traceparent": TRACEPARENT})));
        let (status, reason) = match &traced {
            Ok(stop) => (Status::Passed, format!("a prompt carrying `_meta.traceparent` ended `{stop}`")),
            Err(why) => (Status::Failed, format!("a prompt carrying `_meta.traceparent`: {why}")),
        };
        self.judge(R::ACPMETA001, status, reason);
        match traced {
            Ok(stop) => {
                let reason = format!(
                    "a turn ended `{stop}` with neither file system access nor terminals nor elicitation advertised, and called none"
                );
                for id in [R::ACPCLIENTCAP001, R::ACPCLIENTCAP002, R::ACPCLIENTCAP003] {
                    self.judge(id, Status::Passed, reason.clone());
                }
            }
            Err(why) => {
                for id in [R::ACPCLIENTCAP001, R::ACPCLIENTCAP002, R::ACPCLIENTCAP003] {
                    self.judge(id, Status::NotTested, format!("its turn did not end: {why}"));
                }
            }
        }
        self.session.set_permission(PermissionPolicy::Reject);
        let refused_before = self.session.permissions_refused;
        let turn = self.turn(second, None, None);
        self.session.set_permission(PermissionPolicy::Allow);
        let refused = self.session.permissions_refused - refused_before;
        let (status, reason) = match turn {
            Ok(_) if refused > 0 => {
                (Status::Passed, format!("{refused} permission request(s) refused and no write or terminal was asked for after"))
            }
            Ok(stop) => (Status::NotTested, format!("its turn ended `{stop}` without a permission request to refuse")),
            Err(why) => (Status::NotTested, format!("its turn with permissions refused did not end: {why}")),
        };
        self.judge(R::CHECKFUPERMISSION001, status, reason);
    }

    /// A prompt of each content type the agent advertised, beside a text block.
    fn content_types(&mut self, agent: &Value, session: &str) {
        const PIXEL: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";
        const SILENCE: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";
        let kinds = [
            ("image", R::ACPPROMPTCAP001, json!({"type": "image", "mimeType": "image/png", "data": PIXEL})),
            ("audio", R::ACPPROMPTCAP002, json!({"type": "audio", "mimeType": "audio/wav", "data": SILENCE})),
            (
                "embeddedContext",
                R::ACPPROMPTCAP003,
                json!({"type": "resource", "resource": {"uri": "file:///checkfu-probe/notes.txt", "mimeType": "text/plain", "text": "one\ntwo\n"}}),
            ),
        ];
        // A link beside the text every agent takes, advertised or not (ACP-PROMPT-003).
        let link = (
            "resource_link",
            R::ACPPROMPT003,
            json!({"type": "resource_link", "uri": "file:///checkfu-probe/notes.txt", "name": "notes.txt"}),
        );
        for (capability, id, block) in kinds.into_iter().chain(std::iter::once(link)) {
            let baseline = id == R::ACPPROMPT003;
            if !baseline && agent.pointer(&format!("/promptCapabilities/{capability}")) != Some(&json!(true)) {
                continue;
            }
            let (status, reason) = match self.turn(session, Some(block), None) {
                Ok(stop) => (Status::Passed, format!("a prompt with a {capability} block ended `{stop}`")),
                Err(why) => (Status::Failed, format!("a prompt with a {capability} block: {why}")),
            };
            self.judge(id, status, reason);
        }
    }

    /// One prompt on `session` (a text asking for a fresh nonce, then `block`), answered as
    /// the `nonce` script does; its stop reason.
    /// `meta`, when given, rides the prompt as its `_meta`.
    fn turn(&mut self, session: &str, block: Option<Value>, meta: Option<Value>) -> Result<String, Why> {
        let nonce = crate::options::fresh_nonce();
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        let text = json!({"type": "text", "text": format!("Checkfu requirement probe. Reply with the nonce {nonce} and end the turn.")});
        let prompt: Vec<Value> = std::iter::once(text).chain(block).collect();
        let mut params = json!({"sessionId": session, "prompt": prompt});
        if let Some(meta) = meta {
            params["_meta"] = meta;
        }
        let until = self.until();
        let answer = self.ask(PROMPT_METHOD, params, until);
        let message = answer.inspect_err(|_| {
            // A turn given up on is cancelled, as ACP asks of a client.
            let _ = self.session.notify(super::CANCEL_METHOD, json!({"sessionId": session}));
        })?;
        super::exercised::stop_reason(&message).map(str::to_owned).map_err(|reason| Why(reason.to_string()))
    }

    /// The informational probes: a prompt for a session never made, a line that is no
    /// JSON, a JSON value that is no request; after each, whether an unknown `_` request
    /// is still answered.
    fn informational(&mut self) {
        let until = Instant::now() + INFORMATIONAL_WAIT.min(self.stage.options.step_timeout);
        let unknown = self.ask(
            PROMPT_METHOD,
            json!({"sessionId": "checkfu-probe-no-such-session", "prompt": [{"type": "text", "text": "Hello."}]}),
            until,
        );
        let reason = format!("a prompt for a session never made was answered {}", shown(&unknown));
        self.judge(R::ACPINFOUNKNOWNSESSION001, if unknown.is_ok() { Status::Passed } else { Status::Failed }, reason);
        self.session.tolerate_strays = true;
        for (id, line, what) in [
            (R::ACPINFOPARSE001, &br#"{"jsonrpc": "2.0", "id": "#[..], "a line that is no JSON"),
            (R::ACPINFOINVALIDREQ001, &br#"{"jsonrpc": "2.0", "id": 424242, "params": {}}"#[..], "a JSON object with an id and no method"),
        ] {
            if self.session.send_raw(line).is_err() {
                self.judge(id, Status::Failed, format!("{what} could not be written: its stdin is closed"));
                continue;
            }
            let until = Instant::now() + INFORMATIONAL_WAIT.min(self.stage.options.step_timeout);
            let after = self.ask(UNKNOWN_METHOD, json!({}), until);
            let (status, works) = match after {
                Ok(_) => (Status::Passed, "the connection still answered a request after it"),
                Err(_) => (Status::Failed, "the connection answered no request after it"),
            };
            self.judge(id, status, format!("{what}: {works}"));
        }
        self.session.tolerate_strays = false;
    }
}

/// Whether a config option's current value is of its type.
fn config_value_fits(option: &Value) -> bool {
    let current = option.get("currentValue");
    match option.get("type").and_then(Value::as_str) {
        Some("boolean") => current.is_some_and(Value::is_boolean),
        Some("select") => {
            let values = option.get("options").and_then(Value::as_array).into_iter().flatten();
            // Options come flat or in groups, each group with its own `options`.
            let flat: Vec<&Value> =
                values.flat_map(|v| v.get("options").and_then(Value::as_array).map_or_else(|| vec![v], |g| g.iter().collect())).collect();
            flat.iter().any(|v| v.get("value") == current)
        }
        _ => current.is_some(),
    }
}

/// An answer in a few words: its error, its result, or why there was none.
fn shown(answer: &Answer) -> String {
    match answer {
        Ok(message) => match (message.get("error"), message.get("result")) {
            (Some(error), _) => format!("with the error {}", rpc_error(error)),
            (None, Some(result)) => format!("with the result {}", checkfu_wire::text::head(&result.to_string(), 200)),
            (None, None) => String::from("with neither a result nor an error"),
        },
        Err(why) => format!("not at all ({why})"),
    }
}

/// Whether the main run leaves the agent fit for the probes: its prompt exchange passed
/// and it was torn down cleanly (an agent that floods, hangs or quits would only do so
/// again, at the run's cost); `Err` says why not.
pub(super) fn fit(exchanged: bool, teardown: &Outcome, cancelled: bool) -> Result<(), Why> {
    if cancelled {
        return Err(Why::from("the run was cancelled"));
    }
    if !exchanged {
        return Err(Why::from("the main process's prompt exchange did not pass"));
    }
    if !teardown.passed() {
        return Err(Why::from("the main process's teardown failed"));
    }
    Ok(())
}
