//! What ends a run before it has a report, and the exit status of every end of a run,
//! decided in one place ([`exit_code`]).
//!
//! A harness's behaviour is never an error: whatever it does is a report. An error is a
//! run that could not begin (its options, a program that cannot start, a tool that is not
//! installed) or an image that could not be made ready.

use crate::image::run::PullError;
use crate::report::Report;

/// What another part of the probe (or the system) said when it refused: kept whole, as the
/// error's source.
pub type Cause = Box<dyn std::error::Error + Send + Sync>;

/// A run that ended without a report.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The options do not make a run: a bad flag, template, schema, recipe or declaration.
    #[error("{0}")]
    Usage(String),
    /// An option (`what`, when it needs naming) that another part refused, and why.
    #[error("{}{source}", named(what))]
    Invalid {
        what: String,
        #[source]
        source: Cause,
    },
    /// A program or a directory the run needs (`what`) cannot be started or made, and why.
    #[error("{}{source}", named(what))]
    CannotStart {
        what: String,
        #[source]
        source: Cause,
    },
    /// The workspace was handed to a session that did not give it back.
    #[error("the workspace is gone")]
    NoWorkspace,
    /// A tool the image lane needs is not installed.
    #[error("{0}")]
    MissingTool(#[source] PullError),
    /// The image (`what`) could not be made ready: its build, push, pull, check or unpack failed.
    #[error("{what}: {source}")]
    Image {
        what: String,
        #[source]
        source: PullError,
    },
    /// An output file cannot be written (`--trace`, `--record`, `--record-model`).
    #[error("cannot write {}: {source}", path.display())]
    Output { path: std::path::PathBuf, source: std::io::Error },
}

/// The exit statuses of `checkfu-wire probe`.
pub mod status {
    /// Every step and check passed.
    pub const PASSED: i32 = 0;
    /// The harness failed a step or a check, or its image could not be made ready.
    pub const FAILED: i32 = 1;
    /// A usage error: the options, a program that cannot start, a missing tool, an output
    /// that cannot be written.
    pub const USAGE: i32 = 2;
}

impl ProbeError {
    /// An option, `what` (`""` when the cause names it), that `cause` refused.
    pub fn invalid(what: impl Into<String>, cause: impl Into<Cause>) -> ProbeError {
        ProbeError::Invalid { what: what.into(), source: cause.into() }
    }

    /// Something the run needs, `what` (`""` when the cause names it), that could not be
    /// started or made, for `cause`.
    pub fn cannot_start(what: impl Into<String>, cause: impl Into<Cause>) -> ProbeError {
        ProbeError::CannotStart { what: what.into(), source: cause.into() }
    }

    /// Its exit status: the image's failure is the run's (1); anything else is the user's
    /// to fix before a run can happen (2).
    pub fn exit_code(&self) -> i32 {
        match self {
            ProbeError::Image { .. } => status::FAILED,
            ProbeError::Usage(_)
            | ProbeError::Invalid { .. }
            | ProbeError::CannotStart { .. }
            | ProbeError::NoWorkspace
            | ProbeError::MissingTool(_)
            | ProbeError::Output { .. } => status::USAGE,
        }
    }
}

/// `what` as the head of a message about it: `what: `, or nothing when the cause says it all.
fn named(what: &str) -> String {
    if what.is_empty() {
        String::new()
    } else {
        format!("{what}: ")
    }
}

/// The exit status of a run: 128 plus the signal's number when a signal stopped it,
/// whatever it came to (130 for SIGINT, 143 for SIGTERM); else the error's; else 0 when it
/// passed and 1 when it failed. `budget` is the run's, whose token a signal cancels.
pub fn exit_code(outcome: Result<&Report, &ProbeError>, budget: &crate::Budget) -> i32 {
    if let Some(signal) = budget.signal() {
        return crate::interrupt::exit_code(signal);
    }
    match outcome {
        Err(error) => error.exit_code(),
        Ok(report) if report.passed() => status::PASSED,
        Ok(_) => status::FAILED,
    }
}
