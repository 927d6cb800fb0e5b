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
//! The lane supplies its steps and nothing else: the spine ([`crate::spine`]) makes the
//! plane, starts the image and reports. The wire runs through [`crate::session::Session`]
//! (and so through the generated decoder); the observations are written by
//! [`checkfu_wire::conformance::normalize`] and judged by parsing that very trace with
//! [`checkfu_wire::conformance::check_str`], so `conform` on the `--trace` file gives the same
//! verdicts.

mod cancel;
mod checkpoint;
mod delegation;
mod exercised;
mod flight;
mod fresh;
mod kit;
mod lane;
mod live;
pub mod negotiate;
mod platform;
pub mod report;
pub mod requirements;
mod scoping;
mod staged;
mod structured;
mod v2;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use crate::acp::report::{AcpReport, Admission, Cancellation, Drain, HarnessInfo, Wire};
use crate::acp::requirements::{Exercised, KitVerdict};
use crate::error::ProbeError;
use crate::image::run::PreparedImage;
use crate::options::{RunOptions, TOKEN_FILE};
use crate::outcome::{Kind, Outcome, Reason};
use crate::plane::{probe_output_schema, safe_output_schema};
use crate::relay::{Relay, Script};
use crate::report::process::{teardown_fault, ProcessEnd};
use crate::report::steps::StepStatus;
use crate::report::Steps;
use crate::session::{self, Ending, Fault, Incoming, PermissionPolicy, Session};
use crate::stage::{LaneEnd, Stage};
use crate::{launch, verdict};
use checkfu_wire::admission::{self, AdmittedCapabilities};
use checkfu_wire::catalog::{self, StepName};
use checkfu_wire::conformance::observation::{InterruptAck, SteerAck};
use checkfu_wire::conformance::{self, normalize::Normalizer, Outcome as Check};
use checkfu_wire::decode::tables::{Method, Slot, PROMPT_METHOD, UPDATE_METHOD, VERSION_METHOD};

// The methods and checks this lane sends and reads, named by the generated enums (a
// catalog that renamed one would not compile here).
const NEW_SESSION: &str = Method::SessionNew.name();
const AUTHENTICATE: &str = Method::Authenticate.name();
/// ACP v2's name for `authenticate`.
const AUTH_LOGIN: &str = checkfu_wire::decode::tables::acp_v2::Method::AuthLogin.name();
const CANCEL_METHOD: &str = Method::SessionCancel.name();
const STEER_METHOD: &str = Method::CheckfuSessionSteer.name();
const INTERRUPT_METHOD: &str = Method::CheckfuSessionInterrupt.name();
const OPT_IN_INTERRUPT: &str = catalog::Check::CooperativeInterruptDrained.name();
const READY_CHECK: &str = catalog::Check::ReadyHandshake.name();
/// The `session/new` member that carries the output schema.
const OUTPUT_SCHEMA: &str = Slot::CheckfuOutputSchema.name();
/// The slot of the harness's own account of its turn (the prompt answer's `_meta`).
const TURN_KEY: &str = Slot::CheckfuTurn.name();
/// The reason of every turn check when no prompt was sent (the report's: the spine uses it too).
pub use crate::report::NO_TURN;

/// The ACP lane's own options.
#[derive(Clone, Debug)]
pub struct AcpOptions {
    /// The agent's command, as given after `--`; empty: the recipe's, else the image's
    /// Entrypoint and Cmd.
    pub command: Vec<OsString>,
    /// The recipe's command.
    pub recipe_command: Vec<String>,
    /// The recipe's variables and home files, written before the command line's (which
    /// may override them).
    pub recipe_env: BTreeMap<String, String>,
    pub recipe_home_files: BTreeMap<String, String>,
    /// `--entrypoint`: the program in place of the command's first word.
    pub entrypoint: Option<String>,
    /// `--arg`: arguments after the command, in order.
    pub args: Vec<String>,
    /// In an image, the working directory the agent starts in (else the image's).
    pub working_directory: Option<String>,
    /// The driver whose envelope admits the declaration; `None`: the bound entry's, else
    /// the catalog's ACP driver.
    pub driver: Option<catalog::Driver>,
    pub retention: catalog::Retention,
    pub builtin_tools: Option<Vec<String>>,
    pub continuity: Option<String>,
    /// An `authMethods` id to `authenticate` with before `session/new`.
    pub authenticate: Option<String>,
    pub runtime_config: Option<Value>,
    pub interrupt: bool,
    /// Run the `cancellation` step after the prompt (on by default).
    pub cancellation: bool,
    pub permission: PermissionPolicy,
    /// Serve the harness's `terminal/*` requests (in the workspace; not a sandbox).
    pub terminals: bool,
    /// Advertise file system access (`fs/read_text_file`, `fs/write_text_file`, served in
    /// the workspace); off: `fs/*` is refused and breaks ACP-CLIENTCAP-001.
    pub client_fs: bool,
    /// How long the turn is still watched after its terminal (late or duplicate emissions).
    pub settle: Duration,
    /// `--acp-version`: the ACP version `initialize` asks for ([`negotiate`]).
    pub acp_version: u64,
    /// Put the requirements that need a fresh agent process to one ([`kit`]; on by
    /// default). Off, they stay `not_tested`, saying so: what the bench of the fresh
    /// process measures its cost against.
    pub requirement_probes: bool,
}

impl AcpOptions {
    /// The defaults: durable retention, no authority members, permissions allowed.
    pub fn new(command: Vec<OsString>) -> AcpOptions {
        AcpOptions {
            command,
            recipe_command: Vec::new(),
            recipe_env: BTreeMap::new(),
            recipe_home_files: BTreeMap::new(),
            entrypoint: None,
            args: Vec::new(),
            working_directory: None,
            driver: None,
            retention: catalog::Retention::Durable,
            builtin_tools: None,
            continuity: None,
            authenticate: None,
            runtime_config: None,
            interrupt: false,
            cancellation: true,
            permission: PermissionPolicy::Allow,
            terminals: false,
            client_fs: true,
            settle: Duration::from_millis(250),
            acp_version: negotiate::V1,
            requirement_probes: true,
        }
    }

    /// The driver of the run: `--driver`, else the bound entry's, else the catalog's ACP
    /// driver (the one its `driver` revision identity names; the catalog's first driver
    /// should the two ever disagree, and an empty list of drivers does not compile).
    fn driver(&self, entry: Option<&catalog::Harness>) -> catalog::Driver {
        const FIRST: catalog::Driver = catalog::Driver::ALL[0];
        let default = catalog::Driver::from_name(catalog::Revision::Driver.literal()).unwrap_or(FIRST);
        self.driver.or(entry.and_then(|e| e.driver)).unwrap_or(default)
    }

    /// The command as run: `--` or the recipe's or the image's, the program replaced by
    /// `--entrypoint`, then `--arg`.
    pub(crate) fn resolve_command(&self, image: Option<&PreparedImage>) -> Result<Vec<OsString>, ProbeError> {
        let mut command = match (self.command.is_empty(), self.recipe_command.is_empty(), image) {
            (false, _, _) => self.command.clone(),
            (true, false, _) => self.recipe_command.iter().map(OsString::from).collect(),
            (true, true, Some(image)) => image.default_command().into_iter().map(OsString::from).collect(),
            (true, true, None) => return Err(ProbeError::Usage(String::from("no harness command: give one after `--`, or a --recipe"))),
        };
        if let Some(entrypoint) = &self.entrypoint {
            match command.first_mut() {
                Some(first) => *first = OsString::from(entrypoint),
                None => command.push(OsString::from(entrypoint)),
            }
        }
        command.extend(self.args.iter().map(OsString::from));
        if command.is_empty() {
            return Err(ProbeError::Usage(String::from("no harness command: the image has no Entrypoint or Cmd; give --entrypoint")));
        }
        Ok(command)
    }

    /// The agent as the flags that register it, inside its image, speaking `protocol` (the
    /// ACP version the run agreed on: a v2 agent registered as `acp-v1` would be asked for v1).
    pub(crate) fn profile(&self, command: &[OsString], protocol: checkfu_wire::decode::Protocol) -> Vec<String> {
        let mut profile = vec![format!("--protocol={}", protocol.name())];
        if let Some((program, args)) = command.split_first() {
            profile.push(format!("--entrypoint={}", program.to_string_lossy()));
            profile.extend(args.iter().map(|a| format!("--arg={}", a.to_string_lossy())));
        }
        profile.extend(self.working_directory.iter().map(|d| format!("--working-directory={d}")));
        profile
    }
}

/// The lane's options checked before anything is pulled or started: the envelope the
/// declaration is admitted against, and the authority members of `session/new`.
pub(crate) struct Checked<'a> {
    options: &'a AcpOptions,
    driver: catalog::Driver,
    envelope: &'static catalog::Envelope,
    meta: Map<String, Value>,
}

/// Checks the lane's options against the catalog.
pub(crate) fn check<'a>(options: &'a AcpOptions, run: &RunOptions, entry: Option<&catalog::Harness>) -> Result<Checked<'a>, ProbeError> {
    let driver = options.driver(entry);
    let envelope = catalog::envelope(driver, options.retention).ok_or_else(|| {
        let known: Vec<String> =
            catalog::ENVELOPES.iter().map(|e| format!("{} / {}", e.owner, e.retention.map_or("-", catalog::Retention::name))).collect();
        ProbeError::Usage(format!(
            "no envelope for driver `{driver}` with retention `{}` (the catalog has: {})",
            options.retention,
            known.join(", ")
        ))
    })?;
    let meta = authority_meta(options, run)?;
    if run.inherit_home && !options.recipe_home_files.is_empty() {
        return Err(ProbeError::Usage(String::from("the recipe's home_files write into the fresh home, which --inherit-home turns off")));
    }
    for (key, value) in &options.recipe_env {
        launch::check(value).map_err(|e| ProbeError::invalid(format!("env {key}"), e))?;
    }
    for (path, template) in &options.recipe_home_files {
        launch::check(template).map_err(|e| ProbeError::invalid(format!("home_files {path}"), e))?;
    }
    Ok(Checked { options, driver, envelope, meta })
}

/// The `_meta` of `session/new`: the authority members from the options, each checked by
/// the same decoder the harness's side will face (and the output schema by the safety
/// profile), so a bad flag is a usage error before anything is started.
fn authority_meta(options: &AcpOptions, run: &RunOptions) -> Result<Map<String, Value>, ProbeError> {
    let mut meta = Map::new();
    if let Some(tools) = &options.builtin_tools {
        meta.insert(Slot::CheckfuBuiltinTools.name().into(), json!(tools));
    }
    if let Some(continuity) = &options.continuity {
        meta.insert(Slot::CheckfuContinuity.name().into(), json!(continuity));
    }
    if let Some(config) = &options.runtime_config {
        meta.insert(Slot::CheckfuRuntimeConfig.name().into(), config.clone());
    }
    if let Some(schema) = &run.output_schema {
        safe_output_schema(schema)?;
        // The `structured_output` step validates final values against it: a schema that
        // does not compile is a usage error now, as in the one-shot lane.
        jsonschema::validator_for(schema).map_err(|e| ProbeError::invalid("--output-schema cannot be compiled", e))?;
        meta.insert(OUTPUT_SCHEMA.into(), schema.clone());
    }
    let probe = json!({"jsonrpc": "2.0", "id": 0, "method": NEW_SESSION,
        "params": {"cwd": "/", "mcpServers": [], "_meta": meta}});
    let report =
        checkfu_wire::decode::Decoder::new().decode(probe.to_string().as_bytes(), Some(checkfu_wire::decode::WireDirection::RunnerToAgent));
    if let Some(error) = report.error {
        return Err(ProbeError::Usage(format!("the session/new authority members are refused: {}", error.message)));
    }
    Ok(meta)
}

/// The command as shown at the start and run: placeholders expanded, and outside an image a
/// relative program resolved against the caller's directory (the agent starts in the
/// workspace, as a one-shot CLI does, so nothing of the caller's directory reaches it but
/// that path). In an image the program is a path inside it, as its runtime reads it.
pub(crate) fn expand_command(
    command: &[OsString],
    placeholders: &launch::Placeholders,
    in_image: bool,
) -> Result<Vec<OsString>, ProbeError> {
    let mut command = command
        .iter()
        .map(|a| placeholders.expand_os(a).map_err(|e| ProbeError::invalid("the harness command", e)))
        .collect::<Result<Vec<OsString>, ProbeError>>()?;
    if let (Some(first), false) = (command.first_mut(), in_image) {
        *first = launch::program(first, &std::env::current_dir().unwrap_or_default());
    }
    Ok(command)
}

/// Runs the lane's steps on `stage`: the agent started (in the image, when there is one),
/// the handshake, the session, the prompt, and its own teardown.
/// `template` is the command before its placeholders were expanded (a resumed process
/// expands it again, for its own paths).
pub(crate) fn run(
    checked: Checked<'_>,
    template: Vec<OsString>,
    command: Vec<OsString>,
    stage: &mut Stage<'_, '_>,
) -> Result<LaneEnd, ProbeError> {
    let options = checked.options;
    let Started { session, container, argv } = start(options, &command, stage)?;
    let mut run = Run::new(session, options, stage);
    run.command = argv;
    run.template = template;
    run.container = container;
    run.admission.driver = checked.driver.name().to_owned();
    run.admission.retention = options.retention.name().to_owned();
    run.admission.judged_against = "envelope";
    run.admission.envelope = checked.envelope.values.iter().map(|(a, v)| ((*a).to_owned(), json!(v))).collect();
    let admitted = run.initialize(checked.envelope);
    let mut meta = checked.meta;
    if admitted.as_ref().and_then(structured::declared).is_some() {
        // A declared structured output is exercised whether or not the author gave a schema.
        meta.entry(OUTPUT_SCHEMA).or_insert_with(probe_output_schema);
    }
    run.output_schema = meta.get(OUTPUT_SCHEMA).cloned();
    if let Some(schema) = &run.output_schema {
        run.stage.plane.relay.expect_schema(schema.clone());
    }
    let session_id = match &admitted {
        Some(admitted) => {
            scoping::hand_list(&mut meta, options, admitted);
            run.grant_platform_tools();
            run.start_session(meta)
        }
        None => {
            run.stage.steps.skipped(StepName::SessionStart, "the initialize handshake failed");
            None
        }
    };
    match (&admitted, session_id) {
        // Both ACP versions run every step; where a turn ends is the version's ([`v2`]).
        (Some(admitted), Some(session_id)) => {
            run.prompt(admitted, &session_id);
            run.delegation(admitted);
            run.builtin_tool_scoping(admitted, &session_id);
            run.staged_files(admitted, &session_id);
            run.structured_output(admitted, &session_id);
            run.platform_tool(&session_id);
            run.cancellation(&session_id);
        }
        (_, _) => {
            run.stage.steps.skipped(StepName::PromptExchange, "no session was started");
            run.stage.steps.skipped(StepName::SubagentDelegation, "no session was started");
            run.stage.steps.skipped(StepName::BuiltinToolScoping, "no session was started");
            run.stage.steps.skipped(StepName::StagedFiles, "no session was started");
            run.stage.steps.skipped(StepName::StructuredOutput, "no session was started");
            run.stage.steps.skipped(StepName::PlatformTool, "no session was started");
            run.stage.steps.skipped(StepName::PlatformToolHttp, "no session was started");
            run.stage.steps.skipped(StepName::Cancellation, "no session was started");
        }
    }
    let v1 = run.initialize_result.as_ref().and_then(|r| r.get("protocolVersion")).and_then(Value::as_u64);
    let end = run.finish(admitted.as_ref(), v1);
    Ok(end)
}

/// Starts the agent: in the image, its runtime's argv (bubblewrap or podman over its root,
/// or docker), the workspace at its working directory, and the image's variables under the
/// probe's own; the agent's terminal commands then run in the image too.
fn start(options: &AcpOptions, command: &[OsString], stage: &mut Stage<'_, '_>) -> Result<Started, ProbeError> {
    let plane = &mut stage.plane;
    let mut launch = session::Launch {
        env: plane.env.clone(),
        netns: plane.join(),
        cwd: Some(plane.workspace_root.clone()),
        ..session::Launch::default()
    };
    let mut argv = command.to_vec();
    let mut started = None;
    let mut workspace = plane.workspace.take().ok_or(ProbeError::NoWorkspace)?;
    if let Some(image) = stage.image.as_mut() {
        let image_env = image.env(&launch.env);
        launch.env.extend(image_env);
        let mut running = match image.start(&argv, plane, &[], &launch.env, &stage.options.budget) {
            Ok(running) => running,
            Err(e) => {
                plane.workspace = Some(workspace);
                return Err(e);
            }
        };
        argv = running.argv.clone();
        launch.inside = Some(Arc::new(running.terminals()));
        launch = running.client_launch(&launch);
        workspace.see_at(std::path::Path::new(&image.working_directory));
        started = Some(running);
    }
    let session_options = session::Options {
        permission: options.permission,
        terminals: options.terminals,
        fs: options.client_fs,
        budget: stage.options.budget.clone(),
    };
    match Session::start_in(workspace, &argv, session_options, &launch) {
        Ok(session) => Ok(Started { session, container: started, argv }),
        Err(e) => {
            let program = command.first().map(|c| c.to_string_lossy().into_owned()).unwrap_or_default();
            Err(ProbeError::cannot_start(format!("cannot start `{program}`"), e))
        }
    }
}

/// The agent as started: its session, the image's run when there is one, and the argv as
/// spawned (in an image, its runtime's, which the report and the record show).
struct Started {
    session: Session,
    container: Option<crate::image::runtime::RunningContainer>,
    argv: Vec<OsString>,
}

/// What the report keeps of the first process ([`Run::first_process`]).
struct FirstEnd {
    harness: HarnessInfo,
    wire: Wire,
    record: Vec<u8>,
    client_requests: Vec<session::ClientRequest>,
    exercised: Exercised,
    dropped: Option<String>,
}

/// One run's state.
struct Run<'o, 's, 'a, 'p> {
    session: Session,
    options: &'o AcpOptions,
    stage: &'s mut Stage<'a, 'p>,
    normalizer: Normalizer,
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
    late_fault: Option<Reason>,
    nonce_in_output: bool,
    /// The reply token that reached normalized output, when one did.
    reply_in_output: Option<String>,
    /// The argv as run, placeholders expanded, and the command as given.
    command: Vec<OsString>,
    template: Vec<OsString>,
    /// The image's run, removed at teardown (its container, image, storage).
    container: Option<crate::image::runtime::RunningContainer>,
    /// The observation trace, once written.
    trace: Option<String>,
    /// The prompt's answer's `checkfu.turn`, with the turn's milliseconds from the prompt's
    /// sending to its answer.
    turn_claim: Option<(Value, u64)>,
    /// The `cancellation` step's facts, and the scripted drain's.
    cancellation: Option<Cancellation>,
    drain: Option<Drain>,
    /// The scripted steer: when it was sent, and its acknowledgement with when it came (the
    /// relay's clock).
    steer_sent_ms: Option<u64>,
    steer_ack: Option<(SteerAck, u64)>,
    /// The `checkfu.compaction` members of the harness's updates, set against the record
    /// under an enforced window ([`verdict::compaction`]).
    compaction_claims: verdict::compaction::Claims,
    /// The `checkfu.output_schema` `session/new` carried, when it carried one.
    output_schema: Option<Value>,
    /// The `initialize` result, when it was answered with one (the registry's `ACP-INIT-…`).
    initialize_result: Option<Value>,
    /// The `session/new` result, when it was answered with one (modes, config options).
    session_results: Vec<Value>,
    /// The MCP servers `session/new` grants ([`platform`]), those the probe grants.
    platform: platform::Grants,
    /// The ACP version the run speaks, once `initialize` agreed one ([`negotiate`]), and how.
    acp_version: u64,
    negotiation: negotiate::Negotiation,
    /// ACP v2: the prompt's receipt's `messageId` (the turn's user message).
    receipt: Option<String>,
    /// ACP v2: the first turn while it is open, as read so far ([`v2`]).
    turn_v2: Option<v2::Turn>,
}

impl<'o, 's, 'a, 'p> Run<'o, 's, 'a, 'p> {
    fn new(session: Session, options: &'o AcpOptions, stage: &'s mut Stage<'a, 'p>) -> Run<'o, 's, 'a, 'p> {
        let nonce = stage.plane.nonce.clone();
        Run {
            session,
            options,
            stage,
            normalizer: Normalizer::new(),
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
            command: Vec::new(),
            template: Vec::new(),
            container: None,
            trace: None,
            turn_claim: None,
            cancellation: None,
            drain: None,
            steer_sent_ms: None,
            steer_ack: None,
            compaction_claims: verdict::compaction::Claims::default(),
            output_schema: None,
            initialize_result: None,
            session_results: Vec::new(),
            platform: platform::Grants::default(),
            acp_version: options.acp_version,
            negotiation: negotiate::Negotiation::default(),
            receipt: None,
            turn_v2: None,
        }
    }

    fn step(&mut self, name: StepName, started: Instant, outcome: impl Into<Outcome>) {
        self.stage.steps.ended(name, started.elapsed().as_millis() as u64, outcome);
    }

    fn step_deadline(&self) -> Instant {
        Instant::now() + self.stage.options.step_timeout
    }

    /// Sends request `method` and waits for its answer by `until`.
    fn ask(&mut self, method: &'static str, params: Value, until: Instant) -> Result<(Value, Vec<u8>), Reason> {
        let id = self.session.request(method, params).map_err(|f| Reason::new(Kind::Harness, f))?;
        self.wait_for(id, until)
    }

    /// Waits for the answer to request `id`, handling everything else that arrives.
    fn wait_for(&mut self, id: i64, until: Instant) -> Result<(Value, Vec<u8>), Reason> {
        loop {
            match self.session.next(until) {
                Ok(Incoming::Response { id: got, message, bytes, .. }) if got == id => return Ok((message, bytes)),
                Ok(other) => self.dispatch(other),
                Err(fault) => return Err(self.explain(&fault)),
            }
            if self.normalizer.full() {
                return Err(self.over_budget());
            }
        }
    }

    /// A fault in the words of the probe, which knows the step's time ([`explain`]).
    fn explain(&self, fault: &Fault) -> Reason {
        explain(self.stage.options, fault)
    }

    /// The harness sent more in one turn than the probe keeps.
    fn over_budget(&self) -> Reason {
        Reason::new(Kind::Harness, self.normalizer.over_budget("harness"))
    }

    /// What a message means for the observations.
    fn dispatch(&mut self, incoming: Incoming) {
        match incoming {
            Incoming::Notification { method, message, report } => {
                if method == UPDATE_METHOD && self.acp_version == negotiate::V2 {
                    self.normalizer.update_v2(&report, &message);
                    self.compaction_claims.note(&message);
                } else if method == UPDATE_METHOD {
                    self.normalizer.update(&report, &message);
                    self.compaction_claims.note(&message);
                }
            }
            Incoming::Response { id, message, .. } => {
                if Some(id) == self.prompt_id {
                    self.terminal(&message);
                } else if let Some((_, event)) = self.steer.clone().filter(|(steer, _)| *steer == id) {
                    if let Some(disposition) = message.pointer("/result/disposition").and_then(Value::as_str) {
                        self.normalizer.steering(&event, disposition);
                        let now_ms = self.stage.plane.relay.now_ms();
                        if let Some(ack) = SteerAck::from_name(disposition) {
                            self.steer_ack.get_or_insert((ack, now_ms));
                        }
                    }
                } else if Some(id) == self.interrupt_id {
                    if let Some(disposition) = message.pointer("/result/disposition").and_then(Value::as_str) {
                        self.normalizer.interrupt_ack(disposition);
                        let now_ms = self.stage.plane.relay.now_ms();
                        let draining = InterruptAck::from_name(disposition) == Some(InterruptAck::Draining);
                        if let Some(drain) = self.drain.as_mut().filter(|_| draining) {
                            drain.ack_ms.get_or_insert(now_ms);
                        }
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
        // In v2 the prompt's answer is a receipt: the turn's terminal is its idle ([`v2`]).
        if self.acp_version == negotiate::V2 {
            return;
        }
        let stop_reason = message.pointer("/result/stopReason").and_then(Value::as_str);
        self.normalizer.terminal(stop_reason);
    }

    /// `initialize`, in the version asked and, after a `-32022` naming another the probe
    /// speaks, once more in that one ([`negotiate`]): the answer, and its bytes.
    fn handshake(&mut self, until: Instant) -> Result<(Value, Vec<u8>), Reason> {
        let asked = self.options.acp_version;
        self.negotiation.asked = asked;
        self.session.read_as(negotiate::protocol(asked));
        let answer = self.ask(VERSION_METHOD, negotiate::params(self.options, asked), until)?;
        let Some((supported, Some(again))) = negotiate::retry(&answer.0, asked) else { return Ok(answer) };
        self.negotiation.supported = Some(supported);
        self.session.read_as(negotiate::protocol(again));
        self.ask(VERSION_METHOD, negotiate::params(self.options, again), until)
    }

    fn initialize(&mut self, envelope: &'static catalog::Envelope) -> Option<AdmittedCapabilities> {
        let started = Instant::now();
        let until = self.step_deadline();
        let answer = self.handshake(until);
        // The version the session reads now is the one agreed: asked, asked again, or
        // the older one the agent answered with.
        self.acp_version = negotiate::version(self.session.protocol());
        let (message, bytes) = match answer {
            Ok(answer) => answer,
            Err(reason) => {
                self.step(StepName::InitializeHandshake, started, Outcome::Failed(reason.within("initialize")));
                return None;
            }
        };
        if let Some(error) = message.get("error") {
            let reason = format!("initialize answered an error: {}", rpc_error(error));
            self.step(StepName::InitializeHandshake, started, Outcome::failed(Kind::Answer, reason));
            return None;
        }
        if let Some(why) = message.get("result").filter(|_| self.acp_version == negotiate::V2).and_then(negotiate::boolean_capability) {
            self.step(StepName::InitializeHandshake, started, Outcome::failed(Kind::Answer, why));
            return None;
        }
        self.initialize_result = message.get("result").cloned();
        let info = if self.acp_version == negotiate::V2 { "/result/info" } else { "/result/agentInfo" };
        self.agent_info = message.pointer(info).cloned().unwrap_or(Value::Null);
        self.admission.declaration = message.pointer("/result/_meta/checkfu.capabilities").cloned().unwrap_or(Value::Null);
        match admission::admit_wire_as(envelope, &bytes, self.session.protocol()) {
            Ok(admitted) => {
                self.admission.admitted_axes = admitted.promotions().iter().map(|u| u.axis).collect();
                self.admission.admitted = admitted.values().iter().map(|(a, v)| ((*a).to_owned(), json!(v))).collect();
                self.admission.mechanisms = admitted.mechanisms().iter().map(|(m, v)| (m.member.to_owned(), json!(v))).collect();
                self.step(StepName::InitializeHandshake, started, Outcome::Passed);
                Some(admitted)
            }
            Err(error) => {
                self.admission.error = Some(error.to_string());
                let reason = format!("the declaration was refused: {error}");
                self.step(StepName::InitializeHandshake, started, Outcome::failed(Kind::Declaration, reason));
                None
            }
        }
    }

    fn start_session(&mut self, meta: Map<String, Value>) -> Option<String> {
        let started = Instant::now();
        let authority = authority_note(&meta);
        let cwd = self.session.workspace().harness_root().to_string_lossy().into_owned();
        let mut params = json!({"cwd": cwd, "mcpServers": self.mcp_servers()});
        if !meta.is_empty() {
            params["_meta"] = Value::Object(meta);
        }
        let until = self.step_deadline();
        if let Some(method_id) = self.options.authenticate.clone() {
            // v2 renamed v1's `authenticate` to `auth/login`, with the same `methodId`.
            let login = if self.acp_version == negotiate::V2 { AUTH_LOGIN } else { AUTHENTICATE };
            let refused = match self.ask(login, json!({"methodId": method_id}), until) {
                Err(reason) => Some(reason.within(login)),
                Ok((message, _)) => message
                    .get("error")
                    .map(|e| Reason::new(Kind::Answer, format!("{login} ({method_id}) answered an error: {}", rpc_error(e)))),
            };
            if let Some(reason) = refused {
                self.step(StepName::SessionStart, started, Outcome::Failed(reason));
                return None;
            }
        }
        let outcome = match self.ask(NEW_SESSION, params, until) {
            Err(reason) => Err(reason.within("session/new")),
            Ok((message, _)) => match (message.get("error"), message.pointer("/result/sessionId").and_then(Value::as_str)) {
                (Some(error), _) => {
                    Err(Reason::new(Kind::Answer, format!("session/new answered an error: {}{authority}", rpc_error(error))))
                }
                (None, Some(id)) => {
                    self.session_results.extend(message.get("result").cloned());
                    Ok(id.to_owned())
                }
                (None, None) => Err(Reason::new(Kind::Answer, "session/new answered without a sessionId")),
            },
        };
        match outcome {
            Ok(id) => {
                self.normalizer.ready();
                self.step(StepName::SessionStart, started, Outcome::Passed);
                Some(id)
            }
            Err(reason) => {
                self.step(StepName::SessionStart, started, Outcome::Failed(reason));
                None
            }
        }
    }

    /// The diagnostic prompt's words: the nonce, and what the script and the declaration ask.
    fn prompt_text(&self, admitted: &AdmittedCapabilities) -> String {
        let mut text = match self.stage.options.model_script {
            Script::Tool => format!(
                "Checkfu local diagnostic. Read the file {TOKEN_FILE} in the working directory, then reply with the nonce {} and end the turn.",
                self.nonce
            ),
            _ => format!("Checkfu local diagnostic. Reply with the nonce {} and end the turn.", self.nonce),
        };
        if delegation::declared(admitted) {
            text.push_str(delegation::DELEGATION_ASK);
        }
        text
    }

    fn prompt(&mut self, admitted: &AdmittedCapabilities, session_id: &str) {
        let started = Instant::now();
        let until = self.step_deadline();
        let text = self.prompt_text(admitted);
        let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
        // A turn that failed names the relay's refusals after its fault when they may be why
        // (a path off the allow-list, a missing key): its reason's kind says when.
        let turn = match self.acp_version {
            // ACP v2 ends the turn with an idle `state_update`, not the prompt's answer ([`v2`]).
            negotiate::V2 => self.run_turn_v2(admitted, session_id, params, until),
            _ => self.run_turn(admitted, session_id, params, until),
        };
        let outcome = turn.and_then(|()| self.governed().map_err(|miss| miss.reason(&self.nonce)));
        let relay: &Relay = &self.stage.plane.relay;
        let outcome = outcome.map_err(|reason| verdict::with_refusals(reason, relay, 1));
        if outcome.is_err() && self.turn_open {
            // A runner that gives up on a turn cancels it, as ACP asks, before tearing down.
            let _ = self.session.notify(CANCEL_METHOD, json!({"sessionId": session_id}));
        }
        self.step(StepName::PromptExchange, started, outcome);
    }

    fn run_turn(&mut self, admitted: &AdmittedCapabilities, session_id: &str, params: Value, until: Instant) -> Result<(), Reason> {
        // The turn's time starts before the prompt is written: the harness may begin (and
        // measure its own `wall_time_ms`) while the probe still records what it sent.
        let sent = Instant::now();
        let inputs = self.live_inputs(admitted);
        let prompt = self.session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
        self.prompt_id = Some(prompt);
        self.turn_open = true;
        let answer = self.live_turn(prompt, session_id, sent, inputs, until);
        self.stage.plane.relay.pace(None);
        let message = answer.map_err(|reason| reason.within(PROMPT_METHOD))?;
        self.turn_open = false;
        // What the harness says of its own turn, and how long the turn took as the probe saw
        // it: both are set against the relay's record at the end.
        self.turn_claim = message.pointer("/result/_meta/checkfu.turn").cloned().map(|claim| (claim, sent.elapsed().as_millis() as u64));
        self.terminal(&message);
        self.settle();
        if let Some(error) = message.get("error") {
            return Err(Reason::new(Kind::Answer, format!("session/prompt answered an error: {}", rpc_error(error))));
        }
        if let Some(fault) = self.late_fault.clone() {
            return Err(fault.within("after the turn"));
        }
        if message.pointer("/result/stopReason").and_then(Value::as_str).is_none() {
            return Err(Reason::new(Kind::Answer, "session/prompt answered without a stop reason"));
        }
        Ok(())
    }

    /// The turn is over; watch it a little longer for late or duplicate emissions.
    fn settle(&mut self) {
        let settle_until = Instant::now() + self.options.settle;
        loop {
            match self.session.next(settle_until) {
                Ok(_) if self.normalizer.full() => {
                    self.late_fault = Some(self.over_budget());
                    break;
                }
                Ok(incoming) => self.dispatch(incoming),
                Err(Fault::Timeout | Fault::Deadline | Fault::Closed | Fault::Interrupted(_)) => break,
                Err(fault) => {
                    self.late_fault = Some(Reason::new(Kind::Harness, fault));
                    break;
                }
            }
        }
    }

    /// The governed half of `prompt_exchange` ([`verdict`]): a served call carried the nonce
    /// in its latest user turn, and that call's reply token reached normalized output.
    fn governed(&mut self) -> Result<(), verdict::Miss> {
        let served: Vec<verdict::Served> = self.stage.plane.relay.calls(1).iter().map(verdict::Served::from).collect();
        let output = self.normalizer.output_text();
        self.nonce_in_output = output.contains(&self.nonce);
        let reached = verdict::exchange(&served, &self.nonce, &|text| output.contains(text))?;
        self.reply_in_output = Some(reached);
        Ok(())
    }

    /// Ends the agent, then what its image's runtime keeps: how it ended, and the step's
    /// outcome.
    fn tear_down(&mut self) -> (session::Teardown, Outcome) {
        let teardown = self.session.teardown(self.stage.options.kill_grace);
        let mut outcome = teardown_fault(&teardown, "harness", "EOF on stdin and SIGTERM").map_or(Outcome::Passed, Outcome::Failed);
        // An ACP agent over stdio serves until its stdin closes; one that left before
        // teardown (a crash, or quitting after a turn) is named here, whatever else failed.
        if teardown.ending == Ending::ExitedEarly && outcome.passed() {
            let exit = crate::report::process::exit_json(teardown.status);
            let words = format!("the harness exited before teardown (exit {exit}): an ACP agent serves until its stdin closes");
            outcome = Outcome::failed(Kind::Teardown, words);
        }
        // The runtime's client is gone; what it keeps (a container, an image) goes now. The
        // agent's own fault, when it left one, is the one the step names.
        let grace = self.stage.grace();
        if let Some((container, image)) = self.container.take().zip(self.stage.image.as_mut()) {
            if let Some(fault) = image.finish(container, &grace).filter(|_| outcome.passed()) {
                outcome = Outcome::Failed(fault);
            }
        }
        (teardown, outcome)
    }

    /// Teardown (the agent's, then its image's), the `native_checkpoint` step (a second
    /// process, once the first is gone), the checks over the trace, and the lane's members of
    /// the report.
    fn finish(mut self, admitted: Option<&AdmittedCapabilities>, v1: Option<u64>) -> LaneEnd {
        let exchanged = self.stage.steps.passed(StepName::PromptExchange);
        let started = Instant::now();
        let (teardown, outcome) = self.tear_down();
        let teardown_ms = started.elapsed().as_millis() as u64;
        let report = self.checks(admitted);
        let context_compaction = self.context_compaction();
        let first = self.first_process(&teardown);
        let held = self.session.checkpoint.take();
        // The workspace goes back to the plane, whose removal is part of teardown (a resumed
        // process has its own, made after this one is removed).
        self.stage.plane.workspace = Some(self.session.into_workspace());
        let given =
            checkpoint::FirstProcess { template: &self.template, held: held.as_ref(), nonce: &self.nonce, version: self.acp_version };
        let resumed = checkpoint::native_checkpoint(self.stage, self.options, admitted, &given);
        let outcome = match resumed {
            Some(fault) if outcome.passed() => Outcome::Failed(fault),
            _ => outcome,
        };
        if let Some(admitted) = admitted {
            realize(&mut self.admission, admitted, &report, &self.stage.steps);
        }
        let declaration = Some(self.admission.declaration.clone());
        let trace = self.trace.take().unwrap_or_default();
        let calls = self.stage.plane.relay.calls(1);
        let turn_telemetry =
            self.turn_claim.take().map(|(claim, turn_ms)| crate::verdict::telemetry(claim, turn_ms, &calls, first.dropped.as_deref()));
        let mut lane = AcpReport {
            acp_version: self.acp_version,
            negotiation: self.negotiation.clone(),
            admission: self.admission,
            report,
            harness: first.harness,
            client_requests: first.client_requests,
            wire: first.wire,
            turn_telemetry,
            cancellation: self.cancellation.take(),
            drain: self.drain.take(),
            context_compaction,
            requirements: Vec::new(),
            requirements_verdict: KitVerdict::default(),
            requirement_probe: None,
            exercised: first.exercised,
            trace,
            record: first.record,
        };
        let fit = if self.acp_version == negotiate::V2 {
            Err(kit::Why::from("the test kit's requirement probes speak ACP v1, and this run spoke v2"))
        } else if !self.options.requirement_probes {
            Err(kit::Why::from("they were turned off"))
        } else {
            kit::fit(exchanged, &outcome, self.stage.options.budget.cancelled().is_some())
        };
        let outcome = match probe_requirements(self.options, self.stage, &self.template, fit, v1, &mut lane) {
            // The fresh process's teardown is the run's as the resumed one's is.
            Some(fault) if outcome.passed() => Outcome::Failed(fault),
            _ => outcome,
        };
        LaneEnd {
            report: Box::new(lane),
            teardown: (teardown_ms, outcome),
            nonce_in_output: self.nonce_in_output,
            reply_in_output: self.reply_in_output,
            declaration,
            // The version that ran, known only once `initialize` agreed on one (else the one asked).
            profile: self.options.profile(&self.template, negotiate::protocol(self.acp_version)),
        }
    }

    /// What the report keeps of the first process once it is torn down: how it ran and
    /// ended, its wire and its record (opened by the launch: the argv as run, which `decode`
    /// skips), the requests it made, what the wire's requirements were put to, and the
    /// turn claim the decoder dropped, if it dropped one.
    fn first_process(&mut self, teardown: &session::Teardown) -> FirstEnd {
        let harness = HarnessInfo {
            command: self.command.iter().map(|c| c.to_string_lossy().into_owned()).collect(),
            agent_info: self.agent_info.clone(),
            process: ProcessEnd::of(self.session.pid(), teardown, self.session.stderr()),
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
            breaches: self.session.breaches.clone(),
        };
        let launch = json!({"launch": {"command": harness.command, "pid": harness.process.pid}});
        let mut header = serde_json::to_vec(&launch).unwrap_or_default();
        header.push(b'\n');
        let record = [header.as_slice(), record].concat();
        let exercised = Exercised {
            responses: self.session.responses,
            notifications_sent: self.session.notifications_sent,
            turn: self.prompt_id.is_some(),
            client_fs: self.options.client_fs,
            terminals: self.options.terminals,
            permissions_refused: self.session.permissions_refused,
            initialize: self.initialize_result.take(),
            hygiene: self.session.hygiene.clone(),
            sessions: self.session_results.clone(),
            probe_skipped: None,
        };
        // A claim the decoder dropped is one the platform never reads: said, not compared.
        let dropped = self.session.dropped.iter().find(|(key, _)| key == TURN_KEY).map(|(_, why)| why.clone());
        FirstEnd { harness, wire, record, client_requests: self.session.client_requests.clone(), exercised, dropped }
    }

    /// Under an enforced window, once a prompt was sent: the turn's compaction against the
    /// relay's record of it, under the policy the runtime config admitted.
    fn context_compaction(&mut self) -> Option<verdict::compaction::CompactionCheck> {
        let window = self.stage.options.context_window.filter(|_| self.prompt_id.is_some())?;
        let policy = self.options.runtime_config.as_ref().and_then(verdict::compaction::Policy::of);
        let claims = std::mem::take(&mut self.compaction_claims);
        let calls = self.stage.plane.relay.calls(1);
        Some(verdict::compaction::judge(window, policy, claims, &calls, self.reply_in_output.is_some()))
    }

    /// The seven checks over the trace (a check over a turn that never happened is a
    /// recorded skip), and what the run realized of the admitted set.
    fn checks(&mut self, admitted: Option<&AdmittedCapabilities>) -> conformance::Report {
        let declared: Vec<(&str, &str)> = admitted.map(|a| a.values().to_vec()).unwrap_or_default();
        let opt_in: &[&str] = if self.options.interrupt { &[OPT_IN_INTERRUPT] } else { &[] };
        let trace = self.normalizer.trace(&declared, opt_in);
        // The trace is ours, so a refusal is a bug in the normalizer, not the harness's
        // fault; but the harness's messages shaped it, so the run must not panic on it. No
        // check can be judged then, and a run that judged nothing must not pass.
        let mut report = conformance::check_str(&trace).unwrap_or_else(|e| {
            let reason = format!("not judged: the conformance checker refused the probe's own trace ({e}); this is a probe bug");
            let checks = catalog::Check::ALL.iter().map(|c| (c.name(), Check::Fail { reason: reason.clone(), at: None })).collect();
            conformance::Report { checks, observations: 0 }
        });
        if self.prompt_id.is_none() {
            // The handshake's check stays: the handshake did happen, or failed to.
            for (name, outcome) in &mut report.checks {
                if *name != READY_CHECK && !matches!(outcome, Check::Skip { .. }) {
                    *outcome = Check::Skip { reason: String::from(NO_TURN) };
                }
            }
        }
        self.judge_drain(&mut report);
        self.judge_steer(&mut report);
        self.trace = Some(trace);
        report
    }
}

/// The requirements that need a fresh agent, on one more process ([`kit`]), when `fit`:
/// its command expanded afresh from `template`, since a resumed process
/// ([`checkpoint`]) may have renewed the workspace and the home the first one was given.
/// Hands back that process's teardown fault, if it left one.
fn probe_requirements(
    options: &AcpOptions,
    stage: &mut Stage<'_, '_>,
    template: &[OsString],
    fit: Result<(), kit::Why>,
    v1: Option<u64>,
    lane: &mut AcpReport,
) -> Option<Reason> {
    let command = |()| {
        expand_command(template, &stage.plane.placeholders, stage.image.is_some())
            .map_err(|e| kit::Why::from(format!("its command could not be made: {e}").as_str()))
    };
    match fit.and_then(command).and_then(|command| kit::exercise(options, &command, stage, v1)) {
        Ok((mut probe, fault)) => {
            // The record holds every agent process's wire, each opened by its launch line.
            lane.record.append(&mut probe.record);
            lane.requirement_probe = Some(probe);
            fault
        }
        Err(why) => {
            lane.exercised.probe_skipped = Some(why.to_string());
            None
        }
    }
}

/// A fault in the words of the probe, which knows the step's time and the run's deadline.
fn explain(options: &RunOptions, fault: &Fault) -> Reason {
    let words = match fault {
        Fault::Timeout => format!("no answer within {:.1} s (--step-timeout)", options.step_timeout.as_secs_f64()),
        Fault::Deadline => format!("the run's deadline of {:.1} s passed (--deadline)", options.budget.given().as_secs_f64()),
        Fault::Unrequested { .. } => return Reason::new(Kind::Answer, fault),
        other => other.to_string(),
    };
    Reason::new(Kind::Harness, words)
}

/// What a refused `session/new` carried, for its reason: authority members are fail-closed, so
/// a harness that does not take one refuses the session (`""` when none was sent).
fn authority_note(meta: &Map<String, Value>) -> String {
    if meta.is_empty() {
        return String::new();
    }
    let keys: Vec<&str> = meta.keys().map(String::as_str).collect();
    format!(" (it carried the authority members {}, which a harness that does not take them must refuse)", keys.join(", "))
}

/// What the run realized of the admitted set, once every step has ended: a promotion or a
/// mechanism value stays only when its proof (its step, or its conformance check) passed.
fn realize(admission: &mut Admission, admitted: &AdmittedCapabilities, report: &conformance::Report, steps: &Steps<'_>) {
    let passed = |proof: &str| {
        report.outcome(proof) == Some(&Check::Pass)
            || steps.list.iter().any(|(name, step)| name.name() == proof && step.status() == StepStatus::Passed)
    };
    admission.realized = realized(admitted, &passed);
    admission.not_exercised = not_exercised(admitted);
}

/// Whether the declaration admitted the upgrade whose evidence is `check`.
fn upgrade_admitted(admitted: &AdmittedCapabilities, check: &str) -> bool {
    catalog::UPGRADES.iter().filter(|u| u.evidence == Some(check)).any(|u| admitted.value(u.axis) == Some(u.to))
}

/// The admitted set with every promotion whose proof (its step, or its conformance check)
/// did not pass in this run put back to the value it was promoted from, and beside it each
/// declared mechanism value whose step passed: a declaration is exercised, never believed.
fn realized(admitted: &AdmittedCapabilities, passed: &dyn Fn(&str) -> bool) -> Map<String, Value> {
    let mut realized: Map<String, Value> = admitted
        .values()
        .iter()
        .map(|(axis, value)| {
            let pending = admitted.promotions().iter().find(|u| u.axis == *axis);
            let value = match pending {
                Some(u) if !passed(u.proof) => u.from,
                _ => value,
            };
            ((*axis).to_owned(), json!(value))
        })
        .collect();
    for (mechanism, value) in admitted.mechanisms() {
        if mechanism.proof.is_some_and(passed) {
            realized.insert(mechanism.member.to_owned(), json!(value));
        }
    }
    realized
}

/// The declared mechanism values no step of the probe exercises yet, as `member: value`.
fn not_exercised(admitted: &AdmittedCapabilities) -> Vec<String> {
    admitted.mechanisms().iter().filter(|(m, _)| m.proof.is_none()).map(|(m, value)| format!("{}: {value}", m.member)).collect()
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
