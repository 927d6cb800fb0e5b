//! What a lane runs its steps on: the options both lanes share, the plane, the image when
//! one was asked for, and the steps' bookkeeping. The spine makes it; a lane only uses it.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;

use crate::budget::{Budget, TEARDOWN_GRACE};
use crate::error::ProbeError;
use crate::image::run::{ImageRun, PreparedImage};
use crate::image::runtime::RunningContainer;
use crate::options::RunOptions;
use crate::outcome::{Kind, Outcome, Reason};
use crate::plane::Plane;
use crate::report::{LaneReport, Steps};

/// A lane's stage.
pub(crate) struct Stage<'a, 'p> {
    pub options: &'a RunOptions,
    pub plane: Plane,
    pub steps: Steps<'p>,
    pub image: Option<ImageStage>,
}

/// What a lane hands back: its report members, its own part of teardown, and what the
/// model plane's verdict reads of its output.
pub(crate) struct LaneEnd {
    pub report: Box<dyn LaneReport>,
    /// How long the lane's teardown took, and how it ended.
    pub teardown: (u64, Outcome),
    pub nonce_in_output: bool,
    /// The reply token that reached the output, when one did.
    pub reply_in_output: Option<String>,
    /// The harness's declaration at `initialize` (ACP only), for the catalog binding.
    pub declaration: Option<serde_json::Value>,
    /// The harness as the flags that register it.
    pub profile: Vec<String>,
}

/// The image a lane runs its harness in: prepared once, started once per process.
pub(crate) struct ImageStage {
    pub container: Arc<PreparedImage>,
    pub working_directory: String,
    /// What the report says of it; each start and finish adds to it.
    pub report: ImageRun,
}

impl Stage<'_, '_> {
    /// The teardown's budget: [`TEARDOWN_GRACE`] from now, with a token no signal reaches,
    /// so what the run made is removed after Ctrl-C as after its deadline.
    pub fn grace(&self) -> Budget {
        self.options.budget.grace(TEARDOWN_GRACE)
    }
}

impl ImageStage {
    /// `given` is the working directory asked for (else the image's).
    pub fn new(container: Arc<PreparedImage>, given: Option<&str>) -> Result<ImageStage, ProbeError> {
        let working_directory = container.working_directory(given).map_err(|e| ProbeError::cannot_start("", e))?;
        let report = container.run_report(&working_directory, None);
        Ok(ImageStage { container, working_directory, report })
    }

    /// The image's variables for `env` (the probe's own, which win over them).
    pub fn env(&self, env: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
        self.container.env(env, &self.working_directory)
    }

    /// Starts one run of `command` (as inside the image) with the plane's workspace at the
    /// working directory, the home and `scratch` at their own paths, and `env`, within
    /// `budget` (the run's).
    pub fn start(
        &mut self,
        command: &[OsString],
        plane: &Plane,
        scratch: &[&Path],
        env: &[(OsString, OsString)],
        budget: &Budget,
    ) -> Result<RunningContainer, ProbeError> {
        let mut shared: Vec<&Path> = vec![plane.workspace_root.as_path()];
        shared.extend(scratch);
        shared.extend(plane.home.as_ref().map(|h| h.root()));
        let started = self
            .container
            .start(command, &plane.workspace_root, &self.working_directory, &shared, env, plane.relay.addr(), plane.join(), budget)
            .map_err(|e| ProbeError::cannot_start("cannot start the image", e))?;
        self.report.fence = Some(started.fence);
        self.report.container = started.container.clone();
        Ok(started)
    }

    /// Removes what the runtime keeps of a run (a container, an image) under `grace`, the
    /// teardown's budget, which no signal cancels; what it could not remove is a teardown
    /// fault, kept in the report.
    pub fn finish(&mut self, started: RunningContainer, grace: &Budget) -> Option<Reason> {
        let fault = started.finish(grace).err()?;
        self.report.teardown_fault.get_or_insert_with(|| fault.to_string());
        Some(Reason::new(Kind::Teardown, format!("the image's runtime left something behind: {fault}")))
    }
}
