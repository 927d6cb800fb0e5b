//! The interface a lane implements, so the spine runs any lane without naming one.
//!
//! A lane goes through three states, each a trait, because each step needs what the one
//! before it produced and the spine does work of its own in between:
//! - [`Lane`]: the lane as planned. Its [`check`](Lane::check) looks at the options before
//!   an image is built or pulled, so a bad flag costs nothing;
//! - [`CheckedLane`]: its [`prepare`](CheckedLane::prepare) resolves the command or the
//!   declaration once the image (whose Entrypoint and Cmd may be it) is ready;
//! - [`ReadyLane`]: what the spine reads to make the plane and the stage (the lane's own
//!   variables and home files, its working directory, its command), then
//!   [`run`](ReadyLane::run), the lane's steps on the stage.
//!
//! What the spine needs of the lane's report afterwards (the context-compaction verdict, the
//! catalog ceiling) is a method of [`crate::report::LaneReport`], so it never matches on it.
//! The lanes implementing these traits are [`crate::acp`] and [`crate::oneshot`]; the plan's
//! [`crate::plan::LanePlan`] is the one place that knows both.

use std::ffi::OsString;

use crate::error::ProbeError;
use crate::image::run::PreparedImage;
use crate::options::RunOptions;
use crate::plane::Declared;
use crate::stage::{LaneEnd, Stage};
use checkfu_wire::catalog::{self, Protocol};

/// A lane as planned, with its own options.
pub(crate) trait Lane {
    /// The protocol the lane speaks, as the report and the progress name it.
    fn protocol(&self) -> Protocol;

    /// Checks the lane's options (against the catalog entry `entry`, with `--harness`)
    /// before anything is pulled, built or started.
    fn check<'a>(&'a self, run: &RunOptions, entry: Option<&'static catalog::Harness>)
        -> Result<Box<dyn CheckedLane<'a> + 'a>, ProbeError>;
}

/// A lane whose options were checked, waiting for the image (when one was asked for).
pub(crate) trait CheckedLane<'a> {
    /// Resolves the command or declaration, which may be `image`'s own, and checks what it
    /// asks of the options.
    fn prepare(self: Box<Self>, run: &RunOptions, image: Option<&PreparedImage>) -> Result<Box<dyn ReadyLane + 'a>, ProbeError>;
}

/// A lane made ready: its command or declaration resolved.
pub(crate) trait ReadyLane {
    /// The lane's own variables and home files (a recipe's or a declaration's).
    fn declared(&self) -> Declared<'_>;

    /// The working directory asked for in an image (else the image's).
    fn working_directory(&self) -> Option<&str>;

    /// The harness command whose templates [`crate::launch::check_options`] checks before
    /// the plane is made; empty for a lane whose argv is expanded per run.
    fn command(&self) -> &[OsString];

    /// The lane's steps on `stage`, from telling [`crate::Progress::Started`] to the lane's
    /// own teardown; the spine does the rest of the run's end.
    fn run(self: Box<Self>, stage: &mut Stage<'_, '_>) -> Result<LaneEnd, ProbeError>;
}
