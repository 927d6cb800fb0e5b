//! The ACP lane behind the spine's [`Lane`] interface: the options checked against the
//! catalog, the agent's command resolved (the image's own when none is given), then the
//! lane's steps ([`super::run`]).

use std::ffi::OsString;

use super::{check, expand_command, AcpOptions, Checked};
use crate::error::ProbeError;
use crate::image::run::PreparedImage;
use crate::lane::{CheckedLane, Lane, ReadyLane};
use crate::options::RunOptions;
use crate::plane::Declared;
use crate::stage::{LaneEnd, Stage};
use crate::Progress;
use checkfu_wire::catalog::{self, Protocol};

impl Lane for AcpOptions {
    fn protocol(&self) -> Protocol {
        Protocol::AcpV1
    }

    fn check<'a>(
        &'a self,
        run: &RunOptions,
        entry: Option<&'static catalog::Harness>,
    ) -> Result<Box<dyn CheckedLane<'a> + 'a>, ProbeError> {
        Ok(Box::new(check(self, run, entry)?))
    }
}

impl<'a> CheckedLane<'a> for Checked<'a> {
    fn prepare(self: Box<Self>, _run: &RunOptions, image: Option<&PreparedImage>) -> Result<Box<dyn ReadyLane + 'a>, ProbeError> {
        let command = self.options.resolve_command(image)?;
        Ok(Box::new(Ready { checked: *self, command }))
    }
}

/// The ACP lane made ready: the agent's command (placeholders not yet expanded, since the
/// plane that gives them their values is made after). The flags that register it are the
/// run's ([`super::run`]): they name the ACP version it agreed on.
struct Ready<'a> {
    checked: Checked<'a>,
    command: Vec<OsString>,
}

impl ReadyLane for Ready<'_> {
    fn declared(&self) -> Declared<'_> {
        let options = self.checked.options;
        Declared { env: Some(&options.recipe_env), home_files: Some(&options.recipe_home_files) }
    }

    fn working_directory(&self) -> Option<&str> {
        self.checked.options.working_directory.as_deref()
    }

    fn command(&self) -> &[OsString] {
        &self.command
    }

    fn run(self: Box<Self>, stage: &mut Stage<'_, '_>) -> Result<LaneEnd, ProbeError> {
        let Ready { checked, command } = *self;
        let expanded = expand_command(&command, &stage.plane.placeholders, stage.image.is_some())?;
        let shown: Vec<String> = expanded.iter().map(|c| c.to_string_lossy().into_owned()).collect();
        stage.steps.tell(Progress::Started { protocol: Protocol::AcpV1, command: &shown.join(" ") });
        super::run(checked, command, expanded, stage)
    }
}
