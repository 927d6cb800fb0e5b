//! One run, whichever lane: plan → checks → image (when asked) → plane → the lane's steps →
//! teardown → model plane → the report. The catalog lookup, the route check, the image's
//! preparation and removal, the plane and the model plane happen here, once; a lane
//! supplies its steps and nothing else, through the interface of [`crate::lane`]. The spine
//! names no lane: the plan hands it one ([`crate::plan::LanePlan::lane`]), and what it
//! needs of the lane's report it asks of [`LaneReport`]'s methods.
//!
//! What a run says as it goes is one event type ([`Progress`]), produced here and by the
//! lanes and consumed by the caller, which decides what to show.

use std::sync::Arc;
use std::time::Instant;

use crate::error::ProbeError;
use crate::image::run::PreparedImage;
use crate::lane::ReadyLane;
use crate::model_plane::ModelPlane;
use crate::options::RunOptions;
use crate::outcome::{Kind, Outcome, Reason};
use crate::plan::Plan;
use crate::plane::{binding_notes, Plane};
use crate::report::{LaneReport, Report, Steps, NO_TURN, QUALIFICATION};
use crate::stage::{ImageStage, LaneEnd, Stage};
use crate::{launch, next, Progress};
use checkfu_wire::catalog::{self, StepName};

/// Runs `plan`, telling `progress` each event as it happens. `Err` only when the run cannot
/// begin, or its image cannot be made ready; every harness behaviour is a report.
pub fn run(plan: &Plan, progress: &mut dyn FnMut(Progress)) -> Result<Report, ProbeError> {
    let options = &plan.run;
    let entry = options.harness;
    // The lane's options are checked before an image is built or pulled, so a bad flag
    // costs nothing; the command or declaration, which the image's may be, after.
    let checked = plan.lane.lane().check(options, entry)?;
    let container = match &plan.image {
        Some(image) => Some(Arc::new(image.prepare(plan.budget(), progress)?)),
        None => None,
    };
    let ready = checked.prepare(options, container.as_deref())?;
    launch::check_options(options, ready.command())?;
    if let Some(entry) = entry {
        binding_notes(entry, options.provider_name(), progress)?;
    }
    let image = container.map(|c| ImageStage::new(c, ready.working_directory())).transpose()?;
    let declared = ready.declared();
    let settings = Settings {
        env: next::settings(declared.env.into_iter().flatten(), &options.env),
        home_files: next::settings(declared.home_files.into_iter().flatten(), &options.home_files),
    };
    let plane = Plane::prepare(options, declared)?;
    let report = steps(plan, entry, ready, Stage { options, plane, steps: Steps::new(progress), image })?;
    Ok(report.0.with_next(plan, report.1.as_deref(), settings))
}

/// The variables and home files the run used beyond the probe's own, for the next steps.
struct Settings {
    env: Vec<next::Setting>,
    home_files: Vec<next::Setting>,
}

impl Report {
    /// The next steps of an image run (`image`, the prepared image it ran), from the plan's
    /// registration and what the run used.
    fn with_next(mut self, plan: &Plan, image: Option<&PreparedImage>, settings: Settings) -> Report {
        let (Some(registration), Some(image)) = (&plan.registration, image) else { return self };
        let built = image.built.clone().map(|ephemeral| next::Built { ephemeral, dockerfile: registration.dockerfile.clone() });
        self.next = Some(next::next_steps(&next::Facts {
            name: registration.name.clone(),
            reference: image.reference.clone(),
            source: image.source.clone(),
            built,
            passed: self.passed(),
            unproven: self.lane.unproven(&self.steps),
            profile: self.profile.clone(),
            sandbox: registration.sandbox.clone(),
            model: registration.model.clone(),
            context: registration.context.clone(),
            retest: registration.retest.clone(),
            env: settings.env,
            home_files: settings.home_files,
        }));
        self
    }
}

/// The lane's steps on the stage, then the run's end; with the report, the image it ran.
fn steps(
    plan: &Plan,
    entry: Option<&'static catalog::Harness>,
    ready: Box<dyn ReadyLane + '_>,
    mut stage: Stage<'_, '_>,
) -> Result<(Report, Option<Arc<PreparedImage>>), ProbeError> {
    let end = ready.run(&mut stage)?;
    let image = stage.image.as_ref().map(|i| Arc::clone(&i.container));
    Ok((finish(&plan.run, plan.lane.protocol(), entry, stage, end), image))
}

/// `context_compaction`, under an enforced window: the lane's check of the turn, else a
/// skip saying why.
fn context_compaction(steps: &mut Steps<'_>, lane: &dyn LaneReport) {
    let outcome = lane.context_compaction().map_or_else(|| Outcome::skipped(NO_TURN), |c| c.verdict.clone());
    steps.ended(StepName::ContextCompaction, 0, outcome);
}

/// Teardown (the lane's, then the plane's), the model plane with the relay's record, the
/// catalog binding, and the report.
fn finish(
    options: &RunOptions,
    protocol: catalog::Protocol,
    entry: Option<&'static catalog::Harness>,
    stage: Stage<'_, '_>,
    end: LaneEnd,
) -> Report {
    let Stage { plane, mut steps, image, .. } = stage;
    let warnings = plane.warnings.clone();
    let started = Instant::now();
    let (fence, fence_note, nonce) = (plane.fence, plane.fence_note.clone(), plane.nonce.clone());
    let (record, removed) = plane.remove(&options.budget.grace(crate::budget::TEARDOWN_GRACE));
    let removed = removed.map_or_else(|e| Outcome::failed(Kind::Teardown, e), |()| Outcome::Passed);
    // Under a script that fails calls, the record says whether the harness recovered: a
    // step of the run, judged before teardown like the lane's own.
    if options.model_script.fails_calls() {
        let recovered = crate::verdict::recovery(&record.calls, end.reply_in_output.is_some()).map_err(|e| Reason::new(Kind::Recovery, e));
        steps.ended(StepName::ModelRecovery, 0, recovered);
    }
    if options.context_window.is_some() {
        context_compaction(&mut steps, end.report.as_ref());
    }
    let (lane_ms, lane_teardown) = end.teardown;
    let teardown = lane_teardown.and_also(removed);
    steps.ended(StepName::Teardown, lane_ms + started.elapsed().as_millis() as u64, teardown);
    let provider = options.provider_name().unwrap_or(catalog::UNLISTED_PROVIDER);
    let mut model_plane = ModelPlane::new(provider, fence, fence_note, options.model_script.kind(), record);
    model_plane.image_fence = image.as_ref().and_then(|i| i.report.fence).map(crate::image::runtime::ImageFence::describe);
    model_plane.nonce_in_output = end.nonce_in_output;
    model_plane.reply_in_output = end.reply_in_output;
    let mut lane = end.report;
    lane.judge_requirements(&steps.list);
    if let Some(entry) = entry {
        model_plane.bind(entry, options.provider_name(), end.declaration.as_ref());
        lane.bind_ceiling(entry);
    }
    Report {
        qualification: QUALIFICATION,
        protocol,
        steps: steps.list,
        lane,
        nonce,
        model_plane,
        image: image.map(|i| i.report),
        interrupted: options.budget.signal().map(crate::interrupt::name),
        next: None,
        warnings,
        profile: end.profile,
    }
}
