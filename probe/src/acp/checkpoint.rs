//! The `native_checkpoint` step: a declared `native_checkpoint: external_custody` exercised.
//!
//! It runs once the first process of the harness is torn down. The client holds the last
//! `checkfu.journal_checkpoint` that process sent; the plane's workspace and home are removed
//! and made afresh ([`Plane::renew`](crate::plane::Plane::renew)), so nothing the first
//! process could read survives, and a second process starts as the first did: in the same
//! fence (the plane's namespace), under the same budget, in the image when there is one. Its
//! `session/new` carries `checkfu.continuity: same_run_resume` and `checkfu.resume` with the
//! checkpoint's version and state, and a prompt in a turn of its own, which does not carry
//! the first turn's nonce, is answered plainly. The relay looks for that nonce in the turn's
//! requests ([`verdict::checkpoint`]).

use std::ffi::OsString;
use std::time::Instant;

use serde_json::{json, Map, Value};

use super::exercised::{answer_to, await_turn, declaration, not_served as step_not_served, skip_reason, TurnEnd};
use super::{expand_command, explain, negotiate, rpc_error, start, AcpOptions, Started, NEW_SESSION};
use crate::outcome::{Kind, Outcome, Reason};
use crate::plane::Declared;
use crate::session::custody::Custody;
use crate::session::Session;
use crate::stage::Stage;
use crate::verdict::checkpoint::{self, CheckpointMiss};
use checkfu_wire::admission::AdmittedCapabilities;
use checkfu_wire::catalog::StepName;
use checkfu_wire::decode::tables::{Slot, PROMPT_METHOD, VERSION_METHOD};

/// The `session/new` members that hand the state back.
const CONTINUITY: &str = Slot::CheckfuContinuity.name();
const RESUME: &str = Slot::CheckfuResume.name();

/// What the step is given of the first process: the harness's command as given (its
/// placeholders are expanded again, for the new paths), the checkpoint the client holds, and
/// the first turn's nonce.
pub(super) struct FirstProcess<'f> {
    pub template: &'f [OsString],
    pub held: Option<&'f Custody>,
    pub nonce: &'f str,
    /// The ACP version the first process agreed: the second is asked for the same one.
    pub version: u64,
}

/// Reports `native_checkpoint`; hands back the second process's teardown fault, if it left one.
pub(super) fn native_checkpoint(
    stage: &mut Stage<'_, '_>,
    options: &AcpOptions,
    admitted: Option<&AdmittedCapabilities>,
    first: &FirstProcess<'_>,
) -> Option<Reason> {
    let skip = match admitted {
        Some(admitted) => skip_reason(&stage.steps, admitted, StepName::NativeCheckpoint),
        None => Some(String::from("no session was started")),
    };
    if let Some(reason) = skip {
        stage.steps.skipped(StepName::NativeCheckpoint, &reason);
        return None;
    }
    let started = Instant::now();
    let (outcome, teardown) = match checkpoint::held(first.held) {
        Ok(resume) => resume_in_fresh_process(stage, options, first, resume),
        Err(miss) => (not_served(&miss), None),
    };
    stage.steps.ended(StepName::NativeCheckpoint, started.elapsed().as_millis() as u64, outcome);
    teardown
}

/// The step's failure for a miss, naming the value it does not serve.
fn not_served(miss: &CheckpointMiss) -> Outcome {
    match miss {
        CheckpointMiss::Unasked => Outcome::failed(Kind::Unasked, miss),
        _ => step_not_served(StepName::NativeCheckpoint, miss),
    }
}

/// What a failure of the second process is said within: the value exercised.
fn within() -> String {
    let (member, value) = declaration(StepName::NativeCheckpoint);
    format!("declared `{member}: {value}`, the resumed process")
}

/// The second process: fresh rooms, started as the first was, resumed, prompted, judged and
/// torn down; its outcome, and its teardown's fault.
fn resume_in_fresh_process(
    stage: &mut Stage<'_, '_>,
    options: &AcpOptions,
    first: &FirstProcess<'_>,
    resume: Value,
) -> (Outcome, Option<Reason>) {
    let cannot = |e: crate::error::ProbeError| Outcome::failed(Kind::Continuity, format!("{}: {e}", within()));
    let declared = Declared { env: Some(&options.recipe_env), home_files: Some(&options.recipe_home_files) };
    if let Err(e) = stage.plane.renew(stage.options, declared) {
        return (cannot(e), None);
    }
    let command = match expand_command(first.template, &stage.plane.placeholders, stage.image.is_some()) {
        Ok(command) => command,
        Err(e) => return (cannot(e), None),
    };
    let Started { mut session, container, .. } = match start(options, &command, stage) {
        Ok(started) => started,
        Err(e) => return (cannot(e), None),
    };
    let outcome = match resumed_turn(stage, options, &mut session, resume, first) {
        Ok(marks) => checkpoint::resumed(&marks).map_or_else(|miss| not_served(&miss), |()| Outcome::Passed),
        Err(reason) => Outcome::Failed(reason.within(within())),
    };
    let ((), ended) = super::fresh::end(stage, session, container, "resumed harness", |_, _| ());
    (outcome, ended.fault)
}

/// The handshake, the resumed session and its turn; the watched marks each of the turn's
/// calls carried (mark 0: the first turn's nonce).
fn resumed_turn(
    stage: &mut Stage<'_, '_>,
    options: &AcpOptions,
    session: &mut Session,
    resume: Value,
    first: &FirstProcess<'_>,
) -> Result<Vec<Vec<usize>>, Reason> {
    let until = Instant::now() + stage.options.step_timeout;
    let ask = |session: &mut Session, method: &'static str, params: Value| -> Result<Value, Reason> {
        let id = session.request(method, params).map_err(|f| Reason::new(Kind::Harness, f).within(method))?;
        let message = answer_to(session, id, until).map_err(|f| explain(stage.options, &f).within(method))?;
        match message.get("error") {
            Some(error) if method != PROMPT_METHOD => {
                Err(Reason::new(Kind::Continuity, format!("{method} answered an error: {}", rpc_error(error))))
            }
            _ => Ok(message),
        }
    };
    session.read_as(negotiate::protocol(first.version));
    ask(session, VERSION_METHOD, negotiate::params(options, first.version))?;
    let mut meta = Map::new();
    meta.insert(CONTINUITY.into(), json!("same_run_resume"));
    meta.insert(RESUME.into(), resume);
    let cwd = session.workspace().harness_root().to_string_lossy().into_owned();
    let answer = ask(session, NEW_SESSION, json!({"cwd": cwd, "mcpServers": [], "_meta": meta}))?;
    let Some(session_id) = answer.pointer("/result/sessionId").and_then(Value::as_str).map(str::to_owned) else {
        return Err(Reason::new(Kind::Answer, "session/new answered without a sessionId"));
    };
    let relay = &stage.plane.relay;
    let nonce = crate::options::fresh_nonce();
    relay.begin_turn(nonce.clone(), Vec::new());
    relay.answer_plainly();
    relay.watch_marks(vec![first.nonce.to_owned()]);
    let turn = relay.turn();
    let text = format!(
        "Checkfu local diagnostic, resumed. Go on from the conversation you were handed back: reply with the nonce {nonce} \
         and end the turn."
    );
    let params = json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]});
    let id = session.request(PROMPT_METHOD, params).map_err(|f| Reason::new(Kind::Harness, f).within(PROMPT_METHOD))?;
    await_turn(session, first.version, id, until, &mut |_| {}).map_err(|end| match end {
        TurnEnd::Fault(fault) => explain(stage.options, &fault).within(PROMPT_METHOD),
        TurnEnd::Judged(reason) => reason,
    })?;
    Ok(stage.plane.relay.calls(turn).into_iter().map(|c| c.marks_in_request).collect())
}
