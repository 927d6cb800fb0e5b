//! The probe's `oneshot-v1` lane: a one-shot CLI through the same relay, fence, fresh home,
//! placeholders and process-group teardown as the ACP lane.
//!
//! Steps, each reported only when the declaration asks for it (an undeclared step is
//! omitted, not skipped):
//! - `prompt_exchange`: the first run completed a turn, a call the relay served carried the
//!   nonce in its latest user turn, and that call's reply token (the model's answer, which
//!   the CLI cannot write itself) reached normalized output (stdout in `text` mode);
//! - `resume` (a `resume_flag` is declared): a second run in the same home and workspace,
//!   `{resume_flag}` expanded (with the first run's session id when it needs one),
//!   completed its own turn, and a call it made carried the first run's reply token: the
//!   model's earlier answer came back to it;
//! - `output_schema` (an output-schema flag is declared): every run's final answer is a
//!   structured value the relay served in that run, and validates against the schema (the
//!   author's `--output-schema`, else the probe's own, [`crate::plane::probe_output_schema`]);
//! - `teardown`: every run ended and nothing of its process group survived (the spine adds
//!   what the plane left).
//!
//! The verdicts are [`judge`]'s, the same functions the golden process exchanges are held
//! to. No ACP step or admission is reported here.

pub mod judge;
mod lane;
mod plan;
pub mod process;
pub mod report;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::error::ProbeError;
use crate::oneshot::report::OneshotReport;
use crate::options::{fresh_nonce, RunOptions};
use crate::outcome::{Kind, Outcome};
use crate::session::{self, Launch};
use crate::stage::{LaneEnd, Stage};
use crate::verdict;
use checkfu_wire::catalog::StepName as Name;
use checkfu_wire::oneshot::{Declaration, PromptTransport};
use judge::Served;
pub use plan::OneshotPlan;

/// The diagnostic prompt of a run.
pub fn prompt(nonce: &str, second: bool) -> String {
    if second {
        format!("Checkfu local diagnostic, second turn. Reply with the nonce {nonce} and end the turn.")
    } else {
        format!("Checkfu local diagnostic. Reply with the nonce {nonce} and end the turn.")
    }
}

/// A private directory for the prompt and schema files, removed with the run.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The lane's options checked before anything is pulled or started: the output schema,
/// compiled for its step.
pub(crate) struct Checked {
    validator: Option<jsonschema::Validator>,
}

/// Checks what does not wait for the declaration: the author's output schema passes the
/// safety profile and compiles.
pub(crate) fn check(run: &RunOptions) -> Result<Checked, ProbeError> {
    let validator = match &run.output_schema {
        Some(schema) => {
            crate::plane::safe_output_schema(schema)?;
            let compiled = jsonschema::validator_for(schema);
            Some(compiled.map_err(|e| ProbeError::invalid("--output-schema cannot be compiled", e))?)
        }
        None => None,
    };
    Ok(Checked { validator })
}

/// What the declaration asks of the options, once it is resolved.
pub(crate) fn check_declaration(declaration: &Declaration, run: &RunOptions) -> Result<(), ProbeError> {
    if run.output_schema.is_some() && declaration.output_schema_flag.is_none() {
        return Err(ProbeError::Usage(String::from(
            "--output-schema was given, but the declaration has no output_schema_flag: the CLI has no way to receive it",
        )));
    }
    if run.inherit_home && !declaration.home_files.is_empty() {
        return Err(ProbeError::Usage(String::from(
            "the declaration's home_files write into the fresh home, which --inherit-home turns off",
        )));
    }
    Ok(())
}

/// The entrypoint as run. The CLI starts in the workspace, so a relative path with a `/`
/// is resolved first: against the recipe's directory, or the caller's own directory for one
/// typed on the command line (so it means what it says). A bare name is looked up on `PATH`.
/// In an image it is a path inside it, as the image's own runtime reads it.
fn entrypoint(declaration: &Declaration, base_dir: Option<&PathBuf>, in_image: bool) -> String {
    if in_image {
        return declaration.entrypoint.clone();
    }
    let here = std::env::current_dir().unwrap_or_default();
    // The recipe's directory may itself be relative to the caller's.
    let base = base_dir.map_or_else(|| here.clone(), |b| here.join(b));
    crate::launch::program(declaration.entrypoint.as_ref(), &base).to_string_lossy().into_owned()
}

/// Runs the lane's steps on `stage`: the first run and its prompt exchange, the resume when
/// declared, the output schema when declared, and the runs' own teardown.
pub(crate) fn run(
    checked: Checked,
    plan: &OneshotPlan,
    declaration: Declaration,
    stage: &mut Stage<'_, '_>,
) -> Result<LaneEnd, ProbeError> {
    let scratch =
        Scratch(session::workspace::private_dir("checkfu-oneshot").map_err(|e| ProbeError::cannot_start("cannot prepare the run", e))?);
    // A declared output-schema flag is exercised whether or not the author gave a schema:
    // without one, the probe's own goes to the CLI.
    let own = declaration
        .output_schema_flag
        .as_ref()
        .filter(|_| stage.options.output_schema.is_none())
        .map(|_| crate::plane::probe_output_schema());
    let own_validator = match &own {
        Some(schema) => {
            Some(jsonschema::validator_for(schema).map_err(|e| ProbeError::invalid("the probe's output schema cannot be compiled", e))?)
        }
        None => None,
    };
    let schema_path = match stage.options.output_schema.as_ref().or(own.as_ref()) {
        Some(schema) => {
            let path = scratch.0.join("output-schema.json");
            std::fs::write(&path, schema.to_string()).map_err(|e| ProbeError::cannot_start("cannot write the output schema", e))?;
            Some(path.to_string_lossy().into_owned())
        }
        None => None,
    };
    let mut env = stage.plane.env.clone();
    if let Some(image) = &stage.image {
        // The image's variables under the probe's own (its relay, key, home and fence win).
        let image_env = image.env(&env);
        env.extend(image_env);
    }
    let launch_spec = Launch { env, netns: stage.plane.join(), cwd: Some(stage.plane.workspace_root.clone()), ..Launch::default() };
    let entrypoint = entrypoint(&declaration, plan.base_dir.as_ref(), stage.image.is_some());
    let mut lane = Lane {
        stage,
        declaration: &declaration,
        entrypoint,
        scratch: &scratch,
        schema_path: schema_path.as_deref(),
        launch_spec: &launch_spec,
    };
    let nonce = lane.stage.plane.nonce.clone();
    let first = lane.run(1, &nonce, None)?;
    let served: Vec<Served> = lane.stage.plane.relay.calls(1).iter().map(Served::from).collect();
    let timeout = lane.stage.options.step_timeout.as_secs_f64();
    let outcome = judge::prompt_exchange(&first.output, &first.exit, &served, &nonce, timeout);
    let first_reply = outcome.as_ref().ok().cloned();
    let outcome = outcome.map(|_| ()).map_err(|f| verdict::with_refusals(f, &lane.stage.plane.relay, 1));
    lane.stage.steps.ended(Name::PromptExchange, first.report.ms, outcome);
    let nonce_in_output = first.output.carries(&nonce);
    let mut finished = vec![(first, served)];
    let resume_nonce = lane.resume(&mut finished, first_reply.as_deref())?;
    if let Some(validator) = checked.validator.as_ref().or(own_validator.as_ref()) {
        lane.output_schema(validator, &finished);
    }
    let started = Instant::now();
    // A run's teardown fault holds what removing its image's run failed on too.
    let teardown = finished.iter().enumerate().find_map(|(i, (r, _))| r.teardown_fault.clone().map(|f| f.within(format!("run {}", i + 1))));
    let teardown = teardown.map_or(Outcome::Passed, Outcome::Failed);
    let delivered = lane.schema_path.is_some().then(|| delivery(&lane.stage.plane.relay, finished.len()));
    let report = OneshotReport {
        driver: checkfu_wire::catalog::ONESHOT_DRIVER,
        declaration: declaration.clone(),
        runs: finished.into_iter().map(|(f, _)| f.report).collect(),
        resume_nonce,
        output_schema_delivery: delivered,
    };
    Ok(LaneEnd {
        report: Box::new(report),
        teardown: (started.elapsed().as_millis() as u64, teardown),
        nonce_in_output,
        reply_in_output: first_reply,
        declaration: None,
        profile: plan::profile(&declaration),
    })
}

/// How the output schema reached the model in the calls of the lane's `runs` turns, each
/// way once.
fn delivery(relay: &crate::relay::Relay, runs: usize) -> Vec<&'static str> {
    let mut ways: Vec<&'static str> = Vec::new();
    let calls: Vec<_> = (1..=runs).flat_map(|turn| relay.calls(turn)).collect();
    for way in calls.iter().filter_map(|c| c.structured_output) {
        if !ways.contains(&way) {
            ways.push(way);
        }
    }
    ways
}

/// The lane's state across its runs.
struct Lane<'l, 's, 'p> {
    stage: &'l mut Stage<'s, 'p>,
    declaration: &'l Declaration,
    /// The entrypoint as run (resolved outside an image).
    entrypoint: String,
    scratch: &'l Scratch,
    schema_path: Option<&'l str>,
    launch_spec: &'l Launch,
}

type Run = (process::Finished, Vec<Served>);

impl Lane<'_, '_, '_> {
    /// Run 2, when a resume flag is declared: the resume step, and its nonce.
    fn resume(&mut self, finished: &mut Vec<Run>, first_reply: Option<&str>) -> Result<Option<String>, ProbeError> {
        let Some(flag) = self.declaration.resume_flag.clone() else { return Ok(None) };
        let first_session = finished[0].0.output.stream.session_id.clone();
        if flag.contains("{session_id}") && first_session.is_none() {
            let reason = "the first run's stream reported no session id, which the resume flag needs; no second run was made";
            self.stage.steps.ended(Name::Resume, 0, Outcome::failed(Kind::Continuity, reason));
            return Ok(None);
        }
        let second_nonce = fresh_nonce();
        self.stage.plane.relay.begin_turn(second_nonce.clone(), first_reply.iter().map(|r| (*r).to_owned()).collect());
        let session_id = first_session.unwrap_or_default();
        let expanded = match self.stage.plane.placeholders.expand_with(&flag, &[("session_id", &session_id)]) {
            Ok(expanded) => expanded,
            Err(e) => {
                self.stage.steps.ended(
                    Name::Resume,
                    0,
                    Outcome::failed(Kind::Continuity, format!("the resume flag cannot be expanded: {e}")),
                );
                return Ok(Some(second_nonce));
            }
        };
        let second = self.run(2, &second_nonce, Some(expanded))?;
        let served: Vec<Served> = self.stage.plane.relay.calls(2).iter().map(Served::from).collect();
        let timeout = self.stage.options.step_timeout.as_secs_f64();
        let outcome = judge::resume(&second.output, &second.exit, &served, &second_nonce, first_reply, timeout);
        let outcome = outcome.map(|_| ()).map_err(|f| verdict::with_refusals(f, &self.stage.plane.relay, 2));
        self.stage.steps.ended(Name::Resume, second.report.ms, outcome);
        finished.push((second, served));
        Ok(Some(second_nonce))
    }

    /// The output schema step: every run's answer is a structured value the relay served in
    /// that run, and validates.
    fn output_schema(&mut self, validator: &jsonschema::Validator, finished: &[Run]) {
        let mut outcome = Outcome::Passed;
        for (i, (run, served)) in finished.iter().enumerate() {
            if let Err(e) = judge::output_schema(run.output.answer(), validator, served) {
                outcome = Outcome::Failed(if finished.len() > 1 { e.within(format!("run {}", i + 1)) } else { e });
                break;
            }
        }
        self.stage.steps.ended(Name::OutputSchema, 0, outcome);
    }

    /// Run `number`: its prompt file, its argv (`{resume_flag}` dropped on the first run,
    /// the expanded flag on the second), then the process.
    fn run(&mut self, number: usize, nonce: &str, resume: Option<String>) -> Result<process::Finished, ProbeError> {
        let declaration = self.declaration;
        let text = prompt(nonce, number > 1);
        let prompt_path = self.scratch.0.join(format!("prompt-{number}.txt"));
        if declaration.prompt_transport == PromptTransport::ArgvPath {
            std::fs::write(&prompt_path, &text).map_err(|e| ProbeError::cannot_start("cannot write the prompt file", e))?;
        }
        let prompt_path = prompt_path.to_string_lossy().into_owned();
        let mut argv = vec![self.entrypoint.clone()];
        for arg in &declaration.argv {
            if arg == "{resume_flag}" {
                argv.extend(resume.clone());
                continue;
            }
            let expanded = self
                .stage
                .plane
                .placeholders
                .expand_with(arg, &[("prompt_path", &prompt_path)])
                .map_err(|e| ProbeError::invalid(format!("argv {arg:?}"), e))?;
            argv.push(expanded);
        }
        if let (Some(flag), Some(path)) = (&declaration.output_schema_flag, self.schema_path) {
            argv.push(flag.clone());
            argv.push(path.to_owned());
        }
        let mut launch = std::borrow::Cow::Borrowed(self.launch_spec);
        let mut container_run = None;
        if let Some(image) = self.stage.image.as_mut() {
            let inner: Vec<OsString> = argv.iter().map(OsString::from).collect();
            let budget = &self.stage.options.budget;
            let mut started = image.start(&inner, &self.stage.plane, &[self.scratch.0.as_path()], &self.launch_spec.env, budget)?;
            argv = started.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            launch = std::borrow::Cow::Owned(started.client_launch(self.launch_spec));
            container_run = Some(started);
        }
        let options = self.stage.options;
        let until = options.budget.min_with(options.step_timeout);
        let spec = process::Spec {
            argv,
            launch: &launch,
            transport: declaration.prompt_transport,
            prompt: &text,
            mode: declaration.output_mode,
            until,
            cancel: &options.budget.cancel,
            kill_grace: options.kill_grace.min(Duration::from_secs(30)),
            nonce,
        };
        let program = spec.argv[0].clone();
        let mut finished = process::run(spec).map_err(|e| ProbeError::cannot_start(format!("cannot start `{program}`"), e))?;
        // The runtime's client is gone; what it keeps (a container, an image) goes now,
        // under the teardown's budget.
        let grace = self.stage.grace();
        let image = self.stage.image.as_mut();
        if let Some(fault) = container_run.zip(image).and_then(|(started, image)| image.finish(started, &grace)) {
            finished.teardown_fault = Some(match finished.teardown_fault.take() {
                Some(own) => own.then(fault),
                None => fault,
            });
        }
        Ok(finished)
    }
}
