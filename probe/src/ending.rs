//! The end of a run, as both lanes report it: what a teardown that went wrong means, the
//! harness's exit as the report writes it, and the tail of its stderr.

use std::process::ExitStatus;

use serde_json::{json, Value};

use crate::session::{Ending, Teardown};

/// The most bytes of a harness's stderr a report keeps.
pub const STDERR_TAIL: usize = 4096;

/// Why a teardown is a failed step, if it is: a process of the group survived it, or the
/// harness had to be killed or could not be reaped. `who` names the harness (`harness`,
/// `CLI`); `ignored` what it ignored before SIGKILL.
pub fn teardown_fault(teardown: &Teardown, who: &str, ignored: &str) -> Option<String> {
    if !teardown.leftover.is_empty() {
        return Some(format!("processes of the {who}'s group survived teardown: {:?}", teardown.leftover));
    }
    match teardown.ending {
        Ending::Killed => Some(format!("the {who} ignored {ignored}; it was killed")),
        Ending::Unreaped => Some(format!("the {who} could not be reaped after SIGKILL")),
        _ => None,
    }
}

/// An exit as the report writes it: `{"code": n}`, `{"signal": n}`, or `null` when the
/// harness could not be reaped.
pub fn exit_json(status: Option<ExitStatus>) -> Value {
    let Some(status) = status else { return Value::Null };
    match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
        (Some(code), _) => json!({"code": code}),
        (None, Some(signal)) => json!({"signal": signal}),
        (None, None) => Value::Null,
    }
}

/// The last [`STDERR_TAIL`] bytes of a stderr tail, cut on a character boundary.
pub fn stderr_tail(text: &str) -> String {
    checkfu_wire::text::tail(text, STDERR_TAIL).to_owned()
}
