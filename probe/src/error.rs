//! What ends a run before it has a report, and the exit status of every end of a run,
//! decided in one place ([`exit_code`]).
//!
//! A harness's behaviour is never an error: whatever it does is a report. An error is a
//! run that could not begin (its options, a program that cannot start, a tool that is not
//! installed) or an image that could not be made ready.

use crate::report::Report;

/// A run that ended without a report.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The options do not make a run: a bad flag, template, schema, recipe or declaration.
    #[error("{0}")]
    Usage(String),
    /// A program or a directory the run needs cannot be started or made.
    #[error("{0}")]
    CannotStart(String),
    /// A tool the image lane needs is not installed.
    #[error("{0}")]
    MissingTool(String),
    /// The image could not be made ready: its build, push, pull, check or unpack failed.
    #[error("{what}: {reason}")]
    Image { what: String, reason: String },
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
    /// Its exit status: the image's failure is the run's (1); anything else is the user's
    /// to fix before a run can happen (2).
    pub fn exit_code(&self) -> i32 {
        match self {
            ProbeError::Image { .. } => status::FAILED,
            ProbeError::Usage(_) | ProbeError::CannotStart(_) | ProbeError::MissingTool(_) | ProbeError::Output { .. } => status::USAGE,
        }
    }
}

/// The exit status of a run: 128 plus the signal's number when a signal stopped it,
/// whatever it came to (130 for SIGINT, 143 for SIGTERM); else the error's; else 0 when it
/// passed and 1 when it failed.
pub fn exit_code(outcome: Result<&Report, &ProbeError>) -> i32 {
    if let Some(signal) = crate::interrupt::received() {
        return crate::interrupt::exit_code(signal);
    }
    match outcome {
        Err(error) => error.exit_code(),
        Ok(report) if report.passed() => status::PASSED,
        Ok(_) => status::FAILED,
    }
}
