//! The one-shot lane behind the spine's [`Lane`] interface: the output schema compiled, the
//! declaration resolved (the image's Entrypoint and Cmd when nothing else gives the
//! command) and checked against the options, then the lane's runs ([`super::run`]).

use std::ffi::OsString;

use super::{check, check_declaration, Checked, OneshotPlan};
use crate::error::ProbeError;
use crate::image::run::PreparedImage;
use crate::lane::{CheckedLane, Lane, ReadyLane};
use crate::options::RunOptions;
use crate::plane::Declared;
use crate::stage::{LaneEnd, Stage};
use crate::Progress;
use checkfu_wire::catalog::{self, Protocol};
use checkfu_wire::oneshot::Declaration;

impl Lane for OneshotPlan {
    fn protocol(&self) -> Protocol {
        Protocol::OneshotV1
    }

    fn check<'a>(
        &'a self,
        run: &RunOptions,
        _entry: Option<&'static catalog::Harness>,
    ) -> Result<Box<dyn CheckedLane<'a> + 'a>, ProbeError> {
        Ok(Box::new(Unresolved { checked: check(run)?, plan: self }))
    }
}

/// The one-shot lane checked, its declaration not yet resolved.
struct Unresolved<'a> {
    checked: Checked,
    plan: &'a OneshotPlan,
}

impl<'a> CheckedLane<'a> for Unresolved<'a> {
    fn prepare(self: Box<Self>, run: &RunOptions, image: Option<&PreparedImage>) -> Result<Box<dyn ReadyLane + 'a>, ProbeError> {
        let image_command = image.map(PreparedImage::default_command).unwrap_or_default();
        let declaration = self.plan.resolve(&image_command)?;
        check_declaration(&declaration, run)?;
        Ok(Box::new(Ready { checked: self.checked, plan: self.plan, declaration }))
    }
}

/// The one-shot lane made ready: its declaration resolved and checked.
struct Ready<'a> {
    checked: Checked,
    plan: &'a OneshotPlan,
    declaration: Declaration,
}

impl ReadyLane for Ready<'_> {
    fn declared(&self) -> Declared<'_> {
        Declared { env: Some(&self.declaration.env), home_files: Some(&self.declaration.home_files) }
    }

    fn working_directory(&self) -> Option<&str> {
        self.declaration.working_directory.as_deref()
    }

    /// None: the declaration's argv is expanded run by run, with the prompt's path.
    fn command(&self) -> &[OsString] {
        &[]
    }

    fn run(self: Box<Self>, stage: &mut Stage<'_, '_>) -> Result<LaneEnd, ProbeError> {
        let Ready { checked, plan, declaration } = *self;
        stage.steps.tell(Progress::Started { protocol: Protocol::OneshotV1, command: &declaration.entrypoint });
        super::run(checked, plan, declaration, stage)
    }
}
