//! The ACP lane of `checkfu-wire probe`: a live local diagnostic against any ACP harness.
//!
//! One run is the reference page's local diagnostic: a real ACP `initialize` (whose
//! `checkfu.capabilities` is admitted against a driver envelope), `session/new` carrying the
//! authority members given on the command line, one diagnostic prompt bearing a nonce (with a
//! scripted steer when `mid_run_input: native` was admitted, and a scripted cooperative
//! interrupt when asked for and `interrupt: cooperative` was admitted), normalized
//! observations judged by the seven conformance checks, and teardown. The result is
//! `unsigned_local_only`: feedback for an author, never qualification.
//!
//! The wire runs through [`crate::session::Session`] (and so through the generated decoder);
//! the observations are written by [`checkfu_wire::conformance::normalize`] and judged by parsing
//! that very trace with [`checkfu_wire::conformance::check_str`], so `conform` on the `--trace` file
//! gives the same verdicts.

use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::model_plane::ModelPlane;
use crate::plane::{catalog_entry, prepare, safe_output_schema, Plane};
use crate::relay::{self, Relay, Script};
use crate::result::{Admission, HarnessInfo, ProbeResult, Wire};
use crate::session::{self, Fault, Incoming, PermissionPolicy, Session};
use crate::{ending, launch, result, verdict, Progress};
use checkfu_wire::admission::{self, AdmittedCapabilities};
use checkfu_wire::catalog;
use checkfu_wire::conformance::{self, normalize::Normalizer, Outcome};
use checkfu_wire::decode::tables::{Method, PROMPT_METHOD, PROTOCOL_VERSION, UPDATE_METHOD, VERSION_METHOD};

// The methods and checks this lane sends and reads, named by the generated enums (a
// catalog that renamed one would not compile here).
const NEW_SESSION: &str = Method::SessionNew.name();
const AUTHENTICATE: &str = Method::Authenticate.name();
const CANCEL_METHOD: &str = Method::SessionCancel.name();
const STEER_METHOD: &str = Method::CheckfuSessionSteer.name();
const INTERRUPT_METHOD: &str = Method::CheckfuSessionInterrupt.name();
const OPT_IN_INTERRUPT: &str = catalog::Check::CooperativeInterruptDrained.name();
const READY_CHECK: &str = catalog::Check::ReadyHandshake.name();
/// The reason of every turn check when no prompt was sent.
pub const NO_TURN: &str = "no turn was observed";

/// What the probe is told.
#[derive(Clone, Debug)]
pub struct ProbeOptions {
    pub command: Vec<OsString>,
    pub driver: catalog::Driver,
    pub retention: catalog::Retention,
    pub builtin_tools: Option<Vec<String>>,
    pub continuity: Option<String>,
    /// An `authMethods` id to `authenticate` with before `session/new`.
    pub authenticate: Option<String>,
    pub runtime_config: Option<Value>,
    pub output_schema: Option<Value>,
    pub interrupt: bool,
    pub permission: PermissionPolicy,
    /// Serve the harness's `terminal/*` requests (in the workspace; not a sandbox).
    pub terminals: bool,
    pub step_timeout: Duration,
    pub deadline: Duration,
    /// How long the turn is still watched after its terminal (late or duplicate emissions).
    pub settle: Duration,
    /// How long teardown waits for an exit after closing stdin, and again after SIGTERM.
    pub kill_grace: Duration,
    /// The provider whose gateway allow-list the relay serves; `None`: the unlisted route.
    pub provider: Option<String>,
    pub model_script: Script,
    /// The catalog entry the run is bound to (`--harness`).
    pub harness: Option<String>,
    /// Run the harness with the caller's own `HOME` instead of a fresh one.
    pub inherit_home: bool,
    /// Variables for the harness (after the probe's own, so they may override them).
    pub env: Vec<(String, String)>,
    /// Files written into the fresh home: (relative path, template).
    pub home_files: Vec<(String, String)>,
    /// Try to run the harness in a loopback-only network namespace.
    pub netns: bool,
    /// Keep bounded copies of the model calls' bodies (`--record-model`).
    pub record_bodies: bool,
    /// The image the agent runs in (`--image`, `--build-context`), and the working directory
    /// given for it (else the image's): the command is then a path inside the image.
    pub image: Option<(std::sync::Arc<crate::image::run::Container>, Option<String>)>,
}

impl ProbeOptions {
    /// The defaults: the catalog's ACP driver, durable retention, 30 s steps, 120 s in all.
    pub fn new(command: Vec<OsString>) -> ProbeOptions {
        // The catalog's ACP driver: the one its `driver` revision identity names (the
        // catalog's first driver should the two ever disagree; an empty list of drivers does
        // not compile).
        const FIRST: catalog::Driver = catalog::Driver::ALL[0];
        let driver = catalog::Driver::from_name(catalog::Revision::Driver.literal()).unwrap_or(FIRST);
        ProbeOptions {
            command,
            driver,
            retention: catalog::Retention::Durable,
            builtin_tools: None,
            continuity: None,
            authenticate: None,
            runtime_config: None,
            output_schema: None,
            interrupt: false,
            permission: PermissionPolicy::Allow,
            terminals: false,
            step_timeout: Duration::from_secs(30),
            deadline: Duration::from_secs(120),
            settle: Duration::from_millis(250),
            kill_grace: Duration::from_secs(2),
            provider: None,
            model_script: Script::Nonce,
            harness: None,
            inherit_home: false,
            env: Vec::new(),
            home_files: Vec::new(),
            netns: true,
            record_bodies: false,
            image: None,
        }
    }
}

/// A run that could not begin: bad options, or a command that cannot be started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UsageError {
    Options(String),
    CannotStart(String),
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UsageError::Options(m) | UsageError::CannotStart(m) => f.write_str(m),
        }
    }
}

/// The `_meta` of `session/new`: the authority members from the options, each checked by
/// the same decoder the harness's side will face (and the output schema by the safety
/// profile), so a bad flag is a usage error before anything is started.
fn authority_meta(options: &ProbeOptions) -> Result<Map<String, Value>, UsageError> {
    let mut meta = Map::new();
    if let Some(tools) = &options.builtin_tools {
        meta.insert("checkfu.builtin_tools".into(), json!(tools));
    }
    if let Some(continuity) = &options.continuity {
        meta.insert("checkfu.continuity".into(), json!(continuity));
    }
    if let Some(config) = &options.runtime_config {
        meta.insert("checkfu.runtime_config".into(), config.clone());
    }
    if let Some(schema) = &options.output_schema {
        safe_output_schema(schema)?;
        meta.insert("checkfu.output_schema".into(), schema.clone());
    }
    let probe = json!({"jsonrpc": "2.0", "id": 0, "method": NEW_SESSION,
        "params": {"cwd": "/", "mcpServers": [], "_meta": meta}});
    let report =
        checkfu_wire::decode::Decoder::new().decode(probe.to_string().as_bytes(), Some(checkfu_wire::decode::WireDirection::RunnerToAgent));
    if let Some(error) = report.error {
        return Err(UsageError::Options(format!("the session/new authority members are refused: {}", error.message)));
    }
    Ok(meta)
}

/// The file of the `tool` script's second token, in the workspace.
pub const TOKEN_FILE: &str = "checkfu-probe-token.txt";

/// Runs the probe. `Err` only when the run cannot begin; every harness behaviour is a result.
pub fn run(options: &ProbeOptions) -> Result<ProbeResult, UsageError> {
    run_with(options, &mut |_| {})
}

/// [`run`], telling `progress` each step as it ends (the text format prints them at once).
pub fn run_with(options: &ProbeOptions, progress: &mut dyn FnMut(Progress)) -> Result<ProbeResult, UsageError> {
    let entry = catalog_entry(options)?;
    let envelope = catalog::envelope(options.driver, options.retention).ok_or_else(|| {
        let known: Vec<String> =
            catalog::ENVELOPES.iter().map(|e| format!("{} / {}", e.owner, e.retention.map_or("-", catalog::Retention::name))).collect();
        UsageError::Options(format!(
            "no envelope for driver `{}` with retention `{}` (the catalog has: {})",
            options.driver,
            options.retention,
            known.join(", ")
        ))
    })?;
    relay::routes::for_provider(options.provider.as_deref()).map_err(UsageError::Options)?;
    let meta = authority_meta(options)?;
    let Plane { mut workspace, nonce, namespace, fence, fence_note, relay, home, placeholders, env, warnings } =
        prepare(options, entry, progress)?;
    let mut command = options
        .command
        .iter()
        .map(|a| placeholders.expand_os(a).map_err(|e| UsageError::Options(format!("the harness command: {e}"))))
        .collect::<Result<Vec<OsString>, UsageError>>()?;
    // The agent starts in the workspace, as a one-shot CLI does: its `PWD` is the workspace,
    // and nothing of the caller's directory reaches it but a relative program path, resolved.
    // In an image the program is a path inside it, as the image's own runtime reads it.
    if let (Some(first), None) = (command.first_mut(), &options.image) {
        *first = launch::program(first, &std::env::current_dir().unwrap_or_default());
    }
    // The start shows the argv as it is run, placeholders expanded.
    let shown: Vec<String> = command.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    progress(Progress::Started { protocol: catalog::Protocol::AcpV1, command: &shown.join(" ") });
    // In an image: its runtime's argv (bubblewrap or podman over its root, or docker), the
    // workspace at its working directory, and the image's variables under the probe's own.
    // The harness sees the workspace at the working directory, and its terminal commands run
    // in the image too.
    let mut launch = session::Launch {
        env,
        netns: namespace.as_ref().map(session::fence::Namespace::join),
        cwd: Some(workspace.root().to_path_buf()),
        ..session::Launch::default()
    };
    let mut container_run = None;
    let image_run = match options.image.as_ref() {
        None => None,
        Some((container, given)) => {
            let working_directory = container.working_directory(given.as_deref()).map_err(UsageError::CannotStart)?;
            let mut shared = vec![workspace.root().to_path_buf()];
            shared.extend(home.as_ref().map(|h| h.root().to_path_buf()));
            let shared: Vec<&std::path::Path> = shared.iter().map(std::path::PathBuf::as_path).collect();
            let image_env = container.env(&launch.env, &working_directory);
            launch.env.extend(image_env);
            let mut started = container
                .start(&command, workspace.root(), &working_directory, &shared, &launch.env, relay.addr(), launch.netns)
                .map_err(|e| UsageError::CannotStart(format!("cannot start the image: {e}")))?;
            command = started.argv.clone();
            launch.inside = Some(Arc::new(started.terminals()));
            launch = started.client_launch(&launch);
            workspace.see_at(std::path::Path::new(&working_directory));
            let report = container.run_report(&working_directory, Some(&started));
            container_run = Some(started);
            Some(report)
        }
    };
    let session_options = session::Options { permission: options.permission, terminals: options.terminals, deadline: options.deadline };
    let session = Session::start_in(workspace, &command, session_options, &launch).map_err(|e| {
        let command = options.command.first().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
        UsageError::CannotStart(format!("cannot start `{command}`: {e}"))
    })?;
    let mut run = Run::new(session, options, nonce, progress);
    run.command = command;
    run.container = container_run;
    run.image = image_run;
    run.admission.driver = options.driver.name().to_owned();
    run.admission.retention = options.retention.name().to_owned();
    run.admission.judged_against = "envelope";
    run.admission.envelope = envelope.values.iter().map(|(a, v)| ((*a).to_owned(), json!(v))).collect();
    run.admission.ceiling = entry.map(|e| e.ceiling.iter().map(|(a, v)| ((*a).to_owned(), json!(v))).collect());
    let admitted = run.initialize(envelope);
    let session_id = match &admitted {
        Some(_) => run.start_session(meta),
        None => {
            run.skip("session_start", "the initialize handshake failed");
            None
        }
    };
    match (&admitted, session_id) {
        (Some(admitted), Some(session_id)) => run.prompt(admitted, &session_id, &relay),
        (_, _) => run.skip("prompt_exchange", "no session was started"),
    }
    let mut result = run.finish(admitted.as_ref());
    // The harness is gone: stop the relay (closing whatever it left open) and read its record.
    let record = relay.stop();
    drop(namespace);
    drop(home);
    let mut plane = ModelPlane::new(
        options.provider.as_deref().unwrap_or(catalog::UNLISTED_PROVIDER),
        fence,
        fence_note,
        options.model_script.name(),
        record,
    );
    plane.nonce_in_output = result.nonce_in_output;
    plane.reply_in_output = result.reply_in_output.clone();
    if let Some(entry) = entry {
        plane.bind(entry, options.provider.as_deref(), Some(&result.admission.declaration));
        result.admission.above_ceiling = result::AboveCeiling::of(entry, &result.admission.realized);
    }
    result.model_plane = Some(plane);
    result.warnings = warnings;
    Ok(result)
}

/// One run's state.
struct Run<'o, 'p> {
    session: Session,
    options: &'o ProbeOptions,
    normalizer: Normalizer,
    steps: ending::Steps<'p>,
    admission: Admission,
    agent_info: Value,
    nonce: String,
    /// Ids of the scripted requests, and the steer's event id.
    prompt_id: Option<i64>,
    steer: Option<(i64, String)>,
    interrupt_id: Option<i64>,
    /// The prompt was sent and not yet answered.
    turn_open: bool,
    /// A harness fault seen while a step was not waiting (during the settle window).
    late_fault: Option<String>,
    nonce_in_output: bool,
    /// The reply token that reached normalized output, when one did.
    reply_in_output: Option<String>,
    /// The argv as run, placeholders expanded.
    command: Vec<OsString>,
    /// The image's run, removed at teardown (its container, image, storage).
    container: Option<crate::image::runtime::Started>,
    /// What the report says of the image, with what removing its run failed on.
    image: Option<crate::image::run::ImageRun>,
}

impl<'o, 'p> Run<'o, 'p> {
    fn new(session: Session, options: &'o ProbeOptions, nonce: String, progress: &'p mut dyn FnMut(Progress)) -> Run<'o, 'p> {
        Run {
            session,
            options,
            normalizer: Normalizer::new(),
            steps: ending::Steps::new(progress),
            admission: Admission::default(),
            agent_info: Value::Null,
            nonce,
            prompt_id: None,
            steer: None,
            interrupt_id: None,
            turn_open: false,
            late_fault: None,
            nonce_in_output: false,
            reply_in_output: None,
            command: options.command.clone(),
            container: None,
            image: None,
        }
    }

    fn step(&mut self, name: &'static str, started: Instant, outcome: Result<(), String>) {
        self.steps.ended(name, started.elapsed().as_millis() as u64, outcome);
    }

    fn skip(&mut self, name: &'static str, reason: &str) {
        self.steps.skipped(name, reason);
    }

    fn step_deadline(&self) -> Instant {
        Instant::now() + self.options.step_timeout
    }

    /// Waits for the answer to request `id`, handling everything else that arrives.
    fn wait_for(&mut self, id: i64, until: Instant) -> Result<(Value, Vec<u8>), String> {
        loop {
            match self.session.next(until) {
                Ok(Incoming::Response { id: got, message, bytes, .. }) if got == id => return Ok((message, bytes)),
                Ok(other) => self.dispatch(other),
                Err(fault) => return Err(self.explain(&fault)),
            }
            if self.normalizer.full() {
                return Err(self.normalizer.over_budget("harness"));
            }
        }
    }

    /// A fault in the words of the probe, which knows the step's time.
    fn explain(&self, fault: &Fault) -> String {
        match fault {
            Fault::Timeout => format!("no answer within {:.1} s (--step-timeout)", self.options.step_timeout.as_secs_f64()),
            Fault::Deadline => format!("the session's deadline of {:.1} s passed (--deadline)", self.options.deadline.as_secs_f64()),
            other => other.to_string(),
        }
    }

    /// What a message means for the observations.
    fn dispatch(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Notification { method, message, report } => {
                if method == UPDATE_METHOD {
                    self.normalizer.update(&report, &message);
                }
            }
            Incoming::Response { id, message, .. } => {
                if Some(id) == self.prompt_id {
                    self.terminal(&message);
                } else if let Some((_, event)) = self.steer.clone().filter(|(steer, _)| *steer == id) {
                    if let Some(disposition) = message.pointer("/result/disposition").and_then(Value::as_str) {
                        self.normalizer.steering(&event, disposition);
                    }
                } else if Some(id) == self.interrupt_id {
                    if let Some(disposition) = message.pointer("/result/disposition").and_then(Value::as_str) {
                        self.normalizer.interrupt_ack(disposition);
                    }
                }
            }
            Incoming::Stray { message, report } => {
                // A second answer to the prompt is identified by its stop reason.
                if report.method == Some(PROMPT_METHOD) {
                    self.terminal(&message);
                }
            }
        }
    }

    fn terminal(&mut self, message: &Value) {
        let stop_reason = message.pointer("/result/stopReason").and_then(Value::as_str);
        self.normalizer.terminal(stop_reason);
    }

    fn initialize(&mut self, envelope: &'static catalog::Envelope) -> Option<AdmittedCapabilities> {
        let started = Instant::now();
        let params = json!({
            "protocolVersion": PROTOCOL_VERSION,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}, "terminal": self.options.terminals},
            "clientInfo": {"name": "checkfu-wire probe", "version": env!("CARGO_PKG_VERSION")},
        });
        let until = self.step_deadline();
        let answer = self.session.request(VERSION_METHOD, params).map_err(|f| f.to_string()).and_then(|id| self.wait_for(id, until));
        let (message, bytes) = match answer {
            Ok(answer) => answer,
            Err(reason) => {
                self.step("initialize_handshake", started, Err(format!("initialize: {reason}")));
                return None;
            }
        };
        if let Some(error) = message.get("error") {
            self.step("initialize_handshake", started, Err(format!("initialize answered an error: {}", rpc_error(error))));
            return None;
        }
        self.agent_info = message.pointer("/result/agentInfo").cloned().unwrap_or(Value::Null);
        self.admission.declaration = message.pointer("/result/_meta/checkfu.capabilities").cloned().unwrap_or(Value::Null);
        match admission::admit_wire(envelope, &bytes) {
            Ok(admitted) => {
                self.admission.admitted_axes = admitted.promotions().iter().map(|u| u.axis).collect();
                self.admission.admitted = admitted.values().iter().map(|(a, v)| ((*a).to_owned(), json!(v))).collect();
                self.admission.mechanisms = admitted.mechanisms().iter().map(|(m, v)| (m.member.to_owned(), json!(v))).collect();
                self.step("initialize_handshake", started, Ok(()));
                Some(admitted)
            }
            Err(error) => {
                self.admission.error = Some(error.to_string());
                self.step("initialize_handshake", started, Err(format!("the declaration was refused: {error}")));
                None
            }
        }
    }

    fn start_session(&mut self, meta: Map<String, Value>) -> Option<String> {
        let started = Instant::now();
        let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
        let mut params = json!({"cwd": cwd, "mcpServers": []});
        if !meta.is_empty() {
            params["_meta"] = Value::Object(meta);
        }
        let until = self.step_deadline();
        if let Some(method_id) = self.options.authenticate.clone() {
            let answer = self
                .session
                .request(AUTHENTICATE, json!({"methodId": method_id}))
                .map_err(|f| f.to_string())
                .and_then(|id| self.wait_for(id, until));
            let refused = match answer {
                Err(reason) => Some(format!("authenticate: {reason}")),
                Ok((message, _)) => message.get("error").map(|e| format!("authenticate ({method_id}) answered an error: {}", rpc_error(e))),
            };
            if let Some(reason) = refused {
                self.step("session_start", started, Err(reason));
                return None;
            }
        }
        let answer = self.session.request(NEW_SESSION, params).map_err(|f| f.to_string()).and_then(|id| self.wait_for(id, until));
        let outcome = match answer {
            Err(reason) => Err(format!("session/new: {reason}")),
            Ok((message, _)) => match (message.get("error"), message.pointer("/result/sessionId").and_then(Value::as_str)) {
                (Some(error), _) => Err(format!("session/new answered an error: {}", rpc_error(error))),
                (None, Some(id)) => Ok(id.to_owned()),
                (None, None) => Err(String::from("session/new answered without a sessionId")),
            },
        };
        match outcome {
            Ok(id) => {
                self.normalizer.ready();
                self.step("session_start", started, Ok(()));
                Some(id)
            }
            Err(reason) => {
                self.step("session_start", started, Err(reason));
                None
            }
        }
    }

    fn prompt(&mut self, admitted: &AdmittedCapabilities, session_id: &str, relay: &Relay) {
        let started = Instant::now();
        let until = self.step_deadline();
        let text = match self.options.model_script {
            Script::Tool => format!(
                "Checkfu local diagnostic. Read the file {TOKEN_FILE} in the working directory, then reply with the nonce {} and end the turn.",
                self.nonce
            ),
            _ => format!("Checkfu local diagnostic. Reply with the nonce {} and end the turn.", self.nonce),
        };
        let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
        let outcome = match self.run_turn(admitted, session_id, params, until) {
            // The turn itself failed: a refusal of the relay may be why (a path off the
            // allow-list, a missing key), so it is named after the fault.
            Err(fault) => Err((fault, true)),
            Ok(()) => self.governed(relay).map_err(|miss| (miss.describe(&self.nonce), miss.refusals_may_cause())),
        };
        let outcome = outcome.map_err(|(reason, with_refusals)| {
            let (count, first) = relay.refusals(1);
            match verdict::refusal_context(count, first.as_ref()).filter(|_| with_refusals) {
                Some(context) => format!("{reason}; {context}"),
                None => reason,
            }
        });
        if outcome.is_err() && self.turn_open {
            // A runner that gives up on a turn cancels it, as ACP asks, before tearing down.
            let _ = self.session.notify(CANCEL_METHOD, json!({"sessionId": session_id}));
        }
        self.step("prompt_exchange", started, outcome);
    }

    fn run_turn(&mut self, admitted: &AdmittedCapabilities, session_id: &str, params: Value, until: Instant) -> Result<(), String> {
        let prompt = self.session.request(PROMPT_METHOD, params).map_err(|f| format!("session/prompt: {f}"))?;
        self.prompt_id = Some(prompt);
        let steer = upgrade_admitted(admitted, catalog::Check::SteeringDelivered.name());
        let interrupt = self.options.interrupt && upgrade_admitted(admitted, OPT_IN_INTERRUPT);
        // The scripted inputs follow the prompt at once, in order (steer, then drain), so they
        // reach the live turn whatever the machine's load; the harness answers each.
        if steer {
            let event = format!("probe-steer-{}", self.nonce);
            let params = json!({"sessionId": session_id, "id": event, "content": "Keep the reply to the nonce only."});
            let id = self.session.request(STEER_METHOD, params).map_err(|f| format!("{STEER_METHOD}: {f}"))?;
            self.normalizer.steer_input(&event);
            self.steer = Some((id, event));
        }
        if interrupt {
            let id =
                self.session.request(INTERRUPT_METHOD, json!({"sessionId": session_id})).map_err(|f| format!("{INTERRUPT_METHOD}: {f}"))?;
            self.normalizer.interrupt_request();
            self.interrupt_id = Some(id);
        }
        self.turn_open = true;
        let answer = self.wait_for(prompt, until);
        let (message, _) = answer.map_err(|reason| format!("session/prompt: {reason}"))?;
        self.turn_open = false;
        self.terminal(&message);
        // The turn is over; watch it a little longer for late or duplicate emissions.
        let settle_until = Instant::now() + self.options.settle;
        loop {
            match self.session.next(settle_until) {
                Ok(_) if self.normalizer.full() => {
                    self.late_fault = Some(self.normalizer.over_budget("harness"));
                    break;
                }
                Ok(incoming) => self.dispatch(incoming),
                Err(Fault::Timeout | Fault::Deadline | Fault::Closed) => break,
                Err(fault) => {
                    self.late_fault = Some(fault.to_string());
                    break;
                }
            }
        }
        if let Some(error) = message.get("error") {
            return Err(format!("session/prompt answered an error: {}", rpc_error(error)));
        }
        if let Some(fault) = &self.late_fault {
            return Err(format!("after the turn: {fault}"));
        }
        if message.pointer("/result/stopReason").and_then(Value::as_str).is_none() {
            return Err(String::from("session/prompt answered without a stop reason"));
        }
        Ok(())
    }

    /// The governed half of `prompt_exchange` ([`verdict`]): a served call carried the nonce
    /// in its latest user turn, and that call's reply token reached normalized output.
    fn governed(&mut self, relay: &Relay) -> Result<(), verdict::Miss> {
        let served: Vec<verdict::Served> = relay.calls(1).iter().map(verdict::Served::from).collect();
        let output = self.normalizer.output_text();
        self.nonce_in_output = output.contains(&self.nonce);
        let reached = verdict::exchange(&served, &self.nonce, &|text| output.contains(text))?;
        self.reply_in_output = Some(reached);
        Ok(())
    }

    /// Teardown, the checks over the trace, and the result.
    fn finish(mut self, admitted: Option<&AdmittedCapabilities>) -> ProbeResult {
        let started = Instant::now();
        let teardown = self.session.teardown(self.options.kill_grace);
        let mut outcome = ending::teardown_fault(&teardown, "harness", "EOF on stdin and SIGTERM").map_or(Ok(()), Err);
        // The runtime's client is gone; what it keeps (a container, an image) goes now.
        if let Some(container) = self.container.take() {
            if let Err(fault) = container.finish() {
                if let Some(image) = &mut self.image {
                    image.teardown_fault = Some(fault.clone());
                }
                outcome = outcome.and(Err(format!("the image's runtime left something behind: {fault}")));
            }
        }
        self.step("teardown", started, outcome);

        let declared: Vec<(&str, &str)> = admitted.map(|a| a.values().to_vec()).unwrap_or_default();
        let opt_in: &[&str] = if self.options.interrupt { &[OPT_IN_INTERRUPT] } else { &[] };
        let trace = self.normalizer.trace(&declared, opt_in);
        // The trace is ours; a checker refusal of it would be a bug in the normalizer.
        let mut report = match conformance::check_str(&trace) {
            Ok(report) => report,
            Err(e) => panic!("the probe wrote a trace the checker refuses: {e}\n{trace}"),
        };
        if self.prompt_id.is_none() {
            // No prompt was sent: a check over a turn that never happened is not passed (nor
            // failed) but unexercised, a recorded skip. The handshake's check stays: the
            // handshake did happen, or failed to.
            for (name, outcome) in &mut report.checks {
                if *name != READY_CHECK && !matches!(outcome, Outcome::Skip { .. }) {
                    *outcome = Outcome::Skip { reason: String::from(NO_TURN) };
                }
            }
        }
        if let Some(admitted) = admitted {
            self.admission.realized = realized(admitted, &report);
        }

        let (stderr_bytes, stderr_tail) = self.session.stderr();
        let stderr_tail = ending::stderr_tail(&stderr_tail);
        let exit = ending::exit_json(teardown.status);
        let harness = HarnessInfo {
            command: self.command.iter().map(|c| c.to_string_lossy().into_owned()).collect(),
            pid: self.session.pid(),
            agent_info: self.agent_info.clone(),
            exit,
            ending: teardown.ending.name(),
            reaped_children: teardown.reaped_children,
            leftover_processes: teardown.leftover.clone(),
            stderr_bytes,
            stderr_tail,
        };
        let (record, record_truncated) = self.session.record();
        let wire = Wire {
            messages_in: self.session.messages_in,
            messages_out: self.session.messages_out,
            record_truncated,
            diagnostics: self.session.diagnostics.clone(),
            diagnostics_dropped: self.session.diagnostics_dropped,
            ignored: self.session.ignored.clone(),
            grammar_violations: self.session.grammar_violations.clone(),
        };
        // The record opens with the launch: the argv as run, which `decode` skips.
        let mut header = serde_json::to_vec(&json!({"launch": {"command": harness.command, "pid": harness.pid}})).unwrap_or_default();
        header.push(b'\n');
        let record = [header.as_slice(), record].concat();
        let steps = ending::Steps::json(&self.steps.list);
        ProbeResult {
            qualification: result::QUALIFICATION,
            steps,
            admission: self.admission,
            report,
            harness,
            nonce: self.nonce,
            client_requests: self.session.client_requests.clone(),
            wire,
            step_list: self.steps.list,
            trace,
            record,
            nonce_in_output: self.nonce_in_output,
            reply_in_output: self.reply_in_output,
            model_plane: None,
            image: self.image,
            interrupted: crate::interrupt::received().map(crate::interrupt::name),
            next: None,
            warnings: Vec::new(),
        }
    }
}

/// Whether the declaration admitted the upgrade whose evidence is `check`.
fn upgrade_admitted(admitted: &AdmittedCapabilities, check: &str) -> bool {
    catalog::UPGRADES.iter().filter(|u| u.evidence == Some(check)).any(|u| admitted.value(u.axis) == Some(u.to))
}

/// The admitted set with every evidence-gated promotion whose case did not pass in this run
/// put back to the value it was promoted from.
fn realized(admitted: &AdmittedCapabilities, report: &conformance::Report) -> Map<String, Value> {
    admitted
        .values()
        .iter()
        .map(|(axis, value)| {
            let pending = admitted.promotions().iter().find(|u| u.axis == *axis && u.evidence.is_some());
            let value = match pending {
                Some(u) if report.outcome(u.evidence.unwrap_or_default()) != Some(&Outcome::Pass) => u.from,
                _ => value,
            };
            ((*axis).to_owned(), json!(value))
        })
        .collect()
}

fn rpc_error(error: &Value) -> String {
    let code = error.get("code").map_or_else(|| String::from("?"), Value::to_string);
    let message = error.get("message").and_then(Value::as_str).unwrap_or("");
    // `data` often says what the message does not ("Query closed before response received").
    match error.get("data").map(Value::to_string) {
        Some(data) if data.len() <= 300 => format!("{code} {message:?} (data: {data})"),
        Some(data) => format!("{code} {message:?} (data: {}…)", checkfu_wire::text::head(&data, 300)),
        None => format!("{code} {message:?}"),
    }
}

/// A fresh nonce, as the probe makes one per session (`cf-` and 16 hex digits).
pub fn fresh_nonce() -> String {
    relay::token::mint(relay::token::NONCE_PREFIX)
}
