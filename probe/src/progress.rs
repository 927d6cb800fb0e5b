//! What a run tells its caller while it goes, as typed events: the lanes say what happened,
//! and the command line decides what to show and how (the text format prints each event on
//! stderr as it happens; the JSON format only the notes).

use checkfu_wire::catalog::Protocol;

use crate::report::Step;

/// One event of a run, in the order they happen: notes, then the start, then the steps.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// Something the catalog says about this run before it starts (a blocked entry, an
    /// unreachable cell of the reachability matrix).
    Note(&'a str),
    /// The harness is about to start: its protocol, and its command as it will run
    /// (placeholders expanded) or the one-shot entrypoint.
    Started { protocol: Protocol, command: &'a str },
    /// A step ended (passed, failed or skipped).
    Step { name: checkfu_wire::catalog::StepName, step: &'a Step },
}
