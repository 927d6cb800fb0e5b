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
//! 6. the informational ones: a prompt for a session never made, a line that is no JSON,
//!    a JSON value that is no request, each followed by a request that shows whether the
//!    connection still works;
//! 7. its stdin closed: it must exit by itself within the kill grace (ACP-SHUTDOWN-001).
//!
//! Each requirement it was put to is judged here with its reason; the breaches it commits
//! (a capability called unadvertised, an effect after a refusal) fail theirs as the main
//! session's do.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{rpc_error, start, AcpOptions, Started};
use crate::acp::report::ProbeRun;
use crate::acp::requirements::Status;
use crate::outcome::Outcome;
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

/// The requirement probes over a fresh agent, or why they did not run. `v1` is the version
/// the main process answered for version 1.
pub(super) fn exercise(options: &AcpOptions, command: &[OsString], stage: &mut Stage<'_, '_>, v1: Option<u64>) -> Result<ProbeRun, Why> {
    let began = Instant::now();
    // The negatives: nothing of the client's advertised, so any `fs/*` or `terminal/*`
    // call is one past what it was told.
    let mut fresh = options.clone();
    fresh.client_fs = false;
    fresh.terminals = false;
    fresh.permission = PermissionPolicy::Allow;
    let Started { session, container, .. } = start(&fresh, command, stage).map_err(|e| Why(format!("it could not start: {e}")))?;
    let mark = stage.plane.relay.mark();
    let mut kit = Kit { session, stage, judged: Vec::new(), sessions: Vec::new() };
    kit.run(v1, options.authenticate.as_deref());
    let shutdown = Instant::now();
    let teardown = kit.session.teardown(kit.stage.options.kill_grace);
    let exit_ms = (teardown.ending == Ending::ExitedOnEof).then(|| shutdown.elapsed().as_millis() as u64);
    // Its model calls have all ended with it.
    let model = kit.stage.plane.relay.set_aside(mark);
    kit.judged.push(match (teardown.ending, exit_ms) {
        (Ending::ExitedOnEof, Some(ms)) => (R::ACPSHUTDOWN001, Status::Passed, format!("it exited {ms} ms after its stdin closed")),
        (ending, _) => (
            R::ACPSHUTDOWN001,
            Status::Failed,
            format!(
                "its stdin closed, it did not exit within {:.1} s by itself ({})",
                kit.stage.options.kill_grace.as_secs_f64(),
                ending.name()
            ),
        ),
    });
    let grace = kit.stage.grace();
    if let Some((container, image)) = container.zip(kit.stage.image.as_mut()) {
        let _ = image.finish(container, &grace);
    }
    let (stderr_bytes, _) = kit.session.stderr();
    kit.judged.push(stderr_volume(stderr_bytes));
    let Kit { session, judged, sessions, .. } = kit;
    let run = ProbeRun {
        pid: session.pid(),
        ending: teardown.ending.name(),
        exit_ms,
        stderr_bytes,
        messages_in: session.messages_in,
        messages_out: session.messages_out,
        wall_ms: began.elapsed().as_millis() as u64,
        model,
        client_requests: session.client_requests.clone(),
        grammar_violations: session.grammar_violations.clone(),
        breaches: session.breaches.clone(),
        judged,
        hygiene: session.hygiene.clone(),
        sessions,
    };
    // The workspace goes back to the plane, whose removal is part of teardown.
    stage.plane.workspace = Some(session.into_workspace());
    Ok(run)
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
    fn ask(&mut self, method: &'static str, params: Value, until: Instant) -> Answer {
        let id = self.session.request(method, params).map_err(|f| Why(f.to_string()))?;
        loop {
            if self.session.messages_in > MAX_MESSAGES {
                return Err(Why(format!("it sent more than {MAX_MESSAGES} messages; the probes stop reading")));
            }
            match self.session.next(until) {
                Ok(Incoming::Response { id: got, message, .. }) if got == id => return Ok(message),
                Ok(_) => {}
                Err(Fault::Timeout) => return Err(Why(format!("`{method}` was not answered in its time (--step-timeout)"))),
                Err(fault) => return Err(Why(format!("`{method}`: {fault}"))),
            }
        }
    }

    fn run(&mut self, v1: Option<u64>, authenticate: Option<&str>) {
        let Some(agent) = self.initialize(v1) else { return };
        if let Some(method) = authenticate {
            // As the main process was (`--authenticate`): its sessions need it.
            let until = self.until();
            let _ = self.ask(super::AUTHENTICATE, json!({"methodId": method}), until);
        }
        let Some((first, second)) = self.two_sessions() else { return };
        self.extension();
        self.advertised(&agent, &first);
        self.turns(&agent, &first, &second);
        self.informational();
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

    /// What the agent advertised of the session methods, each asked once.
    fn advertised(&mut self, agent: &Value, first: &str) {
        let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
        if agent.pointer("/sessionCapabilities/list").is_some_and(|c| !c.is_null()) {
            let until = self.until();
            let listed = self.ask(Method::SessionList.name(), json!({}), until);
            let (status, reason) = object_with(&listed, "sessions", "`session/list`");
            self.judge(R::ACPLIST001, status, reason);
            let until = self.until();
            let none = self.ask(Method::SessionList.name(), json!({"cwd": "/checkfu-probe/no-session-here"}), until);
            let empty = none.as_ref().ok().and_then(|m| m.pointer("/result/sessions")).and_then(Value::as_array).is_some_and(Vec::is_empty);
            let (status, reason) = if empty {
                (Status::Passed, String::from("an empty `sessions` array"))
            } else {
                (Status::Failed, format!("not an empty `sessions` array: {}", shown(&none)))
            };
            self.judge(R::ACPLIST002, status, format!("`session/list` for a `cwd` no session has: {reason}"));
        }
        if agent.get("loadSession") == Some(&json!(true)) {
            let until = self.until();
            let loaded = self.ask(Method::SessionLoad.name(), json!({"sessionId": first, "cwd": cwd, "mcpServers": []}), until);
            let (status, reason) = answered_object(&loaded, "`session/load`");
            self.judge(R::ACPLOAD001, status, reason);
        }
        if agent.pointer("/sessionCapabilities/resume").is_some_and(|c| !c.is_null()) {
            let until = self.until();
            let resumed = self.ask(Method::SessionResume.name(), json!({"sessionId": first, "cwd": cwd}), until);
            let (status, reason) = answered_object(&resumed, "`session/resume`");
            self.judge(R::ACPRESUME001, status, reason);
        }
    }

    /// The two turns of the client capabilities' negatives and the refused permission, the
    /// advertised content types, and `session/close` when advertised.
    fn turns(&mut self, agent: &Value, first: &str, second: &str) {
        if self.stage.options.model_script.fails_calls() {
            let why = "a fault script runs: the relay's record is its turn's alone";
            for id in [R::ACPCLIENTCAP001, R::ACPCLIENTCAP002, R::ACPCLIENTCAP003, R::CHECKFUPERMISSION001] {
                self.judge(id, Status::NotTested, why);
            }
            return;
        }
        match self.turn(first, None) {
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
        let turn = self.turn(second, None);
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
        self.content_types(agent, first);
        if agent.pointer("/sessionCapabilities/close").is_some_and(|c| !c.is_null()) {
            let until = self.until();
            let closed = self.ask(Method::SessionClose.name(), json!({"sessionId": second}), until);
            let empty = closed.as_ref().ok().and_then(|m| m.get("result")).is_some_and(|r| r == &json!({}));
            let status = if empty { Status::Passed } else { Status::Failed };
            self.judge(R::ACPCLOSE001, status, format!("`session/close` of an idle session: {}", shown(&closed)));
        }
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
        for (capability, id, block) in kinds {
            if agent.pointer(&format!("/promptCapabilities/{capability}")) != Some(&json!(true)) {
                continue;
            }
            let (status, reason) = match self.turn(session, Some(block)) {
                Ok(stop) => (Status::Passed, format!("a prompt with a {capability} block ended `{stop}`")),
                Err(why) => (Status::Failed, format!("a prompt with a {capability} block: {why}")),
            };
            self.judge(id, status, reason);
        }
    }

    /// One prompt on `session` (a text asking for a fresh nonce, then `block`), answered as
    /// the `nonce` script does; its stop reason.
    fn turn(&mut self, session: &str, block: Option<Value>) -> Result<String, Why> {
        let nonce = crate::options::fresh_nonce();
        let relay = &self.stage.plane.relay;
        relay.begin_turn(nonce.clone(), Vec::new());
        relay.answer_plainly();
        let text = json!({"type": "text", "text": format!("Checkfu requirement probe. Reply with the nonce {nonce} and end the turn.")});
        let prompt: Vec<Value> = std::iter::once(text).chain(block).collect();
        let until = self.until();
        let answer = self.ask(PROMPT_METHOD, json!({"sessionId": session, "prompt": prompt}), until);
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

/// A requirement that the answer be a result object holding the array `member`.
fn object_with(answer: &Answer, member: &str, what: &str) -> (Status, String) {
    match answer.as_ref().ok().and_then(|m| m.pointer(&format!("/result/{member}"))) {
        Some(Value::Array(items)) => (Status::Passed, format!("{what} answered `{member}` with {} item(s)", items.len())),
        _ => (Status::Failed, format!("{what} answered without a `{member}` array: {}", shown(answer))),
    }
}

/// A requirement that the answer be a result (an object).
fn answered_object(answer: &Answer, what: &str) -> (Status, String) {
    match answer.as_ref().ok().and_then(|m| m.get("result")) {
        Some(Value::Object(_)) => (Status::Passed, format!("{what} answered with a result")),
        _ => (Status::Failed, format!("{what}: {}", shown(answer))),
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
