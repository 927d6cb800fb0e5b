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
//! - `output_schema` (an output-schema flag is declared and `--output-schema` given): every
//!   run's final answer is a structured value the relay served in that run, and validates
//!   against the schema;
//! - `teardown`: every run ended and nothing of its process group survived.
//!
//! The verdicts are [`judge`]'s, the same functions the golden process exchanges are held
//! to. No ACP step or admission is reported here.

pub mod judge;
pub mod process;
pub mod report;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{prepare, Plane, ProbeOptions, Progress, UsageError};
use crate::session::{self, Launch};
use checkfu_wire::catalog::OneshotStepName as Name;
use checkfu_wire::oneshot::{Declaration, PromptTransport};
use judge::Served;
pub use report::OneshotResult;

/// The one-shot launch the probe is given: the declaration, and the directory a relative
/// entrypoint is resolved against (the recipe's).
#[derive(Clone, Debug)]
pub struct OneshotLaunch {
    pub declaration: Declaration,
    pub base_dir: Option<PathBuf>,
    /// The image the CLI runs in (`--image`): its entrypoint is a path inside it, and its
    /// working directory the declaration's, else the image's.
    pub container: Option<std::sync::Arc<crate::image::run::Container>>,
}

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

/// The entrypoint as run. The CLI starts in the workspace, so a relative path with a `/`
/// is resolved first: against the recipe's directory, or the caller's own directory for one
/// typed on the command line (so it means what it says). A bare name is looked up on `PATH`.
fn entrypoint(launch: &OneshotLaunch) -> String {
    if launch.container.is_some() {
        // A path inside the image, as the image's own runtime reads it.
        return launch.declaration.entrypoint.clone();
    }
    let here = std::env::current_dir().unwrap_or_default();
    // The recipe's directory may itself be relative to the caller's.
    let base = launch.base_dir.as_ref().map_or_else(|| here.clone(), |b| here.join(b));
    super::launch::program(launch.declaration.entrypoint.as_ref(), &base).to_string_lossy().into_owned()
}

/// Runs the lane. `Err` only when the run cannot begin; every CLI behaviour is a result.
pub fn run(options: &ProbeOptions, launch: &OneshotLaunch, progress: &mut dyn FnMut(Progress)) -> Result<OneshotResult, UsageError> {
    let declaration = &launch.declaration;
    let refusals = declaration.check();
    if !refusals.is_empty() {
        return Err(UsageError::Options(checkfu_wire::oneshot::DecodeError::Rules(refusals).to_string()));
    }
    let entry = super::catalog_entry(options)?;
    crate::relay::routes::for_provider(options.provider.as_deref()).map_err(UsageError::Options)?;
    let validator = match (&options.output_schema, &declaration.output_schema_flag) {
        (Some(_), None) => {
            return Err(UsageError::Options(String::from(
                "--output-schema was given, but the declaration has no output_schema_flag: the CLI has no way to receive it",
            )))
        }
        (Some(schema), Some(_)) => Some(output_validator(schema)?),
        (None, _) => None,
    };
    if options.inherit_home && !declaration.home_files.is_empty() {
        return Err(UsageError::Options(String::from(
            "the declaration's home_files write into the fresh home, which --inherit-home turns off",
        )));
    }
    progress(Progress::Started { protocol: checkfu_wire::catalog::Protocol::OneshotV1, command: &declaration.entrypoint });
    let deadline = Instant::now() + options.deadline;
    let Plane { workspace, nonce, namespace, fence, fence_note, relay, home, placeholders, mut env, mut warnings } =
        prepare(options, entry, progress)?;
    let scratch = Scratch(
        session::workspace::private_dir("checkfu-oneshot").map_err(|e| UsageError::CannotStart(format!("cannot prepare the run: {e}")))?,
    );
    // The declaration's own files and variables, then the command line's (which win).
    if let Some(home) = &home {
        warnings.extend(crate::plane::write_home_files(home, &declaration.home_files, "home_files", &placeholders)?);
    }
    let mut declared_env = Vec::new();
    for (name, template) in &declaration.env {
        let value = placeholders.expand_with(template, &[]).map_err(|e| UsageError::Options(format!("env {name}: {e}")))?;
        declared_env.push((name.into(), value.into()));
    }
    let command_line_env = env.split_off(env.len() - options.env.len());
    env.extend(declared_env);
    env.extend(command_line_env);
    let schema_path = match &options.output_schema {
        Some(schema) => {
            let path = scratch.0.join("output-schema.json");
            std::fs::write(&path, schema.to_string())
                .map_err(|e| UsageError::CannotStart(format!("cannot write the output schema: {e}")))?;
            Some(path.to_string_lossy().into_owned())
        }
        None => None,
    };
    let working_directory = launch
        .container
        .as_ref()
        .map(|c| c.working_directory(declaration.working_directory.as_deref()))
        .transpose()
        .map_err(UsageError::CannotStart)?;
    if let Some((container, directory)) = launch.container.as_ref().zip(working_directory.as_deref()) {
        // The image's variables under the probe's own (its relay, key, home and fence win).
        let image_env = container.env(&env, directory);
        env.extend(image_env);
    }
    let launch_spec = Launch {
        env,
        netns: namespace.as_ref().map(session::fence::Namespace::join),
        cwd: Some(workspace.root().to_path_buf()),
        ..Launch::default()
    };
    let workspace_root = workspace.root().to_path_buf();
    let mut shared: Vec<PathBuf> = vec![workspace_root.clone(), scratch.0.clone()];
    shared.extend(home.as_ref().map(|h| h.root().to_path_buf()));

    let mut lane = Lane {
        options,
        launch,
        scratch: &scratch,
        container: launch
            .container
            .as_deref()
            .zip(working_directory.as_deref())
            .map(|(c, wd)| (c, wd, workspace_root.as_path(), shared.as_slice())),
        schema_path: schema_path.as_deref(),
        placeholders: &placeholders,
        launch_spec: &launch_spec,
        deadline,
        steps: crate::ending::Steps::new(progress),
        relay: relay.addr(),
        fence: namespace.as_ref().map(session::fence::Namespace::join),
        image_fence: None,
        image_fault: None,
    };
    // Run 1: the prompt.
    let first = lane.run(1, &nonce, None)?;
    let served: Vec<Served> = relay.calls(1).iter().map(Served::from).collect();
    let outcome = judge::prompt_exchange(&first.output, &first.exit, &served, &nonce, options.step_timeout.as_secs_f64());
    let first_reply = outcome.as_ref().ok().cloned();
    lane.step(Name::PromptExchange, first.report.ms, outcome.map(|_| ()).map_err(|f| with_refusals(f, &relay, 1)));
    let first_session = first.output.stream.session_id.clone();
    let mut finished = vec![(first, served)];

    // Run 2: the resume, when declared.
    let mut resume_nonce = None;
    if let Some(flag) = &declaration.resume_flag {
        let needs_id = flag.contains("{session_id}");
        match (needs_id, &first_session) {
            (true, None) => lane.step(
                Name::Resume,
                0,
                Err(String::from("the first run's stream reported no session id, which the resume flag needs; no second run was made")),
            ),
            _ => {
                let second_nonce = super::fresh_nonce();
                relay.begin_turn(second_nonce.clone(), first_reply.iter().cloned().collect());
                let session_id = first_session.clone().unwrap_or_default();
                match placeholders.expand_with(flag, &[("session_id", &session_id)]) {
                    Err(e) => lane.step(Name::Resume, 0, Err(format!("the resume flag cannot be expanded: {e}"))),
                    Ok(expanded) => {
                        let second = lane.run(2, &second_nonce, Some(expanded))?;
                        let served: Vec<Served> = relay.calls(2).iter().map(Served::from).collect();
                        let outcome = judge::resume(
                            &second.output,
                            &second.exit,
                            &served,
                            &second_nonce,
                            first_reply.as_deref(),
                            options.step_timeout.as_secs_f64(),
                        );
                        lane.step(Name::Resume, second.report.ms, outcome.map(|_| ()).map_err(|f| with_refusals(f, &relay, 2)));
                        finished.push((second, served));
                    }
                }
                resume_nonce = Some(second_nonce);
            }
        }
    }

    // The output schema, when declared and given: every run's answer is a structured value
    // the relay served in that run, and validates.
    if let Some(validator) = &validator {
        let mut outcome = Ok(());
        for (i, (run, served)) in finished.iter().enumerate() {
            if let Err(e) = judge::output_schema(run.output.answer(), validator, served) {
                outcome = Err(if finished.len() > 1 { format!("run {}: {e}", i + 1) } else { e });
                break;
            }
        }
        lane.step(Name::OutputSchema, 0, outcome);
    }
    let finished: Vec<process::Finished> = finished.into_iter().map(|(run, _)| run).collect();

    let started = Instant::now();
    let teardown = finished.iter().enumerate().find_map(|(i, r)| r.teardown_fault.as_ref().map(|f| format!("run {}: {f}", i + 1)));
    let record = relay.stop();
    drop(namespace);
    drop(home);
    drop(workspace);
    lane.step(Name::Teardown, started.elapsed().as_millis() as u64, teardown.map_or(Ok(()), Err));

    let delivered: Vec<&'static str> = record.calls.iter().filter_map(|c| c.structured_output).fold(Vec::new(), |mut v, way| {
        if !v.contains(&way) {
            v.push(way);
        }
        v
    });
    let mut plane = super::model_plane::ModelPlane::new(
        options.provider.as_deref().unwrap_or(checkfu_wire::catalog::UNLISTED_PROVIDER),
        fence,
        fence_note,
        options.model_script.name(),
        record,
    );
    plane.nonce_in_output = finished.first().is_some_and(|r| r.output.carries(&nonce));
    plane.reply_in_output = first_reply;
    if let Some(entry) = entry {
        plane.bind(entry, options.provider.as_deref(), None);
    }
    let steps = std::mem::take(&mut lane.steps.list);
    let (image_fence, image_container) = lane.image_fence.take().unwrap_or_default();
    let image_fault = lane.image_fault.take();
    let image = launch.container.as_ref().zip(working_directory.as_deref()).map(|(c, wd)| crate::image::run::ImageRun {
        fence: image_fence,
        container: image_container,
        teardown_fault: image_fault,
        ..c.run_report(wd, None)
    });
    let mut result = OneshotResult::new(
        declaration,
        steps,
        finished.into_iter().map(|f| f.report).collect(),
        nonce,
        resume_nonce,
        options.output_schema.is_some().then_some(delivered),
        plane,
    );
    result.image = image;
    result.warnings = warnings;
    Ok(result)
}

/// A failed step's reason, with the relay's refusals of the run named after it when they
/// may be its cause: a CLI whose calls were refused should be told which ones, but a
/// refusal beside a turn the model did answer is not why the turn failed.
fn with_refusals(failed: judge::Failed, relay: &crate::relay::Relay, turn: usize) -> String {
    let (count, first) = relay.refusals(turn);
    match super::verdict::refusal_context(count, first.as_ref()).filter(|_| failed.refusals_may_cause) {
        Some(context) => format!("{}; {context}", failed.reason),
        None => failed.reason,
    }
}

/// The author's output schema, checked by the safety profile, compiled for the step.
fn output_validator(schema: &Value) -> Result<jsonschema::Validator, UsageError> {
    super::safe_output_schema(schema)?;
    jsonschema::validator_for(schema).map_err(|e| UsageError::Options(format!("--output-schema cannot be compiled: {e}")))
}

/// The lane's state across its runs.
struct Lane<'a, 'p> {
    options: &'a ProbeOptions,
    launch: &'a OneshotLaunch,
    scratch: &'a Scratch,
    schema_path: Option<&'a str>,
    placeholders: &'a super::launch::Placeholders,
    launch_spec: &'a Launch,
    deadline: Instant,
    steps: crate::ending::Steps<'p>,
    /// The image, its working directory, the workspace and the directories shared with it.
    container: Option<(&'a crate::image::run::Container, &'a str, &'a std::path::Path, &'a [PathBuf])>,
    /// The relay's listener and the fence, for the image's runtime.
    relay: std::net::SocketAddr,
    fence: Option<session::fence::Join>,
    /// What the image's runtime said of the fence, and what removing a run failed on.
    image_fence: Option<(&'static str, Option<String>)>,
    image_fault: Option<String>,
}

impl Lane<'_, '_> {
    fn step(&mut self, step: Name, ms: u64, outcome: Result<(), String>) {
        self.steps.ended(step.name(), ms, outcome);
    }

    /// Run `number`: its prompt file, its argv (`{resume_flag}` dropped on the first run,
    /// the expanded flag on the second), then the process.
    fn run(&mut self, number: usize, nonce: &str, resume: Option<String>) -> Result<process::Finished, UsageError> {
        let declaration = &self.launch.declaration;
        let text = prompt(nonce, number > 1);
        let prompt_path = self.scratch.0.join(format!("prompt-{number}.txt"));
        if declaration.prompt_transport == PromptTransport::ArgvPath {
            std::fs::write(&prompt_path, &text).map_err(|e| UsageError::CannotStart(format!("cannot write the prompt file: {e}")))?;
        }
        let prompt_path = prompt_path.to_string_lossy().into_owned();
        let mut argv = vec![entrypoint(self.launch)];
        for arg in &declaration.argv {
            if arg == "{resume_flag}" {
                argv.extend(resume.clone());
                continue;
            }
            let expanded = self
                .placeholders
                .expand_with(arg, &[("prompt_path", &prompt_path)])
                .map_err(|e| UsageError::Options(format!("argv {arg:?}: {e}")))?;
            argv.push(expanded);
        }
        if let (Some(flag), Some(path)) = (&declaration.output_schema_flag, self.schema_path) {
            argv.push(flag.clone());
            argv.push(path.to_owned());
        }
        let mut launch = std::borrow::Cow::Borrowed(self.launch_spec);
        let mut container_run = None;
        if let Some((container, working_directory, workspace, shared)) = self.container {
            let inner: Vec<std::ffi::OsString> = argv.iter().map(std::ffi::OsString::from).collect();
            let shared: Vec<&std::path::Path> = shared.iter().map(PathBuf::as_path).collect();
            let mut started = container
                .start(&inner, workspace, working_directory, &shared, &self.launch_spec.env, self.relay, self.fence)
                .map_err(|e| UsageError::CannotStart(format!("cannot start the image: {e}")))?;
            argv = started.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
            launch = std::borrow::Cow::Owned(started.client_launch(self.launch_spec));
            self.image_fence = Some((started.fence, started.container.clone()));
            container_run = Some(started);
        }
        let until = (Instant::now() + self.options.step_timeout).min(self.deadline);
        let spec = process::Spec {
            argv,
            launch: &launch,
            transport: declaration.prompt_transport,
            prompt: &text,
            mode: declaration.output_mode,
            until,
            kill_grace: self.options.kill_grace.min(Duration::from_secs(30)),
            nonce,
        };
        let program = spec.argv[0].clone();
        let mut finished = process::run(spec).map_err(|e| UsageError::CannotStart(format!("cannot start `{program}`: {e}")))?;
        // The runtime's client is gone; what it keeps (a container, an image) goes now.
        if let Some(Err(fault)) = container_run.map(crate::image::runtime::Started::finish) {
            let fault = format!("the image's runtime left something behind: {fault}");
            finished.teardown_fault = Some(finished.teardown_fault.map_or(fault.clone(), |f| format!("{f}; {fault}")));
            self.image_fault.get_or_insert(fault);
        }
        Ok(finished)
    }
}
